"""The `aclnn-emu` command: env, run, samples, doctor, build."""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from . import toolkit

REPO = pathlib.Path(__file__).resolve().parent.parent
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
    sys.path.insert(0, str(REPO))
    from shim.build import build
    print(build(toolkit.HOME))
    return 0


def compile_and_run(source, argv=(), env=None, timeout=None) -> tuple[str, subprocess.CompletedProcess]:
    """Compile with the official flags into a temporary directory and run; returns (stage, result)."""
    with tempfile.TemporaryDirectory(prefix="aclnn-emu-") as tmp:
        exe = pathlib.Path(tmp) / pathlib.Path(source).stem
        built = toolkit.compile(source, exe)
        if built.returncode != 0:
            return "compile", built
        return "run", subprocess.run([str(exe), *argv], env=toolkit.environment(env), capture_output=True,
                                     text=True, timeout=timeout)


def cmd_run(args) -> int:
    stage, result = compile_and_run(args.source, args.args)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if stage == "compile":
        print(f"aclnn-emu: compiling {args.source} failed", file=sys.stderr)
        return 1
    return result.returncode


def sample_env(source: pathlib.Path) -> dict:
    """A sample written for another chip names it in a file beside it (x.cpp -> x.soc)."""
    env = dict(os.environ)
    soc_file = source.with_suffix(".soc")
    if soc_file.exists():
        env["ACLNN_EMU_SOC"] = soc_file.read_text().strip()
    return env


def cmd_samples(args) -> int:
    directory = pathlib.Path(args.directory)
    sources = sorted(directory.glob("*.cpp"))
    rows, failed = [], 0
    for source in sources:
        start = time.perf_counter()
        env = sample_env(source)
        stage, result = compile_and_run(source, env=env, timeout=600)
        seconds = time.perf_counter() - start
        ok = stage == "run" and result.returncode == 0
        failed += not ok
        outcome = "ok" if ok else f"{stage} failed (exit {result.returncode})"
        rows.append((source.name, env.get("ACLNN_EMU_SOC", "Ascend910B"), outcome, f"{seconds:.1f}s"))
        if args.verbose or not ok:
            print(f"--- {source.name} ---\n{result.stdout}{result.stderr}")
    widths = [max(len(str(r[i])) for r in rows + [("sample", "soc", "outcome", "time")]) for i in range(4)]
    for row in [("sample", "soc", "outcome", "time")] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))
    print(f"{len(rows) - failed}/{len(rows)} samples passed")
    return 1 if failed else 0


def cmd_doctor(args) -> int:
    """Check each piece an install needs and say what to do about the first broken one."""
    checks = [
        ("toolkit built", toolkit.LIBRARY.exists(),
         f"{toolkit.LIBRARY} is missing: run `pip install .` (or `aclnn-emu build`)"),
        ("headers present", (toolkit.HOME / "include" / "acl" / "acl.h").exists(),
         "include/ was not copied into the toolkit: rebuild with `aclnn-emu build`"),
        ("g++ available", subprocess.run(["sh", "-c", "command -v g++"], capture_output=True).returncode == 0,
         "install g++ (Debian: apt-get install g++)"),
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
    print(f"ASCEND_HOME_PATH would be {toolkit.HOME}")
    return 0 if all(passed for _, passed, _ in checks) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="aclnn-emu", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("env", help="print the exports of set_env.sh (eval \"$(aclnn-emu env)\")").set_defaults(fn=cmd_env)
    sub.add_parser("build", help="(re)build the toolkit in place").set_defaults(fn=cmd_build)
    run = sub.add_parser("run", help="compile a C++ file with the official flags and run it")
    run.add_argument("source")
    run.add_argument("args", nargs=argparse.REMAINDER)
    run.set_defaults(fn=cmd_run)
    samples = sub.add_parser("samples", help="build and run every sample, print a table of outcomes")
    samples.add_argument("directory", nargs="?",
                         default="samples" if pathlib.Path("samples").is_dir() else str(REPO / "samples"))
    samples.add_argument("-v", "--verbose", action="store_true", help="print every sample's output")
    samples.set_defaults(fn=cmd_samples)
    sub.add_parser("doctor", help="explain what is wrong with this install").set_defaults(fn=cmd_doctor)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
