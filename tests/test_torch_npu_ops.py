"""The stand-in's inference, cache and sparse functions: numerics against float64 SDPA, the
PromptFlashAttention sparse_mode 10-14 mapping, autograd wired to the grad ops, and opcheck."""

import math

import ml_dtypes  # noqa: F401  (bf16 tensors through numpy)
import numpy as np
import pytest
import torch

import aclnn_emu.ops
import aclnn_emu.torch_npu as torch_npu
import precision
from aclnn_emu.pytest_plugin import select

B, N, S, D = 2, 4, 48, 64
INT64_MAX = (1 << 63) - 1


def _check(actual, golden, what):
    g = golden.detach().numpy()
    failure = precision.failure(actual.detach().double().numpy(), g, "float16", bound=precision.TORCH_BOUND["float16"],
                                floor=precision.torch_floor(g))  # fmt: skip
    assert failure is None, f"{what}: {failure}"


def _bnsd(seed, s1=S, s2=S):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, N, s1, D, generator=g).half(), torch.randn(B, N, s2, D, generator=g).half(),
            torch.randn(B, N, s2, D, generator=g).half())  # fmt: skip


def _sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())


def test_prompt_flash_attention_against_sdpa_and_opcheck():
    q, k, v = _bnsd(1)
    kwargs = {"num_heads": N, "input_layout": "BNSD", "scale_value": 1 / math.sqrt(D), "next_tokens": 65535}
    _check(torch_npu.npu_prompt_flash_attention(q, k, v, **kwargs), _sdpa(q, k, v), "pfa")
    torch.library.opcheck(torch.ops.npu.npu_prompt_flash_attention.default, (q, k, v), kwargs)


def test_prompt_flash_attention_sparse_mode_10_is_high_precision_mode_0():
    """sparse_mode 10 reaches PromptFlashAttentionV3 as sparse_mode 0 with innerPrecise 0."""
    q, k, v = _bnsd(2)
    kwargs = {"num_heads": N, "input_layout": "BNSD", "scale_value": 1 / math.sqrt(D), "next_tokens": 65535}
    if not hasattr(aclnn_emu.ops, "PromptFlashAttentionV3"):
        with pytest.raises(NotImplementedError, match="aclnnPromptFlashAttentionV3"):
            torch_npu.npu_prompt_flash_attention(q, k, v, sparse_mode=10, **kwargs)
        return
    _check(torch_npu.npu_prompt_flash_attention(q, k, v, sparse_mode=10, **kwargs), _sdpa(q, k, v), "pfa mode 10")


def test_incre_flash_attention_against_sdpa_and_opcheck():
    q, k, v = _bnsd(3, s1=1, s2=100)
    kwargs = {"num_heads": N, "input_layout": "BNSD", "scale_value": 1 / math.sqrt(D)}
    _check(torch_npu.npu_incre_flash_attention(q, k, v, **kwargs), _sdpa(q, k, v), "ifa")
    torch.library.opcheck(torch.ops.npu.npu_incre_flash_attention.default, (q, k, v), kwargs)


FIA_CASES = {
    "npu_fused_infer_attention_score": (
        "FusedInferAttentionScoreV3",
        {"num_heads": N, "input_layout": "BNSD", "scale": 1 / math.sqrt(D), "softmax_lse_flag": True},
    ),
    "npu_fused_infer_attention_score_v2": (
        "FusedInferAttentionScoreV4",
        {"num_query_heads": N, "input_layout": "BNSD", "softmax_scale": 1 / math.sqrt(D), "return_softmax_lse": True},
    ),
}


FIA_KV_LENGTHS = {
    "npu_fused_infer_attention_score": "actual_seq_lengths_kv",
    "npu_fused_infer_attention_score_v2": "actual_seq_kvlen",
}


