"""Host callbacks: aclrtSubscribeReport, aclrtLaunchCallback, aclrtProcessReport,
aclrtUnSubscribeReport, and aclrtLaunchHostFunc.

A callback launched on a subscribed stream is a stream task: when the stream reaches it, it is
handed to the subscribed thread's queue (in stream order) and, for ACL_CALLBACK_BLOCK, the stream
waits until that thread has run it in aclrtProcessReport. Threads are identified as the runtime
identifies them, by pthread_self (runtime src/runtime/feature/src/utils/osal.cc,
PidTidFetcher::GetCurrentUserTid), which is what threading.get_ident returns.

Codes: the acl layer's (runtime src/acl/aclrt_impl/callback.cpp: a block type other than
BLOCK/NO_BLOCK, a timeout below -1 or 0: ACL_ERROR_INVALID_PARAM); the runtime's
(src/runtime/feature/src/utils/subscribe.cc, CbSubscribe::CheckForInsert/Delete: a stream already or
not subscribed, ACL_ERROR_RT_STREAM_SUBSCRIBE; a thread that does not hold the stream,
ACL_ERROR_RT_THREAD_SUBSCRIBE; src/runtime/feature/src/api_impl/api_impl.cc, ApiImpl::CallbackLaunch:
a stream nobody subscribed, ACL_ERROR_RT_STREAM_NO_CB_REG; ApiImpl::ProcessReport: a thread without
subscriptions, ACL_ERROR_RT_THREAD_SUBSCRIBE, nothing reported in time, ACL_ERROR_RT_REPORT_TIMEOUT)."""

import collections
import threading

from .. import status
from ..kernels import parallel
from . import devices
from .api import stream_of
from .errors import AclError
from .streams import EVENT_POLL_S, _gate

NO_BLOCK, BLOCK = 0, 1

_cond = threading.Condition()
_subscriber: dict[object, int] = {}  # stream -> subscribed thread id
_reports: dict[int, collections.deque] = {}  # thread id -> callbacks waiting for aclrtProcessReport


def subscribe(thread_id: int, stream: int) -> None:
    target = stream_of(stream)
    with _cond:
        if target in _subscriber:
            raise AclError(status.ACL_ERROR_RT_STREAM_SUBSCRIBE, "the stream is already subscribed", rule="cb.twice")
        _subscriber[target] = thread_id
        _reports.setdefault(thread_id, collections.deque())


def unsubscribe(thread_id: int, stream: int) -> None:
    target = stream_of(stream)
    with _cond:
        owner = _subscriber.get(target)
        if owner is None:
            raise AclError(status.ACL_ERROR_RT_STREAM_SUBSCRIBE, "the stream is not subscribed", rule="cb.unknown")
        if owner != thread_id:
            raise AclError(
                status.ACL_ERROR_RT_THREAD_SUBSCRIBE,
                f"thread {thread_id} did not subscribe the stream",
                rule="cb.thread",
            )
        del _subscriber[target]
        if thread_id not in _subscriber.values():
            _reports.pop(thread_id, None)


def launch(call, block_type: int, stream: int) -> None:
    """Queue `call` (a no-argument callable running the user's function) on the stream."""
    if block_type not in (NO_BLOCK, BLOCK):
        raise AclError(status.ACL_ERROR_INVALID_PARAM, f"blockType {block_type} is not 0 or 1", rule="cb.block_type")
    _require_function(call)
    ctx = devices.current_context()
    target = stream_of(stream)
    if target.context is not ctx:
        raise AclError(status.ACL_ERROR_RT_STREAM_CONTEXT, "the stream belongs to another context", rule="cb.context")
    with _cond:
        if target not in _subscriber:
            raise AclError(
                status.ACL_ERROR_RT_STREAM_NO_CB_REG, "no thread subscribed this stream's reports", rule="cb.no_reg"
            )

    def report():
        done = threading.Event()
        with _cond:
            owner = _subscriber.get(target)
            queue = _reports.get(owner)
            if queue is None:
                return  # unsubscribed meanwhile: the report has nobody to run it
            if block_type == BLOCK and owner == threading.get_ident():  # ACLNN_EMU_SYNC=1 runs tasks inline
                raise AclError(
                    status.ACL_ERROR_RT_THREAD_SUBSCRIBE,
                    "a blocking callback would wait for the thread that must run it",
                    rule="cb.self_wait",
                )
            queue.append((call, done))
            _cond.notify_all()
        if block_type == BLOCK:  # the stream waits, and can still be torn down meanwhile
            token = parallel.current_token()
            with _gate.parked():
                while not done.wait(EVENT_POLL_S):
                    token.check()

    target.submit(report, "callback")


def _require_function(call) -> None:
    """A NULL function is RT_ERROR_INVALID_VALUE (api_error.cc, CallbackLaunch and LaunchHostFunc)."""
    if call is None:
        raise AclError(status.ACL_ERROR_RT_PARAM_INVALID, "fn must not be NULL", rule="cb.null_fn")


def launch_host_func(call, stream: int) -> None:
    """aclrtLaunchHostFunc: the function runs on the stream itself, in order; a stream subscribed
    for aclrtLaunchCallback is refused (api_error.cc, LaunchHostFunc)."""
    _require_function(call)
    target = stream_of(stream)
    with _cond:
        if target in _subscriber:
            raise AclError(
                status.ACL_ERROR_RT_STREAM_SUBSCRIBE, "the stream is subscribed for callbacks", rule="cb.host_func"
            )
    target.submit(call, "host function")


def process(timeout_ms: int) -> None:
    """Run the callbacks reported to the calling thread; wait up to `timeout_ms` (-1: forever) for one."""
    if timeout_ms < -1 or timeout_ms == 0:
        raise AclError(
            status.ACL_ERROR_INVALID_PARAM, f"timeout {timeout_ms} must be -1 or positive", rule="cb.timeout"
        )
    me = threading.get_ident()
    with _cond:
        queue = _reports.get(me)
        if queue is None:
            raise AclError(
                status.ACL_ERROR_RT_THREAD_SUBSCRIBE, "the calling thread subscribed no stream", rule="cb.no_thread"
            )
        if not _cond.wait_for(lambda: bool(queue), None if timeout_ms < 0 else timeout_ms / 1000.0):
            raise AclError(status.ACL_ERROR_RT_REPORT_TIMEOUT, f"no callback within {timeout_ms} ms", rule="cb.timeout")
        ready = list(queue)
        queue.clear()
    for call, done in ready:
        try:
            call()
        finally:
            done.set()


def forget_after_fork() -> None:
    """In a forked child: no thread of the parent exists to process reports."""
    global _cond
    _cond = threading.Condition()
    _subscriber.clear()
    _reports.clear()
