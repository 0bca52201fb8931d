"""aclnnFlashAttentionScoreGradV2 (attention/flash_attention_score_grad, CANN 8.5).

Validation follows the source (reference §1A), not the doc: the op_api checks return 161001 (null)
or 161002 (headNum, ranks, head dims, the q/k/v/dy dtypes of InputDtypeCheck); everything infershape,
kernel selection and tiling reject surfaces as 161001, because the L2 code maps the L0 wrapper's nullptr
to ACLNN_ERR_PARAM_NULLPTR: the other dtype errors are therefore 161001 although the doc says 161002
(docs/divergences/flash_attention_score_grad.md). Releases that differ: versions.RULES "fag.*".

Ascend910_95 runs the same op_api (no chip branch in aclnn_flash_attention_score_grad.cpp) and
then the arch35 tiling (TilingFlashAttentionGradScore picks it by SocVersion): the differences the
V2 interface can reach are marked ARCH35 below (_check_shape_attrs_arch35 follows the arch35 order).
"""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.varlen import strided_mask_reads
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import attr_int32, shape_dim
from aclnn_emu.opdef.signature import Launch, OpError
from .checks_arch35 import (
    SINK as ARCH35_SINK,
    _arch35_tokens,
    _check_drop_mask_arch35,
    _check_shape_attrs_arch35,
    check_sink_arch35,
    check_tnd_arch35,
)
from .common import (
    UNESTABLISHED,
    refuse_grad_head_dim,
    seeds,
    COMPRESSED_MASK,
    INVALID,
    NULLPTR,
    SOFTMAX_LANES,
    _Shape,
    _check_atten_mask_info,
    _check_atten_mask_shape,
    _check_drop_mask,
    _check_prefix,
    _check_pse,
    _check_softmax_shapes,
    _names,
    _present,
    tiling_failed,
)
from .. import tnd
from ..common import refuse_value_rows
from ..tnd import SINK_IGNORED
from ..common import QUANT8
from .entry import ARCH35, FLOATS, INFER_LAYOUTS, MASK_DTYPES, OP, UNPADDING_V4, UNPADDINGS, V1
from .io_checks import input_dtype_check, io_dtype_and_shape_check, tnd_lengths_check
from .launch import _launch, _launch_tnd, _zero_outputs
from . import v4 as v4_checks
from .v4 import is_v4


SYSTEM_WORKSPACE = 16 << 20


INFERRED = Gaps(
    OP,
    "inferred",
    {
        "out_dtype": "an output whose dtype differs from its input's (the result is cast; on the NPU ViewCopy most likely "
        "fails)",
        "head_dim": "a head dim past what the kernels are built for: 768 on Ascend910_95 (GetDTemplateType falls back to "
        "its largest template), the documented 512 on Atlas A2/A3. No host check refuses it; the result is exact, "
        "the NPU kernel's buffers for such rows are not established",
    },
    code=NULLPTR,
)


TND_READ_PAST = Gaps(
    UNPADDINGS[0],
    "refused",
    {
        "tnd_mask_short": "an attenMask with inputLayout TND on Ascend910_95 holding fewer elements than the "
        "kernels read (the arch35 backward tiling checks its first two dimensions only; the kernels read each "
        "batch's rows the last dimension apart from its packed offset)",
        "tnd_prefix_short": "sparseMode 5 with an attenMask and every batch of the same lengths on Ascend910_95, "
        "when the backward's kernels run with a BSND layout, without a prefix of one value per batch (its tiling "
        "only warns; CheckIsValidBlock reads prefixN[b] of every batch)",
        "tnd_alibi_before_start": "the alibi pse [1|B, N1, 1024, W] with W < 1024 and every batch of the same "
        "lengths S1 > 1024 on Ascend910_95, when the backward's kernels run with a BSND layout: the rows above "
        "the last 1024 read W - 1024 elements before their row, before the tensor's first element for the "
        "first head",
    },
    code=NULLPTR,
)
TND_UNESTABLISHED = Gaps(
    UNPADDINGS[0],
    "unestablished",
    {
        "tnd_cumulative": "actualSeqQLen / actualSeqKvLen that decrease or start below 0 (the tiling clamps the "
        "lengths to 0, the kernels index with the raw values)",
        "tnd_prefix_token_blocks": "sparseMode 5 with an attenMask and every batch of the same lengths on "
        "Ascend910_95 when the backward's kernels run with layout TND (the BN2S2 split) and the pre/next tokens "
        "leave blocks out (IsValid): which of them a core still computes depends on the blocks it was given "
        "(curS2InvalidTotalNum)",
        "tnd_softmax_shape": "softmaxMax/softmaxSum of another shape than [T1, N1, 8] on Ascend950 under CANN 9.x, whose "
        "arch35 tiling no longer checks it (9.1.0: unless softmaxInLayout is same_as_input): how the kernels read "
        "them is not established",
    },
)
V4_NULLS = Gaps(
    UNPADDING_V4,
    "inferred",
    {
        "null_outputs_v4": "aclnnFlashAttentionUnpaddingScoreGradV4 with a nullptr among its required tensors: its "
        "null check joins the conditions with || and the next line dereferences the nullptr (a crash on the device); "
        "aclnn-emu returns ACLNN_ERR_PARAM_NULLPTR"
    },
    code=NULLPTR,
)
MISSING = object()  # a parameter the entry point does not have
SOFTMAX_IN_LAYOUTS = ("same_as_input", "")
OPTIONAL_RESULTS = (("dqRopeOut", "queryRope"), ("dkRopeOut", "keyInRope"), ("dsinkOut", "sinkInOptional"))
TND_PSE_ROW = "fag.tnd_pse_row_is_kv_sum_on_a2a3"
ARCH35_TOKENS = "fag.arch35_tnd_tokens_skip_empty_batches"
ARCH35_SOFTMAX = "fag.arch35_tnd_softmax_unchecked"
ARCH35_SOFTMAX_SAME_AS_INPUT = "fag.arch35_tnd_softmax_same_as_input_checked"
TND_COMPRESSED = {**COMPRESSED_MASK, 7: (2048, 2048), 8: (2048, 2048)}  # the TND tiling adds modes 7 and 8


