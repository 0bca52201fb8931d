"""CAST_ROUND (ties away from zero) and CAST_RINT (ties to even) of fp32 buffers in place onto the
fp16/bf16 grids, for kernels that keep narrowed values in fp32 so BLAS can multiply them.

The rounding itself is native.c's (`round_fp16_half_away`, `round_bf16_half_away`), the same loop
the attention backward fuses into its P and dS passes; tests/test_rounding.py holds it bit-exact
against `casts.cast_round`.
"""

import numpy as np

from aclnn_emu.kernels import native
from aclnn_emu.kernels.casts import BF16, FP16, FP32

# CAST_ROUND to each dtype as a native.ROUNDING mode (fp32 needs no rounding).
CAST_ROUND = {FP16: "fp16_away", BF16: "bf16_away", FP32: None}
# The largest finite value of each narrow dtype (bf16: 0x7F7F), what a saturating cast clamps to.
LARGEST = {FP16: np.float32(65504.0), BF16: np.float32(3.3895313892515355e38)}


def round_half_away_(x: np.ndarray, dtype) -> np.ndarray:
    """Round the C-contiguous fp32 array ``x`` in place to the values of ``dtype``, ties away from
    zero (fp16: subnormals on the 2**-24 grid, infinite from 65520 on); NaN stays NaN."""
    dtype = np.dtype(dtype)
    if dtype not in CAST_ROUND:
        raise ValueError(f"round_half_away_ narrows to fp16/bf16/fp32, not {dtype}")
    if dtype != FP32 and x.size:
        native.round_product(x, x, None, CAST_ROUND[dtype])
    return x


def saturate_(x: np.ndarray, dtype) -> np.ndarray:
    """Clamp the finite values of the fp32 array ``x`` in place to ``dtype``'s finite range, as a cast
    with SatMode::SAT does before it narrows; inf and NaN stay as they are (fp32: unchanged)."""
    limit = LARGEST.get(np.dtype(dtype))
    if limit is not None:
        np.clip(x, -limit, limit, out=x, where=np.isfinite(x))
    return x


def narrow_half_away(x: np.ndarray, dtype) -> np.ndarray:
    """CAST_ROUND of the C-contiguous fp32 array ``x`` (consumed) as a new array of ``dtype``. Once
    rounded, the values convert exactly: fp16 through native.c's conversion, bf16 by keeping the
    upper half of each float's bits (numpy's element-by-element float->half cast is far slower)."""
    dtype = np.dtype(dtype)
    round_half_away_(x, dtype)
    if dtype == FP16:
        out = np.empty(x.shape, FP16)
        native.narrow_fp16(out, x)
        return out
    if dtype == BF16:
        upper = (x.view(np.uint32) >> 16).astype(np.uint16)
        upper[np.isnan(x)] |= 0x0040  # a NaN whose payload sits in the lower half stays NaN
        return upper.view(BF16)
    return x


def store_half_away(dst: np.ndarray, x: np.ndarray, dtype, divisor: np.ndarray | None = None) -> None:
    """dst[...] = narrow_half_away(x / divisor[:, None] (or x), dtype) for a 2-D dst and a
    C-contiguous fp32 x of its shape: one compiled pass when dst holds `dtype` in contiguous rows
    (the division, rounding and conversion are the same either way)."""
    dtype = np.dtype(dtype)
    if dst.dtype == dtype and dtype in CAST_ROUND and native.has_contiguous_rows(dst) and dst.flags.writeable:
        native.store_rows(dst, x, divisor, CAST_ROUND[dtype])
        return
    if divisor is not None:
        x = x / divisor[:, None]
    dst[...] = narrow_half_away(x, dtype)


def round_half_even_(x: np.ndarray, dtype) -> np.ndarray:
    """Round the fp32 array ``x`` in place to the values of ``dtype`` (fp16/bf16), ties to even
    (CAST_RINT; numpy's and ml_dtypes' own narrowing)."""
    x[...] = x.astype(dtype).astype(FP32)
    return x
