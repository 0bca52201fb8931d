"""The AscendCL runtime calls, in Python terms (addresses are ints, results are return values).

`aclnn_emu.capi` maps C pointers onto these functions; everything here raises AclError with the
status code real CANN returns, in the order CANN checks (reference acl-abi.md §4).
"""

import ctypes
import os
import threading

from .. import config, status
from . import devices, handles, host_ranges, sanitizer, trace
from .devices import Context
from .errors import AclError, configure_logging
from .streams import Event, Stream

MEMCPY_KINDS = {
    0: "HOST_TO_HOST",
    1: "HOST_TO_DEVICE",
    2: "DEVICE_TO_HOST",
    3: "DEVICE_TO_DEVICE",
    4: "DEFAULT",
    5: "HOST_TO_BUF_TO_DEVICE",
}
RUN_MODE_HOST = 1  # aclrtRunMode ACL_HOST: the program runs on the host of an NPU card
EVENT_RECORDED_NOT_READY, EVENT_RECORDED_COMPLETE = 0, 1

_state_lock = threading.Lock()
_init_refs = 0
_finalized = False
_host_blocks: dict[int, ctypes.Array] = {}


def invalid(message: str, rule: str) -> AclError:
    return AclError(status.ACL_ERROR_INVALID_PARAM, message, rule=rule)


# -- init / finalize ------------------------------------------------------------------------------
def init(config_path: str | None) -> None:
    global _init_refs, _finalized
    with _state_lock:
        if _init_refs > 0:
            _init_refs += 1
            raise AclError(
                status.ACL_ERROR_REPEAT_INITIALIZE,
                "aclInit was already called in this process; it may be called only once",
                rule="init.repeat",
            )
        if config_path and not os.path.isfile(config_path):
            raise AclError(
                status.ACL_ERROR_INVALID_FILE, f"aclInit config file {config_path!r} does not exist", rule="init.config"
            )
        config.reload()
        if config.problem is not None:
            raise AclError(status.ACL_ERROR_INVALID_PARAM, config.problem, rule="settings")
        configure_logging()
        trace.configure(config.current.trace)
        _init_refs, _finalized = 1, False


def initialized() -> bool:
    return _init_refs > 0


def finalize() -> None:
    """aclFinalize: every context is torn down as aclrtResetDevice would (runtime/devices.py), then
    the arenas are emptied; allocations still live are reported as leaks."""
    global _init_refs, _finalized
    with _state_lock:
        if _finalized:
            raise AclError(status.ACL_ERROR_REPEAT_FINALIZE, "aclFinalize was already called", rule="finalize.repeat")
        leaked = devices.shutdown()
        _init_refs, _finalized = 0, True
    try:
        report_leaks(leaked)
    finally:
        trace.checkpoint()  # the trace file is complete up to here, whatever the program does next


def report_leaks(leaked) -> None:
    """A sanitizer report per allocation never freed; every one is reported, also when the sanitizer
    fails the call (ACLNN_EMU_SANITIZE=error: the first failure is raised after all are reported)."""
    failure = None
    for alloc in leaked:
        try:
            sanitizer.report("leak", f"{alloc.size} bytes at {alloc.addr:#x} were never freed with aclrtFree")
        except sanitizer.SanitizerError as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


def forget_after_fork() -> None:
    """In a forked child the runtime starts uninitialised: aclInit may be called again."""
    global _state_lock, _init_refs, _finalized
    _state_lock, _init_refs, _finalized = threading.Lock(), 0, False


# -- devices, contexts ----------------------------------------------------------------------------
def get_device() -> int:
    return devices.current_context().device.id


def get_device_count() -> int:
    return config.current.device_count


def create_context(device_id: int) -> int:
    return devices.create_context(device_id).handle


def destroy_context(handle: int) -> None:
    devices.destroy_context(devices.resolve_context(handle))


def set_current_context(handle: int) -> None:
    ctx = handles.lookup(handle, Context)
    if ctx is None:
        raise AclError(status.ACL_ERROR_RT_CONTEXT_NULL, f"{handle:#x} is not a live context", rule="context.invalid")
    devices.set_current(ctx)


def get_current_context() -> int:
    return devices.current_context().handle


def synchronize_device() -> None:
    ctx = devices.current_context()
    dev = ctx.device
    for c in list(dev.contexts) + ([dev.primary] if dev.primary else []):
        for stream in list(c.streams) + [c.default_stream]:
            stream.synchronize()


# -- streams and events ---------------------------------------------------------------------------
def create_stream() -> int:
    ctx = devices.current_context()
    stream = Stream(ctx)
    ctx.add(stream)
    return stream.handle


def _live(handle: int, cls, what: str):
    """The live stream/event behind a handle, or 107017 as the hardened runtime returns."""
    found = handles.lookup(handle, cls)
    if found is None:
        raise AclError(status.ACL_ERROR_RT_INVALID_HANDLE, f"{handle:#x} is not a live {what}", rule=f"{what}.invalid")
    return found


