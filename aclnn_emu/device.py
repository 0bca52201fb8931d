"""Lifetimes as context managers: a device, its streams and events.

    with ae.Device(0) as dev, dev.stream() as s:
        ex = ae.ops.X.prepare(...).run(stream=s)   # queued on s
        s.synchronize()                            # now the results are there
        out = ex.result()

Failures raise the AclnnError subclass of their status code.
"""

from . import api
from .errors import InvalidHandle, typed
from .runtime import api as rt
from .runtime import devices


class _Handle:
    """A runtime handle a `with` block (or `.close()`) destroys; one already gone is left alone."""

    _destroy = None  # the runtime function that destroys the handle

    def __init__(self, handle: int):
        self.handle = handle

    def close(self) -> None:
        try:
            with typed():
                type(self)._destroy(self.handle)
        except InvalidHandle:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Stream(_Handle):
    """An aclrtStream: `.handle`, `.synchronize()`, `.wait(event)`; `with` destroys it (aclrtDestroyStream:
    queued work still runs)."""

    _destroy = staticmethod(rt.destroy_stream)

    def synchronize(self) -> None:
        """aclrtSynchronizeStream: waits for the queued work; raises a task's failure."""
        with typed():
            rt.synchronize_stream(self.handle)

    def wait(self, event: "Event") -> None:
        """aclrtStreamWaitEvent: later work on this stream waits for the event."""
        with typed():
            rt.stream_wait_event(self.handle, event.handle)


class Event(_Handle):
    """An aclrtEvent: `.record(stream)`, `.synchronize()`, `.done`, `.elapsed_ms(end)`; `with` destroys it."""

    _destroy = staticmethod(rt.destroy_event)

    def record(self, stream: Stream | None = None) -> "Event":
        """aclrtRecordEvent on `stream` (None: the default stream)."""
        with typed():
            rt.record_event(self.handle, 0 if stream is None else stream.handle)
        return self

    def synchronize(self) -> None:
        with typed():
            rt.synchronize_event(self.handle)

    @property
    def done(self) -> bool:
        """aclrtQueryEventStatus: recorded and complete."""
        with typed():
            return rt.query_event(self.handle) == rt.EVENT_RECORDED_COMPLETE

    def elapsed_ms(self, end: "Event") -> float:
        """aclrtEventElapsedTime from this event to `end`."""
        with typed():
            return rt.event_elapsed_ms(self.handle, end.handle)


class Device:
    """`with Device(0) as dev:` aclInit (unless the process already did), aclrtSetDevice; on exit the
    streams and events made through it are destroyed, aclrtResetDevice, and aclFinalize if it called
    aclInit.

    Device memory allocated in the block and still live at its end is reported as a leak (a
    sanitizer report of kind "leak"): memory allocated through the C-equivalent API and not freed,
    and tensors made by aclnn_emu.to_device/empty that are still referenced (those Python collected
    are freed first, reference cycles included). aclFinalize reports them when the block called
    aclInit, the block itself otherwise (the runtime already started, by an earlier aclnn_emu call
    say); memory allocated before the block is not its to report."""

    def __init__(self, device_id: int = 0):
        self.id = device_id
        self._owns_init = False
        self._made: list = []
        self._before: dict = {}

    def __enter__(self) -> "Device":
        with typed():
            if not rt.initialized():
                rt.init(None)
                self._owns_init = True
            devices.set_device(self.id)
            self._before = {id(a): a for a in self._memory().leaks()}  # the objects, so no id is reused
        return self

    def _memory(self):
        return devices.device(self.id).memory

    def _allocated_in_block(self) -> list:
        return [a for a in self._memory().leaks() if id(a) not in self._before]

    def __exit__(self, *exc) -> None:
        for item in reversed(self._made):
            item.close()
        self._made.clear()
        with typed():
            devices.reset_device(self.id)  # drains the default stream: its tasks let go of their tensors
            api.collect()
            leaked = self._allocated_in_block()
            if leaked:  # tensors only reference cycles hold are no leak: a full collection (slow) finds them
                api.collect(full=True)
                leaked = self._allocated_in_block()
            self._before = {}
            if self._owns_init:
                self._owns_init = False
                rt.finalize()
            else:
                rt.report_leaks(leaked)

    def stream(self) -> Stream:
        """aclrtCreateStream on this device."""
        with typed():
            stream = Stream(rt.create_stream())
        self._made.append(stream)
        return stream

    def event(self) -> Event:
        """aclrtCreateEvent."""
        with typed():
            event = Event(rt.create_event())
        self._made.append(event)
        return event

    @property
    def default_stream(self) -> Stream:
        """The context's default stream (the NULL aclrtStream)."""
        return Stream(0)

    def synchronize(self) -> None:
        """aclrtSynchronizeDevice."""
        with typed():
            rt.synchronize_device()
