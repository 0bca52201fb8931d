"""aclnnFlashAttentionScoreGradV2 (attention/flash_attention_score_grad, CANN 8.5).

Validation follows the source (reference §1A), not the doc: the op_api checks return 161001 (null)
or 161002 (headNum, ranks, head dims); everything infershape, kernel selection and tiling reject
surfaces as 161001, because the L2 code maps the L0 wrapper's nullptr to ACLNN_ERR_PARAM_NULLPTR.
dtype errors are therefore 161001 although the doc says 161002 (docs/divergences/flash_attention_score_grad.md).

Ascend910_95 runs the same op_api (no chip branch in aclnn_flash_attention_score_grad.cpp) and
then the arch35 tiling (TilingFlashAttentionGradScore picks it by SocVersion): the differences the
V2 interface can reach are marked ARCH35 below (_check_shape_attrs_arch35 follows the regbase order).
"""

import math

import numpy as np

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.dropout import INTERLEAVE_ORDER, packed_keep_mask
from aclnn_emu.kernels.flash_attention.flash_attention_score_grad import flash_attention_score_grad
from aclnn_emu.kernels.flash_attention.params import FaParams
from ..gaps import Gaps
from ..generated import attr_int32
from ..signature import Double, Int64, IntArrayIn, Launch, Op, OpError, String, TensorIn, TensorOut

NULLPTR, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID
FLOATS = (DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_FLOAT)
QUANT8 = (DataType.ACL_HIFLOAT8, DataType.ACL_FLOAT8_E5M2, DataType.ACL_FLOAT8_E4M3FN)  # ARCH35's OpDef adds them
MASK_DTYPES = (DataType.ACL_BOOL, DataType.ACL_UINT8)
INFER_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
FLOAT = (DataType.ACL_FLOAT,)

OP = Op(
    "FlashAttentionScoreGradV2",
    "aclnn_flash_attention_score_grad.h",
    [
        TensorIn("query", doc="Q of the forward pass, laid out as inputLayout says", dtypes=FLOATS),
        TensorIn("keyIn", doc="K of the forward pass", dtypes=FLOATS),
        TensorIn("value", doc="V of the forward pass", dtypes=FLOATS),
        TensorIn("dy", doc="gradient of the forward output (dL/dattentionOut), shaped like query", dtypes=FLOATS),
        TensorIn(
            "pseShiftOptional",
            optional=True,
            dtypes=FLOATS,
            doc="position encoding added to the scores (pseType 1), or ALiBi slopes (pseType 2/3)",
        ),
        TensorIn(
            "dropMaskOptional",
            optional=True,
            dtypes=(DataType.ACL_UINT8,),
            doc="dropout keep-bits, one bit per score element, used when keepProb < 1",
        ),
        TensorIn("paddingMaskOptional", optional=True, doc="reserved: pass None"),
        TensorIn(
            "attenMaskOptional",
            optional=True,
            dtypes=MASK_DTYPES,
            doc="attention mask, 1 = masked out (shape by sparseMode)",
        ),
        TensorIn(
            "softmaxMaxOptional", optional=True, dtypes=FLOAT, doc="the forward's per-row score maximum [B,N,S1,8]"
        ),
        TensorIn("softmaxSumOptional", optional=True, dtypes=FLOAT, doc="the forward's per-row exp sum [B,N,S1,8]"),
        TensorIn("softmaxInOptional", optional=True, doc="reserved: pass None"),
        TensorIn(
            "attentionInOptional",
            optional=True,
            dtypes=FLOATS,
            doc="the forward's output, shaped like query (required despite its name)",
        ),
        IntArrayIn("prefixOptional", optional=True, doc="per-batch prefix length N for sparseMode 5/6"),
        IntArrayIn("qStartIdxOptional", optional=True, doc="first query position of the ALiBi pse (pseType 2/3)"),
        IntArrayIn("kvStartIdxOptional", optional=True, doc="first key position of the ALiBi pse (pseType 2/3)"),
        Double("scaleValue", doc="scale of Q·Kᵀ, usually 1/sqrt(D)"),
        Double("keepProb", default=1.0, doc="dropout keep probability in (0, 1]"),  # defaults: the doc sample's
        Int64("preTokens", doc="sliding window: keys this many positions before a query are kept"),
        Int64("nextTokens", doc="sliding window: keys this many positions after a query are kept"),
        Int64("headNum", doc="number of query heads N1"),
        String("inputLayout", values=INFER_LAYOUTS, doc="layout of query/keyIn/value/dy"),
        Int64("innerPrecise", default=0, doc="precision mode, 0 = high precision (the only one emulated)"),
        Int64(
            "sparseMode",
            default=0,
            doc="how attenMaskOptional and the token window select scores (0 defaultMask, "
            "1 allMask, 2-4 compressed causal/band masks, 5-6 prefix, 7-8 varlen)",
        ),
        Int64(
            "pseType",
            default=1,
            doc="1: S = (QKᵀ + pse)·scale; 0: S = QKᵀ·scale + pse; 2/3: ALiBi from slopes "
            "(-slope·|dist|, 3: sqrt of it)",
        ),
        TensorOut("dqOut", like="query", doc="dL/dquery, shaped and typed like query"),
        TensorOut("dkOut", like="keyIn", doc="dL/dkeyIn, shaped and typed like keyIn"),
        TensorOut("dvOut", like="value", doc="dL/dvalue, shaped and typed like value"),
        TensorOut(
            "dpseOut", optional=True, like="pseShiftOptional", doc="dL/dpseShift (when pseShiftOptional is given)"
        ),
    ],
)

