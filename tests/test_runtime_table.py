"""The most-used runtime functions beyond the core, through the C ABI (tests/c/runtime_table.cpp).

Each expected code names the CANN 8.5 runtime source that decides it (hicann/runtime v8.5.0):
  memory.cpp = src/acl/aclrt_impl/memory.cpp, stream.cpp = src/acl/aclrt_impl/stream.cpp,
  device.cpp = src/acl/aclrt_impl/device.cpp, acl.cpp = src/acl/aclrt_impl/acl.cpp,
  data_buffer.cpp = src/acl/aclrt_impl/data_buffer.cpp, api_error.cc = src/runtime/feature/src/api_impl/api_error.cc.
"""

import pytest

import cabi
from aclnn_emu import platform

OK, INVALID_PARAM, INVALID_FILE, FEATURE_UNSUPPORTED = 0, 100000, 100003, 200006
RT_PARAM_INVALID, RT_INVALID_DEVICEID, RT_INVALID_HANDLE = 107000, 107001, 107017

EXPECTED = {
    # memory.cpp, aclrtMemcpy2dImpl / aclrtMemcpy2dAsyncImpl -> CheckMemcpy2dParam: NULL dst/src,
    # zero height/width, width above either pitch, a kind other than H2D/D2H/DEFAULT: ACL_ERROR_INVALID_PARAM.
    "memcpy2d_h2d": OK,
    "memcpy2d_back": OK,
    "memcpy2d_async_d2h": OK,
    "memcpy2d_width_over_pitch": INVALID_PARAM,
    "memcpy2d_zero_height": INVALID_PARAM,
    "memcpy2d_null": INVALID_PARAM,
    "memcpy2d_kind_d2d": INVALID_PARAM,
    # stream.cpp, aclrtStreamQueryImpl: NULL status is ACL_ERROR_INVALID_PARAM; the runtime's
    # ACL_ERROR_RT_STREAM_NOT_COMPLETE becomes ACL_STREAM_STATUS_NOT_READY with ACL_SUCCESS.
    "stream_query_busy": OK,
    "stream_query_idle": OK,
    "stream_query_null_status": INVALID_PARAM,
    # stream.cpp, aclrtStreamGetIdImpl -> rtsStreamGetId: a destroyed stream is not a live handle.
    "stream_get_id": OK,
    "stream_get_id_destroyed": RT_INVALID_HANDLE,
    # stream.cpp, aclrtSetStreamFailureModeImpl -> rtStreamSetMode: modes 0 and 1 only.
    "failure_mode_stop": OK,
    "failure_mode_bad": RT_PARAM_INVALID,
    "priority_range": OK,
    "streams_available": OK,
    "op_wait_timeout": OK,
    # device.cpp, aclrtGetDeviceInfoImpl: NULL value is ACL_ERROR_INVALID_PARAM; rtsDeviceGetInfo
    # refuses a device that does not exist with ACL_ERROR_RT_INVALID_DEVICEID.
    "device_info_aicore": OK,
    "device_info_vector": OK,
    "device_info_bad_device": RT_INVALID_DEVICEID,
    "device_info_null": INVALID_PARAM,
    "logic_by_user": OK,
    "logic_by_user_bad": RT_INVALID_DEVICEID,
    "sat_mode_set": OK,
    "sat_mode_get": OK,
    "sys_param_set": OK,
    "sys_param_get": OK,
    # memory.cpp, aclrtDeviceCanAccessPeerImpl: equal ids are ACL_ERROR_INVALID_PARAM before the
    # runtime is asked; rtGetDevicePhyIdByIndex refuses an absent device.
    "peer_can_access": OK,
    "peer_can_access_same": INVALID_PARAM,
    "peer_can_access_absent": RT_INVALID_DEVICEID,
    # memory.cpp, aclrtDeviceEnablePeerAccessImpl: flags other than 0 are ACL_ERROR_FEATURE_UNSUPPORTED,
    # the current device as its own peer ACL_ERROR_INVALID_PARAM.
    "peer_enable_flags": FEATURE_UNSUPPORTED,
    "peer_enable_self": INVALID_PARAM,
    "peer_enable": OK,
    "peer_disable": OK,
    # acl.cpp, aclsysGetVersionNumImpl / GetPkgVersionContent: NULL is ACL_ERROR_INVALID_PARAM, a
    # package without share/info/<pkg>/version.info ACL_ERROR_INVALID_FILE.
    "version_num": OK,
    "version_str": OK,
    "version_missing_package": INVALID_FILE,
    "version_null": INVALID_PARAM,
    # data_buffer.cpp: update of a live buffer succeeds; destroying NULL is ACL_ERROR_INVALID_PARAM.
    "data_buffer_update": OK,
    "data_buffer_destroy": OK,
    "data_buffer_destroy_null": INVALID_PARAM,
    # notify.cpp = src/acl/aclrt_impl/notify.cpp: NULL handles and outputs are ACL_ERROR_INVALID_PARAM;
    # rtsNotifyCreate refuses flags other than ACL_NOTIFY_DEFAULT/DEVICE_USE_ONLY and the runtime a dead
    # notify (ACL_ERROR_RT_PARAM_INVALID); a wait that times out fails the stream (ACL_ERROR_RT_WAIT_TIMEOUT).
    "notify_create_bad_flag": RT_PARAM_INVALID,
    "notify_create_null": INVALID_PARAM,
    "notify_create": OK,
    "notify_get_id": OK,
    "notify_wait": OK,
    "notify_record": OK,
    "notify_wait_timeout": OK,
    "notify_wait_timeout_sync": 107019,
    "stop_on_failure_sync": 107019,
    "continue_on_failure_sync": 107019,
    "notify_destroy": OK,
    "notify_destroy_again": RT_PARAM_INVALID,
    "notify_record_destroyed": RT_PARAM_INVALID,
    "notify_destroy_null": INVALID_PARAM,
    # memory.cpp, MemcpyBatchImpl: NULL arrays, numBatches 0, a destMaxs element below its size and a
    # non-zero rsv byte are ACL_ERROR_INVALID_PARAM; each copy then answers as aclrtMemcpy does.
    "batch": OK,
    "batch_dest_max_small": INVALID_PARAM,
    "batch_zero": INVALID_PARAM,
    "batch_null_fail_index": INVALID_PARAM,
    "batch_rsv": INVALID_PARAM,
    "batch_second_bad": INVALID_PARAM,
    "batch_async": OK,
    "batch_async_sync": OK,
    "done": 0,
}

