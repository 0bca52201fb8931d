"""Shutdown with work in flight returns, promptly and with the documented codes (README, "Shutdown,
exit and fork"): aclFinalize, aclrtResetDevice and aclrtDestroyContext cancel created streams and
drain the primary context's default stream; aclrtDestroyStream drains; a submission to a destroyed
stream is refused. Each case runs with the sanitizer warning and failing calls."""

import pytest

import cabi

PROGRAM = "lifecycle_shutdown.cpp"
MODES = ("warn", "error")
QUEUED = 24  # launches each case queues on the stream that gets cancelled (kQueued)
INVALID_HANDLE, CONTEXT_NULL, STREAM_ABORT = 107017, 107002, 107023


def leaking_finalize(mode: str) -> int:
    """aclFinalize while the program still holds device memory: a leak, which fails it under error."""
    return {"warn": 0, "error": 507015}[mode]


EXPECTED = {
    "finalize_queued": lambda mode: {
        "finalize": leaking_finalize(mode),
        "finalize.sync_destroyed_stream": INVALID_HANDLE,
        "finalize.init_again": 0,
    },
    "reset_queued": lambda mode: {
        "reset": 0,
        "reset.sync_stream": INVALID_HANDLE,
        "reset.destroy_stream": INVALID_HANDLE,
        "reset.sync_default": CONTEXT_NULL,
        "reset.set_again": 0,
        "reset.finished_default": 1,
        "finalize": leaking_finalize(mode),
    },
    "destroy_queued": lambda mode: {
        "destroy": 0,
        "destroy.finished": 1,
        "destroy.sync_after": INVALID_HANDLE,
        "destroy.launch_after": INVALID_HANDLE,
    },
    "destroy_context_queued": lambda mode: {
        "destroy_context": 0,
        "destroy_context.sync_stream": INVALID_HANDLE,
        "destroy_context.launch_default": CONTEXT_NULL,
    },
    "finalize_while_other_thread_waits": lambda mode: {
        "finalize": leaking_finalize(mode),
        "other.queued": 0,
        "other.sync": STREAM_ABORT,
        "other.sync_default": CONTEXT_NULL,
    },
    "reset_while_other_thread_waits": lambda mode: {
        "reset": 0,
        "other.queued": 0,
        "other.sync": STREAM_ABORT,
        "other.sync_default": CONTEXT_NULL,
    },
    "finalize_with_events_pending": lambda mode: {"finalize": leaking_finalize(mode), "event.host_wait": STREAM_ABORT},
    "reset_with_events_pending": lambda mode: {"reset": 0, "event.host_wait": STREAM_ABORT},
    "destroy_while_submitting": lambda mode: {
        "race.rounds": 20,
        "race.destroyed": 20,
        "race.refused_with_107017": 20,
        "race.sync_with_107017": 20,
        "race.launched_some": 1,
        "race.sync_default": 0,
        "race.finished": 1,
    },
}
# The call whose duration ("<rule>.ms") must be far below the queued work's: it cancels that work.
PROMPT = {
    "finalize_queued": "finalize",
    "reset_queued": "reset",
    "destroy_context_queued": "destroy_context",
    "finalize_while_other_thread_waits": "finalize",
    "reset_while_other_thread_waits": "reset",
    "finalize_with_events_pending": "finalize",
    "reset_with_events_pending": "reset",
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_shutdown_case(isolated, case, mode):
    result = isolated.c(PROGRAM, case, env={"ACLNN_EMU_SANITIZE": mode})
    assert result.returncode == 0, result.stdout + result.stderr
    codes = cabi.rule_codes(result.stdout)
    timings = {rule: codes.pop(rule) for rule in list(codes) if rule.endswith(".ms")}
    assert codes == EXPECTED[case](mode), result.stderr
    if case in PROMPT:
        # Half the queue, and the couple of launches the default stream drains, fit in this easily.
        assert timings[f"{PROMPT[case]}.ms"] < QUEUED / 2 * max(timings["launch.ms"], 20), timings
    if mode == "error" and codes.get("finalize") == leaking_finalize(mode):
        assert "sanitizer: leak:" in result.stderr
    assert "Traceback" not in result.stderr


PYTHON_FINALIZE_WHILE_QUEUED = """
import threading
import numpy as np
import aclnn_emu as ae
from aclnn_emu import dtypes
from aclnn_emu.runtime import api as rt
from aclnn_emu.runtime.errors import AclError

stream = ae.setup()
q = ae.to_device(np.random.rand(1, 8, 2048, 128).astype(np.float16))
out = ae.empty((1, 8, 2048, 128), dtypes.DataType.ACL_FLOAT16)
args = [q, q, q] + [None] * 9 + [8, 0.088, 2147483647, 0, "BNSD", 0, 0, out]
phase1 = ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize
launch = lambda: ae.raw.aclnnPromptFlashAttentionV2(0, 0, phase1(*args)[2], stream)
codes = [launch() for _ in range(24)]
outcome = {}
def wait():
    try:
        rt.synchronize_stream(stream)
        outcome["sync"] = 0
    except AclError as exc:
        outcome["sync"] = exc.code
waiter = threading.Thread(target=wait)
waiter.start()
rt.finalize()
waiter.join()
print(set(codes), outcome["sync"], launch())
"""


def test_python_finalize_with_work_queued_and_a_thread_waiting(isolated):
    result = isolated.python(PYTHON_FINALIZE_WHILE_QUEUED)
    assert result.returncode == 0, result.stderr
    # the launches were accepted, the waiter saw the cancellation, the stream is gone after finalize
    assert result.stdout.split() == ["{0}", str(STREAM_ABORT), str(INVALID_HANDLE)], result.stderr
