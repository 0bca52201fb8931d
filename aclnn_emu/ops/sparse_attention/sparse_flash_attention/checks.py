"""aclnnSparseFlashAttention (attention/sparse_flash_attention, CANN 8.5; generated aclnn entry point).

No hand-written op_api: the framework's checks (required nulls 161001, all outputs empty ->
success, chip and kernel key 561003/161002) run first, then the tiling: ``SFAInfoParser::Parse``
and ``SFATilingCheck::Process`` in the source's order, every failure 561002. The tiling accepts
Ascend910B only (GetNpuInfo), although the OpDef registers Ascend910_93 too. The maths is in
kernels/sparse_attention/sparse_flash_attention. From CANN 9.0.0 a hand-written wrapper runs first
(`_wrapper`).
"""

import numpy as np

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.outputs import Placeholder
from aclnn_emu.opdef.generated import tiling_failed
from aclnn_emu.opdef.generated import framework_checks
from aclnn_emu.opdef.signature import Launch, OpError
from .entry import INT64_MAX, KV_LAYOUTS, OP, QUERY_LAYOUTS
from .launch import Plan, _run


SOCS = ("Ascend910B", "Ascend910_93")  # OpDef AddConfig


TILING_SOCS = ("Ascend910B",)  # SFAInfoParser::GetNpuInfo (branch 9.1.0: NpuArch DAV_2201, Atlas A3 too)


HEAD_DIM, ROPE_DIM, MAX_BLOCK_SIZE = 512, 64, 1024


RANK = {"BSND": 4, "TND": 3, "PA_BSND": 4}


_FLOAT = ("query", "key", "value", "queryRope", "keyRope", "attentionOutOut")


_INT = ("sparseIndices", "blockTable", "actualSeqLengthsQuery", "actualSeqLengthsKv")


COMBOS = OP.kernels(
    [
        dict(
            {n: dt for n in _FLOAT},
            **{n: DataType.ACL_INT32 for n in _INT},
            softmaxMaxOut=DataType.ACL_FLOAT,
            softmaxSumOut=DataType.ACL_FLOAT,
        )
        for dt in (DataType.ACL_FLOAT16, DataType.ACL_BF16)
    ]
)


TILING_9, A3_TILING = "sfa.tiling_9", "sfa.tiling_on_atlas_a3"
UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "empty_key": "a TND key, value and keyRope of T2 0, which the tiling accepts from 9.0.0 on (CompareShape no "
        "longer refuses an expected shape whose first dim is 0): what the kernel reads then is not established"
    },
)


def _axis(tensor, layout: str, axis: int) -> int:
    """GetAxisNum: dim `axis` when the tensor has the layout's rank, else the invalid value (0 as uint32)."""
    return tensor.shape[axis] if tensor.ndim == RANK[layout] else 0


@OP.prepare
@tiling_failed
def prepare(a, env):
    _wrapper(a, env)
    if not framework_checks(a, OP, COMBOS, env, SOCS):
        return Launch.nothing()
    if env.soc not in (SOCS if env.version.has(A3_TILING) else TILING_SOCS):
        fail(
            "soc",
            f"SOC Version {env.soc} is not support (the SparseFlashAttention tiling accepts Ascend910B only)",
            chips=TILING_SOCS,
        )
    p = _parse(a)
    _check(a, p, env.version.has(TILING_9))
    return Launch(workspace_size(p, env.part.aic_cores), lambda workspace: _run(a, p))


def _wrapper(a, env) -> None:
    """From 9.0.0 (versions.RULES): the hand-written aclnnSparseFlashAttentionGetWorkspaceSize around the
    generated entry point (aclnnInnerSparseFlashAttentionGetWorkspaceSize)."""
    if env.version.has("sfa.null_value_is_key") and a.value is None:
        a.value = a.key
    if not env.version.has("sfa.null_softmax_placeholders"):
        return
    where = env.version.source("sfa.null_softmax_placeholders")
    if a.returnSoftmaxLse:
        if a.softmaxMaxOut is None or a.softmaxSumOut is None:
            raise OpError(
                status.GRAPH_FAILED,
                f"when returnSoftmaxLse is true, softmaxMax and softmaxSum cannot be nullptr. ({where})",
                rule="null.softmax",
            )
    elif a.softmaxMaxOut is None and a.softmaxSumOut is None:
        env.warn(
            "softmaxMaxOut and softmaxSumOut are nullptr: the CANN 9.x wrapper destroys the [0] placeholders it "
            "makes for them before its inner call reads them (their TensorHolders end with an if block); pass "
            f"both outputs to be safe ({where})"
        )
        a.softmaxMaxOut = a.softmaxSumOut = Placeholder(DataType.ACL_FLOAT)


