"""CheckPerchannelAntiquantParamsShape (op_host/prompt_flash_attention_tiling.cpp): the per-channel
antiquant parameters of the Atlas A2/A3 PFA tiling, [first, N2, 1, D] for a BNSD/NSD layout,
[first, N2, D] for BSND, [first, H2] for BSH/SH (N2 = N / G, D the query's, H2 = N2 x D); ``first``
is 2 for the combined antiquantScale/Offset (key row 0, value row 1) and 1 for a key's or a value's
own parameters beside a block table. Every failure is 561002."""

from aclnn_emu.opdef.generated import attr_uint32

from .failure import tiling
from .layouts import query_axes, split

_CHANNEL_RANK = {"BNSD": 4, "NSD": 4, "BSND": 3, "BSH": 2, "SH": 2}
_TILING_LAYOUT = {"BNSD_BSND": "BNSD"}  # SetInputLayout reads BNSD_BSND as BNSD
_LAYOUT_NAMES = {4: "BNSD or NSD", 3: "BSND", 2: "BSH or SH"}


def tiling_layout(a) -> str:
    layout = a.inputLayout or "BSH"
    return _TILING_LAYOUT.get(layout, layout)


def channel_shape(a, first: int = 2) -> tuple[int, ...] | None:
    """The per-channel parameters' shape of the tiling layout (None for a layout the rule skips)."""
    base = split(a.inputLayout or "BSH")[0]
    axes = query_axes(a.query.shape, base, attr_uint32(a.numHeads))
    kv_heads = attr_uint32(a.numKeyValueHeads) or attr_uint32(a.numHeads)
    rank = _CHANNEL_RANK.get(tiling_layout(a))
    if rank is None:
        return None
    return {4: (first, kv_heads, 1, axes.d), 3: (first, kv_heads, axes.d), 2: (first, kv_heads * axes.d)}[rank]


def check(a, scale, offset, first: int, rule: str, outer: str = "") -> None:
    """The scale (not NULL) and the offset (when given) against channel_shape; ``rule`` prefixes the
    rule ids, ``outer`` is the caller's own message after the rule's."""
    if scale is None:
        raise tiling(f"{rule}scale_null", f"antiquant scale is nullptr{outer}")
    want = channel_shape(a, first)
    if want is None:
        return
    rank = len(want)
    for what, t in (("scale", scale), ("offset", offset)):
        if t is None:
            continue
        if t.ndim != rank:
            names = _LAYOUT_NAMES[rank]
            raise tiling(
                f"{rule}{what}_rank",
                f"antiquant {what} dim num[{t.ndim}] should be {rank} if layout is {names}!{outer}",
            )
        if tuple(t.shape) != want:
            raise tiling(f"{rule}{what}_shape", f"antiquant {what} dim {list(t.shape)} is wrong!{outer}")
