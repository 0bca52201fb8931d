"""aclnnPromptFlashAttentionV3 through ae.ops on every chip family: pseShift in each layout and
dtype, innerPrecise 0-3, against the float64 golden to CANN's precision standard."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
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


BASE_API_MASKS = [(21, (2, 2, 10, 11)), (22, (2, 10, 11)), (22, (2, 2, 10, 12))]


def _base_api_call(dtype, mode, pse, inner_precise, q_len=(6, 10), kv_len=(5, 11), n=2, d=32):
    q, k = grid((sum(q_len), n * d), dtype), grid((sum(kv_len), n * d), dtype)
    v = RNG.standard_normal((sum(kv_len), n * d)).astype(dtype)
    lengths = dict(actualSeqLengths=list(q_len), actualSeqLengthsKv=list(kv_len))
    common = dict(numHeads=n, scaleValue=0.125, inputLayout="SH", innerPrecise=inner_precise, **lengths)
    out = ae.ops.PromptFlashAttentionV3(q, k, v, pseShift=pse, sparseMode=mode, **common)
    return (q, k, v), out, common


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("mode,shape", BASE_API_MASKS, ids=["21-4d", "22-3d", "22-4d"])
@pytest.mark.parametrize("dtype,inner_precise", [(np.float16, 1), (np.float16, 0), (BF16, 0)])
def test_base_api_pse_mask(chip, mode, shape, dtype, inner_precise):
    """sparseMode 21 (a 4-D pse) and 22 on the SH base-API kernels: the pse, read at the tiling's
    strides with rows maxSeqLen apart, is added after the scale (CheckBaseApiPse, SetBaseApiPseInfo)."""
    pse = grid(shape, dtype, spread=2)
    (q, k, v), out, _ = _base_api_call(dtype, mode, pse, inner_precise)
    q_len, kv_len, n = [6, 10], [5, 11], 2
    bias = golden.base_api_mask(pse, mode, n, q_len, kv_len)
    high = dtype == np.float16 and inner_precise == 0
    expected = np.zeros((16, n, 32))
    q0 = k0 = 0
    for b, (aq, ak) in enumerate(zip(q_len, kv_len)):
        one = [
            x[r : r + m].reshape(m, n, 32)[None].transpose(0, 2, 1, 3)
            for x, r, m in ((q, q0, aq), (k, k0, ak), (v, k0, ak))
        ]
        got = golden.attention(*one, scale=0.125, sparse_mode=1, pse=bias[b][None], high_precision=high, bf16_even=True)
        expected[q0 : q0 + aq] = got[0].transpose(1, 0, 2)
        q0, k0 = q0 + aq, k0 + ak
    precision.assert_meets(np.asarray(out).reshape(16, n, 32), expected, np.dtype(dtype).name)
    assert precision.failure(
        np.asarray(out).reshape(16, n, 32),
        golden.packed_attention(
            q.reshape(16, n, 32), k.reshape(16, n, 32), v.reshape(16, n, 32), q_len, kv_len, scale=0.125, sparse_mode=1
        ),
        np.dtype(dtype).name,
    ), "the mask changed nothing measurable"


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("mode,shape", [(20, (1, 2, 16, 16)), (21, (10, 11)), (21, (2, 10, 11))])
def test_base_api_pse_the_kernels_do_not_read(chip, mode, shape):
    """sparseMode 20, and a 2-D/3-D pse in mode 21, leave the kernels' maskType unset
    (SetBaseApiOtherMaskInfo sets it for a 4-D pse only): the pse passes its checks and is unused."""
    pse = grid(shape, np.float16, spread=2)
    (q, k, v), out, common = _base_api_call(np.float16, mode, pse, 1)
    without = ae.ops.PromptFlashAttentionV3(q, k, v, sparseMode=20, **common)
    assert np.array_equal(np.asarray(out).view(np.uint16), np.asarray(without).view(np.uint16))


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_base_api_pse_mask_on_the_mla_kernels(chip, dtype):
    """D > 256 runs the MLA base-API kernels: a 4-D sparseMode 21 mask in fp32 on the high-precision
    one (fp16 innerPrecise 0, bf16); walk batch 0 takes the longest lengths."""
    n, d, s = 1, 288, 24
    q, k = grid((1, s, n, d), dtype), grid((1, s, n, d), dtype)
    v = RNG.standard_normal((1, s, n, d)).astype(dtype)
    pse = grid((1, n, s, s), dtype, spread=2)
    out = ae.ops.PromptFlashAttentionV3(
        q, k, v, pseShift=pse, numHeads=n, scaleValue=0.0625, inputLayout="BSND", sparseMode=21, innerPrecise=0
    )
    bnsd = [x.transpose(0, 2, 1, 3) for x in (q, k, v)]
    bias = golden.base_api_mask(pse, 21, n, [s], [s])[0][None]
    high = dtype == np.float16
    expected = golden.attention(*bnsd, scale=0.0625, sparse_mode=1, pse=bias, high_precision=high, bf16_even=True)
    precision.assert_meets(out, expected.transpose(0, 2, 1, 3), np.dtype(dtype).name)


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_base_api_pse_mask_on_the_fp16_mla_half_kernel(chip):
    """The fp16 high-performance MLA kernel adds the mask to its half scores in half
    (`prompt_flash_attention_base_mla.h` Add<half>), inside its half-precision softmax."""
    n, d, s = 2, 288, 40
    q, k = (RNG.standard_normal((1, s, n, d)).astype(np.float16) for _ in range(2))
    v = (np.abs(RNG.standard_normal((1, s, n, d))) + 0.5).astype(np.float16)  # no cancelling sums
    pse = RNG.standard_normal((1, n, s, s)).astype(np.float16)
    out = ae.ops.PromptFlashAttentionV3(
        q, k, v, pseShift=pse, numHeads=n, scaleValue=0.0625, inputLayout="BSND", sparseMode=21
    )
    [(_, _, _, _, block)] = golden.mla_blocks([s], [s], d)
    mask = golden.base_api_mask(pse, 21, n, [s], [s])[0]
    expected = golden.mla_half_attention(q[0], k[0], v[0], scale=0.0625, block=block, mask=mask)
    precision.assert_meets(out[0], expected, "float16")
    unmasked = golden.mla_half_attention(q[0], k[0], v[0], scale=0.0625, block=block)
    assert precision.failure(out[0], unmasked, "float16"), "the mask changed nothing measurable"


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize(
    "mode,shape,d", [(21, (1, 1, 2, 2), 32), (22, (1, 2, 2), 32), (21, (1, 1, 2, 2), 288)], ids=["norm", "alibi", "mla"]
)
def test_base_api_fp16_mask_sum_rounds_to_nearest_even(chip, mode, shape, d):
    """The fp16 high-performance base-API kernels add the half mask to their half scores in half
    (`prompt_flash_attention_base_api.h`, `…_base_mla.h` Add<half>). Both keys score 1; key 0 gets
    mask t, 1 + t a midpoint of fp16; V = (1, -1): the output (1 - fp16(e1)) / (1 + e1), e1 =
    exp(1 - fp16(1 + t)), is 0 when the sum rounds down to 1 and clearly not 0 otherwise (the MLA
    kernel divides fp16(O) by fp16(l) in half)."""
    ties_up = np.array([1, 3], np.float64) * 2.0**-11  # 1 + 2**-11 -> 1 (even); 1 + 3 * 2**-11 -> 1 + 2**-9

    def expected(modes):
        s0 = ties.round_to(1.0 + ties_up, np.float16, modes["sum"])
        e1 = np.exp(np.float32(1.0) - s0.astype(np.float32))
        p1 = ties.round_to(e1.astype(np.float64), np.float16, "even").astype(np.float32)  # P narrowed for P V
        o, total = np.float32(1) - p1, np.float32(1) + e1
        if d > 256:
            o, total = (ties.round_to(x.astype(np.float64), np.float16, "even") for x in (o, total))
        return {"out": ties.round_to((o / total).astype(np.float64), np.float16, "even")}

    want = ties.assert_sensitive(expected, {"sum": "even"}, "base-API fp16 mask sum")
    q = np.zeros((2, d), np.float16)
    q[:, 0] = 1
    k = q.copy()
    v = np.zeros((2, d), np.float16)
    v[0], v[1] = 1, -1
    pse = np.zeros(shape, np.float16)
    pse[..., 0] = ties_up
    out = ae.ops.PromptFlashAttentionV3(
        q,
        k,
        v,
        pseShift=pse,
        actualSeqLengths=[2],
        actualSeqLengthsKv=[2],
        numHeads=1,
        scaleValue=1.0,
        inputLayout="SH",
        sparseMode=mode,
    )
    ties.assert_bits(np.asarray(out)[:, 0], want["out"], "out")
