"""Dtype casts with the rounding modes the Ascend vector unit uses.

CAST_RINT is round-half-to-even (what ``ndarray.astype`` does for fp16/bf16); CAST_ROUND is
round-half-away-from-zero, which the attention kernels apply when they narrow P and dS to the
input dtype before a matmul.
"""
import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
FP32 = np.dtype(np.float32)


def is_half(dtype) -> bool:
    """True for the 16-bit float storage types (fp16, bf16)."""
    return np.dtype(dtype) in (FP16, BF16)


def cast_rint(x: np.ndarray, dtype) -> np.ndarray:
    """Round to ``dtype`` with ties to even (CAST_RINT)."""
    return np.asarray(x).astype(dtype)


def cast_round(x: np.ndarray, dtype) -> np.ndarray:
    """Round to ``dtype`` with ties away from zero (CAST_ROUND).

    Only fp16 and bf16 targets differ from CAST_RINT. The tie test runs in float64, where every
    fp32 value and every midpoint between neighbouring fp16/bf16 values is exact.
    """
    dtype = np.dtype(dtype)
    x = np.asarray(x, dtype=np.float32)
    if dtype == BF16:
        bits = x.view(np.uint32)
        # bf16 keeps the top 16 bits; adding half of the dropped part to the magnitude bits and
        # truncating rounds the magnitude half away from zero (sign-magnitude encoding).
        rounded = ((bits + np.uint32(0x8000)) & np.uint32(0xFFFF0000)).view(np.float32)
        rounded = np.where(np.isnan(x), x, rounded)
        return rounded.astype(BF16)
    if dtype != FP16:
        return x.astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = x.astype(FP16)
        away = np.nextafter(nearest, np.copysign(np.float16(np.inf), x).astype(FP16))
        x64 = x.astype(np.float64)
        tie = (np.abs(x64 - nearest.astype(np.float64)) == np.abs(away.astype(np.float64) - x64)) \
            & (np.abs(away) > np.abs(nearest)) & np.isfinite(away)
    return np.where(tie, away, nearest)
