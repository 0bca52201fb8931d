"""PromptFlashAttentionV3's maths in the PFA kernel: pseShift, the A2/A3 high-precision fp16
template (innerPrecise 0/2) and the row-invalid correction (innerPrecise 2/3), against the float64
golden to CANN's precision standard, with tie tests for the roundings they add."""

import ml_dtypes
import numpy as np
import pytest

import precision
import ties

from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.pse import PseSource
from golden import prompt_flash_attention as golden

BF16 = ml_dtypes.bfloat16
FLT_MAX = float(np.finfo(np.float32).max)
# (kernel precision, golden keywords) of each kernel kernel V3 reaches with a float query
FAMILIES = {
    "x910_high_precision": (pfa.X910_HIGH_PRECISION, dict(x910_high_precision=True)),
    "x910_high_performance": (pfa.HIGH_PERFORMANCE, dict()),
    "arch35": (pfa.ARCH35, dict(high_precision=True)),
}


def _no_band(rows, keys, batches=1):
    return dict(
        bands=[(pfa.SPARSE_INT_MAX, pfa.SPARSE_INT_MAX)] * batches, act_q=[rows] * batches, act_kv=[keys] * batches
    )


def _inputs(rng, dtype, b=2, n=4, nkv=2, s1=96, s2=160, d=64):
    """Q, K and pse on a 1/4 grid: S * scale + pse is then exact in fp32, so the narrowing of P
    cannot flip with the summation order (which differs between BLAS, the golden and the cube)."""

    def grid(shape, spread):
        return (np.round(rng.standard_normal(shape) * spread * 4) / 4).astype(dtype)

    v = rng.standard_normal((b, nkv, s2, d)).astype(dtype)
    return grid((b, n, s1, d), 0.5), grid((b, nkv, s2, d), 0.5), v, grid((b, n, s1, s2), 2)


def _golden_keywords(kernel, dtype):
    """The x910 high-precision template exists for fp16 only: bf16 runs the bf16 template."""
    precision_, keywords = FAMILIES[kernel]
    if kernel == "x910_high_precision" and dtype == BF16:
        return pfa.HIGH_PERFORMANCE, {}
    return precision_, keywords


@pytest.mark.parametrize("kernel", ["x910_high_precision", "arch35"])
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
def test_pse_shift_is_added_after_the_scale(kernel, dtype):
    rng = np.random.default_rng(1)
    q, k, v, pse = _inputs(rng, dtype)
    kernel_precision, keywords = _golden_keywords(kernel, dtype)
    out = pfa.prompt_flash_attention(
        q,
        k,
        v,
        scale=0.125,
        precision=kernel_precision,
        pse=PseSource(pse, 0, q.shape[2], k.shape[2]),
        **_no_band(96, 160, 2),
    )
    expected = golden.attention(q, k, v, scale=0.125, sparse_mode=1, pse=pse, **keywords)
    precision.assert_meets(out, expected, np.dtype(dtype).name)
    without = golden.attention(q, k, v, scale=0.125, sparse_mode=1, **keywords)
    assert precision.failure(out, without, np.dtype(dtype).name), "the pse changed nothing measurable"


@pytest.mark.parametrize("kernel", list(FAMILIES))
@pytest.mark.parametrize("correct", [False, True], ids=["innerPrecise01", "innerPrecise23"])
def test_fully_masked_rows_with_and_without_the_row_invalid_correction(kernel, correct):
    """Rows whose every key is masked average the values (all scores at the fill value) without the
    correction and are 0 with it; the other rows are the same either way."""
    rng = np.random.default_rng(2)
    q, k, v, pse = _inputs(rng, np.float16, b=1, s1=64, s2=80)
    mask = rng.random((1, 64, 80)) < 0.3
    mask[0, 5] = mask[0, 40] = True
    kernel_precision, keywords = FAMILIES[kernel]
    fill = -FLT_MAX if kernel != "x910_high_performance" else -65504.0
    out = pfa.prompt_flash_attention(
        q, k, v, scale=0.125, precision=kernel_precision, mask=pfa.Mask(mask), row_invalid=correct, **_no_band(64, 80)
    )
    expected = golden.attention(
        q, k, v, scale=0.125, sparse_mode=1, mask=mask, invalid_max=fill if correct else None, **keywords
    )
    precision.assert_meets(out, expected, "float16")
    dead = out[0, :, [5, 40]].astype(np.float64)
    assert (dead == 0).all() == correct


