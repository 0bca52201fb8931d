"""aclnnGatherPaKvCache's hand-written op_api of CANN 9.1.0 (versions.RULES "gpkc.hand_written_op_api";
attention/gather_pa_kv_cache/op_host/op_api/aclnn_gather_pa_kv_cache.cpp at branch 9.1.0), which
replaces the generated entry point's checks: CheckNullptr, the empty shortcut, CheckShape,
CheckDtypeValid, in that order. What follows them (the l0op's infershape, kernel lookup and tiling)
is common.l0op's."""

from aclnn_emu import status
from aclnn_emu.opdef.signature import OpError
from aclnn_emu.ops.kv_cache.common import (
    DTYPES_OP_API_FP8,
    DTYPES_OP_API_INTEGERS,
    INDEX_DTYPES,
    op_api_dtype,
    op_api_same_dtype,
)

ARCH35 = "Ascend910_95"
REQUIRED = ("keyCache", "valueCache", "blockTables", "seqLens", "keyRef", "valueRef")
RANKS = {"keyCache": (4,), "valueCache": (4,), "blockTables": (2,), "seqLens": (1,), "keyRef": (2, 3),
         "valueRef": (2, 3)}  # fmt: skip


def checks(a, env) -> bool:
    """The op_api's checks; False when it returns at once with nothing to launch."""
    for name in REQUIRED:
        if getattr(a, name) is None:
            raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")
    if any(getattr(a, name).is_empty for name in ("keyCache", "valueCache", "keyRef", "valueRef")):
        return False
    for name, ranks in RANKS.items():
        if getattr(a, name).ndim not in ranks:
            raise OpError(
                status.ACLNN_ERR_PARAM_INVALID,
                f"The dim num of {name} must be {' or '.join(map(str, ranks))}, but got {getattr(a, name).ndim}",
                rule=f"rank.{name}",
            )
    _check_dtype_valid(a, DTYPES_OP_API_FP8 if env.soc == ARCH35 else DTYPES_OP_API_INTEGERS)
    return True


def _check_dtype_valid(a, allowed) -> None:
    for name in REQUIRED:
        op_api_dtype(name, getattr(a, name), INDEX_DTYPES if name in ("blockTables", "seqLens") else allowed)
    op_api_same_dtype("keyCache", a.keyCache, "keyRef", a.keyRef)
    op_api_same_dtype("valueCache", a.valueCache, "valueRef", a.valueRef)
    op_api_same_dtype("blockTables", a.blockTables, "seqLens", a.seqLens)
    if a.seqOffsetOptional is not None:
        op_api_dtype("seqOffsetOptional", a.seqOffsetOptional, INDEX_DTYPES)
        op_api_same_dtype("blockTables", a.blockTables, "seqOffsetOptional", a.seqOffsetOptional)
