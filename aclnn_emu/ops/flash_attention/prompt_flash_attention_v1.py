"""aclnnPromptFlashAttention (V1; `aclnn_prompt_flash_attention.cpp`): no checks of its own. It
drops pseShift (`(void) pseShift`) and passes the inner op no actualSeqLengthsKv, no quantisation
parameters, sparseMode 0 and innerPrecise 1, so it behaves as V2 called with those."""

from . import prompt_flash_attention as v2
from .adapters import adapter

FIXED = dict(
    pseShift=None,
    actualSeqLengthsKv=None,
    deqScale1=None,
    quantScale1=None,
    deqScale2=None,
    quantScale2=None,
    quantOffset2=None,
    sparseMode=0,
)
NAMES = (
    "query",
    "key",
    "value",
    "pseShift",
    "attenMask",
    "actualSeqLengths",
    "numHeads",
    "scaleValue",
    "preTokens",
    "nextTokens",
    "inputLayout",
    "numKeyValueHeads",
    "attentionOut",
)
OP = adapter(
    "PromptFlashAttention",
    "aclnn_prompt_flash_attention.h",
    v2.OP,
    v2.run_inner,
    FIXED,
    NAMES,
    docs={
        "pseShift": "ignored: the operator passes no pse on (use PromptFlashAttentionV3)",
        "attenMask": "mask of scores to drop, 1/True = masked out ([S1,S2], [B,S1,S2] or [B,1,S1,S2])",
    },
    base_like=v2._attention_out,
)
