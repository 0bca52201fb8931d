"""Bindings of acl/acl_rt.h: init, devices, contexts, streams, events, memory and copies.

Each converts C arguments, calls aclnn_emu.runtime and writes the results; the checks and their
codes live in the runtime."""

import threading

from ..runtime import api as rt
from ..runtime import device_facts as facts
from ..runtime import callbacks, capture, devices, errors, host_register, notifies, version, vmm
from . import boundary
from .boundary import addr, bind, c, need, ptr, put, text

_messages = threading.local()  # keeps the char[] returned by aclGetRecentErrMsg alive per thread


# -- init, errors, versions -----------------------------------------------------------------------
@c
def aclInit(config_path):
    rt.init(text(config_path))


@c
def aclFinalize():
    rt.finalize()


@c
def aclrtGetVersion(major, minor, patch):
    for p, v in zip((major, minor, patch), version.acl_api_version()):
        put(p, v, "version pointer")


@c
def aclGetRecentErrMsg():
    message = errors.take_recent()
    if message is None:
        return boundary.ffi.NULL
    _messages.buffer = boundary.ffi.new("char[]", message.encode())
    return _messages.buffer


@c
def aclrtGetRunMode(mode):
    put(mode, rt.RUN_MODE_HOST, "runMode")


# -- devices, contexts ----------------------------------------------------------------------------
@c
def aclrtSetDevice(device_id):
    rt.devices.set_device(device_id)


@c
def aclrtResetDevice(device_id):
    rt.devices.reset_device(device_id)


@c
def aclrtGetDevice(device_id):
    need(device_id, "deviceId")
    device_id[0] = rt.get_device()


@c
def aclrtGetDeviceCount(count):
    need(count, "count")
    count[0] = rt.get_device_count()


@c
def aclrtSynchronizeDevice():
    rt.synchronize_device()


@c
def aclrtCreateContext(context, device_id):
    need(context, "context")
    context[0] = ptr(rt.create_context(device_id))


@c
def aclrtDestroyContext(context):
    need(context, "context")
    rt.destroy_context(addr(context))


@c
def aclrtSetCurrentContext(context):
    need(context, "context")
    rt.set_current_context(addr(context))


@c
def aclrtGetCurrentContext(context):
    need(context, "context")
    context[0] = ptr(rt.get_current_context())


# -- streams --------------------------------------------------------------------------------------
@c
def aclrtCreateStream(stream):
    need(stream, "stream")
    stream[0] = ptr(rt.create_stream())


@c
def aclrtCreateStreamWithConfig(stream, priority, flag):
    need(stream, "stream")
    stream[0] = ptr(rt.create_stream())


@c
def aclrtDestroyStream(stream):
    need(stream, "stream")
    rt.destroy_stream(addr(stream))


@c
def aclrtSynchronizeStream(stream):
    rt.synchronize_stream(addr(stream))


@c
def aclrtSynchronizeStreamWithTimeout(stream, timeout):
    rt.synchronize_stream(addr(stream), timeout)


@c
def aclrtStreamWaitEvent(stream, event):
    need(event, "event")
    rt.stream_wait_event(addr(stream), addr(event))


# -- events ---------------------------------------------------------------------------------------
@c
def aclrtCreateEvent(event):
    need(event, "event")
    event[0] = ptr(rt.create_event())


@c
def aclrtCreateEventWithFlag(event, flag):
    need(event, "event")
    event[0] = ptr(rt.create_event(flag))


@c
def aclrtDestroyEvent(event):
    need(event, "event")
    rt.destroy_event(addr(event))


@c
def aclrtRecordEvent(event, stream):
    need(event, "event")
    rt.record_event(addr(event), addr(stream))


@c
def aclrtResetEvent(event, stream):
    need(event, "event")
    rt.reset_event(addr(event), addr(stream))


@c
def aclrtQueryEventStatus(event, state):
    need(event, "event")
    need(state, "status")
    state[0] = rt.query_event(addr(event))


@c
def aclrtSynchronizeEvent(event):
    need(event, "event")
    rt.synchronize_event(addr(event))


