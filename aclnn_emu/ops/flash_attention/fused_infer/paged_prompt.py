"""A block table on Ascend910_95's PFA route: PromptFlashAttentionTilingV2's page-attention checks
(op_host/prompt_flash_attention_tiling_v2.cpp: CheckPATypeAndShape with CheckBlockTableShape,
CheckPAKeyValueShape and CheckPACacheShape, then CheckPACrossover), every failure 561002, and the
cache seen as the dense key the PFA kernels walk.

The arch35 kernels' paged copy-in (common/op_kernel/CopyInL1.h GmCopyInToL1PA, called by
arch35/flash_attention_score_block_cube.h for BnBsH, BnNBsD and NZ caches alike) fills each S2
tile of the dense walk row by row from as many blocks as the tile spans (blockTable[b][s2 /
blockSize], row s2 % blockSize; an NZ block's D0 columns per row): the tiles, and so the rounding
order, are the dense walk's over S2 = max blocks per batch x blockSize. So the blocks are gathered
into a dense key and value per batch and the PFA kernels run on them. A TND query reads its batch
from actualSeqLengths and, with a block table, each batch's own key length from actualSeqLengthsKv
(not cumulative: SetShape, CheckActSeq, ParseActualSeqLengths; infer_flash_attention_kvcache.h);
its gathered keys are packed as a dense TND key with cumulative lengths.
"""

from types import SimpleNamespace

import numpy as np

from aclnn_emu.dtypes import SIZE, DataType

from . import pages
from . import query_quant_arch35 as query_quant
from ..prompt.checks_arch35 import tnd_lengths
from .failure import tiling
from .layouts import Axes, split
from .route import Route

BLOCK_SIZE_BASE, BLOCK_SIZE_MAX = 128, 512  # the PFA kernels' blocks
IFA_BLOCK_BYTES = 32  # ifaBlockSizeBase: S = 1 (the tiling's IFA mode) takes 32-byte multiples
BYTE_BLOCK = 32
H_LIMIT = 65535
MLA_QK_D, MLA_V_D = 192, 128
ROPE_D = 64  # queryRope/keyRope's head size
IFA_MLA_D = 512  # a query head size that, with a rope, is IFA MLA


def gathered(a) -> bool:
    """Whether the query's layout is one the tiling takes with a block table (NTD fails its layout
    check, SetInputLayout, before any page-attention rule)."""
    return split(a.inputLayout)[0] in ("BSH", "BSND", "BNSD", "TND")


def _tnd_axes(a, axes: Axes) -> Axes:
    """SetShape and CheckActSeq for a TND query with a block table: B the query lengths' count, S
    the longest batch (GetMaxSeq); the key lengths are each batch's own."""
    ends = SimpleNamespace(
        actualSeqLengths=_ints(a.actualSeqLengthsOptional),
        actualSeqLengthsKv=_ints(a.actualSeqLengthsKvOptional),
        query=a.query,
    )
    act_q, _ = tnd_lengths(ends, paged=True)
    return Axes(len(act_q), axes.n, max(act_q), axes.d)


def _ints(values):
    return None if values is None else [int(x) for x in values]


def _trunc_div(x: int, y: int) -> int:
    """C integer division (towards zero)."""
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def blocks_of(length: int, block: int) -> int:
    """The blocks a batch of ``length`` keys fills, as the tilings count them (C division)."""
    return _trunc_div(length + block - 1, block)


def _lengths(a, b: int) -> list[int]:
    """actualSeqLengthsKv as CheckBlockTableShape reads it: one value for every batch, else the first B."""
    values = [int(x) for x in a.actualSeqLengthsKvOptional]
    return [values[0]] * b if len(values) == 1 else values[:b]


