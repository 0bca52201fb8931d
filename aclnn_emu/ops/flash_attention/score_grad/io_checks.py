"""The dtype and shape checks of the FlashAttentionScoreGrad op_api (op_api/aclnn_flash_attention_score_grad.cpp),
shared by every entry point of the header:
- InputDtypeCheck, which PreFlashAttentionScoreGrad runs after GetInputShapeInfo in every release (161002);
- InputOutputDtypeAndShapeCheck, which branch 9.1.0 runs right after the headNum check (versions.RULES
  "fag.io_dtype_shape_check"): InputDtypeCheck, then InputOutputShapeCheck, then the output dtypes.
"""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.signature import OpError
from .common import INVALID, _names
from ..common import QUANT8
from .entry import ARCH35, FLOATS

QUANT_QUERY = "fag.quant_query_on_ascend950"
TND_LENGTHS = "fag.tnd_lengths_in_op_api"
IO_CHECK = "fag.io_dtype_shape_check"
LAYOUTS = ("BNSD", "BSND", "BSH", "SBH", "TND")  # compared with strcmp: case matters


def _refuse(message: str, rule: str, env, version_rule: str | None = None):
    source = f" ({env.version.source(version_rule)})" if version_rule else ""
    raise OpError(INVALID, message + source, rule=rule)


def input_dtype_check(a, env):
    """query, keyIn, value and dy share one dtype in fp16/bf16/fp32; from 9.0.0 an Ascend950 query may
    also be FP8/HiFloat8, and such a query skips the equality check (StrideLimited() is false there)."""
    q = a.query.dtype
    quant = env.soc == ARCH35 and env.version.has(QUANT_QUERY)
    others = [getattr(a, name).dtype for name in ("keyIn", "value", "dy")]
    if not (quant and q in QUANT8) and any(dtype != q for dtype in others):
        _refuse(
            f"The data type of query[{q.name}], key[{others[0].name}], value[{others[1].name}], dy[{others[2].name}] "
            "are not equal.",
            "dtype.qkv",
            env,
        )
    allowed = FLOATS + (QUANT8 if quant else ())
    if q not in allowed:
        _refuse(f"The data type of query/key/value is [{q.name}], should be {_names(allowed)}.", "dtype.query", env)


def _same_but_last(x, y) -> bool:
    return len(x) == len(y) and x[:-1] == y[:-1]


def _expect_shape(a, name: str, shape, env):
    """OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE."""
    got = getattr(a, name).shape
    if got != shape:
        _refuse(f"{name} shape {list(got)} should be {list(shape)}", f"io.{name}_shape", env, IO_CHECK)


def _present_pair(a, first: str, second: str):
    """Both tensors of a pair, when the entry point has them and neither is null or empty."""
    x, y = getattr(a, first, None), getattr(a, second, None)
    return (x, y) if x is not None and y is not None and not x.is_empty and not y.is_empty else None


def _ropes(a):
    ropes = [getattr(a, name, None) for name in ("queryRope", "keyInRope", "dqRopeOut", "dkRopeOut")]
    return None if None in ropes else ropes


