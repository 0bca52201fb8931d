"""FIA's separate key/value antiquant parameters beyond per-channel pairs on the A2/A3 IFA route:
per token (modes 1), key per channel with value per token (modes 0 and 1), per tensor + head
(modes 2), per token + head (modes 3) and both per token in the cache's blocks (modes 4, 5), handed
to IncreFlashAttentionV4's launch in place of its stacked antiquantScale. The per-token modes run on
the split kernel (`incre_flash_attention_split_Bbn2s2_Us2.h`: the tiling's cube-view preload kernel
takes per-channel paged BNSD calls only, EnableCubeViewMM), which reads them for batch b, KV head
n2, cache position p: per token at b * S' + p, per token + head at (b * N2 + n2) * S' + p (S' the
last axis, GetAntiquantSeqLength), in the blocks at (blockTable[b, p / blockSize] * heads + n2) *
blockSize + p % blockSize (CopyAntiquantParamsParamsPagedAttentionImpl, heads N2 for mode 5, else
1); per tensor + head at n2 (one value for the head's D channels, CopyAntiquantScale)."""

import numpy as np

from aclnn_emu.formats import Format
from aclnn_emu.kernels.flash_attention import incre_flash_attention as ifa

from .kv_antiquant import CHANNEL_TOKEN, PER_TOKEN

PER_TENSOR_HEAD, PER_TOKEN_HEAD, PER_TOKEN_PAGED, PER_TOKEN_HEAD_PAGED = 2, 3, 4, 5
# (key mode, value mode) -> (key side, value side), each "channel", "token", "tensor_head" or "token_head"
SIDES = {
    CHANNEL_TOKEN: ("channel", "token"),
    (PER_TOKEN, PER_TOKEN): ("token", "token"),
    (PER_TENSOR_HEAD, PER_TENSOR_HEAD): ("tensor_head", "tensor_head"),
    (PER_TOKEN_HEAD, PER_TOKEN_HEAD): ("token_head", "token_head"),
    (PER_TOKEN_PAGED, PER_TOKEN_PAGED): ("token_paged", "token_paged"),
    (PER_TOKEN_HEAD_PAGED, PER_TOKEN_HEAD_PAGED): ("token_head_paged", "token_head_paged"),
}
TOKEN_SIDES = ("token", "token_head", "token_paged", "token_head_paged")
PAGED_SIDES = ("token_paged", "token_head_paged")


def handled(a) -> bool:
    return (a.keyAntiquantMode, a.valueAntiquantMode) in SIDES


def per_token(a) -> bool:
    """A side per token: its parameters follow the cache positions."""
    return handled(a) and any(side in TOKEN_SIDES for side in SIDES[a.keyAntiquantMode, a.valueAntiquantMode])


def value_rows_fit(a, batch: int, rows: int) -> bool:
    """The key-per-channel/value-per-token pair: no tiling rule reads the value's parameters, whose
    S the kernel takes from their last axis (GetAntiquantSeqLength); emulated when they are
    [1, B, S'] or [B, S'] with S' >= the cache positions read and an offset of the same shape."""
    vs, vo = a.valueAntiquantScaleOptional, a.valueAntiquantOffsetOptional
    shape = tuple(vs.shape)
    fits = (len(shape) == 2 or len(shape) == 3 and shape[0] == 1) and shape[-2] == batch and shape[-1] >= rows
    return fits and (vo is None or tuple(vo.shape) == shape)


class SplitParams:
    """Stands in for IncreFlashAttentionV4's antiquantScale: a per-tensor [2] to its checks (the
    split parameters' own rules ran in kv_antiquant), the kernel's Antiquant when it launches."""

    def __init__(self, a):
        self.a = a
        self.dtype, self.format = a.query.dtype, Format.ACL_FORMAT_ND
        self.shape, self.ndim, self.numel, self.is_empty = (2,), 1, 2, False

    def kernel_antiquant(self, batch: int, kv_heads: int, d: int, table) -> ifa.Antiquant:
        """``table`` [B, max blocks] the block table as the launch reads it (ids past its end -1)."""
        a = self.a
        shapes = {
            "channel": (kv_heads, d),
            "token": (batch, 1, -1),
            "token_head": (batch, kv_heads, -1),
            "tensor_head": (kv_heads, 1),
            "token_paged": (-1, 1, a.blockSize),
            "token_head_paged": (-1, kv_heads, a.blockSize),
        }

        def side(name, kind):
            """(scale, offset) fp32 in the kernel's form: [N2, D] per channel (a head's one value
            repeated per tensor + head), [B, N2 | 1, S'] per token; no offset reads as 0."""
            scale_t, offset_t = (
                getattr(a, f"{name}AntiquantScaleOptional"),
                getattr(a, f"{name}AntiquantOffsetOptional"),
            )
            scale = scale_t.read(f"{name}AntiquantScale").astype(np.float32).reshape(shapes[kind])
            offset = (
                np.zeros_like(scale)
                if offset_t is None
                else offset_t.read(f"{name}AntiquantOffset").astype(np.float32).reshape(shapes[kind])
            )
            if kind == "tensor_head":
                scale, offset = (np.ascontiguousarray(np.broadcast_to(x, (kv_heads, d))) for x in (scale, offset))
            if kind in PAGED_SIDES:
                scale, offset = (_by_position(x, np.asarray(table, np.int64)) for x in (scale, offset))
            return scale, offset

        key_kind, value_kind = SIDES[a.keyAntiquantMode, a.valueAntiquantMode]
        (key_scale, key_offset), (value_scale, value_offset) = side("key", key_kind), side("value", value_kind)
        return ifa.Antiquant(
            key_scale,
            key_offset,
            value_scale,
            value_offset,
            key_per_token=key_kind in TOKEN_SIDES,
            value_per_token=value_kind in TOKEN_SIDES,
        )


def _by_position(blocks, table):
    """[blocks, heads, blockSize] parameters as [B, heads, positions] through the block table; an
    id outside them reads 0 (the kernel reports the cache's own out-of-range ids)."""
    inside = (table >= 0) & (table < blocks.shape[0])
    rows = np.where(inside[..., None, None], blocks[np.clip(table, 0, blocks.shape[0] - 1)], 0)
    batch, count, heads, size = rows.shape
    return np.ascontiguousarray(rows.transpose(0, 2, 1, 3).reshape(batch, heads, count * size), np.float32)
