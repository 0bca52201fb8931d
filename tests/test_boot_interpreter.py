"""The library starts the Python of the environment it is installed in, whatever the caller's
environment holds: run from `env -i` (only set_env.sh, or only LD_LIBRARY_PATH), with another
python3 first on PATH, PYTHONHOME and PYTHONPATH pointing elsewhere. A library installed into
another environment than the one that built it uses that environment."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

import cabi
from aclnn_emu import toolkit

CLEAN = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin"}


def run_clean(exe, *args, env=None, set_env=True, timeout=60) -> subprocess.CompletedProcess:
    """Run `exe` under env -i with only `env`, and set_env.sh sourced (or only LD_LIBRARY_PATH)."""
    env = {**CLEAN, **(env or {})}
    if set_env:
        command = ["bash", "-c", 'source "$0/set_env.sh" && exec "$@"', str(toolkit.HOME), str(exe), *map(str, args)]
    else:
        env.setdefault("LD_LIBRARY_PATH", str(toolkit.HOME / "lib64"))
        command = [str(exe), *map(str, args)]
    return subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *command], capture_output=True, text=True, timeout=timeout
    )


def same_file(a, b) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def python_seen(result) -> dict:
    assert result.returncode == 0, result.stdout + result.stderr
    assert "aclInit 0" in result.stdout and "signals_default 1" in result.stdout and "locale C" in result.stdout
    return json.loads(result.stdout.split("python ", 1)[1].splitlines()[0])


@pytest.fixture
def hostile(tmp_path) -> dict:
    """Another python3 first on PATH, and PYTHONHOME/PYTHONPATH that would break the start if used."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "bin" / "python3").chmod(0o755)
    (tmp_path / "aclnn_emu").mkdir()
    (tmp_path / "aclnn_emu" / "__init__.py").write_text("raise ImportError('PYTHONPATH was used')\n")
    return {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "PYTHONHOME": str(tmp_path),
        "PYTHONPATH": str(tmp_path),
        "PYTHONNOUSERSITE": "",
        "PYTHONSTARTUP": str(tmp_path / "missing.py"),
    }


@pytest.mark.parametrize("set_env", [True, False], ids=["set_env.sh", "LD_LIBRARY_PATH"])
def test_clean_environment_uses_the_install_python(set_env, hostile):
    seen = python_seen(run_clean(cabi.build("boot_interpreter.cpp"), env=hostile, set_env=set_env))
    assert same_file(seen["executable"], sys.executable)  # this checkout's editable install records it
    assert (seen["prefix"], seen["base_prefix"]) == (sys.prefix, sys.base_prefix)
    assert seen["version"] == list(sys.version_info[:2])
    assert seen["os"] == os.path.join(sysconfig.get_path("stdlib"), "os.py")
    assert pathlib.Path(seen["aclnn_emu"]).parent == toolkit.HOME.parent
    assert seen["isolated"] == 1
    assert not any(hostile["PYTHONPATH"] in entry for entry in seen["path"])


def test_aclnn_emu_pythonpath_comes_first_and_adds_to_the_path(tmp_path):
    extra = [tmp_path / "a", tmp_path / "b"]
    seen = python_seen(
        run_clean(cabi.build("boot_interpreter.cpp"), env={"ACLNN_EMU_PYTHONPATH": os.pathsep.join(map(str, extra))})
    )
    assert seen["path"][:2] == [str(p) for p in extra]
    assert os.path.join(sysconfig.get_path("stdlib")) in seen["path"]
    assert sysconfig.get_path("purelib") in seen["path"]


def test_first_calls_from_several_threads_at_once():
    result = run_clean(cabi.build("boot_threads.cpp"))
    assert result.returncode == 0 and result.stdout == "failed_calls 0\n", result.stdout + result.stderr


def test_a_spec_sample_runs_in_a_clean_environment():
    sample = toolkit.HOME.parent.parent / "samples" / "aclnnScatterPaKvCache.cpp"
    result = run_clean(cabi.build(sample))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result[0] is:" in result.stdout and "cannot start" not in result.stderr


