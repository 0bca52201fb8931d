"""Bindings of the operator entry points (aclnnXxxGetWorkspaceSize and aclnnXxx), one pair per
operator declared under aclnn_emu.ops, and the undeclared phase-1 functions some of them export
(Op.undeclared)."""

from .. import status
from ..opdef import calls
from . import boundary
from .boundary import addr, need, obj
from .. import meta


def _value(param, value):
    if param.kind == "tensor":
        return obj(value, meta.Tensor, param.name)
    if param.kind == "tensor_list":
        return obj(value, meta.TensorList, param.name)
    if param.kind == "scalar":
        return obj(value, meta.Scalar, param.name)
    if param.kind.endswith("_array"):
        array = obj(value, meta.Array, param.name)
        return None if array is None else array.values
    if param.kind == "string":
        return None if value == boundary.ffi.NULL else boundary.ffi.string(value).decode("utf-8", "replace")
    return value


def get_workspace_size(op, name: str | None = None):
    """Phase 1 of `op` as a C function: the header's, or the undeclared one called `name`."""

    def phase1(*args):
        *values, ws_out, executor_out = args
        need(ws_out, "workspaceSize", status.ACLNN_ERR_PARAM_NULLPTR)
        need(executor_out, "executor", status.ACLNN_ERR_PARAM_NULLPTR)
        converted = [_value(p, v) for p, v in zip(op.params, values)]
        code, size, handle = calls.get_workspace_size(op, converted, phase1=name)
        if code == status.ACLNN_SUCCESS:
            ws_out[0] = size
            executor_out[0] = boundary.ffi.cast("void *", handle)
        return code

    return phase1


def functions(op) -> list[tuple[str, object]]:
    """(C name, binding) of every function `op` exports: both phases, then its undeclared ones."""
    pairs = [(op.phase1, get_workspace_size(op)), (op.phase2, launch(op))]
    return pairs + [(name, get_workspace_size(op, name)) for name in op.undeclared_phase1]


def launch(op):
    def phase2(workspace, size, executor, stream):
        return calls.run(op.name, addr(workspace), size, addr(executor), addr(stream))

    return phase2
