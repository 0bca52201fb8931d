"""Ordered commits for the SparseFlashAttentionGrad kernel's worker threads.

Row groups are computed in parallel (numpy releases the GIL in matmul and elementwise loops), but
their dK/dV contributions go into one shared fp32 accumulator in group order, so the result does
not depend on thread timing (the NPU's atomic adds do; the emulator need not).
"""
import threading


class OrderedCommit:
    """Lets tasks 0, 1, 2, ... run a critical section strictly in task order.

    Workers compute row groups in parallel but add their dK/dV contributions to the shared fp32
    accumulators one group after another, so results do not depend on thread timing.
    """

    def __init__(self):
        self._next = 0
        self._cond = threading.Condition()

    def run(self, task: int, contributions, commit):
        """Compute ``contributions`` (an iterator) and ``commit`` each item in task order.

        The first item is computed before waiting, so neighbouring tasks overlap; the turn passes
        on even when the computation fails, so no later task waits forever.
        """
        items = iter(contributions)
        try:
            first = next(items, None)
        except BaseException:
            self._wait(task)
            self._pass(task)
            raise
        self._wait(task)
        try:
            if first is not None:
                commit(first)
                for item in items:
                    commit(item)
        finally:
            self._pass(task)

    def _wait(self, task: int):
        with self._cond:
            self._cond.wait_for(lambda: self._next == task)

    def _pass(self, task: int):
        with self._cond:
            self._next = task + 1
            self._cond.notify_all()
