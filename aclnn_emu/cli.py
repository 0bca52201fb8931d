"""The `aclnn-emu` command: env, run, trace, samples, coverage, doctor, build."""

import argparse
import collections
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from . import config, platform, process, toolkit, trace_summary, versions

PROBE = r"""
#include "acl/acl.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include <cstdio>
int main() {
    int ret = aclInit(nullptr);
    if (ret != 0) { printf("aclInit returned %d: %s\n", ret, aclGetRecentErrMsg()); return 1; }
    ret = aclrtSetDevice(0);
    if (ret != 0) { printf("aclrtSetDevice returned %d\n", ret); return 1; }
    void *p = nullptr;
    ret = aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    if (ret != 0) { printf("aclrtMalloc returned %d\n", ret); return 1; }
    aclrtFree(p);
    aclrtResetDevice(0);
    return aclFinalize();
}
"""


def cmd_env(args) -> int:
    print(toolkit.exports())
    return 0


def cmd_build(args) -> int:
    from .shim.build import build

    print(build(toolkit.HOME))
    return 0


SAMPLE_TIMEOUT = 600  # seconds per sample
TAIL_LINES = 40  # lines of a sample's output that `samples -v` (and a failure) shows


def compile_and_run(
    source, argv=(), env=None, timeout=None, line_buffered=False, **streams
) -> tuple[str, subprocess.CompletedProcess]:
    """Compile with the official flags into a temporary directory and run; returns (stage, result).
    The compiler's output is captured (a failed compile returns it); the program writes to `streams`
    (stdout=, stderr=), by default captured as text. `line_buffered`: the program's stdout is flushed
    at each line (coreutils' stdbuf, where there is one), so that with stderr sent to the same file
    the emulator's reports fall between lines, not inside a 4 KiB block of stdout."""
    with tempfile.TemporaryDirectory(prefix="aclnn-emu-") as tmp:
        exe = pathlib.Path(tmp) / pathlib.Path(source).stem
        built = toolkit.compile(source, exe)
        if built.returncode != 0:
            return "compile", built
        stdbuf = shutil.which("stdbuf") if line_buffered else None
        return "run", process.run(
            [*([stdbuf, "-oL"] if stdbuf else []), str(exe), *argv],
            toolkit.environment(env),
            timeout,
            **(streams or dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)),
        )


SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C")


def run_program(program: str, argv, env=None) -> int:
    """Compile a C++ source with the official flags and run it, or run an executable already built;
    the exit status for ours (1: it did not compile, 2: no such program). The program inherits our
    stdin, stdout and stderr: its output arrives live, in the order it is written (in a terminal, a
    sanitizer report right after the step that caused it)."""
    if pathlib.Path(program).suffix == ".py":  # with this Python, which has aclnn_emu
        result = process.run([sys.executable, program, *argv], toolkit.environment(env))
    elif pathlib.Path(program).suffix in SOURCE_SUFFIXES:
        stage, result = compile_and_run(program, argv, env=env, stdout=None, stderr=None)
        if stage == "compile":
            sys.stderr.write(result.stdout + result.stderr)
            print(f"aclnn-emu: compiling {program} failed", file=sys.stderr)
            return 1
    else:
        found = shutil.which(program, path=os.curdir) or shutil.which(program)
        if found is None:
            print(
                f"aclnn-emu: {program}: no such executable (nor a C++ source: {', '.join(SOURCE_SUFFIXES)}; "
                "nor a Python script: .py)",
                file=sys.stderr,
            )
            return 2
        result = process.run([os.path.abspath(found), *argv], toolkit.environment(env))
    if process.reported(result.returncode):  # a shell would say so, and cannot here
        print(f"aclnn-emu: {program}: {process.describe(result.returncode)}", file=sys.stderr)
    return process.exit_status(result.returncode)


@process.stoppable
def cmd_run(args) -> int:
    return run_program(args.source, args.args)


TRACE_SUFFIX = ".json"


