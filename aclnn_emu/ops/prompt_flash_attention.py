"""aclnnPromptFlashAttentionV2 (attention/prompt_flash_attention, CANN 8.5)."""
from .signature import Double, Int64, IntArrayIn, Op, String, TensorIn, TensorOut

OP = Op("PromptFlashAttentionV2", "aclnn_prompt_flash_attention_v2.h", [
    TensorIn("query"), TensorIn("key"), TensorIn("value"),
    TensorIn("pseShift", optional=True), TensorIn("attenMask", optional=True),
    IntArrayIn("actualSeqLengths", optional=True), IntArrayIn("actualSeqLengthsKv", optional=True),
    TensorIn("deqScale1", optional=True), TensorIn("quantScale1", optional=True),
    TensorIn("deqScale2", optional=True), TensorIn("quantScale2", optional=True),
    TensorIn("quantOffset2", optional=True),
    Int64("numHeads"), Double("scaleValue"), Int64("preTokens"), Int64("nextTokens"),
    String("inputLayout"), Int64("numKeyValueHeads"), Int64("sparseMode"),
    TensorOut("attentionOut"),
])
