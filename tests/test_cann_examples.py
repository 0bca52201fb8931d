"""CANN's own operator examples (ops-transformer at the 8.5 tag the emulator follows) build with the
official recipe, run unchanged and print what the goldens predict (tests/golden/samples.py
EXAMPLES). The examples are read from a checkout named by CANN_OPS_TRANSFORMER (a work tree
or a bare repository; the tag is read with git), so nothing of them is kept in this repository."""

import os
import pathlib
import shutil
import subprocess

import pytest

from aclnn_emu import toolkit
from golden.samples import EXAMPLES

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = os.environ.get("CANN_OPS_TRANSFORMER")
TAG = "v8.5.0-beta.1"


def _example(path: str) -> bytes:
    shown = subprocess.run(["git", "-C", SOURCE, "show", f"{TAG}:{path}"], capture_output=True, check=True)
    return shown.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The examples beside the samples' CMakeLists.txt (the official recipe), built in one go."""
    src = tmp_path_factory.mktemp("examples")
    shutil.copy(ROOT / "samples" / "CMakeLists.txt", src)
    for path in EXAMPLES:
        (src / pathlib.Path(path).name).write_bytes(_example(path))
    build = src / "build"
    build.mkdir()
    result = subprocess.run(
        [
            "bash",
            "-c",
            f"source {toolkit.HOME}/set_env.sh && cmake .. -DCMAKE_CXX_COMPILER=g++ -DCMAKE_SKIP_RPATH=TRUE "
            ">/dev/null && make -j2 2>&1",
        ],
        cwd=build,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return build / "bin"


@pytest.mark.skipif(not SOURCE, reason="CANN_OPS_TRANSFORMER names no ops-transformer checkout")
@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_example_runs_unchanged(built, path):
    exe = built / pathlib.Path(path).stem
    result = subprocess.run([str(exe)], env=toolkit.environment(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if "result[" in line or line.startswith("index: ")]
    expected = EXAMPLES[path]()
    assert len(lines) == len(expected)
    wrong = [(i, got, want) for i, (got, want) in enumerate(zip(lines, expected)) if want is not None and got != want]
    assert not wrong, f"{len(wrong)} lines differ, first: {wrong[:1]}"
