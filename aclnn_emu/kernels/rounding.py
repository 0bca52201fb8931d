"""Rounding fp32 buffers in place onto the fp16/bf16 grids, for kernels that keep narrowed values
in fp32 so BLAS can multiply them.

- `round_half_away_` is CAST_ROUND (ties away from zero), which the attention backward kernels apply
  to P and dS: integer arithmetic on the fp32 bits, two passes instead of the several float64
  passes of `casts.cast_round`.
- `Fp16Rounder` is round-to-nearest-even onto fp16 (the PromptFlashAttention fp16 path): for |x| in
  the binade [2**e, 2**(e+1)), adding sigma = 1.5 * 2**(e+13) lands in a binade whose fp32 spacing
  is 2**(e-10), exactly the fp16 spacing of x, so the addition itself rounds x to fp16 (ties to even,
  because sigma is an even multiple of that spacing); subtracting sigma is exact. Clamping e at -14
  puts fp16 subnormals on their fixed 2**-24 grid.

tests/test_rounding.py holds both bit-exact against numpy's and `casts`' conversions.
"""
import numpy as np

from aclnn_emu.kernels.casts import BF16, FP16, FP32

_MAGNITUDE = np.uint32(0x7FFFFFFF)
# bf16 keeps the top 16 bits of an fp32; fp16 keeps 10 of the 23 mantissa bits (drops 13).
_BF16_HALF, _BF16_KEEP = np.uint32(0x8000), np.uint32(0xFFFF0000)
_FP16_HALF, _FP16_KEEP = np.uint32(0x1000), np.uint32(0xFFFFE000)
_FP16_MIN_NORMAL_BITS = np.uint32(0x38800000)   # 2**-14 as fp32 bits
_FP16_SUBNORMAL_STEP = np.float32(2.0 ** -24)
_FP16_OVERFLOW = np.float32(65520.0)            # first value that rounds (away) past 65504


def round_half_away_(x: np.ndarray, dtype) -> np.ndarray:
    """Round the C-contiguous fp32 array ``x`` in place to the values of ``dtype``, ties away from zero.

    Adding half of the dropped bits to the magnitude and truncating rounds the magnitude half away
    from zero (IEEE floats are sign-magnitude); a carry into the exponent is the correct rounding
    up to the next binade, and for bf16 also into infinity. fp16 needs two extra steps: its
    subnormals (|x| < 2**-14) sit on a fixed 2**-24 grid coarser than 10 mantissa bits, and values
    from 65520 on overflow to infinity.
    """
    dtype = np.dtype(dtype)
    if dtype == FP32 or x.size == 0:
        return x
    if dtype not in (FP16, BF16):
        raise ValueError(f"round_half_away_ narrows to fp16/bf16/fp32, not {dtype}")
    low, high = x.min(), x.max()
    flat = x.reshape(-1)
    # The bit trick would turn some NaN payloads into infinities; NaNs are rare, so restore them.
    nans = None
    if np.isnan(high):
        nans = np.flatnonzero(np.isnan(flat))
        low, high = np.nanmin(x, initial=0), np.nanmax(x, initial=0)
    bits = x.view(np.uint32)
    if dtype == BF16:
        bits += _BF16_HALF
        bits &= _BF16_KEEP
    else:
        magnitude = bits & _MAGNITUDE
        tiny = np.flatnonzero((magnitude < _FP16_MIN_NORMAL_BITS) & (magnitude != 0))
        tiny_values = flat[tiny]
        bits += _FP16_HALF
        bits &= _FP16_KEEP
        if tiny.size:
            steps = np.abs(tiny_values) / _FP16_SUBNORMAL_STEP     # exact: a power-of-two scaling
            rounded = np.rint(steps)
            rounded += (steps - rounded) == np.float32(0.5)         # rint took a tie to even below
            flat[tiny] = np.copysign(rounded * _FP16_SUBNORMAL_STEP, tiny_values)
        if high >= _FP16_OVERFLOW or low <= -_FP16_OVERFLOW:
            big = np.abs(x) >= _FP16_OVERFLOW
            x[big] = np.copysign(np.float32(np.inf), x[big])
    if nans is not None:
        flat[nans] = np.nan
    return x

_EXPONENT = np.uint32(0x7F800000)
_SIGMA_SCALE = np.float32(1.5 * 2.0 ** 13)
FP16_MIN_NORMAL = np.float32(2.0 ** -14)
FP16_OVERFLOW = np.float32(65520.0)   # the first magnitude that rounds to infinity


class Fp16Rounder:
    """Reusable scratch for rounding fp32 blocks of up to ``capacity`` elements to fp16 values."""

    def __init__(self, capacity: int):
        self._scratch = np.empty(capacity, np.float32)
        # np.maximum against an array runs ~3x faster than against a scalar.
        self._floor = np.full(capacity, FP16_MIN_NORMAL, np.float32)

    def round_(self, x: np.ndarray, may_overflow: bool = True) -> np.ndarray:
        """Round the C-contiguous fp32 array ``x`` in place; |x| >= 65520 becomes +-inf.

        ``may_overflow=False`` skips the overflow scan when the caller has bounded |x| < 65504.
        """
        flat = x.reshape(-1)
        sigma = self._scratch[:flat.size]
        big = None
        if may_overflow:
            np.abs(flat, out=sigma)
            if sigma.max(initial=0) >= FP16_OVERFLOW:
                big = np.flatnonzero(sigma >= FP16_OVERFLOW)
        np.bitwise_and(flat.view(np.uint32), _EXPONENT, out=sigma.view(np.uint32))
        np.maximum(sigma, self._floor[:flat.size], out=sigma)
        sigma *= _SIGMA_SCALE
        flat += sigma
        flat -= sigma
        if big is not None:
            flat[big] = np.copysign(np.float32(np.inf), flat[big])
        return x