def stream_of(handle: int) -> Stream:
    """The stream behind a handle; 0 (NULL) is the current context's default stream."""
    if handle == 0:
        return devices.current_context().default_stream
    return _live(handle, Stream, "aclrtStream")


def destroy_stream(handle: int) -> None:
    """aclrtDestroyStream: the handle dies and new tasks are refused at once (CANN invalidates the
    handle before tearing the stream down); the queued tasks still run, as CANN's non-forced
    teardown waits for them. A task failure nobody synchronised for is returned here."""
    stream = stream_of(handle)
    if stream is stream.context.default_stream:
        raise AclError(
            status.ACL_ERROR_RT_INVALID_HANDLE, "the default stream cannot be destroyed", rule="stream.default"
        )
    stream.context.remove(stream)
    handles.release(stream.handle)
    stream.stop((status.ACL_ERROR_RT_INVALID_HANDLE, f"stream {handle:#x} was destroyed"), cancel=False)
    stream.join()
    error = stream.take_error()
    if error is not None:
        raise error


def synchronize_stream(handle: int, timeout_ms: int = -1) -> None:
    stream_of(handle).synchronize(None if timeout_ms < 0 else timeout_ms / 1000.0)


def create_event(flags: int = 0) -> int:
    ctx = devices.current_context()
    event = Event(ctx, flags)
    ctx.add(event)
    return event.handle


def event_of(handle: int) -> Event:
    return _live(handle, Event, "aclrtEvent")


def destroy_event(handle: int) -> None:
    event = event_of(handle)
    event.context.remove(event)
    handles.release(handle)


def record_event(event: int, stream: int) -> None:
    event_of(event).record(stream_of(stream))


def reset_event(event: int, stream: int) -> None:
    event_of(event).reset(stream_of(stream))


def query_event(event: int) -> int:
    ev = event_of(event)
    return EVENT_RECORDED_COMPLETE if ev.recorded and ev.is_complete() else EVENT_RECORDED_NOT_READY


def synchronize_event(event: int) -> None:
    event_of(event).wait()


def event_elapsed_ms(start: int, end: int) -> float:
    a, b = event_of(start), event_of(end)
    if not (a.recorded and b.recorded and a.is_complete() and b.is_complete()) or None in (a.timestamp, b.timestamp):
        raise AclError(
            status.ACL_ERROR_RT_EVENT_NOT_COMPLETE,
            "both events must be recorded and complete before aclrtEventElapsedTime",
            rule="event.incomplete",
        )
    return float((b.timestamp - a.timestamp) * 1000.0)  # type: ignore[operator]  # both checked above


def stream_wait_event(stream: int, event: int) -> None:
    target = stream_of(stream)
    target.submit(event_of(event).wait_task(), "wait event")


# -- memory ---------------------------------------------------------------------------------------
def malloc(size: int) -> int:
    if size == 0:
        raise invalid("aclrtMalloc size must be greater than 0", "malloc.size")
    return devices.current_context().device.memory.malloc(size)


def free(addr: int) -> None:
    memory = devices.memory_of(addr)
    if memory is None:
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID, f"aclrtFree: {addr:#x} is not device memory", rule="free.foreign"
        )
    memory.free(addr)


def malloc_host(size: int) -> int:
    if size == 0:
        raise invalid("aclrtMallocHost size must be greater than 0", "malloc_host.size")
    block = (ctypes.c_char * (size + 64))()
    addr = (ctypes.addressof(block) + 63) // 64 * 64
    _host_blocks[addr] = block
    return addr


def free_host(addr: int) -> None:
    if _host_blocks.pop(addr, None) is None:
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID,
            f"aclrtFreeHost: {addr:#x} was not returned by aclrtMallocHost",
            rule="free_host.unknown",
        )


def check_copy_args(dst: int, dest_max: int, src: int, count: int, kind: int) -> bool:
    """The checks aclrtMemcpy(Async) makes, in order; False when there is nothing to copy."""
    if count == 0:
        return False
    if dst == 0 or src == 0:
        raise invalid("aclrtMemcpy dst and src must not be NULL", "memcpy.null")
    if kind not in MEMCPY_KINDS:
        raise invalid(
            f"aclrtMemcpy kind {kind} is not supported; expected one of "
            + ", ".join(f"{k} ({v})" for k, v in MEMCPY_KINDS.items()),
            "memcpy.kind",
        )
    if dest_max == 0 or count > dest_max:
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID,
            f"aclrtMemcpy count {count} exceeds destMax {dest_max}",
            rule="memcpy.count",
        )
    return dst != src


