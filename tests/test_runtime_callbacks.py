"""Host callbacks through the C ABI (tests/c/runtime_callbacks.cpp): callbacks run on the thread
that subscribed the stream, in stream order, and a blocking one holds the stream until it has run.

Codes (hicann/runtime v8.5.0): callback.cpp = src/acl/aclrt_impl/callback.cpp (aclrtLaunchCallbackImpl:
a block type other than BLOCK/NO_BLOCK; aclrtProcessReportImpl: timeout 0 or below -1:
ACL_ERROR_INVALID_PARAM); api_error.cc = src/runtime/feature/src/api_impl/api_error.cc (CallbackLaunch,
LaunchHostFunc: a NULL function is RT_ERROR_INVALID_VALUE, ACL_ERROR_RT_PARAM_INVALID; LaunchHostFunc
on a stream subscribed for callbacks, ACL_ERROR_RT_STREAM_SUBSCRIBE); api_impl.cc (ApiImpl::CallbackLaunch:
a stream nobody subscribed, ACL_ERROR_RT_STREAM_NO_CB_REG; ApiImpl::ProcessReport: a thread without a
subscription, ACL_ERROR_RT_THREAD_SUBSCRIBE); subscribe.cc = src/runtime/feature/src/utils/subscribe.cc
(CbSubscribe::CheckForInsert: a stream subscribed twice, CbSubscribe::Delete: a stream not subscribed,
ACL_ERROR_RT_STREAM_SUBSCRIBE; another thread's subscription, ACL_ERROR_RT_THREAD_SUBSCRIBE)."""

import pytest

import cabi

OK, INVALID_PARAM, RT_PARAM_INVALID = 0, 100000, 107000
STREAM_SUBSCRIBE, THREAD_SUBSCRIBE, NO_CB_REG = 107011, 107012, 107015

EXPECTED = {
    "launch_not_subscribed": NO_CB_REG,
    "subscribe": OK,
    "subscribe_again": STREAM_SUBSCRIBE,
    "process_not_subscribed_thread": THREAD_SUBSCRIBE,
    "process_bad_timeout": INVALID_PARAM,
    "launch_bad_block_type": INVALID_PARAM,
    "launch_null_fn": RT_PARAM_INVALID,
    "host_func_on_subscribed": STREAM_SUBSCRIBE,
    "launched_value": 4,
    "sync": OK,
    "in_stream_order_value": 1,
    "on_subscribed_thread_value": 1,
    "blocking_saw_its_copy_value": 1,
    "unsubscribe_wrong_thread": THREAD_SUBSCRIBE,
    "unsubscribe": OK,
    "unsubscribe_again": STREAM_SUBSCRIBE,
    "no_block_sync": OK,
    "no_block_waiting_value": 1,  # a non-blocking callback does not hold its stream
    "no_block_in_stream_order_value": 1,
    "host_func": OK,
    "host_func_null": RT_PARAM_INVALID,
    "host_func_ran_value": 1,
    "done": 0,
}


@pytest.fixture(scope="module")
def callbacks_run(family):
    return cabi.compile_and_run("runtime_callbacks.cpp", env={"ACLNN_EMU_SOC": family}, timeout=120)


def test_program_completes(callbacks_run):
    assert callbacks_run.returncode == 0, callbacks_run.stdout + callbacks_run.stderr


@pytest.mark.parametrize("rule", EXPECTED)
def test_code(callbacks_run, rule):
    assert cabi.rule_codes(callbacks_run.stdout).get(rule) == EXPECTED[rule], callbacks_run.stdout


def test_every_printed_line_is_asserted(callbacks_run):
    assert set(cabi.rule_codes(callbacks_run.stdout)) == set(EXPECTED)
