"""PromptFlashAttention kernel pieces: fp16 rounding, deqScale decoding, the forward against torch, and
the roundings of the other kernel families (base API, arch35) at ties."""

import numpy as np
import pytest

import ties

from aclnn_emu.kernels.casts import BF16
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.quant import deq_scale, quantize_
from golden import prompt_flash_attention as golden


def test_deq_scale_keeps_the_high_19_bits():
    value = np.float32(1 / 3000.1)
    bits = np.asarray([value], np.float32).view(np.uint32).astype(np.uint64)
    quant_param = (bits & np.uint64(0xFFFFE000)) | np.uint64(1 << 46)
    truncated = np.uint32(bits[0] & np.uint64(0xFFFFE000)).view(np.float32)
    assert deq_scale(quant_param) == truncated != value
    assert deq_scale(np.asarray([value], np.float32)) == truncated


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.asarray([0.5, 1.5, 2.5, -0.5, 300.0, -300.0], np.float32)
    np.testing.assert_array_equal(quantize_(x, 1.0), [0, 2, 2, 0, 127, -128])


def test_forward_against_torch_sdpa():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    q = (np.round(rng.standard_normal((2, 4, 40, 32)) * 4) / 4).astype(np.float16)
    k = (np.round(rng.standard_normal((2, 2, 50, 32)) * 4) / 4).astype(np.float16)
    v = rng.standard_normal((2, 2, 50, 32)).astype(np.float16)
    act = [40, 40]
    out = pfa.prompt_flash_attention(
        q,
        k,
        v,
        scale=0.125,
        bands=pfa.batch_bands(3, pfa.SPARSE_INT_MAX, 0, True, act, [50, 50]),
        act_q=act,
        act_kv=[50, 50],
    )
    tq, tk, tv = (torch.from_numpy(x.astype(np.float64)) for x in (q, k, v))
    tk, tv = tk.repeat_interleave(2, dim=1), tv.repeat_interleave(2, dim=1)
    right_down = torch.ones(40, 50, dtype=torch.bool).tril(diagonal=10)
    expected = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=right_down, scale=0.125)
    exact = expected.numpy()
    # Narrowing E to fp16 before P V is the hardware's own error; hold the emulator to twice the error
    # of the float64 golden that models it (the flash-attention test criterion) plus an output ulp.
    modelled = golden.attention(q, k, v, scale=0.125, sparse_mode=3)
    bound = 2 * np.abs(modelled - exact).max() + 2.0**-11 * np.abs(exact).max()
    assert np.abs(out.astype(np.float64) - exact).max() <= bound


def _no_band(rows, keys):
    return dict(bands=[(pfa.SPARSE_INT_MAX, pfa.SPARSE_INT_MAX)], act_q=[rows], act_kv=[keys])


@pytest.mark.parametrize(
    "dtype, precision",
    [(BF16, pfa.BASE_API), (np.float16, pfa.BASE_API_HIGH_PRECISION)],
    ids=["bf16", "fp16_high_precision"],
)
def test_base_api_P_rounds_to_nearest_even(dtype, precision):
    """The base-API kernels (sparse modes 20-22) narrow bf16 P with CAST_RINT, and the fp16 one of
    innerPrecise 0 (base_api_high_precision_no_mask.h with half types, fp32 scores) with CAST_NONE:
    both nearest even. Row i scores key 0 at 0 (the max) and key 1 at y_i, whose fp32 exp is a
    midpoint of the dtype; V = (0, 1)."""
    y, e = ties.exp_ties(np.random.default_rng(17), dtype, 32)
    q, key = ties.dot_terms(y, dtype, 16)
    k = np.stack([np.zeros(16, dtype), key])[None, None]
    v = np.stack([np.zeros(16), np.ones(16)]).astype(dtype)[None, None]
    out = pfa.prompt_flash_attention(q[None, None], k, v, scale=1.0, precision=precision, **_no_band(32, 2))
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.two_key_output(e, dtype, modes["P"], "even")}, {"P": "even"}, "base-API P"
    )
    ties.assert_bits(out[0, 0], np.repeat(want["out"][:, None], 16, axis=1), "out")


@pytest.mark.parametrize(
    "precision, mode", [(pfa.ARCH35, "away"), (pfa.BASE_API_HIGH_PRECISION, "even")], ids=["arch35", "base_api"]
)
def test_fp16_high_precision_output_rounding(precision, mode):
    """The arch35 kernels (Ascend910_95) round an fp16 output with CAST_ROUND, the base-API
    high-precision ones with CAST_NONE (nearest even). Q = 0: P = 1 on both keys, so O = (v0 + v1) / 2,
    a midpoint for v0 and v1 one step apart."""
    rng = np.random.default_rng(18)
    v0 = ties.round_to(ties.one_more_bit(rng, 64, np.float16), np.float16, "even")
    v1 = v0 + np.sign(v0) * np.spacing(np.abs(v0).astype(np.float16)).astype(np.float64)
    midpoint = (v0 + v1) / 2
    v = np.stack([v0, v1]).astype(np.float16)[None, None]
    q, k = np.zeros((1, 1, 4, 64), np.float16), np.zeros((1, 1, 2, 64), np.float16)
    out = pfa.prompt_flash_attention(q, k, v, scale=1.0, precision=precision, **_no_band(4, 2))
    assert ties.is_tie(midpoint, np.float16).any()
    ties.assert_bits(out[0, 0], np.tile(ties.round_to(midpoint, np.float16, mode), (4, 1)), "out")
