"""FusedInferAttentionScore's inputLayout: the query's axes, the output layout after '_', the
shapes of attentionOut and softmaxLse, and [B, N, S, D] views of the query and the output.

An element (b, n, s, d) sits at BSH [b][s][n*D + d], BSND [b][s][n][d], BNSD [b][n][s][d],
NBSD [n][b][s][d]; TND holds batch b's rows after those of the batches before it ([T, N, D]),
NTD likewise as [N, T, D].
"""

from dataclasses import dataclass

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.fused_infer_attention import INT4_PER_INT32
from aclnn_emu.opdef.generated import attr_uint32, shape_dim

PACKED = ("TND", "NTD")
RANK = {"BSH": 3, "BSND": 4, "BNSD": 4, "TND": 3, "NTD": 3, "NSD": 3, "SH": 2}


def split(layout: str) -> tuple[str, str]:
    """(input layout, output layout): 'BNSD_BSND' -> ('BNSD', 'BSND'), 'BSH' -> ('BSH', 'BSH')."""
    parts = (layout or "BSH").split("_")
    return parts[0], parts[-1]


@dataclass(frozen=True)
class Axes:
    """The query's axes: batch, heads, rows per batch (T for the packed layouts), head size."""

    b: int
    n: int
    s: int
    d: int


