"""What the KV-cache op modules share: the arch35 data types, tiling failures, the flat device
data the kernels read, and the launch that reports the kernels' findings."""

import numpy as np

from ...dtypes import DataType
from ...kernels.kv_cache.findings import OUT_OF_BOUNDS_READ
from ...runtime import sanitizer
from ... import status
from ...opdef.signature import Launch, OpError

# The data types both operators register for ascend910_95 (ScatterPaKvCache's config_arch35,
# GatherPaKvCache's kvDtype): key, value and both caches share one of them.
DTYPES_ARCH35 = [
    DataType.ACL_FLOAT,
    DataType.ACL_FLOAT16,
    DataType.ACL_BF16,
    DataType.ACL_INT8,
    DataType.ACL_UINT8,
    DataType.ACL_INT16,
    DataType.ACL_UINT16,
    DataType.ACL_INT32,
    DataType.ACL_UINT32,
    DataType.ACL_HIFLOAT8,
    DataType.ACL_FLOAT8_E5M2,
    DataType.ACL_FLOAT8_E4M3FN,
]
# The cache layouts both operators take (their cacheMode attribute; NULL means Norm).
CACHE_MODES = ("Norm", "PA_NZ")
# ASCENDC_TOOLS_WORKSPACE, which the A2/A3 tilings of both ask for.
TOOLS_WORKSPACE = 16 * 1024 * 1024


def flat(op, tensor, unit=None) -> np.ndarray:
    """The tensor's storage from its first element on, optionally as `unit` elements (kernels
    that address device memory directly)."""
    return tensor.storage(f"{op.phase2} {tensor!r}", unit)


FAR_PAST = 1 << 20  # index values read past a tensor's storage beyond which the read faults here


def index_values(op, tensor, count=None, unit=None) -> tuple[np.ndarray, list]:
    """The first `count` values (default: the view's element count) of an index tensor (lengths,
    tables, slots, offsets) as the kernels read them, contiguously from its first element, optionally
    as `unit` elements; with the findings for those past its storage, which read as 0 here."""
    values = flat(op, tensor, unit)
    count = tensor.numel if count is None else count
    if len(values) >= count:
        return values[:count], []
    if count - len(values) > FAR_PAST:
        raise OpError(
            status.ACL_ERROR_RT_AICORE_EXCEPTION,
            f"{op.phase2}: {tensor!r}: the kernel reads {count} values from its first element, "
            f"{count - len(values)} of them past its storage (AI Core exception on the device)",
            rule="kernel.index_past_storage",
        )
    finding = (
        OUT_OF_BOUNDS_READ,
        f"{tensor!r}: the kernel reads {count} values but the tensor holds {len(values)}; "
        "the missing ones read as 0 here",
    )
    return np.concatenate([values, np.zeros(count - len(values), values.dtype)]), [finding]


def launch(op, workspace_size: int, run) -> Launch:
    """Phase 2 runs `run()` on the stream and reports each (kind, message) finding it returns."""

    def task(workspace):
        for kind, message in run():
            sanitizer.report(kind, f"{op.phase2}: {message}")

    return Launch(workspace_size, task)
