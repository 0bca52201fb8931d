"""aclnnLightningIndexer (attention/lightning_indexer, CANN 8.5; generated aclnn entry point).

No hand-written op_api: the framework's checks (required nulls 161001, all outputs empty ->
success, kernel key 161002/561003) run first, then the tiling ``LIInfoParser::ParseAndCheck``,
whose every failure is 561002, in the source's order. From CANN 9.0.0 a hand-written wrapper runs
first (`_wrapper`). The maths is in
kernels/sparse_attention/lightning_indexer; this module turns the tensors into rows, the
per-row key counts (kernels/sparse_attention/lightning_indexer_plan) and the key addressing.
"""

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.outputs import Placeholder
from aclnn_emu.opdef.generated import tiling_failed
from aclnn_emu.opdef.generated import attr_int32, framework_checks
from aclnn_emu.opdef.signature import Launch, OpError
from .entry import BLOCK_LIMIT, HEAD_DIM, MAX_HEADS, SPARSE_LIMIT, INT64_MAX, KEY_LAYOUTS, OP, QUERY_LAYOUTS
from .launch import _run


SOCS = ("Ascend910B", "Ascend910_93")  # OpDef AddConfig and the tiling's GetNpuInfo agree (9.1.0 adds ascend950,
# not emulated: versions.UNEMULATED)
WEIGHTS, TILING_9 = "li.fp32_weights", "li.tiling_9"


_FLOAT = ("query", "key", "weights", "sparseValuesOut")


_INT = ("actualSeqLengthsQueryOptional", "actualSeqLengthsKeyOptional", "blockTableOptional", "sparseIndicesOut")


def _combo(dtype, weights) -> dict:
    return dict({n: dtype for n in _FLOAT}, weights=weights, **{n: DataType.ACL_INT32 for n in _INT})


# The OpDef pairs its DataType lists: every float tensor bf16, or every one fp16; the rest INT32. From 9.0.0
# (versions.RULES "li.fp32_weights") two more pairs take FLOAT weights.
_HALVES = (DataType.ACL_BF16, DataType.ACL_FLOAT16)
COMBOS = OP.kernels([_combo(dt, dt) for dt in _HALVES])
FP32_WEIGHTS = COMBOS + [_combo(dt, DataType.ACL_FLOAT) for dt in _HALVES]

UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "sparse_count": "a sparseCount past 2048 (a multiple of 1024, which the tiling accepts from 9.0.0 on): the "
        "8.5 kernel keeps 2048 entries per row, the 9.x kernels' selection of more is not reviewed"
    },
)


def _dim(tensor, i) -> int:
    return tensor.shape[i] if -tensor.ndim <= i < tensor.ndim else 0


@OP.prepare
@tiling_failed
def prepare(a, env):
    if env.version.has("li.null_values_placeholder"):
        _wrapper(a, env)
    combos = FP32_WEIGHTS if env.version.has(WEIGHTS) else COMBOS
    if not framework_checks(a, OP, combos, env, SOCS):
        return Launch.nothing()
    p = _tiling(a, env)
    if p["count"] > SPARSE_LIMIT:
        UNESTABLISHED.refuse("sparse_count", f"sparseCount {p['count']}")
    return Launch(workspace_size(env.part.aic_cores), lambda workspace: _run(a, p))


def _wrapper(a, env) -> None:
    """From 9.0.0 (versions.RULES): the hand-written aclnnLightningIndexerGetWorkspaceSize around the
    generated entry point (aclnnInnerLightningIndexerGetWorkspaceSize)."""
    where = env.version.source("li.null_values_placeholder")
    if a.query is None:
        raise OpError(status.GRAPH_FAILED, f"Query pointer is null, cannot get data type! ({where})", rule="null.query")
    if a.sparseValuesOut is None:
        if a.returnValues:
            raise OpError(
                status.GRAPH_FAILED, f"sparseValuesOut cannot be nullptr. ({where})", rule="null.sparseValuesOut"
            )
        a.sparseValuesOut = Placeholder(a.query.dtype)


