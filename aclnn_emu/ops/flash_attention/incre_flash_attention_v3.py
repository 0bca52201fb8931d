"""aclnnIncreFlashAttentionV3 (`aclnn_incre_flash_attention_v3.cpp`): no checks of its own. It passes every argument on and no
kvPaddingSize,
so it behaves as V4 (the generated inner op's checks, the tilings and kernels) called with those."""

from . import incre_flash_attention as v4
from .adapters import adapter

OP = adapter(
    "IncreFlashAttentionV3",
    "aclnn_incre_flash_attention_v3.h",
    v4.OP,
    v4.prepare,
    dict(kvPaddingSize=None),
    base_like=v4._attention_out,
)
