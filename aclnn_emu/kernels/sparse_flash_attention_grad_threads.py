"""Worker threads for the SparseFlashAttentionGrad kernel, with single-threaded BLAS inside.

numpy releases the GIL in matmul, so Python threads over independent row groups scale. OpenBLAS's
own threads on top of them oversubscribe the cores (measured: ~10x slower on a 2-core machine), so
each worker asks OpenBLAS for one thread *for itself only* (``openblas_set_num_threads_local``,
OpenBLAS >= 0.3.27); the rest of the process keeps its BLAS settings.
"""
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor


def _openblas_local_setter():
    """``openblas_set_num_threads_local`` of the OpenBLAS numpy loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            setter = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        return setter
    return None


def _single_blas_thread():
    setter = _openblas_local_setter()
    if setter is not None:
        setter(1)


_pool = None
_pool_lock = threading.Lock()


def worker_count() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def pool() -> ThreadPoolExecutor:
    """The process-wide pool the kernel's row groups run on (created on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            import numpy  # noqa: F401  (OpenBLAS must be loaded before its symbol is looked up)
            _pool = ThreadPoolExecutor(worker_count(), thread_name_prefix="sfag",
                                       initializer=_single_blas_thread)
        return _pool


class OrderedCommit:
    """Lets tasks 0, 1, 2, ... run a critical section strictly in task order.

    Workers compute row groups in parallel but add their dK/dV contributions to the shared fp32
    accumulators one group after another, so results do not depend on thread timing.
    """

    def __init__(self):
        self._next = 0
        self._cond = threading.Condition()

    def run(self, task: int, contributions, commit):
        """Compute ``contributions`` (an iterator) and ``commit`` each item in task order.

        The first item is computed before waiting, so neighbouring tasks overlap; the turn passes
        on even when the computation fails, so no later task waits forever.
        """
        items = iter(contributions)
        try:
            first = next(items, None)
        except BaseException:
            self._wait(task)
            self._pass(task)
            raise
        self._wait(task)
        try:
            if first is not None:
                commit(first)
                for item in items:
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
