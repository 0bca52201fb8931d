"""Bindings of aclnn/aclnn_base.h: aclnnInit, tensors, scalars, arrays, lists and executors."""

import numpy as np

from .. import dtypes, meta, status
from ..runtime import handles
from ..runtime.errors import AclError
from . import boundary
from .boundary import addr, bind, c, ints, need, obj

NULLPTR = status.ACLNN_ERR_PARAM_NULLPTR


@c
def aclnnInit(config_path):
    """Either aclInit or aclnnInit readies aclnn; calling both is not an error."""


@c
def aclnnFinalize():
    pass


# -- creation -------------------------------------------------------------------------------------
def _tensor_fields(view_dims, view_num, dtype, strides, offset, fmt, storage_dims, storage_num, data):
    return (
        ints(view_dims, view_num),
        dtype,
        ints(strides, view_num) if strides != boundary.ffi.NULL else None,
        offset,
        fmt,
        ints(storage_dims, storage_num),
        addr(data),
    )


@c
def aclCreateTensor(view_dims, view_num, dtype, strides, offset, fmt, storage_dims, storage_num, data):
    null = boundary.ffi.NULL
    if (view_dims == null and view_num > 0) or (storage_dims == null and storage_num > 0):
        return null
    t = meta.Tensor(*_tensor_fields(view_dims, view_num, dtype, strides, offset, fmt, storage_dims, storage_num, data))
    return boundary.ffi.cast("aclTensor *", t.handle)


@c
def aclInitTensor(tensor, *fields):
    t = obj(tensor, meta.Tensor, "tensor")
    if t is None:
        raise AclError(NULLPTR, "tensor must not be nullptr")
    t.set(*_tensor_fields(*fields))


@c
def aclCreateScalar(value, dtype):
    ffi = boundary.ffi
    dt = dtypes.coerce(dtype)
    if value == ffi.NULL or dt not in dtypes.NUMPY:
        return ffi.NULL
    np_dtype = dtypes.NUMPY[dt]
    raw = ffi.buffer(ffi.cast("char *", value), np_dtype.itemsize)[:]
    return ffi.cast("aclScalar *", meta.Scalar(np.frombuffer(raw, np_dtype)[0].item(), dt).handle)


def _create_array(kind, ctype, ctor_type):
    def create(value, size):
        ffi = boundary.ffi
        values = ffi.unpack(ffi.cast(ctype, value), size) if value != ffi.NULL and size else []
        return ffi.cast(ctor_type, meta.Array(kind, values).handle)

    return create


bind("aclCreateIntArray", _create_array("int", "int64_t *", "aclIntArray *"))
bind("aclCreateFloatArray", _create_array("float", "float *", "aclFloatArray *"))
bind("aclCreateBoolArray", _create_array("bool", "_Bool *", "aclBoolArray *"))


def _create_list(cls, ctor_type):
    def create(value, size):
        ffi = boundary.ffi
        if value == ffi.NULL and size:
            return ffi.NULL
        items = [obj(value[i], cls, "list element") for i in range(size)]
        return ffi.cast(ctor_type, meta.TensorList(items).handle)

    return create


bind("aclCreateTensorList", _create_list(meta.Tensor, "aclTensorList *"))
bind("aclCreateScalarList", _create_list(meta.Scalar, "aclScalarList *"))


def _destroy(cls):
    def destroy(p):
        target = obj(p, cls, cls.__name__)
        if target is not None:
            target.destroy()

    return destroy


for _name, _cls in (
    ("aclDestroyTensor", meta.Tensor),
    ("aclDestroyScalar", meta.Scalar),
    ("aclDestroyIntArray", meta.Array),
    ("aclDestroyFloatArray", meta.Array),
    ("aclDestroyBoolArray", meta.Array),
    ("aclDestroyTensorList", meta.TensorList),
    ("aclDestroyScalarList", meta.TensorList),
):
    bind(_name, _destroy(_cls))


