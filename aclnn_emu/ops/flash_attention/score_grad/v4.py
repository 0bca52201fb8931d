"""aclnnFlashAttentionScoreGradV4 (CANN 9.0.0 on): the steps of its op_api that the other entry points do not
take (op_api/aclnn_flash_attention_score_grad.cpp aclnnFlashAttentionScoreGradV4GetWorkspaceSize and
FlashAttentionScoreGradV4GetWorkspace, v9.0.0 and branch 9.1.0). checks.prepare runs each where the source has it.

Unlike V3 and the Unpadding entry points, V4 runs no InputOutputDtypeAndShapeCheck (9.1.0), no fp32-query-with-sink
check, no isSupportMultiInput and no softmax transpose, and hands the L0 op its rope, dequant scales, seed, offset
and outDtype as they are. v9.0.0 gives the L0 op no sink and the default softmaxInLayout ""; 9.1.0 checks both
(versions.RULES "fag.v4_sink_and_softmax_layout") and passes them on.
"""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.signature import OpError
from .common import INVALID, NULLPTR, SOFTMAX_LANES, _present
from .entry import ARCH35, V4

OUTPUT_SHAPES = "fag.v4_output_shapes"
SINK_AND_LAYOUT = "fag.v4_sink_and_softmax_layout"
HALVES = (DataType.ACL_FLOAT16, DataType.ACL_BF16)
SAME_AS_INPUT = "same_as_input"

PATHS = Gaps(
    V4,
    "not_implemented",
    {
        "dequant_scales": "dScaleQ/K/V/Dy/OOptional (the FP8/HiFloat8 dequantisation)",
        "rope": "queryRopeOptional / keyRopeOptional, which V4 hands to the L0 op without the Unpadding entry points' "
        "isSupportMultiInput checks (the tiling's rope rules for them are not reviewed)",
        "dense_lengths": "actualSeqQLenOptional / actualSeqKvLenOptional with a layout other than TND (how the dense "
        "templates treat them is not reviewed)",
        "head_major_softmax": "inputLayout TND with softmaxInLayout same_as_input on Atlas A2/A3 under 9.1.0: V4 does "
        "not transpose softmaxMax/Sum as V5 does, so the tiling takes them as given in [N1, T1, 8] (the kernels' "
        "reading of such statistics is not modelled)",
    },
)
UNESTABLISHED = Gaps(
    V4,
    "unestablished",
    {
        "dsink_without_sink": "sinkInOptional with a dsinkOut under 9.0.0: V4 hands the L0 op no sink, so the dsink "
        "output the op_api copies into dsinkOut has no shape from the infershape"
    },
)


def is_v4(env) -> bool:
    return env.op_name == V4.name


def check_output_shapes(a, env) -> None:
    """9.1.0, right after the headNum check: each output given with its input shaped like it (161002)."""
    if not env.version.has(OUTPUT_SHAPES):
        return
    for out, like in (
        ("dqOut", "query"),
        ("dkOut", "keyIn"),
        ("dvOut", "value"),
        ("dqRopeOut", "queryRopeOptional"),
        ("dkRopeOut", "keyRopeOptional"),
        ("dsinkOut", "sinkInOptional"),
    ):
        got, want = getattr(a, out), getattr(a, like)
        if got is not None and want is not None and got.shape != want.shape:
            raise OpError(
                INVALID,
                f"{out} shape {list(got.shape)} should be {list(want.shape)} ({env.version.source(OUTPUT_SHAPES)})",
                rule=f"v4.{out}_shape",
            )


