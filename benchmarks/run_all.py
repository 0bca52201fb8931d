"""Every operator benchmark in one run: the machine line, then each bench_*.py's report (each one
times its contenders in turns, so its ratios hold on a busy machine). The soak test is left out: it
runs for minutes by design.

  python benchmarks/run_all.py               this machine as it is
  python benchmarks/run_all.py --isa avx2    as an AVX2-only machine (see machine.py)
  python benchmarks/run_all.py -k scatter    only the benchmarks whose name contains "scatter"
"""

import argparse
import pathlib
import subprocess
import sys
import time

import machine

HERE = pathlib.Path(__file__).resolve().parent
LEFT_OUT = {"bench_soak.py"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="run only benchmarks whose file name contains this")
    args = machine.start(parser)
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name in LEFT_OUT or args.k not in script.name:
            continue
        print(f"\n== {script.name}", flush=True)
        start = time.perf_counter()
        # The environment already holds the --isa choice; each script prints its own machine line.
        result = subprocess.run(
            [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        report = [line for line in result.stdout.splitlines() if not line.startswith("machine: ")]
        print("\n".join(report))
        print(f"({time.perf_counter() - start:.0f} s)", flush=True)
        if result.returncode != 0:
            failed.append(script.name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
