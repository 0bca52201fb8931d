"""A library whose emulator cannot start answers every call with an error code (never 0), says in
two lines what is wrong and which command fixes it (once on stderr, and from aclGetRecentErrMsg),
and keeps its pure C helpers working."""

import os
import re
import subprocess
import sys

import cabi
from aclnn_emu import toolkit

CODES = {
    "aclInit": 500000,
    "aclrtSetDevice": 500000,
    "aclCreateTensor_is_null": 1,
    "phase1": 561000,
    "aclDestroyTensor": 561000,
    "aclFloatToFloat16": 0x3E00,
    "aclFloat16ToFloat_x4": 6,
    "aclDataTypeSize": 2,
}


def run_with_package(tmp_path, files: dict) -> tuple[str, str]:
    """Run boot_failure.cpp with a stand-in aclnn_emu package first on the embedded interpreter's path;
    returns (the message aclGetRecentErrMsg gave, stderr)."""
    for name, text in files.items():
        path = tmp_path / "aclnn_emu" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = cabi.compile_and_run("boot_failure.cpp", env={"ACLNN_EMU_PYTHONPATH": str(tmp_path)}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert cabi.rule_codes(result.stdout) == CODES
    messages = re.findall(r"message<<(.*?)>>", result.stdout, re.S)
    assert len(messages) == 2 and messages[0] == messages[1]
    assert result.stderr == messages[0] + "\n"  # printed once, though every call failed
    assert len(messages[0].splitlines()) == 2 and "Traceback" not in result.stderr
    return messages[0], result.stderr


def started_python(message: str) -> str:
    """The interpreter the message names (this checkout's editable install records this venv's)."""
    python = re.search(r"returns an error: (\S+) ", message)[1]
    assert os.path.realpath(python) == os.path.realpath(sys.executable) and os.path.isabs(python)
    return python


def test_import_error_names_the_error_and_the_reinstall_command(tmp_path):
    message, _ = run_with_package(tmp_path, {"__init__.py": "raise ImportError('simulated broken install')\n"})
    reason, fix = message.splitlines()
    python = started_python(message)
    assert reason == (
        f"aclnn-emu: cannot start the emulator, so every ACL call returns an error: {python} "
        f"cannot import the emulator: ImportError: simulated broken install"
    )
    # an editable install (this checkout) is reinstalled editable, with the interpreter that built it
    root = toolkit.HOME.parent.parent
    assert fix == (
        f"aclnn-emu: fix: reinstall aclnn-emu and its dependencies: `cd {root} && {python} -m pip "
        f"install -e .` (`{os.path.dirname(python)}/aclnn-emu doctor` checks the install)"
    )


def test_other_start_up_errors_are_shown_as_they_are(tmp_path):
    message, _ = run_with_package(tmp_path, {"__init__.py": "raise RuntimeError('no device memory setting')\n"})
    assert "failed to start the emulator: RuntimeError: no device memory setting" in message.splitlines()[0]
    assert "aclnn-emu doctor" in message.splitlines()[1]


def test_a_library_that_does_not_match_its_package_asks_for_a_rebuild(tmp_path):
    message, _ = run_with_package(
        tmp_path,
        {
            "__init__.py": "",
            "capi/__init__.py": "",
            "capi/bindings.py": "def attach(ffi, lib):\n    return ['aclInit']\n",
        },
    )
    reason, fix = message.splitlines()
    assert "does not match the aclnn_emu package beside it (LookupError: the package has no binding for " in reason
    assert re.search(r"for \w+, \w+, \w+ and \d+ more\)$", reason)
    bin_dir = re.fullmatch(r"aclnn-emu: fix: rebuild it: `(\S+)/aclnn-emu build`", fix)[1]
    assert os.path.realpath(bin_dir) == os.path.realpath(os.path.dirname(sys.executable))


def test_first_call_from_a_running_interpreter_after_capsule_lookups():
    """Loading the library with ctypes after the PyCapsule type was tagged by the type cache (numpy
    and torch do that) must not hang in cffi's start-up lock (regression)."""
    script = f"""
import ctypes, datetime
capsule = datetime.datetime_CAPI
for _ in range(3):
    getattr(capsule, "missing", None)      # tags PyCapsule_Type in the type cache
lib = ctypes.CDLL({str(toolkit.LIBRARY)!r})
print(lib.aclSetAclOpExecutorRepeatable(None))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "561103", result.stderr
