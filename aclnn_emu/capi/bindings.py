"""Python bodies of the exported C functions: convert C arguments, call the runtime, write results.

No validation and no maths here: only pointer handling. Each binding returns a status code; an
AclError becomes its code (message kept for aclGetRecentErrMsg), any other exception becomes
ACL_ERROR_INTERNAL_ERROR / ACLNN_ERR_INNER with the traceback logged, so nothing crosses into C.
While a setting is bad (config.problem) every function but the pure helpers and aclInit fails at
once: ACL_ERROR_INVALID_PARAM for aclError functions, ACLNN_ERR_PARAM_INVALID for aclnnStatus ones,
NULL for pointer-returning ones.
"""

import logging
import threading
import traceback

import numpy as np

from .. import config, dtypes, meta, status
from ..opdef import arguments, calls
from ..opdef.registry import all_ops
from ..runtime import api as rt
from ..runtime import handles, trace
from ..runtime.errors import AclError, configure_logging, log, record, take_recent
from .prototypes import runtime_prototypes

ffi = lib = None
IMPLS = {}
_messages = threading.local()  # keeps the char[] returned by aclGetRecentErrMsg alive per thread
_soc_name = {}


def c(name):
    def register(fn):
        IMPLS[name] = fn
        return fn

    return register


# -- conversions ----------------------------------------------------------------------------------
def addr(p) -> int:
    return int(ffi.cast("uintptr_t", p))


def text(p):
    return None if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")


def need(p, what: str, code=status.ACL_ERROR_INVALID_PARAM) -> None:
    if p == ffi.NULL:
        raise AclError(code, f"{what} must not be NULL", rule=f"null.{what}")


def obj(p, cls, what: str):
    """The live meta object behind a pointer; None for NULL; an error for anything else."""
    return None if p == ffi.NULL else arguments.live(addr(p), cls, what)


def ints(p, n) -> list[int]:
    return list(ffi.unpack(ffi.cast("int64_t *", p), n)) if n else []


# -- init, errors, misc ---------------------------------------------------------------------------
@c("aclInit")
def _(config_path):
    rt.init(text(config_path))


@c("aclFinalize")
def _():
    rt.finalize()


@c("aclnnInit")
def _(config_path):
    """Either aclInit or aclnnInit readies aclnn; calling both is not an error."""


@c("aclnnFinalize")
def _():
    pass


@c("aclrtGetVersion")
def _(major, minor, patch):
    for p, v in ((major, 1), (minor, 13), (patch, 0)):
        need(p, "version pointer")
        p[0] = v


@c("aclGetRecentErrMsg")
def _():
    message = take_recent()
    if message is None:
        return ffi.NULL
    _messages.buffer = ffi.new("char[]", message.encode())
    return _messages.buffer


@c("aclrtGetSocName")
def _():
    name = rt.soc_name()
    if name not in _soc_name:
        _soc_name[name] = ffi.new("char[]", name.encode())
    return _soc_name[name]


@c("aclrtGetRunMode")
def _(mode):
    need(mode, "runMode")
    mode[0] = rt.RUN_MODE_HOST


# -- devices, contexts, streams, events -----------------------------------------------------------
@c("aclrtSetDevice")
def _(device_id):
    rt.devices.set_device(device_id)


@c("aclrtResetDevice")
def _(device_id):
    rt.devices.reset_device(device_id)


@c("aclrtGetDevice")
def _(device_id):
    need(device_id, "deviceId")
    device_id[0] = rt.get_device()


@c("aclrtGetDeviceCount")
def _(count):
    need(count, "count")
    count[0] = rt.get_device_count()


@c("aclrtSynchronizeDevice")
def _():
    rt.synchronize_device()


@c("aclrtCreateContext")
def _(context, device_id):
    need(context, "context")
    context[0] = ffi.cast("void *", rt.create_context(device_id))


@c("aclrtDestroyContext")
def _(context):
    need(context, "context")
    rt.destroy_context(addr(context))


@c("aclrtSetCurrentContext")
def _(context):
    need(context, "context")
    rt.set_current_context(addr(context))


@c("aclrtGetCurrentContext")
def _(context):
    need(context, "context")
    context[0] = ffi.cast("void *", rt.get_current_context())


