"""aclnnGatherPaKvCache: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu.ops.kv_cache.common import flat
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
    return flat(OP, a.seqLens), flat(OP, a.blockTables), None if offsets is None else flat(OP, offsets)
