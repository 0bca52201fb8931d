"""Soak: 8 threads, each with its own streams and an event, loop allocate / copy / two-phase operator /
free through the C ABI, with unsynchronised stream destroys and destroy-while-submitting races
(benchmarks/soak.cpp), for a given time. Reports calls per second, RSS over time (it must stay flat
after the warm-up: no leak) and that no result was lost or corrupted; exits 1 otherwise.

Run: python benchmarks/bench_soak.py [--minutes 10] [--threads 8] [--seed 1]
"""

import argparse
import pathlib
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from aclnn_emu import toolkit  # noqa: E402

# The first fifth of the run (at least 30 s) is warm-up. After it RSS may grow by at most 5 % of
# itself or 16 MiB to the end: glibc's per-thread malloc arenas keep settling for minutes (about
# 1 MiB a minute with 8 threads on 2 cores; flat with MALLOC_ARENA_MAX=2), a leak does not stop.
WARM_UP = 0.2
FLAT_GROWTH = 0.05
MUST_BE_ZERO = ("corrupted", "unexpected_status", "race_lost")
GRACE_S = 300  # a run still going this long after its time is up has hung


def run(seconds: float, threads: int, seed: int) -> tuple[list[tuple[float, int, int, int]], dict, int]:
    """Ticks (t, calls, rss_kb, device_kb), the totals, and the program's exit status."""
    with tempfile.TemporaryDirectory(prefix="aclnn-emu-soak-") as tmp:
        exe = pathlib.Path(tmp) / "soak"
        built = toolkit.compile(pathlib.Path(__file__).with_name("soak.cpp"), exe)
        if built.returncode != 0:
            sys.exit(f"compiling soak.cpp failed:\n{built.stderr}")
        ticks, totals = [], {}
        errors = open(pathlib.Path(tmp) / "stderr", "w+")
        with (
            errors,
            subprocess.Popen(
                [str(exe), str(seconds), str(threads), str(seed)],
                env=toolkit.environment(),
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            ) as process,
        ):
            watchdog = threading.Timer(seconds + GRACE_S, process.kill)
            watchdog.start()
            for line in process.stdout:
                fields = line.split()
                if fields[0] == "tick":
                    ticks.append((float(fields[1]), int(fields[2]), int(fields[3]), int(fields[4])))
                    if len(ticks) % 60 == 0:
                        report_minute(ticks)
                elif len(fields) == 2:
                    totals[fields[0]] = float(fields[1])
            process.wait()
            watchdog.cancel()
            errors.seek(0)
            lines = errors.read().splitlines()
        if lines:
            print(f"stderr: {len(lines)} lines, the first ones:", *lines[:5], sep="\n  ")
        return ticks, totals, process.returncode


def report_minute(ticks):
    (t0, c0, _, _), (t1, c1, rss, device) = ticks[-60], ticks[-1]
    print(
        f"  {t1 / 60:5.1f} min  {(c1 - c0) / (t1 - t0):9.0f} calls/s  RSS {rss / 1024:7.1f} MiB "
        f"(device memory {device / 1024:.1f} MiB)",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"soak: {args.threads} threads for {args.minutes:g} min (seed {args.seed})", flush=True)
    ticks, totals, status = run(args.minutes * 60, args.threads, args.seed)
    if status != 0 or not ticks or "calls" not in totals:
        sys.exit(f"soak program failed (exit status {status}; killed if it hung past its time)")

    warm = max(WARM_UP * ticks[-1][0], min(30.0, ticks[-1][0] / 2))
    settled = [rss for t, _, rss, _ in ticks if t >= warm]
    growth = settled[-1] - settled[0]
    flat = growth <= max(FLAT_GROWTH * settled[0], 16 * 1024)
    print(
        f"calls per second        {totals['calls'] / totals['seconds']:.0f}  "
        f"({totals['calls']:.0f} calls, {totals['iterations']:.0f} pipelines)"
    )
    print(
        f"RSS after {warm:.0f} s warm-up  {settled[0] / 1024:.1f} MiB -> {settled[-1] / 1024:.1f} MiB at the end "
        f"(min {min(settled) / 1024:.1f}, max {max(settled) / 1024:.1f}; peak RSS {totals['peak_rss_kb'] / 1024:.1f} MiB): "
        + ("flat" if flat else "GROWING")
    )
    print(
        f"results                 {totals['verified']:.0f} verified byte for byte, {totals['corrupted']:.0f} "
        f"lost or corrupted; {totals['destroyed_unsynchronised']:.0f} streams destroyed unsynchronised"
    )
    print(
        f"destroy races           {totals['race_copies']:.0f} accepted copies all landed: "
        f"{totals['race_lost']:.0f} lost; {totals['race_refused']:.0f} refused with 107017"
    )
    print(
        f"unexpected status codes {totals['unexpected_status']:.0f}; reset {totals['reset']:.0f}, "
        f"finalize {totals['finalize']:.0f}"
    )
    failed = [name for name in MUST_BE_ZERO if totals[name]] + ([] if flat else ["rss"])
    failed += [name for name in ("reset", "finalize") if totals[name]]
    if failed:
        sys.exit(f"soak FAILED: {', '.join(failed)}")


if __name__ == "__main__":
    main()
