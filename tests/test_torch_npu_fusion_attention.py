"""MindSpeed-style: torch_npu.npu_fusion_attention forward and backward through the stand-in, against a
dense float64 reference and its torch.autograd gradients (CANN's precision standard), on BSND and TND,
causal sparse mode 2, GQA, keep_prob 1 and 0.9 (the mask from the returned seed and offset, rebuilt by
tests/golden/dropout_gen_mask.py), plus opcheck and torch_npu's own argument checks."""

import math

import pytest
import torch

import aclnn_emu.ops
import aclnn_emu.torch_npu as torch_npu
from torch_npu_attention import B, CAUSAL, D, N1, S, check, inputs, keep_bits
from torch_npu_attention import own_dropout_bits, reference, tnd_reference  # noqa: F401 (an autouse fixture)


@pytest.mark.parametrize("causal", [False, True], ids=["no_mask", "causal"])
@pytest.mark.parametrize("keep_prob", [1.0, 0.9])
def test_bsnd_forward_and_backward_against_dense(causal, keep_prob):
    q, k, v, dy = inputs(1 + causal)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    scale = 1 / math.sqrt(D)
    out, smax, ssum, sout, seed, offset, numels = torch_npu.npu_fusion_attention(
        *leaves, N1, "BSND", atten_mask=CAUSAL if causal else None, scale=scale, keep_prob=keep_prob,
        sparse_mode=2 if causal else 0,
    )  # fmt: skip
    assert (tuple(smax.shape), smax.dtype, tuple(ssum.shape), tuple(sout.shape)) == (
        (B, N1, S, 8), torch.float32, (B, N1, S, 8), (0,))  # fmt: skip
    assert numels == B * N1 * S * S
    keep = None if keep_prob == 1.0 else keep_bits(seed, offset, keep_prob, numels, (B, N1, S, S))
    if keep_prob == 1.0:
        assert (seed, offset) == (0, 0)
    ref_leaves = [t.double().requires_grad_() for t in (q, k, v)]
    golden = reference(*ref_leaves, scale, causal, keep, keep_prob)
    check(out, golden, "attention_out")
    out.backward(dy)
    golden.backward(dy.double())
    for name, mine, theirs in zip("qkv", leaves, ref_leaves):
        check(mine.grad, theirs.grad, f"d{name}")


def test_seed_and_offset_advance_like_the_npu_generator():
    q, k, v, _ = inputs(3)
    torch.manual_seed(1234)
    first = torch_npu.npu_fusion_attention(q, k, v, N1, "BSND", keep_prob=0.9)[4:6]
    second = torch_npu.npu_fusion_attention(q, k, v, N1, "BSND", keep_prob=0.9)[4:6]
    assert first == (1234, 0) and second == (1234, 12)


@pytest.mark.parametrize("keep_prob", [1.0, 0.9])
@pytest.mark.parametrize("softmax_layout", ["", "TND"])
def test_tnd_against_dense_per_sequence(softmax_layout, keep_prob):
    """TND with actual_seq_qlen/kvlen goes to FlashAttentionVarLenScore (V4 for softmax_layout TND) and
    back through UnpaddingScoreGrad (V4); the dropout bits run sequence after sequence."""
    q, k, v, dy = inputs(4, s1=48, s2=48)
    seq = [20, 48]
    tq, tk, tv, tdy = (t.reshape(48, t.size(2), D) for t in (q, k, v, dy))
    leaves = [t.clone().requires_grad_() for t in (tq, tk, tv)]
    entry = "FlashAttentionVarLenScoreV4" if softmax_layout == "TND" else "FlashAttentionVarLenScore"
    if not hasattr(aclnn_emu.ops, entry):
        with pytest.raises(NotImplementedError, match=f"aclnn{entry} "):
            torch_npu.npu_fusion_attention(*leaves, N1, "TND", actual_seq_qlen=seq, actual_seq_kvlen=seq,
                                           softmax_layout=softmax_layout)  # fmt: skip
        return
    scale = 1 / math.sqrt(D)
    out, smax, _, _, seed, offset, numels = torch_npu.npu_fusion_attention(
        *leaves, N1, "TND", scale=scale, keep_prob=keep_prob, atten_mask=CAUSAL, sparse_mode=3,
        actual_seq_qlen=seq, actual_seq_kvlen=seq, softmax_layout=softmax_layout,
    )  # fmt: skip
    assert numels == N1 * (20 * 20 + 28 * 28) and tuple(smax.shape) == (48, N1, 8)
    bits = None if keep_prob == 1.0 else keep_bits(seed, offset, keep_prob, numels, (numels,))
    out.backward(tdy)
    ref_leaves = [t.double().requires_grad_() for t in (tq, tk, tv)]
    golden = tnd_reference(seq, ref_leaves, scale, True, bits, keep_prob)
    golden.backward(tdy.double())
    for name, mine, theirs in zip(("attention_out", "dq", "dk", "dv"), [out] + [leaf.grad for leaf in leaves],
                                  [golden] + [leaf.grad for leaf in ref_leaves]):  # fmt: skip
        check(mine, theirs, name)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"head_num": 0}, "head_num must > 0, but got 0"),
        ({"keep_prob": 0.0}, r"The keep_prob value must be in range of \(0, 1\], but got 0"),
        ({"input_layout": "BSDN"}, "The input_layout should be BSH/SBH/BNSD/BSND/TND"),
        ({"sparse_mode": 7}, r"The sparse_mode value must be in range of \[0,6\], but got 7"),
        ({"softmax_layout": "BSND"}, "only supported softmax_layout=TND"),
        ({"softmax_layout": "TND"}, "softmax_layout=TND only supported when input_layout_str=TND"),
    ],
)
def test_torch_npu_checks_raise_runtime_error(kwargs, message):
    q, k, v, _ = inputs(5)
    args = {"head_num": N1, "input_layout": "BSND", **kwargs}
    with pytest.raises(RuntimeError, match=message):
        torch_npu.npu_fusion_attention(q, k, v, args.pop("head_num"), args.pop("input_layout"), **args)


