"""An operator's arguments given from Python (`aclnn_emu.run`, `aclnn_emu.raw`) and handle lookups.

Both doors hand the op modules what the C binding hands them: live Tensor objects or None, tuples
of numbers, int, float, bool, str. They differ in what a value of the wrong kind means:
- `python` (run): the caller's mistake, raised as TypeError/ValueError naming the operator, the
  argument, what it takes and what it got;
- `raw`: what C gets for the equivalent garbage, as a status code. A value that cannot be the
  handle a parameter needs is a pointer to no live object (161002 and a sanitizer report, as the
  C binding answers); a value no C type could carry is 161002.
Either way a handle that was destroyed is the C case, a status code.
"""

import numbers

import numpy as np

from .. import host, status
from ..meta import Array, Scalar, Tensor, TensorList
from ..runtime import handles, sanitizer
from ..runtime.errors import AclError

MASK64 = (1 << 64) - 1
INVALID = status.ACLNN_ERR_PARAM_INVALID


class Misuse(Exception):
    """A wrong Python value given to `aclnn_emu.run`: raised to the caller, never turned into a status."""


class MisusedType(Misuse, TypeError):
    pass


class MisusedValue(Misuse, ValueError):
    pass


def _show(value) -> str:
    text = repr(value)
    return f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.") + (
        f" {text}" if len(text) <= 40 else ""
    )


class Foreign(int):
    """A Python value where C passes a pointer: an address no handle or allocation has, which
    messages print as the value itself."""

    def __new__(cls, value):
        self = super().__new__(cls, MASK64)
        self.value = value
        return self

    def __format__(self, spec) -> str:
        return f"({_show(self.value)})"


def address(value) -> int:
    """The pointer C would pass for `value`: an int as uint64, None as NULL, a meta object as its handle."""
    if value is None:
        return 0
    if isinstance(value, numbers.Integral):
        return int(value) & MASK64
    handle = getattr(value, "handle", None)
    return handle if type(handle) is int else Foreign(value)


def live(addr: int, cls, what: str, code: int = INVALID):
    """The live object of type `cls` at a non-NULL handle address; a sanitizer report and `code` otherwise."""
    found = handles.lookup(addr, cls)
    if found is None:
        stale = handles.released_kind(addr)
        sanitizer.report(
            "invalid-handle",
            f"{what} {addr:#x} is " + (f"an already destroyed {stale}" if stale else f"not a live {cls.__name__}"),
            code=code,
        )
        raise AclError(code, f"{what} {addr:#x} is not a live {cls.__name__}", rule=f"handle.{what}")
    return found


# -- conversion per parameter kind -----------------------------------------------------------------
class _Wrong(Exception):
    """`value` is not what the parameter takes; `error` is the exception type run raises for it."""

    def __init__(self, expected: str, error=MisusedType):
        self.expected, self.error = expected, error


HANDLES = {
    "tensor": (Tensor, "an aclnn_emu.Tensor (a device tensor, e.g. from aclnn_emu.to_device)"),
    "tensor_list": (TensorList, "an aclTensorList (aclnn_emu.tensor_list([...]))"),
    "scalar": (Scalar, "an aclScalar (aclnn_emu.scalar(value, dtype))"),
}
BOOLS = (numbers.Integral, np.bool_)  # as C converts: any integer is true when not 0
ELEMENTS = {
    "int_array": (numbers.Integral, int, "integers"),
    "float_array": (numbers.Real, float, "numbers"),
    "bool_array": (BOOLS, bool, "booleans"),
}


def _handle(param, value, raw: bool):
    cls, expected = HANDLES[param.kind]
    if value is None:
        return None
    if not isinstance(value, cls):
        if host.kind(value):
            raise _Wrong(
                f"{expected} or None; host arrays go through aclnn_emu.ops.<Op>(...), which copies them to "
                "the device, or aclnn_emu.to_device(array)"
            )
        if not raw:
            raise _Wrong(f"{expected} or None")
        return live(address(value), cls, param.name)
    return live(value.handle, cls, param.name)


def _array(param, value, raw: bool):
    kind, convert, what = ELEMENTS[param.kind]
    if value is None:
        return None
    if isinstance(value, Array) or (raw and isinstance(value, numbers.Integral)):
        return live(address(value), Array, param.name).values
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, kind) for v in value):
        raise _Wrong(f"a list or tuple of {what} (or None)")
    return tuple(convert(v) for v in value)


def _int64(param, value, raw: bool):
    if not isinstance(value, numbers.Integral):
        raise _Wrong("an integer (int64_t)")
    if not -(1 << 63) <= value < 1 << 63:
        raise _Wrong("an integer in the int64_t range", MisusedValue)
    return int(value)


def _double(param, value, raw: bool):
    if not isinstance(value, numbers.Real):
        raise _Wrong("a number (double)")
    return float(value)


def _bool(param, value, raw: bool):
    if not isinstance(value, BOOLS):
        raise _Wrong("a bool")
    return bool(value)


def _string(param, value, raw: bool):
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")  # as the C binding reads a char *
    raise _Wrong("a str or bytes (or None)")


CONVERT = {
    "tensor": _handle,
    "tensor_list": _handle,
    "scalar": _handle,
    "int_array": _array,
    "float_array": _array,
    "bool_array": _array,
    "int64": _int64,
    "double": _double,
    "bool": _bool,
    "string": _string,
}


def _convert(op, values, raw: bool) -> list:
    if len(values) != len(op.params):
        names = ", ".join(p.name for p in op.params)
        raise MisusedType(
            f"{op.phase1} takes {len(op.params)} arguments ({names}), got {len(values)}"
            + (
                f": {', '.join(p.name for p in op.params[len(values) :])} missing"
                if len(values) < len(op.params)
                else ""
            )
        )
    out = []
    for param, value in zip(op.params, values):
        try:
            out.append(CONVERT[param.kind](param, value, raw))
        except _Wrong as wrong:
            message = f"argument {param.name} must be {wrong.expected}, got {_show(value)}"
            if raw:
                raise AclError(INVALID, message, rule=f"python.{param.name}") from None
            raise wrong.error(f"{op.phase1}: {message}") from None
    return out


def python(op, values) -> list:
    """`aclnn_emu.run`'s arguments: a wrong Python value raises TypeError/ValueError (a Misuse)."""
    return _convert(op, values, raw=False)


def raw(op, values) -> list:
    """`aclnn_emu.raw`'s arguments: a wrong value is an AclError with the code C would get."""
    return _convert(op, values, raw=True)
