"""Every operator benchmark, as this machine, as an AVX2-only one and as an AVX2 core with the
smaller caches of an EPYC without AVX-512 (see machine.py): per configuration the machine line and
each bench_*.py's report (each one times its contenders in turns, so its ratios hold on a busy
machine), then every line that states a goal, per configuration. The soak test is left out: it runs
for minutes by design.

  python benchmarks/run_all.py                     the three configurations
  python benchmarks/run_all.py --only avx2         one of them: auto, avx2, avx2-small-caches
  python benchmarks/run_all.py -k scatter          only the benchmarks whose name contains "scatter"
"""

import argparse
import pathlib
import subprocess
import sys
import time

import machine

HERE = pathlib.Path(__file__).resolve().parent
LEFT_OUT = {"bench_soak.py"}


SMALL_CACHES = "32K,512K,16M"  # per core L1d and L2, and the L3 of a CCX, of an AVX2 EPYC (Zen 2)
CONFIGURATIONS = {
    "auto": [],
    "avx2": ["--isa", "avx2"],
    "avx2-small-caches": ["--isa", "avx2", "--caches", SMALL_CACHES],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="run only benchmarks whose file name contains this")
    parser.add_argument("--only", choices=CONFIGURATIONS, help="run one configuration")
    args = parser.parse_args()
    print(machine.describe(), flush=True)
    failed, goals = [], {}
    for config, flags in CONFIGURATIONS.items():
        if args.only not in (None, config):
            continue
        for script in sorted(HERE.glob("bench_*.py")):
            if script.name in LEFT_OUT or args.k not in script.name:
                continue
            print(f"\n== {script.name} ({config})", flush=True)
            start = time.perf_counter()
            # Each script re-runs itself as the flags ask and prints its own machine line.
            result = subprocess.run(
                [sys.executable, str(script), *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            print(result.stdout.rstrip())
            print(f"({time.perf_counter() - start:.0f} s)", flush=True)
            goals.setdefault(config, []).extend(
                f"{script.stem[6:]}: {line.strip()}" for line in result.stdout.splitlines() if "goal" in line
            )
            if result.returncode != 0:
                failed.append(f"{script.name} ({config})")
    for config, lines in goals.items():
        print(f"\n== goals, {config}")
        print("\n".join(lines))
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