@pytest.fixture(scope="module")
def relocated(tmp_path_factory) -> pathlib.Path:
    """A library built by an interpreter that no longer exists (a wheel built in a throw-away
    environment), installed into a fresh venv whose site-packages also holds the package."""
    pytest.importorskip("setuptools", reason="cffi needs setuptools to compile on Python 3.12+")
    root = tmp_path_factory.mktemp("relocated")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    shutil.copytree(toolkit.HOME.parent, site / "aclnn_emu", ignore=shutil.ignore_patterns("_toolkit", "__pycache__"))
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")  # numpy, cffi, ml_dtypes
    gone = root / "gone" / "bin" / "python3"
    build = (
        f"import sys; sys.executable = {str(gone)!r}; from aclnn_emu.shim.build import build; "
        f"build(__import__('pathlib').Path({str(site / 'aclnn_emu' / '_toolkit')!r}))"
    )
    subprocess.run([sys.executable, "-c", build], check=True, capture_output=True, timeout=300)
    return venv


def test_a_library_installed_elsewhere_uses_that_environment(relocated):
    site = next(relocated.glob("lib/python*/site-packages"))
    lib64 = site / "aclnn_emu" / "_toolkit" / "lib64"
    seen = python_seen(
        run_clean(cabi.build("boot_interpreter.cpp"), set_env=False, env={"LD_LIBRARY_PATH": str(lib64)})
    )
    assert seen["executable"] == str(relocated / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}")
    assert seen["prefix"] == str(relocated)
    assert seen["aclnn_emu"] == str(site / "aclnn_emu" / "__init__.py")


def test_no_python_to_run_it_is_said_in_two_lines(relocated, tmp_path):
    lib64 = next(relocated.glob("lib/python*/site-packages")) / "aclnn_emu" / "_toolkit" / "lib64"
    moved = shutil.copytree(lib64, tmp_path / "lib64")  # neither beside a Python nor built by one alive
    result = run_clean(cabi.build("boot_failure.cpp"), set_env=False, env={"LD_LIBRARY_PATH": str(moved)})
    assert cabi.rule_codes(result.stdout)["aclInit"] == 500000
    reason, fix = result.stderr.splitlines()
    assert reason.endswith(
        f"no Python to run it: {relocated.parent / 'gone' / 'bin' / 'python3'} do not exist "
        f"(the library is {moved / 'libascendcl.so'})"
    )
    assert fix.startswith("aclnn-emu: fix: reinstall aclnn-emu with the Python it should use: `python3.")


def test_a_deleted_editable_install_is_repaired_editable_in_its_checkout(tmp_path):
    """A checkout whose library was built by a venv since deleted: the fix is an editable install in
    that checkout (a regular reinstall would leave the checkout's library as it is)."""
    pytest.importorskip("setuptools", reason="cffi needs setuptools to compile on Python 3.12+")
    checkout = tmp_path / "checkout"
    shutil.copytree(
        toolkit.HOME.parent, checkout / "aclnn_emu", ignore=shutil.ignore_patterns("_toolkit", "__pycache__")
    )
    (checkout / "setup.py").write_text("")  # what makes a directory a checkout to the library
    gone = tmp_path / "deleted-venv" / "bin" / "python3"
    build = (
        f"import sys; sys.executable = {str(gone)!r}; from aclnn_emu.shim.build import build; "
        f"build(__import__('pathlib').Path({str(checkout / 'aclnn_emu' / '_toolkit')!r}))"
    )
    subprocess.run([sys.executable, "-c", build], check=True, capture_output=True, timeout=300)
    lib64 = checkout / "aclnn_emu" / "_toolkit" / "lib64"
    result = run_clean(cabi.build("boot_failure.cpp"), set_env=False, env={"LD_LIBRARY_PATH": str(lib64)})
    assert cabi.rule_codes(result.stdout)["aclInit"] == 500000
    reason, fix = result.stderr.splitlines()
    assert reason.endswith(f"no Python to run it: {gone} do not exist (the library is {lib64 / 'libascendcl.so'})")
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert fix == (
        f"aclnn-emu: fix: reinstall aclnn-emu with the Python it should use: `cd {checkout} && {version} -m pip "
        "install -e .`"
    )
