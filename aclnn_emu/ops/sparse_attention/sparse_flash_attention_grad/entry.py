"""aclnnSparseFlashAttentionGrad: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.meta import INT64_MAX
from aclnn_emu.opdef.signature import Bool, Double, Int64, Op, String, TensorIn, TensorOut


LAYOUTS = ("TND", "BSND")


OP = Op(
    "SparseFlashAttentionGrad",
    "aclnn_sparse_flash_attention_grad.h",
    [
        TensorIn("query", doc="Q [B,S1,N1,D] (BSND) or [T1,N1,D] (TND)"),
        TensorIn("key", doc="K [B,S2,N2,D] or [T2,N2,D], N2 = 1"),
        TensorIn("value", doc="V, shaped like key"),
        TensorIn("sparseIndices", doc="selected key blocks per query token [B,S1,N2,K] or [T1,N2,K] (-1: none)"),
        TensorIn("dOut", doc="gradient of the forward output, shaped like out"),
        TensorIn("out", doc="the forward's output [B,S1,N1,D] or [T1,N1,D]"),
        TensorIn("softmaxMax", doc="the forward's per-row score maximum [B,N2,S1,G] or [N2,T1,G]"),
        TensorIn("softmaxSum", doc="the forward's per-row exp sum, shaped like softmaxMax"),
        TensorIn("actualSeqLengthsQueryOptional", optional=True, doc="TND: cumulative query lengths per batch"),
        TensorIn("actualSeqLengthskvOptional", optional=True, doc="TND: cumulative key/value lengths per batch"),
        TensorIn("queryRopeOptional", optional=True, doc="MLA rope part of Q [..., N1, Dr]"),
        TensorIn("keyRopeOptional", optional=True, doc="MLA rope part of K [..., N2, Dr]"),
        Double("scaleValue", doc="scale of Q·Kᵀ, usually 1/sqrt(D + Dr)"),
        Int64("sparseBlockSize", doc="tokens per selected key block (1..128)"),
        String(
            "layoutOptional", optional=True, default="BSND", values=LAYOUTS, doc="layout of the tensors (None: BSND)"
        ),
        Int64("sparseMode", default=3, doc="0: no mask, 3: causal (rightDownCausal)"),
        Int64("preTokens", default=INT64_MAX, doc="sliding window: left bound"),
        Int64("nextTokens", default=INT64_MAX, doc="sliding window: right bound"),
        Bool("deterministic", doc="ask for deterministic accumulation (the emulator always is)"),
        TensorOut("dQueryOut", like="query", doc="dL/dquery, shaped and typed like query"),
        TensorOut("dKeyOut", like="key", doc="dL/dkey, shaped and typed like key"),
        TensorOut("dValueOut", like="value", doc="dL/dvalue, shaped and typed like value"),
        TensorOut(
            "dQueryRopeOutOptional", optional=True, like="queryRopeOptional", doc="dL/dqueryRope (when rope is on)"
        ),
        TensorOut("dKeyRopeOutOptional", optional=True, like="keyRopeOptional", doc="dL/dkeyRope (when rope is on)"),
    ],
    defaults_from="torch_npu.npu_sparse_flash_attention_grad",
)
