"""LightningIndexerGrad kernel pieces: row plans, findings, determinism, bounded memory."""

import tracemalloc

import ml_dtypes
import numpy as np

from aclnn_emu.kernels.sparse_attention.lightning_indexer_grad import lightning_indexer_grad
from aclnn_emu.kernels.sparse_attention.lightning_indexer_plan import batch_lengths, plan_bsnd, plan_tnd
from golden.lightning_indexer_grad import make_case, reference
from precision import assert_meets

BF16 = np.dtype(ml_dtypes.bfloat16)


def test_bsnd_plan_counts_causal_keys_bottom_right():
    plan = plan_bsnd(batch=2, seq_q=4, seq_k=6, top_k=4, sparse_mode=3)
    assert plan.n.tolist() == [3, 4, 4, 4] * 2  # clamp(S2 - S1 + s1 + 1, 0, topK)
    assert plan.kbase.tolist() == [0] * 4 + [6] * 4
    assert plan_bsnd(1, 4, 2, 8, 3).n.tolist() == [0, 0, 1, 2]
    assert plan_bsnd(1, 3, 2, 8, 0).n.tolist() == [8, 8, 8]  # mode 0 reads every entry


def test_tnd_plan_uses_cumulative_offsets():
    plan = plan_tnd(np.array([2, 5]), np.array([4, 10]), tokens_q=6, top_k=8, sparse_mode=3)
    assert plan.n.tolist() == [3, 4, 4, 5, 6, 0]  # token 5 lies past cu_q[-1]
    assert plan.kbase[:5].tolist() == [0, 0, 4, 4, 4]
    assert plan.klen[:5].tolist() == [4, 4, 6, 6, 6]
    assert plan.orphans == 1
    # An empty middle batch does not take the next batch's rows.
    assert plan_tnd(np.array([1, 1, 3]), np.array([5, 5, 9]), 3, 8, 3).kbase.tolist() == [0, 5, 5]
    assert batch_lengths([2, 2, 1]).tolist() == [2, 0, -1]


def flat_inputs(case):
    q, k = case["query"], case["key"]
    rows = q.shape[0] * q.shape[1]
    return (
        q.reshape(rows, 64, 128),
        k.reshape(-1, 128),
        case["dy"].reshape(rows, -1),
        case["indices"].reshape(rows, -1),
        case["weights"].reshape(rows, 64),
    )


def test_findings_and_skipped_entries():
    case = make_case(np.random.default_rng(1), BF16, "BSND", 0, batch=2, seq_q=3, seq_k=10, top_k=6)
    case["indices"][1, 2, 4] = 10  # past batch 1's keys and past the key tensor
    case["indices"][0, 0, 0] = 15  # inside the key tensor, but batch 1's: outside the row's batch
    *grads, findings = lightning_indexer_grad(*flat_inputs(case), plan_bsnd(2, 3, 10, 6, 0))
    assert findings.bad_entries == 2 and findings.first_bad == (0, 0, 15)
    assert findings.empty_rows == 0
    golden = reference(*(case[n] for n in ("query", "key", "dy", "indices", "weights")), sparse_mode=0)
    for actual, expected in zip(grads, golden):
        assert_meets(actual, expected.reshape(actual.shape), BF16)


def test_results_do_not_depend_on_timing():
    case = make_case(np.random.default_rng(2), BF16, "BSND", 3, batch=1, seq_q=24, seq_k=40, top_k=16)
    plan = plan_bsnd(1, 24, 40, 16, 3)
    runs = [lightning_indexer_grad(*flat_inputs(case), plan, partials=2, chunk_rows=2) for _ in range(3)]
    for run in runs[1:]:
        assert all(a.tobytes() == b.tobytes() for a, b in zip(run[:3], runs[0][:3]))
    single = lightning_indexer_grad(*flat_inputs(case), plan, partials=1)
    assert single[0].tobytes() == runs[0][0].tobytes() and single[2].tobytes() == runs[0][2].tobytes()


def test_memory_grows_with_the_chunk_not_the_sequence():
    def peak(seq_q):
        case = make_case(
            np.random.default_rng(3), BF16, "BSND", 0, batch=1, seq_q=seq_q, seq_k=512, top_k=512, duplicates=False
        )
        inputs = flat_inputs(case)
        out = tuple(np.empty(a.shape, BF16) for a in (inputs[0], inputs[1], inputs[4]))
        tracemalloc.start()
        lightning_indexer_grad(*inputs, plan_bsnd(1, seq_q, 512, 512, 0), out=out, partials=1)
        size = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return size

    small, large = peak(16), peak(128)
    assert large < 1.3 * small, (small, large)
    assert large < 8 * 4 * 512 * 128 * 4  # a few [chunk, topK, D] fp32 buffers


def test_overflowing_y_is_masked_not_multiplied():
    # fp16 Y = w*dy = 240000 rounds to inf; where the score is negative G must be 0, not inf*0 = NaN.
    q = np.zeros((1, 64, 128), np.float16)
    q[0, 0] = 1
    key = np.stack([np.full(128, 0.01), np.full(128, -0.01)]).astype(np.float16)  # scores +1.28, -1.28
    w = np.zeros((1, 64), np.float16)
    w[0, 0] = 60000
    dy = np.full((1, 2), 4, np.float16)
    dq, dk, dw, _ = lightning_indexer_grad(q, key, dy, np.array([[0, 1]], np.int32), w, plan_bsnd(1, 1, 2, 2, 0))
    assert np.all(dk[1] == 0)
    assert np.all(np.isposinf(dk[0, :1])) and np.all(np.isposinf(dq[0, 0]))