@c
def aclrtEventElapsedTime(ms, start, end):
    for p, what in ((ms, "ms"), (start, "startEvent"), (end, "endEvent")):
        need(p, what)
    ms[0] = rt.event_elapsed_ms(addr(start), addr(end))


# -- memory ---------------------------------------------------------------------------------------
def malloc_device(dev_ptr, size, policy):
    need(dev_ptr, "devPtr")
    dev_ptr[0] = ptr(rt.malloc(size))


for _name in ("aclrtMalloc", "aclrtMallocAlign32", "aclrtMallocCached"):
    bind(_name, malloc_device)


@c
def aclrtFree(dev_ptr):
    need(dev_ptr, "devPtr")
    rt.free(addr(dev_ptr))


@c
def aclrtMallocHost(host_ptr, size):
    need(host_ptr, "hostPtr")
    host_ptr[0] = ptr(rt.malloc_host(size))


@c
def aclrtFreeHost(host_ptr):
    need(host_ptr, "hostPtr")
    rt.free_host(addr(host_ptr))


@c
def aclrtMemcpy(dst, dest_max, src, count, kind):
    rt.memcpy(addr(dst), dest_max, addr(src), count, kind)


@c
def aclrtMemcpyAsync(dst, dest_max, src, count, kind, stream):
    rt.memcpy_async(addr(dst), dest_max, addr(src), count, kind, addr(stream))


@c
def aclrtMemset(dev_ptr, max_count, value, count):
    rt.memset(addr(dev_ptr), max_count, value, count)


@c
def aclrtMemsetAsync(dev_ptr, max_count, value, count, stream):
    rt.memset_async(addr(dev_ptr), max_count, value, count, addr(stream))


@c
def aclrtGetMemInfo(attr, free, total):
    need(free, "free")
    need(total, "total")
    free[0], total[0] = rt.mem_info()


# -- versions of the installed packages -----------------------------------------------------------
ACL_PKG_VERSION_MAX_SIZE = 128  # versionStr's size (acl_rt.h)


@c
def aclsysGetVersionStr(pkg_name, version_str):
    need(version_str, "versionStr")
    need(pkg_name, "pkgName")
    found = version.version_string(text(pkg_name)).encode()[: ACL_PKG_VERSION_MAX_SIZE - 1]
    boundary.ffi.memmove(version_str, found + b"\0", len(found) + 1)


@c
def aclsysGetVersionNum(pkg_name, version_num):
    need(version_num, "versionNum")
    need(pkg_name, "pkgName")
    version_num[0] = version.version_number(version.version_string(text(pkg_name)))


# -- 2D copies ------------------------------------------------------------------------------------
@c
def aclrtMemcpy2d(dst, dpitch, src, spitch, width, height, kind):
    rt.memcpy_2d(addr(dst), dpitch, addr(src), spitch, width, height, kind)


@c
def aclrtMemcpy2dAsync(dst, dpitch, src, spitch, width, height, kind, stream):
    rt.memcpy_2d_async(addr(dst), dpitch, addr(src), spitch, width, height, kind, addr(stream))


# -- device facts, stream facts, settings ---------------------------------------------------------
@c
def aclrtGetDeviceInfo(device_id, attr, value):
    put(value, facts.device_info(device_id, attr), "value")


def _same_id(device_id, out):
    put(out, facts.same_device_id(device_id), "device id")


for _name in (
    "aclrtGetLogicDevIdByUserDevId",
    "aclrtGetUserDevIdByLogicDevId",
    "aclrtGetLogicDevIdByPhyDevId",
    "aclrtGetPhyDevIdByLogicDevId",
):
    bind(_name, _same_id)


@c
def aclrtStreamQuery(stream, state):
    need(state, "status")
    state[0] = facts.stream_query(addr(stream))


@c
def aclrtStreamGetId(stream, stream_id):
    need(stream_id, "streamId")
    stream_id[0] = facts.stream_id(addr(stream))


@c
def aclrtSetStreamFailureMode(stream, mode):
    facts.set_failure_mode(addr(stream), mode)


@c
def aclrtGetStreamAvailableNum(count):
    need(count, "streamCount")
    count[0] = facts.streams_available()