def test_an_aclnn_failure_is_a_runtime_error_with_its_status():
    q, k, v, _ = inputs(6)
    with pytest.raises(RuntimeError, match=r"call aclnnFlashAttentionScore failed, error code is 1610"):
        torch_npu.npu_fusion_attention(q, k[..., :16], v, N1, "BSND")


def test_the_grad_function_returns_none_for_an_absent_pse():
    q, k, v, dy = inputs(7)
    out, smax, ssum, sout, seed, offset, numels = torch_npu.npu_fusion_attention(q, k, v, N1, "BSND")
    dq, dk, dv, dpse, dsink = torch_npu.npu_fusion_attention_grad(
        q, k, v, dy, N1, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out, numels=numels
    )
    assert dpse is None and tuple(dsink.shape) == (0,) and dsink.dtype == torch.float32
    assert dq.shape == q.shape and dk.shape == k.shape


def test_v2_matches_v1_without_its_extras():
    q, k, v, _ = inputs(8)
    one = torch_npu.npu_fusion_attention(q, k, v, N1, "BSND", scale=0.2)[0]
    two = torch_npu.npu_fusion_attention_v2(q, k, v, N1, "BSND", scale=0.2)[0]
    assert torch.equal(one, two)


def test_opcheck():
    q, k, v, dy = (t.requires_grad_() for t in inputs(9, s1=16, s2=16))
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention.default, (q, k, v, N1, "BSND"), {"scale": 0.3})
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention_v2.default, (q, k, v, N1, "BSND"), {"scale": 0.3})
    out, smax, ssum, *_ = torch.ops.npu.npu_fusion_attention(q, k, v, N1, "BSND", scale=0.3)
    grad_args = (q.detach(), k.detach(), v.detach(), dy.detach(), N1, "BSND")
    grad_kwargs = {"softmax_max": smax.detach(), "softmax_sum": ssum.detach(), "attention_in": out.detach(),
                   "scale_value": 0.3}  # fmt: skip
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention_grad.default, grad_args, grad_kwargs)
    torch.library.opcheck(torch.ops.npu.npu_fusion_attention_grad_v2.default, grad_args, grad_kwargs)


def test_an_empty_prefix_array_is_no_prefix():
    """torch_npu passes prefix as an empty aclIntArray (`value_or(at::IntArrayRef{})`), not NULL; for
    sparse modes other than 5 and 6 the kernels read no prefix, so both give the same bits."""
    q, k, v, _ = inputs(10, s1=32, s2=32)
    tq, tk, tv = (t.reshape(32, t.size(2), D) for t in (q, k, v))
    outs = []
    for prefix in ((), None):
        smax, ssum = torch.empty(32, N1, 8), torch.empty(32, N1, 8)
        out = torch.empty_like(tq)
        aclnn_emu.ops.FlashAttentionVarLenScore(
            tq, tk, tv, None, None, None, CAUSAL, prefix, (12, 32), (12, 32), 0.2, 1.0, 2147483647, 2147483647,
            N1, "TND", 0, 3, smax, ssum, torch.empty(0, dtype=tq.dtype), out,
        )  # fmt: skip
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
