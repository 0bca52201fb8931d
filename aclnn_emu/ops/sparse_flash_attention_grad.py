"""aclnnSparseFlashAttentionGrad (attention/sparse_flash_attention_grad, CANN 8.5; generated aclnn)."""
from .signature import Bool, Double, Int64, Op, String, TensorIn, TensorOut

OP = Op("SparseFlashAttentionGrad", "aclnn_sparse_flash_attention_grad.h", [
    TensorIn("query"), TensorIn("key"), TensorIn("value"), TensorIn("sparseIndices"), TensorIn("dOut"),
    TensorIn("out"), TensorIn("softmaxMax"), TensorIn("softmaxSum"),
    TensorIn("actualSeqLengthsQueryOptional", optional=True), TensorIn("actualSeqLengthskvOptional", optional=True),
    TensorIn("queryRopeOptional", optional=True), TensorIn("keyRopeOptional", optional=True),
    Double("scaleValue"), Int64("sparseBlockSize"), String("layoutOptional"), Int64("sparseMode"),
    Int64("preTokens"), Int64("nextTokens"), Bool("deterministic"),
    TensorOut("dQueryOut"), TensorOut("dKeyOut"), TensorOut("dValueOut"),
    TensorOut("dQueryRopeOutOptional", optional=True), TensorOut("dKeyRopeOutOptional", optional=True),
])
