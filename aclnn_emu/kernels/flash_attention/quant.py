"""Quantisation steps of the int8 PromptFlashAttention pipeline.

- dequant scales (deqScale1/deqScale2) reach the fixpipe as a 64-bit "quant param" whose low 32
  bits are an fp32 with the low 13 mantissa bits cleared (aclnnTransQuantParam keeps the high 19
  bits); a UINT64 tensor is read raw, a FLOAT32 tensor's bits are zero-extended, and the same
  truncation is assumed for both.
- AscendQuant computes ``round(x * scale + offset)`` with round half to even, saturated to int8.
- The arch35 kernels (Ascend910_95) read a dequant scale as the fp32 in its first four bytes, whole
  (`prompt_flash_attention_normal_bns1_preload.h` InitQuant), and reach int8 through fp16: the
  value is cast to half (CAST_RINT), then to int8 (CAST_RINT) (`vf_softmaxflashv3.h` for P,
  `common/op_kernel/arch35/vf/vf_post_quant.h` for the output); saturation is assumed as above.
"""

import numpy as np

from aclnn_emu.kernels.casts import FP16
from aclnn_emu.kernels.rounding import round_half_even_

_HIGH_19_BITS = np.uint32(0xFFFFE000)


def deq_scale(raw: np.ndarray, truncate: bool = True) -> np.float32:
    """The effective per-tensor dequant scale held in element [0] of a UINT64/FLOAT32 tensor: its
    first four bytes as fp32, with the low 13 mantissa bits cleared when ``truncate``."""
    first = np.ascontiguousarray(raw.reshape(-1)[:1])
    low_bits = first.view(np.uint32)[0]  # little-endian: the low word of a uint64
    return np.uint32(low_bits & _HIGH_19_BITS if truncate else low_bits).view(np.float32)


def quantize_(x: np.ndarray, scale, offset=0.0, via_fp16: bool = False) -> np.ndarray:
    """In place on the fp32 array ``x``: clip(rint(x * scale + offset), -128, 127), kept in fp32;
    ``via_fp16`` rounds x * scale + offset to fp16 (nearest even) first, as the arch35 kernels do.

    ``scale``/``offset`` are scalars or arrays broadcasting against ``x`` (per-channel).
    """
    x *= np.asarray(scale, np.float32)
    x += np.asarray(offset, np.float32)
    if via_fp16:
        round_half_even_(x, FP16)
    np.rint(x, out=x)
    return np.clip(x, -128, 127, out=x)