def _op_api_checks(a):
    for name in ("query", "keyIn", "value", "dy", "attentionInOptional", "dqOut", "dkOut", "dvOut"):
        if getattr(a, name) is None:
            raise OpError(
                NULLPTR,
                f"{name} must not be nullptr (attentionInOptional is required despite its name)"
                if name == "attentionInOptional"
                else f"{name} must not be nullptr",
                rule=f"null.{name}",
            )


def _rank_checks(a):
    """InvalidTensorDimCheck: the rope tensors (when all four are given), the required ones, the sink pair."""
    ropes = [getattr(a, name, None) for name in ("queryRope", "keyInRope", "dqRopeOut", "dkRopeOut")]
    if None not in ropes and any(t.ndim < 3 for t in ropes):
        raise OpError(
            INVALID,
            "The input or output of FAG does not support tensors with dim less than 3: "
            f"rope shapes {[list(t.shape) for t in ropes]}",
            rule="rank.rope",
        )
    for name in ("query", "keyIn", "value", "dy", "attentionInOptional", "dqOut", "dkOut", "dvOut"):
        tensor = getattr(a, name)
        if tensor.ndim < 3:
            raise OpError(
                INVALID,
                f"The input or output of FAG does not support tensors with dim less than 3: "
                f"{name} has shape {list(tensor.shape)}",
                rule="rank.min3",
            )
    sink, dsink = getattr(a, "sinkInOptional", None), getattr(a, "dsinkOut", None)
    if sink is not None and dsink is not None and (sink.ndim != 1 or dsink.ndim != 1):
        raise OpError(
            INVALID,
            "Sink input and output of FAG only support tensors with dim equals to 1: got "
            f"{list(sink.shape)} and {list(dsink.shape)}",
            rule="rank.sink",
        )


def _fp32_query_with_sink(a, env):
    """FlashAttentionScoreGradV5GetWorkspace (ScoreGradV3, UnpaddingScoreGradV5) from 8.5.0: any sink, even an
    empty one, with an fp32 query."""
    rule = "fag.fp32_query_with_sink_refused"
    if getattr(a, "sinkInOptional", None) is not None and a.query.dtype == DataType.ACL_FLOAT and env.version.has(rule):
        raise OpError(
            INVALID,
            f"query with sinkInOptional is not supported, got Float32 ({env.version.source(rule)})",
            rule="sink.fp32_query",
        )


