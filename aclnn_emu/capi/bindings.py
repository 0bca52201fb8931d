"""Wiring of the exported C functions to their Python bindings (one module per header: acl_rt.py,
acl_base_rt.py, aclnn_base.py; operators.py for the entry points).

Each binding returns a status code; an AclError becomes its code (message kept for
aclGetRecentErrMsg), any other exception becomes ACL_ERROR_INTERNAL_ERROR / ACLNN_ERR_INNER with
the traceback logged, so nothing crosses into C. While a setting is bad (config.problem) every
function but the pure helpers and aclInit fails at once: ACL_ERROR_INVALID_PARAM for aclError
functions, ACLNN_ERR_PARAM_INVALID for aclnnStatus ones, NULL for pointer-returning ones. The
declared functions the emulator does not implement reach `refused` (shim/refusals.py).
"""

import logging
import traceback

from .. import config, status
from ..opdef.registry import all_ops
from ..runtime import trace, unsupported
from ..runtime.errors import AclError, configure_logging, record
from . import acl_base_rt, acl_rt, aclnn_base, boundary, operators  # noqa: F401 (they register bindings)
from .boundary import IMPLS, text
from .prototypes import runtime_prototypes

# Functions that answer whatever the settings (besides the pure helpers, which are C in the shim):
# aclInit, which reads them again, and the error and version queries.
SETTINGS_FREE = {"aclInit", "aclGetRecentErrMsg", "aclrtGetVersion"}
returns_pointer = {}


def _guard(name, fn, status_failure, settings_failure):
    """Map errors to codes for status-returning functions; value-returning ones get NULL/0.
    `settings_failure` is the code (or, for a pointer, the message's code) while a setting is bad."""
    gated = name not in SETTINGS_FREE

    def call(*args):
        span = trace.enabled and trace.begin()  # the call as a slice of this thread's trace track
        try:
            if gated and config.problem is not None:
                raise AclError(settings_failure, config.problem, rule="settings")
            result = fn(*args)
            return status.ACL_SUCCESS if status_failure is not None and result is None else result
        except AclError as exc:
            record(exc.code, f"{name}: {exc.message}")
            if status_failure is not None:
                return exc.code
        except Exception as exc:  # never let a Python error cross into C
            logging.getLogger("aclnn_emu").error("%s raised:\n%s", name, traceback.format_exc())
            code = status_failure or status.ACL_ERROR_INTERNAL_ERROR
            record(code, f"{name}: internal error in aclnn-emu: {exc!r}")
            if status_failure is not None:
                return status_failure
        finally:
            if span:
                trace.end(name, span)
        return boundary.ffi.NULL if returns_pointer[name] else 0

    return call


def refused(name_p) -> int:
    """A declared function the emulator does not implement: record and return its refusal code."""
    name = text(name_p)
    exc = unsupported.refuse(name)
    record(exc.code, f"{name}: {exc.message}")
    return exc.code


def _log_applog(level, func, file, line, message):
    logging.getLogger("aclnn_emu.app").log(
        {0: 10, 1: 20, 2: 30, 3: 40}.get(level, 20), "%s:%d %s: %s", text(file), line, text(func), text(message)
    )


def attach(ffi_, lib_) -> list[str]:
    """Connect every extern "Python" declaration of the shim to its binding (embedding init code);
    returns the names attached. The pure helpers (prototypes.IN_C) are C in the shim itself."""
    boundary.connect(ffi_, lib_)
    configure_logging()
    items = [(p.name, IMPLS[p.name], p.ret, p.headers) for p in runtime_prototypes() if not p.in_c]
    for op in all_ops():
        items += [(name, fn, "aclnnStatus", "aclnn/") for name, fn in operators.functions(op)]
    for name, fn, ret, headers in items:
        failure = {"aclError": status.ACL_ERROR_INTERNAL_ERROR, "aclnnStatus": status.ACLNN_ERR_INNER}.get(ret)
        settings = status.ACLNN_ERR_PARAM_INVALID if headers == "aclnn/" else status.ACL_ERROR_INVALID_PARAM
        returns_pointer[name] = ret.endswith("*")
        ffi_.def_extern(name=f"_py_{name}")(_guard(name, fn, failure, settings))
    ffi_.def_extern(name="_py_aclAppLog")(_log_applog)
    ffi_.def_extern(name="_py_aclemu_refused")(refused)
    return [name for name, *_ in items]
