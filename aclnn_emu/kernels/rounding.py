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


def round_half_away_(x: np.ndarray, dtype) -> np.ndarray:
    """Round the C-contiguous fp32 array ``x`` in place to the values of ``dtype``, ties away from
    zero (fp16: subnormals on the 2**-24 grid, infinite from 65520 on); NaN stays NaN."""
    dtype = np.dtype(dtype)
    if dtype not in CAST_ROUND:
        raise ValueError(f"round_half_away_ narrows to fp16/bf16/fp32, not {dtype}")
    if dtype != FP32 and x.size:
        native.round_product(x, x, None, CAST_ROUND[dtype])
    return x


def round_half_even_(x: np.ndarray, dtype) -> np.ndarray:
    """Round the fp32 array ``x`` in place to the values of ``dtype`` (fp16/bf16), ties to even
    (CAST_RINT; numpy's and ml_dtypes' own narrowing)."""
    x[...] = x.astype(dtype).astype(FP32)
    return x