@c("aclrtCreateStream")
def _(stream):
    need(stream, "stream")
    stream[0] = ffi.cast("void *", rt.create_stream())


@c("aclrtCreateStreamWithConfig")
def _(stream, priority, flag):
    need(stream, "stream")
    stream[0] = ffi.cast("void *", rt.create_stream())


@c("aclrtDestroyStream")
def _(stream):
    need(stream, "stream")
    rt.destroy_stream(addr(stream))


@c("aclrtSynchronizeStream")
def _(stream):
    rt.synchronize_stream(addr(stream))


@c("aclrtSynchronizeStreamWithTimeout")
def _(stream, timeout):
    rt.synchronize_stream(addr(stream), timeout)


@c("aclrtStreamWaitEvent")
def _(stream, event):
    need(event, "event")
    rt.stream_wait_event(addr(stream), addr(event))


@c("aclrtCreateEvent")
def _(event):
    need(event, "event")
    event[0] = ffi.cast("void *", rt.create_event())


@c("aclrtCreateEventWithFlag")
def _(event, flag):
    need(event, "event")
    event[0] = ffi.cast("void *", rt.create_event(flag))


@c("aclrtDestroyEvent")
def _(event):
    need(event, "event")
    rt.destroy_event(addr(event))


@c("aclrtRecordEvent")
def _(event, stream):
    need(event, "event")
    rt.record_event(addr(event), addr(stream))


@c("aclrtResetEvent")
def _(event, stream):
    need(event, "event")
    rt.reset_event(addr(event), addr(stream))


@c("aclrtQueryEventStatus")
def _(event, state):
    need(event, "event")
    need(state, "status")
    state[0] = rt.query_event(addr(event))


@c("aclrtSynchronizeEvent")
def _(event):
    need(event, "event")
    rt.synchronize_event(addr(event))


@c("aclrtEventElapsedTime")
def _(ms, start, end):
    for p, what in ((ms, "ms"), (start, "startEvent"), (end, "endEvent")):
        need(p, what)
    ms[0] = rt.event_elapsed_ms(addr(start), addr(end))


# -- memory ---------------------------------------------------------------------------------------
def _malloc(dev_ptr, size, policy):
    need(dev_ptr, "devPtr")
    dev_ptr[0] = ffi.cast("void *", rt.malloc(size))


for _name in ("aclrtMalloc", "aclrtMallocAlign32", "aclrtMallocCached"):
    IMPLS[_name] = _malloc


@c("aclrtFree")
def _(dev_ptr):
    need(dev_ptr, "devPtr")
    rt.free(addr(dev_ptr))


@c("aclrtMallocHost")
def _(host_ptr, size):
    need(host_ptr, "hostPtr")
    host_ptr[0] = ffi.cast("void *", rt.malloc_host(size))


@c("aclrtFreeHost")
def _(host_ptr):
    need(host_ptr, "hostPtr")
    rt.free_host(addr(host_ptr))


@c("aclrtMemcpy")
def _(dst, dest_max, src, count, kind):
    rt.memcpy(addr(dst), dest_max, addr(src), count, kind)


@c("aclrtMemcpyAsync")
def _(dst, dest_max, src, count, kind, stream):
    rt.memcpy_async(addr(dst), dest_max, addr(src), count, kind, addr(stream))


@c("aclrtMemset")
def _(dev_ptr, max_count, value, count):
    rt.memset(addr(dev_ptr), max_count, value, count)


@c("aclrtMemsetAsync")
def _(dev_ptr, max_count, value, count, stream):
    rt.memset_async(addr(dev_ptr), max_count, value, count, addr(stream))


@c("aclrtGetMemInfo")
def _(attr, free, total):
    need(free, "free")
    need(total, "total")
    free[0], total[0] = rt.mem_info()


# -- meta objects ---------------------------------------------------------------------------------
NULLPTR = status.ACLNN_ERR_PARAM_NULLPTR


@c("aclCreateTensor")
def _(view_dims, view_num, dtype, strides, offset, fmt, storage_dims, storage_num, data):
    if (view_dims == ffi.NULL and view_num > 0) or (storage_dims == ffi.NULL and storage_num > 0):
        return ffi.NULL
    t = meta.Tensor(
        ints(view_dims, view_num),
        dtype,
        ints(strides, view_num) if strides != ffi.NULL else None,
        offset,
        fmt,
        ints(storage_dims, storage_num),
        addr(data),
    )
    return ffi.cast("aclTensor *", t.handle)


