"""aclnnIncreFlashAttentionV2 (`aclnn_incre_flash_attention_v2.cpp`): no checks of its own. It drops pseShift (`(void) pseShift`) and passes the inner op no
antiquantisation, block table or kvPaddingSize, blockSize 0 and innerPrecise 1,
so it behaves as V4 (the generated inner op's checks, the tilings and kernels) called with those."""

from . import incre_flash_attention as v4
from .adapters import adapter

OP = adapter(
    "IncreFlashAttentionV2",
    "aclnn_incre_flash_attention_v2.h",
    v4.OP,
    v4.prepare,
    dict(
        pseShift=None,
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
