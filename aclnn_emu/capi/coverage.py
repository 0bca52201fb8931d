"""The runtime rows of docs/coverage.md: every declared runtime function with whether it is
emulated (the refusals name their code), then the aclnn meta functions."""

from ..runtime import unsupported
from .declarations import runtime_declarations
from .prototypes import runtime_prototypes


def runtime_rows() -> list[str]:
    bound = {p.name: p for p in runtime_prototypes()}
    rows = []
    for d in runtime_declarations():
        state = "yes" if d.name in bound or d.name == "aclAppLog" else f"no: returns {unsupported.code_of(d.name)}"
        rows.append(f"| `{d.name}` | acl/{d.header} | {state} |")
    declared = {d.name for d in runtime_declarations()}
    rows += [f"| `{p.name}` | {p.headers} | yes |" for p in bound.values() if p.name not in declared]
    return rows
