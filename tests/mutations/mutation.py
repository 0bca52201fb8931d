"""One source mutation: replace a snippet of a file in a copy of the checkout."""

import dataclasses
import pathlib


@dataclasses.dataclass(frozen=True)
class Mutation:
    """`old` must occur exactly `count` times in `file` (relative to the checkout), so an entry that
    no longer matches the source fails loudly instead of silently testing nothing; every occurrence
    becomes `new`. `tests`: pytest node ids or files (relative to the checkout) that must catch it."""

    name: str
    file: str
    old: str
    new: str
    tests: tuple
    count: int = 1

    def apply(self, root: pathlib.Path) -> None:
        path = root / self.file
        text = path.read_text()
        found = text.count(self.old)
        if found != self.count:
            raise ValueError(
                f"mutation {self.name}: {self.old!r} occurs {found} times in {self.file}, expected {self.count}"
            )
        path.write_text(text.replace(self.old, self.new))
