"""Traces: with ACLNN_EMU_TRACE=<file>, a Chrome trace-event file (opens in Perfetto, chrome://tracing).

What it shows, all in one process (pid = the OS process id):
- a track per host thread (tid = its OS thread id): a slice per call of the C ABI ("runtime"); a failed
  call adds the status it returned and its error message, a synchronous copy or
  memset its bytes and direction;
- a track per stream (tid = STREAM_TID + the stream's number in this process, named by a thread_name
  record): a slice per task it ran: kernels ("kernel", named aclnnXxx, with the operator, the dtype
  and shape of every tensor, the scalar attributes and the workspace bytes), copies and memsets
  ("copy", bytes and direction), event records and waits ("event");
- flow arrows, each a "s"/"f" pair written together so that every arrow has both ends: from the call
  that submitted a task to the task ("launch"), and from an event's record to each wait that waited
  for that record, on a stream or on the host in aclrtSynchronizeEvent ("event");
- sanitizer findings as instant events on the track where they happened.

Off (the default), every hook elsewhere is one check of the module flag `enabled`.

The file is always a complete JSON document: events are kept in memory and written in batches (every
BATCH events, at aclFinalize and at process exit), and every write ends the file with the closing
brackets. Process exit is Python's atexit for a Python program and the library's C atexit handler
for a C program (both call runtime/lifecycle.py `stop_at_exit`, which calls `finish` once the stream
workers have stopped), so a program that returns from main or calls exit(), with or without
aclFinalize, leaves the whole trace. A crash, a kill or _exit() loses what came after the last write.

Fork: a child never writes to its parent's file. Its trace starts empty (the parent writes the
events it had kept) and goes to a file of its own, `<stem>-<child pid><suffix>` beside the parent's
(trace.json -> trace-4242.json), created at its first write: a child that makes no traced call
leaves no file.
"""

import itertools
import json
import os
import threading
import time
import weakref

from .. import config

STREAM_TID = 1 << 22  # above every Linux thread id (PID_MAX_LIMIT): stream tracks never clash
BATCH = 10000  # events kept in memory before a write
# Stream tasks by category; an aclnnXxx task is a kernel.
CATEGORIES = {
    "memcpy": "copy",
    "memset": "copy",
    "event record": "event",
    "event reset": "event",
    "wait event": "event",
}
HEADER = '{"displayTimeUnit": "ms", "otherData": %s, "traceEvents": [\n'
TRAILER = b"\n]}\n"
MAX_LISTED = 16  # array attributes longer than this are shortened in a kernel's args

enabled = False
_lock = threading.Lock()  # guards _writer and everything it holds
_writer = None
_local = threading.local()  # .open: the slices open on this thread, innermost last: [tid, args, ...]
_flows = itertools.count(1)
_kernels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> its operator's description (phase 1)
_records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event -> {generation: (tid, ns) of its record}
KEPT_RECORDS = 64  # records of one event a wait may still refer to (waits target recent ones)
_T0 = time.perf_counter_ns()
_pid = os.getpid()  # getpid is a system call; this one is renewed in a forked child


def _us(ns: int) -> float:
    return (ns - _T0) / 1000.0


class _Writer:
    """One trace file: events waiting to be written, and where the written ones end."""

    def __init__(self, setting: str, path: str, child: bool):
        self.setting = setting  # the ACLNN_EMU_TRACE value it came from
        self.path = path
        self.child = child
        self.pending: list[dict] = []
        self.named: set[int] = set()  # tids whose thread_name record is in this file
        self.streams: dict[int, int] = {}  # stream handle -> its number in this file
        self.names: dict[int, tuple] = {}  # tid of a stream track -> (name, sort index)
        self.fd: int | None = None
        self.end = 0  # offset of the trailer: the next events go there
        self.written = 0

    def add(self, event: dict) -> None:
        self.pending.append(event)
        if len(self.pending) >= BATCH:
            self.write()

    def write(self, make_file: bool = False) -> None:
        """Write the kept events. The file is made by the first write that has some, or by `make_file`."""
        events, self.pending = self.pending, []
        if self.fd is None:
            if not events and not make_file:
                return
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            header = HEADER % json.dumps({"tool": "aclnn-emu", "soc": config.current.soc, "pid": _pid})
            self.end = os.pwrite(self.fd, header.encode(), 0)
            events.insert(0, _process_name())
        elif not events:
            return
        assert self.fd is not None
        text = json.dumps(events, separators=(",", ":"), default=str)[1:-1]  # one call: twice as fast
        data = ((",\n" if self.written and events else "") + text).encode()
        os.pwrite(self.fd, data + TRAILER, self.end)
        self.end += len(data)
        self.written += len(events)

    def close(self, at_exit: bool) -> None:
        """The last write: at exit, a traced process (not a forked child) leaves a file even if empty."""
        self.write(make_file=at_exit and not self.child)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _process_name() -> dict:
    try:
        program = os.path.basename(os.readlink("/proc/self/exe"))
    except OSError:
        program = "program"
    return {
        "name": "process_name",
        "ph": "M",
        "pid": _pid,
        "tid": 0,
        "args": {"name": f"{program} (aclnn-emu, {config.current.soc})"},
    }


