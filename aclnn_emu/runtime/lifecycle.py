"""The runtime at the edges of a process's life: exit and fork.

Exit: the stream workers are stopped before anything the kernels use is torn down. Their queued
tasks are dropped and running kernels are cancelled at their next block, then the workers are
joined, so no thread is inside BLAS when the libraries' destructors run. A Python program gets
this from `atexit`; a C program, whose embedded interpreter is never finalised, from the C
`atexit` handler of aclnn_emu/shim/lifecycle.cpp, which calls `stop_at_exit` before the ELF
destructors run. Work submitted afterwards (by a static destructor, say) is refused with
ACL_ERROR_RT_STREAM_ABORT.

Fork: threads do not survive fork(), so the child cannot trust a lock or a queue of the parent's
runtime. Before the fork, running stream tasks finish and no new one starts (a kernel copied
mid-flight could leave BLAS locked in the child); the child then starts from a fresh, uninitialised
runtime: aclInit, aclrtSetDevice and aclrtMalloc work as in a new process, while the parent's
contexts, streams and events are dead handles and its device pointers are answered with error codes.
Host-side objects (tensors, arrays, executors, aclrtMallocHost memory) are plain host memory and
stay usable. Python's os.fork and multiprocessing run these hooks through os.register_at_fork;
a C fork() through the pthread_atfork handlers of aclnn_emu/shim/lifecycle.cpp.
"""

import atexit
import os
import threading

from .. import status
from ..kernels import parallel
from . import api, callbacks, devices, handles, host_register, sanitizer, streams, trace, vmm
from .errors import log

# How long a fork waits for running stream tasks before it proceeds anyway.
FORK_WAIT_S = 60.0


def stop_at_exit() -> None:
    """Cancel every stream's work and wait for the workers; later submissions are refused. Then the
    trace (if any) is written whole: nothing is left to add to it."""
    streams.stop_all((status.ACL_ERROR_RT_STREAM_ABORT, "the process is exiting"))
    trace.finish()


def _before_fork() -> None:
    if not streams.pause_workers(FORK_WAIT_S):
        log.warning("fork: stream tasks still running after %.0f s; forking anyway", FORK_WAIT_S)


def _after_fork_in_child() -> None:
    for module in (handles, sanitizer):  # their only state a thread could hold is a lock
        setattr(module, "_lock", threading.Lock())
    parallel.forget_after_fork()
    trace.forget_after_fork()
    streams.forget_after_fork()
    devices.forget_after_fork()
    vmm.forget_after_fork()
    host_register.forget_after_fork()
    callbacks.forget_after_fork()
    api.forget_after_fork()


atexit.register(stop_at_exit)
os.register_at_fork(before=_before_fork, after_in_parent=streams.resume_workers, after_in_child=_after_fork_in_child)