SOFTMAX_LANES = 8
COMPRESSED_MASK = {2: (2048, 2048), 3: (2048, 2048), 4: (2048, 2048), 6: (3072, 2048)}
ALIBI_ROWS = 1024
SYSTEM_WORKSPACE = 16 << 20
INT32_MAX = 2147483647
ARCH35 = "Ascend910_95"  # the family whose tiling is flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp
V2_SEED, V2_OFFSET = 0, 0  # what aclnnFlashAttentionScoreGradV2 passes to l0op::FlashAttentionScoreGrad
INFERRED = Gaps(
    OP,
    "inferred",
    {
        "out_dtype": "an output whose dtype differs from query (the result is cast; on the NPU ViewCopy most likely "
        "fails)"
    },
    code=NULLPTR,
)
# Calls the Ascend910_95 (ARCH35) tiling accepts whose kernel behaviour the source does not settle.
UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "quant_query": "Ascend910_95: a HIFLOAT8/FLOAT8 query (registered; V2 passes no dequant scales and "
        "ProcessQuantInfo either runs the quantised kernel without them or, for FP8, returns no defined "
        "status)",
        "keep_prob": "Ascend910_95: keepProb <= 0 (the tiling has no range check; the kernel's 1/keepProb is not "
        "established)",
        "grad_shape": "Ascend910_95: dy, attentionInOptional or value shaped unlike query / keyIn (no shape check in the "
        "tiling; how the kernel indexes them is not established)",
        "mask_window": "Ascend910_95: an attenMask covering S1 x S2 in elements but not in rows and columns (the regbase "
        "CheckAttenMaskShape accepts it; how its kernel reads it is not established)",
    },
)


def _names(dtypes) -> str:
    return "/".join(d.name for d in dtypes)


def _present(tensor):
    """Scalar (0-dim) optional tensors count as absent (ContiguousTensorWithCheck)."""
    return tensor if tensor is not None and tensor.ndim > 0 else None


def _tiling_error(message: str, rule: str):
    """A tiling / infershape / kernel-selection failure: the L2 code reports it as 161001."""
    return OpError(
        NULLPTR, f"{message} (FAG tiling failed; the op_api reports it as ACLNN_ERR_PARAM_NULLPTR)", rule=rule
    )


