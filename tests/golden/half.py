"""CANN's aclFloat16ToFloat as a numpy model (the shim's C is checked against it bit for bit in
tests/test_pure_helpers.py; the sample goldens print through it)."""

import numpy as np


def model_half_to_float(bits: np.ndarray) -> np.ndarray:
    """CANN's aclFloat16ToFloat: exponent 31 is decoded like any other (Inf -> 65536)."""
    bits = np.asarray(bits).astype(np.uint32)
    exponent, mantissa = (bits >> 10) & 0x1F, (bits & 0x3FF).astype(np.float64)
    magnitude = np.where(exponent == 0, mantissa * 2.0**-24, (1 + mantissa / 1024) * np.exp2(exponent - 15.0))
    return np.where(bits & 0x8000, -magnitude, magnitude).astype(np.float32)
