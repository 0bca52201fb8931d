"""Opaque handles (aclrtStream, aclTensor*, aclOpExecutor*, ...) handed to C.

Each handle is a distinct address inside a reserved, inaccessible range, so it is non-null, never
collides with a real host pointer, faults if a program dereferences it, and any other pointer (say
`&stream` passed where `stream` was meant) is recognised as foreign instead of crashing us.
"""

import collections
import itertools
import threading
import weakref

from .errors import AclError
from .memory import _libc, _MAP_FAILED

_SPAN = 1 << 40  # virtual only (PROT_NONE, nothing committed): 2**36 handles before a wrap
_STEP = 16
# How many released handles keep their kind for diagnostics: a long-running program creates and
# destroys handles by the million, and only recent ones are worth naming ("an already destroyed
# Tensor"); an older stale handle is still refused, as "not a live Tensor", with the same code.
# Kept small: a table of tens of thousands, rebuilt as it churns, fragments the C heap (measured
# with benchmarks/bench_soak.py: RSS kept growing at 1 << 16, flat at 1 << 12).
_REMEMBERED = 1 << 12
_MAP_PRIVATE_ANON = 0x02 | 0x20

_base = _libc.mmap(None, _SPAN, 0, _MAP_PRIVATE_ANON, -1, 0)
if _base in (None, _MAP_FAILED):
    raise OSError("cannot reserve the handle range")
_counter = itertools.count(1)
_lock = threading.Lock()
_objects: dict[int, object] = {}
_released: collections.OrderedDict[int, str] = collections.OrderedDict()  # handle -> kind, oldest first


def register(obj) -> int:
    """A new handle for obj: not reused before the range wraps (so a stale handle is recognisable),
    and never one that is still live, even after a wrap."""
    with _lock:
        handle = _base + (next(_counter) * _STEP) % _SPAN
        while handle in _objects:
            handle = _base + (next(_counter) * _STEP) % _SPAN
        _objects[handle] = obj
        return handle


class _Weak(weakref.ref):
    """A handle whose object a Python program owns: it dies with the object."""

    __slots__ = ("kind",)

    def __init__(self, obj):
        super().__init__(obj)
        self.kind = type(obj).__name__


def weaken(handle: int) -> None:
    """Hold the object behind `handle` weakly (a tensor made by the Python API, which frees it when
    collected): from then on the handle is live while the object is. Its owner releases it."""
    with _lock:
        _objects[handle] = _Weak(_objects[handle])


def lookup(handle: int, cls):
    """The live object of type cls behind handle, or None."""
    obj = _objects.get(handle)
    if type(obj) is _Weak:
        obj = obj()
    return obj if isinstance(obj, cls) else None


def live(handle: int, cls, what: str, code: int, rule: str, gone: str = "an already destroyed"):
    """The live object of type cls behind handle; otherwise an AclError naming a stale handle of that
    type as `gone` (the C APIs give one code for stale and foreign handles)."""
    found = lookup(handle, cls)
    if found is None:
        stale = released_kind(handle) == cls.__name__
        raise AclError(code, f"{handle:#x} is {gone if stale else 'not a live'} {what}", rule=rule)
    return found


def release(handle: int) -> None:
    with _lock:
        obj = _objects.pop(handle, None)
        if obj is not None:
            _released[handle] = obj.kind if type(obj) is _Weak else type(obj).__name__
            if len(_released) > _REMEMBERED:
                _released.popitem(last=False)


def released_kind(handle: int) -> str | None:
    """The type name of the object a stale handle used to point at, if any."""
    return _released.get(handle)
