"""Timing for the benchmarks: contenders take turns, so a busy machine slows them alike."""
import time


def best_times(contenders: dict, rounds: int) -> dict:
    """The best of `rounds` timed calls of each callable, after one untimed round (first touch,
    thread pools), all run in turns."""
    best = {name: float("inf") for name in contenders}
    for timed in [False] + [True] * rounds:
        for name, call in contenders.items():
            start = time.perf_counter()
            call()
            if timed:
                best[name] = min(best[name], time.perf_counter() - start)
    return best
