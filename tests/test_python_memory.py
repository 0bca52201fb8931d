"""What a Python user meets in memory and errors, through the public API only: device tensors owned by
their Python objects, leaks reported by the Device block they happen in, one error hierarchy, the
recent error message, and the raw calls' types at the top level."""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import aclnn_emu as ae


def run_script(script: str, tmp_path, **env) -> str:
    """A script in a fresh process (its own runtime); its stdout, after asserting it succeeded."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=dict(os.environ, **env),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


DROPPED = """
import numpy as np, aclnn_emu as ae

for i in range(200):                         # 200 x 16 MiB through a 1 GiB device, none freed by hand
    t = ae.to_device(np.full((4, 1 << 20), i, np.float32)) if i % 10 == 0 else ae.empty((4 << 20,), ae.DataType.ACL_FLOAT)
    if i % 10 == 0:
        assert ae.numpy(t)[3, -1] == i
for i in range(100):                         # tensors held only by reference cycles
    t = ae.empty((4 << 20,), ae.DataType.ACL_FLOAT)
    cycle = [t]
    cycle.append(cycle)
for i in range(100):                         # tensors a dropped tensor list holds
    lists = ae.tensor_list([ae.empty((4 << 20,), ae.DataType.ACL_FLOAT)])
del t, cycle, lists
try:
    kept = [ae.empty((4 << 20,), ae.DataType.ACL_FLOAT) for _ in range(100)]
except ae.DeviceOutOfMemory as error:        # 100 x 16 MiB held: the device is full, and says so
    print("full", error.status)
"""


def test_dropped_tensors_free_their_memory(tmp_path):
    assert run_script(DROPPED, tmp_path, ACLNN_EMU_DEVICE_MEMORY="1G").split() == ["full", "207001"]


FREED = """
import numpy as np, aclnn_emu as ae

t = ae.to_device(np.arange(4, dtype=np.float32))
ae.free(t)
for again in (ae.free, ae.numpy):           # the runtime's own codes, caught as every status is
    try:
        again(t)
    except ae.AclnnError as error:
        print(type(error).__name__, error.status)
