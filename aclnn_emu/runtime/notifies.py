"""Notifies (aclrtCreateNotify, aclrtRecordNotify, aclrtWaitAndResetNotify, aclrtGetNotifyId,
aclrtDestroyNotify): a flag one stream sets and another waits for and clears, in stream order.

Codes: NULL handles are the acl layer's ACL_ERROR_INVALID_PARAM (runtime
src/acl/aclrt_impl/notify.cpp); a flag other than ACL_NOTIFY_DEFAULT/DEVICE_USE_ONLY and a
destroyed or foreign notify are the runtime's ACL_ERROR_RT_PARAM_INVALID; a wait that times out
fails its stream with ACL_ERROR_RT_WAIT_TIMEOUT, reported at the next synchronisation. The timeout
is in seconds, 0 waiting forever (aclrtWaitAndResetNotify docs)."""

import itertools
import threading
import time

from .. import status
from ..kernels import parallel
from . import handles
from .api import stream_of
from .errors import AclError
from .streams import EVENT_POLL_S, _gate

FLAGS = (0, 1)  # ACL_NOTIFY_DEFAULT, ACL_NOTIFY_DEVICE_USE_ONLY
_ids = itertools.count()


class Notify:
    def __init__(self, flag: int):
        self.flag = flag
        self.id = next(_ids)
        self._cond = threading.Condition()
        self._set = False
        self.handle = handles.register(self)

    def record(self) -> None:
        with self._cond:
            self._set = True
            self._cond.notify_all()

    def wait_and_reset(self, timeout_s: int) -> None:
        token = parallel.current_token()
        deadline = None if timeout_s == 0 else time.monotonic() + timeout_s
        with _gate.parked(), self._cond:
            while not self._set:
                if deadline is not None and time.monotonic() >= deadline:
                    raise AclError(
                        status.ACL_ERROR_RT_WAIT_TIMEOUT,
                        f"notify not recorded within {timeout_s} s",
                        rule="notify.timeout",
                    )
                self._cond.wait(EVENT_POLL_S)
                token.check()
            self._set = False


def create(flag: int) -> int:
    if flag not in FLAGS:
        raise AclError(status.ACL_ERROR_RT_PARAM_INVALID, f"notify flag {flag} is not 0 or 1", rule="notify.flag")
    return Notify(flag).handle


def notify_of(handle: int) -> Notify:
    if handle == 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "notify must not be NULL", rule="notify.null")
    return handles.live(handle, Notify, "aclrtNotify", status.ACL_ERROR_RT_PARAM_INVALID, "notify.invalid")


def destroy(handle: int) -> None:
    handles.release(notify_of(handle).handle)


def record(handle: int, stream: int) -> None:
    found = notify_of(handle)
    stream_of(stream).submit(found.record, "notify record")


def wait_and_reset(handle: int, stream: int, timeout_s: int) -> None:
    found = notify_of(handle)
    stream_of(stream).submit(lambda: found.wait_and_reset(timeout_s), "notify wait")


def notify_id(handle: int) -> int:
    return notify_of(handle).id