@c
def aclrtDeviceGetStreamPriorityRange(least, greatest):
    need(least, "leastPriority")
    need(greatest, "greatestPriority")
    least[0], greatest[0] = facts.LEAST_PRIORITY, facts.GREATEST_PRIORITY


@c
def aclrtSetOpWaitTimeout(timeout):
    facts.store("op_wait_timeout", timeout)


@c
def aclrtSetOpExecuteTimeOut(timeout):
    facts.store("op_execute_timeout", timeout)


@c
def aclrtSetDeviceSatMode(mode):
    facts.set_sat_mode(mode)


@c
def aclrtGetDeviceSatMode(mode):
    put(mode, facts.setting("sat_mode"), "mode")


@c
def aclrtCtxSetSysParamOpt(opt, value):
    devices.current_context()
    facts.set_sys_param(opt, value)


@c
def aclrtCtxGetSysParamOpt(opt, value):
    devices.current_context()
    put(value, facts.sys_param(opt), "value")


bind("aclrtSetSysParamOpt", lambda opt, value: facts.set_sys_param(opt, value))


@c
def aclrtGetSysParamOpt(opt, value):
    put(value, facts.sys_param(opt), "value")


@c
def aclrtCreateEventExWithFlag(event, flag):
    need(event, "event")
    event[0] = ptr(rt.create_event(flag))


# -- peer access ----------------------------------------------------------------------------------
@c
def aclrtDeviceCanAccessPeer(can_access, device_id, peer):
    need(can_access, "canAccessPeer")
    can_access[0] = facts.can_access_peer(device_id, peer)


@c
def aclrtDeviceEnablePeerAccess(peer, flags):
    facts.enable_peer(peer, flags)


@c
def aclrtDeviceDisablePeerAccess(peer):
    facts.disable_peer(peer)


@c
def aclrtDevicePeerAccessStatus(device_id, peer, state):
    need(state, "status")
    state[0] = facts.peer_status(device_id, peer)


# -- virtual memory -------------------------------------------------------------------------------
@c
def aclrtReserveMemAddress(vir_ptr, size, alignment, expect_ptr, flags):
    need(vir_ptr, "virPtr")
    vir_ptr[0] = ptr(vmm.reserve(size, alignment, addr(expect_ptr), flags))


@c
def aclrtReleaseMemAddress(vir_ptr):
    need(vir_ptr, "virPtr")
    vmm.release(addr(vir_ptr))


@c
def aclrtMallocPhysical(handle, size, prop, flags):
    need(handle, "handle")
    need(prop, "prop")
    location = prop.location
    handle[0] = ptr(
        vmm.malloc_physical(size, prop.handleType, prop.allocationType, prop.memAttr, location.type, location.id, flags)
    )


@c
def aclrtFreePhysical(handle):
    need(handle, "handle")
    vmm.free_physical(addr(handle))


@c
def aclrtMapMem(vir_ptr, size, offset, handle, flags):
    need(vir_ptr, "virPtr")
    need(handle, "handle")
    vmm.map_memory(addr(vir_ptr), size, offset, addr(handle), flags)


@c
def aclrtUnmapMem(vir_ptr):
    need(vir_ptr, "virPtr")
    vmm.unmap_memory(addr(vir_ptr))


@c
def aclrtMemGetAllocationGranularity(prop, option, granularity):
    need(prop, "prop")
    need(granularity, "granularity")
    granularity[0] = vmm.granularity(prop.memAttr, option)


# -- graph capture --------------------------------------------------------------------------------
@c
def aclmdlRICaptureBegin(stream, mode):
    capture.begin(addr(stream), mode)


@c
def aclmdlRICaptureGetInfo(stream, state, model):
    need(stream, "stream")
    if state == boundary.ffi.NULL and model == boundary.ffi.NULL:
        need(boundary.ffi.NULL, "status and modelRI")
    found_state, found_model = capture.info(addr(stream))
    if state != boundary.ffi.NULL:
        state[0] = found_state
    if model != boundary.ffi.NULL:
        model[0] = ptr(found_model)


@c
def aclmdlRICaptureEnd(stream, model):
    need(stream, "stream")
    need(model, "modelRI")
    model[0] = ptr(capture.end(addr(stream)))


