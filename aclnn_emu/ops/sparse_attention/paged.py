"""The page table of the forward operators' PA_BSND key layout, as their kernels read it."""

import numpy as np

from ...runtime import sanitizer


def block_table(tensor, blocks: int, op_name: str) -> np.ndarray:
    """The int64 block table; entries outside [0, blocks) would make the NPU read other memory:
    they are reported and clamped."""
    table = tensor.read("blockTable").astype(np.int64)
    if table.size and (table.min() < 0 or table.max() >= blocks):
        sanitizer.report(
            "index-out-of-range",
            f"aclnn{op_name}: the block table names blocks outside [0, {blocks}); "
            "the NPU reads other memory there, aclnn-emu clamps them",
        )
        table = np.clip(table, 0, blocks - 1)
    return table
