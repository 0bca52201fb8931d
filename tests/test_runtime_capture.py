"""Graph capture through the C ABI (tests/c/runtime_capture.cpp): a ScatterPaKvCache +
IncreFlashAttentionV4 decode step captured once and replayed ten times gives the same bytes (output
and both caches) as the step run ten times; nothing runs while it is captured.

Codes (hicann/runtime v8.5.0): model_ri.cpp = src/acl/aclrt_impl/model_ri.cpp (NULL stream, model
or both GetInfo outputs: ACL_ERROR_INVALID_PARAM); api_error.cc =
src/runtime/feature/src/api_impl/api_error.cc (StreamBeginCapture: a mode out of range is
RT_ERROR_INVALID_VALUE, ACL_ERROR_RT_PARAM_INVALID; StreamSynchronize and StreamQuery of a
capturing stream, ACL_ERROR_RT_STREAM_CAPTURED; ModelExecute: timeout 0 is RT_ERROR_INVALID_VALUE);
context.cc = src/runtime/feature/src/context/context.cc (StreamBeginCapture: already capturing,
ACL_ERROR_RT_STREAM_CAPTURED; StreamEndCapture: not capturing, ACL_ERROR_RT_STREAM_NOT_CAPTURED).
Destroying a model still being captured, and using a destroyed model, are decided by the emulator
(docs/divergences/runtime_api.md)."""

import pytest

import cabi

OK, INVALID_PARAM, RT_PARAM_INVALID = 0, 100000, 107000
MODEL_CAPTURED, STREAM_CAPTURED, STREAM_NOT_CAPTURED = 107026, 107027, 107029

EXPECTED = {
    "direct_sync": OK,
    "capture_null_stream": INVALID_PARAM,  # model_ri.cpp aclmdlRICaptureBeginImpl
    "capture_bad_mode": RT_PARAM_INVALID,  # api_error.cc StreamBeginCapture
    "end_not_capturing": STREAM_NOT_CAPTURED,  # context.cc StreamEndCapture
    "info_idle": OK,
    "info_idle_status_value": 0,  # ACL_MODEL_RI_CAPTURE_STATUS_NONE
    "capture_begin": OK,
    "capture_again": STREAM_CAPTURED,  # context.cc StreamBeginCapture
    "capture_launch": OK,
    "info_active": OK,
    "info_active_status_value": 1,  # ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
    "info_both_null": INVALID_PARAM,  # model_ri.cpp aclmdlRICaptureGetInfoImpl
    "query_capturing": STREAM_CAPTURED,  # api_error.cc StreamQuery
    "sync_capturing": STREAM_CAPTURED,  # api_error.cc StreamSynchronize
    "destroy_while_capturing": MODEL_CAPTURED,
    "capture_end": OK,
    "info_model_is_end_model_value": 1,
    "sync_after_capture": OK,
    "captured_not_run_value": 1,
    "execute_null": INVALID_PARAM,  # model_ri.cpp aclmdlRIExecuteAsyncImpl
    "execute": OK,
    "replay_sync": OK,
    "replay_out_same_bytes_value": 1,
    "replay_key_cache_same_bytes_value": 1,
    "replay_value_cache_same_bytes_value": 1,
    "replay_out_not_zero_value": 1,
    "ordered_execute": OK,
    "replay_in_order_value": 1,  # set, copy out, set again: the copy saw the first set
    "execute_sync_api": OK,
    "execute_bad_timeout": RT_PARAM_INVALID,  # api_error.cc ModelExecute
    "destroy": OK,
    "destroy_again": RT_PARAM_INVALID,
    "execute_destroyed": RT_PARAM_INVALID,
    "done": 0,
}


@pytest.fixture(scope="module")
def capture_run(family):
    return cabi.compile_and_run("runtime_capture.cpp", env={"ACLNN_EMU_SOC": family})


def test_program_completes_cleanly(capture_run):
    assert capture_run.returncode == 0, capture_run.stdout + capture_run.stderr
    assert "sanitizer" not in capture_run.stderr, capture_run.stderr


def test_ten_replays(capture_run):
    assert capture_run.stdout.splitlines().count("execute 0") == 10


@pytest.mark.parametrize("rule", EXPECTED)
def test_code(capture_run, rule):
    assert cabi.rule_codes(capture_run.stdout).get(rule) == EXPECTED[rule], capture_run.stdout


def test_every_printed_line_is_asserted(capture_run):
    assert set(cabi.rule_codes(capture_run.stdout)) == set(EXPECTED)