def check(a, env) -> SimpleNamespace:
    """The page-attention checks in the tiling's order; returns the facts the gather needs."""
    route = Route(a, env)
    axes, (qd, _, vd) = route.shape_facts()
    if route.base == "TND":
        axes = _tnd_axes(a, axes)
    b, n, h = axes.b, axes.n, axes.n * axes.d
    key, value, table = a.key.items[0], a.value.items[0], a.blockTableOptional
    block = int(a.blockSize)
    lengths = a.actualSeqLengthsKvOptional
    # CheckActSeqLen (before the page-attention checks): one length or at least B
    if lengths is not None and 1 < len(lengths) < b:
        raise tiling("paged.actual_kv_count", f"{len(lengths)} actualSeqLengthsKv for batch {b}")
    # CheckPATypeAndShape
    if len(a.key.items) > 1:
        raise tiling("paged.tensor_list", "a key/value tensor list is not supported with a block table")
    if lengths is None and not a.max_workspace:
        raise tiling("paged.actual_kv_required", "actualSeqLengthsKv is required with a block table")
    if table.numel == 0:
        raise tiling("paged.block_table_empty", f"blockTable {list(table.shape)} has a dimension 0")
    # blockTable INT32: the kernel key already refuses any other dtype (561003)
    # the IFA rule for enableIFA (S = 1, which CheckRope switches off) and for IFA MLA (D 512 + rope)
    ifa_mode = (axes.s == 1 and not route.rope) or (route.rope and qd == IFA_MLA_D)
    base = IFA_BLOCK_BYTES // SIZE[a.query.dtype] if ifa_mode else BLOCK_SIZE_BASE
    if block % base or block < base or block > BLOCK_SIZE_MAX:
        raise tiling("paged.block_size", f"blockSize {block} is not a multiple of {base} in [{base}, {BLOCK_SIZE_MAX}]")
    width = table.shape[1] if table.ndim > 1 else 0
    if a.max_workspace:  # no lengths' data: S2 is the table's capacity
        return SimpleNamespace(route=route, axes=axes, qd=qd, vd=vd, block=block, s2=width * block)
    # CheckBlockTableShape
    per = [blocks_of(x, block) for x in _lengths(a, b)]
    valid, most = sum(per), max([0, *per])
    heads, kv_heads = route.heads, route.kv_heads
    ratio = heads // kv_heads if kv_heads and heads % kv_heads == 0 else 0  # SetAndCheckHeadNumRatio fails first
    mla = qd == MLA_QK_D and vd == MLA_V_D
    _key_value_consistent(key.shape, value.shape, mla)
    layout = route.base
    if layout in ("BNSD", "TND") and key.ndim not in (3, 4, 5) or layout in ("BSH", "BSND") and key.ndim not in (3, 5):
        raise tiling("paged.cache_rank", f"a {key.ndim}-D cache does not fit a {layout} query")
    _cache_shape(key.shape, valid, block, n, h, axes.d, ratio, a.query.dtype)
    if route.rope:  # PFARope or IFA MLA (the key's CheckPACacheShape again, on keyRope with the rope's D)
        key_rope = a.keyRopeOptional
        if key_rope.ndim != key.ndim:
            raise tiling(
                "paged.key_rope_rank", f"keyRope {list(key_rope.shape)} and key {list(key.shape)} differ in rank"
            )
        rope_dtype = DataType.ACL_BF16 if query_quant.mla_full_quant(a) else a.query.dtype  # MLA full quant: BF16
        _cache_shape(key_rope.shape, valid, block, n, n * ROPE_D, ROPE_D, ratio, rope_dtype, "keyRope")
    if table.ndim != 2:
        raise tiling("paged.block_table_rank", f"blockTable {list(table.shape)} must be 2-D")
    if table.shape[0] != b or width < most:
        raise tiling("paged.block_table_shape", f"blockTable {list(table.shape)} must be [{b}, >={most}]")
    # CheckPACrossover (CheckCrossoverAttribute, after the single-attribute checks); an antiquant
    # key never reaches this route on Ascend910_95 (a query dtype other than the key's goes to IFA)
    if a.keySharedPrefixOptional is not None:
        raise tiling("paged.shared_prefix", "a shared prefix is not supported with a block table")
    if any(x < 0 for x in [int(x) for x in lengths][:b]):
        raise tiling("paged.actual_kv_negative", f"actualSeqLengthsKv {list(lengths)} holds a negative length")
    return SimpleNamespace(route=route, axes=axes, qd=qd, vd=vd, block=block, s2=most * block)


