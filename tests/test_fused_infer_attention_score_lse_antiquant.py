"""FusedInferAttentionScore's softmaxLse beside an INT8/INT4 key/value (antiquant) on the IFA route.

The antiquant kernels write it themselves, [B, N, S, 1] fp32:
- Atlas A2/A3 (incre_flash_attention_split_Bbn2s2_Us2.h SoftmaxLseCopyOut, the flash-decode
  combine): log(l) + m of the scaled fp32 scores; the per-channel MSD kernels leave the key
  offset's row constant out of the scores and add it back (ComputeLogSumExpAndCopyToGm), so the lse
  is that of the dequantised scores; a masked key scores -1e12 (a fully masked row gives
  log(l) - 1e12); a batch without tokens -3.4e38 (InitAllZeroOutput).
- Ascend910_95 (IFATilingV2's kernel for every S, BaseApi::FlashAttentionScoreAntiquantKernel:
  flash_attention_score_antiquant_block_vec.h SoftmaxLseCopyOut, vf_flashupdate_new.h
  ComputeLseOutputVF): log(l) + m of the scores of the key dequantised in the query's dtype; +inf
  (3e99) for a row whose max stayed at -FLT_MAX (every key masked) and for a batch without keys
  (InitLseOutputSingleCore: such a batch sets needInit); rows at (b N + n) S + s
  (infer_flash_attention_kvcache.h: CheckPFAMerge merges no G and S rows with softmaxLse).
The references are float64 (golden.incre_flash_attention for A2/A3, golden.fused_infer_attention_score
over the arch35 dequantised key)."""

import numpy as np
import pytest

import aclnn_emu as ae
from golden import fused_infer_attention_score as golden
from golden import incre_flash_attention as ifa_golden
from test_fused_infer_attention_score import BF16, _lse_meets, pack_int4, run_fia
from test_incre_flash_attention_arch35 import int8_case

RNG = np.random.default_rng(20261128)
NOT_IMPLEMENTED = 561003


def _int8(b=2, n2=2, s=50, d=32, dtype=np.float16):
    k8, v8 = (RNG.integers(-128, 128, (b, n2, s, d), dtype=np.int8) for _ in range(2))
    scale = (RNG.random((2, n2, 1, d)) * 0.02 + 0.005).astype(dtype)
    offset = RNG.integers(-3, 4, (2, n2, 1, d)).astype(dtype)
    return k8, v8, scale, offset


def _a2_lse(q, keys, values, lengths, antiquant, **kw):
    want = np.full(q.shape[:2], np.nan)
    ifa_golden.attention(q, keys, values, scale=0.125, lengths=lengths, antiquant=antiquant, lse=want, **kw)
    return want


