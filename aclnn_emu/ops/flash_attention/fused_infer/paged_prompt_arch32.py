"""A block table on the Atlas A2/A3 PFA route (the calls RouteToFia, IsUsingFAI and IsUsingIFA leave
to the PFA tiling): for a TND query first the key cache's rank, 3, 4 or 5 (processPageAttentionInputFlag,
at the head of RunBigKernelTilingWithParams: RouteToFia sends a TND value of D 192 here whatever
the key's rank); then the page-attention rules of op_host/prompt_flash_attention_tiling.cpp, every
failure 561002, in its order: the query not INT8 and no tensor list (RunBigKernelTilingWithParams;
its shared-prefix rules, no page attention among them, are shared_prefix's, checked before),
actualSeqLengthsKv given; then for BSH/BSND/BNSD/NSD queries its count and signs
(CheckActualSeqLength, which with a block table no longer compares the lengths with the key's S) and
CheckPATypeAndShape; for TND queries the TND length rules with each batch's own key length
(CheckActSeqWhenLayoutIsTND, GetActualSeqLenData), CheckPASparseMode and CheckPAWhenBaseApi.

S2 is then max blocks per batch x blockSize (tmpS2), which the mask, pse and token rules read and
the kernels walk (seqInnerSize), the blocks read through blockTable as on Ascend910_95: so the
blocks are gathered into the dense key and value of paged_prompt and the PFA kernels run on them.
The TND base-API kernels (pfa_service_matmul_kv_nd.h CopyKToL1ForPA / CopyVToL1ForPA) fill each
key tile of the dense walk row by row from the blocks it spans: the same tiles, so the same
rounding order, over the gathered packed keys.
"""

from types import SimpleNamespace

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_int32

from . import paged_prompt
from ..prompt import var_len
from .failure import tiling
from .layouts import Axes
from .route import Route

BLOCK_SIZE_BASE, BLOCK_SIZE_MAX = 128, 512
H_LIMIT = 65535
RANKS = {"BNSD": (3, 4), "BNSD_BSND": (3, 4), "NSD": (3, 4), "BSH": (3,), "BSND": (3,)}  # cache ranks per query layout
GATHERED = (*RANKS, "TND")  # every legacy layout: the others leave RouteToFia for the FIA-V3 kernels
PA_SPARSE_MODES = (0, 3, 4)  # CheckPASparseMode
TND_CACHE_BLOCK_DIM = {3: 1, 4: 2, 5: 3}  # the blockSize dimension of a BBH / BNBD / NZ cache
NZ_D0 = 16  # checkPAKeyValueDimsWhenNZ's lastDim: 32 / (sizeof(int64_t) / sizeof(ge::DataType)), any dtype


