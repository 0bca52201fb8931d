"""Worker threads for the kernels: one per core, each with a single-threaded BLAS.

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
"""
import contextlib
import ctypes
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pool = None
_worker = threading.local()
_blas_lock = threading.Lock()
_blas_users = 0
_blas_threads_before = None


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


def _start_worker() -> None:
    _worker.active = True
    _set_local_blas_threads()(1)


def workers() -> int:
    """How many pieces of work run at once."""
    return max(1, min(os.cpu_count() or 1, 16)) if _set_local_blas_threads() is not None else 1


def map_ordered(fn, items) -> list:
    """[fn(item) for item in items], run on the workers; results in item order, so reductions over
    them are deterministic. The first exception is re-raised. Calls made from inside a worker run
    inline, so nested use cannot deadlock the pool."""
    global _pool
    items = list(items)
    if len(items) <= 1 or workers() == 1 or getattr(_worker, "active", False):
        return [fn(item) for item in items]
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(workers(), thread_name_prefix="aclnn-emu-kernel", initializer=_start_worker)
    with _single_threaded_blas():
        return [future.result() for future in [_pool.submit(fn, item) for item in items]]


@contextlib.contextmanager
def _single_threaded_blas():
    """BLAS thread count 1 while the block runs, restored when the last concurrent user leaves."""
    global _blas_users, _blas_threads_before
    set_threads = _set_local_blas_threads()
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


def split(items: list, parts: int) -> list[list]:
    """`items` cut into `parts` contiguous, nearly equal slices (none empty)."""
    parts = max(1, min(parts, len(items)))
    bounds = [len(items) * w // parts for w in range(parts + 1)]
    return [items[bounds[w]:bounds[w + 1]] for w in range(parts)]