def _fia(q, k, v, lse_shape, version=4, **named):
    """(attentionOut, softmaxLse) of one FIA call: N from softmaxLse, two KV heads, scaleValue 0.125, BNSD
    unless ``named`` says otherwise."""
    named.setdefault("inputLayout", "BNSD")
    return run_fia(
        version, query=q, key=[k], value=[v], out_shape=q.shape, lse_shape=lse_shape, numHeads=lse_shape[1],
        numKeyValueHeads=2, scaleValue=0.125, **named,
    )  # fmt: skip


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_per_channel_decode_a2(chip, dtype, layout):
    """antiquantScale/Offset per channel [2, N2, 1, D]; batch 2 has no tokens (-3.4e38)."""
    k8, v8, scale, offset = _int8(b=3, dtype=dtype)
    q = RNG.standard_normal((3, 4, 1, 32)).astype(dtype)
    to_layout = (lambda x: x) if layout == "BNSD" else (lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], -1, 64))
    q_in = q if layout == "BNSD" else q.reshape(3, 1, 128)
    out, lse = _fia(
        q_in,
        to_layout(k8),
        to_layout(v8),
        (3, 4, 1, 1),
        antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset,
        actualSeqLengthsKvOptional=(50, 17, 0),
        inputLayout=layout,
    )
    s, o = scale.astype(np.float64).reshape(2, 2, 32), offset.astype(np.float64).reshape(2, 2, 32)
    want = _a2_lse(q[:, :, 0], list(k8), list(v8), [50, 17, 0], (s[0], o[0], s[1], o[1]))
    assert (lse[2] == np.float32(-3.4e38)).all()
    _lse_meets(lse[:2, :, 0, 0], want[:2])


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_masked_row_a2(chip):
    """attenMask [B, S]: batch 0 with every key masked gives log(l) - 1e12, as -1e12 is finite."""
    k8, v8, scale, offset = _int8()
    q = RNG.standard_normal((2, 4, 1, 32)).astype(np.float16)
    mask = np.zeros((2, 50), bool)
    mask[0] = True
    mask[1, ::3] = True
    _, lse = _fia(
        q, k8, v8, (2, 4, 1, 1), attenMaskOptional=mask, antiquantScaleOptional=scale, antiquantOffsetOptional=offset
    )
    s, o = scale.astype(np.float64).reshape(2, 2, 32), offset.astype(np.float64).reshape(2, 2, 32)
    want = _a2_lse(q[:, :, 0], list(k8), list(v8), [50, 50], (s[0], o[0], s[1], o[1]), mask=mask)
    assert np.allclose(lse[0, :, 0, 0], want[0], rtol=1e-6) and (want[0] < -9e11).all()
    _lse_meets(lse[1, :, 0, 0], want[1])


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_per_token_v2_a2(chip):
    """V2's separate key/value parameters per token (modes 1, [1, B, S] fp32): the offsets enter the
    scores (DealAntiqBmm1ResBaseBlockPerToken), so the lse is that of the dequantised scores."""
    k8, v8, _, _ = _int8()
    q = RNG.standard_normal((2, 4, 1, 32)).astype(np.float16)
    ks, vs = ((RNG.random((1, 2, 50)) * 0.02 + 0.005).astype(np.float32) for _ in range(2))
    ko, vo = (RNG.integers(-3, 4, (1, 2, 50)).astype(np.float32) for _ in range(2))
    _, lse = _fia(
        q,
        k8,
        v8,
        (2, 4, 1, 1),
        version=2,
        keyAntiquantScaleOptional=ks,
        valueAntiquantScaleOptional=vs,
        keyAntiquantOffsetOptional=ko,
        valueAntiquantOffsetOptional=vo,
        keyAntiquantMode=1,
        valueAntiquantMode=1,
    )
    params = tuple(x[0].astype(np.float64) for x in (ks, ko, vs, vo))
    want = _a2_lse(q[:, :, 0], list(k8), list(v8), [50, 50], params, per_token=(True, True))
    _lse_meets(lse[..., 0, 0], want)


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_int4_v2_a2(chip):
    """An INT32 key/value list read as INT4 (TensorPreProcess) on the IFA route."""
    values4 = [RNG.integers(-8, 8, (2, 2, 50, 32)).astype(np.int8) for _ in range(2)]
    q = RNG.standard_normal((2, 4, 1, 32)).astype(np.float16)
    scale = (RNG.random((2, 2, 1, 32)) * 0.2 + 0.05).astype(np.float16)
    _, lse = _fia(
        q, pack_int4(values4[0]), pack_int4(values4[1]), (2, 4, 1, 1), version=2, antiquantScaleOptional=scale
    )
    s, zero = scale.astype(np.float64).reshape(2, 2, 32), np.zeros((2, 32))
    want = _a2_lse(q[:, :, 0], list(values4[0]), list(values4[1]), [50, 50], (s[0], zero, s[1], zero))
    _lse_meets(lse[..., 0, 0], want)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_per_channel_decode_arch35(chip, dtype):
    """IFATilingV2's antiquant kernel: the key dequantised in the query's dtype; batch 1's keys all
    masked and batch 2 without tokens give +inf."""
    k8, v8, scale, offset, k, v = int8_case(dtype, (3, 2, 60, 32), per_channel=True)
    q = RNG.standard_normal((3, 8, 1, 32)).astype(dtype)
    mask = np.zeros((3, 60), bool)
    mask[0, 40:] = True
    mask[1] = True
    lengths = (60, 23, 0)
    out, lse = _fia(
        q,
        k8,
        v8,
        (3, 8, 1, 1),
        attenMaskOptional=mask,
        antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset,
        actualSeqLengthsKvOptional=lengths,
    )
    want = golden.attention(
        q, k, v, scale=0.125, kv_block=1024, act_kv=lengths, mask=mask[:, None], masked_lse_inf=True
    ).lse
    assert np.isposinf(lse[1:]).all()
    _lse_meets(lse[..., 0], want)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSND"])
def test_prefill_arch35(chip, layout):
    """Query S 8 with an INT8 key, no attenMask: IFATilingV2's antiquant kernel, every row over all
    its batch's keys (G x S 32 rows would be merged, but not with softmaxLse: CheckPFAMerge, so 12
    keys cover the rows)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 60, 32), per_channel=True)
    q = RNG.standard_normal((2, 4, 8, 32)).astype(np.float16)
    to_layout = (lambda x: x) if layout == "BNSD" else (lambda x: x.transpose(0, 2, 1, 3))
    _, lse = _fia(
        to_layout(q),
        to_layout(k8),
        to_layout(v8),
        (2, 4, 8, 1),
        antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset,
        actualSeqLengthsKvOptional=(60, 12),
        inputLayout=layout,
    )
    want = golden.attention(q, k, v, scale=0.125, kv_block=1024, act_kv=(60, 12)).lse
    _lse_meets(lse[..., 0], want)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("lse", [True, False], ids=["lse", "no_lse"])
def test_tnd_prefill_with_mask_stays_refused_arch35(chip, lse):
    """With an attenMask and a TND query, IFATilingV2 bounds each batch's rows and key windows by the
    packed lengths, which the route does not hand on: not_implemented.lse with softmaxLse,
    not_implemented.antiquant_mask without (561003). A BSH/BSND/BNSD query runs, with queryPaddingSize
    too (test_fused_infer_attention_score_antiquant_mask_arch35)."""
    k8 = RNG.integers(-128, 128, (50, 2, 32), dtype=np.int8)
    q = RNG.standard_normal((8, 4, 32)).astype(np.float16)
    scale = np.full((2, 2, 1, 32), 0.01, np.float16)
    with pytest.raises(ae.errors.AclnnError) as failure:
        run_fia(
            query=q, key=[k8], value=[k8], out_shape=q.shape, lse_shape=(8, 4, 1) if lse else None, numHeads=4,
            numKeyValueHeads=2, scaleValue=0.125, inputLayout="TND", attenMaskOptional=np.zeros((2, 8, 50), bool),
            antiquantScaleOptional=scale, actualSeqLengthsOptional=(5, 8), actualSeqLengthsKvOptional=(20, 50),
        )  # fmt: skip
    assert failure.value.status == NOT_IMPLEMENTED
    assert ("softmaxLse" if lse else "attenMask beside an INT8/INT4") in str(failure.value)