# A range the driver cannot reach: its range checks fail with DRV_ERROR_INVALID_VALUE, which the
# runtime maps to RT_ERROR_DRV_INPUT and ACL_ERROR_RT_PARAM_INVALID (errcode_manage.cc).
BAD_RANGE = status.ACL_ERROR_RT_PARAM_INVALID


def _vet(addr: int, count: int, memory, what: str, write: bool, sanitize: bool) -> None:
    """One range of a copy or memset, before anything moves: device ranges must stay in mapped
    device memory (memory.py says where neighbouring memory ends), host ranges must be mapped with
    the access the copy needs and must not be the emulator's own memory. `sanitize` adds the
    sanitizer's report of a range that leaves its allocation."""
    if memory is not None:
        (memory.check if sanitize else memory.require_mapped)(addr, count, what, code=BAD_RANGE)
    elif not host_ranges.accessible(addr, count, write) or _in_an_arena(addr, count):
        raise AclError(
            BAD_RANGE,
            f"{what}: host range [{addr:#x}, +{count}) is not mapped "
            f"{'writable' if write else 'readable'} host memory; nothing was touched",
            rule="memory.host_range",
        )


def _in_an_arena(addr: int, count: int) -> bool:
    for dev in devices.all_devices():
        if dev.memory.overlaps(addr, count):
            return True
    return False


# The (src, dst) places an explicit kind promises: True for device memory.
_KIND_ENDS = {0: (False, False), 1: (False, True), 2: (True, False), 3: (True, True), 5: (False, True)}


def _copy_ends(dst: int, src: int, kind: int):
    """The arenas of dst and src (None for host memory), checked against an explicit kind."""
    ends = devices.memory_of(dst), devices.memory_of(src)
    on_device = (ends[1] is not None, ends[0] is not None)
    expected = _KIND_ENDS.get(kind)
    if expected is not None and expected != on_device:
        where = lambda d: "device" if d else "host"
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID,
            f"aclrtMemcpy kind {MEMCPY_KINDS[kind]} does not match the pointers: src is "
            f"{where(on_device[0])} memory, dst is {where(on_device[1])} memory",
            rule="memcpy.direction",
        )
    return ends


def _vet_copy(dst: int, src: int, count: int, ends, sanitize: bool) -> None:
    _vet(src, count, ends[1], "memcpy source", False, sanitize)
    _vet(dst, count, ends[0], "memcpy destination", True, sanitize)


def _copy(dst: int, src: int, count: int, ends) -> None:
    """Copy the way the DMA engine would: through the arenas, into neighbouring memory if asked,
    after both ranges have been vetted again (a stream task runs later than its submission)."""
    _vet_copy(dst, src, count, ends, sanitize=True)
    dst_mem, src_mem = ends
    ctypes.memmove(
        dst if dst_mem is None else dst_mem.host_address(dst),
        src if src_mem is None else src_mem.host_address(src),
        count,
    )
    if trace.enabled:
        trace.copied(count, src_mem is not None, dst_mem is not None)


def memcpy(dst: int, dest_max: int, src: int, count: int, kind: int) -> None:
    if not check_copy_args(dst, dest_max, src, count, kind):
        return
    devices.current_context()
    _copy(dst, src, count, _copy_ends(dst, src, kind))


def memcpy_async(dst: int, dest_max: int, src: int, count: int, kind: int, stream: int) -> None:
    if not check_copy_args(dst, dest_max, src, count, kind):
        return
    target = stream_of(stream)
    ends = _copy_ends(dst, src, kind)
    _vet_copy(dst, src, count, ends, sanitize=False)
    target.submit(lambda: _copy(dst, src, count, ends), "memcpy")


def _memset_target(addr: int, max_count: int, count: int):
    """The checks aclrtMemset(Async) makes; the arena to fill, or None when there is nothing to do."""
    if count == 0:
        return None
    if addr == 0:
        raise invalid("aclrtMemset devPtr must not be NULL", "memset.null")
    if count > max_count:
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID,
            f"aclrtMemset count {count} exceeds maxCount {max_count}",
            rule="memset.count",
        )
    memory = devices.memory_of(addr)
    if memory is None:
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID, f"aclrtMemset: {addr:#x} is not device memory", rule="memset.host"
        )
    return memory


def _fill(memory, addr: int, value: int, count: int) -> None:
    _vet(addr, count, memory, "memset", True, sanitize=True)
    memory.array(addr, count)[:] = value & 0xFF
    if trace.enabled:
        trace.filled(count)


def memset(addr: int, max_count: int, value: int, count: int) -> None:
    memory = _memset_target(addr, max_count, count)
    if memory is not None:
        devices.current_context()
        _fill(memory, addr, value, count)


def memset_async(addr: int, max_count: int, value: int, count: int, stream: int) -> None:
    memory = _memset_target(addr, max_count, count)
    if memory is not None:
        target = stream_of(stream)
        _vet(addr, count, memory, "memset", True, sanitize=False)
        target.submit(lambda: _fill(memory, addr, value, count), "memset")