# -- getters --------------------------------------------------------------------------------------
def _tensor_arg(tensor):
    t = obj(tensor, meta.Tensor, "tensor")
    if t is None:
        raise AclError(NULLPTR, "tensor must not be nullptr", rule="null.tensor")
    return t


def _getter_array(attribute):
    def get(tensor, values, count):
        t = _tensor_arg(tensor)
        need(values, "output array", NULLPTR)
        need(count, "output size", NULLPTR)
        items = getattr(t, attribute)
        out = boundary.lib.aclemu_new_int64(len(items))
        for i, v in enumerate(items):
            out[i] = v
        values[0], count[0] = out, len(items)

    return get


bind("aclGetViewShape", _getter_array("shape"))
bind("aclGetStorageShape", _getter_array("storage_shape"))
bind("aclGetViewStrides", _getter_array("strides"))


def _getter_value(read):
    def get(tensor, out):
        t = _tensor_arg(tensor)
        need(out, "output", NULLPTR)
        out[0] = read(t)

    return get


bind("aclGetViewOffset", _getter_value(lambda t: t.offset))
bind("aclGetFormat", _getter_value(lambda t: int(t.format)))
bind("aclGetDataType", _getter_value(lambda t: int(t.dtype)))
bind("aclGetRawTensorAddr", _getter_value(lambda t: boundary.ffi.cast("void *", t.addr)))


def _size_getter(cls, attribute):
    def get(array, size):
        target = obj(array, cls, cls.__name__)
        if target is None:
            raise AclError(NULLPTR, "array must not be nullptr")
        need(size, "size", NULLPTR)
        size[0] = len(getattr(target, attribute))

    return get


for _name, _cls, _attr in (
    ("aclGetIntArraySize", meta.Array, "values"),
    ("aclGetFloatArraySize", meta.Array, "values"),
    ("aclGetBoolArraySize", meta.Array, "values"),
    ("aclGetTensorListSize", meta.TensorList, "items"),
    ("aclGetScalarListSize", meta.TensorList, "items"),
):
    bind(_name, _size_getter(_cls, _attr))


@c
def aclSetRawTensorAddr(tensor, data):
    _tensor_arg(tensor).addr = addr(data)


# -- executors ------------------------------------------------------------------------------------
def _executor(executor):
    if executor == boundary.ffi.NULL:
        raise AclError(status.ACLNN_ERR_INNER_NULLPTR, "executor must not be nullptr", rule="null.executor")
    found = handles.lookup(addr(executor), meta.Executor)
    if found is None:
        raise AclError(
            status.ACLNN_ERR_INNER, f"executor {addr(executor):#x} is not a live aclOpExecutor", rule="handle.executor"
        )
    return found


@c
def aclSetAclOpExecutorRepeatable(executor):
    _executor(executor).repeatable = True


@c
def aclDestroyAclOpExecutor(executor):
    _executor(executor).destroy()


def set_tensor_addr(executor, index, tensor, data):
    _executor(executor)
    if tensor == boundary.ffi.NULL:
        raise AclError(status.ACLNN_ERR_INNER_NULLPTR, "tensor must not be nullptr", rule="null.tensor")
    _tensor_arg(tensor).addr = addr(data)


def set_dynamic_tensor_addr(executor, ir_index, relative_index, tensors, data):
    _executor(executor)
    items = obj(tensors, meta.TensorList, "tensors")
    if items is None:
        raise AclError(status.ACLNN_ERR_INNER_NULLPTR, "tensors must not be nullptr", rule="null.tensors")
    if relative_index >= len(items.items):
        raise AclError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"relativeIndex {relative_index} is out of range for a list of {len(items.items)} tensors",
            rule="dynamic.index",
        )
    items.items[relative_index].addr = addr(data)


for _prefix in ("Acl", "acl"):
    for _which in ("Input", "Output", ""):
        bind(f"{_prefix}Set{_which}TensorAddr", set_tensor_addr)
        bind(f"{_prefix}SetDynamic{_which}TensorAddr", set_dynamic_tensor_addr)
