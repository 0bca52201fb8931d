"""Attention tensor layouts (BSH, SBH, BSND, BNSD, and the packed SH, TND) as views in [B, N, S, D] order.

Shared by the attention kernels: element (b, n, s, d) of a layout is
  BSH  [B, S, N*D] at [b][s][n*D + d]      SBH  [S, B, N*D] at [s][b][n*D + d]
  BSND [B, S, N, D]                        BNSD [B, N, S, D]
The packed layouts hold every batch's rows one after another and view as B = 1; a batch is a
range of rows (`segments`):
  SH   [T, N*D] at [t][n*D + d]            TND  [T, N, D]
For the layouts with an H axis the head count is not part of the shape and must be given.
"""

from typing import cast

import numpy as np

LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "SH", "TND")
PACKED = ("SH", "TND")


def to_bnsd(x: np.ndarray, layout: str, heads: int | None = None) -> np.ndarray:
    """A [B, N, S, D] view of ``x`` (no copy); B is 1 for the packed layouts. ``heads`` is
    required for BSH, SBH and SH."""
    if layout == "BNSD":
        return x
    n = cast(int, heads)  # given for the layouts that need it (a None fails in reshape)
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout in ("BSH", "SBH"):
        rows, cols, hidden = x.shape
        split = x.reshape(rows, cols, n, hidden // n)
        return split.transpose(0, 2, 1, 3) if layout == "BSH" else split.transpose(1, 2, 0, 3)
    if layout == "SH":
        rows, hidden = x.shape
        return x.reshape(1, rows, n, hidden // n).transpose(0, 2, 1, 3)
    if layout == "TND":
        return x[None].transpose(0, 2, 1, 3)
    raise ValueError(f"unknown attention layout {layout!r}; expected one of {LAYOUTS}")


def segments(lengths) -> list[tuple[int, int]]:
    """(first row, row count) of each batch of a packed layout whose batches hold ``lengths`` rows."""
    starts: np.ndarray | list = (
        np.concatenate(([0], np.cumsum(np.asarray(lengths, np.int64))[:-1])) if len(lengths) else []
    )
    return [(int(s), int(n)) for s, n in zip(starts, lengths)]
