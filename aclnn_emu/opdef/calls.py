"""The two-phase contract shared by every operator, for C and Python callers alike.

Phase 1 runs the op's checks and returns (status, workspace size, executor handle); phase 2 checks
the executor and workspace and puts the launch on the stream. Both return status codes and raise
only for `aclnn_emu.run`'s caller passing a wrong Python value (arguments.Misuse). While a setting is
bad (config.problem) both fail with ACLNN_ERR_PARAM_INVALID.
"""

import logging
import sys
import time
import traceback

from .. import config, platform, status, versions
from ..meta import Executor, Tensor
from ..runtime import api as rt
from ..runtime import devices, handles, sanitizer, trace
from ..runtime.errors import AclError, log, record
from .arguments import Misuse
from .signature import Env


def _settings_ok() -> None:
    if config.problem is not None:
        raise AclError(status.ACLNN_ERR_PARAM_INVALID, config.problem, rule="settings")


def _not_withdrawn(op_name: str, env: Env) -> None:
    """An entry point the selected release withdrew on this chip fails first, in either phase."""
    gone = versions.withdrawal(op_name, env.version, env.soc)
    if gone is not None:
        raise AclError(gone.code, gone.message, rule=gone.rule)


def _declared(op, env: Env) -> None:
    """An entry point of a later release: the library exports it in every release (one build), but the selected
    release's headers do not declare it, so a program calling it would not link there; phase 1 refuses."""
    if not versions.declares(env.version, op.since):
        raise AclError(
            status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
            f"aclnn{op.name} is not part of CANN {env.version.name} (its headers declare it from {op.since} on; "
            "ACLNN_EMU_CANN_VERSION selects the release)",
            rule="release.not_declared",
        )


def get_workspace_size(
    op, values, convert=None, raises: bool = False, phase1: str | None = None
) -> tuple[int, int, int]:
    """Phase 1 with converted arguments (Tensor/None/tuple/int/float/bool/str), or with Python
    values and the `arguments` function that converts them. `raises`: the caller raises the failure
    with its message (aclnn_emu.ops, aclnn_emu.run), so stderr need not say it too. `phase1`: an
    undeclared phase-1 function of the op (Op.undeclared) instead of the header's."""
    env = Env(op.name)
    args = None
    phase1 = phase1 or op.phase1
    try:
        _settings_ok()
        _declared(op, env)
        _not_withdrawn(op.name, env)
        if convert is not None:
            values = convert(op, values)
        prepare = op.phase1_fn(phase1)
        if prepare is None:
            raise AclError(
                status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                f"{op.name} is not implemented in aclnn-emu",
                rule="not_implemented",
            )
        args = op.bind(values)
        launch = prepare(args, env)
        executor = Executor(op.name, launch)
        if trace.enabled:  # the kernel's slice in the trace describes the call
            trace.prepared(executor, op, values)
        if log.isEnabledFor(logging.DEBUG):  # describing the arguments costs more than the checks
            log.debug(
                "%s(%s) -> workspace %d, executor %#x",
                phase1,
                _describe(op, values),
                launch.workspace_size,
                executor.handle,
            )
        return status.ACLNN_SUCCESS, int(launch.workspace_size), executor.handle
    except Misuse:
        raise
    except AclError as exc:
        hint = _elsewhere(op.phase1_fn(phase1), args, env, exc) if env.asked_soc else ""
        record(exc.code, f"{phase1}: {exc.message}{hint}")
        if hint and not raises:  # a program usually prints only the code: the chip to pick goes to stderr too
            print(f"aclnn-emu: {phase1} returned {exc.code}: {exc.message}{hint}", file=sys.stderr, flush=True)
        return exc.code, 0, 0
    except Exception as exc:  # a bug in an op module: the same code C callers get, and the traceback
        log.error("%s raised:\n%s", phase1, traceback.format_exc())
        record(status.ACLNN_ERR_INNER, f"{phase1}: internal error in aclnn-emu: {exc!r}")
        return status.ACLNN_ERR_INNER, 0, 0


def _elsewhere(prepare, args, env, exc) -> str:
    """For a failure that may depend on the chip: the other emulated chips that accept the whole
    call (found by running its checks on the part each family name means) or the rejected value (the rule's own `chips`), and
    the setting that selects the chip. Empty when neither applies."""
    accepted = [
        family
        for family in platform.FAMILIES
        if family != env.soc and args is not None and _accepts(prepare, env.op_name, args, family)
    ]
    if not accepted and not getattr(exc, "chips", ()):
        return ""
    return (
        f". The same call is accepted on {' and '.join(accepted)}" if accepted else ""
    ) + f"; ACLNN_EMU_SOC selects the emulated chip (now {env.part.name}, an {env.soc})"


def _accepts(prepare, op_name: str, args, soc: str) -> bool:
    try:
        prepare(args, Env(op_name, soc, quiet=True))
        return True
    except Exception:  # any failure on that chip, expected or not, means "not there"
        return False


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
            sanitizer.report(
                "executor-reuse",
                f"{phase2}: executor {handle:#x} was already run or destroyed; "
                "call the GetWorkspaceSize phase again (or aclSetAclOpExecutorRepeatable)",
                code=status.ACLNN_ERR_INNER_NULLPTR,
            )
        raise AclError(
            status.ACLNN_ERR_INNER_NULLPTR,
            f"executor {handle:#x} is not a live aclOpExecutor",
            rule="phase2.executor_invalid",
        )
    return executor


def run(op_name: str, workspace: int, workspace_size: int, executor_handle: int, stream_handle: int) -> int:
    """Phase 2: aclnnXxx(workspace, workspaceSize, executor, stream)."""
    phase2 = f"aclnn{op_name}"
    executor = None
    try:
        _settings_ok()
        _not_withdrawn(op_name, Env(op_name))
        executor = _executor(executor_handle, phase2)
        required = executor.launch.workspace_size
        if not isinstance(workspace_size, int):  # only aclnn_emu.raw can pass one
            raise AclError(
                status.ACLNN_ERR_PARAM_INVALID,
                f"workspaceSize must be an integer, got {workspace_size!r}",
                rule="phase2.workspace_size",
            )
        if workspace_size > 0 and workspace == 0:
            raise AclError(
                status.ACLNN_ERR_PARAM_NULLPTR,
                f"workspace is nullptr but workspaceSize is {workspace_size}",
                rule="phase2.workspace_null",
            )
        if workspace_size < required:
            raise AclError(
                status.ACLNN_ERR_PARAM_INVALID,
                f"The passed workspace size {workspace_size} does not meet the minimum workspace size {required}",
                rule="phase2.workspace_small",
            )
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
        if trace.enabled:
            trace.kernel(executor, size)
        start = time.perf_counter()
        run(view)
        log.debug("aclnn%s ran in %.3f ms", executor.op_name, (time.perf_counter() - start) * 1e3)

    return task
