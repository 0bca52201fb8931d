"""Ordered commits for the SparseFlashAttentionGrad kernel's worker threads.

Steps are computed in parallel (numpy releases the GIL in matmul and elementwise loops), but their
dK/dV/dQ contributions go into shared fp32 sums in step order, so the result does not depend on
thread timing (the NPU's atomic adds do; the emulator need not).
"""

import threading


class OrderedCommit:
    """Lets tasks 0, 1, 2, ... run a critical section strictly in task order.

    Workers compute steps in parallel but add their contributions to the shared fp32 sums one
    step after another.
    """

    def __init__(self):
        self._next = 0
        self._cond = threading.Condition()

    def run(self, task: int, compute, commit):
        """``commit(compute())``, the commits of all tasks strictly in task order.

        Computations overlap freely; the turn passes on even when one fails, so no later task
        waits forever.
        """
        try:
            item = compute()
        except BaseException:
            self._wait(task)
            self._pass(task)
            raise
        self._wait(task)
        try:
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