print(*[kind for kind, _ in ae.sanitizer_reports()])
"""


def test_free_frees_now_and_using_freed_memory_is_an_aclnn_error(tmp_path):
    """In a process of its own: freed memory is unmapped only while no other allocation shares its page."""
    assert run_script(FREED, tmp_path).splitlines() == [
        "RtParamInvalid 107000",
        "AicoreException 507015",
        "double-free",
    ]


def test_every_error_with_a_status_is_an_aclnn_error():
    from aclnn_emu.runtime.errors import AclError  # what the emulator raises inside

    assert issubclass(AclError, ae.AclnnError)
    inner = AclError(107017, "stream 0x10 is not live")
    assert (inner.status, inner.name, inner.message) == (107017, "ACL_ERROR_RT_INVALID_HANDLE", inner.message)
    with pytest.raises(ae.InvalidHandle) as raised:
        ae.synchronize(ae.Stream(0x10))
    assert raised.value.status == 107017


def test_queued_work_holds_the_tensors_it_uses():
    """Phase 1 through ae.raw with the caller's tensors, whose Python names are then dropped and
    collected; memory allocated afterwards must not be theirs, and phase 2 still scatters them."""
    stream = ae.Stream(ae.setup())
    key = np.arange(2 * 1 * 32, dtype=np.float16).reshape(2, 1, 32)
    cache, vcache = (ae.to_device(np.zeros((1, 4, 1, 32), np.float16)) for _ in range(2))
    inputs = [ae.to_device(key), ae.to_device(np.array([3, 1], np.int32)), ae.to_device(key)]
    code, size, executor = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(
        inputs[0], cache, inputs[1], inputs[2], vcache, *[None] * 7
    )
    assert code == 0
    workspace = ae.empty((size,), ae.DataType.ACL_UINT8)
    del inputs
    gc.collect()
    junk = [ae.to_device(np.full(key.shape, 7, np.float16)) for _ in range(4)]  # would reuse freed memory
    assert ae.raw.aclnnScatterPaKvCache(workspace.addr, size, executor, stream) == 0
    ae.synchronize(stream)
    got = ae.numpy(cache)
    assert (got[0, 3] == key[0]).all() and (got[0, 1] == key[1]).all() and not got[0, 0].any()
    del junk


def test_the_recent_error_message_is_public():
    status, _, _ = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(np.zeros((2, 1, 32), np.float16), *[None] * 11)
    assert status == 161002
    message = ae.recent_error_message()
    assert "aclnn_emu.to_device" in message and "key" in message
    assert ae.recent_error_message() is None  # read once, as aclGetRecentErrMsg clears it


def test_the_raw_calls_types_are_at_the_top_level():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 1, 16)).astype(np.float16)
    k, v = (rng.standard_normal((2, 2, 64, 16)).astype(np.float16) for _ in range(2))
    key, value = ae.tensor_list([ae.to_device(k)]), ae.tensor_list([ae.to_device(v)])
    assert isinstance(key, ae.TensorList)
    lengths = ae.int_array([64, 40])
    out = ae.empty(q.shape, ae.DataType.ACL_FLOAT16)
    ae.run(
        "IncreFlashAttentionV4",
        ae.to_device(q),
        key,
        value,
        None,
        None,
        lengths,
        *[None] * 9,
        4,
        0.25,
        "BNSD",
        2,
        0,
        1,
        out,
    )
    expected = ae.ops.IncreFlashAttentionV4(
        q, [k], [v], actualSeqLengths=[64, 40], numHeads=4, scaleValue=0.25, inputLayout="BNSD", numKeyValueHeads=2
    )
    assert ae.numpy(out).tobytes() == expected.tobytes()
    assert ae.float_array([0.1]).values == (float(np.float32(0.1)),) and ae.bool_array([1, 0]).values == (True, False)
    assert ae.scalar(0.1, ae.DataType.ACL_FLOAT16).value == float(np.float16(0.1))
    with pytest.raises(TypeError, match="to_device"):
        ae.tensor_list([k])


LEAK_AFTER_AN_EARLY_CALL = """
import numpy as np, aclnn_emu as ae

key = np.ones((2, 1, 32), np.float16)
ae.ops.ScatterPaKvCache(key, np.zeros((1, 4, 1, 32), np.float16), np.array([0, 1], np.int32), key,
                        np.zeros((1, 4, 1, 32), np.float16), cacheModeOptional="Norm")    # starts the runtime before the block
before = ae.empty((3,), ae.DataType.ACL_FLOAT)                  # allocated before: not the block's
with ae.Device(0):
    kept = ae.empty((5,), ae.DataType.ACL_FLOAT)                # still referenced at the end: a leak
    dropped = ae.empty((7,), ae.DataType.ACL_FLOAT)
    cycle = [ae.empty((9,), ae.DataType.ACL_FLOAT)]
    cycle.append(cycle)
    del dropped, cycle                                          # collected: freed, not leaked
for kind, message in ae.sanitizer_reports():
    print(kind, message.split()[0])
"""


def test_a_leak_in_a_device_block_is_reported_when_the_runtime_started_before_it(tmp_path):
    assert run_script(LEAK_AFTER_AN_EARLY_CALL, tmp_path).split() == ["leak", str(5 * 4)]


FORKED = """
import gc, os
import numpy as np, aclnn_emu as ae

big = [ae.to_device(np.full((1 << 20,), 3, np.float32)) for _ in range(2)]  # 4 MiB: a free gives pages back
pid = os.fork()
if pid == 0:
    mine = ae.to_device(np.full((1 << 20,), 5, np.float32))
    del big                                    # the parent's tensors, collected in the child
    gc.collect()
    ae.empty((4,), ae.DataType.ACL_FLOAT)      # frees what was collected: never the parent's memory
    os._exit(0 if (ae.numpy(mine) == 5).all() else 1)
print(os.waitpid(pid, 0)[1], bool((ae.numpy(big[0]) == 3).all()))
"""


def test_a_forked_child_collecting_the_parents_tensors_frees_nothing_of_its_own(tmp_path):
    assert run_script(FORKED, tmp_path).split() == ["0", "True"]