def test_row_invalid_zero_rows_are_quantised_like_zero():
    """With an INT8 output the corrected rows hold quant(0) = the offset, not 0."""
    rng = np.random.default_rng(3)
    q, k, v, _ = _inputs(rng, np.float16, b=1, n=2, nkv=2, s1=32, s2=48)
    mask = np.zeros((1, 32, 48), bool)
    mask[0, 7] = True
    quant = pfa.OutputQuant(np.full((1, 1), 40.0, np.float32), np.full((1, 1), 3.0, np.float32))
    out = pfa.prompt_flash_attention(
        q,
        k,
        v,
        scale=0.125,
        precision=pfa.X910_HIGH_PRECISION,
        mask=pfa.Mask(mask),
        out_quant=quant,
        row_invalid=True,
        **_no_band(32, 48),
    )
    expected = golden.attention(
        q,
        k,
        v,
        scale=0.125,
        sparse_mode=1,
        mask=mask,
        quant2=40.0,
        offset2=3.0,
        x910_high_precision=True,
        invalid_max=-FLT_MAX,
    )
    assert (out[0, :, 7] == 3).all()
    assert np.abs(out.astype(np.int32) - expected).max() <= 1


def test_row_invalid_keeps_rows_with_a_key_in_a_later_block():
    """A row masked in its first key block but not in a later one keeps its later keys only."""
    rng = np.random.default_rng(4)
    q, k, v, _ = _inputs(rng, np.float16, b=1, n=1, nkv=1, s1=16, s2=300)
    mask = np.zeros((1, 16, 300), bool)
    mask[0, 3, :256] = True
    out = pfa.prompt_flash_attention(
        q,
        k,
        v,
        scale=0.125,
        precision=pfa.X910_HIGH_PRECISION,
        mask=pfa.Mask(mask),
        kv_block=128,
        row_invalid=True,
        **_no_band(16, 300),
    )
    expected = golden.attention(
        q, k, v, scale=0.125, sparse_mode=1, mask=mask, kv_block=128, x910_high_precision=True, invalid_max=-FLT_MAX
    )
    precision.assert_meets(out, expected, "float16")
    assert np.abs(out[0, 0, 3].astype(np.float64)).max() > 0


def test_x910_high_precision_fp16_P_rounds_ties_away():
    """The A2/A3 high-precision template casts its fp32 P to half with CAST_ROUND (the
    high-performance one computes P in half: nearest even). Row i scores key 0 at 0 (the max) and
    key 1 at y_i, whose fp32 exp is an fp16 midpoint; V = (0, 1); the output rounds ties away."""
    y, e = ties.exp_ties(np.random.default_rng(17), np.float16, 32)
    q, key = ties.dot_terms(y, np.float16, 16)
    k = np.stack([np.zeros(16, np.float16), key])[None, None]
    v = np.stack([np.zeros(16), np.ones(16)]).astype(np.float16)[None, None]
    out = pfa.prompt_flash_attention(
        q[None, None], k, v, scale=1.0, precision=pfa.X910_HIGH_PRECISION, **_no_band(32, 2)
    )
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.two_key_output(e, np.float16, modes["P"], "away")},
        {"P": "away"},
        "x910 high-precision P",
    )
    ties.assert_bits(out[0, 0], np.repeat(want["out"][:, None], 16, axis=1), "out")


