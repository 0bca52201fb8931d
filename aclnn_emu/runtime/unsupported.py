"""What a declared runtime function the emulator does not implement answers: a not-supported code,
never 0, and its name on stderr (first call) and in aclGetRecentErrMsg.

The code is the one CANN 8.5 returns when the feature is missing: functions that reach the runtime
layer (aclrt*, aclmdlRI*) return ACL_ERROR_RT_FEATURE_NOT_SUPPORT, as the runtime's C API maps
RT_ERROR_FEATURE_NOT_SUPPORT (runtime src/runtime/feature/src/api/api_c.cc); the acl-layer-only
functions (callbacks of aclInit, dump, CANN attributes, aclsysGetCANNVersion) return the acl
layer's ACL_ERROR_FEATURE_UNSUPPORTED (src/acl/aclrt_impl/memory.cpp, aclrtDeviceEnablePeerAccessImpl,
is where the acl layer itself refuses a feature)."""

import sys
import threading

from .. import status
from .errors import AclError

_RUNTIME_LAYER = ("aclrt", "aclmdlRI")
_announced: set[str] = set()
_lock = threading.Lock()


def code_of(name: str) -> int:
    return (
        status.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
        if name.startswith(_RUNTIME_LAYER)
        else status.ACL_ERROR_FEATURE_UNSUPPORTED
    )


def refuse(name: str) -> AclError:
    """The failure of a call to `name`; the first call of each function also says so on stderr."""
    code = code_of(name)
    message = (
        f"{name} is not emulated by aclnn-emu: it is declared by CANN 8.5's runtime headers so that "
        f"programs link, but calling it returns {status.name_of(code)}({code}) (docs/coverage.md)"
    )
    with _lock:
        first = name not in _announced
        _announced.add(name)
    if first:
        print(f"aclnn-emu: {message}", file=sys.stderr, flush=True)
    return AclError(code, message, rule=f"unsupported.{name}")