def _key_value_consistent(ks, vs, mla: bool) -> None:
    """CheckPAKeyValueShape: key and value alike but for the value's D (MLA 192/128)."""
    dim = lambda s, i: s[i] if i < len(s) else None  # noqa: E731 - gert::Shape past its rank
    free = {3: (2,), 4: (3,), 5: (2, 4)}.get(len(ks), ()) if mla else ()
    if len(ks) in (3, 4, 5) and any(dim(ks, i) != dim(vs, i) for i in range(len(ks)) if i not in free):
        raise tiling("paged.key_value", f"key {list(ks)} and value {list(vs)} differ")


def _cache_shape(ks, valid, block, n, h, d, ratio, dtype, name="key") -> None:
    """CheckPACacheShape on the key (or keyRope): [>=valid, blockSize, H/ratio], [>=valid, N/ratio,
    blockSize, D] or NZ [>=valid, N/ratio, D/D0, blockSize, D0] with D0 32 bytes."""
    ok = len(ks) >= 3 and ks[0] >= valid
    if len(ks) == 3:
        ok = ok and ks[1] == block and ks[2] * ratio == h
        if ok and ks[2] > H_LIMIT:
            raise tiling("paged.cache_h", f"the cache's H {ks[2]} is above {H_LIMIT}")
    elif len(ks) == 4:
        ok = ok and ks[1] * ratio == n and ks[2] == block and ks[3] == d
    else:
        d0 = BYTE_BLOCK // SIZE[dtype]
        ok = ok and ks[1] * ratio == n and ks[3] == block and ks[2] * ks[4] == d and ks[4] == d0
    if not ok:
        raise tiling("paged.cache_shape", f"{name} cache {list(ks)} does not fit {valid} blocks of {block} tokens")


def dense(a, facts, t, name: str, d: int):
    """The cache ``t`` as the dense key/value of the query's layout (S2 rows per batch; TND: each
    batch's own rows, packed)."""
    return _Dense(a, facts, t, name, d)


def cumulative_kv(a, facts) -> tuple[int, ...] | None:
    """actualSeqLengthsKv as the dense TND key's cumulative ends (None for the other layouts,
    whose lengths stay as they are)."""
    if facts.route.base != "TND":
        return None
    return tuple(int(x) for x in np.cumsum([0, *_lengths(a, facts.axes.b)])[1:])


class _Dense:
    """A paged cache read as a dense [B, S2, Nkv*D] / [B, S2, Nkv, D] / [B, Nkv, S2, D] / NSD
    [Nkv, S2, D] tensor (batch b's first actualSeqLengthsKv[b] rows from its blocks, zeros after
    them) or, for TND, [sum of the key lengths, Nkv, D]."""

    def __init__(self, a, facts, t, name, d):
        self.a, self.t, self.name, self.d = a, t, name, d
        self.kv_heads, self.block, self.s2 = facts.route.kv_heads, facts.block, facts.s2
        self.b, self.layout = facts.axes.b, facts.route.base
        self.dtype, self.format = t.dtype, t.format
        kv, s2 = self.kv_heads, self.s2
        tokens = sum(_lengths(a, self.b)) if self.layout == "TND" else 0
        self.shape = {
            "BSH": (self.b, s2, kv * d),
            "BSND": (self.b, s2, kv, d),
            "TND": (tokens, kv, d),
            "NSD": (kv, s2, d),  # one batch
        }.get(self.layout, (self.b, kv, s2, d))
        self.ndim, self.numel = len(self.shape), int(np.prod(self.shape))
        self.is_empty = self.numel == 0

    def read(self, what: str = "tensor"):
        lengths = self.a.actualSeqLengthsKvOptional
        lengths = [self.s2] * self.b if lengths is None else _lengths(self.a, self.b)
        cache = self.t.read(what)
        table = self.a.blockTableOptional.read("blockTable")
        where = f"aclnnFusedInferAttentionScore {self.name}"
        rows = pages.batch_rows(cache, table, lengths, self.kv_heads, self.d, self.block, where)
        if self.layout == "TND":
            return np.concatenate([r.transpose(1, 0, 2) for r in rows]).reshape(self.shape)
        x = np.zeros((self.b, self.kv_heads, self.s2, self.d), cache.dtype)
        for b, r in enumerate(rows):
            x[b, :, : r.shape[1]] = r
        if self.layout in ("BNSD", "NSD"):
            return x.reshape(self.shape)
        return x.transpose(0, 2, 1, 3).reshape(self.shape)
