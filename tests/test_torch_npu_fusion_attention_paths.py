"""The paths of npu_fusion_attention(_v2) beyond the plain one, through the stand-in and its autograd,
each checked for the aclnn entry points op-plugin 26.1.0 calls (FlashAttentionKernelNpuOpApi.cpp,
FlashAttentionV2KernelNpuOpApi.cpp) and against a float64 torch reference and its torch.autograd
gradients (CANN's precision standard):

- the learnable sink: ScoreV3 / ScoreGradV3 for BSND, VarLenScoreV5 / UnpaddingScoreGradV5 for TND
  (from both functions), the sink one more logit in each softmax row, dsink included;
- npu_fusion_attention_v2 on TND: VarLenScoreV2 / UnpaddingScoreGradV2, and with query_rope and
  key_rope VarLenScoreV3 / UnpaddingScoreGradV3;
- the v2 functions' own TORCH_CHECKs, and opcheck of every path.
"""

import pytest
import torch

import aclnn_emu.torch_npu as torch_npu
from torch_npu_attention import CAUSAL, D, N1, SCALE, check, inputs, keep_bits, record_entries, reference
from torch_npu_attention import own_dropout_bits, sink_logits, tnd_reference  # noqa: F401 (an autouse fixture)

SEQ = [20, 48]  # cumulative: two sequences of 20 and 28 tokens


T = SEQ[-1]
V1, V2 = torch_npu.npu_fusion_attention, torch_npu.npu_fusion_attention_v2


def _tnd(seed, dtype=torch.float16, d=D):
    return [t.reshape(T, t.size(2), d) for t in inputs(seed, dtype, s1=T, s2=T, d=d)]


def _leaves(*tensors):
    return [t.clone().requires_grad_() for t in tensors], [t.double().requires_grad_() for t in tensors]


def _compare(names, mine, golden, dtype="float16"):
    for name, m, g in zip(names, mine, golden):
        check(m, g, name, dtype)


@pytest.mark.parametrize("function", [V1, V2], ids=["v1", "v2"])
@pytest.mark.parametrize("causal", [False, True], ids=["no_mask", "causal"])
@pytest.mark.parametrize("keep_prob", [1.0, 0.9])
def test_bsnd_sink_against_dense(monkeypatch, function, causal, keep_prob):
    entries = record_entries(monkeypatch)
    q, k, v, dy = inputs(20 + causal)
    leaves, ref_leaves = _leaves(q, k, v, sink_logits(21))
    mask = {"atten_mask": CAUSAL, "sparse_mode": 2} if causal else {}
    out, smax, ssum, sout, seed, offset, numels = function(
        *leaves[:3], N1, "BSND", scale=SCALE, keep_prob=keep_prob, sink=leaves[3], **mask
    )
    assert tuple(smax.shape) == (1, N1, q.size(1), 8) and tuple(sout.shape) == (0,)
    keep = None if keep_prob == 1.0 else keep_bits(seed, offset, keep_prob, numels, (1, N1, q.size(1), k.size(1)))
    golden = reference(*ref_leaves[:3], SCALE, causal, keep, keep_prob, sink=ref_leaves[3])
    check(out, golden, "attention_out")
    out.backward(dy)
    golden.backward(dy.double())
    assert entries == ["FlashAttentionScoreV3", "FlashAttentionScoreGradV3"]
    _compare(("dq", "dk", "dv", "dsink"), [t.grad for t in leaves], [t.grad for t in ref_leaves])
    assert leaves[3].grad.dtype == torch.float32


@pytest.mark.parametrize("function", [V1, V2], ids=["v1", "v2"])
@pytest.mark.parametrize("keep_prob", [1.0, 0.9])
@pytest.mark.parametrize("softmax_layout", ["", "TND"])
def test_tnd_sink_against_dense_per_sequence(monkeypatch, function, keep_prob, softmax_layout):
    entries = record_entries(monkeypatch)
    tq, tk, tv, tdy = _tnd(22)
    leaves, ref_leaves = _leaves(tq, tk, tv, sink_logits(23))
    out, smax, _, _, seed, offset, numels = function(
        *leaves[:3], N1, "TND", scale=SCALE, keep_prob=keep_prob, atten_mask=CAUSAL, sparse_mode=3, sink=leaves[3],
        actual_seq_qlen=SEQ, actual_seq_kvlen=SEQ, softmax_layout=softmax_layout,
    )  # fmt: skip
    assert tuple(smax.shape) == (T, N1, 8)
    bits = None if keep_prob == 1.0 else keep_bits(seed, offset, keep_prob, numels, (numels,))
    golden = tnd_reference(SEQ, ref_leaves[:3], SCALE, True, bits, keep_prob, sink=ref_leaves[3])
    check(out, golden, "attention_out")
    out.backward(tdy)
    golden.backward(tdy.double())
    assert entries == ["FlashAttentionVarLenScoreV5", "FlashAttentionUnpaddingScoreGradV5"]
    _compare(("dq", "dk", "dv", "dsink"), [t.grad for t in leaves], [t.grad for t in ref_leaves])


