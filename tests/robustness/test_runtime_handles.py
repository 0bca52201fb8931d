"""Hostile handles of the newer runtime objects (tests/c/runtime_handles.cpp): garbage, double
destroys and use after destroy get status codes (or NULL/0 from the getters), never a crash or a
hang. Each case runs in its own process under a time limit.

Where CANN dereferences what it is given (a model, notify, physical memory handle or data buffer
that is not one), the emulator decides, and says so in docs/divergences/runtime_api.md:
ACL_ERROR_RT_PARAM_INVALID for runtime handles, ACL_ERROR_INVALID_PARAM for data buffers (what
aclDestroyDataBuffer returns for NULL, runtime src/acl/aclrt_impl/data_buffer.cpp). A stream handle
that is not live is ACL_ERROR_RT_INVALID_HANDLE, as for every stream function (runtime/api.py)."""

import pytest

import cabi

RT_PARAM_INVALID, INVALID_PARAM, INVALID_HANDLE = 107000, 100000, 107017

CASES = {
    "models": {
        "execute_garbage": RT_PARAM_INVALID,
        "execute_wild": RT_PARAM_INVALID,
        "execute_stream_as_model": RT_PARAM_INVALID,
        "destroy_garbage": RT_PARAM_INVALID,
        "end": 0,
        "destroy": 0,
        "destroy_twice": RT_PARAM_INVALID,
        "execute_after_destroy": RT_PARAM_INVALID,
        "capture_on_garbage_stream": INVALID_HANDLE,
        "end_on_garbage_stream": INVALID_HANDLE,
        "sync": 0,
    },
    "notifies": {
        "record_garbage": RT_PARAM_INVALID,
        "wait_wild": RT_PARAM_INVALID,
        "id_garbage": RT_PARAM_INVALID,
        "destroy_stream_as_notify": RT_PARAM_INVALID,
        "destroy": 0,
        "destroy_twice": RT_PARAM_INVALID,
        "record_after_destroy": RT_PARAM_INVALID,
        "wait_after_destroy": RT_PARAM_INVALID,
        "id_after_destroy": RT_PARAM_INVALID,
        "sync": 0,
    },
    "physical": {
        "free_garbage": RT_PARAM_INVALID,
        "free_wild": RT_PARAM_INVALID,
        "map_garbage_handle": RT_PARAM_INVALID,
        "map_garbage_address": RT_PARAM_INVALID,
        "map_wild_address": RT_PARAM_INVALID,
        "unmap_garbage": RT_PARAM_INVALID,
        "release_garbage": RT_PARAM_INVALID,
        "release_inside": RT_PARAM_INVALID,
        "free": 0,
        "free_twice": RT_PARAM_INVALID,
        "map_after_free": RT_PARAM_INVALID,
        "release": 0,
        "release_twice": RT_PARAM_INVALID,
        "copy_from_released": RT_PARAM_INVALID,  # no longer device memory: an unmapped host range
    },
    "data_buffers": {
        "destroy_garbage": INVALID_PARAM,
        "update_garbage": INVALID_PARAM,
        "addr_garbage_is_null": 1,
        "size_garbage": 0,
        "destroy": 0,
        "destroy_twice": INVALID_PARAM,
        "update_after_destroy": INVALID_PARAM,
        "size_after_destroy": 0,
        "addr_after_destroy_is_null": 1,
    },
    "callbacks": {
        "subscribe_garbage_stream": INVALID_HANDLE,
        "unsubscribe_garbage_stream": INVALID_HANDLE,
        "launch_on_garbage_stream": INVALID_HANDLE,
        "host_func_on_garbage_stream": INVALID_HANDLE,
        "sync": 0,
    },
}


@pytest.mark.parametrize("case", CASES)
def test_hostile_handles_get_codes(isolated, case):
    run = isolated.c("runtime_handles.cpp", case)
    assert run.returncode == 0, run.stdout + run.stderr
    assert cabi.rule_codes(run.stdout) == {**CASES[case], "done": 0}, run.stdout


# In a forked child, a reserved and mapped range is the parent's memory: the child's copies are
# refused (as for the parent's aclrtMalloc memory) and the parent's bytes stay as they were.
_FORK_SCRIPT = """
import ctypes, os
from aclnn_emu.runtime import api, devices, vmm
api.init(None)
devices.set_device(0)
va = vmm.reserve(4 << 20, 0, 0, 0)
handle = vmm.malloc_physical(2 << 20, 0, 0, vmm.HBM_MEM_HUGE, vmm.LOCATION_DEVICE, 0, 0)
vmm.map_memory(va, 2 << 20, 0, handle, 0)
source = (ctypes.c_uint8 * 64)(*([7] * 64))
api.memcpy(va, 64, ctypes.addressof(source), 64, 1)
pid = os.fork()
if pid == 0:
    from aclnn_emu.runtime.errors import AclError
    api.init(None)
    devices.set_device(0)
    zeros = (ctypes.c_uint8 * 64)()
    try:
        api.memcpy(va, 64, ctypes.addressof(zeros), 64, 1)
        os._exit(1)
    except AclError as exc:
        os._exit(0 if exc.code == 107000 else 2)
_, code = os.waitpid(pid, 0)
back = (ctypes.c_uint8 * 64)()
api.memcpy(ctypes.addressof(back), 64, va, 64, 2)
print("child", os.waitstatus_to_exitcode(code), "parent_bytes_kept", int(all(b == 7 for b in back)))
"""


def test_a_forked_child_cannot_write_the_parents_mapped_memory(isolated):
    run = isolated.python(_FORK_SCRIPT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["child", "0", "parent_bytes_kept", "1"], run.stdout + run.stderr