@pytest.mark.parametrize("name", FIA_CASES)
def test_fused_infer_attention_score_against_sdpa_and_opcheck(name):
    entry, kwargs = FIA_CASES[name]
    q, k, v = _bnsd(4)
    function, workspace = getattr(torch_npu, name), getattr(torch_npu, f"_{name}_get_max_workspace")
    if not hasattr(aclnn_emu.ops, entry):
        for call in (function, workspace):
            with pytest.raises(NotImplementedError, match=f"aclnn{entry} "):
                call(q, k, v, **kwargs)
        return
    out, lse = function(q, k, v, **kwargs)
    _check(out, _sdpa(q, k, v), name)
    scores = torch.einsum("bnqd,bnkd->bnqk", q.double(), k.double()) / math.sqrt(D)
    _check(lse[..., 0], torch.logsumexp(scores, dim=-1), f"{name} softmax_lse")
    assert tuple(lse.shape) == (B, N, S, 1) and lse.dtype == torch.float32
    torch.library.opcheck(getattr(torch.ops.npu, name).default, (q, k, v), kwargs)
    size = workspace(q, k, v, **kwargs)
    assert size.dim() == 1 and size.dtype == q.dtype
    with getattr(aclnn_emu.ops, entry).get_max_workspace_size(*_fia_args(name, q, k, v, kwargs)) as phase1:
        assert size.numel() == phase1.workspace_size
    # aclnn<entry>GetMaxWorkspaceSize, not GetWorkspaceSize: the key lengths' values are not checked
    # (FakeArray hands them on without data; CheckFeatureActualSeqLensKvData skips them)
    too_long = {**kwargs, FIA_KV_LENGTHS[name]: [S + 1] * B}
    with pytest.raises(RuntimeError, match="561002"):
        function(q, k, v, **too_long)
    assert workspace(q, k, v, **too_long).numel() == size.numel()


def _fia_args(name, q, k, v, kwargs):
    from aclnn_emu.torch_npu import inference

    if name == "npu_fused_infer_attention_score":
        return inference._fia_call_args(q, k, v, kwargs)[2]
    return inference._fia_v4_call_args(name, q, k, v, kwargs)[2]


def test_kv_cache_ops_opcheck_and_default_mode():
    key, value = torch.randn(3, 2, 16).half(), torch.randn(3, 2, 16).half()
    cache = (torch.zeros(4, 8, 2, 16).half(), torch.zeros(4, 8, 2, 16).half())
    slots = torch.tensor([1, 9, 30], dtype=torch.int32)
    torch.library.opcheck(torch.ops.npu.npu_scatter_pa_kv_cache.default, (key, value, *cache, slots),
                          {"cache_mode": "Norm"})  # fmt: skip
    nz = (torch.zeros(4, 2, 8, 16).half(), torch.zeros(4, 2, 8, 16).half())  # PA_NZ: [blocks, H*D/16, bs, 16]
    torch_npu.npu_scatter_pa_kv_cache(key, value, *nz, slots)  # the default PA_NZ
    assert torch.equal(nz[0][0, :, 1, :].reshape(32), key[0].reshape(32))
    out = (torch.zeros(3, 2, 16).half(), torch.zeros(3, 2, 16).half())
    torch.library.opcheck(torch.ops.npu.npu_gather_pa_kv_cache.default,
                          (*cache, torch.tensor([[0, 1]], dtype=torch.int32), torch.tensor([3], dtype=torch.int32),
                           *out))  # fmt: skip


def _sparse_reference(q, kv, q_rope, k_rope, indices, scale):
    """Float64 sparse attention: each query row attends to the key rows its indices select (-1: none),
    scores (q·k + q_rope·k_rope)·scale, values the same rows of kv (attention_mode 2 shares them)."""
    out = torch.zeros_like(q)
    for s in range(q.size(1)):
        chosen = indices[0, s, 0]
        chosen = chosen[chosen >= 0].long()
        keys, ropes = kv[0, chosen, 0], k_rope[0, chosen, 0]
        scores = (q[0, s] @ keys.T + q_rope[0, s] @ ropes.T) * scale
        out[0, s] = torch.softmax(scores, dim=-1) @ keys
    return out


