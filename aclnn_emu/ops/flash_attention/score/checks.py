"""aclnnFlashAttentionScoreV2 (attention/flash_attention_score, CANN 8.5): the forward of
FlashAttentionScoreGradV2.

Validation follows the source, in its order:
  op_api (op_api/aclnn_flash_attention_score.cpp, aclnnFlashAttentionScoreV2GetWorkspaceSize):
    CheckFaParam nulls 161001; all three outputs empty: success, nothing runs; CheckFormat
    (not on Ascend910_95) 161002; InputDtypeCheck 161002; AnalysisInput 161002.
  L0 (infershape, kernel selection, host tiling: op_host/arch32/flash_attention_score_tiling_general.cpp
    on Atlas A2/A3, the arch35 one on Ascend910_95, whose differences live in score/checks_arch35.py):
    the V2 entry point never checks the L0 results; a failed L0 call yields nullptr outputs, and
    the ViewCopy of a nullptr into softmaxMaxOut fails, so every such failure returns 161001, as
    does a ViewCopy into an output of another shape.
softmaxOutOut is never written ("l0SoftmaxOutOut not used now"). FlashAttentionScoreV4 (CANN 9.0.0 on) runs the
same path without CheckFormat, with its seed/offset and outDtype attributes; V4_PATHS lists what it cannot run
(docs/divergences/cann_versions.md). Doc-vs-source differences: docs/divergences/flash_attention_score.md.
"""

import math
import numpy as np
from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.kernels.flash_attention.pse import ALIBI_ROWS
from aclnn_emu.opdef.failures import fail, mapped
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.signature import Launch, OpError
from ..common import QUANT8, VALUE_ROWS, refuse_value_rows
from .checks_arch35 import (
    TND_UNDEFINED,
    V2_SEED_OFFSET,
    dropout,
    empty_inputs,
    on_arch35,
    sparse_mode_error,
    start_indices,
)
from .. import tnd
from ..tnd import SINK_IGNORED
from .entry import DROP_DTYPES, FLOATS, MASK_DTYPES, OP, V1, V3, V4, VAR_LENS
from .launch import _launch, _launch_tnd, _zero_outputs
from .shapes import INVALID, NULLPTR, _Axes, _analyse_input, _present, _results


COMPRESSED_MASK = {2: (2048, 2048), 3: (2048, 2048), 4: (2048, 2048), 7: (2048, 2048), 8: (2048, 2048), 6: (3072, 2048)}


WORKSPACE_RESERVE = 16 << 20  # WORK_SPACE_RESERVE_SIZE of the tiling


EMPTY_WORKSPACE = 100 << 20  # the empty-input tiling reserves 100 MiB


INVALID_LINE = 2  # ImplMode AA_INVALID_LINE_HIGH_PRECISION (innerPrecise, read as uint8)


# The host checks only the slopes' rank; the kernel reads slope b * N1 + n (or n), past the end of a
# smaller tensor. Refused with the code an L0 failure returns (161001).
READ_PAST = Gaps(
    OP,
    "refused",
    {"pse_inner_size": "pseType 2/3 slopes (realShiftOptional) of rank 1 or 2 that are neither [N1] nor [B,N1]"},
    code=NULLPTR,
)


UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "value_rows": VALUE_ROWS,
        "key_hidden": "a BSH/SBH key whose H is not a multiple of D (AnalysisAxis divides it, no check compares "
        "the rest): how the kernel strides over the remainder of each row is not established",
        "quant_query": "an FP8/HiFloat8 query on Ascend950 from CANN 9.0.0 (InputDtypeCheck lets it through there): "
        "the ascend950 OpDef registers it, but V1-V3 pass no dequant scales, so what the quant kernel does "
        "is not established",
    },
)


INFERRED = Gaps(
    OP,
    "inferred",
    {
        "out_dtype": "an output whose dtype differs from the computed one (the result is cast; on the NPU ViewCopy "
        "most likely fails)"
    },
    code=NULLPTR,
)