def _tiling(a, env) -> dict:
    """LIInfoParser::ParseAndCheck in the source's order. The dtype checks it repeats
    (GetAndCheckInOutDataType, block_table / actual_seq INT32) cannot fail after the kernel key.
    From 9.0.0 (versions.RULES "li.tiling_9"): sparseCount may also be a multiple of 1024, sparseValuesOut's
    shape is checked with returnValues, and N1 is at most 64."""
    new = env.version.has(TILING_9)
    lq = "BSND" if a.layoutQueryOptional is None else a.layoutQueryOptional  # a null attr: OpDef default
    lk = "BSND" if a.layoutKeyOptional is None else a.layoutKeyOptional
    count, mode = attr_int32(a.sparseCount), attr_int32(a.sparseMode)  # read as int32
    if lk != "PA_BSND" and lq != lk:
        fail("layout_mismatch", f"under non-PA conditions, layout_query ({lq}) and layout_key ({lk}) should be equal.")
    if lk not in KEY_LAYOUTS:
        fail("layout_key", f"input attr layout_key only supported PA_BSND, BSND or TND, got {lk}")
    if lq not in QUERY_LAYOUTS:
        fail("layout_query", f"input attr layout_query only supported BSND or TND, got {lq}")
    if not 0 < count <= SPARSE_LIMIT and not (new and count % 1024 == 0):
        fail("sparse_count", f"input attr sparse_count must > 0 and <= 2048, got {count}")
    if mode not in (0, 3):
        fail("sparse_mode", f"input attr sparse_mode only supported 0 or 3, got {mode}")
    if a.preTokens != INT64_MAX:
        fail("pre_tokens", f"input attr pre_tokens only supported INT64_MAX, got {a.preTokens}")
    if a.nextTokens != INT64_MAX:
        fail("next_tokens", f"input attr nextTokens only supported INT64_MAX, got {a.nextTokens}")
    if a.returnValues and lk == "PA_BSND":
        fail("return_values_pa", "when return_value is true, key layout do not support PA_BSND.")
    _check_optional(a, lq, lk)
    _check_ranks(a, lq, lk, new and a.returnValues)
    q, k, table = a.query, a.key, a.blockTableOptional
    n1 = _dim(q, 2 if lq == "BSND" else 1)
    if new and n1 > MAX_HEADS:
        fail("n1", f"N1 is {n1}, but N1 must be no greater than {MAX_HEADS}. ({env.version.source(TILING_9)})")
    n2_index = 1 if lk == "TND" else 2
    if _dim(k, n2_index) != 1:
        fail("n2", f"key shape[{n2_index}] is numhead, only support 1 (got {_dim(k, n2_index)})")
    if lq == "TND":
        batch = a.actualSeqLengthsQueryOptional.numel
        if batch <= 0:
            fail("actual_seq_q_size", "input actual_seq_lengths_query's shape size is 0, it should be greater than 0.")
    else:
        batch = q.shape[0]
    if q.shape[-1] != HEAD_DIM:
        fail("head_dim", f"input query's last dim head_dim only support 128, got {q.shape[-1]}")
    block = 0
    if lk == "PA_BSND":
        block = k.shape[1]
        if block % 16 or block == 0 or block > BLOCK_LIMIT:
            fail("block_size", f"input key's block_size must be a multiple of 16 and belong to (0, 1024], got {block}")
        if k.shape[0] == 0:
            fail("block_count", "input key's block_count cannot be 0.")
        s2 = table.shape[1] * block
    else:
        s2 = k.shape[0] if lk == "TND" else k.shape[1]
    _check_shapes(a, lq, lk, batch, n1, count, new and a.returnValues)
    return dict(lq=lq, lk=lk, count=count, mode=mode, batch=batch, n1=n1, s2=s2, block=block)


def _check_optional(a, lq, lk):
    """GetAndCheckOptionalInput: what each layout needs and forbids."""
    table, seq_k, seq_q = a.blockTableOptional, a.actualSeqLengthsKeyOptional, a.actualSeqLengthsQueryOptional
    if lk == "PA_BSND":
        if table is None:
            fail("pa_block_table_null", "when layout_key is PA_BSND, input block_table must not be null")
        if seq_k is None:
            fail("pa_actual_seq_k_null", "when layout_key is PA_BSND, input actual_seq_lengths_key must not be null")
    elif lk == "TND" and seq_k is None:
        fail("tnd_actual_seq_k_null", "when layout_key is TND, input actual_seq_lengths_key must not be null")
    if lq == "TND" and seq_q is None:
        fail("tnd_actual_seq_q_null", "when layout_query is TND, input actual_seq_lengths_query must not be null")
    if lk != "PA_BSND" and table is not None:
        fail("block_table_not_pa", "when key layout is not PA_BSND, input block_table must be null")


def _check_ranks(a, lq, lk, values: bool):
    """CheckShapeDim; `values`: sparse_values too, after sparse_indices (9.0.0 on, with returnValues)."""
    if a.blockTableOptional is not None and a.blockTableOptional.ndim != 2:
        fail("block_table_rank", f"the dim num of block_table's shape should be 2, got {a.blockTableOptional.ndim}")
    q_rank, k_rank = (3 if lq == "TND" else 4), (3 if lk == "TND" else 4)
    for name, tensor, rank in (
        ("key", a.key, k_rank),
        ("query", a.query, q_rank),
        ("sparse_indices", a.sparseIndicesOut, q_rank),
        *((("sparse_values", a.sparseValuesOut, q_rank),) if values else ()),
        ("weights", a.weights, q_rank - 1),
    ):
        if tensor.ndim != rank:
            fail(f"rank.{name}", f"the dim num of {name}'s shape should be {rank}, but now is {tensor.ndim}")