def _parse(a) -> Plan:
    """SFAInfoParser::Parse: existence, layouts, then the sizes in its order (B, S2, rope dim)."""
    q, k = a.query, a.key
    if a.queryRope is None:
        fail("query_rope_null", "Shape of queryRope is nullptr (the tiling needs queryRope)")
    lq = "BSND" if a.layoutQuery is None else a.layoutQuery
    lk = "BSND" if a.layoutKv is None else a.layoutKv
    if lq not in QUERY_LAYOUTS:
        fail("layout_query", f"layoutQuery is {lq}, it is unsupported.")
    if lk not in KV_LAYOUTS:
        fail("layout_kv", f"layoutKV is {lk}, it is unsupported.")
    if lk != "PA_BSND" and lq != lk:
        fail("layout_mismatch", "When layoutKV is not PA_BSND, layoutKV must be the same as layoutQ.")
    if lk == "PA_BSND" and k.ndim != 4:
        fail("pa_key_rank", f"When layoutKV is PA_BSND, kvDimNum must be 4, but now is {k.ndim}.")
    if a.returnSoftmaxLse and lk == "PA_BSND":
        fail("lse_pa", "when return_softmax_lse is true, key layout do not support PA_BSND.")
    if lq == "TND":
        seq = a.actualSeqLengthsQuery
        if seq is None:
            fail("tnd_actual_seq_q_null", "when layout of query is TND, actualSeqLengthsQuery must be provided.")
        if seq.numel <= 0:
            fail(
                "actual_seq_q_size",
                f"the shape size of actualSeqLengthsQuery is {seq.numel}, it should be greater than 0.",
            )
        b = seq.numel
    else:
        b = _axis(q, lq, 0)
    block = 0
    if lk == "PA_BSND":
        table = a.blockTable
        if table is None:
            fail("pa_block_table_null", "the layout_kv is PA_BSND, blockTable must be provided.")
        if table.ndim != 2:
            fail("block_table_rank", f"the dim num of block_table is {table.ndim}, it should be 2.")
        if table.shape[1] <= 0:
            fail("block_table_dim1", f"block_table's second dimension({table.shape[1]}) should be greater than 0")
        block = k.shape[1]
        s2 = table.shape[1] * block
    else:
        s2 = _axis(k, lk, 0 if lk == "TND" else 1)
    if q.ndim != a.queryRope.ndim:
        fail(
            "query_rope_rank",
            f"The dimensions of query and query_rope should be equal, but query has dimension "
            f"{q.ndim} while query_rope has dimension {a.queryRope.ndim}.",
        )
    return Plan(
        lq,
        lk,
        b,
        _axis(q, lq, 0 if lq == "TND" else 1),
        s2,
        _axis(q, lq, 1 if lq == "TND" else 2),
        _axis(q, lq, -1),
        _axis(a.value, lk, -1),
        _axis(a.queryRope, lq, -1),
        block,
        float(np.float32(a.scaleValue)),
        a.sparseBlockSize,
        a.sparseMode,
        bool(a.returnSoftmaxLse),
    )