VALUES = {
    "memcpy2d_bytes_exact": 1,
    "memcpy2d_async_bytes_exact": 1,
    "stream_query_busy": 1,  # ACL_STREAM_STATUS_NOT_READY while 16 memsets of 64 MiB are queued
    "stream_query_idle": 0,  # ACL_STREAM_STATUS_COMPLETE
    "stream_ids_differ": 1,
    "priority_least": 7,
    "priority_greatest": 0,
    "streams_available_positive": 1,
    "streams_available_counts_down": 1,  # one stream created, one fewer available
    "logic_by_user": 1,
    "sat_mode_get": 1,
    "sys_param_get": 1,
    "peer_can_access": 1,
    "peer_status_enabled": 1,
    "peer_status_disabled": 0,
    "acl_version": 11600,  # ACL_MAJOR/MINOR/PATCH_VERSION 1.16.0 of CANN 8.5's acl_rt.h
    "version_num": 80_500_000,  # acl.cpp CalculateVersionNum("8.5.0")
    "version_str_is_8_5_0": 1,
    "data_buffer_addr_ok": 1,
    "data_buffer_size": 64,
    "data_buffer_size_v1": 16,
    "data_buffer_addr_null": 1,
    "notify_id_set": 1,
    "notify_ordered": 1,
    "stop_on_failure_skipped": 1,  # ACL_STOP_ON_FAILURE: nothing runs after the failed wait
    "continue_on_failure_ran": 1,  # the waiting stream's copy saw the recording stream's memset
    "batch_bytes_exact": 1,
    "batch_fail_index_none": 1,
    "batch_fail_index": 1,  # the second copy (NULL source) failed
}


@pytest.fixture(scope="module")
def table_run(family):
    return cabi.compile_and_run("runtime_table.cpp", env={"ACLNN_EMU_SOC": family, "ACLNN_EMU_DEVICE_COUNT": "2"})


def _lines(run):
    return cabi.rule_codes(run.stdout)


def test_program_completes(table_run):
    assert table_run.returncode == 0, table_run.stdout + table_run.stderr


@pytest.mark.parametrize("rule", EXPECTED)
def test_code(table_run, rule):
    assert _lines(table_run).get(rule) == EXPECTED[rule], table_run.stdout


@pytest.mark.parametrize("rule", VALUES)
def test_value(table_run, rule):
    assert _lines(table_run).get(f"{rule}_value") == VALUES[rule], table_run.stdout


def test_device_info_reports_the_emulated_part(table_run, family):
    part = platform.part(family)
    lines = _lines(table_run)
    assert (lines["device_info_aicore_value"], lines["device_info_vector_value"]) == (part.aic_cores, part.aiv_cores)


def test_every_printed_line_is_asserted(table_run):
    printed = set(_lines(table_run))
    asserted = set(EXPECTED) | {f"{r}_value" for r in VALUES} | {"device_info_aicore_value", "device_info_vector_value"}
    assert printed == asserted
