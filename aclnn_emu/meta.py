"""aclnn meta objects: tensors, scalars, arrays, lists, executors (acl_meta.h).

Each object registers an opaque handle (runtime.handles) when created and releases it when
destroyed. Tensors describe device memory; they read and write it only when a kernel runs.
"""
import math

import numpy as np

from . import dtypes, formats, status
from .formats import Format
from .runtime import devices, handles
from .runtime.errors import AclError


def contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


class Handled:
    """Base of every object a C program holds a pointer to."""

    def __init__(self):
        self.handle = handles.register(self)

    def destroy(self) -> None:
        handles.release(self.handle)


class Tensor(Handled):
    def __init__(self, shape, dtype, strides=None, offset=0, format=Format.ACL_FORMAT_ND,
                 storage_shape=None, addr=0):
        super().__init__()
        self.set(shape, dtype, strides, offset, format, storage_shape, addr)

    def set(self, shape, dtype, strides, offset, format, storage_shape, addr) -> None:
        """aclInitTensor: (re)describe the tensor; nothing is validated, as in nnopbase."""
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtypes.coerce(dtype)
        self.strides = tuple(int(s) for s in strides) if strides is not None else contiguous_strides(self.shape)
        self.offset = int(offset)
        self.format = formats.coerce(format)
        self.storage_shape = tuple(int(d) for d in storage_shape) if storage_shape is not None else self.shape
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

    def __repr__(self) -> str:
        return (f"Tensor(shape={list(self.shape)}, dtype={self.dtype.short}, format={self.format.short}, "
                f"strides={list(self.strides)}, offset={self.offset}, addr={self.addr:#x})")

    # -- device data ----------------------------------------------------------------------------
    def view(self, what: str = "tensor") -> np.ndarray:
        """A writable numpy view of the device memory this tensor describes (zero copy)."""
        dtype = self.np_dtype
        if self.is_empty:
            return np.empty(self.shape, dtype)
        lo = sum(s * (d - 1) for s, d in zip(self.strides, self.shape) if s < 0)
        hi = sum(s * (d - 1) for s, d in zip(self.strides, self.shape) if s > 0)
        start = self.addr + (self.offset + lo) * dtype.itemsize
        nbytes = (hi - lo + 1) * dtype.itemsize
        memory = devices.memory_of(self.addr) if self.addr else None
        if memory is None:
            raise AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION,
                           f"{what} {self!r}: its data address is not device memory (aclrtMalloc it first)",
                           rule="tensor.address")
        memory.check(start, nbytes, what)
        if memory.readable(start, nbytes) < nbytes:
            raise AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION, f"{what} {self!r} runs past the end of device memory")
        buffer = memory.array(start, nbytes)
        return np.ndarray(self.shape, dtype, buffer, offset=-lo * dtype.itemsize,
                          strides=tuple(s * dtype.itemsize for s in self.strides))

    def storage(self, what: str = "tensor", unit=None) -> np.ndarray:
        """The flat writable memory from the view's first element to the end of its storage,
        optionally reinterpreted as `unit` elements (kernels that address storage directly)."""
        dtype = self.np_dtype
        count = max(math.prod(self.storage_shape) - self.offset, 0)
        start = self.addr + self.offset * dtype.itemsize
        memory = devices.memory_of(self.addr) if self.addr else None
        if memory is None:
            raise AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION,
                           f"{what} {self!r}: its data address is not device memory", rule="tensor.address")
        memory.check(start, count * dtype.itemsize, what)
        raw = memory.array(start, memory.readable(start, count * dtype.itemsize))
        unit = dtype if unit is None else np.dtype(unit)
        return raw[:len(raw) // unit.itemsize * unit.itemsize].view(unit)

    def read(self, what: str = "tensor") -> np.ndarray:
        """A read-only view for kernels."""
        array = self.view(what)
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
        self.launch = launch        # reads its aclTensors' addresses when it runs, so address updates apply
        self.repeatable = False