def _check(a, p: Plan, new: bool) -> None:
    """SFATilingCheck::Process: single parameters, existence, features, then consistency (`new`: 9.0.0's,
    versions.RULES "sfa.tiling_9")."""
    q, k = a.query, a.key
    for name, tensor, layout in (("query", q, p.lq), ("key", k, p.lk)):
        if tensor.ndim not in (3, 4):
            fail(f"rank.{name}", f"{name} dimension should be 3 or 4, but got {tensor.ndim}")
        if tensor.ndim != RANK[layout]:
            fail(
                f"layout_rank.{name}",
                f"When layout is {layout}, {name} dimension should be {RANK[layout]}, but it's {tensor.ndim}",
            )
    if p.mode not in (0, 3):
        fail("sparse_mode", f"sparseMode must == 0/3, but got: {p.mode}.")
    bs = p.sparse_block
    if bs <= 0 or bs > 128 or bs & (bs - 1):
        fail("sparse_block_size", f"sparseBlockSize should be be in range [1, 128] and be a power of 2, but got: {bs}.")
    if a.preTokens != INT64_MAX:
        fail("pre_tokens", f"preTokens should be 9223372036854775807, but got: {a.preTokens}.")
    if a.nextTokens != INT64_MAX:
        fail("next_tokens", f"nextTokens should be 9223372036854775807, but got: {a.nextTokens}.")
    if a.attentionMode == 0:
        fail("attention_mode_0", "In MHA/GQA situation(attentionMode=0), queryRope and keyRope should be null.")
    if a.attentionMode != 2:
        fail("attention_mode", f"attentionMode only support 2 (got {a.attentionMode}).")
    if a.keyRope is None:
        fail("key_rope_null", "KeyRope is null, but queryRope exists, they should be both null or exist.")
    if p.lk == "PA_BSND" and a.actualSeqLengthsKv is None:
        fail("pa_actual_seq_kv_null", "actualSeqLengths should not be null")
    _check_feature(a, p)
    _check_consistency(a, p, new)


def _check_feature(a, p: Plan) -> None:
    """CheckFeatureMlaNoquant."""
    n2 = _axis(a.key, p.lk, 1 if p.lk == "TND" else 2)
    g = p.n1 // n2 if n2 else 0
    checks = [
        (p.b > 0, "batch", f"batch_size should be greater than 0, but got {p.b}"),
        (p.lq != "TND" or p.s1 > 0, "t_size", f"T_size of query should be greater than 0, but got {p.s1}"),
        (p.n1 > 0, "n1", f"q_head_num should be greater than 0, but got {p.n1}"),
        (n2 == 1, "n2", f"kv_head_num should be 1, but got {n2}"),
        (g in (1, 2, 4, 8, 16, 32, 64, 128), "g", f"group num should be in 1, 2, 4, 8, 16, 32, 64, 128, but got {g}"),
        (p.d == HEAD_DIM, "head_dim", f"qk_head_dim only support 512, but got {p.d}"),
        (p.d == p.dv, "head_dim_v", f"qk_head_dim[{p.d}] should be equal to v_head_dim[{p.dv}]"),
        (p.dr == ROPE_DIM, "rope_dim", f"rope_head_dim should be 64, but got {p.dr}"),
    ]
    if p.lk == "PA_BSND":
        checks += [
            (
                0 < p.block <= MAX_BLOCK_SIZE,
                "block_size",
                f"when page attention is enabled, block_size({p.block}) should be in range (0, {MAX_BLOCK_SIZE}].",
            ),
            (
                p.block % 16 == 0,
                "block_size_align",
                f"when page attention is enabled, block_size({p.block}) should be 16-aligned.",
            ),
            (
                p.block % p.sparse_block == 0,
                "block_size_sparse",
                f"when page attention is enabled, block_size({p.block}) must be divided by sparse_block_size"
                f"({p.sparse_block}).",
            ),
        ]
    for ok, rule, message in checks:
        if not ok:
            fail(rule, message)


def _compare(tensor, name, layout, new=False, **dims) -> None:
    """CompareShape against the layout's expected shape (before 9.0.0 its first dim must not be 0)."""
    order = {"BSND": "BSND", "TND": "TND", "PA_BSND": "bsND", "BNSG": "BNSG", "NTG": "NTG"}[layout]
    expected = tuple(dims[c] for c in order)
    if expected[0] == 0 and not new:
        fail(f"shape.{name}", f"expected shape of {name} is {list(expected)}, the first dim should not be 0.")
    if tensor.shape != expected:
        fail(
            f"shape.{name}",
            f"{name} layout is {layout}, shape is {list(tensor.shape)}, expected shape is {list(expected)}.",
        )


