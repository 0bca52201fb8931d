"""ACLNN_EMU_* settings: one checked place, one line per bad value, documented codes, a fix at aclInit."""

import re
import subprocess
import sys

import pytest

import cabi
from aclnn_emu import config, toolkit

BAD = {
    "ACLNN_EMU_SOC": "Ascend310P",
    "ACLNN_EMU_SANITIZE": "loud",
    "ACLNN_EMU_DEVICE_MEMORY": "bogus",
    "ACLNN_EMU_LOG": "verbose",
    "ACLNN_EMU_STRICT": "maybe",
    "ACLNN_EMU_SYNC": "2",
    "ACLNN_EMU_DEVICE_COUNT": "0",
}


def _one_line(stderr: str, variable: str, value: str) -> str:
    """The single stderr line about the bad value; it names the variable, the value and what is allowed."""
    lines = [line for line in stderr.splitlines() if variable in line]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert f"{variable}={value!r}" in lines[0] and config.BY_VARIABLE[variable].allowed in lines[0]
    return lines[0]


@pytest.mark.parametrize("variable", sorted(BAD))
def test_a_bad_value_fails_every_call_but_the_pure_helpers(variable):
    result = cabi.compile_and_run("settings.cpp", "calls", env={variable: BAD[variable]}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == {
        "version": 0,
        "f2h_one": 0x3C00,
        "size_fp16": 2,
        "init": 100000,
        "set_device": 100000,
        "device_count": 100000,
        "device_count_untouched": 1,
        "malloc": 100000,
        "soc_name_is_null": 1,
        "create_tensor_is_null": 1,
        "destroy_tensor": 161002,
        "phase1": 161002,
        "phase2": 161002,
        "finalize": 100000,
    }
    line = _one_line(result.stderr, variable, BAD[variable])
    problem = line.removeprefix("aclnn-emu: ")
    messages = dict(re.findall(r"^msg\.(\S+) (.*)$", result.stdout, re.M))
    assert messages["init"].endswith(f"ACL_ERROR_INVALID_PARAM(100000): aclInit: {problem}")
    assert messages["set_device"].endswith(f"ACL_ERROR_INVALID_PARAM(100000): aclrtSetDevice: {problem}")
    assert messages["create_tensor"].endswith(f"ACLNN_ERR_PARAM_INVALID(161002): aclCreateTensor: {problem}")
    assert messages["phase1"].endswith(
        f"ACLNN_ERR_PARAM_INVALID(161002): aclnnScatterPaKvCacheGetWorkspaceSize: {problem}"
    )


def test_the_fixed_environment_works_from_aclInit_on():
    result = cabi.compile_and_run("settings.cpp", "fix", env={"ACLNN_EMU_SOC": "Ascend310P"}, timeout=120)
    assert cabi.rule_codes(result.stdout) == {
        "size_fp16": 2,
        "before_init": 100000,
        "init": 0,
        "set_device": 0,
        "malloc": 0,
        "free": 0,
        "reset": 0,
        "finalize": 0,
    }
    assert "soc Ascend910_95" in result.stdout  # the program's setenv, in its canonical spelling
    _one_line(result.stderr, "ACLNN_EMU_SOC", "Ascend310P")


@pytest.mark.parametrize(
    "given, shown",
    [
        ("ascend910_93", "Ascend910_9392"),
        (" ASCEND910_95 ", "Ascend910_9599"),
        ("", "Ascend910B2"),
        ("ascend910b4-1", "Ascend910B4-1"),
    ],
)
def test_chip_names_in_any_case(given, shown):
    result = cabi.compile_and_run("runtime_env.cpp", "soc", env={"ACLNN_EMU_SOC": given}, timeout=120)
    assert result.returncode == 0 and f"soc {shown}\n" in result.stdout, result.stdout + result.stderr
    assert result.stderr == ""


def test_spellings_of_flags_sizes_and_counts():
    def parsed(**env):
        settings, errors, unknown = config.check(env)
        assert errors == [] and unknown == []
        return settings

    for text in ("1", "true", "YES", "On"):
        assert parsed(ACLNN_EMU_STRICT=text).strict and parsed(ACLNN_EMU_SYNC=text).sync
    for text in ("0", "False", "no", "OFF", " "):
        assert not parsed(ACLNN_EMU_STRICT=text).strict
    for text, size in (("512M", 512 << 20), ("1.5g", 3 << 29), ("2GiB", 2 << 30), ("4096", 4096), ("16T", 16 << 40)):
        assert parsed(ACLNN_EMU_DEVICE_MEMORY=text).device_memory == size
    assert parsed(ACLNN_EMU_SANITIZE="ERROR", ACLNN_EMU_LOG="Debug").sanitize == "error"
    for variable, value in (
        ("ACLNN_EMU_DEVICE_MEMORY", "17T"),
        ("ACLNN_EMU_DEVICE_MEMORY", "0"),
        ("ACLNN_EMU_DEVICE_MEMORY", "-1G"),
        ("ACLNN_EMU_DEVICE_COUNT", "1.5"),
        ("ACLNN_EMU_DEVICE_COUNT", "2147483648"),
    ):
        settings, errors, _ = config.check({variable: value})
        assert errors == [f"{variable}={value!r} is not allowed: use {config.BY_VARIABLE[variable].allowed}"]
        assert settings == config.Config(**config.DEFAULTS)


def test_an_unknown_setting_is_named_once_and_changes_nothing():
    result = cabi.compile_and_run("settings.cpp", "fix", env={"ACLNN_EMU_SANITISE": "off"}, timeout=120)
    assert cabi.rule_codes(result.stdout)["before_init"] == 0
    assert result.stderr.splitlines() == [
        "aclnn-emu warning: ACLNN_EMU_SANITISE is not a setting of aclnn-emu and is ignored; "
        "did you mean ACLNN_EMU_SANITIZE?"
    ]


CTYPES = f"""
import ctypes, os
lib = ctypes.CDLL({str(toolkit.LIBRARY)!r})
lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
print("set_device", lib.aclrtSetDevice(0))
print("msg", lib.aclGetRecentErrMsg().decode())
print("init", lib.aclInit(None))
os.environ["ACLNN_EMU_DEVICE_MEMORY"] = "1g"
print("fixed_init", lib.aclInit(None))
print("fixed_set_device", lib.aclrtSetDevice(0))
"""


def test_through_ctypes_in_a_python_process():
    result = subprocess.run(
        [sys.executable, "-c", CTYPES],
        capture_output=True,
        text=True,
        timeout=120,
        env={**toolkit.environment(), "ACLNN_EMU_DEVICE_MEMORY": "lots"},
    )
    codes = cabi.rule_codes(result.stdout)
    assert codes == {"set_device": 100000, "init": 100000, "fixed_init": 0, "fixed_set_device": 0}, result.stderr
    line = _one_line(result.stderr, "ACLNN_EMU_DEVICE_MEMORY", "lots")
    assert f"aclrtSetDevice: {line.removeprefix('aclnn-emu: ')}" in result.stdout


PYTHON_API = """
import os
import aclnn_emu as ae
print("raw", ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*[None] * 12)[0])
try:
    ae.to_device([1.0])
except ae.AclnnError as exc:
    print("to_device", exc.status)
    print("message", exc.message)
os.environ["ACLNN_EMU_SOC"] = "ascend910_95"
print("fixed", ae.numpy(ae.to_device([2.0]))[0] == 2.0)
print("soc", ae.api.rt.soc_name())
"""


def test_through_the_python_api():
    result = subprocess.run(
        [sys.executable, "-c", PYTHON_API],
        capture_output=True,
        text=True,
        timeout=120,
        env={**toolkit.environment(), "ACLNN_EMU_SOC": "Ascend310P"},
    )
    assert cabi.rule_codes(result.stdout) == {"raw": 161002, "to_device": 100000}, result.stderr
    line = _one_line(result.stderr, "ACLNN_EMU_SOC", "Ascend310P")
    assert f"message {line.removeprefix('aclnn-emu: ')}\n" in result.stdout
    assert "fixed True\nsoc Ascend910_9599\n" in result.stdout


def _cli(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "aclnn_emu.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**toolkit.environment(), **env},
    )


def test_help_runs_and_shows_the_problem():
    result = _cli("--help", env={"ACLNN_EMU_SANITIZE": "loud"})
    assert result.returncode == 0 and "usage: aclnn-emu" in result.stdout
    _one_line(result.stderr, "ACLNN_EMU_SANITIZE", "loud")
    assert re.search(r"ACLNN_EMU_SANITIZE +loud +warn, off, error", result.stdout)


def test_doctor_names_the_bad_setting():
    result = _cli("doctor", env={"ACLNN_EMU_SOC": "Ascend310P", "ACLNN_EMU_SYNK": "1"})
    assert result.returncode == 1
    assert (
        "[FAIL] settings (ACLNN_EMU_*) valid\n       ACLNN_EMU_SOC='Ascend310P' is not allowed: use "
        f"{config.BY_VARIABLE['ACLNN_EMU_SOC'].allowed}\n"
    ) in result.stdout
    assert (
        "[warn] ACLNN_EMU_SYNK is not a setting of aclnn-emu and is ignored; did you mean ACLNN_EMU_SYNC?"
        in result.stdout
    )
    assert re.search(r"ACLNN_EMU_SOC +Ascend310P", result.stdout)


def test_run_names_a_bad_setting_once_for_itself_and_its_program():
    """`aclnn-emu run` and the program it starts read the same settings: one line, not one each."""
    result = _cli(
        "run", str(cabi.C_DIR / "settings.cpp"), "calls", env={"ACLNN_EMU_STRICT": "maybe", "ACLNN_EMU_SYNK": "1"}
    )
    assert cabi.rule_codes(result.stdout)["init"] == 100000, result.stderr
    _one_line(result.stderr, "ACLNN_EMU_STRICT", "maybe")
    assert [line for line in result.stderr.splitlines() if "ACLNN_EMU_SYNK" in line] == [
        "aclnn-emu warning: ACLNN_EMU_SYNK is not a setting of aclnn-emu and is ignored; did you mean ACLNN_EMU_SYNC?"
    ]


def test_a_misspelt_soc_gets_a_short_line_with_the_closest_name():
    result = _cli("doctor", env={"ACLNN_EMU_SOC": "Ascend910"})
    (line,) = [line for line in result.stdout.splitlines() if "ACLNN_EMU_SOC='Ascend910'" in line]
    assert "is not allowed (did you mean Ascend910B?): use a family name" in line and len(line) < 300
    assert "(did you mean" not in config.BY_VARIABLE["ACLNN_EMU_SOC"].rejected("Ascend310P")  # nothing close


def test_readme_lists_every_setting_as_config_checks_it():
    readme = (cabi.C_DIR.parent.parent / "README.md").read_text()
    section = readme.split("\n## Environment\n", 1)[1].split("\n## ", 1)[0]
    row = r"^\| `(ACLNN_EMU_\w+)` \| `?([^|`]*)`? \| ([^|]*) \|"
    rows = {m[0]: (m[1], m[2]) for m in re.findall(row, section, re.M)}
    assert rows == {s.variable: (s.default or "unset", s.allowed) for s in config.SETTINGS}