# -- turning it on and off ------------------------------------------------------------------------
def configure(setting: str) -> None:
    """Follow ACLNN_EMU_TRACE (at import and at aclInit): a new value ends the old file and starts
    the new one; an empty value stops tracing."""
    global enabled, _writer
    with _lock:
        if (_writer.setting if _writer else "") == setting:
            return
        if _writer is not None:
            _writer.close(at_exit=False)
        _writer = _Writer(setting, setting, child=False) if setting else None
        enabled = _writer is not None


def checkpoint() -> None:
    """Write what is kept (aclFinalize): the file is complete up to here."""
    with _lock:
        if _writer is not None:
            _writer.write()


def finish() -> None:
    """Process exit: write everything and close the file; nothing later is traced."""
    global enabled, _writer
    with _lock:
        enabled = False
        if _writer is not None:
            _writer.close(at_exit=True)
            _writer = None


def forget_after_fork() -> None:
    """In a forked child: drop the parent's kept events and file (without writing to it); continue
    into a file of the child's own."""
    global _lock, _writer, _pid
    _lock, _pid = threading.Lock(), os.getpid()
    parent, _writer = _writer, None
    _records.clear()
    if parent is not None:
        if parent.fd is not None:
            os.close(parent.fd)
        stem, suffix = os.path.splitext(parent.path)
        _writer = _Writer(parent.setting, f"{stem}-{_pid}{suffix}", child=True)


# -- tracks and events ----------------------------------------------------------------------------
def _open() -> list:
    stack = getattr(_local, "open", None)
    if stack is None:
        stack = _local.open = []
    return stack


def _track() -> int:
    """The track this thread is on: the innermost open slice's (a stream's while it runs a task),
    else the thread's own."""
    stack = _open()
    return stack[-1][0] if stack else threading.get_native_id()


def _emit(event: dict) -> None:
    """Add an event; the first event of a track brings the track's name and place."""
    with _lock:
        if _writer is None:
            return
        tid = event["tid"]
        if tid not in _writer.named:
            _writer.named.add(tid)
            name, sort = _writer.names.get(tid) or (f"host thread {tid}" + (" (main)" if tid == _pid else ""), 0)
            _writer.add({"name": "thread_name", "ph": "M", "pid": _pid, "tid": tid, "args": {"name": name}})
            _writer.add({"name": "thread_sort_index", "ph": "M", "pid": _pid, "tid": tid, "args": {"sort_index": sort}})
        _writer.add(event)


def _slice(name: str, cat: str, tid: int, start: int, end: int, args: dict) -> None:
    _emit(
        {
            "name": name,
            "cat": cat,
            "ph": "X",
            "ts": _us(start),
            "dur": (end - start) / 1000.0,
            "pid": _pid,
            "tid": tid,
            "args": args,
        }
    )


def _flow(name: str, source: tuple[int, int], target: tuple[int, int]) -> None:
    """An arrow from (tid, ns) to (tid, ns); each end lies inside a slice of its track."""
    flow = next(_flows)
    for (tid, ns), phase in ((source, "s"), (target, "f")):
        event = {"name": name, "cat": name, "ph": phase, "id": flow, "ts": _us(ns), "pid": _pid, "tid": tid}
        if phase == "f":
            event["bp"] = "e"  # bind to the slice that encloses it, not the next one
        _emit(event)


def note(**args) -> None:
    """Add arguments to the innermost open slice of this thread (a copy's bytes, a kernel's shapes)."""
    stack = _open()
    if stack:
        stack[-1][1].update(args)


def instant(name: str, message: str) -> None:
    _emit(
        {
            "name": name,
            "cat": "sanitizer",
            "ph": "i",
            "s": "t",
            "ts": _us(time.perf_counter_ns()),
            "pid": _pid,
            "tid": _track(),
            "args": {"message": message},
        }
    )


