"""aclnnFlashAttentionScoreGradV2: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.ops.flash_attention.common import entry_params, entry_points, v4_inputs
from aclnn_emu.opdef.signature import Double, Int64, IntArrayIn, Op, String, TensorIn, TensorOut


FLOATS = (DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_FLOAT)


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
        Double("scaleValue", default=1.0, doc="scale of Q·Kᵀ, usually 1/sqrt(D)"),
        Double("keepProb", default=1.0, doc="dropout keep probability in (0, 1]"),
        Int64("preTokens", default=2147483647, doc="sliding window: keys this many positions before a query are kept"),
        Int64("nextTokens", default=2147483647, doc="sliding window: keys this many positions after a query are kept"),
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
    defaults_from="torch_npu.npu_fusion_attention_grad_v2",
)


ARCH35 = "Ascend910_95"  # the family whose tiling is flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp


BF16 = (DataType.ACL_BF16,)
# The parameters the other entry points of the header add to V2's.
_ADDED = [
    TensorIn("sinkInOptional", optional=True, dtypes=FLOAT, doc="the forward's learnable sink [N1] (fp32)"),
    IntArrayIn("actualSeqQLenOptional", optional=True, doc="cumulative query lengths of the packed batches (TND)"),
    IntArrayIn("actualSeqKvLenOptional", optional=True, doc="cumulative key/value lengths of the packed batches (TND)"),
    TensorIn("queryRope", optional=True, dtypes=BF16, doc="the rope half of Q [T1,N1,Dr] (MLA; bf16, TND)"),
    TensorIn("keyInRope", optional=True, dtypes=BF16, doc="the rope half of K [T2,N2,Dr] (MLA; bf16, TND)"),
    String(
        "softmaxInLayout",
        values=("", "same_as_input"),
        default="",
        doc='layout of softmaxMax/Sum: "same_as_input" token-major [T1,N1,8], "" each batch head-major',
    ),
    TensorOut("dqRopeOut", optional=True, like="queryRope", doc="dL/dqueryRope, shaped and typed like queryRope"),
    TensorOut("dkRopeOut", optional=True, like="keyInRope", doc="dL/dkeyInRope, shaped and typed like keyInRope"),
    TensorOut("dsinkOut", optional=True, like="sinkInOptional", doc="dL/dsink [N1] fp32"),
]
# The header's other entry points: V2's parameters and the added ones, by name; the
# variable-length ones take TND only and describe the softmax statistics per token.
_declare = entry_points(
    OP,
    _ADDED,
    "torch_npu.npu_fusion_attention_grad",
    tnd_replaced=[
        String("inputLayout", values=("TND",), doc="TND, the only layout accepted (any other returns 161002)")
    ],
    tnd_docs={
        "softmaxMaxOptional": "the forward's per-row score maximum [T1,N1,8]",
        "softmaxSumOptional": "the forward's per-row exp sum [T1,N1,8]",
    },
)

_MASKS = "pseShiftOptional dropMaskOptional paddingMaskOptional attenMaskOptional"
_SOFTMAX = "softmaxMaxOptional softmaxSumOptional softmaxInOptional attentionInOptional"
_HEAD = f"query keyIn value dy {_MASKS} {_SOFTMAX}"
_ROPE_HEAD = f"query queryRope keyIn keyInRope value dy {_MASKS} {_SOFTMAX}"
_ATTRS = "scaleValue keepProb preTokens nextTokens headNum inputLayout innerPrecise sparseMode"
_SEQS = "actualSeqQLenOptional actualSeqKvLenOptional"
_STARTS = "qStartIdxOptional kvStartIdxOptional"
_OUTS = "dqOut dkOut dvOut dpseOut"
_ROPE_OUTS = "dqOut dqRopeOut dkOut dkRopeOut dvOut dpseOut"

V1 = _declare("FlashAttentionScoreGrad", f"{_HEAD} prefixOptional {_ATTRS} {_OUTS}")
V3 = _declare(
    "FlashAttentionScoreGradV3", f"{_HEAD} sinkInOptional prefixOptional {_STARTS} {_ATTRS} pseType {_OUTS} dsinkOut"
)
UNPADDING = _declare("FlashAttentionUnpaddingScoreGrad", f"{_HEAD} prefixOptional {_SEQS} {_ATTRS} {_OUTS}", True)
UNPADDING_V2 = _declare(
    "FlashAttentionUnpaddingScoreGradV2", f"{_HEAD} prefixOptional {_SEQS} {_STARTS} {_ATTRS} pseType {_OUTS}", True
)
UNPADDING_V3 = _declare(
    "FlashAttentionUnpaddingScoreGradV3",
    f"{_ROPE_HEAD} prefixOptional {_SEQS} {_STARTS} {_ATTRS} pseType {_ROPE_OUTS}",
    True,
)
UNPADDING_V4 = _declare(
    "FlashAttentionUnpaddingScoreGradV4", f"{_HEAD} prefixOptional {_SEQS} {_ATTRS} {_OUTS} softmaxInLayout", True
)
UNPADDING_V5 = _declare(
    "FlashAttentionUnpaddingScoreGradV5",
    f"{_ROPE_HEAD} sinkInOptional prefixOptional {_SEQS} {_STARTS} {_ATTRS} pseType softmaxInLayout "
    f"{_ROPE_OUTS} dsinkOut",
    True,
)
UNPADDINGS = (UNPADDING, UNPADDING_V2, UNPADDING_V3, UNPADDING_V4, UNPADDING_V5)

# FlashAttentionScoreGradV4 (CANN 9.0.0 on): V3's and the Unpadding entry points' inputs in one call, plus the
# FP8/HiFloat8 dequant scales, the quant output dtype and the dropout seed/offset the others fix at 0.
_V4_ADDED = [
    *v4_inputs(("Q", "K", "V", "Dy", "O")),
    Int64("seed", default=0, doc="Philox seed of the keep mask Ascend950 generates (keepProb < 1, no dropMask)"),
    Int64("offset", default=0, doc="Philox offset of the keep mask Ascend950 generates"),
    Int64(
        "outDtype",
        default=0,
        doc="dq/dk/dv dtype of an FP8/HiFloat8 query (0 fp16, 1 bf16); other queries give their own dtypes",
    ),
]
_V4_REPLACED = {
    "dqRopeOut": TensorOut("dqRopeOut", optional=True, like="queryRopeOptional", doc="dL/dqueryRopeOptional"),
    "dkRopeOut": TensorOut("dkRopeOut", optional=True, like="keyRopeOptional", doc="dL/dkeyRopeOptional"),
}
V4 = Op(
    "FlashAttentionScoreGradV4",
    OP.header,
    entry_params(
        OP,
        f"{_HEAD} sinkInOptional queryRopeOptional keyRopeOptional dScaleQOptional dScaleKOptional dScaleVOptional "
        f"dScaleDyOptional dScaleOOptional prefixOptional {_SEQS} {_STARTS} scaleValue keepProb preTokens nextTokens "
        "headNum inputLayout softmaxInLayout innerPrecise sparseMode pseType seed offset outDtype dqOut dkOut dvOut "
        "dqRopeOut dkRopeOut dpseOut dsinkOut".split(),
        extra=_ADDED + _V4_ADDED,
        replaced=_V4_REPLACED,
    ),
    base=OP,
    defaults_from="torch_npu.npu_fusion_attention_grad_v2",
    since="9.0.0",
)
