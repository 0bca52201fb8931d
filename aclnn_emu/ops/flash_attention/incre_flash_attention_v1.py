"""aclnnIncreFlashAttention (`aclnn_incre_flash_attention.cpp`): no checks of its own. It drops pseShift (`(void) pseShift`) and passes the inner op no
quantisation, antiquantisation, block table or kvPaddingSize, blockSize 0 and innerPrecise 1,
so it behaves as V4 (the generated inner op's checks, the tilings and kernels) called with those."""

from . import incre_flash_attention as v4
from .adapters import adapter

OP = adapter(
    "IncreFlashAttention",
    "aclnn_incre_flash_attention.h",
    v4.OP,
    v4.prepare,
    dict(
        pseShift=None,
        dequantScale1=None,
        quantScale1=None,
        dequantScale2=None,
        quantScale2=None,
        quantOffset2=None,
        antiquantScale=None,
        antiquantOffset=None,
        blocktable=None,
        kvPaddingSize=None,
        blockSize=0,
        innerPrecise=1,
    ),
    docs={"pseShift": "ignored: the operator passes no pse on (use IncreFlashAttentionV3 or V4)"},
    base_like=v4._attention_out,
)
