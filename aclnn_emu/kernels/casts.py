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
        tie = (
            (np.abs(x64 - nearest.astype(np.float64)) == np.abs(away.astype(np.float64) - x64))
            & (np.abs(away) > np.abs(nearest))
            & np.isfinite(away)
        )
    return np.where(tie, away, nearest)


# HiFloat8 (Ascend910_95; "Ascend HiFloat8 Format for Deep Learning"): a sign bit, a prefix-coded
# dot field giving the exponent width (11: 4 bits, 10: 3, 01: 2, 001: 1, 0001: 0, 0000: denormal),
# a sign-magnitude exponent with an implied leading 1, and the rest as mantissa. The decoding
# follows CANN's Hif8ToFloatCommon (asc-devkit impl/basic_api/kernel_type_conversion_utils.h): 0x00 is
# 0, 0x80 NaN, 0x6F/0xEF ±Inf, 0x6E/0xEE ±32768 the largest; 0b?0000mmm is ±2^(m - 23).
HIF8_NAN, HIF8_INF, HIF8_MAX = 0x80, 0x6F, 0x6E


def _hif8_value(code: int) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    if code == HIF8_NAN:
        return float("nan")
    if code & 0x7F == HIF8_INF:
        return sign * float("inf")
    if code & 0x78 == 0:
        return sign * 2.0 ** ((code & 7) - 23) if code & 7 else 0.0
    exp_bits = (
        4
        if code & 0x60 == 0x60
        else 3
        if code & 0x60 == 0x40
        else 2
        if code & 0x60 == 0x20
        else 1
        if code & 0x10
        else 0
    )
    dot_bits = 2 if code & 0x60 else 3 if code & 0x10 else 4
    man_bits = 7 - dot_bits - exp_bits
    exponent = 0
    if exp_bits:
        field = (code >> man_bits) & ((1 << exp_bits) - 1)
        exponent = (1 << (exp_bits - 1)) + (field & ((1 << (exp_bits - 1)) - 1))
        exponent = -exponent if field >> (exp_bits - 1) else exponent
    mantissa = 1.0 + (code & ((1 << man_bits) - 1)) / (1 << man_bits)
    return sign * mantissa * 2.0**exponent


HIF8_VALUES = np.array([_hif8_value(c) for c in range(256)], np.float32)
# The non-negative finite grid, ascending, and its codes: what CAST_ROUND picks from.
_HIF8_CODES = np.array(sorted((c for c in range(0x80) if c != HIF8_INF), key=lambda c: HIF8_VALUES[c]), np.uint8)
_HIF8_GRID = HIF8_VALUES[_HIF8_CODES].astype(np.float64)


def hif8_to_float32(codes: np.ndarray) -> np.ndarray:
    """HiFloat8 codes (uint8) as fp32 (exact, CAST_NONE)."""
    return HIF8_VALUES[np.asarray(codes, np.uint8)]


def cast_round_hif8(x: np.ndarray) -> np.ndarray:
    """fp32 -> HiFloat8 codes with CAST_ROUND: the nearest value, ties away from zero (the kernels'
    "half to away" rule: the dropped mantissa bits round up when their first bit is 1, with the
    mantissa width of the value's own exponent; on HiFloat8's grid that is the nearest value).
    Finite values past 32768 saturate to ±32768, CANN's default for overflow (precision_conversion
    docs); below 2^-23 they become 0, which has no sign. ±Inf keeps its code and NaN is 0x80: what the
    saturating hardware does with them is not established."""
    x = np.asarray(x, np.float32)
    a = np.abs(x.astype(np.float64))
    hi = np.minimum(np.searchsorted(_HIF8_GRID, a), len(_HIF8_GRID) - 1)
    lo = np.maximum(hi - 1, 0)
    midpoint = (_HIF8_GRID[lo] + _HIF8_GRID[hi]) / 2  # exact in float64
    pick = np.where((a >= midpoint) | (a == _HIF8_GRID[hi]), hi, lo)
    codes = _HIF8_CODES[pick]
    codes = np.where(a >= _HIF8_GRID[-1], HIF8_MAX, codes)
    codes = np.where(np.isinf(x), HIF8_INF, codes)
    codes = np.where((codes != 0) & np.signbit(x), codes | 0x80, codes)
    return np.where(np.isnan(x), HIF8_NAN, codes).astype(np.uint8)


E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E4M3_MAX = np.float32(448.0)


def cast_rint_e4m3(x: np.ndarray) -> np.ndarray:
    """fp32 -> FLOAT8_E4M3FN with CAST_RINT under SatMode::SAT: the nearest value, ties to even,
    finite values past ±448 saturating to ±448 (ml_dtypes' own conversion makes them NaN); NaN
    stays NaN."""
    x = np.asarray(x, np.float32)
    return np.clip(x, -E4M3_MAX, E4M3_MAX).astype(E4M3)
