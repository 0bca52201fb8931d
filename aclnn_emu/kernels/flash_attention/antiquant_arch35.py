"""Dequantisation of an int8 key/value by the arch35 flash-attention antiquant kernels (Ascend910_95).

`common/op_kernel/arch35/vf/vf_antiquant_w8.h` (AntiquantVFImplW8Norm and its per-D variants, reached
through `flash_attention_score_antiquant_processor.h` AntiquantVec for the per-tensor/per-channel
mode) computes, in the query's dtype Q_T (fp16 or bf16):
  x      = Q_T(int8)                       exact (bf16 through half, both exact for int8)
  x      = x + offset   (MicroAPI::Add<Q_T>, only with an offset)
  x      = x * scale    (MicroAPI::Mul<Q_T>)
each vector operation rounding to nearest even. An fp32 operation rounded to Q_T gives the same
bits (fp32 carries more than twice Q_T's precision plus two bits, so the double rounding is exact).
The cube then multiplies the Q_T result like any fp16/bf16 key/value.
Per token (AntiquantVFImplW8PerTokenD64/128/256/512) each row's FLOAT scale and offset are first
cast to Q_T (castTrait0: CAST_RINT, nearest even), then the same two steps run (`token_params`).
"""

import numpy as np

from aclnn_emu.kernels.rounding import round_half_even_


@np.errstate(over="ignore", invalid="ignore")  # inf/NaN parameters flow through, as on the vector unit
def dequantize(x: np.ndarray, scale: np.ndarray, offset: np.ndarray | None, dtype) -> np.ndarray:
    """int8 ``x`` as ``dtype`` (fp16/bf16): (x + offset) * scale with each step rounded to ``dtype``;
    ``scale``/``offset`` hold ``dtype`` values broadcasting against ``x``."""
    y = x.astype(np.float32)
    if offset is not None:
        y += np.asarray(offset, np.float32)
        round_half_even_(y, dtype)
    y *= np.asarray(scale, np.float32)
    round_half_even_(y, dtype)
    return y.astype(dtype)


def token_params(x: np.ndarray, dtype) -> np.ndarray:
    """FLOAT per-token scales or offsets as the kernels use them: cast to ``dtype`` to nearest even."""
    y = np.array(x, np.float32)
    round_half_even_(y, dtype)
    return y.astype(dtype)
