"""Helpers for tests that go through the real C doors: compiled C++ programs and ctypes."""

import atexit
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np

from aclnn_emu import toolkit

C_DIR = pathlib.Path(__file__).resolve().parent / "c"
# The programs built in one test session; removed when the session's interpreter exits.
_BUILD = pathlib.Path(tempfile.mkdtemp(prefix="aclnn-emu-tests-"))
atexit.register(shutil.rmtree, _BUILD, ignore_errors=True)


def build(source) -> pathlib.Path:
    """Compile a C++ file with the official flags (cached per test session); fail loudly on errors."""
    source = pathlib.Path(source)
    if not source.is_absolute():
        source = C_DIR / source
    exe = _BUILD / source.stem
    if not exe.exists() or exe.stat().st_mtime < source.stat().st_mtime:
        result = toolkit.compile(source, exe)
        if result.returncode != 0:
            raise AssertionError(f"compiling {source.name} failed:\n{result.stderr}")
    return exe


def run(exe, *args, env=None, timeout=300) -> subprocess.CompletedProcess:
    """Run a built program in the toolkit environment plus `env` overrides."""
    full = toolkit.environment()
    full.update(env or {})
    return subprocess.run([str(exe), *map(str, args)], env=full, capture_output=True, text=True, timeout=timeout)


def compile_and_run(source, *args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return run(build(source), *args, env=env, timeout=timeout)


def rule_codes(output: str) -> dict[str, int]:
    """Parse the `<rule> <code>` lines a status-code test program prints."""
    codes = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            codes[parts[0]] = int(parts[1])
    return codes


def lcg_fp16(n: int, seed: int) -> np.ndarray:
    """tests/c/common.h's LcgFp16: a 32-bit LCG, bits 16..31 with the exponent kept finite."""
    out = np.empty(n, np.uint16)
    for i in range(n):
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        out[i] = (seed >> 16) & 0x7BFF
    return out.view(np.float16)


def rules(exe, *args, env=None) -> tuple[dict[str, int], str]:
    """Run a status-code program (it must exit 0); its `<rule> <code>` lines and its stderr."""
    result = run(exe, *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return rule_codes(result.stdout), result.stderr


def assert_rules_by_family(source, family, expected):
    """Run a status-code program on one chip family (ACLNN_EMU_SOC) and assert it reported exactly
    ``expected``: {rule: (code, the source file and function that decides it)}."""
    result = compile_and_run(source, env={"ACLNN_EMU_SOC": family})
    assert result.returncode == 0, result.stdout + result.stderr
    assert rule_codes(result.stdout) == {rule: code for rule, (code, _) in expected.items()}


def release_codes(source, family, version) -> dict[str, int]:
    """The codes a status-code program reports on one chip family under one CANN release."""
    result = compile_and_run(source, env={"ACLNN_EMU_SOC": family, "ACLNN_EMU_CANN_VERSION": version})
    assert result.returncode == 0, result.stdout + result.stderr
    return rule_codes(result.stdout)