class _Shape:
    """B, N1, N2, S1, S2, D of the call, read the way GetInputShapeInfo and the tiling read them."""

    def __init__(self, a, layout):
        q, k, v = a.query.shape, a.keyIn.shape, a.value.shape
        self.layout = layout
        if layout in ("BSH", "SBH"):
            self.d = q[2] // a.headNum
            if self.d == 0:
                raise OpError(
                    INVALID,
                    f"The dimension of D is zero: query H {q[2]} // headNum {a.headNum} is 0; "
                    "query H must be at least headNum",
                    rule="shape.d_zero",
                )
            self.n1, self.n2 = a.headNum, k[2] // self.d
            if self.n2 == 0:  # CANN divides by N2 here (SIGFPE); reject as a head-dim mismatch instead
                raise OpError(
                    INVALID, f"qD and kD should be same, but got qD={self.d} and key H {k[2]} < qD", rule="shape.qd_kd"
                )
            self.kd, self.vd = k[2] // self.n2, v[2] // self.n2
            self.b, self.s1, self.s2 = (q[0], q[1], k[1]) if layout == "BSH" else (q[1], q[0], k[0])
        elif layout == "TND":
            self.d, self.n1, self.n2, self.kd, self.vd = q[2], q[1], k[1], k[2], v[2]
        elif len(q) > 3:
            self.d, self.kd, self.vd = q[3], k[3], v[3]
            bnsd = layout == "BNSD"
            self.b, self.n1, self.s1 = q[0], q[1 if bnsd else 2], q[2 if bnsd else 1]
            self.n2, self.s2 = k[1 if bnsd else 2], k[2 if bnsd else 1]
        else:
            raise OpError(
                INVALID,
                f"The dimension of the tensor whose input is BNSD/BSND is less than 4: query has "
                f"{len(q)} dims with inputLayout {layout!r}; expected 4 dims, or layout BSH/SBH",
                rule="shape.rank4",
            )
        if self.d != self.kd:
            raise OpError(INVALID, f"qD and kD should be same, but got qD={self.d} kD={self.kd}", rule="shape.qd_kd")
        if self.d < self.vd:
            raise OpError(
                INVALID,
                f"The headDim of value should be smaller than headDim of key: got vD={self.vd}, kD={self.kd}",
                rule="shape.vd",
            )


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
    for name in ("query", "keyIn", "value", "dy", "attentionInOptional", "dqOut", "dkOut", "dvOut"):
        tensor = getattr(a, name)
        if tensor.ndim < 3:
            raise OpError(
                INVALID,
                f"The input or output of FAG does not support tensors with dim less than 3: "
                f"{name} has shape {list(tensor.shape)}",
                rule="rank.min3",
            )


def _kernel_select(a, arch35: bool):
    """The dtype combinations op_host/flash_attention_score_grad_def.cpp registers (ARCH35: QUANT8 too)."""
    dtype = a.query.dtype
    if dtype not in FLOATS + (QUANT8 if arch35 else ()):
        raise _tiling_error(f"query dtype {dtype.name} has no FAG kernel; expected {_names(FLOATS)}", "dtype.query")
    for name in ("keyIn", "value", "dy"):
        got = getattr(a, name).dtype
        if got != dtype:
            raise _tiling_error(
                f"{name} dtype {got.name} has no FAG kernel with query {dtype.name}; "
                f"expected {dtype.name} (query, keyIn, value, dy share one dtype)",
                f"dtype.{name}",
            )
    mask = _present(a.attenMaskOptional)
    if mask is not None and mask.dtype not in MASK_DTYPES:
        raise _tiling_error(
            f"invalid attenMask dtype {mask.dtype.name}, only support BOOL or UINT8", "dtype.atten_mask"
        )
    drop = _present(a.dropMaskOptional)
    if drop is not None and drop.dtype != DataType.ACL_UINT8:
        raise _tiling_error(
            f"dropMask dtype {drop.dtype.name} has no FAG kernel; only support UINT8", "dtype.drop_mask"
        )
    pse = _present(a.pseShiftOptional)
    if pse is not None and pse.dtype not in (dtype, DataType.ACL_FLOAT):
        raise _tiling_error(
            f"pseShift dtype {pse.dtype.name} has no FAG kernel; expected {dtype.name} or FLOAT", "dtype.pse"
        )


def _check_base_input(a, s: _Shape):
    """CheckParams / CheckBaseInput of flash_attention_score_grad_tiling.cpp."""
    for name in ("softmaxMaxOptional", "softmaxSumOptional"):
        if _present(getattr(a, name)) is None:
            raise _tiling_error(
                f"fail to get shape or attr from context: {name} is null; FAG needs the forward's "
                "softmaxMax and softmaxSum ([B,N1,S1,8] FLOAT)",
                f"tiling.{name}_null",
            )
    q, k, v = a.query.shape, a.keyIn.shape, a.value.shape
    if s.layout in ("BSH", "SBH"):
        axis = 0 if s.layout == "BSH" else 1
        if q[axis] != k[axis]:
            raise _tiling_error(
                f"query or key shape is invalid: query {list(q)}, key {list(k)} differ in B", "tiling.batch"
            )
        if q[2] % a.headNum:
            raise _tiling_error(f"h1 [{q[2]}] should be a multiple of headNum [{a.headNum}].", "tiling.h1_heads")
        if k[2] < v[2]:
            raise _tiling_error(f"key H {k[2]} is smaller than value H {v[2]}", "tiling.kv_h")
    elif len(s.layout) == 4:
        if q[0] != k[0] or q[3] != k[3]:
            raise _tiling_error(f"query or key shape is invalid: query {list(q)}, key {list(k)}", "tiling.qk_shape")
        n1 = q[1] if s.layout[1] == "N" else q[2]  # the letter, not the layout's name, picks the axis
        if a.headNum != n1:
            raise _tiling_error(f"headNum is [{a.headNum}], but got n1 [{n1}].", "tiling.head_num")
        if k[3] < v[3]:
            raise _tiling_error(f"key D {k[3]} is smaller than value D {v[3]}", "tiling.kv_d")
    else:
        raise _tiling_error(f"invalid input_layout[{s.layout}].", "tiling.layout")


