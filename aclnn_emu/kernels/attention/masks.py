"""Band (token window) masks for blocks of an attention score matrix.

Shared by the attention kernels. A band keeps key j for query row i when
``-pre <= j - i <= next`` (both bounds inclusive, both anchored at the top-left corner; callers
shift pre/next to anchor elsewhere). Rows and columns are absolute indices, so a kernel can ask for
any block [i0, i1) x [j0, j1) without building the whole S1 x S2 matrix.
"""

import numpy as np


def band_masked(i0: int, i1: int, j0: int, j1: int, pre: int, next_: int) -> np.ndarray | None:
    """Boolean [i1-i0, j1-j0], True where key j lies outside row i's band; None if nothing is."""
    if band_holds(i0, i1, j0, j1, pre, next_):
        return None
    offset = np.arange(j0, j1, dtype=np.int64)[None, :] - np.arange(i0, i1, dtype=np.int64)[:, None]
    return (offset > next_) | (offset < -pre)


def band_holds(i0: int, i1: int, j0: int, j1: int, pre: int, next_: int) -> bool:
    """Whether every key of [j0, j1) lies within the band of every row of [i0, i1)."""
    return j1 - 1 - i0 <= next_ and (i1 - 1) - j0 <= pre


def band_key_range(i0: int, i1: int, pre: int, next_: int, s2: int) -> tuple[int, int]:
    """The smallest [j0, j1) within [0, s2) holding every in-band key of rows [i0, i1)."""
    j0 = min(max(i0 - pre, 0), s2)
    j1 = max(min(i1 - 1 + next_ + 1, s2), j0)
    return j0, j1
