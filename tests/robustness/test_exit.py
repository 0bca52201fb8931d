"""Exiting while operators run ends the process with the program's own status: the stream workers are
stopped (queued work dropped, running kernels cancelled at their next block) before the libraries'
destructors run, from C (an atexit handler of the library) and from Python (atexit)."""

import pytest

import cabi
from aclnn_emu import toolkit

PROGRAM = "lifecycle_exit.cpp"
CASES = {
    "return_while_running": 0,
    "exit_from_thread": 3,
    "return_while_other_thread_launches": 0,
    "return_with_events_pending": 0,
}


def assert_clean(result, status):
    assert result.returncode == status, result.stdout + result.stderr
    for sign in ("Traceback", "Fatal Python error", "Segmentation"):
        assert sign not in result.stderr


@pytest.mark.parametrize("mode", ("warn", "error"))
@pytest.mark.parametrize("case", sorted(CASES))
def test_c_program_exits_with_its_own_status(isolated, case, mode):
    assert_clean(isolated.c(PROGRAM, case, env={"ACLNN_EMU_SANITIZE": mode}), CASES[case])


def test_exit_without_synchronising_100_times_in_a_row(isolated):
    """One process starts the emulator, then 100 forked children each set up, queue work and exit
    through exit() without synchronising: the same exit path as a program's, without paying for 100
    interpreter starts. Every child must exit 0."""
    result = isolated.c("lifecycle_fork.cpp", "exit_without_synchronising_in_children")
    assert_clean(result, 0)
    assert cabi.rule_codes(result.stdout) == {"exit.children": 100, "exit.children_exit_0": 100}


PYTHON_EXIT = """
import sys, threading
import numpy as np
import aclnn_emu as ae
from aclnn_emu import dtypes
from aclnn_emu.runtime import api as rt

def launch_forever():
    ae.setup()                        # this thread's context
    stream = rt.create_stream()
    while ae.raw.aclnnPromptFlashAttentionV2(0, 0, ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(*args)[2], stream) == 0:
        pass

stream = ae.setup()
q = ae.to_device(np.ones((1, 8, 2048, 128), np.float16))
out = ae.empty((1, 8, 2048, 128), dtypes.DataType.ACL_FLOAT16)
args = [q, q, q] + [None] * 9 + [8, 0.088, 2147483647, 0, "BNSD", 0, 0, out]
for _ in range(8):
    ae.raw.aclnnPromptFlashAttentionV2(0, 0, ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(*args)[2], stream)
threading.Thread(target=launch_forever, daemon=True).start()
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("status", (0, 3))
def test_python_program_exits_with_its_own_status(isolated, status):
    assert_clean(isolated.python(PYTHON_EXIT, status), status)


PYTHON_HOST_EXIT = """
import ctypes
lib = ctypes.CDLL({library!r})
stream = ctypes.c_void_p()
assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0 and lib.aclrtCreateStream(ctypes.byref(stream)) == 0
import numpy as np
from aclnn_emu import dtypes
import aclnn_emu as ae
q = ae.to_device(np.ones((1, 8, 2048, 128), np.float16))
out = ae.empty((1, 8, 2048, 128), dtypes.DataType.ACL_FLOAT16)
args = [q, q, q] + [None] * 9 + [8, 0.088, 2147483647, 0, "BNSD", 0, 0, out]
for _ in range(8):
    ae.raw.aclnnPromptFlashAttentionV2(0, 0, ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(*args)[2], stream.value)
"""


def test_python_host_of_the_library_exits_cleanly(isolated):
    assert_clean(isolated.python(PYTHON_HOST_EXIT.format(library=str(toolkit.LIBRARY))), 0)
