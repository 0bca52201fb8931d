"""Timing for the benchmarks: contenders take turns, so a busy machine slows them alike.

A library's thread pool keeps spinning for a while after its call returns (OpenBLAS's threads for
about 0.1 s after a multithreaded sgemm, PyTorch's OpenMP threads for some milliseconds) and takes
the cores from whichever contender runs next: measured, the FlashAttentionScoreV2 forward ran
6 % slower right after PyTorch's SDPA and 30 % slower right after numpy's sgemm than after a pause.
So every call starts after a pause of SETTLE_S, which also makes the order of the contenders
irrelevant.
"""

import time

SETTLE_S = 0.25


def best_times(contenders: dict, rounds: int, settle: float = SETTLE_S) -> dict:
    """The best of `rounds` timed calls of each callable, after one untimed round (first touch,
    thread pools), all run in turns, each after a pause of `settle` seconds."""
    best = {name: float("inf") for name in contenders}
    for timed in [False] + [True] * rounds:
        for name, call in contenders.items():
            time.sleep(settle)
            start = time.perf_counter()
            call()
            if timed:
                best[name] = min(best[name], time.perf_counter() - start)
    return best
