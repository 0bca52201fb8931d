"""Graph capture (aclmdlRICaptureBegin/End/GetInfo, aclmdlRIExecuteAsync, aclmdlRIDestroy).

While a stream captures, what is submitted to it is recorded in its model instead of run (the
stream's `capture` hook, streams.py); replaying the model submits the recorded tasks, in order and
with the arguments they were captured with, to the stream it is executed on.

Codes, in the runtime's order: the acl layer's NULL checks (runtime src/acl/aclrt_impl/model_ri.cpp,
ACL_ERROR_INVALID_PARAM), then src/runtime/feature/src/api_impl/api_error.cc (a mode out of range,
RT_ERROR_INVALID_VALUE = ACL_ERROR_RT_PARAM_INVALID; synchronising, querying or executing on a
capturing stream, ACL_ERROR_RT_STREAM_CAPTURED), api_impl.cc (ApiImpl::StreamBeginCapture: a stream
of another context, ACL_ERROR_RT_STREAM_CONTEXT; the default stream, ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
and src/runtime/feature/src/context/context.cc (Context::StreamBeginCapture: already capturing,
ACL_ERROR_RT_STREAM_CAPTURED; Context::StreamEndCapture: not capturing,
ACL_ERROR_RT_STREAM_NOT_CAPTURED)."""

import threading

from .. import status
from . import devices, handles
from .api import stream_of
from .errors import AclError

CAPTURE_MODES = range(3)  # GLOBAL, THREAD_LOCAL, RELAXED
STATUS_NONE, STATUS_ACTIVE = 0, 1


class Model:
    """A captured model: the tasks recorded on its stream, in submission order."""

    def __init__(self, stream):
        self.stream = stream
        self.tasks: list[tuple[object, str]] = []
        self.capturing = True
        self._lock = threading.Lock()
        self.handle = handles.register(self)

    def record(self, task, name: str) -> None:
        with self._lock:
            self.tasks.append((task, name))


def begin(stream: int, mode: int) -> None:
    if stream == 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "stream must not be NULL", rule="capture.null")
    target = stream_of(stream)
    if mode not in CAPTURE_MODES:
        raise AclError(status.ACL_ERROR_RT_PARAM_INVALID, f"capture mode {mode} is not 0..2", rule="capture.mode")
    ctx = devices.current_context()
    if target.context is not ctx:
        raise AclError(
            status.ACL_ERROR_RT_STREAM_CONTEXT, "the stream belongs to another context", rule="capture.context"
        )
    if target is ctx.default_stream:
        raise AclError(
            status.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "the default stream cannot be captured", rule="capture.default"
        )
    if target.capture is not None:
        raise AclError(status.ACL_ERROR_RT_STREAM_CAPTURED, "the stream is already capturing", rule="capture.again")
    target.synchronize()  # what was queued before the capture runs, as it was submitted uncaptured
    target.capture = Model(target)


def end(stream: int) -> int:
    if stream == 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "stream must not be NULL", rule="capture.null")
    target = stream_of(stream)
    model = target.capture
    if model is None:
        raise AclError(status.ACL_ERROR_RT_STREAM_NOT_CAPTURED, "the stream is not capturing", rule="capture.none")
    target.capture, model.capturing = None, False
    return model.handle


def info(stream: int) -> tuple[int, int]:
    """(aclmdlRICaptureStatus, model handle or 0)."""
    if stream == 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "stream must not be NULL", rule="capture.null")
    model = stream_of(stream).capture
    return (STATUS_NONE, 0) if model is None else (STATUS_ACTIVE, model.handle)


def model_of(handle: int) -> Model:
    if handle == 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "modelRI must not be NULL", rule="model.null")
    return handles.live(handle, Model, "aclmdlRI", status.ACL_ERROR_RT_PARAM_INVALID, "model.invalid")


def execute_async(model: int, stream: int) -> None:
    found = model_of(model)
    target = stream_of(stream)
    if target.capture is not None:
        raise AclError(
            status.ACL_ERROR_RT_STREAM_CAPTURED, "a capturing stream cannot execute a model", rule="model.on_capturing"
        )
    if found.capturing:
        raise AclError(status.ACL_ERROR_RT_MODEL_CAPTURED, "the model is still being captured", rule="model.capturing")
    for task, name in list(found.tasks):
        target.submit(task, f"replay {name}")


def execute(model: int, timeout: int) -> None:
    """aclmdlRIExecute: the model on the current context's default stream, waited for (-1: forever)."""
    if timeout < -1 or timeout == 0:
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID, f"timeout {timeout} must be -1 or positive", rule="model.timeout"
        )
    execute_async(model, 0)
    stream_of(0).synchronize(None if timeout < 0 else timeout / 1000.0)


def destroy(model: int) -> None:
    found = model_of(model)
    if found.capturing:
        raise AclError(status.ACL_ERROR_RT_MODEL_CAPTURED, "the model is still being captured", rule="model.capturing")
    handles.release(found.handle)
