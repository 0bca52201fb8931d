"""The aclnn-emu command: env, doctor, run, samples; and what a regular install ships."""

import contextlib
import os
import pathlib
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest

from aclnn_emu import process, toolkit


def cli(*args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "aclnn_emu.cli", *args], capture_output=True, text=True, timeout=300, **kwargs
    )


def test_env_exports_what_set_env_sh_exports():
    result = cli("env")
    assert result.returncode == 0
    script = f'eval "{result.stdout}"; echo "$ASCEND_HOME_PATH|$ASCEND_TOOLKIT_HOME|$ASCEND_OPP_PATH|$LD_LIBRARY_PATH"'
    via_cli = subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout
    via_sh = subprocess.run(
        [
            "bash",
            "-c",
            f'source {toolkit.HOME}/set_env.sh; echo "$ASCEND_HOME_PATH|'
            '$ASCEND_TOOLKIT_HOME|$ASCEND_OPP_PATH|$LD_LIBRARY_PATH"',
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    home, toolkit_home, opp, ld = via_cli.strip().split("|")
    assert home == toolkit_home == str(toolkit.HOME) and opp == f"{toolkit.HOME}/opp"
    assert ld.split(":")[0] == f"{toolkit.HOME}/lib64"
    assert via_sh.strip().split("|")[:3] == [home, toolkit_home, opp]


def test_doctor_passes_on_a_working_install():
    result = cli("doctor")
    assert result.returncode == 0, result.stdout
    assert "[FAIL]" not in result.stdout and "a C++ program runs against the toolkit" in result.stdout


def test_doctor_explains_a_broken_install(tmp_path):
    broken = tmp_path / "aclnn_emu"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('simulated')\n")
    result = cli("doctor", env={**toolkit.environment(), "ACLNN_EMU_PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    assert "[FAIL] a C++ program runs against the toolkit" in result.stdout
    assert "500000" in result.stdout


def test_doctor_runs_without_numpy_and_says_how_to_install_it(tmp_path):
    """A venv with nothing but this checkout on its path: no numpy, ml_dtypes or cffi."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "checkout.pth").write_text(str(ROOT) + "\n")
    python = str(venv / "bin" / "python")
    result = subprocess.run(
        [python, "-m", "aclnn_emu.cli", "doctor"], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert result.returncode == 1, result.stdout + result.stderr
    fail = result.stdout.split("[FAIL] dependencies importable (numpy, ml_dtypes, cffi)\n", 1)[1].splitlines()[0]
    assert re.fullmatch(rf"\s+{re.escape(python)} cannot import numpy\S*, ml_dtypes\S*, cffi\S*: run `.*`", fail)
    assert f"`{python} -m pip install 'numpy" in fail
    used = subprocess.run(
        [python, "-c", "import aclnn_emu as ae; ae.to_device"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert "ModuleNotFoundError: aclnn_emu needs numpy" in used.stderr and "aclnn-emu doctor" in used.stderr


# --- run and samples, through the command as a user starts it ------------------------------------

ROOT = pathlib.Path(__file__).resolve().parent.parent
C_DIR = ROOT / "tests" / "c"
CHILD = C_DIR / "cli_child.cpp"  # out 1, err 1, waits for "exit N" / "signal N" on stdin, out 2, err 2
LINES = C_DIR / "cli_lines.cpp"  # "line 1" ... "line 100", exit 0
LEAK_LINES = C_DIR / "cli_leak_lines.cpp"  # 100 lines of 50 bytes, one device allocation leaked
COMPILE_AND_START = 120  # seconds for a compile and a program start on a busy machine
# Seconds for a stop: the command's cleanup (Python, the program's exit, the temporary files) on a
# machine whose cores are all busy; a stop that hangs still fails, only later than on an idle one.
STOP = 120
CLI = ("-m", "aclnn_emu.cli")
# The command on a busy machine: the programs it starts run for a second before it is back from starting them.
SLOW_START = """
import runpy, subprocess, time
execute_child = subprocess.Popen._execute_child
def slowly(*args, **kwargs):
    execute_child(*args, **kwargs)
    time.sleep(1)
subprocess.Popen._execute_child = slowly
runpy.run_module("aclnn_emu.cli", run_name="__main__")
"""


def read_until(stream, text: bytes, timeout=COMPILE_AND_START) -> bytes:
    """What `stream` delivers up to and including `text`; fails if it does not arrive in time."""
    data, deadline = b"", time.monotonic() + timeout
    while text not in data:
        left = deadline - time.monotonic()
        assert left > 0 and select.select([stream], [], [], left)[0], f"{text!r} did not arrive, got {data!r}"
        chunk = os.read(stream.fileno(), 65536)
        assert chunk, f"the output ended before {text!r}: {data!r}"
        data += chunk
    return data


def group(pgid: int) -> list[str]:
    """The names of the live processes in a process group."""
    names = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended meanwhile
            continue
        state, _ppid, pgrp = text[text.rindex(")") + 2 :].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            names.append(text[text.index("(") + 1 : text.rindex(")")])
    return names


def wait_for_program(pgid: int, name: str, timeout=COMPILE_AND_START) -> None:
    deadline = time.monotonic() + timeout
    while name not in group(pgid):
        assert time.monotonic() < deadline, f"{name} did not start: {group(pgid)}"
        time.sleep(0.05)


@pytest.fixture
def started(tmp_path):
    """Start `aclnn-emu ARGS` as a user would, in its own process group (so a test can see every process
    it left), with stdin a pipe, stdout and stderr one pipe, and its temporary files in tmp_path/tmp."""
    tmp, procs = tmp_path / "tmp", []
    tmp.mkdir()

    def start(*args, python=CLI):
        proc = subprocess.Popen(
            [sys.executable, *python, *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp)},
        )
        procs.append(proc)
        return proc

    start.tmp = tmp
    yield start
    for proc in procs:  # whatever a failed test left running
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


@pytest.mark.parametrize(
    "ending, status", [("exit 0", 0), ("exit 3", 3), (f"signal {signal.SIGUSR1:d}", 128 + signal.SIGUSR1)]
)
def test_run_streams_the_programs_output_live_and_returns_its_status(started, ending, status):
    proc = started("run", CHILD)
    assert read_until(proc.stdout, b"err 1\n") == b"out 1\nerr 1\n"  # in the order written
    assert proc.poll() is None  # while the program runs
    out, _ = proc.communicate(f"{ending}\n".encode(), timeout=60)
    killed = f"aclnn-emu: {CHILD}: killed by SIGUSR1\n".encode() if ending.startswith("signal") else b""
    assert out == b"out 2\nerr 2\n" + killed
    assert proc.returncode == status


def test_in_a_terminal_a_sanitizer_report_follows_the_step_that_caused_it():
    """The README's sample run: the sample copies its fp16 result back as float (an out-of-bounds read),
    then prints it. In a terminal the report comes between the two, not after all the results."""
    main, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "aclnn_emu.cli", "run", ROOT / "samples" / "aclnnScatterPaKvCache.cpp"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=ROOT,
    ) as proc:
        os.close(terminal)
        screen, deadline = b"", time.monotonic() + COMPILE_AND_START
        while time.monotonic() < deadline and select.select([main], [], [], deadline - time.monotonic())[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                break
            screen += chunk
        os.close(main)
        assert proc.wait(60) == 0, screen
    lines = screen.decode().splitlines()
    race = [i for i, line in enumerate(lines) if line.startswith("aclnn-emu sanitizer: write-race:")]
    read = [i for i, line in enumerate(lines) if line.startswith("aclnn-emu sanitizer: out-of-bounds: memcpy source")]
    results = [i for i, line in enumerate(lines) if line.startswith("result[")]
    assert len(race) == 2 and len(read) == 1 and results, screen
    assert max(race) < read[0] == results[0] - 1


@pytest.mark.parametrize(
    "signum, to, python",
    [
        (signal.SIGTERM, "process", CLI),
        (signal.SIGINT, "process", CLI),
        (signal.SIGINT, "group", CLI),
        (signal.SIGHUP, "process", CLI),
        (signal.SIGINT, "process", ("-c", SLOW_START)),
    ],
    ids=["SIGTERM", "SIGINT", "Ctrl-C", "SIGHUP", "SIGINT-while-it-starts"],
)
def test_a_stopped_run_stops_its_program_and_leaves_nothing(started, signum, to, python):
    """Ctrl-C reaches the whole foreground group; kill(1) only aclnn-emu, which passes the signal on."""
    proc = started("run", CHILD, python=python)
    read_until(proc.stdout, b"err 1\n")
    (os.killpg if to == "group" else os.kill)(proc.pid, signum)
    assert proc.wait(STOP) == -signum  # it dies of the signal, as a shell expects
    assert group(proc.pid) == []  # the program too
    assert list(started.tmp.iterdir()) == []


def test_a_program_ignoring_sigterm_is_killed_after_the_grace_period(started):
    proc = started("run", CHILD, "ignore-sigterm")
    read_until(proc.stdout, b"err 1\n")
    begin = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(STOP) == -signal.SIGTERM
    assert time.monotonic() - begin >= process.STOP_GRACE
    assert group(proc.pid) == []
    assert list(started.tmp.iterdir()) == []


def test_samples_prints_each_row_as_its_sample_ends_and_stops_cleanly(started, tmp_path):
    samples = tmp_path / "samples"
    samples.mkdir()
    shutil.copy(LINES, samples / "a_lines.cpp")
    shutil.copy(CHILD, samples / "b_child.cpp")  # waits on stdin, which the test holds open
    proc = started("samples", samples)
    assert re.search(rb"\na_lines\.cpp +Ascend910B2 +\d+\.\ds +ok\n$", read_until(proc.stdout, b" ok\n"))
    wait_for_program(proc.pid, "b_child")
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(STOP) == -signal.SIGTERM
    assert group(proc.pid) == []
    assert list(started.tmp.iterdir()) == []
    assert b"samples passed" not in proc.stdout.read()


def test_a_reader_that_goes_away_ends_samples_quietly_as_sigpipe_would(tmp_path):
    shutil.copy(LINES, tmp_path)
    reader, writer = os.pipe()
    os.close(reader)  # `aclnn-emu samples | head -0`
    with subprocess.Popen(
        [sys.executable, "-m", "aclnn_emu.cli", "samples", "--full", str(tmp_path)],
        stdout=writer,
        stderr=subprocess.PIPE,
    ) as proc:
        os.close(writer)
        assert (proc.stderr.read(), proc.wait(60)) == (b"", -signal.SIGPIPE)


def test_samples_needs_a_directory_with_samples(tmp_path):
    missing = cli("samples", str(tmp_path / "nowhere"))
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == f"aclnn-emu samples: no such directory: {tmp_path / 'nowhere'}\n"
    empty = cli("samples", str(tmp_path))
    assert (empty.returncode, empty.stdout) == (2, "")
    assert (
        empty.stderr
        == f"aclnn-emu samples: no samples (*.cpp) in {tmp_path} (the toolkit's are in {toolkit.SAMPLES})\n"
    )


def test_samples_shows_a_bounded_tail_of_each_output(tmp_path):
    shutil.copy(LINES, tmp_path)
    lines = "".join(f"line {i}\n" for i in range(1, 101))
    table = rf"1 sample in {re.escape(str(tmp_path))}\nsample +soc +time +outcome\ncli_lines\.cpp +Ascend910B2 +\d+\.\ds +ok\n"
    quiet, verbose, full = (cli("samples", *flags, str(tmp_path)) for flags in ((), ("-v",), ("--full",)))
    assert re.fullmatch(table + "1/1 samples passed\n", quiet.stdout), quiet.stdout
    tail = re.escape(
        "--- cli_lines.cpp: 60 earlier lines cut (--full shows all) ---\n" + lines[lines.index("line 61\n") :]
    )
    assert re.fullmatch(table + tail + "1/1 samples passed\n", verbose.stdout), verbose.stdout[:2000]
    assert re.fullmatch(table + re.escape("--- cli_lines.cpp ---\n" + lines) + "1/1 samples passed\n", full.stdout)


@pytest.mark.skipif(shutil.which("stdbuf") is None, reason="no stdbuf (coreutils) on this machine")
def test_samples_full_keeps_the_reports_between_the_programs_lines(tmp_path):
    """stdout and stderr go to one file: a fully buffered stdout would flush its first 4 KiB in the
    middle of line 81, and the leak report written at aclFinalize would land inside that line."""
    shutil.copy(LEAK_LINES, tmp_path)
    lines = cli("samples", "--full", str(tmp_path)).stdout.splitlines()
    report = [line for line in lines if "aclnn-emu sanitizer" in line]
    assert len(report) == 1 and report[0].startswith("aclnn-emu sanitizer: leak: 64 bytes"), report
    assert [line for line in lines if line.startswith("line ")] == [f"line {i:03d} " + "." * 40 for i in range(100)]


def test_samples_shows_why_a_sample_failed(tmp_path):
    (tmp_path / "broken.cpp").write_text("int main( {\n")
    shutil.copy(CHILD, tmp_path)  # stdin is empty: prints "out 1", "err 1" and exits 99
    result = cli("samples", str(tmp_path), stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    rows = result.stdout.split("\n--- ")
    assert re.fullmatch(
        r"2 samples in .*\nsample +soc +time +outcome\n"
        r"broken\.cpp +Ascend910B2 +\d+\.\ds +compile failed \(exit 1\)",
        rows[0],
    ), rows[0]
    assert rows[1].startswith("broken.cpp ---\n") and "error:" in rows[1]
    assert re.search(r"\ncli_child\.cpp +Ascend910B2 +\d+\.\ds +run failed \(exit 99\)$", rows[1]), rows[1]
    assert rows[2] == "cli_child.cpp ---\nout 1\nerr 1\n0/2 samples passed\n"


def _checkout_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return (
        [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]
        if listed.returncode == 0
        else []
    )


@pytest.mark.skipif(shutil.which("git") is None or not _checkout_files(), reason="not a git checkout")
def test_a_regular_install_ships_the_samples_and_its_tools_work_from_anywhere(tmp_path):
    """`pip install .` (not editable) from a clean copy of this checkout, into a fresh venv, used from a
    directory without samples/: `samples` runs the toolkit's copies, doctor's advice works there."""
    source, venv, elsewhere = tmp_path / "src", tmp_path / "venv", tmp_path / "elsewhere"
    for name in _checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv))  # as if activated

    def command(*args):
        return subprocess.run(["aclnn-emu", *args], capture_output=True, text=True, cwd=elsewhere, env=env, timeout=600)

    home = pathlib.Path(
        subprocess.run(
            [venv / "bin" / "python", "-c", "import aclnn_emu.toolkit as t; print(t.HOME)"],
            capture_output=True,
            text=True,
            cwd=elsewhere,
            check=True,
        ).stdout.strip()
    )
    assert home.is_relative_to(venv)

    shipped = sorted(p.name for p in (home / "samples").iterdir())
    assert shipped == sorted(
        p.name for pattern in ("*.cpp", "*.soc", "CMakeLists.txt") for p in (ROOT / "samples").glob(pattern)
    )
    assert all((home / "samples" / name).read_bytes() == (ROOT / "samples" / name).read_bytes() for name in shipped)
    samples = command("samples")
    count = len([name for name in shipped if name.endswith(".cpp")])
    assert samples.returncode == 0, samples.stdout + samples.stderr
    assert samples.stdout.startswith(f"{count} samples in {home / 'samples'}\n")
    assert samples.stdout.endswith(f"\n{count}/{count} samples passed\n")

    (home / "lib64" / "libascendcl.so").unlink()
    broken = command("doctor")
    assert broken.returncode == 1 and f"{home}/lib64/libascendcl.so is missing: run `aclnn-emu build`" in broken.stdout
    assert command("build").returncode == 0
    assert command("doctor").returncode == 0
    (home / "include").rename(home / "include.moved")
    broken = command("doctor")
    assert (
        f"include/ is missing from the toolkit: run `pip install --force-reinstall --no-deps {source}`" in broken.stdout
    )
