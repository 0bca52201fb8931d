"""aclnnIncreFlashAttention (`aclnn_incre_flash_attention.cpp`): no checks of its own. It drops pseShift (`(void) pseShift`) and passes the inner op no
quantisation, antiquantisation, block table or kvPaddingSize, blockSize 0 and innerPrecise 1,
so it behaves as V4 (the generated inner op's checks, the tilings and kernels) called with those."""

from ..signature import Launch
from . import incre_flash_attention as v4
from .adapters import attention_out_like, entry, forwarded

FIXED = dict(
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
)
OP = entry(
    "IncreFlashAttention",
    "aclnn_incre_flash_attention.h",
    v4.OP,
    [p.name for p in v4.OP.params if p.name not in FIXED or p.name == "pseShift"],
    docs={"pseShift": "ignored: the operator passes no pse on (use IncreFlashAttentionV3 or V4)"},
    like={"attentionOut": attention_out_like(v4._attention_out, v4.OP, **FIXED)},
)


@OP.prepare
def prepare(a, env) -> Launch:
    return v4.prepare(forwarded(a, v4.OP, **FIXED), env)
