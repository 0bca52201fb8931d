"""aclnnSparseFlashAttention: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.meta import INT64_MAX
from aclnn_emu.opdef.signature import Bool, Double, Int64, Op, String, TensorIn, TensorOut


QUERY_LAYOUTS, KV_LAYOUTS = ("BSND", "TND"), ("BSND", "PA_BSND", "TND")


def _attention_out(a):
    """attentionOutOut by the tiling's shape check: query's shape with value's head size, query's dtype."""
    if a.query is None or a.value is None:
        return None
    return (*a.query.shape[:-1], a.value.shape[-1] if a.value.ndim else 0), a.query.dtype


def _softmax_out(a):
    """softmaxMaxOut / softmaxSumOut as the doc shapes them: [B, N2, S1, N1/N2] (BSND) or [N2, T1, N1/N2]
    (TND), FLOAT; a stand-in the op's own checks reject where the ranks are wrong."""
    q, k = a.query, a.key
    if q is None or k is None:
        return None
    if q.ndim not in (3, 4) or k.ndim < 2 or not k.shape[-2]:
        return q.shape, DataType.ACL_FLOAT
    n2 = k.shape[-2]
    lead = (q.shape[0], n2, q.shape[1]) if q.ndim == 4 else (n2, q.shape[0])
    return (*lead, q.shape[-2] // n2), DataType.ACL_FLOAT


OP = Op(
    "SparseFlashAttention",
    "aclnn_sparse_flash_attention.h",
    [
        TensorIn("query", doc="Q [B,S1,N1,D] (BSND) or [T1,N1,D] (TND); D 512"),
        TensorIn("key", doc="K [B,S2,1,D] (BSND), [T2,1,D] (TND) or a paged cache [blocks, blockSize, 1, D] (PA_BSND)"),
        TensorIn("value", doc="V, shaped like key"),
        TensorIn("sparseIndices", doc="selected key blocks per query token [B,S1,1,K] or [T1,1,K] (-1: none)"),
        TensorIn("blockTable", optional=True, doc="PA_BSND: cache block of each batch's i-th block [B, maxBlocks]"),
        TensorIn(
            "actualSeqLengthsQuery",
            optional=True,
            doc="valid query tokens per batch [B] (None: S1); TND: cumulative, and required",
        ),
        TensorIn(
            "actualSeqLengthsKv",
            optional=True,
            doc="valid key tokens per batch [B] (None: S2); TND: cumulative; required for TND and PA_BSND",
        ),
        TensorIn("queryRope", optional=True, doc="MLA rope part of Q [..., N1, 64] (required: attentionMode 2)"),
        TensorIn("keyRope", optional=True, doc="MLA rope part of K [..., 1, 64] (required with queryRope)"),
        Double("scaleValue", doc="scale of Q·Kᵀ, usually 1/sqrt(D + Dr)"),
        Int64("sparseBlockSize", default=1, doc="tokens per selected key block (a power of 2, 1..128)"),
        String("layoutQuery", default="BSND", values=QUERY_LAYOUTS, doc="layout of query (NULL: BSND)"),
        String(
            "layoutKv",
            default="BSND",
            values=KV_LAYOUTS,
            doc="layout of key/value (NULL: BSND); not PA_BSND: the same as the query's",
        ),
        Int64("sparseMode", default=3, doc="0: every selected key, 3: causal (rightDownCausal)"),
        Int64("preTokens", default=INT64_MAX, doc="sliding window: left bound (only 2^63-1)"),
        Int64("nextTokens", default=INT64_MAX, doc="sliding window: right bound (only 2^63-1)"),
        Int64("attentionMode", default=0, doc="2: MLA-absorb (the only mode)"),
        Bool("returnSoftmaxLse", default=False, doc="also write softmaxMaxOut and softmaxSumOut (not with PA_BSND)"),
        TensorOut("attentionOutOut", like=_attention_out, doc="the attention result, query's shape with value's D"),
        TensorOut(
            "softmaxMaxOut",
            like=_softmax_out,
            doc="per-row score maximum [B,N2,S1,N1/N2] or [N2,T1,N1/N2] (returnSoftmaxLse)",
        ),
        TensorOut(
            "softmaxSumOut", like=_softmax_out, doc="per-row exp sum, shaped like softmaxMaxOut (returnSoftmaxLse)"
        ),
    ],
    defaults_from="torch_npu.npu_sparse_flash_attention",
)
