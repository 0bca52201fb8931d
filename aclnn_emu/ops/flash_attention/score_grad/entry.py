"""aclnnFlashAttentionScoreGradV2: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.signature import Double, Int64, IntArrayIn, Op, String, TensorIn, TensorOut


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
