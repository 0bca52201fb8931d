"""aclnnLightningIndexer: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.meta import INT64_MAX
from aclnn_emu.opdef.generated import attr_int32
from aclnn_emu.opdef.signature import Bool, Int64, Op, String, TensorIn, TensorOut


QUERY_LAYOUTS, KEY_LAYOUTS = ("BSND", "TND"), ("PA_BSND", "BSND", "TND")

SPARSE_LIMIT, HEAD_DIM, BLOCK_LIMIT, MAX_HEADS = 2048, 128, 1024, 64


def _out(dtype_of):
    """sparseIndicesOut / sparseValuesOut by the tiling's shape rule: query's [B,S1] or [T1], then
    N2 = 1 and sparseCount (read as int32); None without a query."""

    def rule(a):
        q = a.query
        if q is None:
            return None
        return (*q.shape[:-2], 1, max(attr_int32(a.sparseCount), 0)), dtype_of(q)

    return rule


OP = Op(
    "LightningIndexer",
    "aclnn_lightning_indexer.h",
    [
        TensorIn("query", doc="indexer query [B,S1,N1,D] (BSND) or [T1,N1,D] (TND); D 128, N1 at most 64"),
        TensorIn(
            "key",
            doc="indexer key [B,S2,1,D] (BSND), [T2,1,D] (TND) or a paged cache [blocks, blockSize, 1, D] (PA_BSND)",
        ),
        TensorIn("weights", doc="per-head weights of the index scores [B,S1,N1] or [T1,N1], query's dtype"),
        TensorIn(
            "actualSeqLengthsQueryOptional",
            optional=True,
            doc="valid query tokens per batch [B] (None: S1); TND: cumulative, and required",
        ),
        TensorIn(
            "actualSeqLengthsKeyOptional",
            optional=True,
            doc="valid key tokens per batch [B] (None: S2); TND: cumulative; required for TND and PA_BSND",
        ),
        TensorIn(
            "blockTableOptional", optional=True, doc="PA_BSND: cache block of each batch's i-th block [B, maxBlocks]"
        ),
        String("layoutQueryOptional", default="BSND", values=QUERY_LAYOUTS, doc="layout of query (NULL: BSND)"),
        String(
            "layoutKeyOptional",
            default="BSND",
            values=KEY_LAYOUTS,
            doc="layout of key (NULL: BSND); not PA_BSND: the same as the query's",
        ),
        Int64("sparseCount", default=2048, doc="keys kept per query token, the top-k (1..2048)"),
        Int64("sparseMode", default=3, doc="0: every key, 3: causal (rightDownCausal)"),
        Int64("preTokens", default=INT64_MAX, doc="sliding window: left bound (only 2^63-1)"),
        Int64("nextTokens", default=INT64_MAX, doc="sliding window: right bound (only 2^63-1)"),
        Bool(
            "returnValues",
            default=False,
            doc="also write the selected keys' scores to sparseValuesOut (not with PA_BSND)",
        ),
        TensorOut(
            "sparseIndicesOut",
            like=_out(lambda q: DataType.ACL_INT32),
            doc="the top-k key positions per query token [B,S1,1,sparseCount] or [T1,1,sparseCount] (-1: none)",
        ),
        TensorOut(
            "sparseValuesOut",
            like=_out(lambda q: q.dtype),
            doc="their index scores (returnValues), shaped like sparseIndicesOut, query's dtype (-inf: none)",
        ),
    ],
    defaults_from="torch_npu.npu_lightning_indexer",
)