def _check_shape_attrs(a, s: _Shape, env):
    """FlashAttentionScoreGradTilingS1s2Bn2::GetShapeAttrsInfo (runs first for every call)."""
    if env.soc == ARCH35:
        return _check_shape_attrs_arch35(a, s, env)
    if s.layout == "TND":
        raise _tiling_error(
            "actualSeqQlenTensor or actualSeqKvlenTensor is nullptr: inputLayout TND needs "
            "actual sequence lengths, which aclnnFlashAttentionScoreGradV2 cannot pass",
            "tiling.tnd",
        )
    if s.layout not in ("BSH", "SBH", "BSND", "BNSD"):
        raise _tiling_error(
            f"no FAG tiling template accepts inputLayout {s.layout!r} (upper-case BSH/SBH/BSND/BNSD only)",
            "tiling.layout_case",
        )
    smax, ssum = a.softmaxMaxOptional, a.softmaxSumOptional
    if smax.dtype != DataType.ACL_FLOAT or ssum.dtype != DataType.ACL_FLOAT:
        raise _tiling_error(
            f"softmaxMaxType should be DT_FLOAT and same with softmaxSumType: got {smax.dtype.name}/{ssum.dtype.name}",
            "tiling.softmax_dtype",
        )
    if a.attentionInOptional.dtype != a.query.dtype:
        raise _tiling_error(
            f"invalid attentionIn dtype {a.attentionInOptional.dtype.name}, should be same with "
            f"query's dtype {a.query.dtype.name}",
            "tiling.attention_in_dtype",
        )
    if 0 in (s.b, s.n1, s.s1, s.d):
        raise _tiling_error(f"input shape error, got 0 in bnsd: b={s.b} n1={s.n1} s1={s.s1} d={s.d}", "tiling.zero")
    _check_softmax_shapes(a, s)
    q, o = a.query.shape, a.attentionInOptional.shape
    if len(o) != len(q) or o[:-1] != q[:-1]:
        raise _tiling_error(
            f"attentionIn shape {list(o)} must match query {list(q)} except the last dim", "tiling.attention_in_shape"
        )
    for first, second, label in (
        (a.query, a.dy, "queryShape and dyShape"),
        (a.keyIn, a.value, "keyShape and valueShape"),
    ):
        x, y = first.shape, second.shape
        if len(x) != len(y) or x[:-1] != y[:-1] or y[-1] > x[-1]:
            raise _tiling_error(f"FAG different shape{label}: {list(x)} vs {list(y)}", "tiling.same_shape")
    keep = float(np.float32(a.keepProb))
    if keep <= 0 or keep > 1:
        raise _tiling_error(
            f"keepProb is illegal: got {a.keepProb} (as float32 {keep}); expected (0, 1]", "tiling.keep_prob"
        )
    if keep < 1:
        _check_drop_mask(a, s, keep)
    mode = attr_int32(a.sparseMode) & 0xFFFFFFFF
    if mode > 8:
        raise _tiling_error(
            f"FAG sparseMode {mode} is invalid (got {a.sparseMode}); expected 0-8", "tiling.sparse_mode"
        )
    if mode in (7, 8):
        raise _tiling_error(f"layout {s.layout} not support sparsemode {mode} (7 and 8 need TND)", "tiling.sparse_tnd")
    if a.pseType < 0 or a.pseType >= 4:
        raise _tiling_error(f"pseType is invalid: got {a.pseType}; expected 0-3", "tiling.pse_type")
    _check_tokens(a, s, mode)
    _check_atten_mask_info(a, s)
    if mode == 6 and _present(a.attenMaskOptional) is not None:
        _check_prefix(a, s)
    _check_pse(a, s, (a.preTokens, a.nextTokens))
    _check_atten_mask_shape(a, s, mode)
    _check_pad_tokens(a, s, mode)
    return mode


