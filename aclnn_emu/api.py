"""The Python face of the emulator: device tensors from numpy, two-phase calls, results back.

`raw` gives the same functions a C program calls, with the same status codes for any argument;
`run` drives both phases, allocates the workspace, waits for the stream and raises AclnnError on any
failure, TypeError/ValueError for an argument of the wrong Python type.
"""

import numbers

import numpy as np

from . import dtypes
from .formats import Format
from .meta import Tensor
from .errors import AclnnError
from .opdef import arguments, calls
from .opdef.registry import by_name
from .runtime import api as rt
from .runtime import devices, handles
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
        tensor.view("to_device")[...] = host
    return tensor


def empty(shape, dtype, format=Format.ACL_FORMAT_ND, storage_shape=None) -> Tensor:
    """A new uninitialised device tensor (aclrtMalloc of its bytes, at least 1)."""
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
        tensor.addr = rt.malloc(max(tensor.numel * dtypes.SIZE[dt], 1))
    except BaseException:
        tensor.destroy()
        raise
    return tensor


def numpy(tensor: Tensor) -> np.ndarray:
    """A host copy of what the tensor describes."""
    return np.array(tensor.view("numpy"))


def free(tensor: Tensor) -> None:
    """Release a tensor made by to_device/empty: its device memory and its handle."""
    rt.free(tensor.addr)
    tensor.destroy()


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
    code, size, executor = calls.get_workspace_size(op, args, arguments.python)
    if code:
        raise AclnnError(code, take_recent())
    workspace = rt.malloc(size) if size else 0
    try:
        code = calls.run(op.name, workspace, size, executor, stream)
        if code:
            raise AclnnError(code, take_recent())
        try:
            rt.synchronize_stream(stream)
        except AclError as exc:
            raise AclnnError(exc.code, exc.message) from None
    finally:
        if workspace:
            rt.free(workspace)


class _Raw:
    """aclnn_emu.raw.aclnnXxxGetWorkspaceSize(*args) -> (status, workspaceSize, executor);
    aclnn_emu.raw.aclnnXxx(workspace, workspaceSize, executor, stream) -> status.

    Like C, these return a status for any argument value: a pointer argument may be an int address
    or handle, None (NULL) or a meta object, and anything else is a pointer to no live object. Only
    a wrong number of arguments raises TypeError, as no C compiler would accept that call."""

    def __getattr__(self, name):
        try:
            op = by_name(name)
        except KeyError as exc:
            raise AttributeError(str(exc)) from None
        if name == op.phase1:
            return lambda *args: calls.get_workspace_size(op, args, arguments.raw)

        def phase2(workspace, size, executor, stream):
            size = int(size) & arguments.MASK64 if isinstance(size, numbers.Integral) else size
            return calls.run(
                op.name, arguments.address(workspace), size, arguments.address(executor), arguments.address(stream)
            )

        return phase2


raw = _Raw()
