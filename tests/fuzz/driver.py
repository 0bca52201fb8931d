"""Runs cases in worker processes with a timeout each, counts outcomes, and shrinks what is bad.

A worker takes case numbers, makes each case (fuzz.mutate.generate), runs it (fuzz.case.run) and
answers with the outcome. A case that does not answer within the timeout is a hang, a worker that
dies is a crash; either way the worker is replaced and the run goes on.
"""

import collections
import copy
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import sys
import time
import traceback

from .case import Case, Outcome, reproducer
from .mutate import baseline_of, generate

CONTEXT = multiprocessing.get_context("spawn")
# A worker's start (an interpreter, numpy, the emulator) on a machine whose cores are all busy: not
# part of any call's time; a worker that never gets ready still ends as a hang.
STARTUP = 300.0  # a fresh emulator per worker, never a forked one


def _serve(connection, seed: int) -> None:
    """A worker's loop: ("gen", index) or ("case", Case) in, Outcome out; None ends it."""
    sys.stderr = open(os.devnull, "w")  # sanitizer and portability warnings: expected, and many
    from .case import run

    connection.send("ready")  # a job's time counts from here, not from the worker's start
    while (job := connection.recv()) is not None:
        kind, what = job
        case = generate(seed, what) if kind == "gen" else what
        try:
            outcome = run(case)
        except Exception as exc:  # the harness itself: report, never die silently
            where = traceback.extract_tb(exc.__traceback__)[-1]
            outcome = Outcome("crash", 0, f"harness: {exc!r} at {where.filename}:{where.lineno}")
        connection.send(outcome)


class Worker:
    def __init__(self, seed: int):
        self.seed = seed
        self.connection, child = CONTEXT.Pipe()
        self.process = CONTEXT.Process(target=_serve, args=(child, seed), daemon=True)
        self.process.start()
        child.close()
        self.job, self.started, self.ready = None, time.monotonic(), False

    def submit(self, job) -> None:
        self.job = job
        if self.ready:
            self.started = time.monotonic()
        self.connection.send(job)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


@dataclasses.dataclass
class Finding:
    index: int
    case: Case
    outcome: Outcome
    shrunk: Case | None = None
    shrunk_outcome: Outcome | None = None

    def report(self) -> str:
        case, outcome = (self.shrunk, self.shrunk_outcome) if self.shrunk is not None else (self.case, self.outcome)
        return (
            f"case {self.index}: {self.case.op} on {self.case.soc}"
            f"{' (strict)' if self.case.strict else ''}{f' under {self.case.release}' if self.case.release else ''} after {'; '.join(self.case.mutations) or 'no change'}\n"
            f"  {self.outcome}\n  minimal reproducer ({outcome.kind}):\n"
            + "\n".join("    " + line for line in reproducer(case).splitlines())
        )


@dataclasses.dataclass
class Result:
    calls: int = 0
    seconds: float = 0.0
    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)  # (op, kind) -> n
    findings: list = dataclasses.field(default_factory=list)
    interrupted: bool = False

    def table(self) -> str:
        kinds = sorted({k for _, k in self.counts})
        ops = sorted({op for op, _ in self.counts})
        width = max(map(len, ops), default=10)
        lines = [f"{'entry point':{width}} " + " ".join(f"{k:>13}" for k in kinds)]
        lines += [f"{op:{width}} " + " ".join(f"{self.counts[op, k]:>13}" for k in kinds) for op in ops]
        lines.append(f"{'total':{width}} " + " ".join(f"{sum(self.counts[o, k] for o in ops):>13}" for k in kinds))
        return "\n".join(lines)


