"""The functions CANN's public runtime headers declare, read from our copies of those headers.

include/acl/acl_rt.h, acl_base_rt.h and acl_rt_allocator.h are the one source of truth for what
libascendcl.so exports: every declaration there becomes an exported function, bound to Python when
the emulator implements it (prototypes.py), otherwise a generated refusal (shim/refusals.py)."""

import dataclasses
import functools
import pathlib
import re

RUNTIME_HEADERS = ("acl_rt.h", "acl_base_rt.h", "acl_rt_allocator.h")

# One declaration per line in our headers; a deprecated one carries ACL_DEPRECATED_MESSAGE first.
_LINE = re.compile(
    r"^(?:ACL_DEPRECATED_MESSAGE\(\"[^\"]*\"\)\s*)?ACL_FUNC_VISIBILITY\s+"
    r"(?P<ret>.+?[\s*])(?P<name>\w+)\s*\((?P<params>.*)\);$",
    re.M,
)


@dataclasses.dataclass(frozen=True)
class Declaration:
    name: str
    ret: str  # the return type as spelled, e.g. "aclError", "const char *"
    params: str  # the parameter list as spelled ("" for none)
    header: str

    @property
    def returns_status(self) -> bool:
        return self.ret == "aclError"


def include_dir() -> pathlib.Path:
    """The headers: include/ of a source checkout, else the built toolkit's copy."""
    from .. import toolkit

    package = pathlib.Path(__file__).resolve().parents[1]
    source = package.parent / "include"
    return source if (source / "acl").is_dir() else toolkit.HOME / "include"


def parse(text: str, header: str) -> list[Declaration]:
    return [
        Declaration(m["name"], " ".join(m["ret"].split()), m["params"].strip(), header) for m in _LINE.finditer(text)
    ]


@functools.cache
def runtime_declarations() -> tuple[Declaration, ...]:
    """Every function of the three public runtime headers, in header order."""
    acl = include_dir() / "acl"
    return tuple(d for header in RUNTIME_HEADERS for d in parse((acl / header).read_text(), header))