@c("aclInitTensor")
def _(tensor, view_dims, view_num, dtype, strides, offset, fmt, storage_dims, storage_num, data):
    t = obj(tensor, meta.Tensor, "tensor")
    if t is None:
        raise AclError(NULLPTR, "tensor must not be nullptr")
    t.set(
        ints(view_dims, view_num),
        dtype,
        ints(strides, view_num) if strides != ffi.NULL else None,
        offset,
        fmt,
        ints(storage_dims, storage_num),
        addr(data),
    )


@c("aclCreateScalar")
def _(value, dtype):
    dt = dtypes.coerce(dtype)
    if value == ffi.NULL or dt not in dtypes.NUMPY:
        return ffi.NULL
    np_dtype = dtypes.NUMPY[dt]
    raw = ffi.buffer(ffi.cast("char *", value), np_dtype.itemsize)[:]
    return ffi.cast("aclScalar *", meta.Scalar(np.frombuffer(raw, np_dtype)[0].item(), dt).handle)


def _create_array(kind, ctype, ctor_type):
    def create(value, size):
        values = ffi.unpack(ffi.cast(ctype, value), size) if value != ffi.NULL and size else []
        return ffi.cast(ctor_type, meta.Array(kind, values).handle)

    return create


IMPLS["aclCreateIntArray"] = _create_array("int", "int64_t *", "aclIntArray *")
IMPLS["aclCreateFloatArray"] = _create_array("float", "float *", "aclFloatArray *")
IMPLS["aclCreateBoolArray"] = _create_array("bool", "_Bool *", "aclBoolArray *")


def _create_list(cls, ctor_type):
    def create(value, size):
        if value == ffi.NULL and size:
            return ffi.NULL
        items = [obj(value[i], cls, "list element") for i in range(size)]
        return ffi.cast(ctor_type, meta.TensorList(items).handle)

    return create


IMPLS["aclCreateTensorList"] = _create_list(meta.Tensor, "aclTensorList *")
IMPLS["aclCreateScalarList"] = _create_list(meta.Scalar, "aclScalarList *")


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
    IMPLS[_name] = _destroy(_cls)


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
        out = lib.aclemu_new_int64(len(items))
        for i, v in enumerate(items):
            out[i] = v
        values[0], count[0] = out, len(items)

    return get


IMPLS["aclGetViewShape"] = _getter_array("shape")
IMPLS["aclGetStorageShape"] = _getter_array("storage_shape")
IMPLS["aclGetViewStrides"] = _getter_array("strides")


def _getter_value(read):
    def get(tensor, out):
        t = _tensor_arg(tensor)
        need(out, "output", NULLPTR)
        out[0] = read(t)

    return get


IMPLS["aclGetViewOffset"] = _getter_value(lambda t: t.offset)
IMPLS["aclGetFormat"] = _getter_value(lambda t: int(t.format))
IMPLS["aclGetDataType"] = _getter_value(lambda t: int(t.dtype))
IMPLS["aclGetRawTensorAddr"] = _getter_value(lambda t: ffi.cast("void *", t.addr))


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
    IMPLS[_name] = _size_getter(_cls, _attr)


@c("aclSetRawTensorAddr")
def _(tensor, data):
    _tensor_arg(tensor).addr = addr(data)


def _executor(executor):
    if executor == ffi.NULL:
        raise AclError(status.ACLNN_ERR_INNER_NULLPTR, "executor must not be nullptr", rule="null.executor")
    found = handles.lookup(addr(executor), meta.Executor)
    if found is None:
        raise AclError(
            status.ACLNN_ERR_INNER, f"executor {addr(executor):#x} is not a live aclOpExecutor", rule="handle.executor"
        )
    return found


@c("aclSetAclOpExecutorRepeatable")
def _(executor):
    _executor(executor).repeatable = True


@c("aclDestroyAclOpExecutor")
def _(executor):
    _executor(executor).destroy()


