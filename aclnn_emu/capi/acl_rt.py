"""Bindings of acl/acl_rt.h: init, devices, contexts, streams, events, memory and copies.

Each converts C arguments, calls aclnn_emu.runtime and writes the results; the checks and their
codes live in the runtime."""

import threading

from ..runtime import api as rt
from ..runtime import errors, version
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