def _check_rope(a, s: _Shape):
    """isSupportMultiInput of the backward (UnpaddingScoreGrad V3/V5): its codes are returned as they are."""
    q_rope, k_rope = getattr(a, "queryRope", None), getattr(a, "keyInRope", None)
    if (q_rope is None) != (k_rope is None):
        raise OpError(NULLPTR, "queryRope and keyInRope must be given together", rule="rope.one_sided")
    if q_rope is None or k_rope is None:
        return
    if q_rope.shape[2] > s.d or k_rope.shape[2] > s.d:
        raise OpError(
            INVALID,
            "Invalid input, do not support query_rope and key_rope when the head-dim of query_rope or key_rope is "
            f"larger than the head-dim of query ({q_rope.shape[2]}, {k_rope.shape[2]} > {s.d})",
            rule="rope.head_dim",
        )
    # a rope dtype other than BF16 is only logged (the source returns nothing there)
    if any(t.dtype != DataType.ACL_BF16 for t in (a.query, a.keyIn, a.value)):
        raise OpError(INVALID, "The data type of query, key, value should be BFloat16.", rule="rope.dtype")
    if a.sparseMode == 6:
        raise OpError(INVALID, "do not support query_rope and key_rope when sparseMode is 6.", rule="rope.prefix")
    if _present(a.attenMaskOptional) is None:
        raise OpError(NULLPTR, "only support query_rope and key_rope when attentionMask is given.", rule="rope.mask")
    for name, present in (
        ("pse", a.pseShiftOptional is not None),
        ("drop_mask", a.dropMaskOptional is not None),
        ("keep_prob", a.keepProb < 1),
        ("layout", s.layout != "TND"),
        ("padding", _tnd_pads(a, s)),
    ):
        if present:
            raise OpError(INVALID, f"queryRope and keyInRope are not supported with this {name}", rule=f"rope.{name}")


def _tnd_pads(a, s: _Shape) -> bool:
    """GetInputShapeInfo's needPadDimD / needPadValueD for TND, with the system's deterministic option 0
    (the default; aclnn-emu has no setter for it): D off the 16 (128 from D 128 on) alignment, unless D is
    a multiple of 8, or the max kv length is <= 1024, D < 96, the query total < 160K and keepProb is 1;
    D 192 with Dv 128 never pads. needPadValueD: D != Dv except 192/128."""
    if s.d == 192 and s.vd == 128:
        return False
    if s.d != s.vd:
        return True
    align = 16 if s.d < 128 else 128
    if s.d % align == 0 or s.d % 8 == 0:
        return False
    extent = tnd.pad_extent(a.actualSeqQLenOptional, a.actualSeqKvLenOptional)
    if extent is None:
        return True
    kv_max, q_sum = extent
    if not kv_max or not q_sum:
        return True
    return not (kv_max <= 1024 and s.d < 96 and q_sum < 160 * 1024 and a.keepProb == 1)


def _kernel_select(a, arch35: bool):
    """The dtype combinations op_host/flash_attention_score_grad_def.cpp registers (ARCH35: QUANT8 too)."""
    dtype = a.query.dtype
    if dtype not in FLOATS + (QUANT8 if arch35 else ()):
        fail("dtype.query", f"query dtype {dtype.name} has no FAG kernel; expected {_names(FLOATS)}")
    for name in ("keyIn", "value", "dy"):
        got = getattr(a, name).dtype
        if got != dtype:
            fail(
                f"dtype.{name}",
                f"{name} dtype {got.name} has no FAG kernel with query {dtype.name}; "
                f"expected {dtype.name} (query, keyIn, value, dy share one dtype)",
            )
    mask = _present(a.attenMaskOptional)
    if mask is not None and mask.dtype not in MASK_DTYPES:
        fail("dtype.atten_mask", f"invalid attenMask dtype {mask.dtype.name}, only support BOOL or UINT8")
    drop = _present(a.dropMaskOptional)
    if drop is not None and drop.dtype != DataType.ACL_UINT8:
        fail("dtype.drop_mask", f"dropMask dtype {drop.dtype.name} has no FAG kernel; only support UINT8")
    pse = _present(a.pseShiftOptional)
    if pse is not None and pse.dtype not in (dtype, DataType.ACL_FLOAT):
        fail("dtype.pse", f"pseShift dtype {pse.dtype.name} has no FAG kernel; expected {dtype.name} or FLOAT")


def _check_base_input(a, s: _Shape):
    """CheckParams / CheckBaseInput of flash_attention_score_grad_tiling.cpp."""
    for name in ("softmaxMaxOptional", "softmaxSumOptional"):
        if _present(getattr(a, name)) is None:
            fail(
                f"tiling.{name}_null",
                f"fail to get shape or attr from context: {name} is null; FAG needs the forward's "
                "softmaxMax and softmaxSum ([B,N1,S1,8] FLOAT)",
            )
    q, k, v = a.query.shape, a.keyIn.shape, a.value.shape
    if s.layout in ("BSH", "SBH"):
        axis = 0 if s.layout == "BSH" else 1
        if q[axis] != k[axis]:
            fail("tiling.batch", f"query or key shape is invalid: query {list(q)}, key {list(k)} differ in B")
        if q[2] % a.headNum:
            fail("tiling.h1_heads", f"h1 [{q[2]}] should be a multiple of headNum [{a.headNum}].")
        if k[2] < v[2]:
            fail("tiling.kv_h", f"key H {k[2]} is smaller than value H {v[2]}")
    elif len(s.layout) == 4:  # a key or value of 3 dims reads D as 0 (gert::Shape past its rank)
        kd, vd = shape_dim(k, 3), shape_dim(v, 3)
        if q[0] != k[0] or shape_dim(q, 3) != kd:
            fail("tiling.qk_shape", f"query or key shape is invalid: query {list(q)}, key {list(k)}")
        n1 = q[1] if s.layout[1] == "N" else q[2]  # the letter, not the layout's name, picks the axis
        if a.headNum != n1:
            fail("tiling.head_num", f"headNum is [{a.headNum}], but got n1 [{n1}].")
        if kd < vd:
            fail("tiling.kv_d", f"key D {kd} is smaller than value D {vd}")
    else:
        fail("tiling.layout", f"invalid input_layout[{s.layout}].")