def query_axes(shape, layout: str, heads: int) -> Axes:
    """B, N, S, D of a query of ``layout`` (the input part); BSH's D is H / numHeads."""
    if layout == "BSH":
        return Axes(shape[0], heads, shape[1], shape[2] // heads if heads else 0)
    if layout == "BSND":
        return Axes(shape[0], shape[2], shape[1], shape[3])
    if layout == "BNSD":
        return Axes(shape[0], shape[1], shape[2], shape[3])
    if layout == "TND":
        return Axes(1, shape[1], shape[0], shape[2])
    if layout in ("NTD", "NSD"):
        return Axes(1, shape[0], shape[1], shape[2])
    raise ValueError(layout)


# GetQueryS (fused_infer_attention_score_tiling.cpp): the query axis read as S; every other layout
# (the packed ones, and BSH_BNSD / BSND_BNSD, which its lists miss) reads axis 0.
_QUERY_S_AXIS = {
    **dict.fromkeys(("NSD", "BSH", "BSH_NBSD", "BSND_NBSD", "BSND", "NTD_TND"), 1),
    **dict.fromkeys(("BNSD_BSND", "BNSD_NBSD", "BNSD"), 2),
}


def query_s(a) -> int:
    """The query's S as the A2/A3 FIA tiling reads it (GetQueryS): 0 past the query's rank."""
    return shape_dim(a.query.shape, _QUERY_S_AXIS.get(a.inputLayout or "BSH", 0))


# GetQueryD (fused_infer_attention_score_tiling.cpp): the layouts whose query D is axis 2 or 3; every
# other one (BSH, BSH_NBSD, BSH_BNSD, BSND_BNSD) reads H / numHeads off axis 2.
_QUERY_D_AXIS = {
    **dict.fromkeys(("NSD", "TND", "TND_NTD", "NTD_TND"), 2),
    **dict.fromkeys(("BNSD_BSND", "BNSD_NBSD", "BNSD", "BSND_NBSD", "BSND"), 3),
}


def query_d(a) -> int:
    """The query's D as the A2/A3 FIA tiling reads it before routing (GetQueryD)."""
    axis = _QUERY_D_AXIS.get(a.inputLayout or "BSH")
    if axis is not None:
        return shape_dim(a.query.shape, axis)
    heads = attr_uint32(a.numHeads)
    return shape_dim(a.query.shape, 2) // heads if heads else 0


def seq_len(shape, layout: str) -> int:
    """The S (T for the packed layouts) axis of a tensor of ``layout`` (0 past its rank, as gert::Shape)."""
    return shape_dim(shape, {"BSH": 1, "BSND": 1, "BNSD": 2, "TND": 0, "NTD": 1, "NSD": 1}[layout])


def key_rows(a, layout: str) -> int:
    """S2 as the tiling reads it: a paged cache's capacity (blockTable columns x blockSize), the
    longest tensor of a key list, or the key's S."""
    if a.blockTableOptional is not None:
        return a.blockTableOptional.shape[1] * a.blockSize
    return max(seq_len(t.shape, layout) for t in a.key.items)


def shaped(axes: Axes, layout: str, d: int) -> tuple:
    """A tensor of ``layout`` with the axes of ``axes`` and head size ``d``."""
    b, n, s = axes.b, axes.n, axes.s
    return {
        "BSH": (b, s, n * d),
        "BSND": (b, s, n, d),
        "BNSD": (b, n, s, d),
        "NBSD": (n, b, s, d),
        "TND": (s, n, d),
        "NTD": (n, s, d),
        "NSD": (n, s, d),
    }[layout]


def to_bnsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """A [B, N, S, D] view (B = 1 for the packed layouts)."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)
    if layout == "NBSD":
        return x.transpose(1, 0, 2, 3)
    if layout == "TND":
        return x[None].transpose(0, 2, 1, 3)
    if layout in ("NTD", "NSD"):
        return x[None]
    raise ValueError(layout)


def paged_value_d(shape, kv_heads: int) -> int | None:
    """A paged value's head size by its rank ([blocks, blockSize, N2*D], [blocks, N2, blockSize, D],
    NZ [blocks, N2, D1, blockSize, D0]), None for any other rank."""
    if len(shape) == 3:
        return shape[2] // kv_heads if kv_heads else 0
    if len(shape) == 4:
        return shape[3]
    return shape[2] * shape[4] if len(shape) == 5 else None


def _value_d(a, kv_heads: int) -> int | None:
    """The value's head size, from its first tensor and the layout (paged caches by their rank); an
    INT32 one is read as INT4 (V2-V4's TensorPreProcess: last dimension x 8)."""
    items = a.value.items if a.value is not None else []
    if not items or items[0] is None:
        return None
    v = items[0].shape
    if v and items[0].dtype == DataType.ACL_INT32:
        v = (*v[:-1], v[-1] * INT4_PER_INT32)
    if a.blockTableOptional is not None:
        return paged_value_d(v, kv_heads)
    base = split(a.inputLayout)[0]
    if base == "BSH":
        return v[-1] // max(kv_heads, 1) if len(v) == 3 else None
    return v[-1] if v else None


def kv_heads_of(a) -> int:
    heads = attr_uint32(a.numHeads)
    return attr_uint32(a.numKeyValueHeads) or heads


def attention_out_rule(a):
    """attentionOut: the query's axes in the output layout with the value's head size; INT8 with
    quantScale2, FLOAT16 for an INT8 query, else the query's dtype."""
    q = getattr(a, "query", None)
    if q is None:
        return None
    quant2 = getattr(a, "quantScale2Optional", getattr(a, "quantScale2", None))
    dtype = (
        DataType.ACL_INT8 if quant2 is not None else DataType.ACL_FLOAT16 if q.dtype == DataType.ACL_INT8 else q.dtype
    )
    base, out = split(a.inputLayout)
    heads = attr_uint32(a.numHeads)
    try:
        axes = query_axes(q.shape, base, heads)
        dv = _value_d(_Named(a), kv_heads_of(a)) or axes.d
        return shaped(axes, out, dv), dtype
    except (ValueError, IndexError, ZeroDivisionError, KeyError):  # the checks will say what is wrong
        return q.shape, dtype


def softmax_lse_rule(a):
    """softmaxLse: FLOAT [B, N, S1, 1] ([T, N, 1] for TND/NTD); None when softmaxLseFlag is false."""
    q = getattr(a, "query", None)
    if q is None or not a.softmaxLseFlag:
        return None
    base = split(a.inputLayout)[0]
    try:
        axes = query_axes(q.shape, base, attr_uint32(a.numHeads))
    except (ValueError, IndexError, ZeroDivisionError):
        return None
    shape = (axes.s, axes.n, 1) if base in PACKED else (axes.b, axes.n, axes.s, 1)
    return shape, DataType.ACL_FLOAT


class _Named:
    """V1's arguments read through V2-V4's names (blockTable -> blockTableOptional)."""

    def __init__(self, a):
        self._a = a

    def __getattr__(self, name):
        a = self._a
        return getattr(a, name) if hasattr(a, name) else getattr(a, name.removesuffix("Optional"))
