"""cffi embedding init code: runs inside libascendcl.so once its interpreter is up (build.py reads
this file as text; nothing imports it). boot.cpp has already put ACLNN_EMU_PYTHONPATH and the
directory holding the library's package on sys.path.

It never raises: cffi would print its traceback, and calls whose bindings were never attached would
return 0. It reports to boot.cpp instead, which then answers every call with an error code."""

from _aclnn_emu_shim import ffi, lib


def _describe(exc: BaseException) -> bytes:
    try:
        return f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")
    except BaseException:
        return type(exc).__name__.encode()


def _start():
    try:
        from aclnn_emu.capi import bindings
    except ImportError as exc:
        return lib.ACLEMU_BOOT_IMPORT, exc
    except BaseException as exc:
        return lib.ACLEMU_BOOT_ERROR, exc
    try:
        attached = bindings.attach(ffi, lib)
    except BaseException as exc:
        return lib.ACLEMU_BOOT_STALE, exc
    missing = set(ffi.string(lib.aclemu_bindings).decode().split()) - set(attached)
    if missing:
        names = sorted(missing)
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        return lib.ACLEMU_BOOT_STALE, LookupError(f"the package has no binding for {', '.join(names[:3])}{more}")
    return lib.ACLEMU_BOOT_OK, None


_problem, _exc = _start()
lib.aclemu_boot_report(_problem, ffi.NULL if _exc is None else _describe(_exc))
