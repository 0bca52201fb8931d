"""The stand-in's inference, cache and sparse functions: numerics against float64 SDPA, the
PromptFlashAttention sparse_mode 10-14 mapping, autograd wired to the grad ops, and opcheck."""

import math

import ml_dtypes  # noqa: F401  (bf16 tensors through numpy)
import pytest
import torch

import aclnn_emu.ops
import aclnn_emu.torch_npu as torch_npu
import precision

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
    with getattr(aclnn_emu.ops, entry).prepare(*_fia_args(name, q, k, v, kwargs)) as phase1:
        assert size.numel() == phase1.workspace_size


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


def test_sparse_pair_autograd_is_the_grad_ops():
    """npu_lightning_indexer feeds npu_sparse_flash_attention; backward through both equals the grad
    ops called with derivatives.yaml's arguments."""
    g = torch.Generator().manual_seed(5)
    bf = lambda *shape, s=1.0: (torch.randn(*shape, generator=g) * s).bfloat16()  # noqa: E731
    s1, s2, n1, d, dr, topk = 4, 96, 2, 512, 64, 2048
    q, q_rope, kv, k_rope = bf(1, s1, n1, d), bf(1, s1, n1, dr), bf(1, s2, 1, d), bf(1, s2, 1, dr)
    iq, ik, iw = bf(1, s1, 64, 128), bf(1, s2, 1, 128), bf(1, s1, 64, s=0.1)
    indices, _ = torch_npu.npu_lightning_indexer(iq, ik, iw, sparse_count=topk)
    leaves = [t.clone().requires_grad_() for t in (q, kv, q_rope, k_rope)]
    out, smax, ssum = torch_npu.npu_sparse_flash_attention(
        leaves[0], leaves[1], leaves[1], indices, 0.04, query_rope=leaves[2], key_rope=leaves[3],
        attention_mode=2, return_softmax_lse=True,
    )  # fmt: skip
    assert tuple(smax.shape) == (1, 1, s1, n1)
    d_out = bf(1, s1, n1, d)
    out.backward(d_out)
    dq, dk, dv, dq_rope, dk_rope = torch_npu.npu_sparse_flash_attention_grad(
        q, kv, kv, indices, d_out, out.detach(), smax, ssum, 0.04, 1, q_rope, k_rope
    )
    assert torch.equal(leaves[0].grad, dq) and torch.equal(leaves[1].grad, dk + dv)
    assert torch.equal(leaves[2].grad, dq_rope) and torch.equal(leaves[3].grad, dk_rope)
    torch.library.opcheck(torch.ops.npu.npu_lightning_indexer.default, (iq, ik, iw), {"sparse_count": topk})


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
