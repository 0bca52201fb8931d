"""aclnnFlashAttentionScoreV2: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.params import SOFTMAX_LANES
from aclnn_emu.opdef.signature import Double, Int64, IntArrayIn, Op, OpError, String, TensorIn, TensorOut
from .shapes import FLOAT, LAYOUT_RANKS, _analyse_input, _results


FLOATS = (DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_FLOAT)


MASK_DTYPES = (DataType.ACL_BOOL, DataType.ACL_UINT8)


DROP_DTYPES = (DataType.ACL_UINT8,)


def _result(name):
    """An output's shape and dtype as the L0 op infers them (_results), for aclnn_emu.ops to allocate;
    where the inputs cannot be analysed, a stand-in the op's own checks reject with the reason."""

    def rule(a):
        q = a.query
        if None in (q, a.key, a.value):
            return None
        try:
            return _results(a, _analyse_input(a))[name]
        except (OpError, IndexError, ZeroDivisionError):
            return (q.shape, q.dtype) if name == "attentionOutOut" else ((SOFTMAX_LANES,), DataType.ACL_FLOAT)

    return rule


OP = Op(
    "FlashAttentionScoreV2",
    "aclnn_flash_attention_score.h",
    [
        TensorIn("query", dtypes=FLOATS, doc="Q, laid out as inputLayout says"),
        TensorIn("key", dtypes=FLOATS, doc="K, same dtype as query"),
        TensorIn("value", dtypes=FLOATS, doc="V, same dtype as query; head size at most key's"),
        TensorIn(
            "realShiftOptional",
            optional=True,
            dtypes=FLOATS,
            doc="position encoding pse [B|1,N1,S1|1|1024,S2] (pseType 0/1), or FLOAT ALiBi slopes [N1] or [B,N1] "
            "(pseType 2/3)",
        ),
        TensorIn(
            "dropMaskOptional",
            optional=True,
            dtypes=DROP_DTYPES,
            doc="dropout keep-bits, one bit per score element, used when keepProb < 1",
        ),
        TensorIn("paddingMaskOptional", optional=True, doc="reserved: not read (pass None)"),
        TensorIn(
            "attenMaskOptional",
            optional=True,
            dtypes=MASK_DTYPES,
            doc="attention mask, 1 = masked out ([B,N1|1,S1,S2], [1,1,S1,S2] or [S1,S2]; 2048x2048 compressed "
            "for sparseMode 2-4)",
        ),
        IntArrayIn("prefixOptional", optional=True, doc="per-batch prefix length N for sparseMode 5/6"),
        IntArrayIn("qStartIdxOptional", optional=True, doc="first query position of the ALiBi pse (pseType 2/3)"),
        IntArrayIn("kvStartIdxOptional", optional=True, doc="first key position of the ALiBi pse (pseType 2/3)"),
        Double("scaleValue", default=1.0, doc="scale of Q·Kᵀ, usually 1/sqrt(D)"),
        Double("keepProb", default=1.0, doc="dropout keep probability in (0, 1]"),
        Int64("preTokens", default=2147483647, doc="sliding window: keys this many positions before a query are kept"),
        Int64("nextTokens", default=2147483647, doc="sliding window: keys this many positions after a query are kept"),
        Int64("headNum", doc="number of query heads N1"),
        String(
            "inputLayout",
            values=tuple(LAYOUT_RANKS),
            doc="layout of query/key/value (TND needs sequence lengths V2 cannot pass: rejected)",
        ),
        Int64(
            "innerPrecise",
            default=0,
            doc="precision mode: 0/1 reserved, 2 computes rows whose every score is masked as 0",
        ),
        Int64(
            "sparseMode",
            default=0,
            doc="how attenMaskOptional and the token window select scores (0 defaultMask, 1 allMask, "
            "2-4 compressed causal/band masks, 5-6 prefix)",
        ),
        Int64(
            "pseType",
            default=1,
            doc="1: S = (QKᵀ + pse)·scale (the doc's value without pse); 0: S = QKᵀ·scale "
            "+ pse; 2/3: ALiBi from slopes (-slope·|dist|, 3: sqrt of it)",
        ),
        TensorOut(
            "softmaxMaxOut",
            dtypes=FLOAT,
            like=_result("softmaxMaxOut"),
            doc="per-row score maximum [B,N1,S1,8] (8 equal lanes), for the backward",
        ),
        TensorOut(
            "softmaxSumOut",
            dtypes=FLOAT,
            like=_result("softmaxSumOut"),
            doc="per-row exp sum [B,N1,S1,8] (8 equal lanes), for the backward",
        ),
        TensorOut("softmaxOutOut", optional=True, doc="reserved: never written (pass None)"),
        TensorOut(
            "attentionOutOut",
            dtypes=FLOATS,
            like=_result("attentionOutOut"),
            doc="the attention result, query's shape with value's head size, query's dtype",
        ),
    ],
    defaults_from="torch_npu.npu_fusion_attention_v2",
)
