"""FIA's separate key/value antiquant parameters with a per-token side (key and value mode 1, or
the key per channel with the value per token) on the A2/A3 IFA route, handed to
IncreFlashAttentionV4's launch in place of its stacked antiquantScale."""

import numpy as np

from aclnn_emu.formats import Format
from aclnn_emu.kernels.flash_attention import incre_flash_attention as ifa

from .kv_antiquant import CHANNEL_TOKEN, PER_TOKEN


def per_token(a) -> bool:
    """Either side per token (the modes the IFA launch takes through `TokenParams`)."""
    return (a.keyAntiquantMode, a.valueAntiquantMode) in (CHANNEL_TOKEN, (PER_TOKEN, PER_TOKEN))


def value_rows_fit(a, batch: int, rows: int) -> bool:
    """The key-per-channel/value-per-token pair: no tiling rule reads the value's parameters, whose
    S the kernel takes from their last axis (GetAntiquantSeqLength); emulated when they are
    [1, B, S'] or [B, S'] with S' >= the cache positions read and an offset of the same shape."""
    vs, vo = a.valueAntiquantScaleOptional, a.valueAntiquantOffsetOptional
    shape = tuple(vs.shape)
    fits = (len(shape) == 2 or len(shape) == 3 and shape[0] == 1) and shape[-2] == batch and shape[-1] >= rows
    return fits and (vo is None or tuple(vo.shape) == shape)


class TokenParams:
    """Stands in for IncreFlashAttentionV4's antiquantScale: a per-tensor [2] to its checks (the
    split parameters' own rules ran in kv_antiquant), the kernel's Antiquant when it launches."""

    def __init__(self, a):
        self.a = a
        self.dtype, self.format = a.query.dtype, Format.ACL_FORMAT_ND
        self.shape, self.ndim, self.numel, self.is_empty = (2,), 1, 2, False

    def kernel_antiquant(self, batch: int, kv_heads: int, d: int) -> ifa.Antiquant:
        a = self.a

        def side(name, per_token):
            """(scale, offset) fp32: [B, S'] per token, [N2, D] per channel; no offset reads as 0."""
            scale_t, offset_t = (
                getattr(a, f"{name}AntiquantScaleOptional"),
                getattr(a, f"{name}AntiquantOffsetOptional"),
            )
            shape = (batch, -1) if per_token else (kv_heads, d)
            scale = scale_t.read(f"{name}AntiquantScale").astype(np.float32).reshape(shape)
            if offset_t is None:
                return scale, np.zeros_like(scale)
            return scale, offset_t.read(f"{name}AntiquantOffset").astype(np.float32).reshape(shape)

        key_token = a.keyAntiquantMode == PER_TOKEN
        return ifa.Antiquant(
            *side("key", key_token), *side("value", True), key_per_token=key_token, value_per_token=True
        )