TND_READ_PAST = Gaps(
    VAR_LENS[0],
    "refused",
    {
        "tnd_pse_short": "a TND pse (realShiftOptional) holding fewer elements than the kernel reads (the tiling "
        "checks its dimension 0 and, for the alibi form, its last two only)"
    },
    code=NULLPTR,
)
TND_UNESTABLISHED = Gaps(
    VAR_LENS[0],
    "unestablished",
    {
        "tnd_cumulative": "actualSeqQLen / actualSeqKvLen that decrease or start below 0 (the tiling clamps the "
        "lengths to 0, the kernels index with the raw values)"
    },
)
# FlashAttentionScoreV4's inputs whose maths the emulator does not have: the L0 op gets them as they are.
V4_PATHS = Gaps(
    V4,
    "not_implemented",
    {
        "dequant_scales": "dScaleQOptional / dScaleKOptional / dScaleVOptional (the FP8/HiFloat8 dequantisation)",
        "rope": "queryRopeOptional / keyRopeOptional, which V4 hands to the L0 op without the VarLen entry points' "
        "isSupportMultiInput checks (the tiling's rope rules for them are not reviewed)",
    },
)
MISSING = object()  # a parameter the entry point does not have


# An infershape / kernel-selection / tiling failure: the op_api reports it as 161001 (the L0 output is
# nullptr). On the op's prepare and on its entry points' own checks.
l0_failed = mapped(
    NULLPTR, suffix=" (FlashAttentionScore L0 failed; ViewCopy of its nullptr output returns ACLNN_ERR_PARAM_NULLPTR)"
)


def _fail(problem):
    """Raise a tiling failure given as (message, rule) by score/checks_arch35; None passes."""
    if problem is not None:
        fail(problem[1], problem[0])


