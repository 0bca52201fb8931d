"""Device-memory sanitizer: reports what real hardware would silently get wrong.

ACLNN_EMU_SANITIZE=off ignores reports, =warn (default) prints them to stderr and keeps them for
aclGetRecentErrMsg, =error additionally fails the call (or the stream task) that caused them.
"""

import sys
import threading

from .. import config, status
from . import trace
from .errors import AclError, note

_lock = threading.Lock()
_reports: list[tuple[str, str]] = []


class SanitizerError(AclError):
    """Raised for a report when ACLNN_EMU_SANITIZE=error."""


def report(kind: str, message: str, code: int = status.ACL_ERROR_RT_AICORE_EXCEPTION) -> None:
    """Report one finding. `code` is what the failing call returns under ACLNN_EMU_SANITIZE=error."""
    mode = config.current.sanitize
    if mode == "off":
        return
    with _lock:
        _reports.append((kind, message))
    text = f"aclnn-emu sanitizer: {kind}: {message}"
    print(text, file=sys.stderr, flush=True)
    note(text)
    if trace.enabled:
        trace.instant(f"sanitizer: {kind}", message)
    if mode == "error":
        raise SanitizerError(code, text, rule=f"sanitizer.{kind}")


def reports() -> list[tuple[str, str]]:
    """All findings of this process so far (for tests and `aclnn_emu.sanitizer_reports()`)."""
    with _lock:
        return list(_reports)


def clear() -> None:
    with _lock:
        _reports.clear()