def _check_shapes(a, lq, lk, batch, n1, count, values: bool):
    """ValidateInputShapesMatch; `values`: sparse_values's dims too, each after sparse_indices's (9.0.0 on,
    with returnValues)."""
    q, k, w, out = a.query, a.key, a.weights, a.sparseIndicesOut

    def check_values(rule: str, axis: int, want: int, what: str):
        if values and a.sparseValuesOut.shape[axis] != want:
            fail(
                rule,
                f"input query and sparse_values {what} are {want}, {a.sparseValuesOut.shape[axis]}, they must be same.",
            )

    seq_q, seq_k, table = a.actualSeqLengthsQueryOptional, a.actualSeqLengthsKeyOptional, a.blockTableOptional
    if lq == "TND":
        if lk == "TND" and seq_k.numel != batch:
            fail(
                "tnd_batch",
                f"TND case input actual_seq_lengths_query, actual_seq_lengths_key are {batch}, "
                f"{seq_k.numel} respectively, they must be same.",
            )
        if lk == "PA_BSND" and (seq_k.numel != batch or table.shape[0] != batch):
            fail(
                "tnd_batch",
                f"TND case input actual_seq_lengths_query, actual_seq_lengths_key, block_table dim 0 "
                f"are {batch}, {seq_k.numel}, {table.shape[0]} respectively, they must be same.",
            )
        if w.shape[0] != q.shape[0] or out.shape[0] != q.shape[0]:
            fail(
                "tnd_t",
                f"TND case input query, weights, sparse_indices dim 0 are {q.shape[0]}, {w.shape[0]}, "
                f"{out.shape[0]} respectively, they must be same.",
            )
        check_values("tnd_values_t", 0, q.shape[0], "dim 0")
        n_dim = 1
    else:
        if lk == "PA_BSND" and (table.shape[0] != batch or seq_k.numel != batch):
            fail(
                "bsnd_batch",
                f"BSND case input query, actual_seq_lengths_key, block_table dim 0 are {batch}, "
                f"{seq_k.numel}, {table.shape[0]} respectively, they must be same.",
            )
        if lk == "BSND" and k.shape[0] != batch:
            fail(
                "bsnd_batch",
                f"BSND case input query, key dim 0 are {batch}, {k.shape[0]} respectively, they must be same.",
            )
        if lk == "BSND" and seq_k is not None and seq_k.numel != batch:
            fail(
                "bsnd_actual_seq_k",
                f"BSND case input query, actual_seq_lengths_key dim 0 are {batch}, "
                f"{seq_k.numel} respectively, they must be same.",
            )
        if w.shape[0] != batch or out.shape[0] != batch:
            fail(
                "bsnd_weights_out_batch",
                f"BSND case input query, weight, sparse_indices dim 0 are {batch}, "
                f"{w.shape[0]}, {out.shape[0]} respectively, they must be same.",
            )
        check_values("bsnd_values_batch", 0, batch, "dim 0")
        if seq_q is not None and seq_q.numel != batch:
            fail(
                "bsnd_actual_seq_q",
                f"BSND case input query, actual_seq_lengths_query dim 0 are {batch}, "
                f"{seq_q.numel} respectively, they must be same",
            )
        if w.shape[1] != q.shape[1] or out.shape[1] != q.shape[1]:
            fail(
                "bsnd_s1",
                f"BSND case input query, weight, sparse_indices dim 1 are {q.shape[1]}, {w.shape[1]}, "
                f"{out.shape[1]}, they must be same.",
            )
        check_values("bsnd_values_s1", 1, q.shape[1], "dim 1")
        n_dim = 2
    if w.shape[n_dim] != n1:
        fail("weights_n1", f"input query, weight shape dim N1 must be same ({n1} vs {w.shape[n_dim]}).")
    if k.shape[-1] != HEAD_DIM:
        fail("key_head_dim", f"input query, key shape last dim must be same ({HEAD_DIM} vs {k.shape[-1]}).")
    if out.shape[n_dim] != 1:
        fail("out_n2", f"input query and output sparse_indices shape n2 dim must be same (1 vs {out.shape[n_dim]}).")
    check_values("values_n2", n_dim, 1, "n2 dim")
    if out.shape[n_dim + 1] != count:
        fail(
            "out_sparse_count",
            f"output sparse_indices shape last dim ({out.shape[n_dim + 1]}) must be same as attr "
            f"sparse_count ({count}).",
        )
    check_values("values_sparse_count", n_dim + 1, count, "last dim (sparse_count)")


def workspace_size(aic: int) -> int:
    """The tiling's workspace for a part with `aic` cube cores: library reserve, per-core mm1 double
    buffers, the split-row top-k lists and their parameters."""
    return (16 << 20) + 512 * 512 * 4 * 2 * aic + 2 * 8 * 2 * 2048 * 4 * aic + 2 * 8 * 16 * 8 * aic