def _check_shape_attrs(a, s: _Shape, env):
    """FlashAttentionScoreGradTilingS1s2Bn2::GetShapeAttrsInfo (runs first for every call)."""
    if env.soc == ARCH35:
        return _check_shape_attrs_arch35(a, s, env)
    if s.layout == "TND":
        fail(
            "tiling.tnd",
            "actualSeqQlenTensor or actualSeqKvlenTensor is nullptr: inputLayout TND needs "
            "actual sequence lengths, which aclnnFlashAttentionScoreGradV2 cannot pass",
        )
    if s.layout not in ("BSH", "SBH", "BSND", "BNSD"):
        fail(
            "tiling.layout_case",
            f"no FAG tiling template accepts inputLayout {s.layout!r} (upper-case BSH/SBH/BSND/BNSD only)",
        )
    smax, ssum = a.softmaxMaxOptional, a.softmaxSumOptional
    if smax.dtype != DataType.ACL_FLOAT or ssum.dtype != DataType.ACL_FLOAT:
        fail(
            "tiling.softmax_dtype",
            f"softmaxMaxType should be DT_FLOAT and same with softmaxSumType: got {smax.dtype.name}/{ssum.dtype.name}",
        )
    if a.attentionInOptional.dtype != a.query.dtype:
        fail(
            "tiling.attention_in_dtype",
            f"invalid attentionIn dtype {a.attentionInOptional.dtype.name}, should be same with "
            f"query's dtype {a.query.dtype.name}",
        )
    if 0 in (s.b, s.n1, s.s1, s.d):
        fail("tiling.zero", f"input shape error, got 0 in bnsd: b={s.b} n1={s.n1} s1={s.s1} d={s.d}")
    _check_softmax_shapes(a, s)
    q, o = a.query.shape, a.attentionInOptional.shape
    if len(o) != len(q) or o[:-1] != q[:-1]:
        fail("tiling.attention_in_shape", f"attentionIn shape {list(o)} must match query {list(q)} except the last dim")
    for first, second, label in (
        (a.query, a.dy, "queryShape and dyShape"),
        (a.keyIn, a.value, "keyShape and valueShape"),
    ):
        x, y = first.shape, second.shape
        if len(x) != len(y) or x[:-1] != y[:-1] or y[-1] > x[-1]:
            fail("tiling.same_shape", f"FAG different shape{label}: {list(x)} vs {list(y)}")
    keep = float(np.float32(a.keepProb))
    if keep <= 0 or keep > 1:
        fail("tiling.keep_prob", f"keepProb is illegal: got {a.keepProb} (as float32 {keep}); expected (0, 1]")
    if keep < 1:
        _check_drop_mask(a, s, keep)
    mode = attr_int32(a.sparseMode) & 0xFFFFFFFF
    if mode > 8:
        fail("tiling.sparse_mode", f"FAG sparseMode {mode} is invalid (got {a.sparseMode}); expected 0-8")
    if mode in (7, 8):
        fail("tiling.sparse_tnd", f"layout {s.layout} not support sparsemode {mode} (7 and 8 need TND)")
    if a.pseType < 0 or a.pseType >= 4:
        fail("tiling.pse_type", f"pseType is invalid: got {a.pseType}; expected 0-3")
    _check_tokens(a, s, mode)
    _check_atten_mask_info(a, s)
    if mode == 6 and _present(a.attenMaskOptional) is not None:
        _check_prefix(a, s)
    _check_pse(a, s, (a.preTokens, a.nextTokens))
    _check_atten_mask_shape(a, s, mode)
    _check_pad_tokens(a, s, mode)
    return mode


