"""aclnnFlashAttentionScoreGradV2 (attention/flash_attention_score_grad, CANN 8.5)."""
from .signature import Double, Int64, IntArrayIn, Op, String, TensorIn, TensorOut

OP = Op("FlashAttentionScoreGradV2", "aclnn_flash_attention_score_grad.h", [
    TensorIn("query"), TensorIn("keyIn"), TensorIn("value"), TensorIn("dy"),
    TensorIn("pseShiftOptional", optional=True), TensorIn("dropMaskOptional", optional=True),
    TensorIn("paddingMaskOptional", optional=True), TensorIn("attenMaskOptional", optional=True),
    TensorIn("softmaxMaxOptional", optional=True), TensorIn("softmaxSumOptional", optional=True),
    TensorIn("softmaxInOptional", optional=True), TensorIn("attentionInOptional", optional=True),
    IntArrayIn("prefixOptional", optional=True), IntArrayIn("qStartIdxOptional", optional=True),
    IntArrayIn("kvStartIdxOptional", optional=True),
    Double("scaleValue"), Double("keepProb"), Int64("preTokens"), Int64("nextTokens"), Int64("headNum"),
    String("inputLayout"), Int64("innerPrecise"), Int64("sparseMode"), Int64("pseType"),
    TensorOut("dqOut"), TensorOut("dkOut"), TensorOut("dvOut"), TensorOut("dpseOut", optional=True),
])
