"""Every mutation in tests/mutations/catalogue.py still finds its target text, so a refactor that
moves the code it mutates shows up in the suite, not only when the mutation run is next made."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "mutations"))

from catalogue import MUTATIONS  # noqa: E402


def test_every_mutation_finds_its_target_text():
    stale = [
        f"{m.name}: {(ROOT / m.file).read_text().count(m.old)} occurrences in {m.file}, expected {m.count}"
        for m in MUTATIONS
        if (ROOT / m.file).read_text().count(m.old) != m.count
    ]
    assert not stale, "\n".join(stale)