def check(a, env) -> SimpleNamespace:
    """The page-attention rules in the tiling's order; returns the facts paged_prompt.dense needs."""
    route = Route(a, env)
    axes, (qd, _, vd) = route.shape_facts()
    table = a.blockTableOptional
    block = int(a.blockSize)
    rank = a.key.items[0].ndim
    if route.base == "TND" and rank not in TND_CACHE_BLOCK_DIM:
        raise tiling(
            "pfa_paged.tnd_cache_rank",
            f"keyDimNum({rank}) invalid, When layout is TND and PA enable, only support keyDimNum in [3, 4, 5].",
        )
    if a.query.dtype == DataType.ACL_INT8:
        raise tiling("pfa_paged.int8_query", "Query DataType can't be INT8 when PA enable")
    if len(a.key.items) > 1:
        raise tiling("pfa_paged.tensor_list", "not support tensorlist when blockTable is not null")
    lengths = a.actualSeqLengthsKvOptional
    if not lengths:
        raise tiling("pfa_paged.actual_kv_required", "actual seq length kv can't be null when blockTable is not null")
    if route.base == "TND":
        return _base_api(a, route, axes, qd, vd)
    b, n, h = axes.b, axes.n, axes.n * axes.d
    key, value = a.key.items[0], a.value.items[0]
    values = [int(x) for x in lengths]
    if 1 < len(values) < b:
        raise tiling("pfa_paged.actual_kv_count", f"{len(values)} actualSeqLengthsKv for batch {b}")
    if not a.max_workspace and any(x < 0 for x in values[:b]):
        raise tiling("pfa_paged.actual_kv_negative", f"actualSeqLengthsKv {values} holds a negative length")
    # CheckPATypeAndShape
    _block_size_and_table(block, table)
    width = table.shape[1] if table.ndim > 1 else 0
    facts = SimpleNamespace(route=route, axes=axes, qd=qd, vd=vd, block=block, s2=width * block)
    if a.max_workspace:  # fromTilingSink: S2 is the table's capacity
        return facts
    ks, vs = tuple(key.shape), tuple(value.shape)
    if len(ks) != len(vs):  # each is 3- or 4-D: RouteToFia takes every other rank
        raise tiling("pfa_paged.key_value_rank", f"key {list(ks)} and value {list(vs)} differ in rank")
    if ks != vs:
        raise tiling("pfa_paged.key_value", f"key {list(ks)} and value {list(vs)} differ")
    per = [paged_prompt.blocks_of(x, block) for x in ([values[0]] * b if len(values) == 1 else values[:b])]
    valid, most = sum(per), max([0, *per])
    ratio = _head_ratio(route)
    _cache_dims(ks, valid, block, n, h, ratio)
    if len(ks) not in RANKS[a.inputLayout or "BSH"]:
        raise tiling("pfa_paged.cache_layout", f"a {len(ks)}-D cache does not fit a {a.inputLayout} query")
    _table_and_blocks(table, b, most, ks[0], valid)
    facts.s2 = most * block
    return facts


def _base_api(a, route, axes, qd, vd) -> SimpleNamespace:
    """A TND query: the length rules with each batch's own key length, then CheckPASparseMode and
    CheckPAWhenBaseApi. B is the query lengths' count, S the longest batch."""
    if a.max_workspace:  # CheckInputShapeWhenLayoutIsTND: lengths without data (tiling sink)
        raise tiling(
            "tnd.tiling_sink",
            "When layout is TND, not support tiling_schedule_optimize = True or config mode is reduce-overhead!",
        )
    ends_q = None if a.actualSeqLengthsOptional is None else [int(x) for x in a.actualSeqLengthsOptional]
    act_q, act_kv = var_len.paged_lengths(ends_q, [int(x) for x in a.actualSeqLengthsKvOptional])
    b = len(act_q)
    axes = Axes(b, axes.n, max(act_q), axes.d)
    mode = attr_int32(a.sparseMode)
    if mode not in PA_SPARSE_MODES:
        raise tiling(
            "pfa_paged.tnd_sparse_mode",
            f"When Layout is TND/NTD_TND and PA enabled, sparseMode only support 0 or 3 or 4, but sparseMode = {mode}",
        )
    if mode == 0 and a.attenMaskOptional is not None:
        raise tiling(
            "pfa_paged.tnd_mask", "When Layout is TND/NTD_TND and PA enabled, sparseMode = 0, not support attentionMask"
        )
    # CheckPAWhenBaseApi: checkPABlockSizeAndBlockTable (blockTable INT32: the kernel key refuses any other)
    block, table = int(a.blockSize), a.blockTableOptional
    _block_size_and_table(block, table)
    if table.ndim != 2:
        raise tiling("pfa_paged.block_table_rank", "the dim of block table must be 2 when PA enable")
    key, value = a.key.items[0], a.value.items[0]
    ks, vs = tuple(key.shape), tuple(value.shape)
    cache_block = ks[TND_CACHE_BLOCK_DIM[len(ks)]]
    per = [paged_prompt.blocks_of(x, block) for x in act_kv]
    valid, most = sum(per), max([0, *per])
    if cache_block == 0 or max(act_kv) > most * cache_block:  # culActSeqLenParamsWhenPA
        raise tiling(
            "pfa_paged.tnd_cache_block",
            f"maxKvSeqLen({max(act_kv)}) should be <= (maxBlockNumPerBatch * tempBlockSize({most * cache_block}))",
        )
    if valid == 0:
        raise tiling("pfa_paged.tnd_no_blocks", f"actualSeqLengthsKv {act_kv} fill no block")
    # CheckPAKeyValueParams: ranks, the first two dims alike, then the key's shape by its rank (the
    # value's last dimension is not compared)
    if len(ks) != len(vs):
        raise tiling("pfa_paged.key_value_rank", f"key {list(ks)} and value {list(vs)} differ in rank")
    if ks[:2] != vs[:2] or len(ks) == 4 and ks[2] != vs[2] or len(ks) == 5 and ks[3:] != vs[3:]:
        raise tiling("pfa_paged.key_value", "the dim of key and value are inconsistent when PA enable")
    if len(ks) == 5:
        _nz_cache_dims(ks, valid, block, axes.n, qd, _head_ratio(route))
    else:
        _cache_dims(ks, valid, block, axes.n, axes.n * qd, _head_ratio(route))
    _table_and_blocks(table, b, most, ks[0], valid)
    return SimpleNamespace(route=route, axes=axes, qd=qd, vd=vd, block=block, s2=most * cache_block)


