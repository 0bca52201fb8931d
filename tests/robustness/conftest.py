"""The robustness suite: every case runs in a process of its own (and its own process group) under a
time limit, so a hang or a crash fails that case, with what it printed so far, not the whole run.

`isolated.c(source, *args)` builds a C++ program of tests/c/ and runs it; `isolated.python(script,
*args)` runs a Python script with this interpreter; both in the toolkit's environment plus `env`.
"""

import os
import signal
import subprocess
import sys

import pytest

import cabi
from aclnn_emu import toolkit

CASE_TIMEOUT_S = 120


class Isolated:
    def c(self, source, *args, env=None, timeout=CASE_TIMEOUT_S) -> subprocess.CompletedProcess:
        return self.run([str(cabi.build(source)), *map(str, args)], env, timeout)

    def python(self, script, *args, env=None, timeout=CASE_TIMEOUT_S) -> subprocess.CompletedProcess:
        return self.run([sys.executable, "-c", script, *map(str, args)], env, timeout)

    @staticmethod
    def run(argv, env=None, timeout=CASE_TIMEOUT_S) -> subprocess.CompletedProcess:
        full = toolkit.environment()
        full.update(env or {})
        name = " ".join(os.path.basename(a) for a in argv[:2])
        with subprocess.Popen(
            argv, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        ) as process:
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # forked children too
                stdout, stderr = process.communicate()
                pytest.fail(f"{name} hung: still running after {timeout} s\n--- stdout\n{stdout}\n--- stderr\n{stderr}")
        if process.returncode < 0:
            pytest.fail(
                f"{name} was killed by {signal.Signals(-process.returncode).name}\n--- stdout\n{stdout}\n"
                f"--- stderr\n{stderr}"
            )
        return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


@pytest.fixture
def isolated() -> Isolated:
    return Isolated()
