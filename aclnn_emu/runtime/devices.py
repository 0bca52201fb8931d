"""Devices and contexts; the current context belongs to the calling host thread."""
import threading

from .. import config, status
from . import handles
from .errors import AclError
from .memory import DeviceMemory
from .streams import Stream

_lock = threading.RLock()
_devices: dict[int, "Device"] = {}
_thread = threading.local()


class Context:
    def __init__(self, device: "Device", primary: bool):
        self.device = device
        self.primary = primary
        self.handle = handles.register(self)
        self.default_stream = Stream(self)
        self.streams: set[Stream] = set()
        self.events: set = set()

    def close(self) -> None:
        for stream in list(self.streams) + [self.default_stream]:
            stream.close()
        for event in list(self.events):
            handles.release(event.handle)
        self.streams.clear(); self.events.clear()
        handles.release(self.handle)


class Device:
    """One emulated NPU: its memory arena lives for the process, its primary context while set."""

    def __init__(self, device_id: int):
        self.id = device_id
        self.memory = DeviceMemory(config.current.device_memory)
        self.primary: Context | None = None
        self.refs = 0
        self.contexts: set[Context] = set()


def check_id(device_id: int) -> None:
    if not 0 <= device_id < config.current.device_count:
        raise AclError(status.ACL_ERROR_RT_INVALID_DEVICEID,
                       f"device id {device_id} is invalid: {config.current.device_count} device(s) present "
                       f"(ACLNN_EMU_DEVICE_COUNT), valid ids are 0..{config.current.device_count - 1}",
                       rule="device.id")


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
    dev = device(device_id)
    with _lock:
        if dev.refs == 0:
            return
        dev.refs -= 1
        if dev.refs == 0 and dev.primary is not None:
            primary, dev.primary = dev.primary, None
            primary.close()
            for ctx in list(dev.contexts):
                ctx.close()
            dev.contexts.clear()
    if getattr(_thread, "context", None) is not None and _thread.context.device is dev:
        _thread.context = None


def current_context(required: bool = True) -> Context | None:
    ctx = getattr(_thread, "context", None)
    if ctx is not None and handles.lookup(ctx.handle, Context) is None:
        ctx = _thread.context = None    # destroyed by another call
    if ctx is None and required:
        raise AclError(status.ACL_ERROR_RT_CONTEXT_NULL,
                       "no current context on this thread: call aclrtSetDevice or aclrtSetCurrentContext first",
                       rule="context.none")
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
    ctx.close()
    if getattr(_thread, "context", None) is ctx:
        _thread.context = None


def resolve_context(handle: int) -> Context:
    ctx = handles.lookup(handle, Context)
    if ctx is None or ctx.primary:
        raise AclError(status.ACL_ERROR_RT_CONTEXT_NULL,
                       f"context {handle:#x} is not a context created by aclrtCreateContext"
                       + (" (the primary context of a device cannot be destroyed)" if ctx else ""),
                       rule="context.invalid")
    return ctx


def memory_of(addr: int) -> DeviceMemory | None:
    """The arena that owns a device address, or None for host memory."""
    for dev in all_devices():
        if dev.memory.contains(addr):
            return dev.memory
    return None


def shutdown() -> list:
    """aclFinalize: close every context and return the leaked allocations before forgetting them."""
    leaked = []
    with _lock:
        for dev in _devices.values():
            for ctx in list(dev.contexts) + ([dev.primary] if dev.primary else []):
                ctx.close()
            dev.contexts.clear(); dev.primary = None; dev.refs = 0
            leaked += dev.memory.leaks()
            dev.memory.reset()
    _thread.context = None
    return leaked
