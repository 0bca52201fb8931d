"""What every route reads off a call before its own checks: the layout parts, head counts, the
paged/rope flags, the query's axes and head sizes, and the legacy-IFA update of the A2/A3 parser."""

from aclnn_emu.opdef.generated import attr_int32, attr_uint32, shape_dim

from .failure import tiling
from .layouts import Axes, paged_value_d, query_axes, split


def first(lst):
    """A tensor list's first tensor (None for a NULL or empty list)."""
    return lst.items[0] if lst is not None and lst.items else None


def qkv_d(a) -> tuple[int, int, int] | None:
    """GetQkvD (tiling_v3.cpp): (query D, queryRope D, value D) from the storage shapes, or None."""
    q, v = a.query, first(a.value)
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    layout = a.inputLayout or "BSH"
    rope = a.queryRopeOptional
    four = ("BNSD_BSND", "BSND_BNSD", "BNSD_NBSD", "BSND_NBSD", "BNSD", "BSND")
    three_h = ("BSH", "BSH_NBSD", "BSH_BNSD")
    packed = ("TND", "NTD", "TND_NTD", "NTD_TND")
    if layout in four and q.ndim == 4:
        qd, rd = q.shape[3], rope.shape[3] if rope is not None and rope.ndim == 4 else 0
    elif layout in three_h and q.ndim == 3 and heads:
        qd, rd = q.shape[2] // heads, rope.shape[2] // heads if rope is not None and rope.ndim == 3 else 0
    elif layout in packed and q.ndim == 3:
        qd, rd = q.shape[2], rope.shape[2] if rope is not None and rope.ndim == 3 else 0
    else:
        return None
    vs = v.shape
    if a.blockTableOptional is not None:  # GetPaValueD: BnBsH, BnNBsD or NZ by rank, else no D
        vd = paged_value_d(vs, kv_heads)
    elif layout in four:
        vd = vs[3] if len(vs) == 4 else None
    elif layout in three_h:
        vd = vs[2] // kv_heads if len(vs) == 3 and kv_heads else None
    else:
        vd = vs[2] if len(vs) == 3 else None
    return None if vd is None else (qd, rd, vd)


def nsd_d(a, kv_heads: int) -> tuple[int, int, int] | None:
    """An NSD query's (D, 0, value D), which GetQkvD does not read (its calls always leave RouteToFia
    for the PFA tiling): the value [N2, S, D], or a paged one by its rank."""
    v = first(a.value)
    vd = paged_value_d(v.shape, kv_heads) if a.blockTableOptional is not None else shape_dim(v.shape, 2)
    return None if vd is None or a.query.ndim != 3 else (a.query.shape[2], 0, vd)


class Route:
    def __init__(self, a, env):
        self.a, self.env = a, env
        self.layout = a.inputLayout or "BSH"
        self.base, self.out_layout = split(self.layout)
        self.heads = attr_uint32(a.numHeads)
        self.kv_heads = attr_uint32(a.numKeyValueHeads) or self.heads
        self.paged = a.blockTableOptional is not None
        self.rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None

    def shape_facts(self) -> tuple[Axes, tuple[int, int, int]]:
        """(query axes, (qD, ropeD, vD)); sets legacy_ifa and sparse. GetLegacyIfaFlag /
        GetUpdateInfo: S = 1 in BSH/BSND/BNSD without rope (qD = vD) runs as the old IFA did:
        sparse mode 0, tokens INT_MAX, no query lengths or padding."""
        a = self.a
        try:
            axes = query_axes(a.query.shape, "NTD" if self.base == "NTD" else self.base, self.heads)
        except (ValueError, IndexError, ZeroDivisionError):
            raise tiling("query_rank", f"query {list(a.query.shape)} does not fit {self.layout}") from None
        dims = nsd_d(a, self.kv_heads) if self.base == "NSD" else qkv_d(a)
        if dims is None:
            raise tiling("shape", f"query/value shapes do not fit inputLayout {self.layout}")
        qd, _, vd = dims
        self.legacy_ifa = self.base in ("BSH", "BSND", "BNSD") and axes.s == 1 and qd == vd and not self.rope
        self.sparse = 0 if self.legacy_ifa else attr_int32(a.sparseMode)
        return axes, dims
