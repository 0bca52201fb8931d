"""aclnnPromptFlashAttentionV3 through ae.ops on every chip family: pseShift in each layout and
dtype, innerPrecise 0-3, against the float64 golden to CANN's precision standard."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
from golden import prompt_flash_attention as golden

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(26)
FLT_MAX = float(np.finfo(np.float32).max)
CHIPS = ["Ascend910B", "Ascend910_93", "Ascend910_95"]


def grid(shape, dtype, spread=0.5):
    """Values on a 1/4 grid: S * scale + pse is exact in fp32, so P's narrowing cannot flip."""
    return (np.round(RNG.standard_normal(shape) * spread * 4) / 4).astype(dtype)


def kind(chip, dtype, inner_precise, has_pse):
    """The golden keywords of the kernel family the call reaches."""
    if chip == "Ascend910_95":
        return dict(high_precision=True)
    fp16_high = dtype == np.float16 and (inner_precise % 2 == 0 or has_pse)
    return dict(x910_high_precision=True) if fp16_high else {}


def to_layout(x, layout):
    """[B, N, S, D] -> the layout's shape."""
    if layout == "BNSD":
        return x
    bsnd = x.transpose(0, 2, 1, 3)
    return bsnd if layout == "BSND" else bsnd.reshape(x.shape[0], x.shape[2], -1)


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_pse_shift(chip, layout, dtype):
    b, n, s1, s2, d = 2, 4, 40, 72, 64
    q, k = grid((b, n, s1, d), dtype), grid((b, n, s2, d), dtype)
    v = RNG.standard_normal((b, n, s2, d)).astype(dtype)
    pse = grid((1, n, s1 + 3, s2 + 5), dtype, spread=2)  # batch 1 broadcast, larger than S1 x S2
    out = ae.ops.PromptFlashAttentionV3(
        to_layout(q, layout),
        to_layout(k, layout),
        to_layout(v, layout),
        pseShift=pse,
        numHeads=n,
        scaleValue=0.125,
        inputLayout=layout,
        sparseMode=0,
    )
    expected = golden.attention(
        q, k, v, scale=0.125, sparse_mode=1, pse=pse[:, :, :s1, :s2], **kind(chip, dtype, 1, True)
    )
    precision.assert_meets(out, to_layout(expected, layout), np.dtype(dtype).name)


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
@pytest.mark.parametrize("inner_precise", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_inner_precise_with_a_user_mask(chip, inner_precise, dtype):
    """Rows 3 and 17 have every key masked: 0 with the row-invalid correction (2, 3), the average of
    V without it."""
    b, n, s1, s2, d = 1, 2, 24, 48, 32
    q, k = grid((b, n, s1, d), dtype), grid((b, n, s2, d), dtype)
    v = RNG.standard_normal((b, n, s2, d)).astype(dtype)
    mask = RNG.random((s1, s2)) < 0.25
    mask[[3, 17]] = True
    out = ae.ops.PromptFlashAttentionV3(
        q,
        k,
        v,
        attenMask=mask,
        numHeads=n,
        scaleValue=0.125,
        inputLayout="BNSD",
        sparseMode=1,
        innerPrecise=inner_precise,
    )
    fill = -FLT_MAX if chip == "Ascend910_95" or dtype == BF16 or inner_precise % 2 == 0 else -65504.0
    corrected = bool(inner_precise & 2)
    expected = golden.attention(
        q,
        k,
        v,
        scale=0.125,
        sparse_mode=1,
        mask=mask[None],
        invalid_max=fill if corrected else None,
        **kind(chip, dtype, inner_precise, False),
    )
    precision.assert_meets(out, expected, np.dtype(dtype).name)
    assert (np.asarray(out, np.float64)[0, :, [3, 17]] == 0).all() == corrected


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_pse_shift_in_the_sh_layout(chip):
    """SH packs the batches; the pse, [B, N, >= S, >= S] for the whole token count S, is read per
    batch from its first row and key (CalPseShiftOffset: batch offset, then the batch's own rows)."""
    n, d, lengths = 2, 32, [6, 10]
    q, k = grid((16, n * d), np.float16), grid((16, n * d), np.float16)
    v = RNG.standard_normal((16, n * d)).astype(np.float16)
    pse = grid((2, n, 16, 16), np.float16, spread=2)
    out = ae.ops.PromptFlashAttentionV3(
        q,
        k,
        v,
        pseShift=pse,
        actualSeqLengths=lengths,
        actualSeqLengthsKv=lengths,
        numHeads=n,
        scaleValue=0.125,
        inputLayout="SH",
        sparseMode=0,
    )
    tokens = [x.reshape(16, n, d) for x in (q, k, v)]
    expected = np.zeros((16, n, d))
    start = 0
    for batch, length in enumerate(lengths):
        rows = slice(start, start + length)
        one = [x[rows][None].transpose(0, 2, 1, 3) for x in tokens]
        got = golden.attention(
            *one, scale=0.125, sparse_mode=1, pse=pse[batch : batch + 1, :, :length, :length], x910_high_precision=True
        )
        expected[rows] = got[0].transpose(1, 0, 2)
        start += length
    precision.assert_meets(out, expected.reshape(16, n * d), "float16")


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_v1_is_v2_without_pse_and_v3_with_inner_precise_1_and_no_pse_is_v2(chip):
    """V1 drops pseShift and fixes sparseMode 0 (aclnn_prompt_flash_attention.cpp); V2 drops pseShift
    and fixes innerPrecise 1: bit for bit the same outputs."""
    q, k = grid((1, 2, 16, 32), np.float16), grid((1, 2, 20, 32), np.float16)
    v = RNG.standard_normal((1, 2, 20, 32)).astype(np.float16)
    pse = grid((1, 2, 16, 20), np.float16, spread=2)
    common = dict(numHeads=2, scaleValue=0.125, preTokens=65535, nextTokens=65535, inputLayout="BNSD")
    v1 = ae.ops.PromptFlashAttention(q, k, v, pseShift=pse, **common)
    v2 = ae.ops.PromptFlashAttentionV2(q, k, v, pseShift=pse, **common)
    v3 = ae.ops.PromptFlashAttentionV3(q, k, v, **common)
    v3_pse = ae.ops.PromptFlashAttentionV3(q, k, v, pseShift=pse, **common)
    assert np.array_equal(v1.view(np.uint16), v2.view(np.uint16))
    assert np.array_equal(v3.view(np.uint16), v2.view(np.uint16))
    assert not np.array_equal(v3_pse, v2)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("d", [64, 288], ids=["base_api", "mla"])
def test_base_api_fp16_high_precision(chip, d):
    """sparseMode 20 with an fp16 query and innerPrecise 0 runs the base-API high-precision kernels
    (fp32 scores; P and output nearest even): against the float64 golden, and unlike innerPrecise 1,
    whose fp16 kernel rounds the scores to fp16."""
    q_len, kv_len = [24, 40], [30, 50]
    q = RNG.standard_normal((sum(q_len), 2, d)).astype(np.float16)
    k = RNG.standard_normal((sum(kv_len), 2, d)).astype(np.float16)
    v = (np.abs(RNG.standard_normal((sum(kv_len), 2, d))) + 0.5).astype(np.float16)  # no cancelling sums
    layout = "SH" if d == 64 else "BSND"
    args = (q, k, v) if layout == "SH" else (q[None, :24], k[None, :30], v[None, :30])
    args = tuple(x.reshape(x.shape[0], -1) if layout == "SH" else x for x in args)
    lengths = dict(actualSeqLengths=q_len, actualSeqLengthsKv=kv_len) if layout == "SH" else {}
    outs = [
        ae.ops.PromptFlashAttentionV3(
            *args, numHeads=2, scaleValue=0.125, inputLayout=layout, sparseMode=20, innerPrecise=p, **lengths
        )
        for p in (0, 1)
    ]
    if layout == "SH":
        expected = golden.packed_attention(q, k, v, q_len, kv_len, scale=0.125, sparse_mode=1, high_precision=True)
        got = np.asarray(outs[0]).reshape(expected.shape)
    else:
        bnsd = [x.transpose(0, 2, 1, 3) for x in args]
        expected = golden.attention(*bnsd, scale=0.125, sparse_mode=1, high_precision=True).transpose(0, 2, 1, 3)
        got = outs[0]
    precision.assert_meets(got, expected, "float16")
    assert not np.array_equal(np.asarray(outs[0]), np.asarray(outs[1]))
