"""The page table of the forward operators' PA_BSND key layout, as their kernels read it."""

import numpy as np

from ... import status
from ...opdef.signature import OpError
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


def check_table_extent(op_name: str, table: np.ndarray, block_size: int, batches, lengths) -> None:
    """The kernels read blockTable[b * columns + p / blockSize] for every position p below a batch's
    length, flat: a length past its row's blocks reads the next row's entries, and one past the last
    row's reads outside the table (the AI Core exception of a read out of bounds)."""
    need = -(-np.asarray(lengths, np.int64) // block_size)
    live = need > 0
    last = np.asarray(batches, np.int64)[live] * table.shape[1] + need[live] - 1
    if (last >= table.size).any():
        raise OpError(
            status.ACL_ERROR_RT_AICORE_EXCEPTION,
            f"aclnn{op_name}: actual sequence lengths need blockTable entries past its {table.size} "
            f"({table.shape[1]} blocks of {block_size} per batch); the NPU reads out of bounds",
            rule="kernel.block_table_extent",
        )