def _check_tokens(a, s, mode):
    """CheckTokens reads preTokens/nextTokens as int32, with or without a mask."""
    pre, nxt = attr_int32(a.preTokens), attr_int32(a.nextTokens)
    rows, cols = (s.s2, s.s1) if mode == 0 else (s.s1, s.s2)
    if mode in (0, 4) and (-pre > rows or -nxt > cols or pre + nxt < 0):
        fail(
            "tiling.tokens",
            f"FAG S1s2Bn2 with s1[{s.s1}] s2[{s.s2}] preToken[{pre}] nextToken[{nxt}] is not support! "
            "(tokens are read as int32)",
        )


def _check_pad_tokens(a, s, mode):
    """ProcessTokensInfo of the A2/A3 template that finally runs (with an attenMask)."""
    if _present(a.attenMaskOptional) is None:
        return
    if mode in (0, 4):
        pre, nxt = a.preTokens, a.nextTokens
        if mode == 4:
            pre, nxt = pre + s.s1 - s.s2, nxt - s.s1 + s.s2
        if -pre > s.s2 or -nxt > s.s1 or pre + nxt < 0:
            fail(
                "tiling.pad_tokens",
                f"pre_token and next_token is invalid in the pad scene, got s1 {s.s1}, s2 {s.s2}, "
                f"pre_token {pre}, next_token {nxt}",
            )


def _check_outputs(a, env):
    """PostFlashAttentionScoreGrad: ViewCopy of the results into dqOut/dkOut/dvOut (and, when both sides
    are given, dqRopeOut/dkRopeOut and dsinkOut)."""
    pairs = [("dqOut", "query"), ("dkOut", "keyIn"), ("dvOut", "value")]
    pairs += [(out, like) for out, like in OPTIONAL_RESULTS if getattr(a, out, None) is not None]
    for out, like in pairs:
        got, want = getattr(a, out), getattr(a, like, None)
        if want is None:
            continue
        if got.shape != want.shape:
            raise OpError(
                NULLPTR,
                f"{out} shape {list(got.shape)} differs from {like} {list(want.shape)}; ViewCopy of the result fails",
                rule=f"out.{out}_shape",
            )
        if got.dtype != want.dtype:
            INFERRED.warn(env, "out_dtype", f"{out} is {got.dtype.name}, {like} {want.dtype.name}")


def _workspace(s) -> int:
    """What the hardware asks for, roughly: fp32 dq/dk/dv accumulators plus the system workspace."""
    return SYSTEM_WORKSPACE + 4 * (s.b * s.n1 * s.s1 * s.d + s.b * s.n2 * s.s2 * (s.d + s.vd))


@OP.prepare
@tiling_failed
def prepare(a, env):
    _op_api_checks(a)
    if a.dqOut.is_empty and a.dkOut.is_empty and a.dvOut.is_empty and (a.dpseOut is None or a.dpseOut.is_empty):
        return Launch.nothing()
    if a.headNum <= 0:
        raise OpError(
            INVALID, f"Invalid HeadNum, pls check input attr: got headNum {a.headNum}; expected > 0", rule="head_num"
        )
    v4 = is_v4(env)
    if v4:
        v4_checks.check_output_shapes(a, env)
    else:
        io_dtype_and_shape_check(a, env)
    _rank_checks(a)
    if not v4:
        _fp32_query_with_sink(a, env)
    layout = a.inputLayout or ""
    s = _Shape(a, layout)
    tnd_lengths_check(a, env)
    if v4:
        v4_checks.check_sink_and_layout(a, env)
    _check_rope(a, s)
    input_dtype_check(a, env)  # PreFlashAttentionScoreGrad, before the L0 call
    if v4:
        v4_checks.to_l0(a, env, s)
    if layout.upper() not in INFER_LAYOUTS:
        fail("infershape.layout", f"The inputLayout should be BSH/SBH/BSND/BNSD/TND(case-insensitive), got {layout!r}")
    _kernel_select(a, env.soc == ARCH35)
    if layout == "TND" and getattr(a, "actualSeqQLenOptional", MISSING) is not MISSING:
        return _prepare_tnd(a, s, env)
    _check_base_input(a, s)
    if a.dqOut.is_empty or a.dkOut.is_empty or a.dvOut.is_empty:
        _check_outputs(a, env)
        return Launch(_workspace(s), _zero_outputs(a))
    mode = _check_shape_attrs(a, s, env)
    _check_outputs(a, env)
    if a.innerPrecise not in (0, 1):
        env.warn(f"innerPrecise {a.innerPrecise} has no effect: no FAG tiling reads it")
    if _present(a.pseShiftOptional) is not None and a.dpseOut is not None:
        env.warn("dpseOut is not computed by FAG (documented as unused); its contents are left as they were")
    refuse_grad_head_dim(a, s)
    _warn_head_dim(s, env)
    return Launch(_workspace(s), _launch(a, s, mode, env, _tiling_sink(a, s.n1, env)))


