"""What the KV-cache op modules share: the arch35 data types, tiling failures, the flat device
data the kernels read, the launch that reports the kernels' findings, and the pieces of the
hand-written op_api both operators have from CANN 9.1.0."""

import numpy as np

from ...dtypes import DataType
from ...kernels.kv_cache.findings import OUT_OF_BOUNDS_READ
from ...runtime import sanitizer
from ... import status
from ...opdef.failures import fail, mapped
from ...opdef.generated import before_tiling, check_kernel_key, tiling_failed
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


# -- the hand-written op_api of 9.1.0 (versions.RULES spkc/gpkc.hand_written_op_api) -------------------
# CheckDtypeValid's lists of data types, shared by both operators' op_api.
DTYPES_OP_API_A2 = (DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8)  # ScatterPaKvCache on A2/A3
DTYPES_OP_API_INTEGERS = (
    DataType.ACL_FLOAT16,
    DataType.ACL_FLOAT,
    DataType.ACL_BF16,
    DataType.ACL_INT8,
    DataType.ACL_UINT8,
    DataType.ACL_INT16,
    DataType.ACL_UINT16,
    DataType.ACL_INT32,
    DataType.ACL_UINT32,
)  # GatherPaKvCache on A2/A3
DTYPES_OP_API_FP8 = (
    *DTYPES_OP_API_INTEGERS,
    DataType.ACL_HIFLOAT8,
    DataType.ACL_FLOAT8_E5M2,
    DataType.ACL_FLOAT8_E4M3FN,
)  # GatherPaKvCache on Ascend950
DTYPES_OP_API_FP4 = (*DTYPES_OP_API_FP8, DataType.ACL_FLOAT4_E1M2, DataType.ACL_FLOAT4_E2M1)  # ScatterPaKvCache there
INDEX_DTYPES = (DataType.ACL_INT32, DataType.ACL_INT64)


def op_api_dtype(name: str, tensor, allowed) -> None:
    """CheckDtypeValid's range check of one tensor (161002)."""
    if tensor.dtype not in allowed:
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"The dtype of {name} must be within the range [{', '.join(d.short for d in allowed)}], "
            f"but got {tensor.dtype.short}",
            rule=f"dtype.{name}",
        )


def op_api_same_dtype(first: str, a, second: str, b, when: str = "") -> None:
    """CheckDtypeValid's equality check of two tensors' data types (161002)."""
    if a.dtype != b.dtype:
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"The data type of {first} [{a.dtype.short}] and {second} [{b.dtype.short}] must be equal{when}",
            rule=f"dtype.{second}",
        )


def l0op(a, op, combos, env, tiling):
    """The l0op behind the 9.1.0 op_api: the kernel lookup on the OpDef's combinations, then `tiling()`.
    Either failing makes the l0op return nullptr, which the op_api's CHECK_RET turns into
    ACLNN_ERR_INNER_NULLPTR (561103)."""
    with mapped(status.ACLNN_ERR_INNER_NULLPTR, "l0op failed (ADD_TO_LAUNCHER_LIST_AICORE): ", "l0op."):
        try:
            check_kernel_key(a, op, combos, env.soc)
        except OpError as error:
            fail(error.rule, error.message, error.chips)
        return tiling()


def prepare_by_release(a, env, op, combos, hand_written, op_api_checks, tiling):
    """Where a release has a hand-written op_api (the `hand_written` flag: CANN 9.1.0) its checks
    run first and the tiling runs behind the l0op; otherwise the generated entry point's checks run
    (before_tiling) and a tiling failure is 561002."""
    if env.version.has(hand_written):
        if not op_api_checks(a, env):
            return Launch.nothing()
        return l0op(a, op, combos, env, lambda: tiling(a, env))
    return _generated(a, op, combos, env, tiling)


@tiling_failed
def _generated(a, op, combos, env, tiling):
    if not before_tiling(a, op, combos, env.soc):
        return Launch.nothing()
    return tiling(a, env)