def _check_consistency(a, p: Plan, new: bool) -> None:
    """CheckMultiParaConsistency (the dtype equalities it checks are the kernel key's already); from 9.0.0
    (`new`) the softmax outputs' shapes with returnSoftmaxLse: [B, N2, S1, G] or, for TND, [N2, T1, G]."""
    n2 = 1
    if p.lk == "PA_BSND":
        blocks = a.key.shape[0]
        if blocks <= 0:
            fail("pa_key_blocks", f"The first dim({blocks}) of key should be greater than 0")
        _compare(a.value, "value", "PA_BSND", b=blocks, s=p.block, N=n2, D=p.dv)
        _compare(a.keyRope, "key_rope", "PA_BSND", b=blocks, s=p.block, N=n2, D=p.dr)
    else:
        t2 = a.key.shape[0] if p.lk == "TND" else 0
        for tensor, name, d in ((a.key, "key", p.d), (a.value, "value", p.dv), (a.keyRope, "key_rope", p.dr)):
            _compare(tensor, name, p.lk, new, B=p.b, S=p.s2, N=n2, T=t2, D=d)
        if p.lk == "TND" and t2 == 0:
            UNESTABLISHED.refuse("empty_key", f"key {list(a.key.shape)}")
    t1 = a.query.shape[0] if p.lq == "TND" else 0
    _compare(a.queryRope, "query_rope", p.lq, B=p.b, S=p.s1, N=p.n1, T=t1, D=p.dr)
    top_k = a.sparseIndices.shape[-1] if a.sparseIndices.shape else 0  # a 0-d tensor fails on its rank
    _compare(a.sparseIndices, "sparse_indices", p.lq, B=p.b, S=p.s1, N=n2, T=t1, D=top_k)
    _compare(a.attentionOutOut, "attention_out", p.lq, B=p.b, S=p.s1, N=p.n1, T=t1, D=p.dv)
    if new and p.lse:
        for tensor, name in ((a.softmaxMaxOut, "softmax_max"), (a.softmaxSumOut, "softmax_sum")):
            _compare(tensor, name, "NTG" if p.lq == "TND" else "BNSG", new, B=p.b, N=n2, S=p.s1, T=t1, G=p.n1)
    for tensor, name in ((a.actualSeqLengthsQuery, "actualSeqLengthsQ"), (a.actualSeqLengthsKv, "actualSeqLengths")):
        if name == "actualSeqLengths" and p.lk == "TND" and tensor is None:
            fail(
                "tnd_actual_seq_kv_null",
                "when the layout of key and value is TND, the actualSeqLengths of key and value shoule not be empty.",
            )
        if tensor is None:
            continue
        if tensor.numel <= 0:
            fail(f"{name}_size", f"the shape size of {name} is {tensor.numel}, it should be greater than 0.")
        if tensor.numel != p.b:
            fail(f"{name}_batch", f"{name} shape size is {tensor.numel}, it should be equal to batch size[{p.b}]")
    table = a.blockTable
    if p.lk != "PA_BSND" and table is not None:
        fail("block_table_not_pa", f"when the layout_kv is {p.lk}, block_table should be null")
    if p.lk == "PA_BSND" and table.shape[0] != p.b:
        fail(
            "block_table_batch", f"block_table's first dimension({table.shape[0]}) should be equal to batch size({p.b})"
        )


def workspace_size(p: Plan, cores: int) -> int:
    """GetWorkspaceSize for a part with `cores` cube cores (the flash-decode part is left out: it
    applies to split rows)."""
    inner = min(512, max(p.s2, 1))
    m = -(-min(p.n1 * p.s1, 512) // 16) * 16
    mm_res, bmm2 = -(-inner // 32) * 32 * m, -(-p.dv // 16) * 16 * m
    size = 16 << 20
    size += 2 * mm_res * cores * 4 + 2 * mm_res * cores * 2 + 2 * bmm2 * cores * 4 + 2 * 512 * cores * 8
    return size + 4 * 512 * (512 + 64) * 2 * cores + 4 * 128 * 4 * 2 * cores
