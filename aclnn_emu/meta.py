"""aclnn meta objects: tensors, scalars, arrays, lists, executors (acl_meta.h).

Each object registers an opaque handle (runtime.handles) when created and releases it when
destroyed. Tensors describe device memory; they read and write it only when a kernel runs.
"""

import math

import numpy as np

from . import config, dtypes, formats, status
from .formats import Format
from .runtime import devices, handles
from .runtime.errors import AclError


def contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


INT64_MAX = (1 << 63) - 1


def view_extent(shape, strides) -> tuple[int, int]:
    """The lowest and highest element a view reaches, relative to its offset."""
    lo = sum(s * (d - 1) for s, d in zip(strides, shape) if s < 0 and d > 0)
    hi = sum(s * (d - 1) for s, d in zip(strides, shape) if s > 0 and d > 0)
    return lo, hi


def check_size(shape, storage_shape, itemsize: int) -> None:
    """Refuse a tensor description no device memory can hold, before anything is made for it: an
    element count whose bytes overflow int64 (nnopbase's own size arithmetic, KernelTensor::CalcSize,
    fails there) or exceed the device's memory. The kernels would otherwise build host arrays of
    that size. (Offsets and strides are checked where they are used: a view reaching unmapped
    memory faults its kernel.)"""
    limit = min(config.current.device_memory, INT64_MAX)
    for name, dims in (("view shape", shape), ("storage shape", storage_shape)):
        nbytes = abs(math.prod(dims)) * itemsize
        if nbytes > limit:
            raise AclError(
                status.ACLNN_ERR_PARAM_INVALID,
                f"{name} {list(dims)} holds {nbytes} bytes: "
                + (
                    "its size overflows int64"
                    if nbytes > INT64_MAX
                    else f"more than the device's {limit} bytes of memory (ACLNN_EMU_DEVICE_MEMORY)"
                ),
                rule="tensor.size",
            )


class Handled:
    """Base of every object a C program holds a pointer to."""

    def __init__(self):
        self.handle = handles.register(self)

    def destroy(self) -> None:
        handles.release(self.handle)


