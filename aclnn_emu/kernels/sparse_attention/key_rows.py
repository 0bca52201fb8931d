"""Where the key rows of a batch live, for the forward kernels of the sparse-attention family.

A key position p (0-based within batch b) is the flat key row ``kbase[b] + p`` in the contiguous
layouts (BSND: kbase = b*S2, TND: the cumulative offset), and in PA_BSND the row
``block_table.flat[b * columns + p // block_size] * block_size + p % block_size`` of the
[blocks * block_size, D] cache (LightningIndexer and SparseFlashAttention address the page table
the same way, flat: a length past a row's blocks reads the next row's entries).
"""

import dataclasses
from typing import Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class KeyRows:
    kbase: np.ndarray  # int64 [B]: first key row of each batch (contiguous)
    table: Optional[np.ndarray] = None  # int64 [B, blocks per batch] (paged), else None
    block_size: int = 0

    def rows(self, batch: int, positions: np.ndarray) -> np.ndarray:
        """Flat key rows of ``positions`` (int64, any shape) of ``batch``."""
        positions = np.asarray(positions, np.int64)
        if self.table is None:
            return self.kbase[batch] + positions
        # The kernels index the table flat (batch * columns + block): a length past a row's blocks
        # reads on into the next row. Reads past the table's end are refused before the launch.
        entries = self.table.reshape(-1)
        flat = np.minimum(batch * self.table.shape[1] + positions // self.block_size, entries.size - 1)
        return entries[flat] * self.block_size + positions % self.block_size

    def span(self, batch: int, length: int) -> np.ndarray | slice:
        """Rows of positions [0, length): a slice when they are contiguous (no copy needed)."""
        if self.table is None:
            start = int(self.kbase[batch])
            return slice(start, start + length)
        return self.rows(batch, np.arange(length))