def test_sparse_pair_against_float64_and_autograd():
    """npu_lightning_indexer's indices feed npu_sparse_flash_attention; its output and the gradients its
    autograd formula (npu_sparse_flash_attention_grad) gives meet the bf16 standard against a float64
    reference and torch.autograd of it; the indexer's own gradient is the grad op's."""
    g = torch.Generator().manual_seed(5)
    bf = lambda *shape, s=1.0: (torch.randn(*shape, generator=g) * s).bfloat16()  # noqa: E731
    s1, s2, n1, d, dr, topk, scale = 4, 96, 2, 512, 64, 2048, 0.04
    q, q_rope, kv, k_rope = bf(1, s1, n1, d), bf(1, s1, n1, dr), bf(1, s2, 1, d), bf(1, s2, 1, dr)
    iq, ik, iw = bf(1, s1, 64, 128), bf(1, s2, 1, 128), bf(1, s1, 64, s=0.1)
    index_leaves = [t.clone().requires_grad_() for t in (iq, ik, iw)]
    indices, values = torch_npu.npu_lightning_indexer(*index_leaves, sparse_count=topk, return_value=True)
    assert indices.dtype == torch.int32 and tuple(indices.shape) == (1, s1, 1, topk)
    leaves = [t.clone().requires_grad_() for t in (q, kv, q_rope, k_rope)]
    out, smax, ssum = torch_npu.npu_sparse_flash_attention(
        leaves[0], leaves[1], leaves[1], indices, scale, query_rope=leaves[2], key_rope=leaves[3],
        attention_mode=2, return_softmax_lse=True,
    )  # fmt: skip
    assert tuple(smax.shape) == (1, 1, s1, n1) and smax.dtype == torch.float32
    d_out = bf(1, s1, n1, d)
    out.backward(d_out)
    exact = [t.double().requires_grad_() for t in (q, kv, q_rope, k_rope)]
    golden = _sparse_reference(*exact, indices, scale)
    golden.backward(d_out.double())
    for name, mine, theirs in (("out", out, golden), *zip(("dq", "dkv", "dq_rope", "dk_rope"),
                                                         (t.grad for t in leaves), (t.grad for t in exact))):  # fmt: skip
        g64 = theirs.detach().numpy()
        failure = precision.failure(mine.detach().double().numpy(), g64, "bfloat16",
                                    bound=precision.TORCH_BOUND["bfloat16"], floor=precision.torch_floor(g64))  # fmt: skip
        assert failure is None, f"{name}: {failure}"
    dy = bf(1, s1, topk, s=0.1).reshape(values.shape)
    values.backward(dy)
    grads = torch_npu.npu_lightning_indexer_grad(iq, ik, dy, indices, iw)
    for leaf, grad in zip(index_leaves, grads):
        assert torch.equal(leaf.grad, grad)
    torch.library.opcheck(torch.ops.npu.npu_lightning_indexer.default, (iq, ik, iw), {"sparse_count": topk})
    torch.library.opcheck(torch.ops.npu.npu_lightning_indexer_grad.default, (iq, ik, dy, indices, iw))
    sfa_kwargs = {"query_rope": q_rope, "key_rope": k_rope, "attention_mode": 2, "return_softmax_lse": True}
    torch.library.opcheck(torch.ops.npu.npu_sparse_flash_attention.default, (q, kv, kv, indices, scale), sfa_kwargs)
    torch.library.opcheck(
        torch.ops.npu.npu_sparse_flash_attention_grad.default,
        (q, kv, kv, indices, d_out, out.detach(), smax.detach(), ssum.detach(), scale, 1, q_rope, k_rope),
    )


def test_argument_mapping_of_pfa_and_tnd_numels(monkeypatch):
    """What the stand-in hands the entry point, whatever this build has: PromptFlashAttentionV3 gets
    sparse_mode 10-14 as (sparse_mode - 10, innerPrecise 0) and others with innerPrecise 1; a TND
    fusion attention counts N * sum(Sq_i * Skv_i) scores."""
    from aclnn_emu.torch_npu import fusion_attention, inference

    calls = []
    monkeypatch.setattr(inference, "call", lambda entry, *args: calls.append((entry, args)))
    monkeypatch.setattr(fusion_attention, "call", lambda entry, *args: calls.append((entry, args)))
    q, k, v = _bnsd(6)
    for mode in (1, 12):
        torch_npu.npu_prompt_flash_attention(q, k, v, num_heads=N, input_layout="BNSD", sparse_mode=mode)
    assert [(entry, args[18], args[19]) for entry, args in calls] == [
        ("PromptFlashAttentionV3", 1, 1),
        ("PromptFlashAttentionV3", 2, 0),
    ]
    t = torch.zeros(30, N, D).half()
    numels = torch_npu.npu_fusion_attention(t, t, t, N, "TND", actual_seq_qlen=[10, 30], actual_seq_kvlen=[5, 30])[6]
    assert numels == N * (10 * 5 + 20 * 25) and calls[-1][0] == "FlashAttentionVarLenScore"


