"""The kernels' worker pool: results in order, and the process's BLAS thread count left as found."""
import numpy as np
import pytest

from aclnn_emu.kernels import parallel


def test_results_come_back_in_item_order():
    assert parallel.map_ordered(lambda i: i * i, range(50)) == [i * i for i in range(50)]


def test_kernel_work_leaves_the_blas_thread_count_as_it_found_it(monkeypatch):
    set_threads = parallel._set_local_blas_threads()
    if set_threads is None:
        pytest.skip("numpy's BLAS has no openblas_set_num_threads_local")
    before = set_threads(3)              # a count the pool's own setting (1) cannot be mistaken for
    monkeypatch.setattr(parallel, "_pool", None)      # fresh workers: each sets its BLAS up on start
    try:
        seen = parallel.map_ordered(lambda i: float((np.ones((96, 96)) @ np.ones((96, 96)))[0, 0]), range(8))
        assert seen == [96.0] * 8
        assert set_threads(3) == 3
    finally:
        set_threads(before)
