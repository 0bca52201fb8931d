"""Attention tensor layouts (BSH, SBH, BSND, BNSD) as views in [B, N, S, D] order.

Shared by the attention kernels: element (b, n, s, d) of a layout is
  BSH  [B, S, N*D] at [b][s][n*D + d]      SBH  [S, B, N*D] at [s][b][n*D + d]
  BSND [B, S, N, D]                        BNSD [B, N, S, D]
For the 3-D layouts the head count is not part of the shape and must be given.
"""
import numpy as np

LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")


def to_bnsd(x: np.ndarray, layout: str, heads: int | None = None) -> np.ndarray:
    """A [B, N, S, D] view of ``x`` (no copy). ``heads`` is required for BSH and SBH."""
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout in ("BSH", "SBH"):
        rows, cols, hidden = x.shape
        split = x.reshape(rows, cols, heads, hidden // heads)
        return split.transpose(0, 2, 1, 3) if layout == "BSH" else split.transpose(1, 2, 0, 3)
    raise ValueError(f"unknown attention layout {layout!r}; expected one of {LAYOUTS}")


def bnsd_shape(shape: tuple, layout: str, heads: int | None = None) -> tuple:
    """(B, N, S, D) of a tensor of ``shape`` in ``layout``, without touching data."""
    return to_bnsd(np.broadcast_to(np.zeros((), np.int8), shape), layout, heads).shape


def from_bnsd(x: np.ndarray, layout: str) -> np.ndarray:
    """A C-contiguous array in ``layout`` holding the [B, N, S, D] array ``x``."""
    b, n, s, d = x.shape
    if layout == "BNSD":
        arranged = x
    elif layout == "BSND":
        arranged = x.transpose(0, 2, 1, 3)
    elif layout == "BSH":
        arranged = x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    elif layout == "SBH":
        arranged = x.transpose(2, 0, 1, 3).reshape(s, b, n * d)
    else:
        raise ValueError(f"unknown attention layout {layout!r}; expected one of {LAYOUTS}")
    return np.ascontiguousarray(arranged)
