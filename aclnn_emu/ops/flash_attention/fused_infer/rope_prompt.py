"""queryRope/keyRope on Ascend910_95's PFA route (PromptFlashAttentionTilingV2, every same-dtype
call there): CheckRope's checks, every failure 561002, and the rope joined to its head.

op_host/prompt_flash_attention_tiling_v2.cpp `CheckRope` (in CheckSingleAttribute, after CheckIO and
CheckKV) wants both rope tensors or neither, then `GetAndCheckRopeShape` on the query and (without
a block table) the key: the layout's rank, a head size of 128 or 512, a rope D of 64, and the
batch, heads, rows and tokens of the tensor it belongs to. A head size of 128 turns PFARope on:
the group limit of 64 stays (only PFA MLA and IFA MLA lift it), the tiling's IFA mode (S = 1) is
switched off, and the kernels take the query and its rope as one head of D 192 against the key and
its rope (`UpdateTilingKeyConfig`: config DAligned192_DVAligned128, PFA MLA's), so Q·Kᵀ + Qr·Krᵀ
is one fp32 product. The emulator hands the PFA kernels the joined [q, qr] and [k, kr].
Not emulated (561003): a head size of 512 (IFA MLA, its own kernels and checks), S = 1 (TND: every
batch of one row; the PFA mode the rope keeps there differs from the emulator's one-row path), a
key/value tensor list.
"""

import numpy as np

from aclnn_emu.opdef.generated import attr_uint32, shape_dim

from . import paged_prompt
from .failure import tiling
from .layouts import RANK, query_axes, split

ROPE_D = 64
HEAD_D = (128, 512)
PFA_ROPE_D = 128  # enablePFARope; 512 is IFA MLA
GROUP_LIMIT = 64
RANK3 = ("BSH", "TND")


def present(a) -> bool:
    return a.queryRopeOptional is not None or a.keyRopeOptional is not None


def check(a) -> bool:
    """CheckRope; whether the emulator runs the call (PFARope with S > 1 and one key tensor)."""
    q_rope, k_rope = a.queryRopeOptional, a.keyRopeOptional
    if q_rope is None:
        raise tiling("rope.query_null", "queryRope is null, but keyRope is not null, they should be consistent.")
    if k_rope is None:
        raise tiling("rope.key_null", "queryRope is not null, but keyRope is null, they should be consistent.")
    layout = split(a.inputLayout)[0]
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    query_d = _rope_shape(a.query, q_rope, layout, heads, "query", "queryRope")
    key = a.key.items[0]
    if a.blockTableOptional is None:
        _rope_shape(key, k_rope, layout, kv_heads, "key", "keyRope")
    if query_d == PFA_ROPE_D and kv_heads and heads % kv_heads == 0 and heads // kv_heads > GROUP_LIMIT:
        raise tiling("rope.group", f"numHeads / numKeyValueHeads = {heads // kv_heads}, cannot be larger than 64.")
    return query_d == PFA_ROPE_D and _rows(a, layout, heads) != 1 and len(a.key.items) == 1


def _rows(a, layout, heads) -> int | None:
    """The query S the tiling's IFA mode looks at: TND's longest batch (GetMaxSeq; None without
    lengths, which the PFA checks refuse), else the query's S."""
    if layout != "TND":
        return query_axes(a.query.shape, layout, heads).s
    ends = [int(x) for x in a.actualSeqLengthsOptional or ()]
    return max((e - p for e, p in zip(ends, [0] + ends[:-1])), default=None)


def _rope_shape(t, rope, layout, heads, name, rope_name) -> int:
    """GetAndCheckRopeShape; returns the head size of ``t``."""
    rank = 3 if layout in RANK3 else 4
    if rope.ndim != rank:
        raise tiling(
            "rope.rank", f"dim num of {name} should = {rank} when inputLayout is {layout}, but is {rope.ndim}."
        )
    b, n, s, d, tokens = _dims(t.shape, layout, heads)
    if d not in HEAD_D:
        raise tiling(
            "rope.head_d", f"When queryRope and keyRope is not null, d size of {name} must be 128 or 512, but d = {d}."
        )
    rb, rn, rs, rd, rt = _dims(rope.shape, layout, heads)
    if rd != ROPE_D:
        raise tiling(
            "rope.d", f"When queryRope and keyRope is not null, d size of {rope_name} must be 64, but d = {rd}."
        )
    for what, mine, theirs in (("batch size", rb, b), ("head number", rn, n), ("seq length", rs, s), ("t", rt, tokens)):
        if mine != theirs:
            raise tiling(
                "rope.shape", f"{what} of {rope_name} should be equal to {name} {what}, but {mine} != {theirs}."
            )
    return d


def _dims(shape, layout, heads) -> tuple[int, int, int, int, int]:
    """(B, N, S, D, T) as SetShape reads them (BSH: D = H / heads; TND: B and S from the length
    arrays, the same for a tensor and its rope, so only T, N and D are compared)."""
    dims = tuple(shape_dim(shape, i) for i in range(RANK.get(layout, len(shape))))  # gert: 0 past the rank
    if layout == "TND":
        return 0, dims[1], 0, dims[2], dims[0]
    if layout not in ("BSH", "BSND", "BNSD"):
        raise tiling("rope.layout", f"input layout {layout} is not supported with queryRope and keyRope")
    axes = query_axes(dims, layout, heads)
    return axes.b, axes.n, axes.s, axes.d, 0


def joined(a, facts, key):
    """(query, key) the PFA kernels take: each with its rope appended; a paged keyRope gathered
    like the key (``facts`` from paged_prompt.check, None without a block table)."""
    layout, heads = a.inputLayout, attr_uint32(a.numHeads)
    key_rope = a.keyRopeOptional
    if facts is not None:
        key_rope = paged_prompt.dense(a, facts, key_rope, "keyRope", ROPE_D)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    return _Joined(a.query, a.queryRopeOptional, layout, heads), _Joined(key, key_rope, layout, kv_heads)


class _Joined:
    """A query or key with its rope appended to each head's D (the one D-192 head the PFARope
    kernels multiply); read when the kernel runs."""

    def __init__(self, t, rope, layout: str, heads: int):
        self.t, self.rope, self.heads, self.bsh = t, rope, heads, split(layout)[0] == "BSH"
        self.dtype, self.format = t.dtype, t.format
        extra = heads * ROPE_D if self.bsh else ROPE_D
        self.shape = tuple(t.shape[:-1]) + (t.shape[-1] + extra,)
        self.ndim, self.numel = len(self.shape), int(np.prod(self.shape))
        self.is_empty = self.numel == 0

    def read(self, what: str = "tensor"):
        x, r = self.t.read(what), self.rope.read(f"{what} rope")
        if not self.bsh:
            return np.concatenate([x, r], axis=-1)
        lead = x.shape[:-1]
        joined = np.concatenate([x.reshape(*lead, self.heads, -1), r.reshape(*lead, self.heads, ROPE_D)], axis=-1)
        return joined.reshape(self.shape)