class Pool:
    """Workers that answer jobs with outcomes, replaced when they hang or die."""

    def __init__(self, seed: int, workers: int, timeout: float):
        self.seed, self.timeout = seed, timeout
        self.workers = [Worker(seed) for _ in range(workers)]

    def close(self) -> None:
        for w in self.workers:
            try:
                w.connection.send(None)
            except OSError:
                pass
            w.process.join(5)
            w.stop()

    def _replace(self, w: Worker) -> Worker:
        w.stop()
        fresh = self.workers[self.workers.index(w)] = Worker(self.seed)
        return fresh

    def run(self, jobs, deadline: float | None = None):
        """Yield (job, Outcome) for each job; stop taking jobs after `deadline` (time.monotonic())."""
        jobs = iter(jobs)
        busy = []
        idle = list(self.workers)
        exhausted = False
        while True:
            while idle and not exhausted and (deadline is None or time.monotonic() < deadline):
                job = next(jobs, None)
                if job is None:
                    exhausted = True
                    break
                w = idle.pop()
                w.submit(job)
                busy.append(w)
            if not busy:
                return
            ready = multiprocessing.connection.wait(
                [w.connection for w in busy] + [w.process.sentinel for w in busy], 1
            )
            now = time.monotonic()
            for w in list(busy):
                outcome = None
                if w.connection in ready:
                    try:
                        outcome = w.connection.recv()
                    except (EOFError, OSError):  # the worker is gone: wait for its exit status
                        w.process.join(5)
                    if outcome == "ready":
                        w.started, w.ready, outcome = now, True, None
                        continue
                if outcome is None and not w.process.is_alive():
                    outcome = Outcome("crash", 0, f"worker exited with {w.process.exitcode}")
                elif outcome is None and now - w.started > (self.timeout if w.ready else STARTUP):
                    outcome = Outcome("hang", 0, f"no answer within {self.timeout:g} s")
                if outcome is None:
                    continue
                busy.remove(w)
                job = w.job
                idle.append(self._replace(w) if outcome.kind in ("crash", "hang") else w)
                yield job, outcome


def _differences(case: Case, base: Case) -> list:
    """The argument positions (and list items) where the case differs from its baseline."""
    spots = []
    for i, (a, b) in enumerate(zip(case.args, base.args)):
        if a != b:
            spots.append(i)
    return spots


def shrink(pool: Pool, case: Case, outcome: Outcome, baseline_args) -> tuple[Case, Outcome]:
    """Put baseline arguments back one at a time while the outcome stays as bad in the same way."""
    base = Case(case.op, case.soc, case.strict, baseline_args, base=case.base, release=case.release)
    current, current_outcome = copy.deepcopy(case), outcome
    for i in _differences(case, base):
        trial = copy.deepcopy(current)
        trial.args[i] = copy.deepcopy(base.args[i])
        ((_, got),) = list(pool.run([("case", trial)]))
        if got.kind == outcome.kind:
            current, current_outcome = trial, got
    # strict mode and the release only matter when they change the outcome
    for simpler in ({"strict": False}, {"release": ""}):
        trial = dataclasses.replace(current, **simpler)
        if trial == current:
            continue
        ((_, got),) = list(pool.run([("case", trial)]))
        if got.kind == outcome.kind:
            current, current_outcome = trial, got
    current.mutations = ()
    return current, current_outcome


def fuzz(
    seed: int,
    calls: int,
    workers: int = 2,
    timeout: float = 20.0,
    seconds: float | None = None,
    start: int = 0,
    progress=None,
    shrink_limit: int = 20,
) -> Result:
    """`calls` cases from `start` on (or as many as fit in `seconds`); findings shrunk (the first
    `shrink_limit` of them)."""
    result = Result()
    began = time.monotonic()
    deadline = began + seconds if seconds else None
    pool = Pool(seed, workers, timeout)
    try:
        try:
            for (_, index), outcome in pool.run((("gen", i) for i in range(start, start + calls)), deadline):
                case = generate(seed, index)
                result.calls += 1
                result.counts[case.op, outcome.kind] += 1
                if outcome.bad:
                    result.findings.append(Finding(index, case, outcome))
                if progress and result.calls % progress == 0:
                    print(
                        f"{result.calls} calls in {time.monotonic() - began:.0f} s, {len(result.findings)} bad",
                        file=sys.stderr,
                        flush=True,
                    )
        except KeyboardInterrupt:  # stopped (Ctrl-C, SIGTERM): the counts so far, then the findings
            result.interrupted = True
        for finding in result.findings[:shrink_limit]:
            base = baseline_of(seed, finding.index)
            finding.shrunk, finding.shrunk_outcome = shrink(pool, finding.case, finding.outcome, base)
    finally:
        pool.close()
    result.seconds = time.monotonic() - began
    return result
