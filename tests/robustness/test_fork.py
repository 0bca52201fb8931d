"""fork() after aclInit: the child gets a fresh, uninitialised runtime that works, the parent's
streams and device pointers answer it with error codes, the parent carries on, and nothing hangs.
Forks from C (pthread_atfork in the library), from Python (os.fork, multiprocessing), and from Python
into C (ctypes), where the interpreter's at-fork hooks must run exactly once."""

import pytest

import cabi
from aclnn_emu import toolkit

PROGRAM = "lifecycle_fork.cpp"
INVALID_HANDLE, CONTEXT_NULL, PARAM_INVALID = 107017, 107002, 107000

CHILD_AFTER_USE = {
    "child.sync_parent_stream": INVALID_HANDLE,
    "child.launch_default_stream": CONTEXT_NULL,
    "child.memcpy_without_context": CONTEXT_NULL,
    "child.finalize_uninitialised": 0,
    "child.init": 0,
    "child.set_device": 0,
    "child.memcpy_parent_pointer": PARAM_INVALID,
    "child.memset_parent_pointer": PARAM_INVALID,
    "child.free_parent_pointer": PARAM_INVALID,
    "child.launch_parent_tensors": 0,
    "child.sync_parent_tensors": PARAM_INVALID,
    "child.fresh_work": 1,
    "child.reset": 0,
    "child.finalize": 0,
    "parent.child_status": 0,
    "parent.sync": 0,
    "parent.sync_default": 0,
    "parent.finished": 1,
}


@pytest.mark.parametrize("mode", ("warn", "error"))
def test_c_child_after_the_parent_used_streams(isolated, mode):
    result = isolated.c(PROGRAM, "child_after_use", env={"ACLNN_EMU_SANITIZE": mode})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == CHILD_AFTER_USE, result.stderr


def test_c_fork_while_another_thread_launches_and_synchronises(isolated):
    result = isolated.c(PROGRAM, "fork_while_other_thread_works")
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == {
        "fork.children": 5,
        "fork.children_ok": 5,
        "fork.parent_thread_failure": 0,
    }, result.stderr


# A Python program that used the runtime (a stream still busy) forks; prints one line per process.
PYTHON_PRELUDE = """
import os
import numpy as np
import aclnn_emu as ae
from aclnn_emu import dtypes
from aclnn_emu.runtime import api as rt

def attention(x):
    \"\"\"PromptFlashAttentionV2 of x [1, n, s, 128] fp16 on the emulator.\"\"\"
    q = ae.to_device(x)
    out = ae.empty(x.shape, dtypes.DataType.ACL_FLOAT16)
    ae.run("PromptFlashAttentionV2", q, q, q, *[None] * 9, x.shape[1], 0.088, 2147483647, 0, "BNSD", 0, 0, out)
    result = ae.numpy(out)
    ae.free(q), ae.free(out)
    return result

def code(call):
    try:
        call()
        return 0
    except ae.AclnnError as exc:
        return exc.status

x = np.random.default_rng(0).uniform(-1, 1, (1, 4, 512, 128)).astype(np.float16)
expected = attention(x)
stream = ae.setup()
busy = ae.to_device(np.ones((1, 8, 2048, 128), np.float16))
busy_out = ae.empty((1, 8, 2048, 128), dtypes.DataType.ACL_FLOAT16)
args = [busy, busy, busy] + [None] * 9 + [8, 0.088, 2147483647, 0, "BNSD", 0, 0, busy_out]
for _ in range(3):
    assert ae.raw.aclnnPromptFlashAttentionV2(0, 0, ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(*args)[2], stream) == 0
"""

PYTHON_OS_FORK = (
    PYTHON_PRELUDE
    + """
hooks = []
os.register_at_fork(before=lambda: hooks.append("before"), after_in_parent=lambda: hooks.append("parent"),
                    after_in_child=lambda: hooks.append("child"))
pid = os.fork()
if pid == 0:
    codes = [code(lambda: rt.synchronize_stream(stream)), code(lambda: ae.numpy(busy_out))]
    same = bool(np.array_equal(attention(x), expected))
    print("child", hooks, codes, same, flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
rt.synchronize_stream(stream)
print("parent", hooks, status, bool(np.isfinite(ae.numpy(busy_out).astype(np.float32)).all()))
"""
)


def test_python_os_fork(isolated):
    result = isolated.python(PYTHON_OS_FORK)
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert lines == [
        f"child ['before', 'child'] [{INVALID_HANDLE}, {PARAM_INVALID}] True",
        "parent ['before', 'parent'] 0 True",
    ], result.stderr


PYTHON_MULTIPROCESSING = (
    PYTHON_PRELUDE
    + """
import multiprocessing

def in_child(seed):
    data = np.random.default_rng(seed).uniform(-1, 1, (1, 2, 256, 128)).astype(np.float16)
    return attention(data)

with multiprocessing.get_context("fork").Pool(3) as pool:
    results = pool.map(in_child, range(6))
same = [bool(np.array_equal(r, in_child(seed))) for seed, r in enumerate(results)]
rt.synchronize_stream(stream)
print(same)
"""
)


def test_python_multiprocessing_with_fork(isolated):
    result = isolated.python(PYTHON_MULTIPROCESSING)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == str([True] * 6), result.stderr


# The library loaded into a Python program, which forks with os.fork or with libc's fork() (a fork the
# interpreter does not know about): the interpreter's hooks run once either way, never twice or not at all.
PYTHON_HOST_OF_THE_LIBRARY = """
import ctypes, os, sys
lib = ctypes.CDLL({library!r})
libc = ctypes.CDLL(None)
hooks = []
os.register_at_fork(before=lambda: hooks.append("before"), after_in_parent=lambda: hooks.append("parent"),
                    after_in_child=lambda: hooks.append("child"))
stream = ctypes.c_void_p()
assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0 and lib.aclrtCreateStream(ctypes.byref(stream)) == 0
pid = os.fork() if sys.argv[1] == "os.fork" else libc.fork()
if pid == 0:
    fresh = ctypes.c_void_p()
    codes = [lib.aclrtSynchronizeStream(stream), lib.aclInit(None), lib.aclrtSetDevice(0),
             lib.aclrtCreateStream(ctypes.byref(fresh)), lib.aclrtSynchronizeStream(fresh), lib.aclFinalize()]
    print("child", hooks, codes, flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("parent", hooks, status, lib.aclrtSynchronizeStream(stream))
"""


@pytest.mark.parametrize("fork", ["os.fork", "libc.fork"])
def test_python_host_of_the_library_forks(isolated, fork):
    script = PYTHON_HOST_OF_THE_LIBRARY.format(library=str(toolkit.LIBRARY))
    result = isolated.python(script, fork)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        f"child ['before', 'child'] [{INVALID_HANDLE}, 0, 0, 0, 0, 0]",
        "parent ['before', 'parent'] 0 0",
    ], result.stderr
