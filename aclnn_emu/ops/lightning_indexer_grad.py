"""aclnnLightningIndexerGrad (attention/lightning_indexer_grad, CANN 8.5; hand-written op_api)."""
from .signature import Bool, Int64, Op, String, TensorIn, TensorOut

OP = Op("LightningIndexerGrad", "aclnn_lightning_indexer_grad.h", [
    TensorIn("query"), TensorIn("key"), TensorIn("dy"), TensorIn("spareIndices"), TensorIn("weights"),
    TensorIn("actucalSeqLengthsQuery", optional=True), TensorIn("actucalSeqLengthsKey", optional=True),
    Int64("headNum"), String("layout"), Int64("sparseMode"), Int64("preTokens"), Int64("nextTokens"),
    Bool("determinstic"),
    TensorOut("dQuery"), TensorOut("dKey"), TensorOut("dWeights"),
])
