"""Worker threads for the kernels: one per core (or ACLNN_EMU_THREADS), each with a single-threaded
BLAS. Kernels split their work into pieces that do not depend on the worker count and combine
partial results in a fixed order, so any count gives the same bits.

numpy releases the GIL inside matmul and most elementwise loops, so independent pieces of work
(heads, row chunks) run in parallel on plain threads. OpenBLAS would also fan every matmul out to
all cores, and the two levels of threads fight over them (measured: about half the throughput).
Each worker therefore limits its own BLAS calls to one thread with
`openblas_set_num_threads_local` (OpenBLAS >= 0.3.27, which numpy's wheels ship). Where that call
is missing, work runs on the calling thread and BLAS keeps its own threading.

In OpenBLAS's pthreads builds (numpy's) that call sets the process-wide thread count despite its
name, which would leave the user's own numpy single-threaded after the first kernel. So while any
kernel work is in flight the count is 1, and when the last piece finishes it goes back to what it
was before.

Kernel work is cancellable between blocks. A stream task runs under a `Token`; once it is cancelled
(a stream torn down by force, the process exiting), `map_ordered` hands out no further item and
kernels whose items are long loops over blocks call `checkpoint()` between blocks, which raises
`Cancelled`. Items are handed out strictly in order, so an item that waits for its predecessors
(SparseFlashAttentionGrad's ordered commits) never waits for one that was skipped.
"""

import contextlib
import ctypes
import functools
import os
import queue
import threading

from aclnn_emu import config

_lock = threading.Lock()
_pool = None
_worker = threading.local()
_blas_lock = threading.Lock()
_blas_users = 0
_blas_threads_before = None


class Cancelled(Exception):
    """The stream task this kernel work belongs to was cancelled."""


class Token:
    """Cancellation of one stream task."""

    def __init__(self):
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled()


_NEVER = Token()  # the token of work that is not a stream task (direct kernel calls, tests)


def current_token() -> Token:
    return getattr(_worker, "token", None) or _NEVER


def checkpoint() -> None:
    """Between two blocks of a kernel: raise Cancelled if the task it belongs to was cancelled."""
    current_token().check()


@contextlib.contextmanager
def task_scope(token: Token):
    """Kernel work started by this thread inside the block belongs to `token`."""
    previous, _worker.token = getattr(_worker, "token", None), token
    try:
        yield
    finally:
        _worker.token = previous


@functools.lru_cache(maxsize=1)
def _set_local_blas_threads():
    """The loaded OpenBLAS's openblas_set_num_threads_local, or None."""
    import numpy  # noqa: F401  (numpy's BLAS must be loaded before it can be found)

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            function = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        function.argtypes, function.restype = [ctypes.c_int], ctypes.c_int
        return function
    return None


def workers() -> int:
    """How many pieces of work run at once: ACLNN_EMU_THREADS, by default one per core (at most 16);
    1 where BLAS cannot be held to one thread per worker."""
    if _set_local_blas_threads() is None:
        return 1
    return config.current.threads or max(1, min(os.cpu_count() or 1, 16))


class _Pool:
    """Daemon threads, each with a single-threaded BLAS, taking jobs from one queue. Idle threads
    wait outside Python code, so neither process exit nor fork finds one inside BLAS."""

    def __init__(self):
        self.size = 0
        self._jobs = queue.SimpleQueue()

    def grow(self, size: int) -> None:
        """At least `size` threads (the setting may rise at aclInit)."""
        if size <= self.size:
            return
        ready = threading.Barrier(size - self.size + 1)
        for i in range(self.size, size):
            threading.Thread(target=self._serve, args=(ready,), name=f"aclnn-emu-kernel-{i}", daemon=True).start()
        ready.wait()  # each has set its BLAS thread count before the caller restores the process's
        self.size = size

    def _serve(self, ready: threading.Barrier) -> None:
        _worker.active = True
        _set_local_blas_threads()(1)
        ready.wait()
        while True:
            self._jobs.get()()

    def submit(self, job) -> None:
        self._jobs.put(job)