def _check_shape_attrs_arch35(a, s: _Shape, env):
    """ARCH35: ..._regbase.cpp GetShapeAttrsInfo and ProcessOptionalInput, in their order. Every
    failure is 161001, as on A2/A3; what differs is what they accept (docs/divergences)."""
    # kernel selection: the ascend910_95 OpDef registers FLOAT softmax buffers and attentionIn of the query's dtype
    # (FLOAT16 or BF16 with an 8-bit query)
    smax, ssum, out = a.softmaxMaxOptional, a.softmaxSumOptional, a.attentionInOptional
    outs = (DataType.ACL_FLOAT16, DataType.ACL_BF16) if a.query.dtype in QUANT8 else (a.query.dtype,)
    if smax.dtype != DataType.ACL_FLOAT or ssum.dtype != DataType.ACL_FLOAT or out.dtype not in outs:
        raise _tiling_error(
            f"softmaxMax/softmaxSum/attentionIn dtypes {smax.dtype.name}/{ssum.dtype.name}/"
            f"{out.dtype.name} have no FAG kernel; expected FLOAT/FLOAT/{_names(outs)}",
            "dtype.softmax_attention_in",
        )
    if s.layout == "TND":
        raise _tiling_error(
            "actualSeqQlenTensor or actualSeqKvlenTensor is nullptr: inputLayout TND needs "
            "actual sequence lengths, which aclnnFlashAttentionScoreGradV2 cannot pass",
            "tiling.tnd",
        )
    keep = float(np.float32(a.keepProb))
    _check_drop_mask_arch35(a, s, keep, env)
    mode = attr_int32(a.sparseMode) & 0xFFFFFFFF
    if mode > 6:  # CheckSparseModeValue
        raise _tiling_error(
            f"Not support sparse mode {mode} (got {a.sparseMode}); expected 0-6 with layout {s.layout}",
            "tiling.sparse_mode",
        )
    _check_atten_mask_info(a, s)
    tokens = _arch35_tokens(a, s, mode)
    if a.pseType < 0 or a.pseType >= 4:
        raise _tiling_error(f"FAG pseType {a.pseType} is invalid; expected 0-3", "tiling.pse_type")
    if _present(a.pseShiftOptional) is not None:
        _check_pse(a, s, tokens)
    if mode == 6:
        _check_prefix(a, s)
    _check_atten_mask_shape(a, s, mode, arch35=True)
    if 0 in (s.b, s.n1, s.s1, s.d):
        raise _tiling_error(f"input shape error, got 0 in bnsd: b={s.b} n1={s.n1} s1={s.s1} d={s.d}", "tiling.zero")
    _check_softmax_shapes(a, s)
    if a.attentionInOptional.ndim != a.query.ndim:
        raise _tiling_error(
            f"The dimnum of attentionIn {a.attentionInOptional.ndim} should be equal to query {a.query.ndim}",
            "tiling.attention_in_rank",
        )
    _refuse_unestablished_arch35(a, keep)
    return mode


def _arch35_tokens(a, s, mode):
    """ARCH35 ProcessTokensInfo: the tokens as int64, corrected per mode, reset without a mask, and the
    pad-scene check of modes 0 and 4. Returns the corrected (preTokens, nextTokens)."""
    pre, nxt = a.preTokens, a.nextTokens
    if mode in (2, 3):
        pre, nxt = INT32_MAX, 0
    if mode in (3, 4):
        pre, nxt = pre + s.s1 - s.s2, nxt - s.s1 + s.s2
    if mode == 1 or _present(a.attenMaskOptional) is None:
        pre, nxt = INT32_MAX, INT32_MAX
    if mode in (0, 4) and (-pre > s.s2 or -nxt > s.s1 or _wrap64(pre + nxt) < 0):
        raise _tiling_error(
            f"pre_token and next_token is invalid in the pad scene, got s1 {s.s1}, s2 {s.s2}, "
            f"pre_token {pre}, next_token {nxt}",
            "tiling.pad_tokens",
        )
    return pre, nxt


def _wrap64(value: int) -> int:
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _refuse_unestablished_arch35(a, keep):
    """Calls the ARCH35 tiling accepts but whose kernel behaviour the source does not settle."""
    if a.query.dtype in QUANT8:
        UNESTABLISHED.refuse("quant_query", f"query dtype {a.query.dtype.name}")
    if keep <= 0:
        UNESTABLISHED.refuse("keep_prob", f"keepProb {keep:g}")
    for name, tensor, like in (
        ("dy", a.dy, a.query),
        ("attentionInOptional", a.attentionInOptional, a.query),
        ("value", a.value, a.keyIn),
    ):
        if tuple(tensor.shape[:-1]) != tuple(like.shape[:-1]) or tensor.shape[-1] > like.shape[-1]:
            UNESTABLISHED.refuse("grad_shape", f"{name} shape {list(tensor.shape)} against {list(like.shape)}")