def _warn_head_dim(s, env) -> None:
    """D past the largest kernel template (INFERRED head_dim): the op_api and tilings only compare
    qD, kD and vD (CheckFaParam, GetInputShapeInfo), so phase 1 accepts any D."""
    limit = 768 if env.soc == ARCH35 else 512
    if s.d > limit:
        INFERRED.warn(env, "head_dim", f"D {s.d} > {limit} on {env.soc}")


def _tiling_sink(a, heads: int, env):
    """The sink the kernel reads: checked by the arch32 tiling; on Ascend910_95 nothing reads it before 9.1.0."""
    sink = _present(getattr(a, "sinkInOptional", None))
    if sink is None:
        return None
    if env.soc == ARCH35:
        if not env.version.has(ARCH35_SINK):
            env.warn(SINK_IGNORED)
            return None
        check_sink_arch35(a, heads, env)
        return sink
    problem = tnd.check_sink(sink, heads)
    if problem is not None:
        fail(problem[1], problem[0])
    return sink


def _fail(problem):
    """Raise a tiling failure given as (message, rule); None passes."""
    if problem is not None:
        fail(problem[1], problem[0])


def _prepare_tnd(a, s: _Shape, env):
    """The variable-length path (UnpaddingScoreGrad V1-V5): the TND tiling's checks, then the per-batch
    kernels."""
    batches, problem = tnd.check_lengths(a, a.keyIn)
    _fail(problem)
    if env.soc == ARCH35:
        check_tnd_arch35(a, s, env)
    if not batches.monotone:
        TND_UNESTABLISHED.refuse("tnd_cumulative", f"{list(batches.cu_q)}, {list(batches.cu_kv)}")
    lanes = (a.query.shape[0], s.n1, SOFTMAX_LANES)
    # 9.x on Ascend950: CheckTndShapeValid checks the shapes no longer (9.1.0: only with "same_as_input")
    same_as_input = getattr(a, "softmaxInLayout", "") == "same_as_input"
    checked = env.version.has(ARCH35_SOFTMAX_SAME_AS_INPUT) and same_as_input
    unchecked = env.soc == ARCH35 and env.version.has(ARCH35_SOFTMAX) and not checked
    for name in ("softmaxMaxOptional", "softmaxSumOptional"):
        stats = _present(getattr(a, name))
        shape = None if stats is None else list(stats.shape)
        if stats is not None and stats.dtype == DataType.ACL_FLOAT and tuple(stats.shape) != lanes and unchecked:
            TND_UNESTABLISHED.refuse("tnd_softmax_shape", f"{name} {shape}, [T1, N1, 8] = {list(lanes)}")
        if stats is None or tuple(stats.shape) != lanes or stats.dtype != DataType.ACL_FLOAT:
            _fail((f"{name} {shape} must be FLOAT [T1, N1, 8] = {list(lanes)}", f"tiling.{name}_tnd"))
    mode, mask, arch35 = a.sparseMode, _present(a.attenMaskOptional), env.soc == ARCH35
    as_bsnd = arch35 and tnd.runs_as_bsnd(a, batches)
    if arch35:
        _fail(tnd.check_grad_sparse_mode_arch35(a, as_bsnd))
    if mask is not None and not (as_bsnd and mode == 5):  # the BSND path's CheckSparseModeValue took mode 5
        _fail(tnd.check_sparse(a, batches, mode))
        compressed = TND_COMPRESSED.get(mode)
        _fail(tnd.check_mask(mask, batches, compressed, s.n1, grad=True, arch35=arch35))
        if arch35 and compressed is None:
            _check_mask_size_arch35(mask, batches, as_bsnd)
    elif mask is not None:  # mode 5 on the BSND path: the mask read as mode 1's, uncompressed
        _fail(tnd.check_mask(mask, batches, None, s.n1, grad=True, arch35=arch35))
        _check_mask_size_arch35(mask, batches, as_bsnd)
    tokens = None
    if as_bsnd:  # ProcessTokensInfo of the BSND path: the pad-scene correction and check
        tokens = _arch35_tokens(a, SimpleNamespace(s1=batches.q[0], s2=batches.kv[0]), mode & 0xFFFFFFFF)
    else:
        skip = arch35 and env.version.has(ARCH35_TOKENS)
        _fail(tnd.check_grad_tokens(a, batches, mode, mask is not None, arch35, skip))
    same_ab = not arch35 and tnd.grad_runs_same_ab(a, batches)
    form = _tnd_pse(a, s, batches, mode, mask is not None, env, tokens, same_ab)
    if as_bsnd and form is not None and form.form == "alibi":
        form = _bsnd_alibi(a, form, batches, env)
    keep = float(np.float32(a.keepProb))
    if keep <= 0 or keep > 1:
        _fail((f"keepProb is illegal: got {a.keepProb}; expected (0, 1]", "tiling.keep_prob"))
    drop, generated = _present(a.dropMaskOptional), None
    if keep < 1 and drop is None and env.soc == ARCH35:
        _check_drop_mask_arch35(a, s, keep, env)  # warns: the kernel draws the keep mask itself
        generated = seeds(a)
    elif keep < 1:
        if drop is None:
            _fail((f"FAG keepProb [{keep:f}], dropMask can not be nullptr", "tiling.drop_null"))
        need = tnd.drop_mask_bytes(batches, s.n1)
        if drop.numel < need:
            _fail(
                (
                    f"FAG Input dropMask shapeSize is invalid, it should not be less than {need}: got {drop.numel}",
                    "tiling.drop_size",
                )
            )
    sink = _tiling_sink(a, s.n1, env)
    _check_outputs(a, env)
    layout = getattr(a, "softmaxInLayout", "") or ""
    if env.soc == ARCH35 and a.query.dtype in QUANT8:
        UNESTABLISHED.refuse("quant_query", f"query dtype {a.query.dtype.name}")
    refuse_grad_head_dim(a, s)
    _warn_head_dim(s, env)
    refuse_value_rows(UNESTABLISHED, a, a.keyIn)
    # the generated ALiBi restarts after batch 0 where the kernel sees sparse mode 8: on Ascend910_95 its
    # sparse type (a mask), in the A2/A3 S1s2Bn2gs1s2 kernel the attribute; never in the SameAb kernel
    restart = mode == 8 and not same_ab and (mask is not None or not arch35)
    prefix_rows = _prefix_blocks(a, batches, env) if as_bsnd and mode == 5 and mask is not None else 0
    masked_mode = mode if mask is not None else 0
    run = _launch_tnd(a, batches, masked_mode, sink, layout, env, form, generated, restart, prefix_rows)
    return Launch(SYSTEM_WORKSPACE + 4 * (a.query.numel + a.keyIn.numel + a.value.numel), run)


