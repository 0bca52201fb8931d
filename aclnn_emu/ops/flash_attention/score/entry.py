"""aclnnFlashAttentionScoreV2: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu import config, versions
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.params import SOFTMAX_LANES
from aclnn_emu.opdef.failures import TilingFailure
from aclnn_emu.ops.flash_attention.common import entry_points, v4_inputs
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
            return _results(a, _analyse_input(a, versions.RELEASES[config.current.cann_version]))[name]
        except (OpError, TilingFailure, IndexError, ZeroDivisionError):
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


BF16 = (DataType.ACL_BF16,)
SOFTMAX_LAYOUTS = ("", "same_as_input")
# The parameters the other entry points of the header add to V2's.
_ADDED = [
    TensorIn("sinkOptional", optional=True, dtypes=FLOAT, doc="learnable sink: one fp32 logit per query head [N1]"),
    IntArrayIn(
        "actualSeqQLenOptional",
        optional=True,
        doc="cumulative query lengths of the packed batches (TND), one per batch",
    ),
    IntArrayIn("actualSeqKvLenOptional", optional=True, doc="cumulative key/value lengths of the packed batches (TND)"),
    TensorIn("queryRope", optional=True, dtypes=BF16, doc="the rope half of Q [T1,N1,Dr] (MLA; bf16, TND)"),
    TensorIn("keyRope", optional=True, dtypes=BF16, doc="the rope half of K [T2,N2,Dr] (MLA; bf16, TND)"),
    String(
        "softmaxOutLayout",
        values=SOFTMAX_LAYOUTS,
        default="",
        doc='layout of softmaxMax/Sum: "same_as_input" token-major [T1,N1,8]; anything else each batch head-major',
    ),
]
# The header's other entry points: V2's parameters and the added ones, by name; the
# variable-length ones take TND only and describe the softmax statistics per token.
_declare = entry_points(
    OP,
    _ADDED,
    "torch_npu.npu_fusion_attention",
    tnd_replaced=[
        String("inputLayout", values=("TND",), doc="TND, the only layout accepted (any other returns 161002)")
    ],
    tnd_docs={
        "softmaxMaxOut": "per-row score maximum [T1,N1,8] (8 equal lanes)",
        "softmaxSumOut": "per-row exp sum [T1,N1,8] (8 equal lanes)",
    },
)

_HEAD = "query key value realShiftOptional dropMaskOptional paddingMaskOptional attenMaskOptional"
_ROPE_HEAD = (
    "query queryRope key keyRope value realShiftOptional dropMaskOptional paddingMaskOptional attenMaskOptional"
)
_ATTRS = "scaleValue keepProb preTokens nextTokens headNum inputLayout innerPrecise sparseMode"
_SEQS = "actualSeqQLenOptional actualSeqKvLenOptional"
_STARTS = "qStartIdxOptional kvStartIdxOptional"
_OUTS = "softmaxMaxOut softmaxSumOut softmaxOutOut attentionOutOut"

V1 = _declare("FlashAttentionScore", f"{_HEAD} prefixOptional {_ATTRS} {_OUTS}")
V3 = _declare("FlashAttentionScoreV3", f"{_HEAD} sinkOptional prefixOptional {_STARTS} {_ATTRS} pseType {_OUTS}")
VAR_LEN = _declare("FlashAttentionVarLenScore", f"{_HEAD} prefixOptional {_SEQS} {_ATTRS} {_OUTS}", True)
VAR_LEN_V2 = _declare(
    "FlashAttentionVarLenScoreV2", f"{_HEAD} prefixOptional {_SEQS} {_STARTS} {_ATTRS} pseType {_OUTS}", True
)
VAR_LEN_V3 = _declare(
    "FlashAttentionVarLenScoreV3", f"{_ROPE_HEAD} prefixOptional {_SEQS} {_STARTS} {_ATTRS} pseType {_OUTS}", True
)
VAR_LEN_V4 = _declare(
    "FlashAttentionVarLenScoreV4", f"{_HEAD} prefixOptional {_SEQS} {_ATTRS} softmaxOutLayout {_OUTS}", True
)
VAR_LEN_V5 = _declare(
    "FlashAttentionVarLenScoreV5",
    f"{_ROPE_HEAD} sinkOptional prefixOptional {_SEQS} {_STARTS} {_ATTRS} pseType softmaxOutLayout {_OUTS}",
    True,
)
VAR_LENS = (VAR_LEN, VAR_LEN_V2, VAR_LEN_V3, VAR_LEN_V4, VAR_LEN_V5)

# FlashAttentionScoreV4 (CANN 9.0.0 on): every input of V3 and the VarLen entry points in one call, plus the FP8/
# HiFloat8 dequant scales, the quant output dtype and the dropout seed/offset V1-V3 fix at 0.
_V4_ADDED = [
    *v4_inputs("QKV"),
    Int64(
        "outDtype",
        default=0,
        doc="attentionOut dtype of an FP8/HiFloat8 query (0 fp16, 1 bf16); other queries give their own dtype. "
        "Ascend910_95 refuses values other than 0 and 1",
    ),
    Int64("seed", default=0, doc="Philox seed of the keep mask Ascend910_95 generates (keepProb < 1, no dropMask)"),
    Int64("offset", default=0, doc="Philox offset of the keep mask Ascend910_95 generates"),
]
_V4_HEAD = f"{_HEAD} queryRopeOptional keyRopeOptional dScaleQOptional dScaleKOptional dScaleVOptional"
V4 = entry_points(OP, _ADDED + _V4_ADDED, "torch_npu.npu_fusion_attention")(
    "FlashAttentionScoreV4",
    f"{_V4_HEAD} sinkOptional prefixOptional {_SEQS} {_STARTS} {_ATTRS} outDtype pseType softmaxOutLayout seed offset "
    f"{_OUTS}",
    since="9.0.0",
)