def _check_drop_mask(a, s, keep):
    drop = _present(a.dropMaskOptional)
    if drop is None:
        raise _tiling_error(f"FAG keepProb [{keep:f}], dropMask can not be nullptr", "tiling.drop_null")
    if drop.dtype != DataType.ACL_UINT8:
        raise _tiling_error(f"dropMask dtype {drop.dtype.name}: only support uint8", "tiling.drop_dtype")
    need = math.ceil(s.b * s.n1 * s.s1 * s.s2 / 8)
    if drop.numel < need:
        raise _tiling_error(
            f"FAG Input dropMask shapeSize is invalid, it should not be less than {need}: got "
            f"{drop.numel} bytes for B*N1*S1*S2 = {s.b * s.n1 * s.s1 * s.s2} bits",
            "tiling.drop_size",
        )


def _check_softmax_shapes(a, s):
    """CheckSoftmaxMaxShape / CheckSoftmaxSumShape (the same in arch32 and arch35)."""
    lanes = [s.b, a.headNum, s.s1, SOFTMAX_LANES]
    for name, tensor in (("softmaxMax", a.softmaxMaxOptional), ("softmaxSum", a.softmaxSumOptional)):
        if list(tensor.shape) != lanes:
            raise _tiling_error(
                f"The shape of {name} is invalid, got {tuple(tensor.shape)}, should be (b,n1,s1,8) = {tuple(lanes)}",
                f"tiling.{name}_shape",
            )


def _check_drop_mask_arch35(a, s, keep, env):
    """ARCH35 ProcessDropoutInfo (regbase tiling): a dropMask with keepProb 1 is an error; with
    keepProb < 1 and no dropMask the kernel generates the keep-mask itself (dropMaskOuter false)."""
    drop = _present(a.dropMaskOptional)
    if drop is None:
        if keep < 1:
            env.warn(
                f"portability: keepProb {keep:g} with no dropMask: on {ARCH35} the kernel generates the keep-mask "
                f"(Philox-4x32-7 of dropmask.h, seed {V2_SEED}, offset {V2_OFFSET}, as the V2 interface passes "
                f"them); the emulator follows dropmask.h but infers {INTERLEAVE_ORDER}, so the mask may differ "
                "bit for bit from the device's (its keep rate does not)"
            )
        return
    if keep >= 1:
        raise _tiling_error(
            "DropMask parameter is invalid, please check keepProb value: a dropMask is given but "
            f"keepProb is {keep:g} (the {ARCH35} tiling, ProcessDropoutInfo)",
            "tiling.drop_keep_prob",
        )
    _check_drop_mask(a, s, keep)


def _check_tokens(a, s, mode):
    """CheckTokens reads preTokens/nextTokens as int32, with or without a mask."""
    pre, nxt = attr_int32(a.preTokens), attr_int32(a.nextTokens)
    rows, cols = (s.s2, s.s1) if mode == 0 else (s.s1, s.s2)
    if mode in (0, 4) and (-pre > rows or -nxt > cols or pre + nxt < 0):
        raise _tiling_error(
            f"FAG S1s2Bn2 with s1[{s.s1}] s2[{s.s2}] preToken[{pre}] nextToken[{nxt}] is not support! "
            "(tokens are read as int32)",
            "tiling.tokens",
        )


def _check_atten_mask_info(a, s):
    """The attenMask's rank and leading dims (SetAttenMaskShapeType in both tilings)."""
    mask = _present(a.attenMaskOptional)
    if mask is None:
        return
    if mask.ndim == 4:
        lead = tuple(mask.shape[:2])
        if lead not in ((s.b, a.headNum), (s.b, 1), (1, 1)):
            raise _tiling_error(
                f"not support attenMaskShape dim0: {lead[0]}, dim1: {lead[1]}; expected [B,N1,..], "
                f"[B,1,..] or [1,1,..] with B={s.b}, N1={a.headNum}",
                "tiling.mask_lead",
            )
    elif mask.ndim != 2:
        raise _tiling_error(f"not support attenMaskShape dim num: {mask.ndim}; expected 2 or 4", "tiling.mask_rank")