def _io_shape_check(a, env):
    """InputOutputShapeCheck, in the source's order."""
    layout = a.inputLayout or ""
    if layout not in LAYOUTS:
        _refuse(f"inputLayout is invalid, got [{layout}], expected BNSD/BSND/BSH/SBH/TND", "io.layout", env, IO_CHECK)
    rank = 4 if layout in ("BNSD", "BSND") else 3
    names = ("query", "keyIn", "value", "dy", "attentionInOptional", "dqOut", "dkOut", "dvOut")
    ranks = {name: getattr(a, name).ndim for name in names}
    if any(r != rank for r in ranks.values()):
        _refuse(
            f"shape dim num mismatch for inputLayout [{layout}], expected {rank} dims: {ranks}",
            "io.rank",
            env,
            IO_CHECK,
        )
    q, k, v, dy = a.query.shape, a.keyIn.shape, a.value.shape, a.dy.shape
    if not _same_but_last(k, v):
        _refuse(f"keyIn and value shape must be same except last dim: {list(k)}, {list(v)}", "io.kv", env, IO_CHECK)
    if not _same_but_last(q, dy):
        _refuse(f"query and dy shape must be same except last dim: {list(q)}, {list(dy)}", "io.dy", env, IO_CHECK)
    axis = {"BNSD": 0, "BSND": 0, "BSH": 0, "SBH": 1}.get(layout)
    if axis is not None and not q[axis] == k[axis] == v[axis]:
        _refuse(f"query/keyIn/value batch dim must be same for layout [{layout}]", "io.batch", env, IO_CHECK)
    _expect_shape(a, "attentionInOptional", dy, env)
    ropes = _ropes(a)
    if ropes is not None:
        q_rope, k_rope, _, _ = ropes
        if any(t.ndim != 3 for t in ropes):
            _refuse(f"rope tensors must be 3 dims: {[t.ndim for t in ropes]}", "io.rope_rank", env, IO_CHECK)
        for rope, full, name in ((q_rope, q, "queryRope"), (k_rope, k, "keyInRope")):
            if not (rope.shape[:2] == full[:2] and rope.shape[2] <= full[2]):
                _refuse(f"{name} shape must match T/N dims and rope D <= D", f"io.{name}", env, IO_CHECK)
        _expect_shape(a, "dqRopeOut", q_rope.shape, env)
        _expect_shape(a, "dkRopeOut", k_rope.shape, env)
    sink = _present_pair(a, "sinkInOptional", "dsinkOut")
    if sink is not None:
        if sink[0].ndim != 1 or sink[1].ndim != 1:
            _refuse("sinkInOptional and dsinkOut must be 1 dim", "io.sink_rank", env, IO_CHECK)
        _expect_shape(a, "dsinkOut", sink[0].shape, env)
    for out, like in (("dqOut", q), ("dkOut", k), ("dvOut", v)):
        _expect_shape(a, out, like, env)


def io_dtype_and_shape_check(a, env):
    """InputOutputDtypeAndShapeCheck (9.1.0 only, a no-op before)."""
    if not env.version.has(IO_CHECK):
        return
    input_dtype_check(a, env)
    _io_shape_check(a, env)
    pairs = [("dqOut", "query"), ("dkOut", "keyIn"), ("dvOut", "value")]
    if _ropes(a) is not None:
        pairs += [("dqRopeOut", "queryRope"), ("dkRopeOut", "keyInRope")]
    for out, like in pairs:
        if getattr(a, out).dtype != getattr(a, like).dtype:
            _refuse(f"{out} dtype must match {like} dtype", "io.out_dtype", env, IO_CHECK)
    sink = _present_pair(a, "sinkInOptional", "dsinkOut")
    if sink is not None and any(t.dtype != DataType.ACL_FLOAT for t in sink):
        _refuse("sinkInOptional/dsinkOut dtype must be FLOAT32", "io.sink_dtype", env, IO_CHECK)


def _length_sum(cumulative) -> int:
    """GetActSeqLen: the first length plus every positive step of the cumulative list."""
    steps = [b - a for a, b in zip(cumulative, cumulative[1:])]
    return (cumulative[0] + sum(step for step in steps if step > 0)) if cumulative else 0


def tnd_lengths_check(a, env):
    """The end of GetInputShapeInfo from 9.0.0 on Atlas A2/A3 (StrideLimited), TND only: CheckDimT, then the
    EOD check (both T above the sums need last lengths of 0). An empty length list leaves the EOD check to
    read before the list (not reproduced: the tiling refuses such lists)."""
    if a.inputLayout != "TND" or env.soc == ARCH35 or not env.version.has(TND_LENGTHS):
        return
    cu_q, cu_kv = getattr(a, "actualSeqQLenOptional", None), getattr(a, "actualSeqKvLenOptional", None)
    if cu_q is None or cu_kv is None:
        _refuse(
            "actualSeqQLenOptional and actualSeqKvLenOptional cannot be nullptr with TND",
            "tnd.lengths_null",
            env,
            TND_LENGTHS,
        )
    t1, t2 = a.query.shape[0], a.keyIn.shape[0]
    sum_q, sum_kv = _length_sum(list(cu_q)), _length_sum(list(cu_kv))
    if t1 < sum_q or t2 < sum_kv:
        _refuse(
            f"T axis of query and keyIn ({t1}, {t2}) cannot be less than {sum_q} and {sum_kv}",
            "tnd.t_short",
            env,
            TND_LENGTHS,
        )
    if t1 > sum_q and t2 > sum_kv and len(cu_q) and len(cu_kv) and (cu_q[-1] != 0 or cu_kv[-1] != 0):
        _refuse(
            f"The values of the actualSeqQLenOptional end and actualSeqKvLenOptional end must be 0: got {cu_q[-1]}, "
            f"{cu_kv[-1]}",
            "tnd.eod_end",
            env,
            TND_LENGTHS,
        )
