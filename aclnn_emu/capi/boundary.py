"""What every binding module shares: the cffi objects of the loaded library, the registry of
bindings, and the conversions between C arguments and Python values. No validation here."""

from .. import status
from ..opdef import arguments
from ..runtime.errors import AclError

ffi = lib = None  # set by bindings.attach once the library has loaded
IMPLS = {}  # C function name -> Python binding


def c(fn):
    """Register `fn` as the binding of the C function of the same name."""
    IMPLS[fn.__name__] = fn
    return fn


def bind(name: str, fn) -> None:
    """Register `fn` as the binding of `name` (for one body shared by several functions)."""
    IMPLS[name] = fn


def connect(ffi_, lib_) -> None:
    global ffi, lib
    ffi, lib = ffi_, lib_


def addr(p) -> int:
    return int(ffi.cast("uintptr_t", p))


def ptr(value: int, ctype: str = "void *"):
    return ffi.cast(ctype, value)


def text(p):
    return None if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")


def need(p, what: str, code=status.ACL_ERROR_INVALID_PARAM) -> None:
    if p == ffi.NULL:
        raise AclError(code, f"{what} must not be NULL", rule=f"null.{what}")


def put(p, value, what: str, ctype: str | None = None) -> None:
    """Write one result through an output pointer (NULL is ACL_ERROR_INVALID_PARAM, as
    ACL_REQUIRES_NOT_NULL makes it); `ctype` reinterprets a void * output."""
    need(p, what)
    (ffi.cast(ctype, p) if ctype else p)[0] = value


def obj(p, cls, what: str):
    """The live meta object behind a pointer; None for NULL; an error for anything else."""
    return None if p == ffi.NULL else arguments.live(addr(p), cls, what)


def ints(p, n) -> list[int]:
    return list(ffi.unpack(ffi.cast("int64_t *", p), n)) if n else []