def summarise_trace(path: str) -> int:
    """`aclnn-emu trace FILE.json`: the summary of a trace written earlier."""
    try:
        events = trace_summary.load(path)
    except OSError as exc:
        print(f"aclnn-emu trace: {path}: {exc.strerror}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError) as exc:  # not JSON, or JSON without traceEvents
        print(f"aclnn-emu trace: {path} is not a trace file (ACLNN_EMU_TRACE writes them): {exc!r}", file=sys.stderr)
        return 2
    print(f"aclnn-emu trace: {pathlib.Path(path).resolve()}")
    print(trace_summary.summary(events))
    return 0


@process.stoppable
def cmd_trace(args) -> int:
    """`run` with ACLNN_EMU_TRACE set, then a summary of the trace per operator; or the summary of a
    trace file written earlier."""
    if pathlib.Path(args.program).suffix == TRACE_SUFFIX:
        if args.args or args.output:
            print("aclnn-emu trace: a trace file takes no arguments and no -o", file=sys.stderr)
            return 2
        return summarise_trace(args.program)
    output = pathlib.Path(args.output or f"{pathlib.Path(args.program).stem}.trace.json").resolve()
    output.unlink(missing_ok=True)  # a summary of an earlier run would be a wrong answer
    status = run_program(args.program, args.args, dict(os.environ, ACLNN_EMU_TRACE=str(output)))
    sys.stdout.flush()
    if output.exists():
        print(f"\naclnn-emu trace: {output} (open it in https://ui.perfetto.dev or chrome://tracing)")
        print(trace_summary.summary(trace_summary.load(output)))
    else:
        print(
            f"\naclnn-emu trace: {args.program} left no trace (it made no call into the library, or "
            f"was killed before writing one)",
            file=sys.stderr,
        )
    return status


def sample_env(source: pathlib.Path) -> dict:
    """A sample written for another chip names it in a file beside it (x.cpp -> x.soc)."""
    env = dict(os.environ)
    soc_file = source.with_suffix(".soc")
    if soc_file.exists():
        env["ACLNN_EMU_SOC"] = soc_file.read_text().strip()
    return env


def samples_directory(given) -> pathlib.Path:
    """The directory named, else ./samples if there is one, else the samples shipped with the toolkit."""
    if given is not None:
        return pathlib.Path(given)
    return pathlib.Path("samples") if pathlib.Path("samples").is_dir() else toolkit.SAMPLES


def show_output(name: str, log, full: bool) -> None:
    """A sample's output (stdout and stderr as written to one file): its last TAIL_LINES lines, or all."""
    if log.seek(0, os.SEEK_END):
        log.seek(-1, os.SEEK_END)
        unfinished_line = log.read(1) != b"\n"
    else:
        unfinished_line = False
    log.seek(0)
    if full:
        print(f"--- {name} ---", flush=True)
        shutil.copyfileobj(log, sys.stdout.buffer)
    else:
        tail, total = collections.deque(maxlen=TAIL_LINES), 0
        for total, line in enumerate(log, 1):
            tail.append(line)
        cut = total - len(tail)
        print(f"--- {name}: {cut} earlier lines cut (--full shows all) ---" if cut else f"--- {name} ---")
        sys.stdout.write(b"".join(tail).decode(errors="replace"))
    print("\n" if unfinished_line else "", end="", flush=True)


@process.stoppable
def cmd_samples(args) -> int:
    directory = samples_directory(args.directory)
    if not directory.is_dir():
        print(f"aclnn-emu samples: no such directory: {directory}", file=sys.stderr)
        return 2
    sources = sorted(directory.glob("*.cpp"))
    if not sources:
        shipped = directory.resolve() == toolkit.SAMPLES.resolve()
        print(
            f"aclnn-emu samples: no samples (*.cpp) in {directory}"
            + ("" if shipped else f" (the toolkit's are in {toolkit.SAMPLES})"),
            file=sys.stderr,
        )
        return 2
    envs = [sample_env(source) for source in sources]
    socs = [config.check(env)[0].soc for env in envs]  # as the emulator reads it (canonical spelling)
    columns = (("sample", [s.name for s in sources]), ("soc", socs), ("time", [f"{SAMPLE_TIMEOUT:.1f}s"]))
    widths = [max(len(title), *map(len, cells)) for title, cells in columns]

    def row(*cells):  # printed as each sample finishes
        print("  ".join(cell.ljust(width) for cell, width in zip(cells, widths + [0])), flush=True)

    print(f"{len(sources)} sample{'s' * (len(sources) != 1)} in {directory.resolve()}")
    row("sample", "soc", "time", "outcome")
    failed = 0
    for source, env, soc in zip(sources, envs, socs):
        start = time.perf_counter()
        with tempfile.TemporaryFile() as log:  # unlinked from the start: never left behind
            try:
                stage, result = compile_and_run(
                    source, env=env, timeout=SAMPLE_TIMEOUT, line_buffered=True, stdout=log, stderr=subprocess.STDOUT
                )
                if stage == "compile":
                    log.write((result.stdout + result.stderr).encode())
                ok = stage == "run" and result.returncode == 0
                outcome = "ok" if ok else f"{stage} failed ({process.describe(result.returncode)})"
            except subprocess.TimeoutExpired:
                ok, outcome = False, f"timed out after {SAMPLE_TIMEOUT}s"
            failed += not ok
            row(source.name, soc, f"{time.perf_counter() - start:.1f}s", outcome)
            if args.verbose or args.full or not ok:
                show_output(source.name, log, args.full)
    print(f"{len(sources) - failed}/{len(sources)} samples passed")
    return 1 if failed else 0


def coverage_table(version: str = versions.DEFAULT) -> str:
    """Markdown table of every exported function and whether the emulator implements it under the CANN
    release `version`, its parts, the rules that differ from 8.5.0-beta.1 and the changes not emulated."""
    from .capi.coverage import runtime_rows
    from .opdef.registry import all_ops

    release = versions.RELEASES[version]
    lines = [
        f"# Coverage of CANN {version} (generated by `aclnn-emu coverage"
        f"{'' if version == versions.DEFAULT else f' --version {version}'}`)",
        "",
        "| function | header | emulated |",
        "|---|---|---|",
    ]
    lines += runtime_rows()
    for op in all_ops():
        state = "yes" if op.prepare_fn is not None else "no: returns 561003"
        if not versions.declares(release, op.since):
            state = f"no: not in CANN {version} (from {op.since} on), returns 561003"
        gone = versions.withdrawal(op.name, release, platform.A5)
        if gone is not None:
            state += f"; {gone.code} on {platform.A950} (rule `{gone.rule}`)"
        for name in (op.phase1, op.phase2):
            lines.append(f"| `{name}` | aclnnop/{op.header} | {state} |")
        for name in op.undeclared_phase1:  # exported beside the header's pair, declared nowhere
            lines.append(f"| `{name}` | none (exported beside aclnnop/{op.header}) | {state} |")
    lines += [
        "",
        "## Parts (`ACLNN_EMU_SOC`, aclnn_emu/platform.py)",
        "",
        "| part | family | cube / vector cores | UB | HBM | L2 | values from |",
        "|---|---|---|---|---|---|---|",
    ]
    gib, kib, mib = platform.GIB, platform.KIB, platform.MIB
    aliases = platform.ALIASES_950 if release.ascend950 else platform.ALIASES
    for p in (platform.part(name, release.ascend950) for name in release.parts if name not in aliases):
        hbm = (
            (f"{p.hbm_bytes / gib:g} GiB" if p.hbm_bytes % gib == 0 else f"{p.hbm_bytes} B")
            if p.hbm_bytes
            else "not published"
        )
        l2 = f"{p.l2_bytes // mib} MiB" if p.l2_bytes else "not published"
        lines.append(
            f"| `{p.name}` | {p.family} | {p.aic_cores} / {p.aiv_cores} | {p.ub_bytes // kib} KiB | {hbm} | "
            f"{l2} | {p.source} |"
        )
    lines += ["", "Family names are aliases: " + ", ".join(f"`{f}` = `{part}`" for f, part in aliases.items()) + "."]
    lines += _release_sections(release)
    lines += _gap_sections(all_ops())
    return "\n".join(lines) + "\n"


def _release_sections(release) -> list[str]:
    """What `ACLNN_EMU_CANN_VERSION` changes (aclnn_emu/versions.py): the rules that hold in this release
    with their source, and the changes up to it that are not emulated."""
    api = ".".join(map(str, release.acl_api))
    lines = [
        "",
        f"## CANN {release.name} (`ACLNN_EMU_CANN_VERSION`, aclnn_emu/versions.py)",
        "",
        f"`aclrtGetVersion` reports {api}; operator rules are read from ops-transformer v8.5.0-beta.1, and "
        "these rules, which changed between releases, hold in this one (source at ref "
        f"`{release.ops_ref}`):",
        "",
    ]
    held = [(name, rule) for name, rule in versions.RULES.items() if release.has(name)]
    lines += [f"- `{name}`: {rule.what} ({release.source(name)})" for name, rule in held] or ["- none"]
    missing = versions.unemulated(release)
    lines += ["", f"Not emulated in CANN {release.name} (the call behaves as in 8.5.0):", ""]
    lines += [f"- since {u.since}: {u.what} (`{u.where}`)" for u in missing] or ["- nothing known"]
    return lines


def _gap_sections(ops) -> list[str]:
    """Each kind of declared rule (aclnn_emu/opdef/gaps.py) under its heading: op, code when not
    561003, rule id and what it covers."""
    from .opdef import gaps

    lines = []
    for kind, rows in gaps.declared(ops).items():
        entries = [
            f"- `{op.phase1}`{'' if code == gaps.FIND_KERNEL else f' ({code})'}: {text} (rule `{kind}.{key}`)"
            for op, code, key, text in rows
        ]
        if entries:
            lines += ["", f"## {gaps.KINDS[kind]}", "", *entries]
    return lines


def cmd_coverage(args) -> int:
    sys.stdout.write(coverage_table(args.version))
    return 0


def settings_table() -> str:
    """Each ACLNN_EMU_* setting with its value here (or its default) and the values it takes."""
    rows, env = [], config.environment()
    for s in config.SETTINGS:
        value = env.get(s.variable, "").strip()
        rows.append(f"  {s.variable:24} {value or (s.default or 'unset') + ' (default)':28} {s.allowed}")
    return "\n".join(rows)


def missing_dependencies() -> list[str]:
    """The requirements of aclnn-emu (as its metadata states them) this Python cannot import."""
    from . import DEPENDENCIES

    try:
        stated = {re.split(r"[^\w-]", r, 1)[0].replace("-", "_"): r for r in importlib.metadata.requires("aclnn-emu")}
    except importlib.metadata.PackageNotFoundError:  # a checkout on sys.path without its build metadata
        stated = {}
    return [stated.get(name, name) for name in DEPENDENCIES if importlib.util.find_spec(name) is None]


def cmd_doctor(args) -> int:
    """Check each piece an install needs and say what to do about the first broken one."""
    _, bad, unknown = config.check(config.environment())
    reinstall = toolkit.reinstall_command()
    headers = (toolkit.HOME / "include" / "acl" / "acl.h").exists()  # what `aclnn-emu build` needs
    missing = missing_dependencies()
    install = " ".join(shlex.quote(m.split(";")[0].strip()) for m in missing)
    checks = [
        (
            "dependencies importable (numpy, ml_dtypes, cffi)",
            not missing,
            f"{sys.executable} cannot import {', '.join(missing)}: run `{sys.executable} -m pip install {install}`",
        ),
        (
            "settings (ACLNN_EMU_*) valid",
            not bad,
            "\n       ".join(bad + ["see `aclnn-emu --help` or README.md, section Environment"]),
        ),
        (
            "toolkit built",
            toolkit.LIBRARY.exists(),
            f"{toolkit.LIBRARY} is missing: run `{'aclnn-emu build' if headers else reinstall}`",
        ),
        ("headers present", headers, f"include/ is missing from the toolkit: run `{reinstall}`"),
        (
            "compiled kernel loops built",
            importlib.util.find_spec("aclnn_emu.kernels._native") is not None,
            f"aclnn_emu.kernels._native is missing: run `{reinstall}`",
        ),
        (
            "g++ available",
            subprocess.run(["sh", "-c", "command -v g++"], capture_output=True).returncode == 0,
            "install g++ (Debian: apt-get install g++)",
        ),
    ]
    ok = all(passed for _, passed, _ in checks)
    if ok:
        with tempfile.TemporaryDirectory() as tmp:
            probe = pathlib.Path(tmp) / "probe.cpp"
            probe.write_text(PROBE)
            stage, result = compile_and_run(probe)
        passed = stage == "run" and result.returncode == 0
        hint = (result.stdout + result.stderr).strip() + ("" if stage == "run" else "  (compilation failed)")
        checks.append(("a C++ program runs against the toolkit", passed, hint))
    for name, passed, hint in checks:
        print(f"[{'ok' if passed else 'FAIL'}] {name}" + ("" if passed else f"\n       {hint}"))
    for line in unknown:
        print(f"[warn] {line}")
    print(f"ASCEND_HOME_PATH would be {toolkit.HOME}")
    release = versions.RELEASES[config.check(config.environment())[0].cann_version]
    print(
        f"CANN version presented: {release.name} (AscendCL API {'.'.join(map(str, release.acl_api))}; "
        f"operator rules of ops-transformer {release.ops_ref})"
    )
    print(f"settings:\n{settings_table()}")
    return 0 if all(passed for _, passed, _ in checks) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="aclnn-emu",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"settings (environment variables, value here, allowed values):\n{settings_table()}",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("env", help='print the exports of set_env.sh (eval "$(aclnn-emu env)")').set_defaults(fn=cmd_env)
    sub.add_parser("build", help="(re)build the toolkit in place").set_defaults(fn=cmd_build)
    run = sub.add_parser(
        "run",
        help="compile a C++ file with the official flags and run it (or run an executable, or a Python "
        "script with this Python)",
    )
    run.add_argument("source")
    run.add_argument("args", nargs=argparse.REMAINDER)
    run.set_defaults(fn=cmd_run)
    trace = sub.add_parser(
        "trace",
        help="run as `run` does with ACLNN_EMU_TRACE set, then print a per-operator summary of the trace; "
        "given a trace file (.json), print its summary",
    )
    trace.add_argument("-o", "--output", help="the trace file (default: <program>.trace.json here)")
    trace.add_argument("program", help="a C++ source, an executable, a Python script (.py) or a trace file (.json)")
    trace.add_argument("args", nargs=argparse.REMAINDER)
    trace.set_defaults(fn=cmd_trace)
    samples = sub.add_parser("samples", help="build and run every sample, print a table of outcomes")
    samples.add_argument(
        "directory", nargs="?", help="default: ./samples if there is one, else the samples shipped with the toolkit"
    )
    samples.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"print the last {TAIL_LINES} lines of every sample's output (a failure's always)",
    )
    samples.add_argument("--full", action="store_true", help="print every line of every sample's output")
    samples.set_defaults(fn=cmd_samples)
    coverage = sub.add_parser("coverage", help="print the table of emulated functions (docs/coverage.md)")
    coverage.add_argument(
        "--version",
        choices=versions.ORDER,
        default=versions.DEFAULT,
        help=f"the CANN release (ACLNN_EMU_CANN_VERSION; default {versions.DEFAULT}, the table docs/coverage.md holds)",
    )
    coverage.set_defaults(fn=cmd_coverage)
    sub.add_parser("doctor", help="explain what is wrong with this install").set_defaults(fn=cmd_doctor)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
