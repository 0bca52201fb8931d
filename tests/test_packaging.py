"""What the repository ships: no binary archives tracked, one version, a licence and a changelog.
(Building and installing the sdist and the wheel is .ci/run's job: it takes minutes.)"""

import pathlib
import re
import subprocess
import pytest

import aclnn_emu

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARCHIVE_SUFFIXES = (".whl", ".egg", ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".jar")
ARCHIVE_MAGIC = (b"PK\x03\x04", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"7z\xbc\xaf", b"\x28\xb5\x2f\xfd", b"Rar!")


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def tracked_files() -> list[pathlib.Path]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist)")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in listed.decode().split("\0") if name]


def is_archive(path: pathlib.Path) -> bool:
    if path.name.lower().endswith(ARCHIVE_SUFFIXES):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(8).startswith(ARCHIVE_MAGIC)
    except (FileNotFoundError, IsADirectoryError):  # deleted in the work tree, or a submodule
        return False


def test_no_binary_archive_is_tracked():
    archives = [str(p.relative_to(ROOT)) for p in tracked_files() if is_archive(p)]
    assert not archives, f"binary archives tracked in git (build them, do not commit them): {archives}"


def test_the_archive_check_sees_an_archive_by_name_and_by_content(tmp_path):
    (tmp_path / "tool-1.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "data.bin").write_bytes(b"PK\x03\x04rest")
    (tmp_path / "notes.txt").write_text("PK is a word")
    assert [is_archive(tmp_path / n) for n in ("tool-1.0-py3-none-any.whl", "data.bin", "notes.txt")] == [
        True,
        True,
        False,
    ]


def test_the_version_has_one_source_named_by_the_changelog():
    project = pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "aclnn_emu.__version__"}
    top = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert top and top.group(1) == aclnn_emu.__version__


def test_the_licence_is_apache_2():
    project = pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()
