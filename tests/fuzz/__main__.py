"""The long fuzz run: python -m tests.fuzz --calls 100000 (from the repository's root); --help."""

import argparse
import signal
import sys
import time

from .driver import fuzz


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split(":")[0])
    parser.add_argument("--seed", type=int, default=int(time.time()), help="the run's seed (default: the time)")
    parser.add_argument("--calls", type=int, default=10000, help="number of calls (default 10000)")
    parser.add_argument("--start", type=int, default=0, help="first case number (resume a run)")
    parser.add_argument("--seconds", type=float, help="stop taking new calls after this long")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a call may take (default 30)")
    parser.add_argument("--progress", type=int, default=1000, help="print a line every N calls")
    parser.add_argument("--shrink", type=int, default=20, help="findings to shrink to a minimal reproducer")
    a = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)  # as Ctrl-C: the counts so far are printed
    print(f"seed {a.seed}, calls {a.start}..{a.start + a.calls - 1}", flush=True)
    result = fuzz(a.seed, a.calls, a.workers, a.timeout, a.seconds, a.start, a.progress, a.shrink)
    if result.interrupted:
        print("stopped before the last call")
    print(f"{result.calls} calls in {result.seconds:.0f} s ({result.calls / max(result.seconds, 1e-9):.0f}/s)")
    print(result.table())
    for finding in result.findings:
        print(finding.report() if finding.shrunk is not None else f"case {finding.index}: {finding.outcome}")
    print(f"{len(result.findings)} bad outcome(s)")
    return 1 if result.findings else 0


if __name__ == "__main__":
    sys.exit(main())