@pytest.mark.parametrize("keep_prob", [1.0, 0.9])
def test_v2_tnd_against_dense_per_sequence(monkeypatch, keep_prob):
    entries = record_entries(monkeypatch)
    tq, tk, tv, tdy = _tnd(24)
    leaves, ref_leaves = _leaves(tq, tk, tv)
    out, smax, ssum, sout, seed, offset, numels = V2(
        *leaves, N1, "TND", scale=SCALE, keep_prob=keep_prob, atten_mask=CAUSAL, sparse_mode=3,
        actual_seq_qlen=SEQ, actual_seq_kvlen=SEQ,
    )  # fmt: skip
    assert numels == N1 * (20 * 20 + 28 * 28) and tuple(ssum.shape) == (T, N1, 8) and tuple(sout.shape) == (0,)
    bits = None if keep_prob == 1.0 else keep_bits(seed, offset, keep_prob, numels, (numels,))
    golden = tnd_reference(SEQ, ref_leaves, SCALE, True, bits, keep_prob)
    check(out, golden, "attention_out")
    out.backward(tdy)
    golden.backward(tdy.double())
    assert entries == ["FlashAttentionVarLenScoreV2", "FlashAttentionUnpaddingScoreGradV2"]
    _compare(("dq", "dk", "dv"), [t.grad for t in leaves], [t.grad for t in ref_leaves])


def test_v2_tnd_rope_against_dense_per_sequence(monkeypatch):
    """MLA: the rope halves join the scores; VarLenScoreV3 takes bf16 only."""
    entries = record_entries(monkeypatch)
    tq, tk, tv, tdy = _tnd(25, torch.bfloat16, d=64)
    q_rope, k_rope, _, _ = _tnd(26, torch.bfloat16, d=32)
    scale = (64 + 32) ** -0.5
    leaves, ref_leaves = _leaves(tq, tk, tv, q_rope, k_rope)
    out = V2(
        *leaves[:3], N1, "TND", query_rope=leaves[3], key_rope=leaves[4], scale=scale, atten_mask=CAUSAL,
        sparse_mode=3, actual_seq_qlen=SEQ, actual_seq_kvlen=SEQ,
    )[0]  # fmt: skip
    golden = tnd_reference(SEQ, ref_leaves[:3], scale, True, ropes=ref_leaves[3:])
    check(out, golden, "attention_out", "bfloat16")
    out.backward(tdy)
    golden.backward(tdy.double())
    assert entries == ["FlashAttentionVarLenScoreV3", "FlashAttentionUnpaddingScoreGradV3"]
    _compare(("dq", "dk", "dv", "dq_rope", "dk_rope"), [t.grad for t in leaves], [t.grad for t in ref_leaves],
             "bfloat16")  # fmt: skip


def test_v2_passes_its_pse_type_and_start_indices_to_the_sink_entry(monkeypatch):
    """v1 passes pse_type 1 to ScoreV3; v2 passes its own: pse_type 0 with a [B,N1,S1,S2] pse adds the
    pse after the scale (the reference adds pse / scale before it)."""
    q, k, v, _ = inputs(27)
    pse = torch.randn(1, N1, q.size(1), k.size(1)).half()
    sink = sink_logits(28)
    refs = [t.double() for t in (q, k, v)]
    for pse_type, pse_before_scale in ((0, pse.double() / SCALE), (1, pse.double())):
        out = V2(q, k, v, N1, "BSND", pse=pse, scale=SCALE, pse_type=pse_type, sink=sink)[0]
        golden = _reference_with_pse(*refs, pse_before_scale, sink.double())
        check(out, golden, f"attention_out, pse_type {pse_type}")


