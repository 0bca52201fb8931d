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


class AclnnError(Exception):
    """A non-zero status: `.status` (int), `.name` (e.g. ACLNN_ERR_PARAM_INVALID), `.message`. The one
    base of every error with a status code (public as aclnn_emu.AclnnError); aclnn_emu.errors gives
    each code its subclass, which `AclnnError(code, message)` then makes."""

    by_code: dict = {}

    def __new__(cls, code: int, message: str | None = None, *rest, **named):
        if cls is AclnnError:
            cls = AclnnError.by_code.get(code, AclnnError)
        return super().__new__(cls, code, message)

    def __init__(self, code: int, message: str | None = None):
        self.status = code
        self.name = status.name_of(code)
        self.message = detail(code, message or "")  # aclGetRecentErrMsg's text without its header
        super().__init__(f"{self.name} ({code}): {self.message}")

    def __reduce__(self):
        return AclnnError, (self.status, self.message)


class AclError(AclnnError):
    """A failed call inside the emulator: the status code to return (`.code`, also `.status`), a
    message for aclGetRecentErrMsg, a rule id. The public API turns it into the typed subclass of its
    code; one that escapes is still an AclnnError."""

    def __init__(self, code: int, message: str, rule: str | None = None):
        Exception.__init__(self, message)
        self.code = self.status = code
        self.name = status.name_of(code)
        self.message = message
        self.rule = rule

    def __reduce__(self):
        return AclError, (self.code, self.message, self.rule)


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
