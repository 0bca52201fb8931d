"""aclnnGatherPaKvCache: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu.ops.kv_cache.common import flat, index_values
from aclnn_emu.runtime import sanitizer
from .entry import OP


# ---------------------------------------------------------------------------------------------
# Device data as the kernels see it
# ---------------------------------------------------------------------------------------------
_NAMES = (("keyRef", "keyCache"), ("valueRef", "valueCache"))


def _bytes(tensor) -> np.ndarray:
    return flat(OP, tensor, np.uint8)


def _index(a, batches: int, cols: int, cumsum: bool) -> tuple:
    """seqLens, blockTables and seqOffset (or None) as the kernels read them, in their dtype: as many
    values as the tiling's batch count and table width make them read, zeros (reported) past a
    tensor's storage."""
    counts = ((a.seqLens, batches + cumsum), (a.blockTables, batches * cols), (a.seqOffsetOptional, batches))
    read = [index_values(OP, t, max(n, 0)) for t, n in counts if t is not None]
    for kind, message in (finding for _, found in read for finding in found):
        sanitizer.report(kind, f"{OP.phase2}: {message}")
    return read[0][0], read[1][0], read[2][0] if a.seqOffsetOptional is not None else None
