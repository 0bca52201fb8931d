"""The README's how-tos (a training step, a serving loop) run as written, each in a process of its
own; their own assertions hold the results against float64."""

import pathlib
import re
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
START, END = "## How-tos from Python", "## Shutdown, exit and fork"


def howtos() -> dict[str, str]:
    text = README.read_text()
    section = text[text.index(START) : text.index(END)]
    parts = re.split(r"^### (.*)$", section, flags=re.M)[1:]
    return {title: re.findall(r"```python\n(.*?)```", body, re.S) for title, body in zip(parts[::2], parts[1::2])}


def test_each_howto_has_one_program():
    assert [len(blocks) for blocks in howtos().values()] == [1, 1]


@pytest.mark.parametrize("title", list(howtos()))
def test_the_howto_runs_as_written(title, tmp_path):
    (block,) = howtos()[title]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sanitizer" not in done.stderr, done.stderr  # no race, no out-of-bounds access