def _check_prefix(a, s):
    """Mode 6 needs B prefix values (SetPrefixSparseParams); A2/A3 ask only with an attenMask."""
    prefix = a.prefixOptional
    if prefix is None or len(prefix) != s.b:
        raise _tiling_error(
            "Sparse capability must be supported under prefix compress mode, pls check input params: "
            f"prefixOptional must hold B={s.b} values, got {None if prefix is None else len(prefix)}",
            "tiling.prefix",
        )


def _check_pse(a, s, tokens):
    """`tokens`: (preTokens, nextTokens) as the tiling sees them when it checks the alibi pse shape."""
    pse = _present(a.pseShiftOptional)
    if pse is None:
        if a.pseType != 1:
            raise _tiling_error(
                f"Get PseInput is nullptr, but pseType is not default=1, now pseType={a.pseType}.", "tiling.pse_null"
            )
        return
    if a.pseType in (0, 1):
        if pse.dtype != a.query.dtype:
            raise _tiling_error(
                f"FAG invalid pse dtype[{pse.dtype.name}], should be same with query's dtype {a.query.dtype.name}",
                "tiling.pse_dtype",
            )
        shape = tuple(pse.shape)
        full = {(s.b, s.n1, s.s1, s.s2), (s.b, s.n1, 1, s.s2), (1, s.n1, s.s1, s.s2)}
        alibi = {(s.b, s.n1, ALIBI_ROWS, s.s2), (1, s.n1, ALIBI_ROWS, s.s2)}
        causal = s.s1 == s.s2 >= ALIBI_ROWS and tokens[0] >= s.s1 and tokens[1] == 0
        if shape not in full and not (shape in alibi and causal):
            raise _tiling_error(
                f"The shape of pse{list(shape)} is invalid or tocken[{a.preTokens},{a.nextTokens}] not "
                f"casual; expected [B,N1,S1,S2], [B,N1,1,S2], [1,N1,S1,S2], or [B|1,N1,1024,S2] with "
                "S1 == S2 >= 1024, preTokens >= S1 and nextTokens == 0",
                "tiling.pse_shape",
            )
        return
    if pse.dtype != DataType.ACL_FLOAT or tuple(pse.shape) not in ((s.n1,), (s.b, s.n1)):
        raise _tiling_error(
            f"pse inner mode, unsupported pse shape {list(pse.shape)} / dtype {pse.dtype.name}: pseType "
            f"{a.pseType} takes FLOAT slopes [N1] or [B,N1] = [{s.b},{s.n1}]",
            "tiling.pse_inner",
        )