class _Batch:
    """One map_ordered call. Runners (pool threads, or the caller inline) claim items in index order
    until none is left, one has failed or the token is cancelled."""

    def __init__(self, fn, items: list, token: Token, runners: int):
        self.fn, self.items, self.token = fn, items, token
        self.results = [None] * len(items)
        self._errors: dict[int, BaseException] = {}
        self._next = 0
        self._runners = runners
        self._cond = threading.Condition()

    def _claim(self) -> int | None:
        with self._cond:
            if self._next == len(self.items) or self._errors or self.token.cancelled:
                return None
            self._next += 1
            return self._next - 1

    def run(self) -> None:
        """One runner."""
        previous, _worker.token = getattr(_worker, "token", None), self.token
        try:
            while (index := self._claim()) is not None:
                try:
                    self.results[index] = self.fn(self.items[index])
                except BaseException as exc:  # noqa: B036 -- handed to the caller, which re-raises it
                    with self._cond:
                        self._errors[index] = exc
        finally:
            _worker.token = previous
            with self._cond:
                self._runners -= 1
                self._cond.notify_all()

    def outcome(self) -> list:
        """Wait for the runners; the results, or the first item's exception, or Cancelled."""
        with self._cond:
            self._cond.wait_for(lambda: self._runners == 0)
        if self._errors:
            raise self._errors[min(self._errors)]
        self.token.check()
        return self.results


def map_ordered(fn, items) -> list:
    """[fn(item) for item in items], run on the workers; results in item order, so reductions over
    them are deterministic. Every started item has finished when it returns or raises (the first
    failing item's exception, or Cancelled). Calls made from inside a worker run inline, so nested
    use cannot deadlock the pool."""
    global _pool
    items = list(items)
    count = workers()
    if getattr(_worker, "active", False) or (len(items) <= 1 and count > 1):
        batch = _Batch(fn, items, current_token(), runners=1)  # (BLAS as the caller has it)
        batch.run()
        return batch.outcome()
    with _single_threaded_blas():
        if count == 1:  # one worker: the calling thread, its BLAS on one core too
            batch = _Batch(fn, items, current_token(), runners=1)
            batch.run()
            return batch.outcome()
        with _lock:
            if _pool is None:
                _pool = _Pool()
            _pool.grow(count)
            pool = _pool
        runners = min(count, len(items))
        batch = _Batch(fn, items, current_token(), runners)
        for _ in range(runners):
            pool.submit(batch.run)
        return batch.outcome()


@contextlib.contextmanager
def _single_threaded_blas():
    """BLAS thread count 1 while the block runs, restored when the last concurrent user leaves."""
    global _blas_users, _blas_threads_before
    set_threads = _set_local_blas_threads()
    if set_threads is None:
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            _blas_threads_before = set_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                set_threads(_blas_threads_before)


def run_all(fn, tasks) -> None:
    """Call fn(*task) for every task on the workers."""
    map_ordered(lambda task: fn(*task), tasks)


class OrderedCommit:
    """Lets tasks 0, 1, 2, ... run a critical section strictly in task order: workers compute
    partial results in parallel and add them to shared fp32 sums one after another, so the sums do
    not depend on thread timing or the worker count (the NPU's atomic adds do; the emulator need not)."""

    def __init__(self):
        self._next = 0
        self._cond = threading.Condition()

    def run(self, task: int, compute, commit):
        """``commit(compute())``, the commits of all tasks strictly in task order.

        Computations overlap freely; the turn passes on even when one fails, so no later task
        waits forever. (map_ordered hands tasks out in order, so every earlier task is running.)
        """
        try:
            item = compute()
        except BaseException:
            self._wait(task)
            self._pass(task)
            raise
        self._wait(task)
        try:
            commit(item)
        finally:
            self._pass(task)

    def _wait(self, task: int):
        with self._cond:
            self._cond.wait_for(lambda: self._next == task)

    def _pass(self, task: int):
        with self._cond:
            self._next = task + 1
            self._cond.notify_all()


def split(items: list, parts: int) -> list[list]:
    """`items` cut into `parts` contiguous, nearly equal slices (none empty)."""
    parts = max(1, min(parts, len(items)))
    bounds = [len(items) * w // parts for w in range(parts + 1)]
    return [items[bounds[w] : bounds[w + 1]] for w in range(parts)]


def forget_after_fork() -> None:
    """In a forked child: the pool's threads did not survive, and any lock here may have been held
    by one of them. Start afresh, with BLAS threading as it was before kernel work began."""
    global _lock, _pool, _worker, _blas_lock, _blas_users
    if _blas_users and _set_local_blas_threads() is not None:
        _set_local_blas_threads()(_blas_threads_before)
    _lock, _blas_lock = threading.Lock(), threading.Lock()
    _pool, _worker, _blas_users = None, threading.local(), 0
