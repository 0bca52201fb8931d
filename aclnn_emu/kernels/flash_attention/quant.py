"""Quantisation steps of the int8 PromptFlashAttention pipeline.

- dequant scales (deqScale1/deqScale2) reach the fixpipe as a 64-bit "quant param" whose low 32
  bits are an fp32 with the low 13 mantissa bits cleared (aclnnTransQuantParam keeps the high 19
  bits); a UINT64 tensor is read raw, a FLOAT32 tensor's bits are zero-extended, and the same
  truncation is assumed for both.
- AscendQuant computes ``round(x * scale + offset)`` with round half to even, saturated to int8.
"""
import numpy as np

_HIGH_19_BITS = np.uint32(0xFFFFE000)


def deq_scale(raw: np.ndarray) -> np.float32:
    """The effective per-tensor dequant scale held in element [0] of a UINT64/FLOAT32 tensor."""
    first = np.ascontiguousarray(raw.reshape(-1)[:1])
    low_bits = first.view(np.uint32)[0]        # little-endian: the low word of a uint64
    return np.uint32(low_bits & _HIGH_19_BITS).view(np.float32)


def quantize_(x: np.ndarray, scale, offset=0.0) -> np.ndarray:
    """In place on the fp32 array ``x``: clip(rint(x * scale + offset), -128, 127), kept in fp32.

    ``scale``/``offset`` are scalars or arrays broadcasting against ``x`` (per-channel).
    """
    x *= np.asarray(scale, np.float32)
    x += np.asarray(offset, np.float32)
    np.rint(x, out=x)
    return np.clip(x, -128, 127, out=x)
