"""What the KV-cache kernels report instead of doing what the hardware leaves undefined.

A finding is (sanitizer kind, message); kernels return them and the op module reports them.
"""

import numpy as np

Finding = tuple[str, str]
OUT_OF_RANGE = "index-out-of-range"
OUT_OF_BOUNDS_READ = "out-of-bounds-read"
WRITE_RACE = "write-race"
UNINITIALIZED_READ = "uninitialized-read"
DIVIDE_BY_ZERO = "divide-by-zero"


def all_distinct(targets: np.ndarray, limit: int) -> bool:
    """Whether no target in [0, limit) repeats: marked in a [0, limit) map, without sorting, unless
    that map would be much larger than the list."""
    if limit > 64 * len(targets) + (1 << 20):
        return len(np.unique(targets)) == len(targets)
    seen = np.zeros(limit, np.bool_)
    seen[targets] = True
    return int(np.count_nonzero(seen)) == len(targets)


def listed(values) -> str:
    """The first few of some values, for a message."""
    values = np.asarray(values).reshape(-1)
    return f"{values[:8].tolist()}{' …' if len(values) > 8 else ''}"
