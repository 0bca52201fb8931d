"""Streams (a worker thread and a FIFO each) and events.

Shutdown never waits while holding what a worker needs (DESIGN.md): a stream first stops taking
tasks (`stop`), then drains or cancels its queue, then its worker is joined (`join`), holding only
the stream's own condition variable and never while waiting. Cancelling drops the queued tasks,
cancels the running one between kernel blocks (kernels/parallel.py) and makes every later
synchronisation of the stream report ACL_ERROR_RT_STREAM_ABORT; an event record that is dropped
completes its event as aborted, so nothing waiting for it waits forever.

Module state for process exit and fork (runtime/lifecycle.py): `_workers` holds every stream whose
worker thread is alive, and `_gate` lets a fork happen only while no task is running on a worker.
"""

import collections
import contextlib
import itertools
import threading
import time
import traceback

from .. import config, status
from ..kernels import parallel
from . import handles, trace
from .errors import AclError, log

EVENT_POLL_S = 0.05
STOP_ON_FAILURE = 1  # aclrtSetStreamFailureMode's ACL_STOP_ON_FAILURE  # how often a task waiting for an event looks at its own cancellation


class _Gate:
    """Tasks run on workers only while the gate is open. `close` waits until none is running, so a
    fork copies no kernel mid-flight (a lock held inside BLAS by a thread that does not exist in the
    child would stay locked there). A task waiting for an event holds nothing and does not count."""

    def __init__(self):
        self._cond = threading.Condition()
        self._closed = 0
        self._running = 0
        self._holder = threading.local()

    @contextlib.contextmanager
    def running(self):
        self._enter()
        self._holder.held = True
        try:
            yield
        finally:
            self._holder.held = False
            self._leave()

    @contextlib.contextmanager
    def parked(self):
        """Around a wait inside a task: a task on a worker does not hold the gate meanwhile."""
        held = getattr(self._holder, "held", False)
        if held:
            self._leave()
        try:
            yield
        finally:
            if held:
                self._enter()

    def _enter(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: not self._closed)
            self._running += 1

    def _leave(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    def close(self, timeout: float) -> bool:
        with self._cond:
            self._closed += 1
            return self._cond.wait_for(lambda: self._running == 0, timeout)

    def open(self) -> None:
        with self._cond:
            self._closed -= 1
            self._cond.notify_all()


_lock = threading.Lock()  # guards _workers and _refusal
_workers: set["Stream"] = set()  # streams whose worker thread is alive
_refusal: tuple[int, str] | None = None  # once set (process exit), no stream takes tasks
_gate = _Gate()
_stream_ids = itertools.count(1)  # aclrtStreamGetId: the default streams and created ones alike


class Stream:
    """Tasks run in submission order on a daemon thread, or inline under ACLNN_EMU_SYNC=1.

    A failing task is remembered and returned by the next synchronisation, as the hardware
    reports a kernel fault at aclrtSynchronizeStream.
    """

    def __init__(self, context):
        self.context = context
        self.handle = handles.register(self)
        self.id = next(_stream_ids)
        self.failure_mode = 0  # ACL_CONTINUE_ON_FAILURE
        self.capture = None  # the capture.Model recording this stream's tasks while it captures
        self._cond = threading.Condition()
        self._tasks = collections.deque()  # (task, name, on_cancel)
        self._running: parallel.Token | None = None
        self._error: AclError | None = None
        self._aborted: AclError | None = None  # sticky: the stream's work was cancelled
        self._refusal: tuple[int, str] | None = None
        self._thread = None

    def submit(self, task, name: str = "task", on_cancel=None) -> None:
        """Queue a task; `on_cancel` is called instead of it if the stream drops it."""
        if trace.enabled:
            task = trace.stream_task(self, task, name)
        with self._cond:
            refusal = self._refusal or _refusal
            if refusal is not None:
                raise AclError(*refusal, rule="stream.stopped")
            if self.capture is not None:  # recorded, run when the model is executed
                self.capture.record(task, name)
                return
            if not config.current.sync:
                if self._thread is None:
                    self._start_worker()
                self._tasks.append((task, name, on_cancel))
                self._cond.notify_all()
                return
        self._execute(task, name, parallel.Token(), on_cancel)

    def _start_worker(self) -> None:
        with _lock:
            if _refusal is not None:
                raise AclError(*_refusal, rule="stream.stopped")
            self._thread = threading.Thread(target=self._work, name=f"aclnn-emu-stream-{self.handle:#x}", daemon=True)
            _workers.add(self)
        self._thread.start()

    def _work(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._tasks and self._refusal is None:
                        self._cond.wait()
                    if not self._tasks:
                        return
                    task, name, on_cancel = self._tasks.popleft()
                    token = self._running = parallel.Token()
                with _gate.running():
                    self._execute(task, name, token, on_cancel)
                # the task's closure holds its launch's tensors: drop it before a synchronisation returns,
                # not when the next task comes, so tensors Python dropped meanwhile can be freed
                task = on_cancel = None
                with self._cond:
                    self._running = None
                    self._cond.notify_all()
        finally:
            with _lock:
                _workers.discard(self)

    def _execute(self, task, name: str, token: parallel.Token, on_cancel=None) -> None:
        if self.failure_mode == STOP_ON_FAILURE and self._error is not None:
            # aclrtSetStreamFailureMode(ACL_STOP_ON_FAILURE): after a failure the stream runs nothing
            # more until the failure has been reported by a synchronisation
            if on_cancel is not None:
                on_cancel()
            return
        try:
            with parallel.task_scope(token):
                task()
        except AclError as exc:
            self._fail(exc)
        except parallel.Cancelled:
            self._fail(AclError(status.ACL_ERROR_RT_STREAM_ABORT, f"{name} was cancelled: the stream was torn down"))
        except Exception as exc:  # a kernel bug must surface as a status code, not kill the worker
            log.error("stream task %s failed:\n%s", name, traceback.format_exc())
            self._fail(AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION, f"{name} failed on the stream: {exc!r}"))

    def _fail(self, exc: AclError) -> None:
        with self._cond:
            if self._error is None:
                self._error = exc

    def refuse_while_capturing(self, what: str) -> None:
        """Synchronising or querying a capturing stream is ACL_ERROR_RT_STREAM_CAPTURED (runtime
        src/runtime/feature/src/api_impl/api_error.cc, StreamSynchronize and StreamQuery)."""
        if self.capture is not None:
            raise AclError(
                status.ACL_ERROR_RT_STREAM_CAPTURED, f"cannot {what} a capturing stream", rule="stream.captured"
            )

    def busy(self) -> bool:
        """True while a submitted task is queued or running (aclrtStreamQuery's NOT_READY)."""
        self.refuse_while_capturing("query")
        with self._cond:
            return bool(self._tasks) or self._running is not None

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait for every submitted task; raise the first failure since the last synchronisation."""
        self.refuse_while_capturing("synchronize")
        with self._cond:
            if not self._cond.wait_for(lambda: not self._tasks and self._running is None, timeout):
                raise AclError(status.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, f"stream did not finish within {timeout} s")
            error, self._error = self._aborted or self._error, None
        if error is not None:
            raise error

    def stop(self, refusal: tuple[int, str], cancel: bool) -> None:
        """Take no more tasks (submissions raise `refusal`); with `cancel`, also drop the queued
        tasks and cancel the running one. Does not wait: see `join`."""
        with self._cond:
            if self._refusal is None:
                self._refusal = refusal
            dropped, running = [], None
            if cancel:
                dropped, running = list(self._tasks), self._running
                self._tasks.clear()
                if (dropped or running) and self._aborted is None:
                    self._aborted = AclError(
                        status.ACL_ERROR_RT_STREAM_ABORT,
                        f"the stream's work was cancelled: {refusal[1]}",
                        rule="stream.aborted",
                    )
            self._cond.notify_all()
        for _, _, on_cancel in dropped:
            if on_cancel is not None:
                on_cancel()
        if running is not None:
            running.cancel()

    def join(self) -> None:
        """Wait until the worker has run (or dropped) everything and exited."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def take_error(self) -> AclError | None:
        with self._cond:
            error, self._error = self._error, None
        return error


def stop_all(refusal: tuple[int, str]) -> None:
    """Process exit: every stream stops taking tasks and cancels its work; wait for the workers."""
    global _refusal
    with _lock:
        _refusal = refusal
        streams = list(_workers)
    for stream in streams:
        stream.stop(refusal, cancel=True)
    for stream in streams:
        stream.join()


def pause_workers(timeout: float) -> bool:
    """Before fork: let running tasks finish and start no new one (False if `timeout` passed)."""
    return _gate.close(timeout)


def resume_workers() -> None:
    _gate.open()


def forget_after_fork() -> None:
    """In a forked child: no worker exists here, and a lock here may have been held by one."""
    global _lock, _workers, _refusal, _gate
    _lock, _workers, _refusal, _gate = threading.Lock(), set(), None, _Gate()


class Event:
    """Recorded on a stream; complete when the stream reaches the record.

    Records are numbered (generations); `_completed` only grows, so a wait can never miss the
    record it waits for, and aclrtResetEvent forgets records instead of rewinding the count.
    """

    def __init__(self, context, flags: int = 0):
        self.context = context
        self.flags = flags
        self.handle = handles.register(self)
        self._cond = threading.Condition()
        self._recorded = 0  # generation of the latest record
        self._completed = 0  # latest generation a stream has reached
        self._cleared = 0  # records up to this generation were reset
        self._aborted: set[int] = set()  # generations whose record was cancelled with its stream
        self.timestamp: float | None = None  # perf_counter at completion

    def record(self, stream: Stream) -> None:
        with self._cond:
            self._recorded += 1
            generation = self._recorded
        try:
            stream.submit(
                lambda: self._complete(generation),
                "event record",
                on_cancel=lambda: self._complete(generation, aborted=True),
            )
        except AclError:
            self._complete(generation, aborted=True)
            raise

    def _complete(self, generation: int, aborted: bool = False) -> None:
        with self._cond:
            self._completed = max(self._completed, generation)
            if aborted:
                self._aborted.add(generation)
            else:
                self.timestamp = time.perf_counter()
                if trace.enabled:
                    trace.event_recorded(self, generation)
            self._cond.notify_all()

    def reset(self, stream: Stream) -> None:
        with self._cond:
            through = self._recorded

        def clear():
            with self._cond:
                self._cleared = max(self._cleared, through)
                self.timestamp = None

        stream.submit(clear, "event reset")

    @property
    def recorded(self) -> bool:
        return self._recorded > self._cleared

    def is_complete(self) -> bool:
        with self._cond:
            return self._completed >= self._recorded

    def _check(self, generation: int) -> None:
        if generation in self._aborted:
            raise AclError(
                status.ACL_ERROR_RT_STREAM_ABORT,
                "the stream the event was recorded on was torn down before it reached the record",
                rule="event.aborted",
            )

    def wait(self) -> None:
        """Block until the latest record has completed (immediately if never recorded)."""
        with self._cond:
            target = self._recorded
            self._cond.wait_for(lambda: self._completed >= target)
            self._check(target)
        if trace.enabled:
            trace.event_waited(self, target)

    def wait_task(self):
        """A stream task that blocks until the record current at this moment completes."""
        with self._cond:
            target = self._recorded

        def wait():
            token = parallel.current_token()
            with _gate.parked(), self._cond:
                while not self._cond.wait_for(lambda: self._completed >= target, EVENT_POLL_S):
                    token.check()
                self._check(target)
            if trace.enabled:
                trace.event_waited(self, target)

        return wait