def test_a_function_without_a_formula_refuses_to_differentiate():
    q, k, v = (t.requires_grad_() for t in _bnsd(7, s1=1, s2=16))
    out = torch_npu.npu_incre_flash_attention(q, k, v, num_heads=N, input_layout="BNSD")
    with pytest.raises(RuntimeError, match="the derivative for 'npu_incre_flash_attention' is not implemented"):
        out.sum().backward()


def test_the_readme_conftest_lines_install_the_stand_in():
    """README "torch_npu code on a CPU": its conftest lines, run in a fresh interpreter, make
    `import torch_npu` the stand-in, with torch.ops.npu behind it."""
    import pathlib
    import re
    import subprocess
    import sys

    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## torch_npu code on a CPU") :]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    check = (
        "import torch, torch_npu\n"
        "assert torch_npu.__name__ == 'aclnn_emu.torch_npu'\n"
        "q = torch.randn(1, 8, 2, 16).half()\n"
        "a = torch_npu.npu_fusion_attention(q, q, q, 2, 'BSND')[0]\n"
        "b = torch.ops.npu.npu_fusion_attention(q, q, q, 2, 'BSND')[0]\n"
        "assert torch.equal(a, b)\n"
    )
    done = subprocess.run([sys.executable, "-c", block + check], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "name, dtype, quant, expected",
    [
        ("npu_prompt_flash_attention", torch.float8_e4m3fn, False, torch.float8_e4m3fn),
        ("npu_prompt_flash_attention", torch.int8, False, torch.float16),
        ("npu_incre_flash_attention", torch.float8_e4m3fn, False, torch.float8_e4m3fn),
        ("npu_incre_flash_attention", torch.int8, True, torch.int8),
        ("npu_fused_infer_attention_score", torch.float8_e4m3fn, False, torch.float8_e4m3fn),
        ("npu_fused_infer_attention_score_v2", torch.float8_e4m3fn, False, torch.float16),
    ],
)
def test_output_dtype_as_torch_npu_allocates_it(name, dtype, quant, expected):
    """The output dtype each function allocates (FlashAttentionKernelNpuOpApi.cpp npu_prompt_flash_attention
    and npu_incre_flash_attention_symint: int8 with quant_scale2, float16 for an int8 query (kChar only),
    else the query's; FusedInferAttentionScore(V2)KernelNpuOpApi.cpp construct_fia_output_tensor(_v2): the
    v2 one also counts Float8_e4m3fn as a low-precision query), read through the fakes."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    quant_name = "quant_scale_out" if name.endswith("_v2") else "quant_scale2"
    heads = "num_query_heads" if name.endswith("_v2") else "num_heads"
    with FakeTensorMode():
        q = torch.empty(B, N, 1, D, dtype=dtype)
        kv = torch.empty(B, N, S, D, dtype=dtype)
        kwargs = {heads: N, "input_layout": "BNSD", **({quant_name: torch.empty(1)} if quant else {})}
        out = getattr(torch.ops.npu, name)(q, kv, kv, **kwargs)
    assert (out[0] if isinstance(out, tuple) else out).dtype == expected


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("name", ["npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2"])
def test_fia_builds_its_outputs_before_the_ascend950_entry_point(chip, name, monkeypatch):
    """construct_fia_output_tensor(_v2) runs before the Ascend950 branch picks FusedInferAttentionScoreV5:
    its TORCH_CHECKs raise there as on A2/A3; a call that passes them reaches V5, which CANN 8.5 lacks
    (561003) and CANN 9.x runs as V4 ran on the chip under 8.5."""
    q, k, v = _bnsd(8)
    heads = "num_query_heads" if name.endswith("_v2") else "num_heads"
    with pytest.raises(RuntimeError, match="num_heads should be greater than 0, but the actual value is0"):
        getattr(torch_npu, name)(q, k, v, **{heads: 0, "input_layout": "BNSD"})
    with pytest.raises(RuntimeError, match="aclnnFusedInferAttentionScoreV5 failed, error code is 561003"):
        getattr(torch_npu, name)(q, k, v, **{heads: N, "input_layout": "BNSD"})
    want = aclnn_emu.ops.FusedInferAttentionScoreV4(q.numpy(), [k.numpy()], [v.numpy()], numHeads=N, inputLayout="BNSD")
    select(monkeypatch, cann_version="9.1.0", soc=chip)
    out = getattr(torch_npu, name)(q, k, v, **{heads: N, "input_layout": "BNSD"})[0]
    np.testing.assert_array_equal(out.numpy(), want.attentionOut)
