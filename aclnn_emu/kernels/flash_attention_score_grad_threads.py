"""Run work items on one Python thread per core with a single-threaded BLAS.

numpy's matmul releases the GIL, so heads can run in parallel threads; but OpenBLAS would then
start its own threads inside each call and the two levels fight over the cores (measured: about
half the throughput). While a parallel section runs, the OpenBLAS thread count is set to 1 through
its C API and restored afterwards. OpenBLAS keeps that setting process-wide, so a reference count
keeps concurrent sections (two streams) from restoring it early. Without OpenBLAS (another BLAS
behind numpy) the threads just run.
"""
import ctypes
import os
import re
import threading

_lock = threading.Lock()
_active = 0
_saved = None


def _openblas():
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps.read())))
    except OSError:
        return None
    for path in paths:
        lib = ctypes.CDLL(path)
        for prefix in ("scipy_openblas", "openblas"):
            get = getattr(lib, f"{prefix}_get_num_threads64_", None) or getattr(lib, f"{prefix}_get_num_threads", None)
            put = getattr(lib, f"{prefix}_set_num_threads64_", None) or getattr(lib, f"{prefix}_set_num_threads", None)
            if get is not None and put is not None:
                get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                return get, put
    return None


_BLAS = _openblas()


def _enter():
    global _active, _saved
    with _lock:
        if _active == 0 and _BLAS is not None:
            _saved = _BLAS[0]()
            _BLAS[1](1)
        _active += 1


def _leave():
    global _active
    with _lock:
        _active -= 1
        if _active == 0 and _BLAS is not None:
            _BLAS[1](_saved)


def worker_count(items: int) -> int:
    return max(1, min(items, os.cpu_count() or 1))


def run_partitioned(items: list, work) -> list:
    """Split ``items`` into contiguous, equally long slices, call ``work(slice)`` for each on its
    own thread, and return the results in slice order (so reductions over them are deterministic)."""
    count = worker_count(len(items))
    bounds = [len(items) * w // count for w in range(count + 1)]
    slices = [items[bounds[w]:bounds[w + 1]] for w in range(count)]
    if count == 1:
        return [work(slices[0])]
    results, errors = [None] * count, []

    def run(w):
        try:
            results[w] = work(slices[w])
        except BaseException as exc:  # re-raised on the calling thread
            errors.append(exc)

    _enter()
    try:
        threads = [threading.Thread(target=run, args=(w,)) for w in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        _leave()
    if errors:
        raise errors[0]
    return results