def _block_size_and_table(block: int, table) -> None:
    if block % BLOCK_SIZE_BASE or block < BLOCK_SIZE_BASE or block > BLOCK_SIZE_MAX:
        raise tiling(
            "pfa_paged.block_size", f"blockSize {block}: a multiple of {BLOCK_SIZE_BASE} in [128, {BLOCK_SIZE_MAX}]"
        )
    if table.numel == 0:
        raise tiling("pfa_paged.block_table_empty", "blockTable can't be empty when PA enable")


def _head_ratio(route) -> int:
    if route.kv_heads <= 0 or route.heads % route.kv_heads:  # the tiling sets headNumRatio only after this
        raise tiling(
            "pfa_paged.head_ratio", f"numHeads({route.heads}) must be divisible by numKeyValueHeads({route.kv_heads})!"
        )
    return route.heads // route.kv_heads


def _cache_dims(ks, valid: int, block: int, n: int, h: int, ratio: int) -> None:
    """The key cache [>= valid, blockSize, H / ratio] (H <= 65535) or [>= valid, N / ratio, blockSize, D]."""
    if len(ks) == 3 and (ks[1] != block or ks[2] * ratio != h):
        raise tiling("pfa_paged.cache_shape", f"key {list(ks)} should be [>={valid}, {block}, {h // ratio}]")
    if len(ks) == 3 and ks[2] > H_LIMIT:
        raise tiling("pfa_paged.cache_h", f"the cache's H {ks[2]} is above {H_LIMIT}")
    d, heads = (h // n, n // ratio) if n and ratio else (0, 0)  # numHeads 0 (read as int32): no D fits
    if len(ks) == 4 and (ks[1] * ratio != n or ks[2] != block or ks[3] != d):
        raise tiling("pfa_paged.cache_shape", f"key {list(ks)} should be [>={valid}, {heads}, {block}, {d}]")


def _nz_cache_dims(ks, valid: int, block: int, n: int, d: int, ratio: int) -> None:
    """checkPAKeyValueDimsWhenNZ: the key cache [>= valid, N / ratio, D / 16, blockSize, 16]."""
    if ks[4] == 0:
        raise tiling("pfa_paged.nz_d0", "the fifth dim of key can not be 0")
    if ks[1] * ratio != n or ks[3] != block or ks[2] * NZ_D0 != d:
        raise tiling(
            "pfa_paged.cache_shape",
            f"key {list(ks)} should be [>={valid}, {n // ratio}, {d // NZ_D0}, {block}, {NZ_D0}]",
        )


def _table_and_blocks(table, b: int, most: int, blocks: int, valid: int) -> None:
    """The table [B, >= max blocks], then the cache's first dimension against the blocks the lengths fill."""
    if table.ndim != 2:
        raise tiling("pfa_paged.block_table_rank", f"blockTable {list(table.shape)} must be 2-D")
    width = table.shape[1]
    if table.shape[0] != b or width < most:
        raise tiling("pfa_paged.block_table_shape", f"blockTable {list(table.shape)} must be [{b}, >={most}]")
    if blocks < valid:
        raise tiling(
            "pfa_paged.cache_blocks", f"the cache's {blocks} blocks are fewer than the {valid} the lengths fill"
        )
