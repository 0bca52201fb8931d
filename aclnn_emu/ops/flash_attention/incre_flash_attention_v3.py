"""aclnnIncreFlashAttentionV3 (`aclnn_incre_flash_attention_v3.cpp`): no checks of its own. It passes every argument on and no kvPaddingSize,
so it behaves as V4 (the generated inner op's checks, the tilings and kernels) called with those."""

from ..signature import Launch
from . import incre_flash_attention as v4
from .adapters import attention_out_like, entry, forwarded

FIXED = dict(kvPaddingSize=None)
OP = entry(
    "IncreFlashAttentionV3",
    "aclnn_incre_flash_attention_v3.h",
    v4.OP,
    [p.name for p in v4.OP.params if p.name not in FIXED],
    like={"attentionOut": attention_out_like(v4._attention_out, v4.OP, **FIXED)},
)


@OP.prepare
def prepare(a, env) -> Launch:
    return v4.prepare(forwarded(a, v4.OP, **FIXED), env)
