"""The Python face of the emulator: device tensors from numpy, two-phase calls, results back.

`raw` gives the same functions a C program calls, with the same status codes for any argument;
`run` drives both phases, allocates the workspace, waits for the stream and raises AclnnError on any
failure, TypeError/ValueError for an argument of the wrong Python type.

A tensor made here (`to_device`, `empty`) belongs to its Python object, as a numpy array's memory
does: when Python collects it, its device memory and handle are freed; `free` frees them at once.
Work queued on a stream holds the tensors it uses (through its executor), so none is collected
under it. The free itself is deferred to the next allocation, `free` or Device exit (`collect`):
a collection can happen anywhere, even in a thread inside the runtime's locks.
"""

import collections
import contextlib
import gc
import numbers
import weakref

import numpy as np

from . import dtypes, status
from .formats import Format
from .meta import Array, Scalar, Tensor, TensorList
from .errors import AclnnError, typed
from .opdef import arguments, calls
from .opdef.registry import by_name
from .runtime import api as rt
from .runtime import devices, handles, trace
from .runtime.streams import Stream
from .runtime.errors import AclError, take_recent


_stream = 0


def setup(device: int = 0) -> int:
    """aclInit (once), aclrtSetDevice(device) on this thread, and a stream; returns the stream handle.

    aclInit reads the settings again; a bad one raises AclnnError (ACL_ERROR_INVALID_PARAM)."""
    global _stream
    try:
        if not rt.initialized():
            rt.init(None)
        if devices.current_context(required=False) is None:
            devices.set_device(device)
        if not _stream or handles.lookup(_stream, Stream) is None:
            _stream = rt.create_stream()
    except AclError as exc:
        raise AclnnError(exc.code, exc.message) from None
    return _stream


def to_device(array, dtype=None, format=Format.ACL_FORMAT_ND, storage_shape=None) -> Tensor:
    """Copy a numpy array into new device memory and describe it as a contiguous aclTensor.

    `dtype` (a DataType) reinterprets nothing: the array is cast to its storage type first.
    """
    array = np.asarray(array)
    dt = dtypes.from_numpy(array.dtype) if dtype is None else dtypes.DataType(dtype)
    if dt not in dtypes.NUMPY:
        raise ValueError(f"to_device: dtype {dt.name} has no host representation in aclnn-emu")
    host = array.astype(dtypes.NUMPY[dt], order="C")  # keeps 0-d arrays 0-d
    tensor = empty(host.shape, dt, format, storage_shape)
    if host.nbytes:
        with _copy_traced("aclnn_emu.to_device", host.nbytes, to_device=True):
            tensor.view("to_device")[...] = host
    return tensor


@contextlib.contextmanager
def _copy_traced(name: str, nbytes: int, to_device: bool):
    """The copy as a slice of this thread's trace track, as C's aclrtMemcpy shows (when tracing)."""
    if not trace.enabled:
        yield
        return
    frame = trace.begin()
    try:
        yield
        trace.copied(nbytes, not to_device, to_device)
    finally:
        trace.end(name, frame)


def empty(shape, dtype, format=Format.ACL_FORMAT_ND, storage_shape=None) -> Tensor:
    """A new uninitialised device tensor (aclrtMalloc of its bytes, at least 1), freed when Python
    collects it (or by `free`)."""
    for name, dims in (("shape", shape), ("storage_shape", storage_shape or ())):
        bad = [d for d in dims if int(d) != d or d < 0]
        if bad:
            raise ValueError(f"empty(): {name} {tuple(dims)} has the dimension {bad[0]}; dimensions are integers >= 0")
    setup()
    dt = dtypes.DataType(dtype)
    try:
        tensor = Tensor(shape, dt, None, 0, format, storage_shape)
    except AclError as exc:
        raise ValueError(f"empty(): {exc.message}") from None
    try:
        tensor.addr = _malloc(max(tensor.numel * dtypes.SIZE[dt], 1))
    except BaseException:
        tensor.destroy()
        raise
    memory = devices.memory_of(tensor.addr)
    _own(tensor, memory, memory.find(tensor.addr))
    return tensor


def _malloc(size: int) -> int:
    """aclrtMalloc, after freeing what Python collected; out of memory, once more after a full
    garbage collection (tensors in reference cycles)."""
    collect()
    try:
        with typed():
            return rt.malloc(size)
    except AclnnError as exc:
        if exc.status != status.ACL_ERROR_RT_MEMORY_ALLOCATION or not _owned:
            raise
    gc.collect()
    collect()
    with typed():
        return rt.malloc(size)


_owned: dict[int, weakref.finalize] = {}  # handle -> finalizer of each live tensor this module made
_collected = collections.deque()  # (handle, arena, allocation) of those Python has collected


def _own(obj: Tensor | TensorList, memory=None, allocation=None) -> None:
    """Hold obj's handle weakly; when Python collects obj, the next `collect` releases the handle
    (and frees `allocation` of `memory`, a tensor's device memory)."""
    finalizer = weakref.finalize(obj, _collected.append, (obj.handle, memory, allocation))
    finalizer.atexit = False
    handles.weaken(obj.handle)
    _owned[obj.handle] = finalizer


def collect(full: bool = False) -> None:
    """Free the device memory and handles of the tensors Python has collected; `full` first runs a
    garbage collection, so tensors only reference cycles hold are freed too. An allocation that is
    no longer the tensor's (emptied by aclFinalize, freed and reused, the parent's in a forked
    child) is left alone."""
    if full and _owned:
        gc.collect()
    while _collected:
        handle, memory, allocation = _collected.popleft()
        _owned.pop(handle, None)
        handles.release(handle)
        if allocation is not None and _arena(allocation.addr) is memory and memory.find(allocation.addr) is allocation:
            memory.free(allocation.addr)


