"""The Python face of the emulator: device tensors from numpy, two-phase calls, results back.

`raw` gives the same functions a C program calls, with the same status codes; `run` drives both
phases, allocates the workspace, waits for the stream and raises AclnnError on any failure.
"""
import numpy as np

from . import dtypes, status
from .formats import Format
from .meta import Tensor
from .ops import by_name, calls
from .runtime import api as rt
from .runtime import devices, handles
from .runtime.streams import Stream
from .runtime.errors import AclError, take_recent


class AclnnError(Exception):
    """A non-zero status: `.status` (int), `.name` (e.g. ACLNN_ERR_PARAM_INVALID), `.message`."""

    def __init__(self, code: int, message: str | None):
        self.status = code
        self.name = status.name_of(code)
        self.message = message or ""
        super().__init__(f"{self.name} ({code}): {self.message}")


_stream = 0


def setup(device: int = 0) -> int:
    """aclInit (once), aclrtSetDevice(device) on this thread, and a stream; returns the stream handle."""
    global _stream
    if not rt.initialized():
        rt.init(None)
    if devices.current_context(required=False) is None:
        devices.set_device(device)
    if not _stream or handles.lookup(_stream, Stream) is None:
        _stream = rt.create_stream()
    return _stream


def to_device(array, dtype=None, format=Format.ACL_FORMAT_ND, storage_shape=None) -> Tensor:
    """Copy a numpy array into new device memory and describe it as a contiguous aclTensor.

    `dtype` (a DataType) reinterprets nothing: the array is cast to its storage type first.
    """
    dt = dtypes.from_numpy(np.asarray(array).dtype) if dtype is None else dtypes.DataType(dtype)
    host = np.asarray(array).astype(dtypes.NUMPY[dt], order="C")   # keeps 0-d arrays 0-d
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
    """Both phases of an operator, then wait for the stream; raises AclnnError on a non-zero status."""
    stream = setup() if stream is None else stream
    op = by_name(op_name)
    code, size, executor = calls.get_workspace_size(op, list(args))
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
    aclnn_emu.raw.aclnnXxx(workspace, workspaceSize, executor, stream) -> status."""

    def __getattr__(self, name):
        op = by_name(name)
        if name == op.phase1:
            return lambda *args: calls.get_workspace_size(op, list(args))
        return lambda workspace, size, executor, stream: calls.run(op.name, workspace, size, executor, stream)


raw = _Raw()
