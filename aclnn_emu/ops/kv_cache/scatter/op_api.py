"""aclnnScatterPaKvCache's hand-written op_api of CANN 9.1.0 (versions.RULES "spkc.hand_written_op_api";
attention/scatter_pa_kv_cache/op_host/op_api/aclnn_scatter_pa_kv_cache.cpp at branch 9.1.0), which
replaces the generated entry point's checks: CheckNullptr, the empty shortcut, CheckShape,
CheckDtypeValid, in that order. What follows them (the l0op's kernel lookup and tiling) is
common.l0op's."""

from aclnn_emu import status
from aclnn_emu.opdef.signature import OpError
from aclnn_emu.ops.kv_cache.common import (
    DTYPES_OP_API_A2,
    DTYPES_OP_API_FP4,
    INDEX_DTYPES,
    op_api_dtype,
    op_api_same_dtype,
)

ARCH35 = "Ascend910_95"
INDEX_OPTIONALS = ("compressLensOptional", "compressSeqOffsetOptional", "seqLensOptional")


def checks(a, env) -> bool:
    """The op_api's checks; False when it returns at once with nothing to launch."""
    _check_nullptr(a)
    key_empty = a.key.is_empty or a.keyCacheRef.is_empty
    if key_empty and (a.value is None or a.value.is_empty or a.valueCacheRef.is_empty):
        return False
    _check_shape(a)
    _check_dtype_valid(a, DTYPES_OP_API_FP4 if env.soc == ARCH35 else DTYPES_OP_API_A2)
    return True


def _check_nullptr(a) -> None:
    """CheckNullptr, whose failure the op_api returns as ACLNN_ERR_INNER_NULLPTR: a null value is
    allowed, a null valueCacheRef only with it."""
    for name in ("key", "keyCacheRef", "slotMapping", *(("valueCacheRef",) if a.value is not None else ())):
        if getattr(a, name) is None:
            raise OpError(status.ACLNN_ERR_INNER_NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")


def _check_shape(a) -> None:
    if a.key.ndim not in (3, 4):
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID, f"The dim num of key must be 3 or 4, but got {a.key.ndim}", rule="rank.key"
        )
    if a.value is not None and a.value.ndim not in (0, 3, 4):
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"The dim num of value must be 0, 3 or 4, but got {a.value.ndim}",
            rule="rank.value",
        )


def _check_dtype_valid(a, allowed) -> None:
    op_api_dtype("key", a.key, allowed)
    op_api_dtype("keyCacheRef", a.keyCacheRef, allowed)
    op_api_dtype("slotMapping", a.slotMapping, INDEX_DTYPES)
    op_api_same_dtype("key", a.key, "keyCacheRef", a.keyCacheRef)
    if a.value is not None:
        op_api_dtype("value", a.value, allowed)
        op_api_dtype("valueCacheRef", a.valueCacheRef, allowed)
        op_api_same_dtype("value", a.value, "valueCacheRef", a.valueCacheRef)
        if a.cacheModeOptional != "PA_NZ":
            op_api_same_dtype("key", a.key, "value", a.value, " when cacheMode is not PA_NZ")
    for name in INDEX_OPTIONALS:
        if getattr(a, name) is not None:
            op_api_same_dtype("slotMapping", a.slotMapping, name, getattr(a, name))
