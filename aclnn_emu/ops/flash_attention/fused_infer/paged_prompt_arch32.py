"""A block table on the Atlas A2/A3 PFA route (the calls RouteToFia, IsUsingFAI and IsUsingIFA leave
to the PFA tiling): the page-attention rules of op_host/prompt_flash_attention_tiling.cpp, every
failure 561002, in its order: the query not INT8 and no tensor list (RunBigKernelTilingWithParams;
its shared-prefix rules, no page attention among them, are shared_prefix's, checked before), actualSeqLengthsKv given, its count and signs (CheckActualSeqLength, which with a
block table no longer compares the lengths with the key's S), then CheckPATypeAndShape.

S2 is then max blocks per batch x blockSize (tmpS2), which the mask, pse and token rules read and
the kernels walk (seqInnerSize), the blocks read through blockTable as on Ascend910_95: so the
blocks are gathered into the dense key and value of paged_prompt and the PFA kernels run on them.
"""

from types import SimpleNamespace

from aclnn_emu.dtypes import DataType

from . import paged_prompt
from .failure import tiling
from .route import Route

BLOCK_SIZE_BASE, BLOCK_SIZE_MAX = 128, 512
H_LIMIT = 65535
RANKS = {"BNSD": (3, 4), "BNSD_BSND": (3, 4), "BSH": (3,), "BSND": (3,)}  # the cache ranks per query layout
GATHERED = tuple(RANKS)  # TND takes the base-API checks and kernels (CheckPAWhenBaseApi), NSD no batch


def check(a, env) -> SimpleNamespace:
    """The page-attention rules in the tiling's order; returns the facts paged_prompt.dense needs."""
    route = Route(a, env)
    axes, (qd, _, vd) = route.shape_facts()
    b, n, h = axes.b, axes.n, axes.n * axes.d
    key, value, table = a.key.items[0], a.value.items[0], a.blockTableOptional
    block = int(a.blockSize)
    if a.query.dtype == DataType.ACL_INT8:
        raise tiling("pfa_paged.int8_query", "Query DataType can't be INT8 when PA enable")
    if len(a.key.items) > 1:
        raise tiling("pfa_paged.tensor_list", "not support tensorlist when blockTable is not null")
    lengths = a.actualSeqLengthsKvOptional
    if not lengths:
        raise tiling("pfa_paged.actual_kv_required", "actual seq length kv can't be null when blockTable is not null")
    values = [int(x) for x in lengths]
    if 1 < len(values) < b:
        raise tiling("pfa_paged.actual_kv_count", f"{len(values)} actualSeqLengthsKv for batch {b}")
    if not a.max_workspace and any(x < 0 for x in values[:b]):
        raise tiling("pfa_paged.actual_kv_negative", f"actualSeqLengthsKv {values} holds a negative length")
    # CheckPATypeAndShape
    if block % BLOCK_SIZE_BASE or block < BLOCK_SIZE_BASE or block > BLOCK_SIZE_MAX:
        raise tiling(
            "pfa_paged.block_size", f"blockSize {block}: a multiple of {BLOCK_SIZE_BASE} in [128, {BLOCK_SIZE_MAX}]"
        )
    if table.numel == 0:
        raise tiling("pfa_paged.block_table_empty", "blockTable can't be empty when PA enable")
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
    if route.kv_heads <= 0 or route.heads % route.kv_heads:  # the tiling sets headNumRatio only after this
        raise tiling(
            "pfa_paged.head_ratio", f"numHeads({route.heads}) must be divisible by numKeyValueHeads({route.kv_heads})!"
        )
    ratio = route.heads // route.kv_heads
    if len(ks) == 3 and (ks[1] != block or ks[2] * ratio != h):
        raise tiling("pfa_paged.cache_shape", f"key {list(ks)} should be [>={valid}, {block}, {h // ratio}]")
    if len(ks) == 3 and ks[2] > H_LIMIT:
        raise tiling("pfa_paged.cache_h", f"the cache's H {ks[2]} is above {H_LIMIT}")
    if len(ks) == 4 and (ks[1] * ratio != n or ks[2] != block or ks[3] != h // n):
        raise tiling("pfa_paged.cache_shape", f"key {list(ks)} should be [>={valid}, {n // ratio}, {block}, {h // n}]")
    if len(ks) not in RANKS[a.inputLayout or "BSH"]:
        raise tiling("pfa_paged.cache_layout", f"a {len(ks)}-D cache does not fit a {a.inputLayout} query")
    if table.ndim != 2:
        raise tiling("pfa_paged.block_table_rank", f"blockTable {list(table.shape)} must be 2-D")
    if table.shape[0] != b or width < most:
        raise tiling("pfa_paged.block_table_shape", f"blockTable {list(table.shape)} must be [{b}, >={most}]")
    if ks[0] < valid:
        raise tiling(
            "pfa_paged.cache_blocks", f"the cache's {ks[0]} blocks are fewer than the {valid} the lengths fill"
        )
    facts.s2 = most * block
    return facts
