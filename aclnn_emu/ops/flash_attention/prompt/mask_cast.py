"""From CANN 9.0.0 the PromptFlashAttention op_api casts an fp16 attenMask to uint8 on every chip
(ContiguousInput, `l0op::Cast(attenMask, DT_UINT8)`, versions.RULES "pfa.fp16_mask_cast_to_uint8"): the
tiling and the kernel then see a byte mask (nonzero masks a score) instead of 8.5's additive fp16 mask."""

import numpy as np

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.gaps import Gaps
from .entry import OP, OWN_OP_API

RULE = "pfa.fp16_mask_cast_to_uint8"


CAST = Gaps(
    OP,
    "inferred",
    {
        "fp16_mask_cast": "from CANN 9.0.0, fp16 attenMask values other than the integers 0-255 (fractions, "
        "negatives, above 255, inf, NaN): how the Cast to uint8 rounds and saturates them is not in the source; "
        "aclnn-emu truncates toward zero and saturates to 0-255, NaN to 0"
    },
    code=status.ACLNN_ERR_INNER_NULLPTR,
)


def cast_to_uint8(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """The uint8 mask, and whether every value converted exactly (an integer in 0-255)."""
    x = values.astype(np.float32)
    exact = bool(np.all(np.isfinite(x) & (x == np.trunc(x)) & (x >= 0) & (x <= 255)))
    return np.clip(np.nan_to_num(np.trunc(x), nan=0.0), 0, 255).astype(np.uint8), exact


class CastMask:
    """The attenMask after the Cast: the caller's tensor as described (shape, format), dtype UINT8; its
    values, read when the kernel runs, as the Cast makes them."""

    dtype = DataType.ACL_UINT8

    def __init__(self, tensor, env):
        self._tensor, self._env = tensor, env

    def __getattr__(self, name):
        return getattr(self._tensor, name)

    def read(self, what: str = "tensor") -> np.ndarray:
        values, exact = cast_to_uint8(self._tensor.read(what))
        if not exact:
            CAST.warn(self._env, "fp16_mask_cast", f"{what} holds values other than the integers 0-255")
        values.flags.writeable = False
        return values


def cast_fp16_mask(a, env) -> None:
    """ContiguousInput's Cast, after the op_api's dtype checks (which see the fp16 mask) and before the L0 op."""
    mask = a.attenMask
    if mask is not None and mask.dtype == DataType.ACL_FLOAT16 and env.op_name in OWN_OP_API:
        if env.version.has(RULE):
            a.attenMask = CastMask(mask, env)
