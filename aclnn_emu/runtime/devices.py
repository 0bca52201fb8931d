"""Devices and contexts; the current context belongs to the calling host thread.

`_lock` guards the device table and each device's contexts and each context's streams and events.
It is held only for bookkeeping, never while waiting for a stream: stream tasks take it too (to
find the arena of an address), so tearing down happens after it is released.

What a teardown does with unfinished work follows the CANN runtime: a context being torn down
destroys its remaining streams by force (Context::TearDown, "tear down stream abandon", with the
force flag): their queued tasks are dropped and the running one is cancelled. The default stream of
a device's primary context is waited for, as aclrtResetDevice documents; a created context's own
default stream is torn down by force like the rest.
"""

import threading
from typing import Literal, overload

from .. import config, status
from . import handles
from .errors import AclError
from .memory import DeviceMemory
from .streams import Event, Stream

_lock = threading.RLock()
_devices: dict[int, "Device"] = {}
_thread = threading.local()
_stale: list[tuple[int, int]] = []  # device address ranges of a parent process (after fork)


class Context:
    def __init__(self, device: "Device", primary: bool):
        self.device = device
        self.primary = primary
        self.handle = handles.register(self)
        self.default_stream = Stream(self)
        self.streams: set[Stream] = set()
        self.events: set[Event] = set()
        self.closed = False

    def add(self, item: Stream | Event) -> None:
        """Register a created stream or event; refused (and its handle released) once the context
        is being torn down."""
        with _lock:
            if not self.closed:
                if isinstance(item, Stream):
                    self.streams.add(item)
                else:
                    self.events.add(item)
                return
        handles.release(item.handle)
        raise AclError(
            status.ACL_ERROR_RT_CONTEXT_NULL,
            "the current context was destroyed or its device reset",
            rule="context.closed",
        )

    def remove(self, item: Stream | Event) -> None:
        with _lock:
            (self.streams if isinstance(item, Stream) else self.events).discard(item)

    def stop(self) -> None:
        """Kill the context's handles, as CANN does before tearing streams down, and stop every stream
        taking tasks: all are cancelled but the primary context's default stream, which drains."""
        with _lock:
            self.closed = True
            streams = list(self.streams)
        self.release_handles()
        refusal = (status.ACL_ERROR_RT_INVALID_HANDLE, "its context was destroyed or its device reset")
        for stream in streams:
            stream.stop(refusal, cancel=True)
        self.default_stream.stop((status.ACL_ERROR_RT_CONTEXT_NULL, refusal[1]), cancel=not self.primary)

    def release_handles(self) -> None:
        """The context's own handle and those of its streams and events die."""
        with _lock:
            items: list[Context | Stream | Event] = [self, self.default_stream, *self.streams, *self.events]
        for item in items:
            handles.release(item.handle)

    def join(self) -> None:
        """After `stop`: wait until every stream's worker has finished."""
        with _lock:
            streams = list(self.streams)
            self.streams.clear()
            self.events.clear()
        for stream in streams + [self.default_stream]:
            stream.join()


def close_contexts(contexts: list[Context]) -> None:
    """Tear contexts down: first every stream stops (cancelling what it should), then the waits.
    Cancelling first completes, as aborted, the event records that other streams may be waiting for."""
    for ctx in contexts:
        ctx.stop()
    for ctx in contexts:
        ctx.join()


class Device:
    """One emulated NPU: its memory arena lives for the process, its primary context while set."""

    def __init__(self, device_id: int):
        self.id = device_id
        self.memory = DeviceMemory(config.current.device_memory)
        self.primary: Context | None = None
        self.refs = 0
        self.contexts: set[Context] = set()

    def take_contexts(self) -> list[Context]:
        """Detach the primary and created contexts for teardown (caller holds _lock)."""
        contexts = list(self.contexts) + ([self.primary] if self.primary else [])
        self.contexts.clear()
        self.primary, self.refs = None, 0
        return contexts


def check_id(device_id: int) -> None:
    if not 0 <= device_id < config.current.device_count:
        raise AclError(
            status.ACL_ERROR_RT_INVALID_DEVICEID,
            f"device id {device_id} is invalid: {config.current.device_count} device(s) present "
            f"(ACLNN_EMU_DEVICE_COUNT), valid ids are 0..{config.current.device_count - 1}",
            rule="device.id",
        )