# -- op_api ---------------------------------------------------------------------------------------
def _check_nulls(a):
    for name in ("query", "key", "value", "inputLayout", "softmaxMaxOut", "softmaxSumOut", "attentionOutOut"):
        if getattr(a, name) is None:
            raise OpError(NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")


def _check_formats(a, env, arch35):
    if arch35 or env.op_name == V4.name:  # the op_api skips CheckFormat on Ascend910_95; V4's never calls it
        return
    for name in (
        "query",
        "key",
        "value",
        "softmaxMaxOut",
        "softmaxSumOut",
        "attentionOutOut",
        "realShiftOptional",
        "dropMaskOptional",
        "paddingMaskOptional",
        "attenMaskOptional",
        "queryRope",
        "keyRope",
        "sinkOptional",
    ):
        tensor = getattr(a, name, None)
        if tensor is not None and tensor.format == Format.ACL_FORMAT_FRACTAL_NZ:
            raise OpError(INVALID, f"Input and output format only support [ND]: {name} is FRACTAL_NZ", rule="format.nz")


def _check_dtypes(a, env, arch35):
    """InputDtypeCheck with the V2 pseType (the release's: versions.RULES "fas.*")."""
    q, k, v = a.query.dtype, a.key.dtype, a.value.dtype
    if not q == k == v:
        raise OpError(
            INVALID,
            f"The data type of query[{q.name}], key[{k.name}], value[{v.name}] are not equal.",
            rule="dtype.qkv_equal",
        )
    if q not in FLOATS and not (arch35 and env.version.has("fas.qkv_dtype_range_on_a2a3_only")):
        raise OpError(
            INVALID, f"The data type of query/key/value is [{q.name}], should be fp16, bf16 or fp32.", rule="dtype.qkv"
        )
    pse = a.realShiftOptional
    if a.pseType in (2, 3):
        if pse is None:
            raise OpError(
                INVALID,
                f"When pseType is 2 or 3, realShiftOptional cannot be null (pseType {a.pseType})",
                rule="dtype.pse_inner_null",
            )
        if pse.dtype != DataType.ACL_FLOAT:
            raise OpError(
                INVALID,
                f"The data type {pse.dtype.name} of realShiftOptional is invalid in pse type 2 or "
                "3 mode, It must be float32",
                rule="dtype.pse_inner",
            )
        return  # InputDtypeCheck returns here: the sink's dtype is not checked
    like, what = (
        (a.attentionOutOut.dtype, "attentionOut")
        if env.version.has("fas.pse_dtype_is_out_dtype")
        else (q, "query, key and value")
    )
    if pse is not None and pse.dtype != like:
        raise OpError(
            INVALID,
            f"The data type {pse.dtype.name} of realShiftOptional is not equal to the data type {like.name} of {what}.",
            rule="dtype.pse",
        )
    sink = getattr(a, "sinkOptional", None)
    if sink is not None and sink.dtype != DataType.ACL_FLOAT:
        raise OpError(INVALID, f"The data type of sink is [{sink.dtype.name}], should be fp32.", rule="dtype.sink")


def _check_rope(a, x: _Axes):
    """isSupportMultiInput (VarLen V3/V5): the rope split's preconditions. The caller wraps its result in
    CHECK_RET(..., ACLNN_ERR_PARAM_NULLPTR), so every failure is 161001."""
    q_rope, k_rope = getattr(a, "queryRope", None), getattr(a, "keyRope", None)
    if q_rope is None and k_rope is None:
        return
    problem = _rope_problem(a, x, q_rope, k_rope)
    if problem is not None:
        raise OpError(
            NULLPTR,
            f"{problem} (isSupportMultiInput; the caller returns ACLNN_ERR_PARAM_NULLPTR)",
            rule="rope." + problem.split(":")[0],
        )


def _rope_problem(a, x, q_rope, k_rope):
    if q_rope is None or k_rope is None:
        return "one_sided: queryRope and keyRope must be given together"
    if q_rope.ndim < 3 or k_rope.ndim < 3 or q_rope.shape[2] > x.d or k_rope.shape[2] > x.d:
        return f"head_dim: the rope head dims must not exceed the query's {x.d}"
    bf16 = DataType.ACL_BF16
    if any(t.dtype != bf16 for t in (a.query, a.key, a.value, q_rope, k_rope)):
        return "dtype: query, queryRope, key, keyRope and value must be BFloat16"
    if a.sparseMode == 6:
        return "prefix: queryRope and keyRope do not support sparseMode 6"
    if _present(a.attenMaskOptional) is None:
        return "mask: queryRope and keyRope need an attenMask"
    if a.realShiftOptional is not None:
        return "pse: queryRope and keyRope need pseShift to be nullptr"
    if a.dropMaskOptional is not None:
        return "drop_mask: queryRope and keyRope need dropMask to be nullptr"
    if a.keepProb < 1:
        return "keep_prob: queryRope and keyRope need keepProb = 1"
    if x.layout != "TND":
        return "layout: queryRope and keyRope need inputLayout TND"
    if _tnd_pads(a, x):
        return "padding: queryRope and keyRope need a head dim the op_api does not pad"
    return None


def _tnd_pads(a, x: _Axes) -> bool:
    """AnalysisInput's needPad for TND (needTranspose, needReshape and needPadValue stay false there):
    D or Dv off the 16 (128 from D 196 on) alignment, or an uneven D of 64 or 80 (or 88, the source's
    HEAD_DIM_128), unless IsNeedPad drops the padding: D < 96, max kv length <= 1024 and the query
    total < 160K."""
    align = 16 if x.d < 196 or x.d == 448 else 128
    pads = x.d % align != 0 or x.dv % align != 0 or (x.d != x.dv and x.d in (64, 80, 88))
    if not pads or x.d >= 96:
        return pads
    extent = tnd.pad_extent(a.actualSeqQLenOptional, a.actualSeqKvLenOptional)
    if extent is None:
        return True
    kv_max, q_sum = extent
    return not (kv_max and q_sum and kv_max <= 1024 and q_sum < 160 * 1024)


def _refuse_v4_paths(a):
    """V4's inputs the emulator has no maths for (V4_PATHS), as the L0 op receives them. Lengths given with a
    layout other than TND are not refused: both tilings read them in their TND layout branch only (arch32
    flash_attention_score_tiling_general.cpp, arch35 _regbase.cpp AnalyzeTndLayout), and the doc's sample passes
    them with SBH."""
    scales = [t for t in "QKV" if getattr(a, f"dScale{t}Optional", None) is not None]
    if scales:
        V4_PATHS.refuse("dequant_scales", f"dScale{'/'.join(scales)} given")
    if getattr(a, "queryRopeOptional", None) is not None or getattr(a, "keyRopeOptional", None) is not None:
        V4_PATHS.refuse("rope", "queryRopeOptional or keyRopeOptional given")


def _sink(a):
    """The sink the L0 call gets: a [0]-shaped one is dropped by the op_api (V3, VarLen V5)."""
    sink = getattr(a, "sinkOptional", None)
    return None if sink is None or (sink.ndim == 1 and sink.shape[0] == 0) else sink


# -- L0: kernel selection and tiling ----------------------------------------------------------------
def _check_query_out_dtype(a, env, arch35):
    """From 9.1.0, InputOutputDtypeCheck (V2, V3) and ShapeCheck (V2) on A2/A3 only (versions.RULES)."""
    if arch35:
        return
    rule = "fas.query_dtype_is_out_dtype_on_a2a3"
    if env.op_name in (OP.name, V3.name) and env.version.has(rule) and a.query.dtype != a.attentionOutOut.dtype:
        raise OpError(
            INVALID,
            f"Input query tensor's dtype should be same with attentionOut tensor's dtype ({env.version.source(rule)})",
            rule="dtype.query_out",
        )
    rule = "fas.shape_check_on_a2a3"
    rank = len(a.inputLayout)
    if env.op_name == OP.name and env.version.has(rule) and (a.query.ndim != rank or a.key.ndim != rank):
        raise OpError(
            INVALID,
            f"FlashAttentionScore query or key Invalid layout: {a.inputLayout!r} with query {list(a.query.shape)}, "
            f"key {list(a.key.shape)} ({env.version.source(rule)})",
            rule="shape.layout_length",
        )


def _kernel_select(a):
    """The dtype combinations op_host/flash_attention_score_def.cpp registers for fp16/bf16/fp32."""
    q = a.query.dtype
    if q not in FLOATS:  # reached on Ascend950 from 9.0.0 only (versions.RULES "fas.qkv_dtype_range_on_a2a3_only")
        if q in QUANT8:
            UNESTABLISHED.refuse("quant_query", f"query {q.name}")
        fail("select.query", f"query dtype {q.name} has no FlashAttentionScore kernel")
    checks = (
        ("realShiftOptional", (q, DataType.ACL_FLOAT) if q != DataType.ACL_FLOAT else (q,)),
        ("dropMaskOptional", DROP_DTYPES),
        ("paddingMaskOptional", (q,)),
        ("attenMaskOptional", MASK_DTYPES),
    )
    for name, allowed in checks:
        tensor = getattr(a, name)
        if tensor is not None and tensor.dtype not in allowed:
            fail(
                f"select.{name}",
                f"{name} dtype {tensor.dtype.name} has no FlashAttentionScore kernel with query "
                f"{q.name}; expected {'/'.join(d.name for d in allowed)}",
            )


def _check_params(a, x: _Axes):
    """CheckParams of flash_attention_score_tiling.cpp, before the empty-input shortcut."""
    q, k, v = a.query.shape, a.key.shape, a.value.shape
    if x.layout in ("BSH", "SBH"):
        axis = 0 if x.layout == "BSH" else 1
        if q[axis] != k[axis]:
            fail("tiling.batch", f"query or key shape is invalid: query {list(q)} and key {list(k)} differ in B")
        if k[2] < v[2]:
            fail("tiling.kv_h", f"key or value shape is invalid: key H {k[2]} < value H {v[2]}")
    elif x.layout in ("BSND", "BNSD"):
        if q[0] != k[0] or q[3] != k[3]:
            fail("tiling.qk_shape", f"query or key shape is invalid: query {list(q)}, key {list(k)}")


def _check_attrs_and_layout(a, x: _Axes, arch35):
    """AnalyzeAttrs and AnalyzeLayout of FlashAttentionScoreTilingBase::GetShapeAttrsInfo."""
    keep = float(np.float32(a.keepProb))
    if keep <= 0 or keep > 1:
        fail("tiling.keep_prob", f"keepProb value must be in range of (0, 1]: got {a.keepProb}")
    if a.pseType < 0 or a.pseType >= 4:
        fail("tiling.pse_type", f"pseType value is out of range: got {a.pseType}; expected 0-3")
    out_dtype = getattr(a, "outDtype", 0)  # only V4 passes one; the arch32 tiling never reads it
    if arch35 and not 0 <= out_dtype < 2:
        fail("tiling.arch35.out_dtype", f"outDtype value is out of range: got {out_dtype}; expected 0 or 1")
    q = a.query.shape
    if x.layout == "TND":
        if getattr(a, "actualSeqQLenOptional", MISSING) is not MISSING:
            return  # the variable-length entry points: tnd.check_lengths
        fail(
            "tiling.tnd",
            TND_UNDEFINED
            if arch35
            else "inputLayout TND needs actual sequence lengths, "
            "which aclnnFlashAttentionScoreV2 cannot pass (invalid alignedS1 0)",
        )
    if x.layout in ("BSH", "SBH"):
        if q[2] % a.headNum:
            fail("tiling.h1_heads", f"h1 [{q[2]}] should be a multiple of n1Size [{a.headNum}].")
    elif a.headNum != x.query_heads:
        fail("tiling.head_num", f"head_num is [{a.headNum}], but got query N [{x.query_heads}].")
    if x.n1 < x.n2 or x.n1 % x.n2:
        fail("tiling.gqa", f"n1Size [{x.n1}] should be a multiple of n2Size [{x.n2}].")


def _check_pse(a, x: _Axes, arch35):
    pse = _present(a.realShiftOptional)
    if pse is None:
        if a.pseType != 1 and not arch35:  # the arch35 AnalyzePseOptionalInput has no such check
            fail("tiling.pse_null", f"Get PseInput is nullptr, but pseType is not default=1, now pseType={a.pseType}.")
        return
    if a.pseType in (2, 3):
        if pse.ndim not in (1, 2):
            fail(
                "tiling.pse_inner_shape",
                f"pse inner mode, unsupported pse shape {list(pse.shape)}: pseType {a.pseType} takes "
                f"FLOAT slopes [N1] or [B,N1]",
            )
        if tuple(pse.shape) not in ((x.n1,), (x.b, x.n1)):
            READ_PAST.refuse("pse_inner_size", f"slopes {list(pse.shape)}, [N1] = [{x.n1}], [B,N1] = [{x.b},{x.n1}]")
        return
    shape = pse.shape
    if pse.ndim != 4:
        fail("tiling.pse_rank", f"pse dim should be 4, but got {pse.ndim}")
    if shape[0] not in (x.b, 1):
        fail("tiling.pse_batch", f"pse batchsize should be 1 or {x.b}, but got {shape[0]}")
    rows = shape[2]
    if (
        shape[1] != x.n1
        or shape[3] != x.s2
        or rows not in (x.s1, 1, ALIBI_ROWS)
        or (rows == ALIBI_ROWS and x.s1 < ALIBI_ROWS)
    ):
        fail(
            "tiling.pse_shape",
            f"get unsupported pse shape, the shape is {list(shape)}; expected [B|1,N1,S1|1,S2] or "
            f"[B|1,N1,1024,S2] with S1 >= 1024 (N1={x.n1}, S1={x.s1}, S2={x.s2})",
        )


def _check_atten_mask(a, x: _Axes, mode):
    mask = _present(a.attenMaskOptional)
    if mask is None:
        return
    shape = tuple(mask.shape)
    compressed = mode in COMPRESSED_MASK
    if mask.ndim == 4:
        if shape not in ((1, 1, x.s1, x.s2), (x.b, 1, x.s1, x.s2), (x.b, x.n1, x.s1, x.s2)):
            fail(
                "tiling.mask_shape",
                f"get unsupported atten_mask shape, the shape is {list(shape)}. B=[{x.b}], N=[{x.n1}], "
                f"Sq=[{x.s1}], Skv=[{x.s2}], supported atten_mask shape can be [B, N, Sq, Skv], "
                "[B, 1, Sq, Skv], [1, 1, Sq, Skv] and [Sq, Skv].",
            )
    elif mask.ndim == 2:
        if shape != (x.s1, x.s2) and not compressed:
            fail(
                "tiling.mask_shape",
                f"get unsupported atten_mask shape, the shape is {list(shape)}. Sq=[{x.s1}], "
                f"Skv=[{x.s2}]; expected [Sq, Skv] for sparseMode {mode}",
            )
    else:
        fail("tiling.mask_rank", f"atten mask dim should be 2 or 4, but got {mask.ndim}")
    if compressed and shape[-2:] != COMPRESSED_MASK[mode]:
        rows, cols = COMPRESSED_MASK[mode]
        fail(
            "tiling.mask_compressed",
            f"In the {'prefix ' if mode == 6 else ''}attenmask compression, please set the "
            f"atten_mask_shape to [{rows},{cols}] (sparseMode {mode}, got {list(shape)})",
        )


def _check_drop_mask(a, x: _Axes, env, arch35):
    """The dropMask checks of the tiling; returns the (seed, offset) of a kernel-generated keep mask,
    or None when the kernel reads dropMaskOptional (or applies no dropout)."""
    drop = _present(a.dropMaskOptional)
    if arch35:
        problem, generated = dropout(drop, a.keepProb, env, _seeds(a))
        _fail(problem)
    else:
        generated = None
        if drop is None and np.float32(a.keepProb) < 1:
            env.warn(f"keepProb {a.keepProb} without dropMaskOptional: the kernel applies no dropout")
    if drop is not None:
        need = math.ceil(x.b * x.n1 * x.s1 * x.s2 / 8)
        if drop.numel < need:
            fail(
                "tiling.drop_size",
                f"Input dropMask shapeSize is invalid, it should not be less than {need}, but got {drop.numel}",
            )
    return generated


def _seeds(a):
    """The (seed, offset) the L0 op gets: V4's attributes, (0, 0) from V1-V3."""
    return getattr(a, "seed", V2_SEED_OFFSET[0]), getattr(a, "offset", V2_SEED_OFFSET[1])


def _band_check(pre, nxt, x: _Axes):
    """SparseBandModeCheck on left-up tokens: (ok, rows may be fully masked)."""
    invalid = pre < x.s1 - x.s2 or nxt < 0
    if pre >= 0 and nxt >= 0:
        return True, invalid and not (pre >= x.s1 and nxt >= x.s2)
    if pre < 0 and nxt < 0:
        return False, False
    if pre < 0:
        return nxt >= -pre and -pre < x.s2, invalid
    return -nxt <= pre and -nxt < x.s1, invalid


def _sparse_info(a, x: _Axes, mode):
    """GetSparseInfo: (kernel sparse mode, causal?, invalid-line mode forced?). Runs only with a mask."""
    if _present(a.attenMaskOptional) is None:
        return 0, False, False
    pre, nxt = a.preTokens, a.nextTokens
    if mode == 0:
        if pre >= x.s1 and nxt == 0:
            return 0, True, False
        if pre >= x.s1 and nxt >= x.s2:
            return 0, False, False
        ok, invalid = _band_check(pre, nxt, x)
        if not ok:
            fail(
                "tiling.tokens",
                f"PreTokens[{pre}] and nextTokens[{nxt}] config error with S1[{x.s1}] S2[{x.s2}], "
                "there is no valid data block.",
            )
        return 0, False, invalid
    if mode > 6:
        fail("tiling.sparse_mode", f"Not support sparse mode of {mode}.")
    if mode < 0:  # no branch of the tiling takes it: the mask applies as given, like allMask
        return 1, False, False
    if mode == 2:
        return 2, True, False
    if mode == 3:
        return 3, x.s1 == x.s2, x.s1 > x.s2
    if mode == 4:
        shift = x.s1 - x.s2
        ok, invalid = _band_check(pre + shift, nxt - shift, x)
        if not ok:
            fail(
                "tiling.tokens",
                f"PreTokens[{pre}] and nextTokens[{nxt}] config error with S1[{x.s1}] S2[{x.s2}] "
                "(band mode, right-down anchored), there is no valid data block.",
            )
        return 4, False, invalid
    if mode in (5, 6):
        return mode, False, _check_prefix(a, x, mode)
    return 1, False, False


def _check_prefix(a, x: _Axes, mode) -> bool:
    """GetPrefixNList; True when a row may be fully masked (S1 > S2 and a prefix of 0)."""
    prefix, low = a.prefixOptional, max(x.s2 - x.s1, 0)
    reason = None
    if prefix is None:
        reason = "prefixN is null pointer while sparse mode is prefix"
    elif len(prefix) != x.b:
        reason = f"prefixN is invalid, it should be the same size as bSize[{x.b}], but it is {len(prefix)}"
    else:
        bad = [i for i, n in enumerate(prefix) if n < low or n > x.s2]
        if bad:
            reason = f"batch[{bad[0]}] prefixN={prefix[bad[0]]} is invalid, should be in range of [{low}, {x.s2}]"
    if reason is not None:
        if mode == 6:
            fail("tiling.prefix", reason)
        return False
    mask = a.attenMaskOptional
    if mode == 5 and x.b != 1 and not (mask.ndim == 4 and mask.shape[0] == x.b and mask.shape[1] in (1, x.n1)):
        fail("tiling.prefix_mask", "Prefix mode get invalid atten_mask shape, should be [BNSS] or [B1SS].")
    return x.s1 > x.s2 and 0 in prefix


def _check_pse_alibi(a, x: _Axes, causal, arch35):
    """SetPseAlibiParams of the template that runs (S2 > 1024 templates need a causal mask; the arch35
    Basic template returns before any check for pseType 2/3)."""
    pse = _present(a.realShiftOptional)
    if pse is None:
        return
    if a.pseType in (2, 3):
        if x.s1 != x.s2 and not arch35:
            fail(
                "tiling.pse_inner_s",
                f"INNER Pse alibi is supported only when s1Size and s2Size are equal (S1={x.s1}, S2={x.s2}).",
            )
        return
    if pse.shape[2] == ALIBI_ROWS and x.s1 > ALIBI_ROWS:
        if x.s1 != x.s2:
            fail(
                "tiling.pse_alibi_s",
                f"Pse alibi only support same S1 S2 when S1 lager than 1024 (S1={x.s1}, S2={x.s2})",
            )
        if not causal:
            fail(
                "tiling.pse_alibi_causal",
                "Pse alibi only support causal sparse type: an alibi-compressed pse needs attenMask "
                "with sparseMode 2, 3, or 0 with preTokens >= S1 and nextTokens == 0",
            )


def _check_outputs(a, x: _Axes, env):
    """The ViewCopy of each L0 output into the user's tensor (shape must match; dtype inferred)."""
    for name, (shape, dtype) in _results(a, x).items():
        tensor = getattr(a, name)
        if tuple(tensor.shape) != tuple(shape):
            raise OpError(
                NULLPTR,
                f"{name} shape {list(tensor.shape)} differs from the computed {list(shape)}; "
                "ViewCopy of the result fails",
                rule=f"out.{name}_shape",
            )
        if tensor.dtype != dtype:
            INFERRED.warn(env, "out_dtype", f"{name} is {tensor.dtype.name}, computed {dtype.name}")


# -- the other entry points' own op_api (op_api/aclnn_flash_attention_score.cpp) -------------------------
@V1.check
@l0_failed
def _score_v1(a, env):
    """aclnnFlashAttentionScoreGetWorkspaceSize: V2's path with PSE_TYPE_V1 and no start indices. It also
    checks L0's outputs [0], [1] and [3] for nullptr: 161001, the code V2's ViewCopy of a nullptr returns."""
    tnd.fixed_attributes(a)


def _tnd_only(a, env):
    """aclnnFlashAttentionVarLenScore{,V2..V5}GetWorkspaceSize: CheckFaParam, the empty-output shortcut,
    then any layout but "TND" (strcmp, case-sensitive) returns ACLNN_ERR_PARAM_INVALID."""
    tnd.fixed_attributes(a)
    _check_nulls(a)
    if a.softmaxMaxOut.is_empty and a.softmaxSumOut.is_empty and a.attentionOutOut.is_empty:
        return
    if a.inputLayout != "TND":
        raise OpError(INVALID, f"Layout {a.inputLayout} is not TND, invalid shape, please check", rule="layout.tnd")


for _entry in VAR_LENS:
    _entry.check(_tnd_only)


@OP.prepare
@l0_failed
def prepare(a, env):
    _check_nulls(a)
    if a.softmaxMaxOut.is_empty and a.softmaxSumOut.is_empty and a.attentionOutOut.is_empty:
        return Launch.nothing()
    arch35 = on_arch35(env)
    _check_formats(a, env, arch35)
    _check_dtypes(a, env, arch35)
    _check_query_out_dtype(a, env, arch35)
    x = _analyse_input(a, env.version)
    _check_rope(a, x)
    _refuse_v4_paths(a)
    sink = _sink(a)
    _kernel_select(a)
    _check_params(a, x)
    # the empty-input tiling: zeros out, 100 MiB reserved
    if empty_inputs(a) if arch35 else a.query.is_empty or a.key.is_empty:
        _check_outputs(a, x, env)
        return Launch(EMPTY_WORKSPACE, _zero_outputs(a))
    _check_attrs_and_layout(a, x, arch35)
    if x.layout == "TND":
        return _prepare_tnd(a, x, env, arch35, sink)
    _check_pse(a, x, arch35)
    mode = a.sparseMode
    _check_atten_mask(a, x, mode)
    generated_dropout = _check_drop_mask(a, x, env, arch35)
    starts = (a.qStartIdxOptional, a.kvStartIdxOptional)
    if arch35:
        _fail(sparse_mode_error(a))
    kernel_mode, causal, invalid = _sparse_info(a, x, mode)
    if arch35:
        starts, problem = start_indices(a)
        _fail(problem)
    _check_pse_alibi(a, x, causal, arch35)
    sink = _tiling_sink(sink, x, env, arch35)
    _check_outputs(a, x, env)
    invalid_line = invalid or _invalid_line(a, env)
    refuse_value_rows(UNESTABLISHED, a)
    if x.layout in ("BSH", "SBH") and a.key.shape[2] % x.d:
        UNESTABLISHED.refuse("key_hidden", f"key {list(a.key.shape)}, D {x.d}")
    run = _launch(a, x, kernel_mode, invalid_line, generated_dropout, starts, arch35, sink)
    return Launch(WORKSPACE_RESERVE, run)


def _invalid_line(a, env) -> bool:
    """innerPrecise as the tiling reads it (its low byte; 2 is the invalid-line mode)."""
    if a.innerPrecise & 0xFF not in (0, 1, INVALID_LINE):
        env.warn(f"innerPrecise {a.innerPrecise} has no effect: the tiling reads its low byte and acts only on 2")
    return a.innerPrecise & 0xFF == INVALID_LINE


def _tiling_sink(sink, x: _Axes, env, arch35):
    """The sink the kernel reads: checked by the arch32 tiling; on Ascend910_95 nothing reads it."""
    if sink is None:
        return None
    if arch35:
        env.warn(SINK_IGNORED)
        return None
    _fail(tnd.check_sink(sink, x.n1))
    return sink


def _prepare_tnd(a, x: _Axes, env, arch35, sink):
    """The variable-length path (VarLen V1-V5): the TND tiling's checks in its order (GetShapeAttrsInfo's
    lengths, pse, attenMask, dropMask and sink, then DoOpTiling's sparse rules and SetPseAlibiParams),
    then the per-batch kernels."""
    batches, problem = tnd.check_lengths(a, a.key)
    _fail(problem)
    if not batches.monotone:
        TND_UNESTABLISHED.refuse("tnd_cumulative", f"{list(batches.cu_q)}, {list(batches.cu_kv)}")
    pse = _present(a.realShiftOptional)
    form = None
    if pse is None and a.pseType != 1 and not arch35:
        fail("tiling.pse_null", f"Get PseInput is nullptr, but pseType is not default=1, now pseType={a.pseType}.")
    if pse is not None:
        form, problem = tnd.forward_pse(a, pse, batches, x.n1)
        _fail(problem)
    mode, mask = a.sparseMode, _present(a.attenMaskOptional)
    if mask is not None:
        _fail(tnd.check_mask(mask, batches, COMPRESSED_MASK.get(mode), x.n1))
    drop, generated = _present(a.dropMaskOptional), None
    if arch35:
        problem, generated = dropout(drop, a.keepProb, env, _seeds(a))
        _fail(problem)
    elif drop is None and np.float32(a.keepProb) < 1:
        env.warn(f"keepProb {a.keepProb} without dropMaskOptional: the kernel applies no dropout")
    if drop is not None and drop.numel < tnd.drop_mask_bytes(batches, x.n1):
        need = tnd.drop_mask_bytes(batches, x.n1)
        fail(
            "tiling.drop_size",
            f"Input dropMask shapeSize is invalid, it should not be less than {need}, but got {drop.numel}",
        )
    sink = _tiling_sink(sink, x, env, arch35)
    if mask is not None:
        _fail(tnd.check_sparse(a, batches, mode))
        _fail(tnd.check_tokens(a, batches, mode))
    elif arch35:
        _fail(tnd.sparse_mode_supported(mode))
    starts = (a.qStartIdxOptional, a.kvStartIdxOptional)
    if arch35:  # DoOpTiling: SetQKVStartIdx, then SetPseAlibiParamsRegbase
        starts, problem = start_indices(a)
        _fail(problem)
    if form is not None:
        stored = (starts[0][0], starts[1][0]) if arch35 else None
        form, problem = tnd.forward_pse_alibi(a, pse, form, batches, mode, mask is not None, stored)
        _fail(problem)
        _refuse_short_pse(pse, form, batches)
    _check_outputs(a, x, env)
    layout = getattr(a, "softmaxOutLayout", "") or ""
    refuse_value_rows(UNESTABLISHED, a)
    run = _launch_tnd(
        a,
        batches,
        mode if mask is not None else 0,
        _invalid_line(a, env),
        sink,
        layout,
        arch35,
        form,
        generated,
        starts,
    )
    return Launch(WORKSPACE_RESERVE, run)


def _refuse_short_pse(pse, form, batches):
    """Slopes other than [N1] / [B, N1] (as the dense path), or a packed pse with fewer elements than
    the kernel reads (its tiling checks dimension 0 only)."""
    if form.form == "slopes":
        if tuple(pse.shape) not in ((form.heads,), (batches.count, form.heads)):
            READ_PAST.refuse(
                "pse_inner_size",
                f"slopes {list(pse.shape)}, [N1] = [{form.heads}], [B,N1] = [{batches.count},{form.heads}]",
            )
    elif pse.numel < form.elements(batches.q, batches.kv):
        TND_READ_PAST.refuse(
            "tnd_pse_short", f"pse {list(pse.shape)}, the kernel reads {form.elements(batches.q, batches.kv)}"
        )