def _set_addr(executor, index, tensor, data):
    _executor(executor)
    if tensor == ffi.NULL:
        raise AclError(status.ACLNN_ERR_INNER_NULLPTR, "tensor must not be nullptr", rule="null.tensor")
    _tensor_arg(tensor).addr = addr(data)


def _set_dynamic_addr(executor, ir_index, relative_index, tensors, data):
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
        IMPLS[f"{_prefix}Set{_which}TensorAddr"] = _set_addr
        IMPLS[f"{_prefix}SetDynamic{_which}TensorAddr"] = _set_dynamic_addr


# -- operators ------------------------------------------------------------------------------------
def _op_value(param, value):
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
        return text(value)
    return value


def _phase1(op):
    def phase1(*args):
        *values, ws_out, executor_out = args
        need(ws_out, "workspaceSize", NULLPTR)
        need(executor_out, "executor", NULLPTR)
        converted = [_op_value(p, v) for p, v in zip(op.params, values)]
        code, size, handle = calls.get_workspace_size(op, converted)
        if code == status.ACLNN_SUCCESS:
            ws_out[0] = size
            executor_out[0] = ffi.cast("void *", handle)
        return code

    return phase1


def _phase2(op):
    def phase2(workspace, size, executor, stream):
        return calls.run(op.name, addr(workspace), size, addr(executor), addr(stream))

    return phase2


# -- wiring ---------------------------------------------------------------------------------------
# Functions that answer whatever the settings (besides the pure helpers, which are C in the shim):
# aclInit, which reads them again, and the error and version queries.
SETTINGS_FREE = {"aclInit", "aclGetRecentErrMsg", "aclrtGetVersion"}


def _guard(name, fn, status_failure, settings_failure):
    """Map errors to codes for status-returning functions; value-returning ones get NULL/0.
    `settings_failure` is the code (or, for a pointer, the message's code) while a setting is bad."""
    gated = name not in SETTINGS_FREE

    def call(*args):
        span = trace.enabled and trace.begin()  # the call as a slice of this thread's trace track
        try:
            if gated and config.problem is not None:
                raise AclError(settings_failure, config.problem, rule="settings")
            result = fn(*args)
            return status.ACL_SUCCESS if status_failure is not None and result is None else result
        except AclError as exc:
            record(exc.code, f"{name}: {exc.message}")
            if status_failure is not None:
                return exc.code
        except Exception as exc:  # never let a Python error cross into C
            log.error("%s raised:\n%s", name, traceback.format_exc())
            code = status_failure or status.ACL_ERROR_INTERNAL_ERROR
            record(code, f"{name}: internal error in aclnn-emu: {exc!r}")
            if status_failure is not None:
                return status_failure
        finally:
            if span:
                trace.end(name, span)
        return ffi.NULL if returns_pointer[name] else 0

    return call


returns_pointer = {}


def _log_applog(level, func, file, line, message):
    logging.getLogger("aclnn_emu.app").log(
        {0: 10, 1: 20, 2: 30, 3: 40}.get(level, 20), "%s:%d %s: %s", text(file), line, text(func), text(message)
    )


def attach(ffi_, lib_) -> list[str]:
    """Connect every extern "Python" declaration of the shim to its binding (embedding init code);
    returns the names attached. The pure helpers (prototypes.IN_C) are C in the shim itself."""
    global ffi, lib
    ffi, lib = ffi_, lib_
    configure_logging()
    items = [(p.name, IMPLS[p.name], p.ret, p.headers) for p in runtime_prototypes() if not p.in_c]
    for op in all_ops():
        items += [(op.phase1, _phase1(op), "aclnnStatus", "aclnn/"), (op.phase2, _phase2(op), "aclnnStatus", "aclnn/")]
    for name, fn, ret, headers in items:
        failure = {"aclError": status.ACL_ERROR_INTERNAL_ERROR, "aclnnStatus": status.ACLNN_ERR_INNER}.get(ret)
        settings = status.ACLNN_ERR_PARAM_INVALID if headers == "aclnn/" else status.ACL_ERROR_INVALID_PARAM
        returns_pointer[name] = ret.endswith("*")
        ffi.def_extern(name=f"_py_{name}")(_guard(name, fn, failure, settings))
    ffi.def_extern(name="_py_aclAppLog")(_log_applog)
    return [name for name, *_ in items]