def _reference_with_pse(q, k, v, pse, sink):
    group = q.size(2) // k.size(2)
    k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
    scores = (torch.einsum("bqnd,bknd->bnqk", q, k) + pse) * SCALE
    column = sink.view(1, -1, 1, 1).expand(*scores.shape[:3], 1)
    p = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1]
    return torch.einsum("bnqk,bknd->bqnd", p, v)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"input_layout": ""}, "^The input_layout is empty"),
        ({"softmax_layout": "BSND"}, "only supported softmax_layout=TND"),
        ({"softmax_layout": "TND"}, "softmax_layout=TND only supported when input_layout_str=TND"),
        ({"key_rope": "4d"}, r"the size of actual_seq_qlen and actual_seq_kvlen cannot be empty\."),
        ({"query_rope": "2d"}, "The shapes of the input query_rope should be 3 or 4 dimensional, but got 2"),
        ({"actual_seq_qlen": [1000001], "actual_seq_kvlen": [16]},
         "The sequence length should not greater than 1M, but got q1000001kv16"),
    ],
)  # fmt: skip
def test_v2_checks_raise_runtime_error(kwargs, message):
    """FlashAttentionV2KernelNpuOpApi.cpp npu_fusion_attention_common, its TORCH_CHECKs in order."""
    q, k, v, _ = inputs(29, s1=16, s2=16)
    tensors = {"2d": q[0, 0], "4d": q}
    args = {"input_layout": "BSND", **{name: tensors[v] if v in ("2d", "4d") else v for name, v in kwargs.items()}}
    with pytest.raises(RuntimeError, match=message):
        V2(q, k, v, N1, args.pop("input_layout"), **args)


def test_v2_softmax_layout_check_reads_the_upper_cased_layout():
    """v2 checks softmax_layout after upper-casing the layout (v1 before): "tnd" passes it there."""
    tq, tk, tv, _ = _tnd(30)
    kwargs = dict(actual_seq_qlen=SEQ, actual_seq_kvlen=SEQ, softmax_layout="TND", atten_mask=CAUSAL, sparse_mode=3)
    with pytest.raises(RuntimeError, match="softmax_layout=TND only supported when input_layout_str=TND"):
        V1(tq, tk, tv, N1, "tnd", **kwargs)
    out = V2(tq, tk, tv, N1, "tnd", **kwargs)[0]
    assert torch.equal(out, V2(tq, tk, tv, N1, "TND", **kwargs)[0])


def test_v2_grad_checks_raise_runtime_error():
    q, k, v, dy = inputs(31, s1=16, s2=16)
    with pytest.raises(RuntimeError, match="^The input_layout is empty"):
        torch_npu.npu_fusion_attention_grad_v2(q, k, v, dy, N1, "")
    with pytest.raises(RuntimeError, match="The shapes of the input key_rope should be 3 or 4 dimensional"):
        torch_npu.npu_fusion_attention_grad_v2(q, k, v, dy, N1, "BSND", key_rope=k[0, 0])


def test_v2_grad_with_both_ropes_and_no_sequence_lengths_calls_nothing(monkeypatch):
    """npu_fusion_attention_backward_common has no branch for it: no aclnn call, the outputs unwritten."""
    entries = record_entries(monkeypatch)
    q, k, v, dy = inputs(32, s1=16, s2=16)
    with pytest.warns(RuntimeWarning, match="calls no aclnn function"):
        grads = torch_npu.npu_fusion_attention_grad_v2(q, k, v, dy, N1, "BSND", query_rope=q, key_rope=k)
    assert entries == [] and [tuple(g.shape) for g in grads[4:6]] == [tuple(q.shape), tuple(k.shape)]


def test_opcheck_sink_and_v2_tnd():
    q, k, v, dy = (t.requires_grad_() for t in inputs(33, s1=16, s2=16))
    tq, tk, tv, _ = (t.requires_grad_() for t in _tnd(34))
    sink = sink_logits(35).requires_grad_()
    seqs = {"actual_seq_qlen": SEQ, "actual_seq_kvlen": SEQ, "atten_mask": CAUSAL, "sparse_mode": 3}
    for op in (torch.ops.npu.npu_fusion_attention.default, torch.ops.npu.npu_fusion_attention_v2.default):
        torch.library.opcheck(op, (q, k, v, N1, "BSND"), {"scale": 0.3, "sink": sink})
        torch.library.opcheck(op, (tq, tk, tv, N1, "TND"), {"scale": 0.3, "sink": sink, **seqs})
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention_v2.default, (tq, tk, tv, N1, "TND"), seqs)
    out, smax, ssum, *_ = torch.ops.npu.npu_fusion_attention(q, k, v, N1, "BSND", scale=0.3, sink=sink)
    grad_args = (q.detach(), k.detach(), v.detach(), dy.detach(), N1, "BSND")
    grad_kwargs = {"softmax_max": smax.detach(), "softmax_sum": ssum.detach(), "attention_in": out.detach(),
                   "scale_value": 0.3, "sink": sink.detach()}  # fmt: skip
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention_grad.default, grad_args, grad_kwargs)
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention_grad_v2.default, grad_args, grad_kwargs)
