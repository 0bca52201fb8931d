"""The kernels' worker pool: results in order, the process's BLAS thread count left as found, and
cancellation between items and blocks, the worker count from ACLNN_EMU_THREADS."""

import os
import threading
import time

import numpy as np
import pytest

from aclnn_emu import config
from aclnn_emu.kernels import parallel


def test_results_come_back_in_item_order():
    assert parallel.map_ordered(lambda i: i * i, range(50)) == [i * i for i in range(50)]


def test_kernel_work_leaves_the_blas_thread_count_as_it_found_it(monkeypatch):
    set_threads = parallel._set_local_blas_threads()
    if set_threads is None:
        pytest.skip("numpy's BLAS has no openblas_set_num_threads_local")
    before = set_threads(3)  # a count the pool's own setting (1) cannot be mistaken for
    monkeypatch.setattr(parallel, "_pool", None)  # fresh workers: each sets its BLAS up on start
    try:
        seen = parallel.map_ordered(lambda i: float((np.ones((96, 96)) @ np.ones((96, 96)))[0, 0]), range(8))
        assert seen == [96.0] * 8
        assert set_threads(3) == 3
    finally:
        set_threads(before)


def _cancelled_at(cancel_at: int, items: int, fn):
    """Run fn over range(items) as a stream task whose token is cancelled while item `cancel_at` runs;
    returns the items that ran, in the order they started."""
    token, started = parallel.Token(), []

    def item(i):
        started.append(i)
        if i == cancel_at:
            token.cancel()
        fn(i)

    with parallel.task_scope(token), pytest.raises(parallel.Cancelled):
        parallel.map_ordered(item, range(items))
    return started


def test_a_cancelled_task_starts_no_further_item():
    started = _cancelled_at(3, 64, lambda i: None)
    assert sorted(started) == list(range(len(started))) and len(started) < 64  # a prefix, then nothing


def test_items_waiting_for_their_predecessors_never_wait_for_a_skipped_one():
    """SparseFlashAttentionGrad's ordered commits: item i waits until item i-1 has finished."""
    done, turn = set(), threading.Condition()

    def ordered(i):
        with turn:
            assert turn.wait_for(lambda: i == 0 or i - 1 in done, timeout=10), f"item {i} waited forever"
            done.add(i)
            turn.notify_all()

    _cancelled_at(5, 200, ordered)


def test_checkpoint_raises_between_blocks_of_a_cancelled_task():
    token, blocks = parallel.Token(), []

    def kernel(i):
        for block in range(100):
            parallel.checkpoint()
            blocks.append(block)
            if block == 10:
                token.cancel()

    with parallel.task_scope(token), pytest.raises(parallel.Cancelled):
        parallel.map_ordered(kernel, [0])
    assert blocks == list(range(11))
    parallel.checkpoint()  # outside the task: nothing to cancel


def test_aclnn_emu_threads_sets_the_worker_count(monkeypatch):
    if parallel._set_local_blas_threads() is None:
        pytest.skip("numpy's BLAS has no openblas_set_num_threads_local: one worker")
    for text, count in (("3", 3), ("1", 1), ("auto", max(1, min(os.cpu_count() or 1, 16)))):
        monkeypatch.setattr(config, "current", config.check({"ACLNN_EMU_THREADS": text})[0])
        assert parallel.workers() == count
        threads = set()
        parallel.map_ordered(lambda i: threads.add(threading.get_ident()) or time.sleep(0.01), range(12))
        assert len(threads) <= count


def test_a_bad_thread_count_is_refused_with_what_is_allowed():
    for text in ("0", "-2", "many", "257"):
        errors = config.check({"ACLNN_EMU_THREADS": text})[1]
        assert errors == [f"ACLNN_EMU_THREADS='{text}' is not allowed: use auto or an integer from 1 to 256"]
