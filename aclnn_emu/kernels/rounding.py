"""Rounding fp32 buffers in place onto the fp16/bf16 grids, for kernels that keep narrowed values
in fp32 so BLAS can multiply them.

`round_half_away_` is CAST_ROUND (ties away from zero), which the attention backward kernels apply
to P and dS: integer arithmetic on the fp32 bits, two passes instead of the several float64 passes
of `casts.cast_round`. (Round-to-nearest-even onto fp16, the PromptFlashAttention path, is fused
into its softmax loop in native.c.) tests/test_rounding.py holds it bit-exact against `casts`.
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