def _check_mask_size_arch35(mask, batches, as_bsnd):
    """An uncompressed mask on the arch35 backward: the BSND path's CheckAttenMaskShape (its last two
    dimensions must hold S1·S2 elements); then a mask the kernels would read past the end of is refused
    (the TND path checks no size)."""
    rows, cols = mask.shape[-2:]
    s1, s2 = batches.longest
    if as_bsnd and rows * cols < s1 * s2:
        fail("tiling.mask_shape", f"atten mask shape [{rows},{cols}] is invalid.")
    reads = strided_mask_reads(tuple(mask.shape), batches.q, batches.kv)
    if reads > mask.numel:
        TND_READ_PAST.refuse("tnd_mask_short", f"attenMask {list(mask.shape)}, the kernels read {reads} elements")


def _kernel_rows(a) -> int:
    """The arch35 backward kernels' row block CUBE_BASEM (the s1 template, GetS1S2TemplateType): 64 for a
    FLOAT query with D > 256, else 128."""
    return 64 if a.query.dtype == DataType.ACL_FLOAT and a.query.shape[2] > 256 else 128


def _prefix_blocks(a, batches, env) -> int:
    """Sparse mode 5 on the arch35 backward's BSND path (its compress mode stays 0: the mask is read as
    mode 1's): with a BSND kernel layout the kernels skip blocks by prefixN (CheckIsValidBlock), so the
    row block they do it by (varlen.prefix_skipped), after refusing a prefix they would read past; with
    layout TND (grad_kernel_is_tnd_arch35) IsValid skips blocks by the pre/next tokens instead, run only
    when it skips none. 0: no blocks skipped."""
    rows, cols = _kernel_rows(a), 128
    s1, s2 = batches.q[0], batches.kv[0]
    if not tnd.grad_kernel_is_tnd_arch35(a, batches, env.version):
        prefix = a.prefixOptional
        if prefix is None or len(prefix) < batches.count:
            got = "none" if prefix is None else f"{len(prefix)} values"
            TND_READ_PAST.refuse("tnd_prefix_short", f"prefix {got}, {batches.count} batches")
        return rows
    for start in range(0, s1, rows):  # IsValid of the TND kernel: the token band per block, 64-aligned
        left = max(start - a.preTokens, 0) // 64 * 64
        right = min(-(-(min(start + rows, s1) + a.nextTokens) // 64) * 64, s2)
        if any(not (j0 < right and min(j0 + cols, s2) > left) for j0 in range(0, s2, cols)):
            TND_UNESTABLISHED.refuse(
                "tnd_prefix_token_blocks", f"preTokens {a.preTokens}, nextTokens {a.nextTokens}, rows {start}+"
            )
    return 0


def _bsnd_alibi(a, form, batches, env):
    """The alibi on the arch35 backward's BSND path: the kernels read it as TND when SetSplitAxis gives
    the layout back (tnd.grad_kernel_is_tnd_arch35), else by pse.h PseAlibiComputeOffset's non-TND
    branch, anchored at S1 per row block of CUBE_BASEM rows (the s1 template: 64 for a FLOAT query with D
    > 256, else 128; GetS1S2TemplateType). Rows above the last 1024 then read before their row's start
    when W < 1024: before the tensor's first element is refused."""
    if tnd.grad_kernel_is_tnd_arch35(a, batches, env.version):
        return form
    form = replace(form, alibi_anchor=batches.q[0], alibi_block=_kernel_rows(a))
    first = int(form.bsnd_offsets(batches.q[0], batches.kv[0]).min(initial=0))
    if first < 0:
        TND_READ_PAST.refuse("tnd_alibi_before_start", f"S1 {batches.q[0]}, W {form.alibi_width}: offset {first}")
    return form


def _tnd_pse(a, s: _Shape, batches, mode, masked, env, tokens=None, same_ab=False):
    """ProcessPseInfo of the TND tilings (after the sparse-mode and token processing): the pse's dtype,
    then its form (tnd.backward_pse; `same_ab`: the A2/A3 SameAb template's). The arch35 one checks
    pseType first, with or without a pse, and has no check of a pseType without a pse."""
    pse, arch35 = _present(a.pseShiftOptional), env.soc == ARCH35
    if arch35 and not 0 <= a.pseType < 4:  # compared as uint32: a negative pseType fails too
        fail("tiling.pse_type", f"FAG pseType {a.pseType} is invalid; expected 0-3")
    if pse is None:
        if a.pseType != 1 and not arch35:
            fail("tiling.pse_null", f"Get PseInput is nullptr, but pseType is not default=1, now pseType={a.pseType}.")
        return None
    want = DataType.ACL_FLOAT if a.pseType in (2, 3) else a.query.dtype
    if pse.dtype != want:
        fail("tiling.pse_dtype", f"FAG invalid pse dtype[{pse.dtype.name}], should be {want.name}")
    # every form it accepts is at least as long as the kernel reads (T2 >= the sum of the key lengths)
    # the key tokens a one-row-per-head pse is told by: on Ascend910_95 the last actualSeqKvLen; on
    # Atlas A2/A3 the key's T2, from 9.1.0 the key lengths' sum
    if arch35:
        key_tokens = batches.cu_kv[-1] if batches.cu_kv else 0
    else:
        key_tokens = sum(batches.kv) if env.version.has(TND_PSE_ROW) else a.keyIn.shape[0]
    form, problem = tnd.backward_pse(a, pse, batches, s.n1, key_tokens, mode, masked, arch35, tokens, same_ab)
    _fail(problem)
    return form


# -- the other entry points' own op_api (op_api/aclnn_flash_attention_score_grad.cpp) --------------------
@V1.check
@tiling_failed
def _score_grad_v1(a, env):
    """aclnnFlashAttentionScoreGradGetWorkspaceSize: V2's path with PSE_TYPE_V1, no start indices and the
    default softmaxInLayout ("")."""
    tnd.fixed_attributes(a)


def _tnd_only(a, env):
    """aclnnFlashAttentionUnpaddingScoreGrad{,V2..V5}GetWorkspaceSize: any layout but "TND" (strcmp) returns
    ACLNN_ERR_PARAM_INVALID before anything else, the null checks included."""
    tnd.fixed_attributes(a)
    if a.inputLayout != "TND":
        raise OpError(INVALID, f"Layout {a.inputLayout} is not TND, invalid shape, please check", rule="layout.tnd")


for _entry in UNPADDINGS:
    _entry.check(_tnd_only)


@UNPADDING_V4.check
@tiling_failed
def _softmax_in_layout(a, env):
    """UnpaddingScoreGradV4: softmaxInLayout must be "same_as_input" or "" (161002); its null check then
    joins the conditions with ||, so one nullptr passes it and is dereferenced on the next line."""
    if a.softmaxInLayout not in SOFTMAX_IN_LAYOUTS:
        raise OpError(
            INVALID, f"softmaxInLayout {a.softmaxInLayout!r} is invalid: only {SOFTMAX_IN_LAYOUTS}", rule="softmax_in"
        )
    names = ("query", "keyIn", "value", "dy", "attentionInOptional", "dqOut", "dkOut", "dvOut")
    missing = [name for name in names if getattr(a, name) is None]
    if missing and len(missing) < len(names):
        V4_NULLS.warn(env, "null_outputs_v4", ", ".join(missing))
