"""The calls the emulator itself refuses or only warns about, declared once per operator.

An op module (or a helper module of one op) declares each list once,
`NAME = Gaps(OP, kind, {key: description})` (OP or the op's name), and raises by key
(`NAME.refuse("key", detail)`, or `NAME.warn(env, "key", detail)` for an inferred rule); the rule id
is `<kind>.<key>`. `aclnn-emu coverage` lists every declaration under its kind's heading, so the table and the raising code cannot drift apart (tests/test_gaps.py checks that
no op raises 561003 or an inferred rule outside a declaration).
"""

from typing import NoReturn

from .. import status
from .signature import OpError

FIND_KERNEL = status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR

# kind -> the coverage heading. The first three are refusals the emulator chooses (561003 unless a
# declaration names another code); no_kernel is the source's own gap, declared so that it is listed;
# "inferred" rules warn and fail only under ACLNN_EMU_STRICT=1.
KINDS = {
    "not_implemented": "Paths not implemented (the 8.5 source runs them; phase 1 returns 561003)",
    "refused": "Calls refused because the 8.5 kernels would read past an input",
    "unestablished": "Calls whose kernel behaviour the 8.5 source does not establish (phase 1 returns 561003)",
    "no_kernel": "Calls for which the 8.5 source builds no kernel (phase 1 returns 561003)",
    "inferred": "Inferred rules: a portability warning, an error only under ACLNN_EMU_STRICT=1",
}
_SUFFIX = {
    "not_implemented": "is not implemented in aclnn-emu",
    "refused": "aclnn-emu refuses it rather than read past the input",
    "unestablished": "the 8.5 source does not establish how the kernel behaves, so aclnn-emu does not run it",
    "no_kernel": "CANN 8.5 has no kernel for it",
}


_DECLARED: dict[str, list] = {}  # op name -> its Gaps, in declaration order


class Gaps:
    """One operator's declared rules of one kind: key -> what the rule covers."""

    def __init__(self, op, kind: str, entries: dict[str, str], code: int = FIND_KERNEL):
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        self.op_name = op if isinstance(op, str) else op.name
        self.kind, self.entries, self.code = kind, dict(entries), code
        _DECLARED.setdefault(self.op_name, []).append(self)

    def __getitem__(self, key: str) -> str:
        return self.entries[key]

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def rule(self, key: str) -> str:
        self.entries[key]  # an undeclared key fails here, loudly
        return f"{self.kind}.{key}"

    def _message(self, key: str, detail: str) -> str:
        return f"{self.entries[key]}{f' ({detail})' if detail else ''}"

    def refuse(self, key: str, detail: str = "") -> NoReturn:
        """Fail the call with the declared code under rule `<kind>.<key>`."""
        if self.kind == "inferred":
            raise TypeError("inferred rules warn: use warn(env, key, detail)")
        raise OpError(self.code, f"{self._message(key, detail)}: {_SUFFIX[self.kind]}", rule=self.rule(key))

    def warn(self, env, key: str, detail: str = "") -> None:
        """An inferred rule: a portability warning, the declared code under ACLNN_EMU_STRICT=1."""
        if self.kind != "inferred":
            raise TypeError(f"{self.kind} rules refuse: use refuse(key, detail)")
        env.inferred(self.code, self.rule(key), self._message(key, detail))


def declared(ops) -> dict[str, list[tuple]]:
    """kind -> [(op, code, key, description)] over `ops`, in declaration order."""
    table = {kind: [] for kind in KINDS}
    for op in ops:
        for gaps in _DECLARED.get(op.name, ()):
            table[gaps.kind] += [(op, gaps.code, key, text) for key, text in gaps.entries.items()]
    return table
