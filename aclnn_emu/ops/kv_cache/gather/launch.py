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


def _index(a) -> tuple:
    """seqLens, blockTables and seqOffset (or None) as the kernels read them, in their dtype."""
    offsets = a.seqOffsetOptional
    read = [index_values(OP, t) for t in (a.seqLens, a.blockTables, offsets) if t is not None]
    for kind, message in (finding for _, found in read for finding in found):
        sanitizer.report(kind, f"{OP.phase2}: {message}")
    return read[0][0], read[1][0], read[2][0] if offsets is not None else None