def test_int8_pse_sum_rounds_to_fp16_nearest_even():
    """The A2/A3 int8 template adds an fp16 pse to its half scores in half. Key 0 scores 1 and gets
    pse t (1 + t a midpoint of fp16), key 1 scores 1 with no pse; V = (1, 0) and quantScale1 = 127.
    Rounded to even, 1 + t becomes 1 or 1 + 2**-9 (a tie below or above an even neighbour); the
    scores are then equal or key 0 wins, which the output tells apart exactly."""
    ties_up = np.array([1, 3], np.float64) * 2.0**-11  # 1 + 2**-11 -> 1 (even); 1 + 3 * 2**-11 -> 1 + 2**-9

    def expected(modes):
        s0 = ties.round_to(1.0 + ties_up, np.float16, modes["sum"])  # key 0's score, the row's max
        e1 = np.exp(np.float32(1.0) - s0.astype(np.float32))  # key 1's exponential, P1 * V1 = 0
        part = 127.0 * 2.0**-7  # fp16(deq2 * E8_0 * V8_0), exact
        return {"out": ties.round_to((np.float32(part) / (np.float32(1) + e1)).astype(np.float64), np.float16, "even")}

    want = ties.assert_sensitive(expected, {"sum": "even"}, "int8 pse sum")
    rows = len(ties_up)
    q = np.zeros((1, 1, rows, 32), np.int8)
    q[..., 0] = 1
    k = np.zeros((1, 1, 2, 32), np.int8)
    k[..., 0] = 1
    v = np.zeros((1, 1, 2, 32), np.int8)
    v[0, 0, 0] = 1
    pse = np.zeros((1, 1, rows, 2), np.float16)
    pse[0, 0, :, 0] = ties_up
    out = pfa.prompt_flash_attention(
        q,
        k,
        v,
        scale=1.0,
        int8=pfa.Int8Scales(np.float32(1.0), np.float32(127.0), np.float32(2.0**-7)),
        pse=PseSource(pse, 0, rows, 2),
        **_no_band(rows, 2),
    )
    ties.assert_bits(out[0, 0, :, 0], want["out"], "out")


def test_arch35_row_invalid_misses_int8_rows():
    """The arch35 correction compares the running max with -FLT_MAX (`vf_row_invalid.h`), but an
    int8 query's masked scores are -65504 there: its fully masked rows keep the average of V."""
    rng = np.random.default_rng(5)
    q = rng.integers(-8, 8, (1, 1, 16, 32), dtype=np.int8)
    k = rng.integers(-8, 8, (1, 1, 24, 32), dtype=np.int8)
    v = rng.integers(-8, 8, (1, 1, 24, 32), dtype=np.int8)
    mask = np.zeros((1, 16, 24), bool)
    mask[0, 2] = True
    scales = pfa.Int8Scales(np.float32(2.0**-6), np.float32(100.0), np.float32(2.0**-7))
    run = dict(scale=0.125, int8=scales, precision=pfa.ARCH35, mask=pfa.Mask(mask), **_no_band(16, 24))
    out = pfa.prompt_flash_attention(q, k, v, row_invalid=True, **run)
    assert np.array_equal(out, pfa.prompt_flash_attention(q, k, v, **run))
    assert np.abs(out[0, 0, 2].astype(np.float64)).max() > 0


def test_x910_high_precision_fp16_output_rounds_ties_away():
    """The A2/A3 high-precision template casts its fp32 output to half with CAST_ROUND
    (DataCopyTransposeOut). Q = 0: P = 1 on both keys, so O = (v0 + v1) / 2, a midpoint for v0 and
    v1 one fp16 step apart; the high-performance template rounds it to nearest even."""
    rng = np.random.default_rng(19)
    v0 = ties.round_to(ties.one_more_bit(rng, 64, np.float16), np.float16, "even")
    v1 = v0 + np.sign(v0) * np.spacing(np.abs(v0).astype(np.float16)).astype(np.float64)
    midpoint = (v0 + v1) / 2
    v = np.stack([v0, v1]).astype(np.float16)[None, None]
    q, k = np.zeros((1, 1, 4, 64), np.float16), np.zeros((1, 1, 2, 64), np.float16)
    assert ties.is_tie(midpoint, np.float16).any()
    for precision_, mode in ((pfa.X910_HIGH_PRECISION, "away"), (pfa.HIGH_PERFORMANCE, "even")):
        out = pfa.prompt_flash_attention(q, k, v, scale=1.0, precision=precision_, **_no_band(4, 2))
        ties.assert_bits(out[0, 0], np.tile(ties.round_to(midpoint, np.float16, mode), (4, 1)), f"out ({mode})")