# -- hooks ----------------------------------------------------------------------------------------
def begin() -> list:
    """A C ABI call starts on this thread: its slice is open until `end`."""
    frame = [threading.get_native_id(), {}, time.perf_counter_ns()]
    _open().append(frame)
    return frame


def end(name: str, frame: list) -> None:
    """The call returned: its slice, with its bytes (a copy) or its failure (see `failed`)."""
    finish = time.perf_counter_ns()
    _open().pop()  # slices close in the order they opened: `end` runs in a finally clause
    _slice(name, "runtime", frame[0], frame[2], finish, frame[1])


def failed(code: int, message: str) -> None:
    """A call failed (runtime/errors.py `record`): its slice says with what."""
    note(returned=code, error=message)


def _stream_track(stream) -> int:
    """The tid of a stream's track; streams are numbered in the order they are first given a task."""
    context = stream.context
    with _lock:
        if _writer is None:
            return STREAM_TID
        number = _writer.streams.get(stream.handle)
        if number is None:
            number = _writer.streams[stream.handle] = len(_writer.streams)
            default = " (default)" if stream is context.default_stream else ""
            _writer.names[STREAM_TID + number] = (
                f"stream {number}{default}: {stream.handle:#x}, device {context.device.id}",
                1 + number,
            )
    return STREAM_TID + number


def stream_task(stream, task, name: str):
    """Wrap a task as it is submitted: when it runs it is a slice of the stream's track, with an arrow
    from the call that submitted it (if that call is traced)."""
    tid = _stream_track(stream)
    stack = _open()
    origin = (stack[-1][0], time.perf_counter_ns()) if stack else None
    cat = CATEGORIES.get(name, "kernel" if name.startswith("aclnn") else "task")

    def traced():
        frame = [tid, {}]
        stack = _open()
        stack.append(frame)
        start = time.perf_counter_ns()
        try:
            task()
        except BaseException as exc:
            frame[1]["error"] = getattr(exc, "code", type(exc).__name__)
            raise
        finally:
            end = time.perf_counter_ns()
            stack.pop()
            _slice(name, cat, tid, start, end, frame[1])
            if origin is not None:
                _flow("launch", origin, (tid, start))

    return traced


def _plain(value):
    """An argument as JSON: meta objects as they describe themselves, long arrays shortened."""
    describe = getattr(value, "describe", None)  # aclTensor, aclTensorList, aclScalar (meta.py)
    if describe is not None:
        return describe()
    if isinstance(value, (tuple, list)):
        shown = [_plain(v) for v in value[:MAX_LISTED]]
        return shown + [f"... {len(value)} in all"] if len(value) > MAX_LISTED else shown
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def prepared(executor, op, values) -> None:
    """Phase 1 made `executor`: keep the call's description for the kernel slice."""
    described = {"op": op.name, "inputs": {}, "outputs": {}, "attrs": {}}
    for param, value in zip(op.params, values):
        if value is None:  # an optional argument left out
            continue
        tensors = param.kind in ("tensor", "tensor_list")
        group = "attrs" if not tensors else "outputs" if param.output or param.ref else "inputs"
        described[group][param.name] = _plain(value)
    _kernels[executor] = described


def kernel(executor, workspace: int) -> None:
    """The running kernel's slice gets its operator's description and workspace."""
    note(**_kernels.get(executor, {"op": executor.op_name}), workspace_bytes=workspace)


def copied(count: int, source_on_device: bool, target_on_device: bool) -> None:
    where = ("DEVICE" if source_on_device else "HOST", "DEVICE" if target_on_device else "HOST")
    note(bytes=count, direction=f"{where[0]}_TO_{where[1]}")


def filled(count: int) -> None:
    note(bytes=count, direction="DEVICE")


def event_recorded(event, generation: int) -> None:
    points = _records.setdefault(event, {})
    points[generation] = (_track(), time.perf_counter_ns())
    points.pop(generation - KEPT_RECORDS, None)
    note(event=f"{event.handle:#x}")


def event_waited(event, generation: int) -> None:
    """A wait for a record ended (on a stream, or on the host): the arrow from that record."""
    note(event=f"{event.handle:#x}")
    source = _records.get(event, {}).get(generation)
    if source is not None:
        _flow("event", source, (_track(), time.perf_counter_ns()))


configure(config.current.trace)