@c
def aclmdlRIExecuteAsync(model, stream):
    capture.execute_async(addr(model), addr(stream))


@c
def aclmdlRIExecute(model, timeout):
    capture.execute(addr(model), timeout)


@c
def aclmdlRIDestroy(model):
    capture.destroy(addr(model))


# -- host callbacks -------------------------------------------------------------------------------
def _c_call(fn, data):
    """A Python callable running the user's C function `fn(data)`; None for a NULL function."""
    return None if fn == boundary.ffi.NULL else lambda: fn(data)


@c
def aclrtSubscribeReport(thread_id, stream):
    callbacks.subscribe(thread_id, addr(stream))


@c
def aclrtLaunchCallback(fn, user_data, block_type, stream):
    callbacks.launch(_c_call(fn, user_data), block_type, addr(stream))


@c
def aclrtProcessReport(timeout):
    callbacks.process(timeout)


@c
def aclrtUnSubscribeReport(thread_id, stream):
    callbacks.unsubscribe(thread_id, addr(stream))


@c
def aclrtLaunchHostFunc(stream, fn, args):
    callbacks.launch_host_func(_c_call(fn, args), addr(stream))


# -- notifies -------------------------------------------------------------------------------------
@c
def aclrtCreateNotify(notify, flag):
    need(notify, "notify")
    notify[0] = ptr(notifies.create(flag))


@c
def aclrtDestroyNotify(notify):
    notifies.destroy(addr(notify))


@c
def aclrtRecordNotify(notify, stream):
    notifies.record(addr(notify), addr(stream))


@c
def aclrtWaitAndResetNotify(notify, stream, timeout):
    notifies.wait_and_reset(addr(notify), addr(stream), timeout)


@c
def aclrtGetNotifyId(notify, notify_id):
    found = notifies.notify_id(addr(notify))
    put(notify_id, found, "notifyId")


# -- batched copies -------------------------------------------------------------------------------
def _memcpy_batch(dsts, dest_maxs, srcs, sizes, count, attrs, attr_indexes, attr_count, fail_index, stream):
    for p, what in (
        (dsts, "dsts"),
        (dest_maxs, "destMaxs"),
        (srcs, "srcs"),
        (sizes, "sizes"),
        (attrs, "attrs"),
        (attr_indexes, "attrsIndexes"),
        (fail_index, "failIndex"),
    ):
        need(p, what)
    copies = [(addr(dsts[i]), dest_maxs[i], addr(srcs[i]), sizes[i]) for i in range(count)]
    clear = all(not any(attrs[k].rsv) for k in range(attr_count))
    try:
        rt.memcpy_batch(copies, clear, stream)
    except errors.AclError as exc:
        fail_index[0] = getattr(exc, "failed_index", rt.NO_FAILURE)
        raise
    fail_index[0] = rt.NO_FAILURE


@c
def aclrtMemcpyBatch(dsts, dest_maxs, srcs, sizes, count, attrs, attr_indexes, attr_count, fail_index):
    _memcpy_batch(dsts, dest_maxs, srcs, sizes, count, attrs, attr_indexes, attr_count, fail_index, None)


@c
def aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, count, attrs, attr_indexes, attr_count, fail_index, stream):
    _memcpy_batch(dsts, dest_maxs, srcs, sizes, count, attrs, attr_indexes, attr_count, fail_index, addr(stream))


# -- host memory registration, cache maintenance --------------------------------------------------
@c
def aclrtHostRegister(host, size, kind, dev_ptr):
    need(dev_ptr, "devPtr")
    dev_ptr[0] = ptr(host_register.register(addr(host), size, kind))


@c
def aclrtHostGetDevicePointer(host, dev_ptr, flag):
    need(host, "pHost")
    need(dev_ptr, "pDevice")
    dev_ptr[0] = ptr(host_register.device_pointer(addr(host), flag))


@c
def aclrtHostUnregister(host):
    need(host, "ptr")
    host_register.unregister(addr(host))


@c
def aclrtCmoAsync(src, size, cmo_type, stream):
    rt.cmo_async(addr(src), size, cmo_type, addr(stream))
