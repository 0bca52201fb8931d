"""Per-thread BLAS threading for kernels that run their own worker threads.

OpenBLAS serialises concurrent calls from several Python threads when each call wants the whole
thread pool, which made two chunk workers slower than one. OpenBLAS >= 0.3.27 can limit the
calling thread alone (`openblas_set_num_threads_local`); when numpy's BLAS offers it, each worker
asks for one BLAS thread and the workers run side by side. Otherwise callers use one worker and
leave the parallelism to BLAS.
"""
import ctypes
import functools


@functools.lru_cache(maxsize=1)
def _set_local_threads():
    """The loaded OpenBLAS's openblas_set_num_threads_local, or None."""
    import numpy  # noqa: F401  (make sure numpy's BLAS is loaded before looking for it)
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            function = getattr(ctypes.CDLL(path), "openblas_set_num_threads_local")
        except (OSError, AttributeError):
            continue
        function.argtypes, function.restype = [ctypes.c_int], ctypes.c_int
        return function
    return None


def can_limit_per_thread() -> bool:
    return _set_local_threads() is not None


def use_one_blas_thread() -> None:
    """Make this thread's BLAS calls single-threaded (no-op when unsupported)."""
    function = _set_local_threads()
    if function is not None:
        function(1)