def _check_atten_mask_shape(a, s, mode, arch35: bool = False):
    """CheckAttenMaskShape of the template that finally runs. ARCH35 (regbase CheckAttenMaskShape):
    an uncompressed mask needs only rows x columns >= S1 x S2."""
    mask = _present(a.attenMaskOptional)
    if mask is None:
        return
    last = tuple(mask.shape[-2:])
    need = COMPRESSED_MASK.get(mode, (s.s1, s.s2))
    if arch35 and mode not in COMPRESSED_MASK and last[0] * last[1] >= s.s1 * s.s2:
        if last[0] < s.s1 or last[1] < s.s2:
            UNESTABLISHED.refuse("mask_window", f"attenMask [{last[0]},{last[1]}] against S1 x S2 = [{s.s1},{s.s2}]")
    elif last != need:
        raise _tiling_error(
            f"atten mask shape [{last[0]},{last[1]}] is invalid: sparseMode {mode} needs the last two "
            f"dims {list(need)}",
            "tiling.mask_shape",
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
            raise _tiling_error(
                f"pre_token and next_token is invalid in the pad scene, got s1 {s.s1}, s2 {s.s2}, "
                f"pre_token {pre}, next_token {nxt}",
                "tiling.pad_tokens",
            )


def _check_outputs(a, env):
    """PostFlashAttentionScoreGrad: ViewCopy of the results into dqOut/dkOut/dvOut."""
    for out, like in (("dqOut", "query"), ("dkOut", "keyIn"), ("dvOut", "value")):
        got, want = getattr(a, out), getattr(a, like)
        if got.shape != want.shape:
            raise OpError(
                NULLPTR,
                f"{out} shape {list(got.shape)} differs from {like} {list(want.shape)}; ViewCopy of the result fails",
                rule=f"out.{out}_shape",
            )
        if got.dtype != a.query.dtype:
            INFERRED.warn(env, "out_dtype", f"{out} is {got.dtype.name}, query {a.query.dtype.name}")


def _workspace(s) -> int:
    """What the hardware asks for, roughly: fp32 dq/dk/dv accumulators plus the system workspace."""
    return SYSTEM_WORKSPACE + 4 * (s.b * s.n1 * s.s1 * s.d + s.b * s.n2 * s.s2 * (s.d + s.vd))


def _zero_outputs(a):
    def run(workspace):
        for out in (a.dqOut, a.dkOut, a.dvOut, a.dpseOut):
            if out is not None and not out.is_empty:
                out.write(0)

    return run


def _mask_window(mask, s, mode):
    """The mask as the kernel reads it: ARCH35 may be given a larger uncompressed mask, read from its top-left."""
    if mode in COMPRESSED_MASK or tuple(mask.shape[-2:]) == (s.s1, s.s2):
        return mask
    return mask[..., : s.s1, : s.s2]


def _kernel_layout(s, env) -> str:
    """ARCH35 GetShapeAttrsInfo compares the layout case-sensitively and reads any other 4-letter one
    (bsnd, bNsD, ...: the infershape passes them) as BSND, as the op_api's GetInputShapeInfo does."""
    if env.soc == ARCH35 and len(s.layout) == 4 and s.layout != "BNSD":
        return "BSND"
    return s.layout


def _start_indices(a, env) -> dict:
    """The ALiBi start positions as the kernel's pse reads them. Atlas A2/A3: both or neither apply
    (kernels/flash_attention/pse.py). ARCH35 SetQKVStartIdx (..._regbase.cpp) reads element 0 of
    qStartIdx alone, 0 for the other, and kvStartIdx only after a qStartIdx: a lone qStartIdx applies,
    a lone kvStartIdx does not (the forward's regbase tiling applies either alone)."""
    q, kv = a.qStartIdxOptional, a.kvStartIdxOptional
    if env.soc == ARCH35 and q:
        q, kv = tuple(q[:1]), tuple(kv[:1]) if kv else (0,)
    return {"q_start_idx": q, "kv_start_idx": kv}


def _launch(a, s, mode, env):
    params = FaParams(
        scale=a.scaleValue,
        keep_prob=float(np.float32(a.keepProb)),
        head_num=a.headNum,
        layout=_kernel_layout(s, env),
        pre_tokens=a.preTokens,
        next_tokens=a.nextTokens,
        sparse_mode=mode,
        pse_type=a.pseType,
        prefix=a.prefixOptional,
        **_start_indices(a, env),
    )
    pse, drop, mask = (_present(t) for t in (a.pseShiftOptional, a.dropMaskOptional, a.attenMaskOptional))
    generate = env.soc == ARCH35 and drop is None and params.keep_prob < 1

    def run(workspace):
        drop_mask = (
            packed_keep_mask(V2_SEED, V2_OFFSET, s.b * s.n1 * s.s1, s.s2, params.keep_prob)
            if generate
            else None
            if drop is None
            else drop.read()
        )
        dq, dk, dv = flash_attention_score_grad(
            a.query.read(),
            a.keyIn.read(),
            a.value.read(),
            a.dy.read(),
            a.attentionInOptional.read(),
            a.softmaxMaxOptional.read(),
            a.softmaxSumOptional.read(),
            params,
            pse=None if pse is None else pse.read(),
            drop_mask=drop_mask,
            atten_mask=None if mask is None else _mask_window(mask.read(), s, mode),
        )
        a.dqOut.write(dq)
        a.dkOut.write(dk)
        a.dvOut.write(dv)

    return run


@OP.prepare
def prepare(a, env):
    _op_api_checks(a)
    if a.dqOut.is_empty and a.dkOut.is_empty and a.dvOut.is_empty and (a.dpseOut is None or a.dpseOut.is_empty):
        return Launch.nothing()
    if a.headNum <= 0:
        raise OpError(
            INVALID, f"Invalid HeadNum, pls check input attr: got headNum {a.headNum}; expected > 0", rule="head_num"
        )
    _rank_checks(a)
    layout = a.inputLayout or ""
    s = _Shape(a, layout)
    if layout.upper() not in INFER_LAYOUTS:
        raise _tiling_error(
            f"The inputLayout should be BSH/SBH/BSND/BNSD/TND(case-insensitive), got {layout!r}", "infershape.layout"
        )
    _kernel_select(a, env.soc == ARCH35)
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
    return Launch(_workspace(s), _launch(a, s, mode, env))
