"""Graph capture and stream status from Python (aclnn_emu.capture, Graph, busy), over the same
runtime the C ABI uses (tests/test_runtime_capture.py has the codes with their sources)."""

import numpy as np
import pytest

import aclnn_emu as ae

RNG = np.random.default_rng(7)


def _scatter_case():
    key = ae.to_device(RNG.standard_normal((2, 1, 16)).astype(np.float16))
    cache = ae.to_device(np.zeros((1, 4, 1, 16), np.float16))
    values = ae.to_device(np.zeros((1, 4, 1, 16), np.float16))
    slots = ae.to_device(np.array([2, 0], np.int32))
    return key, cache, values, slots


def test_a_captured_operator_runs_only_when_replayed():
    with ae.Device(0) as dev, dev.stream() as s:
        key, cache, values, slots = _scatter_case()
        step = ae.ops.ScatterPaKvCache.prepare(key, cache, slots, key, values)
        with ae.capture(s) as graph:
            step.run(stream=s)
        assert graph.handle
        assert not ae.numpy(cache).any()  # recorded, not run
        with graph:
            for _ in range(3):
                graph.replay(s)
            s.synchronize()
            assert not ae.busy(s)
        written = ae.numpy(cache)
        assert (written[0, 2] == ae.numpy(key)[0]).all() and (written[0, 0] == ae.numpy(key)[1]).all()
        step.close()
        for tensor in (key, cache, values, slots):
            ae.free(tensor)


def test_a_capture_ends_when_its_block_raises():
    with ae.Device(0) as dev, dev.stream() as s:
        with pytest.raises(RuntimeError, match="inside"):
            with ae.capture(s):
                raise RuntimeError("inside")
        s.synchronize()  # not capturing any more: synchronising is allowed again


def test_capture_failures_raise_by_status_code():
    with ae.Device(0) as dev, dev.stream() as s:
        with ae.capture(s) as graph:
            with pytest.raises(ae.AclnnError) as failure:
                with ae.capture(s):
                    pass
            assert failure.value.status == 107027  # ACL_ERROR_RT_STREAM_CAPTURED
            with pytest.raises(ae.AclnnError) as failure:
                s.synchronize()
            assert failure.value.status == 107027
        graph.close()
        with pytest.raises(ae.AclnnError) as failure:
            graph.replay(s)
        assert failure.value.status == 100000  # no model any more: ACL_ERROR_INVALID_PARAM
