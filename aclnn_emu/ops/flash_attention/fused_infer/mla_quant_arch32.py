"""FusedInferAttentionScore V3/V4's MLA full quant on Atlas A2/A3: an INT8 query, key and value with
BF16 queryRope and keyRope, which RouteToFia leaves to the IFA tiling (the query is not FLOAT16/BF16),
the DeepSeek INT8 decode.

Its rules are the IFA tiling's: ProcessQuant's full-quant ones and the MLA ones (rope_arch32), then
the rest of IFATiling (shapes, actual lengths, block table), which the emulator replays by running
IncreFlashAttentionV4's checks on the call seen with a BF16 query, key and value (`checked_view`:
an NZ cache as the [blocks, blockSize, N2 x D] one the same checks take). The emulator runs the
kernel (kernels/flash_attention/mla_int8_quant.py) for one query row per batch (S 1) in BSH/BSND
without attenMask; the kernel's walk of more rows or a mask is not read (refused, 561003).
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.casts import BF16, cast_rint
from aclnn_emu.kernels.flash_attention import fused_infer_attention as fia
from aclnn_emu.kernels.flash_attention.mla_int8_quant import mla_int8_attention
from aclnn_emu.opdef.signature import Launch

from . import pages
from ..incre.launch import write_prefix
from .launch import WORKSPACE
from .layouts import shaped, to_bnsd
from .query_quant_arch35 import Retyped
from .rope_arch32 import MLA_D, MLA_ROPE_D

LAYOUTS = ("BSH", "BSND")  # the query layouts it runs (BNSD fails ProcessQuant)
FLASH_DECODE_KEYS = 256  # CalcInnerSize: from here a flash-decode split leaves at least two parts


def applies(a) -> bool:
    """An INT8 query with both ropes (the IFA tiling's quantFlag_ with ropeFlag_)."""
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None
    return a.query.dtype == DataType.ACL_INT8 and rope


class _Bsh(Retyped):
    """A 5-D NZ cache [blocks, N2, D / D0, blockSize, D0] seen as [blocks, blockSize, N2 x D]."""

    def __init__(self, t, dtype):
        super().__init__(t, dtype)
        blocks, n2, d1, block, d0 = t.shape
        self.shape, self.ndim = (blocks, block, n2 * d1 * d0), 3


def checked_view(t):
    """``t`` as IncreFlashAttentionV4's checks see it: BF16, an NZ cache by its rows."""
    return _Bsh(t, DataType.ACL_BF16) if t.ndim == 5 else Retyped(t, DataType.ACL_BF16)


def unmodelled(a, route, axes) -> bool:
    """What the emulator does not run: a query S other than 1, another layout, an attenMask, empty
    key lengths (the tiling passes them with a warning) or a value cache of another shape than the
    key's (the page-attention checks compare none; the kernel addresses both alike)."""
    mask = a.attenMaskOptional is not None and not a.attenMaskOptional.is_empty
    other_value = tuple(a.value.items[0].shape) != tuple(a.key.items[0].shape)
    return axes.s != 1 or route.base not in LAYOUTS or mask or not a.actualSeqLengthsKvOptional or other_value


def splits(a) -> bool:
    """Whether a flash-decode split of the keys across cores may apply (IsFlashDecode, by the
    part's core count): a batch of FLASH_DECODE_KEYS keys or more."""
    return any(int(n) >= FLASH_DECODE_KEYS for n in a.actualSeqLengthsKvOptional)


def launch(a, route, axes) -> Launch:
    """The kernel over the paged cache; attentionOut in its layout, BF16 ties to even."""
    heads, kv_heads = route.heads, route.kv_heads
    act_kv = _lengths(a.actualSeqLengthsKvOptional, axes.b)
    kv_block = fia.mla_tiling(a.blockSize, max(act_kv, default=1)).kv_block
    out_t = a.attentionOut

    def run(workspace):
        q = to_bnsd(a.query.read("query"), route.base, heads).astype(np.float32)
        q_rope = to_bnsd(a.queryRopeOptional.read("queryRope"), route.base, heads).astype(np.float32)
        k, v, k_rope = (
            _dense(t, name, d, a, act_kv, kv_heads)
            for t, name, d in (
                (a.key.items[0], "key", MLA_D), (a.value.items[0], "value", MLA_D), (a.keyRopeOptional, "keyRope", MLA_ROPE_D),
            )
        )  # fmt: skip
        dq = a.dequantScaleQueryOptional.read("dequantScaleQuery").reshape(axes.b, heads).astype(np.float32)
        dk, dv = (
            t.read(name).reshape(-1)[0]
            for t, name in ((a.keyAntiquantScaleOptional, "keyAntiquantScale"), (a.valueAntiquantScaleOptional, "valueAntiquantScale"))
        )  # fmt: skip
        o = mla_int8_attention(
            q, q_rope, k, k_rope, v, dq, dk, dv, scale=a.scaleValue, act_kv=act_kv, kv_block=kv_block
        )
        full = np.zeros(shaped(axes, route.out_layout, o.shape[3]), BF16)
        to_bnsd(full, route.out_layout, heads)[...] = cast_rint(o, BF16)
        write_prefix(out_t, full)  # an attentionOut of another shape from its first element, as IFA writes

    return Launch(WORKSPACE, run)


def _lengths(values, batch: int) -> list[int]:
    """actualSeqLengthsKv (required with a block table) as B key lengths: one for all, else the first B."""
    values = [int(x) for x in values]
    return values * batch if len(values) == 1 else values[:batch]


def _dense(t, name: str, d: int, a, act_kv, kv_heads: int) -> np.ndarray:
    """Batch b's first act_kv[b] rows of a paged cache through blockTable, as [B, 1, S2, d] float32."""
    rows = pages.batch_rows(
        t.read(name), a.blockTableOptional.read("blockTable"), act_kv, kv_heads, d, a.blockSize,
        f"aclnnFusedInferAttentionScore {name}",
    )  # fmt: skip
    dense = np.zeros((len(rows), kv_heads, max(act_kv, default=0), d), np.float32)
    for b, x in enumerate(rows):
        dense[b, :, : x.shape[1]] = x
    return dense
