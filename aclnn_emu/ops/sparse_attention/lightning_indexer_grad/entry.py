"""aclnnLightningIndexerGrad: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.meta import INT64_MAX
from aclnn_emu.opdef.signature import Bool, Int64, Op, String, TensorIn, TensorOut


MAX_TOPK = 2048  # the per-core workspace is sized for this topK


FLOATS = (DataType.ACL_BF16, DataType.ACL_FLOAT16)


LAYOUTS = ("TND", "BSND")


INT32 = (DataType.ACL_INT32,)


OP = Op(
    "LightningIndexerGrad",
    "aclnn_lightning_indexer_grad.h",
    [
        TensorIn("query", dtypes=FLOATS, doc="indexer query [B,S1,N,D] (BSND) or [T1,N,D] (TND); N 64, D 128"),
        TensorIn("key", dtypes=FLOATS, doc="indexer key [B,S2,1,D] or [T2,1,D]"),
        TensorIn("dy", dtypes=FLOATS, doc="gradient of the indexer scores of the selected keys [..., topK]"),
        TensorIn("spareIndices", dtypes=INT32, doc="selected key positions per query token [..., 1, topK] (-1: none)"),
        TensorIn("weights", dtypes=FLOATS, doc="per-head weights of the indexer scores [B,S1,N] or [T1,N]"),
        TensorIn(
            "actucalSeqLengthsQuery",
            optional=True,
            dtypes=INT32,
            doc="TND: cumulative query lengths per batch (required there)",
        ),
        TensorIn("actucalSeqLengthsKey", optional=True, dtypes=INT32, doc="TND: cumulative key lengths per batch"),
        Int64("headNum", doc="number of query heads N (64)"),
        String("layout", default="BSND", values=LAYOUTS, doc="layout of query and key"),
        Int64("sparseMode", default=3, doc="0: no mask, 3: causal (rightDownCausal)"),
        Int64("preTokens", default=INT64_MAX, doc="sliding window: left bound"),
        Int64("nextTokens", default=INT64_MAX, doc="sliding window: right bound"),
        Bool("determinstic", doc="ask for deterministic accumulation (the emulator always is)"),
        TensorOut("dQuery", like="query", doc="dL/dquery, shaped and typed like query"),
        TensorOut("dKey", like="key", doc="dL/dkey, shaped and typed like key"),
        TensorOut("dWeights", like="weights", doc="dL/dweights, shaped and typed like weights"),
    ],
    defaults_from="torch_npu.npu_lightning_indexer_grad",
)