class Tensor(Handled):
    def __init__(self, shape, dtype, strides=None, offset=0, format=Format.ACL_FORMAT_ND, storage_shape=None, addr=0):
        self.set(shape, dtype, strides, offset, format, storage_shape, addr)  # refuses before registering
        super().__init__()

    def set(self, shape, dtype, strides, offset, format, storage_shape, addr) -> None:
        """aclInitTensor: (re)describe the tensor. nnopbase validates nothing here; the emulator
        refuses only descriptions no device memory can hold (check_size)."""
        shape = tuple(int(d) for d in shape)
        dtype = dtypes.coerce(dtype)
        strides = tuple(int(s) for s in strides) if strides is not None else contiguous_strides(shape)
        storage_shape = tuple(int(d) for d in storage_shape) if storage_shape is not None else shape
        check_size(shape, storage_shape, dtypes.SIZE.get(dtype, 1))
        self.shape, self.dtype, self.strides, self.offset = shape, dtype, strides, int(offset)
        self.format = formats.coerce(format)
        self.storage_shape = storage_shape
        self.addr = int(addr or 0)

    # -- description ----------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_empty(self) -> bool:
        return self.numel == 0

    @property
    def np_dtype(self) -> np.dtype:
        if self.dtype not in dtypes.NUMPY:
            raise AclError(status.ACLNN_ERR_INNER, f"dtype {self.dtype.name} has no host representation in aclnn-emu")
        return dtypes.NUMPY[self.dtype]

    def describe(self) -> str:
        """DTYPE[shape] (and the format unless ND), as a trace shows a kernel's tensors."""
        nd = self.format == Format.ACL_FORMAT_ND
        return f"{self.dtype.short}{list(self.shape)}" + ("" if nd else f" {self.format.short}")

    def __repr__(self) -> str:
        return (
            f"Tensor(shape={list(self.shape)}, dtype={self.dtype.short}, format={self.format.short}, "
            f"strides={list(self.strides)}, offset={self.offset}, addr={self.addr:#x})"
        )

    # -- device data ----------------------------------------------------------------------------
    def _memory(self, what: str):
        memory = devices.memory_of(self.addr) if self.addr else None
        if memory is None:
            raise AclError(
                status.ACL_ERROR_RT_AICORE_EXCEPTION,
                f"{what} {self!r}: its data address is not device memory (aclrtMalloc it first)",
                rule="tensor.address",
            )
        return memory

    def view(self, what: str = "tensor") -> np.ndarray:
        """A writable numpy view of the device memory this tensor describes (zero copy)."""
        dtype = self.np_dtype
        if any(d < 0 for d in self.shape):
            # aclCreateTensor takes any int64 dimension (nnopbase checks none) and an op that does not
            # check the shape hands it to its kernel, whose address arithmetic it corrupts
            raise AclError(
                status.ACL_ERROR_RT_AICORE_EXCEPTION,
                f"{what} {self!r}: the view shape has a negative dimension, which no check of this "
                "operator refuses; its kernel would address memory from it",
                rule="tensor.negative_dim",
            )
        if self.is_empty:
            return np.empty(self.shape, dtype)
        lo, hi = view_extent(self.shape, self.strides)
        start = self.addr + (self.offset + lo) * dtype.itemsize
        nbytes = (hi - lo + 1) * dtype.itemsize
        memory = self._memory(what)
        memory.check(start, nbytes, what, owner=self.addr)
        buffer = memory.array(start, nbytes)
        return np.ndarray(
            self.shape,
            dtype,
            buffer,
            offset=-lo * dtype.itemsize,
            strides=tuple(s * dtype.itemsize for s in self.strides),
        )

    def storage(self, what: str = "tensor", unit=None) -> np.ndarray:
        """The flat writable memory from the view's first element to the end of its storage (as far
        as it is mapped), optionally reinterpreted as `unit` elements (kernels that address storage
        directly; they report the accesses that fall outside it)."""
        dtype = self.np_dtype
        nbytes = max(math.prod(self.storage_shape) - self.offset, 0) * dtype.itemsize
        start = self.addr + self.offset * dtype.itemsize
        memory = self._memory(what)
        if nbytes:  # the first element is always touched: unmapped, it faults the kernel
            memory.require_mapped(start, dtype.itemsize, what, status.ACL_ERROR_RT_AICORE_EXCEPTION)
        memory.report(start, nbytes, what, owner=self.addr)
        reach = memory.mapped(start, nbytes)
        raw = memory.array(start, reach) if reach else np.empty(0, np.uint8)
        unit = dtype if unit is None else np.dtype(unit)
        return raw[: len(raw) // unit.itemsize * unit.itemsize].view(unit)

    def read(self, what: str = "tensor") -> np.ndarray:
        """A read-only array of the tensor's values for kernels: a view of the device memory, or a
        C-contiguous copy of a strided view (transposed, walked backwards, broadcast), as the op_apis
        make such inputs contiguous (l0op::Contiguous) before their kernels run."""
        array = self.view(what)
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        array.flags.writeable = False
        return array

    def write(self, values, what: str = "tensor") -> None:
        """Store values (cast to this tensor's dtype) through the view."""
        self.view(what)[...] = values


class Scalar(Handled):
    def __init__(self, value, dtype):
        super().__init__()
        self.dtype = dtypes.coerce(dtype)
        self.value = value

    def describe(self):
        return self.value


class Array(Handled):
    """aclIntArray / aclFloatArray / aclBoolArray: a deep copy of the caller's values."""

    def __init__(self, kind: str, values):
        super().__init__()
        self.kind = kind
        self.values = tuple(values)


class TensorList(Handled):
    """Holds the pointers it was given; destroying the list destroys its tensors (nnopbase)."""

    def __init__(self, items):
        super().__init__()
        self.items = list(items)

    def describe(self) -> list:
        return [None if item is None else item.describe() for item in self.items]

    def destroy(self) -> None:
        for item in self.items:
            if item is not None:
                item.destroy()
        super().destroy()


class Executor(Handled):
    """What phase 1 hands to phase 2: the prepared launch of one operator call."""

    def __init__(self, op_name: str, launch):
        super().__init__()
        self.op_name = op_name
        self.launch = launch  # reads its aclTensors' addresses when it runs, so address updates apply
        self.repeatable = False
