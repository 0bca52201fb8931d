"""The error type every layer raises, and the per-thread store behind aclGetRecentErrMsg."""
import logging
import os
import threading

from .. import status

log = logging.getLogger("aclnn_emu")


class AclError(Exception):
    """A failed call: the status code to return, a message for aclGetRecentErrMsg, a rule id."""

    def __init__(self, code: int, message: str, rule: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.rule = rule


_recent = threading.local()


def record(code: int, message: str) -> None:
    """Remember a failure for this host thread in CANN's message style and log it."""
    text = f"[ERROR msg][PID:{os.getpid()}] {status.name_of(code)}({code}): {message}"
    _recent.message = text
    log.debug(text)


def note(message: str) -> None:
    """Remember a warning for this thread (portability warnings are also readable there)."""
    _recent.message = f"[WARNING msg][PID:{os.getpid()}] {message}"


def take_recent() -> str | None:
    """aclGetRecentErrMsg: the last message of this thread, cleared once read; None if there is none."""
    text = getattr(_recent, "message", None)
    _recent.message = None
    return text
