"""The two-phase contract shared by every operator, for C and Python callers alike.

Phase 1 runs the op's checks and returns (status, workspace size, executor handle); phase 2 checks
the executor and workspace and puts the launch on the stream. Both return status codes, never raise.
"""
import logging
import time
import traceback

from .. import status
from ..meta import Executor, Tensor
from ..runtime import api as rt
from ..runtime import devices, handles, sanitizer
from ..runtime.errors import AclError, log, record
from .signature import Env


def get_workspace_size(op, values) -> tuple[int, int, int]:
    """Phase 1 with already converted arguments (Tensor/None/tuple/int/float/bool/str)."""
    try:
        if op.prepare_fn is None:
            raise AclError(status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                           f"{op.name} is not implemented in aclnn-emu", rule="not_implemented")
        args = op.bind(values)
        launch = op.prepare_fn(args, Env(op.name))
        executor = Executor(op.name, launch)
        if log.isEnabledFor(logging.DEBUG):   # describing the arguments costs more than the checks
            log.debug("%s(%s) -> workspace %d, executor %#x", op.phase1, _describe(op, values),
                      launch.workspace_size, executor.handle)
        return status.ACLNN_SUCCESS, int(launch.workspace_size), executor.handle
    except AclError as exc:
        record(exc.code, f"{op.phase1}: {exc.message}")
        return exc.code, 0, 0
    except Exception as exc:  # a bug in an op module: the same code C callers get, and the traceback
        log.error("%s raised:\n%s", op.phase1, traceback.format_exc())
        record(status.ACLNN_ERR_INNER, f"{op.phase1}: internal error in aclnn-emu: {exc!r}")
        return status.ACLNN_ERR_INNER, 0, 0


def _describe(op, values) -> str:
    """The call's arguments for the debug trace: tensors as dtype[shape], the rest as values."""
    def show(v):
        return f"{v.dtype.short}{list(v.shape)}" if isinstance(v, Tensor) else repr(v)
    return ", ".join(f"{p.name}={show(v)}" for p, v in zip(op.params, values))


def _executor(handle: int, phase2: str) -> Executor:
    if handle == 0:
        raise AclError(status.ACLNN_ERR_PARAM_NULLPTR, "executor must not be nullptr", rule="phase2.executor_null")
    executor = handles.lookup(handle, Executor)
    if executor is None:
        if handles.released_kind(handle) == "Executor":
            sanitizer.report("executor-reuse", f"{phase2}: executor {handle:#x} was already run or destroyed; "
                             "call the GetWorkspaceSize phase again (or aclSetAclOpExecutorRepeatable)",
                             code=status.ACLNN_ERR_INNER_NULLPTR)
        raise AclError(status.ACLNN_ERR_INNER_NULLPTR, f"executor {handle:#x} is not a live aclOpExecutor",
                       rule="phase2.executor_invalid")
    return executor


def run(op_name: str, workspace: int, workspace_size: int, executor_handle: int, stream_handle: int) -> int:
    """Phase 2: aclnnXxx(workspace, workspaceSize, executor, stream)."""
    phase2 = f"aclnn{op_name}"
    executor = None
    try:
        executor = _executor(executor_handle, phase2)
        required = executor.launch.workspace_size
        if workspace_size > 0 and workspace == 0:
            raise AclError(status.ACLNN_ERR_PARAM_NULLPTR, f"workspace is nullptr but workspaceSize is {workspace_size}",
                           rule="phase2.workspace_null")
        if workspace_size < required:
            raise AclError(status.ACLNN_ERR_PARAM_INVALID, f"The passed workspace size {workspace_size} does not "
                           f"meet the minimum workspace size {required}", rule="phase2.workspace_small")
        stream = rt.stream_of(stream_handle)
        if executor.launch.run is not None:
            stream.submit(_task(executor, workspace, required), phase2)
        return status.ACLNN_SUCCESS
    except AclError as exc:
        record(exc.code, f"{phase2}: {exc.message}")
        return exc.code
    finally:
        if executor is not None and not executor.repeatable:
            executor.destroy()


def _task(executor: Executor, workspace: int, size: int):
    run = executor.launch.run

    def task():
        view = None
        if size > 0:
            memory = devices.memory_of(workspace)
            if memory is None:
                raise AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION, "workspace is not device memory")
            memory.check(workspace, size, "workspace")
            view = memory.array(workspace, size)
        start = time.perf_counter()
        run(view)
        log.debug("aclnn%s ran in %.3f ms", executor.op_name, (time.perf_counter() - start) * 1e3)
    return task