def check_sink_and_layout(a, env) -> None:
    """9.1.0, after GetInputShapeInfo: CheckSinkOptionalInput, then softmaxInLayout by inputLayout (strcmp)."""
    if not env.version.has(SINK_AND_LAYOUT):
        return
    source = env.version.source(SINK_AND_LAYOUT)
    if a.sinkInOptional is not None:
        if a.dsinkOut is None:
            raise OpError(NULLPTR, f"dsinkOut must not be nullptr with sinkInOptional ({source})", rule="v4.dsink_null")
        wanted = [("sinkInOptional", (DataType.ACL_FLOAT,)), ("dsinkOut", (DataType.ACL_FLOAT,))]
        names = ("query", "keyIn", "value", "dy", "attentionInOptional", "dqOut", "dkOut", "dvOut")
        wanted += [(name, HALVES) for name in names]
        if a.queryRopeOptional is not None and a.keyRopeOptional is not None:
            wanted += [("queryRopeOptional", HALVES), ("keyRopeOptional", HALVES)]
        for name, dtypes in wanted:
            dtype = getattr(a, name).dtype
            if dtype not in dtypes:
                raise OpError(
                    INVALID,
                    f"with sinkInOptional, {name} must be {'/'.join(d.name for d in dtypes)}: got {dtype.name} "
                    f"({source})",
                    rule=f"v4.sink_dtype.{name}",
                )
    layout, softmax = a.inputLayout or "", a.softmaxInLayout
    if softmax is not None and softmax not in (("", SAME_AS_INPUT) if layout == "TND" else ("",)):
        raise OpError(
            INVALID,
            f"softmaxInLayout {softmax!r} with inputLayout {layout!r}: TND takes same_as_input or '', the others '' "
            f"({source})",
            rule="v4.softmax_in_layout",
        )


def to_l0(a, env, s) -> None:
    """What the L0 op receives, after PreFlashAttentionScoreGrad: the inputs without maths here are refused, 9.0.0's
    sink and softmaxInLayout are replaced by what it passes (no sink, ""), and 9.1.0's head-major statistics on
    Atlas A2/A3 are checked as the tiling does."""
    scales = [t for t in ("Q", "K", "V", "Dy", "O") if getattr(a, f"dScale{t}Optional") is not None]
    if scales:
        PATHS.refuse("dequant_scales", f"dScale{'/'.join(scales)} given")
    if a.queryRopeOptional is not None or a.keyRopeOptional is not None:
        PATHS.refuse("rope", "queryRopeOptional or keyRopeOptional given")
    tnd = (a.inputLayout or "") == "TND"
    if not tnd and (a.actualSeqQLenOptional, a.actualSeqKvLenOptional) != (None, None):
        PATHS.refuse("dense_lengths", f"inputLayout {a.inputLayout}")
    if not env.version.has(SINK_AND_LAYOUT):
        _as_9_0(a, env)
    elif tnd and a.softmaxInLayout == SAME_AS_INPUT and env.soc != ARCH35:
        _head_major_softmax(a, s)


def _as_9_0(a, env) -> None:
    sink, dsink = _present(a.sinkInOptional), a.dsinkOut
    if sink is not None:
        if dsink is not None and not (dsink.ndim == 1 and dsink.shape[0] == 0):
            UNESTABLISHED.refuse("dsink_without_sink", f"sinkInOptional {list(sink.shape)}")
        env.warn("sinkInOptional is ignored: V4 under 9.0.0 hands the L0 op no sink (the result is the one without)")
    a.sinkInOptional = None
    if a.softmaxInLayout:
        env.warn(f"softmaxInLayout {a.softmaxInLayout!r} is ignored: V4 under 9.0.0 passes '' to the L0 op")
    a.softmaxInLayout = ""


def _head_major_softmax(a, s) -> None:
    """arch22 CheckSoftmaxMaxShape / CheckSoftmaxSumShape with same_as_input: [N1, T1, 8] (161001)."""
    want = (s.n1, a.query.shape[0], SOFTMAX_LANES)
    for name in ("softmaxMaxOptional", "softmaxSumOptional"):
        stats = _present(getattr(a, name))
        if stats is not None and tuple(stats.shape) != want:
            fail(
                f"tiling.{name}_same_as_input",
                f"the shape of {name} is invalid when softmax_in_layout is same_as_input, got {list(stats.shape)}, "
                f"should be {list(want)}",
            )
    PATHS.refuse("head_major_softmax", f"softmaxMax/Sum {list(want)}")