def _arena(addr: int):
    """The arena that holds `addr` now (None for the parent's memory in a forked child)."""
    try:
        return devices.memory_of(addr)
    except AclError:
        return None


def numpy(tensor: Tensor) -> np.ndarray:
    """A host copy of what the tensor describes."""
    with typed():
        view = tensor.view("numpy")
        with _copy_traced("aclnn_emu.numpy", view.nbytes, to_device=False):
            return np.array(view)


def free(tensor: Tensor) -> None:
    """Release a tensor's device memory and its handle now (a tensor made by to_device/empty is also
    released when Python collects it). A second free raises RtParamInvalid (107000), as aclrtFree
    returns, and the sanitizer reports a double free."""
    collect()
    finalizer = _owned.pop(tensor.handle, None)
    if finalizer is not None:
        finalizer.detach()
    with typed():
        rt.free(tensor.addr)
    tensor.destroy()


def synchronize(stream=None) -> None:
    """aclrtSynchronizeStream: wait for the work queued on `stream` (an aclnn_emu.Stream or handle;
    None: the stream `setup` made, which `run` and the tensors' copies use). Raises a task's failure."""
    handle = setup() if stream is None else int(getattr(stream, "handle", stream))
    with typed():
        rt.synchronize_stream(handle)


def recent_error_message() -> str | None:
    """aclGetRecentErrMsg: this thread's last error (or warning) message, cleared once read; None
    when there is none. What an `aclnn_emu.raw` call that returned a status left behind."""
    return take_recent()


def tensor_list(tensors) -> TensorList:
    """aclCreateTensorList of device tensors (None allowed) for `raw` and `run`. Destroying it
    (`.destroy()`, aclDestroyTensorList) destroys its tensors' handles, not their memory; a list
    Python collects releases its own handle, so its tensors' memory goes with theirs."""
    items = list(tensors)
    bad = [type(t).__name__ for t in items if t is not None and not isinstance(t, Tensor)]
    if bad:
        raise TypeError(f"tensor_list(): items are aclnn_emu.Tensor or None (aclnn_emu.to_device), got {bad[0]}")
    tensors = TensorList(items)
    _own(tensors)
    return tensors


def scalar(value, dtype) -> Scalar:
    """aclCreateScalar: `value` stored as `dtype` holds it (a float rounded to FLOAT16, say)."""
    dt = dtypes.DataType(dtype)
    if dt not in dtypes.NUMPY:
        raise ValueError(f"scalar(): dtype {dt.name} has no host representation in aclnn-emu")
    return Scalar(np.asarray(value).astype(dtypes.NUMPY[dt]).item(), dt)


def int_array(values) -> Array:
    """aclCreateIntArray (int64 values)."""
    return Array("int", [int(np.int64(v)) for v in values])


def float_array(values) -> Array:
    """aclCreateFloatArray (values rounded to float32, as the C array holds them)."""
    return Array("float", [float(np.float32(v)) for v in values])


def bool_array(values) -> Array:
    """aclCreateBoolArray."""
    return Array("bool", [bool(v) for v in values])


def run(op_name: str, *args, stream: int | None = None) -> None:
    """Both phases of an operator, then wait for the stream; raises AclnnError on a non-zero status.

    The arguments are the C function's, in order: aclnn_emu.Tensor or None for tensors, sequences
    for int/float/bool arrays, str or bytes for strings."""
    op = by_name(op_name)
    stream = getattr(stream, "handle", stream)  # an aclnn_emu.Stream
    if stream is not None and not isinstance(stream, numbers.Integral):
        raise TypeError(
            f"run({op_name!r}): stream must be an aclrtStream handle (an int, as aclnn_emu.setup() "
            f"returns) or None, got {type(stream).__name__}"
        )
    stream = setup() if stream is None else int(stream)
    code, size, executor = calls.get_workspace_size(op, args, arguments.python, raises=True)
    if code:
        raise AclnnError(code, take_recent())
    workspace = _malloc(size) if size else 0
    try:
        code = calls.run(op.name, workspace, size, executor, stream)
        if code:
            raise AclnnError(code, take_recent())
        with typed():
            rt.synchronize_stream(stream)
    finally:
        if workspace:
            rt.free(workspace)


class _Raw:
    """aclnn_emu.raw.aclnnXxxGetWorkspaceSize(*args) -> (status, workspaceSize, executor) (so is an
    undeclared phase 1 such as aclnnFusedInferAttentionScoreV4GetMaxWorkspaceSize);
    aclnn_emu.raw.aclnnXxx(workspace, workspaceSize, executor, stream) -> status.

    Like C, these return a status for any argument value: a pointer argument may be an int address
    or handle, None (NULL) or a meta object, and anything else is a pointer to no live object. Only
    a wrong number of arguments raises TypeError, as no C compiler would accept that call."""

    def __getattr__(self, name):
        try:
            op = by_name(name)
        except KeyError as exc:
            raise AttributeError(str(exc)) from None
        if name == op.phase1 or name in op.undeclared_phase1:
            return lambda *args: calls.get_workspace_size(op, args, arguments.raw, phase1=name)

        def phase2(workspace, size, executor, stream):
            size = int(size) & arguments.MASK64 if isinstance(size, numbers.Integral) else size
            return calls.run(
                op.name, arguments.address(workspace), size, arguments.address(executor), arguments.address(stream)
            )

        return phase2


raw = _Raw()
