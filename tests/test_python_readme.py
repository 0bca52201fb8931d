"""The README's Python section runs as written, and its pytest-plugin example passes as a test file
of its own (also spread over two pytest-xdist workers); the plugin fails a test the sanitizer
reported on and runs a test on every chip when asked. Each in a process of its own."""

import pathlib
import re
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _blocks(start: str, end: str) -> list[str]:
    text = README.read_text()
    section = text[text.index(start) : text.index(end)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _run(args, cwd, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _pytest(tmp_path, source: str, *options) -> subprocess.CompletedProcess:
    (tmp_path / "test_example.py").write_text(source)
    return _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *options, "test_example.py"], tmp_path)


def test_the_python_section_runs(tmp_path):
    blocks = _blocks("## Using it from Python", "### Conformance tests with the pytest plugin")
    assert len(blocks) == 4
    for block in blocks:
        done = _run(["-c", block], tmp_path)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("options", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_the_plugin_example_passes(tmp_path, options):
    pytest.importorskip("xdist") if options else None
    (example,) = _blocks("### Conformance tests with the pytest plugin", "## How-tos from Python")
    done = _pytest(tmp_path, example, *options)
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout + done.stderr


FINDINGS = """
import aclnn_emu as ae
from aclnn_emu.runtime import api


KEPT = []


def test_leak(acl_device):
    KEPT.append(ae.empty((4,), ae.DataType.ACL_FLOAT))  # still referenced when the test ends


def test_clean(acl_device):
    ae.free(ae.empty((4,), ae.DataType.ACL_FLOAT))


def test_let_go(acl_device):
    t = ae.to_device([1.0, 2.0])
    cycle = [ae.empty((4,), ae.DataType.ACL_FLOAT)]
    cycle.append(cycle)  # collected with its tensor: neither is a leak


def test_chip(aclnn_soc, aclnn_strict):
    from aclnn_emu import config, platform
    assert api.soc_name() == platform.part(aclnn_soc).name and config.current.strict
"""


def test_an_unexpected_report_fails_and_every_chip_runs(tmp_path):
    done = _pytest(tmp_path, FINDINGS, "--aclnn-soc=all")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "ERROR test_example.py::test_leak" in out and "sanitizer_expected('leak')" in out
    assert "PASSED test_example.py::test_clean" in out and "PASSED test_example.py::test_let_go" in out
    for soc in ("Ascend910B", "Ascend910_93", "Ascend910_95"):
        assert f"PASSED test_example.py::test_chip[{soc}]" in out
    refused = _pytest(tmp_path, FINDINGS, "--aclnn-soc=Ascend310")
    assert refused.returncode != 0 and "unknown chip(s) Ascend310" in refused.stdout + refused.stderr
