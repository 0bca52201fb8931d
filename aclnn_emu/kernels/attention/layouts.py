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

