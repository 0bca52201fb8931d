"""Streams (a worker thread and a FIFO each) and events."""
import collections
import threading
import time
import traceback

from .. import config, status
from . import handles
from .errors import AclError, log


class Stream:
    """Tasks run in submission order on a daemon thread, or inline under ACLNN_EMU_SYNC=1.

    A failing task is remembered and returned by the next synchronisation, as the hardware
    reports a kernel fault at aclrtSynchronizeStream.
    """

    def __init__(self, context):
        self.context = context
        self.handle = handles.register(self)
        self._cond = threading.Condition()
        self._tasks = collections.deque()
        self._busy = 0            # queued + running
        self._error: AclError | None = None
        self._closed = False
        self._thread = None

    def submit(self, task, name: str = "task") -> None:
        if config.current.sync:
            self._execute(task, name)
            return
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=f"aclnn-emu-stream-{self.handle:#x}",
                                                daemon=True)
                self._thread.start()
            self._tasks.append((task, name))
            self._busy += 1
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._tasks and not self._closed:
                    self._cond.wait()
                if not self._tasks:
                    return
                task, name = self._tasks.popleft()
            self._execute(task, name)
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def _execute(self, task, name: str) -> None:
        try:
            task()
        except AclError as exc:
            self._fail(exc)
        except Exception as exc:  # a kernel bug must surface as a status code, not kill the worker
            log.error("stream task %s failed:\n%s", name, traceback.format_exc())
            self._fail(AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION, f"{name} failed on the stream: {exc!r}"))

    def _fail(self, exc: AclError) -> None:
        with self._cond:
            if self._error is None:
                self._error = exc

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait for every submitted task; raise the first failure since the last synchronisation."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._busy == 0, timeout):
                raise AclError(status.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, f"stream did not finish within {timeout} s")
            error, self._error = self._error, None
        if error is not None:
            raise error

    def close(self) -> None:
        """Drain and stop the worker; the handle becomes invalid."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        handles.release(self.handle)


class Event:
    """Recorded on a stream; complete when the stream reaches the record."""

    def __init__(self, context, flags: int = 0):
        self.context = context
        self.flags = flags
        self.handle = handles.register(self)
        self._cond = threading.Condition()
        self._recorded = 0        # generation of the latest record
        self._completed = 0       # generation the stream has reached
        self.timestamp = None     # perf_counter at completion

    def record(self, stream: Stream) -> None:
        with self._cond:
            self._recorded += 1
            generation = self._recorded
        stream.submit(lambda: self._complete(generation), "event record")

    def _complete(self, generation: int) -> None:
        with self._cond:
            self._completed = max(self._completed, generation)
            self.timestamp = time.perf_counter()
            self._cond.notify_all()

    def reset(self, stream: Stream) -> None:
        def clear():
            with self._cond:
                self._recorded = self._completed = 0
                self.timestamp = None
        stream.submit(clear, "event reset")

    @property
    def recorded(self) -> bool:
        return self._recorded > 0

    def is_complete(self) -> bool:
        with self._cond:
            return self._completed >= self._recorded

    def wait(self) -> None:
        """Block until the latest record has completed (immediately if never recorded)."""
        with self._cond:
            target = self._recorded
            self._cond.wait_for(lambda: self._completed >= target)

    def wait_task(self):
        """A stream task that blocks until the record current at this moment completes."""
        with self._cond:
            target = self._recorded

        def wait():
            with self._cond:
                self._cond.wait_for(lambda: self._completed >= target)
        return wait
