"""The error type every layer raises, and the per-thread store behind aclGetRecentErrMsg."""

import logging
import os
import threading

from .. import config, status
from . import trace

log = logging.getLogger("aclnn_emu")


def configure_logging() -> None:
    """Apply ACLNN_EMU_LOG to the emulator's logger (stderr, prefixed with the process id)."""
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(f"[aclnn-emu %(levelname)s][PID:{os.getpid()}] %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(config.current.log.upper())


class AclError(Exception):
    """A failed call: the status code to return, a message for aclGetRecentErrMsg, a rule id."""

    def __init__(self, code: int, message: str, rule: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.rule = rule


_recent = threading.local()


def _header(code: int) -> str:
    return f"[ERROR msg][PID:{os.getpid()}] {status.name_of(code)}({code}): "


def record(code: int, message: str) -> None:
    """Remember a failure for this host thread in CANN's message style and log it."""
    text = _header(code) + message
    _recent.message = text
    log.info(text)
    if trace.enabled:
        trace.failed(code, message)


def detail(code: int, text: str) -> str:
    """A recorded failure's message without the header `record` puts before it."""
    return text.removeprefix(_header(code))


def note(message: str) -> None:
    """Remember a warning for this thread (portability warnings are also readable there)."""
    _recent.message = f"[WARNING msg][PID:{os.getpid()}] {message}"


def take_recent() -> str | None:
    """aclGetRecentErrMsg: the last message of this thread, cleared once read; None if there is none."""
    text = getattr(_recent, "message", None)
    _recent.message = None
    return text
