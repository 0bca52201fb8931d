"""The in-place fp32-domain rounding of kernels/rounding.py is bit-exact with the plain casts."""

import ml_dtypes
import numpy as np
import pytest

from aclnn_emu.kernels.casts import BF16, FP16, cast_round
from aclnn_emu.kernels.rounding import narrow_half_away, round_half_away_, saturate_, store_half_away


def _edge_values(dtype):
    """Exact ties, their neighbours, subnormals, overflow boundaries, zeros, infinities, NaN."""
    info = ml_dtypes.finfo(dtype)
    subnormals = np.arange(-2048, 2048, dtype=np.float32) * np.float32(info.smallest_subnormal)
    binades = (
        np.float32(2.0) ** np.arange(-30, 17, dtype=np.float32)[:, None]
        * (np.float32(1) + np.arange(0, 1, 1 / 64, dtype=np.float32))
    ).ravel()
    grid = np.concatenate([subnormals, binades, -binades])
    step = np.float32(info.eps) * np.abs(grid)
    ties = np.concatenate(
        [
            grid + step / 2,
            grid - step / 2,
            np.arange(-40, 40, dtype=np.float32) * np.float32(info.smallest_subnormal) / 2,
        ]
    )
    neighbours = np.concatenate([np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, -np.float32(np.inf))])
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.996, 65520, -65520, 3.4e38, -3.4e38], dtype=np.float32
    )
    return np.concatenate([grid, ties, neighbours, specials]).astype(np.float32)


def _inputs(dtype):
    rng = np.random.default_rng(0)
    return np.concatenate(
        [
            _edge_values(dtype),
            rng.standard_normal(50000).astype(np.float32) * np.float32(1e-3),
            rng.standard_normal(50000).astype(np.float32) * np.float32(3e4),
        ]
    )


@pytest.mark.parametrize("dtype", [FP16, BF16])
def test_round_half_away_matches_cast_round(dtype):
    x = _inputs(dtype)
    expected = cast_round(x, dtype).astype(np.float32)
    got = round_half_away_(x.copy(), dtype)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    assert np.array_equal(got[finite].view(np.uint32), expected[finite].view(np.uint32))


@pytest.mark.parametrize("dtype", [FP16, BF16])
def test_narrow_half_away_gives_cast_rounds_bits(dtype):
    payload_nans = np.array([0x7F800001, 0xFF800001, 0x7FC00000], np.uint32).view(np.float32)
    x = np.concatenate([_inputs(dtype), payload_nans])
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when it narrows a NaN
        expected = cast_round(x, dtype)
    got = narrow_half_away(x.copy().reshape(-1, 1), dtype).ravel()
    assert got.dtype == dtype
    nan = np.isnan(expected.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    assert np.array_equal(got[~nan].view(np.uint16), expected[~nan].view(np.uint16))


@pytest.mark.parametrize("dtype", [FP16, BF16])
def test_saturate_clamps_finite_values_to_the_largest_and_keeps_inf_and_nan(dtype):
    """A saturating cast (SatMode::SAT) narrows what lies beyond the range to the largest finite
    value of the dtype; every value inside narrows as CAST_ROUND does."""
    largest = np.float32(ml_dtypes.finfo(dtype).max)
    x = _inputs(dtype)
    got = narrow_half_away(saturate_(x.copy(), dtype).reshape(-1, 1), dtype).ravel().astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want = cast_round(np.clip(x, -largest, largest), dtype).astype(np.float32)
    want[np.isinf(x)] = x[np.isinf(x)]
    assert np.isfinite(x[np.abs(x) > largest]).any()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    assert np.array_equal(got[keep], want[keep])


@pytest.mark.parametrize("dtype", [FP16, BF16, np.dtype(np.float32)])
def test_store_half_away_writes_narrow_half_aways_bits_into_strided_rows(dtype):
    """The one-pass store (divided or not, into rows of any stride) and the fallback for a dst
    without contiguous rows give narrow_half_away's bits, NaN payloads included."""
    payload_nans = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0x7FA00000], np.uint32).view(np.float32)
    x = np.concatenate([_inputs(BF16 if dtype == BF16 else FP16), payload_nans])
    x = np.resize(x, (len(x) + 63) // 64 * 64).reshape(-1, 64)
    divisor = np.float32(np.random.default_rng(1).random(len(x)) * 4)
    divisor[:4] = [1, 0, np.inf, np.nan]
    with np.errstate(all="ignore"):
        for d in (None, divisor):
            expected = narrow_half_away(x.copy() if d is None else x / d[:, None], dtype)
            for dst in (np.zeros((len(x), 3, 64), dtype)[:, 1], np.zeros((64, len(x)), dtype).T):
                store_half_away(dst, x, dtype, d)
                assert np.array_equal(dst.view(f"u{dtype.itemsize}"), expected.view(f"u{dtype.itemsize}"))