def device(device_id: int) -> Device:
    check_id(device_id)
    with _lock:
        if device_id not in _devices:
            _devices[device_id] = Device(device_id)
        return _devices[device_id]


def all_devices() -> list[Device]:
    with _lock:
        return list(_devices.values())


def set_device(device_id: int) -> None:
    """aclrtSetDevice: open the primary context (refcounted) and make it current for this thread."""
    dev = device(device_id)
    with _lock:
        if dev.primary is None:
            dev.primary = Context(dev, primary=True)
        dev.refs += 1
        _thread.context = dev.primary


def reset_device(device_id: int) -> None:
    """aclrtResetDevice: the last reset tears down the primary context and the device's created ones."""
    dev = device(device_id)
    with _lock:
        if dev.refs == 0:
            return
        dev.refs -= 1
        contexts = dev.take_contexts() if dev.refs == 0 else []
    close_contexts(contexts)
    if getattr(_thread, "context", None) is not None and _thread.context.device is dev:
        _thread.context = None


@overload
def current_context(required: Literal[True] = True) -> Context: ...
@overload
def current_context(required: bool) -> Context | None: ...
def current_context(required: bool = True) -> Context | None:
    ctx = getattr(_thread, "context", None)
    if ctx is not None and handles.lookup(ctx.handle, Context) is None:
        ctx = _thread.context = None  # destroyed by another call
    if ctx is None and required:
        raise AclError(
            status.ACL_ERROR_RT_CONTEXT_NULL,
            "no current context on this thread: call aclrtSetDevice or aclrtSetCurrentContext first",
            rule="context.none",
        )
    return ctx


def set_current(ctx: Context | None) -> None:
    _thread.context = ctx


def create_context(device_id: int) -> Context:
    dev = device(device_id)
    with _lock:
        ctx = Context(dev, primary=False)
        dev.contexts.add(ctx)
    _thread.context = ctx
    return ctx


def destroy_context(ctx: Context) -> None:
    with _lock:
        ctx.device.contexts.discard(ctx)
    close_contexts([ctx])
    if getattr(_thread, "context", None) is ctx:
        _thread.context = None


def resolve_context(handle: int) -> Context:
    ctx = handles.lookup(handle, Context)
    if ctx is None or ctx.primary:
        raise AclError(
            status.ACL_ERROR_RT_CONTEXT_NULL,
            f"context {handle:#x} is not a context created by aclrtCreateContext"
            + (" (the primary context of a device cannot be destroyed)" if ctx else ""),
            rule="context.invalid",
        )
    return ctx


def forget_range(low: int, high: int) -> None:
    """A range of the parent's device addresses, in a forked child (see forget_after_fork)."""
    _stale.append((low, high))


# Lookups of device address ranges outside the arenas (vmm.py's reserved ranges register theirs).
region_finders: list = []


def memory_of(addr: int):
    """The arena (or reserved virtual range, runtime/vmm.py) that owns a device address, or None
    for host memory."""
    for dev in all_devices():
        if dev.memory.contains(addr):
            return dev.memory
    for find in region_finders:
        reserved = find(addr)
        if reserved is not None:
            return reserved
    if any(low <= addr < high for low, high in _stale):
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID,
            f"{addr:#x} is device memory of the parent process: a forked child has its own device "
            "memory (aclInit, aclrtSetDevice and aclrtMalloc again)",
            rule="memory.parent",
        )
    return None


def shutdown() -> list:
    """aclFinalize: close every context and return the leaked allocations before forgetting them."""
    with _lock:
        devices = list(_devices.values())
        contexts = [ctx for dev in devices for ctx in dev.take_contexts()]
    close_contexts(contexts)
    leaked = []
    for dev in devices:
        leaked += dev.memory.leaks()
        dev.memory.reset()
    _thread.context = None
    return leaked


def forget_after_fork() -> None:
    """In a forked child: the parent's devices, contexts, streams and events are not this process's.
    Their handles die (so using one returns an error code), the arenas stop sharing the parent's
    pages while their address ranges stay reserved and recognisable, and the module starts afresh:
    threads do not survive fork, so none of the old locks can be trusted."""
    global _lock, _devices, _thread
    old, _lock, _devices, _thread = _devices, threading.RLock(), {}, threading.local()
    for dev in old.values():
        dev.memory.detach_after_fork()
        _stale.append(dev.memory.address_range())
        for ctx in dev.take_contexts():
            ctx.release_handles()
