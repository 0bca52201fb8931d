"""Mutation check of the test suite, run on demand (not collected by pytest, not run in CI).

    python tests/mutations/run.py [-k SUBSTRING] [--keep]

Each mutation of tests/mutations/catalogue.py (one source edit, see `Mutation`) is applied to a
fresh copy of this checkout, and the tests it names run against that copy: a failing test means
the mutation was caught. The table at the end says caught or missed per mutation; the exit status
is 1 if any was missed (or the unmutated copy fails its tests).

How the copy's code is what runs:
- the copy holds the built artefacts of this checkout (the toolkit under aclnn_emu/_toolkit and
  the compiled loops aclnn_emu.kernels._native); a mutation of native.c or matmul.c rebuilds
  _native in the copy with cffi (aclnn_emu/shim/native.py's `ffi`), as `pip install` would;
- pytest runs in the copy with PYTHONPATH=<copy>, which comes before the editable install's finder,
  so the tests import the copy's aclnn_emu;
- compiled test programs link the copy's libascendcl.so, whose embedded interpreter puts
  ACLNN_EMU_PYTHONPATH=<copy> first on sys.path.
Before the mutations, a probe checks both doors (pytest's import, and a compiled program's
aclInit) load the copy's package, and the unmutated copy must pass every test the catalogue names.
"""

import argparse
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from catalogue import MUTATIONS  # noqa: E402

TIMEOUT = 900  # seconds for one mutation's tests
BUILT = ("aclnn_emu/_toolkit", "aclnn_emu/kernels/_native")
PROBE_CPP = '#include "acl/acl.h"\nint main() { return aclInit(nullptr) == 0 ? 0 : 1; }\n'
PROBE_LINE = (
    '\nimport os as _probe_os\nif _probe_os.environ.get("MUTATION_PROBE"):\n'
    '    open(_probe_os.environ["MUTATION_PROBE"], "a").write(__file__ + "\\n")\n'
)


def source_files():
    """This checkout's files as git sees them (tracked and new, not ignored), plus the built ones."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    files = [f for f in listed if f and (ROOT / f).is_file()]
    built = [
        str(p.relative_to(ROOT))
        for prefix in BUILT
        for p in ROOT.glob(prefix + "*")
        for p in ([p] if p.is_file() else p.rglob("*"))
        if p.is_file()
    ]
    if not any("_native" in f for f in built) or not any("_toolkit" in f for f in built):
        sys.exit("build the checkout first (pip install -e .): the copies need its toolkit and _native")
    return files + built


def make_copy(files, where: pathlib.Path, source: pathlib.Path = ROOT) -> pathlib.Path:
    for name in files:
        target = where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target, follow_symlinks=False)
    return where


def environment(copy: pathlib.Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH")]))
    env["ACLNN_EMU_PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def rebuild_native(copy: pathlib.Path) -> None:
    """Compile the copy's native.c and matmul.c into the copy's aclnn_emu.kernels._native."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from aclnn_emu.shim.native import ffi; "
        "ffi.compile(tmpdir=sys.argv[1])"
    )
    result = subprocess.run([sys.executable, "-c", code, str(copy)], cwd=copy, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"rebuilding _native failed:\n{result.stderr[-2000:]}")


def probe(copy: pathlib.Path) -> None:
    """Both doors load the copy's package: pytest's interpreter and a compiled program's."""
    env = environment(copy)
    code = (
        "import sys; from aclnn_emu import toolkit; "
        "print(toolkit.HOME); print('\\0'.join(toolkit.compile_command(sys.argv[1], sys.argv[2])))"
    )
    (copy / "probe.cpp").write_text(PROBE_CPP)
    home, command = (
        subprocess.run(
            [sys.executable, "-c", code, str(copy / "probe.cpp"), str(copy / "probe")],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .split("\n")
    )
    subprocess.run(command.split("\0"), check=True, capture_output=True)
    init = copy / "aclnn_emu" / "__init__.py"
    original, marker = init.read_text(), copy / "probe.txt"
    init.write_text(original + PROBE_LINE)
    try:
        env["MUTATION_PROBE"] = str(marker)
        native = subprocess.run(
            [sys.executable, "-c", "import aclnn_emu.kernels._native as n; print(n.__file__)"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        env["LD_LIBRARY_PATH"] = str(pathlib.Path(home) / "lib64")
        ran = subprocess.run([str(copy / "probe")], cwd=copy, env=env, capture_output=True, text=True)
        loaded = marker.read_text().split() if marker.exists() else []
    finally:
        init.write_text(original)
    inside = lambda path: pathlib.Path(path).resolve().is_relative_to(copy.resolve())  # noqa: E731
    if not (inside(home) and inside(native) and len(loaded) == 2 and all(map(inside, loaded))) or ran.returncode:
        sys.exit(
            f"probe: the copy is not what runs (toolkit {home}, _native {native}, packages loaded "
            f"{loaded}, program status {ran.returncode}: {ran.stderr[-500:]})"
        )


def run_tests(copy: pathlib.Path, tests, stop_first=True):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", "-rf"]
    command += ["-x"] if stop_first else []
    try:
        result = subprocess.run(
            command + list(tests), cwd=copy, env=environment(copy), capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return "timeout", ""
    tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-300:]
    if result.returncode == 0:
        return "passed", tail
    if result.returncode == 1:
        failed = [line.split(" ")[0] for line in result.stdout.splitlines() if line.startswith("FAILED ")]
        first = next((line for line in result.stdout.splitlines() if line.startswith("FAILED")), tail)
        return "failed", first.split(" - ")[0].removeprefix("FAILED ") if failed or first else tail
    return "error", (result.stdout + result.stderr)[-1500:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default="", help="run only mutations whose name contains this")
    parser.add_argument("--keep", action="store_true", help="keep the copies (their paths are printed)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the copies are removed
    chosen = [m for m in MUTATIONS if args.k in m.name]
    files = source_files()
    base = pathlib.Path(tempfile.mkdtemp(prefix="aclnn-emu-mutations-"))
    try:
        reference = make_copy(files, base / "reference")
        probe(reference)
        every_test = sorted({t for m in chosen for t in m.tests})
        status, detail = run_tests(reference, every_test, stop_first=False)
        if status != "passed":
            sys.exit(f"the unmutated copy does not pass the catalogue's tests ({status}): {detail}")
        print(f"unmutated copy: {detail}", flush=True)
        rows = []
        for m in chosen:
            copy = make_copy(files, base / m.name, reference)  # the snapshot, whatever the checkout does meanwhile
            started = time.monotonic()
            m.apply(copy)
            if m.file.startswith("aclnn_emu/kernels/") and m.file.endswith(".c"):
                rebuild_native(copy)
            status, detail = run_tests(copy, m.tests)
            verdict = {"failed": "caught", "passed": "MISSED"}.get(status, status.upper())
            rows.append((m.name, verdict, time.monotonic() - started, detail))
            print(f"{m.name:44s} {verdict:7s} {rows[-1][2]:6.1f}s  {detail}", flush=True)
            if not args.keep:
                shutil.rmtree(copy, ignore_errors=True)
    finally:
        if args.keep:
            print(f"copies kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    caught = sum(r[1] == "caught" for r in rows)
    print("\n| mutation | result | first failing test |\n|---|---|---|")
    for name, verdict, _, detail in rows:
        print(f"| {name} | {verdict} | {detail if verdict == 'caught' else ''} |")
    print(f"\n{caught} of {len(rows)} mutations caught")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