def mem_info() -> tuple[int, int]:
    memory = devices.current_context().device.memory
    return memory.capacity - memory.used, memory.capacity


# -- small helpers of acl_base --------------------------------------------------------------------
def soc_name() -> str:
    return config.current.soc


# -- 2D copies (runtime src/acl/aclrt_impl/memory.cpp, CheckMemcpy2dParam) ------------------------
MEMCPY_2D_KINDS = (1, 2, 4)  # HOST_TO_DEVICE, DEVICE_TO_HOST, DEFAULT: the only kinds 2D copies take


def _check_2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int):
    if dst == 0 or src == 0:
        raise invalid("aclrtMemcpy2d dst and src must not be NULL", "memcpy2d.null")
    if height == 0 or width == 0:
        raise invalid("aclrtMemcpy2d width and height must be positive", "memcpy2d.size")
    if width > spitch or width > dpitch:
        raise invalid(f"width {width} must not exceed spitch {spitch} and dpitch {dpitch}", "memcpy2d.pitch")
    if kind not in MEMCPY_2D_KINDS:
        raise invalid(f"aclrtMemcpy2d kind {kind} is not HOST_TO_DEVICE, DEVICE_TO_HOST or DEFAULT", "memcpy2d.kind")
    ends = _copy_ends(dst, src, kind)
    rows = [(dst + r * dpitch, src + r * spitch) for r in range(height)]
    for d, s in rows:
        _vet_copy(d, s, width, ends, sanitize=False)
    return ends, rows


def _copy_rows(rows, width: int, ends) -> None:
    for d, s in rows:
        _copy(d, s, width, ends)


def memcpy_2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int) -> None:
    ends, rows = _check_2d(dst, dpitch, src, spitch, width, height, kind)
    devices.current_context()
    _copy_rows(rows, width, ends)


def memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, stream: int) -> None:
    ends, rows = _check_2d(dst, dpitch, src, spitch, width, height, kind)
    stream_of(stream).submit(lambda: _copy_rows(rows, width, ends), "memcpy2d")


# -- batched copies (runtime src/acl/aclrt_impl/memory.cpp, MemcpyBatchImpl) ----------------------
NO_FAILURE = (1 << 64) - 1  # failIndex when every copy was accepted


def memcpy_batch(copies: list[tuple[int, int, int, int]], reserved_clear: bool, stream: int | None) -> None:
    """(dst, destMax, src, size) copies, each as an aclrtMemcpy(Async) of kind DEFAULT; raises the
    first failure with its index in `failed_index` (MemcpyBatchImpl: no batches, a destMax below its
    size, a non-zero rsv byte in an attribute: ACL_ERROR_INVALID_PARAM)."""
    if not copies:
        raise invalid("numBatches must be greater than zero", "batch.empty")
    if any(dest_max < size for _, dest_max, _, size in copies):
        raise invalid("each destMaxs element must be at least its sizes element", "batch.dest_max")
    if not reserved_clear:
        raise invalid("the rsv field of every attribute must be zero", "batch.rsv")
    for i, (dst, dest_max, src, size) in enumerate(copies):
        try:
            if stream is None:
                memcpy(dst, dest_max, src, size, 4)
            else:
                memcpy_async(dst, dest_max, src, size, 4, stream)
        except AclError as exc:
            exc.failed_index = i  # type: ignore[attr-defined]  # aclrtMemcpyBatch's failIndex
            raise


# -- cache maintenance (runtime src/acl/aclrt_impl/memory.cpp, aclrtCmoAsyncImpl) ----------------
CMO_TYPES = range(4)  # PREFETCH, WRITEBACK, INVALID, FLUSH


def cmo_async(src: int, size: int, cmo_type: int, stream: int) -> None:
    """NULL src and size 0 are ACL_ERROR_INVALID_PARAM; the runtime refuses an unknown operation and
    a range that is not mapped device memory. A CPU has no device cache to maintain: the task is
    queued in order and does nothing."""
    if src == 0:
        raise invalid("aclrtCmoAsync src must not be NULL", "cmo.null")
    if size == 0:
        raise invalid("aclrtCmoAsync size must be greater than zero", "cmo.size")
    if cmo_type not in CMO_TYPES:
        raise AclError(BAD_RANGE, f"cmoType {cmo_type} is not 0..3", rule="cmo.type")
    memory = devices.memory_of(src)
    if memory is None:
        raise AclError(BAD_RANGE, f"aclrtCmoAsync: {src:#x} is not device memory", rule="cmo.host")
    memory.require_mapped(src, size, "aclrtCmoAsync", code=BAD_RANGE)
    stream_of(stream).submit(lambda: None, "cache maintenance")
