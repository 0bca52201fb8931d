"""Worker threads for the attention forward: one per core, each with a single-threaded BLAS.

numpy releases the GIL inside matmul and the elementwise loops, so independent (batch, head, row
chunk) tasks run in parallel on plain threads. Each worker asks OpenBLAS for one thread of its
own (``openblas_set_num_threads_local``, OpenBLAS >= 0.3.27): otherwise every matmul would also
fan out to all cores and the two levels of threads would fight over them. Other BLAS builds keep
their own setting; that only costs speed.
"""
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pool = None


def _openblas_local_threads():
    """``openblas_set_num_threads_local`` of the OpenBLAS numpy loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            return ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
    return None


def _single_blas_thread():
    setter = _openblas_local_threads()
    if setter is not None:
        setter.argtypes = [ctypes.c_int]
        setter(1)


def workers() -> int:
    return max(1, min(os.cpu_count() or 1, 16))


def run_all(fn, tasks) -> None:
    """Call ``fn(*task)`` for every task on the worker threads; re-raise the first failure."""
    global _pool
    tasks = list(tasks)
    if len(tasks) <= 1 or workers() == 1:
        for task in tasks:
            fn(*task)
        return
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(workers(), thread_name_prefix="pfa-kernel",
                                       initializer=_single_blas_thread)
    for future in [_pool.submit(fn, *task) for task in tasks]:
        future.result()
