"""aclnnLightningIndexerGrad numerics through the Python API, against the float64 golden and,
where PyTorch is installed, against torch.autograd of the forward; CANN's precision standard."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import ties
from precision import assert_meets
from aclnn_emu.runtime import sanitizer
from golden.lightning_indexer_grad import make_case, reference

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)


def run_op(case, layout, sparse_mode):
    """Both phases on device tensors; returns (dq, dk, dweights, sanitizer kinds reported)."""
    before = len(sanitizer.reports())
    inputs = [ae.to_device(case[name]) for name in ("query", "key", "dy", "indices", "weights")]
    seqs = [ae.to_device(case[name]) if name in case else None for name in ("cu_seq_q", "cu_seq_k")]
    outs = [ae.empty(case[name].shape, ae.dtypes.from_numpy(case[name].dtype)) for name in ("query", "key", "weights")]
    ae.run("LightningIndexerGrad", *inputs, *seqs, 64, layout, sparse_mode, 65536, 65536, False, *outs)
    results = [ae.numpy(t) for t in outs]
    for t in inputs + outs + [s for s in seqs if s is not None]:
        ae.free(t)
    return (*results, sorted({kind for kind, _ in sanitizer.reports()[before:]}))


def golden_of(case, layout, sparse_mode):
    return reference(
        case["query"],
        case["key"],
        case["dy"],
        case["indices"],
        case["weights"],
        layout=layout,
        sparse_mode=sparse_mode,
        cu_seq_q=case.get("cu_seq_q"),
        cu_seq_k=case.get("cu_seq_k"),
    )


def check(actual, golden, dtype):
    for name, a, g in zip(("dq", "dk", "dweights"), actual, golden):
        assert a.shape == g.shape, name
        assert_meets(a, g, dtype, name)


CASES = {
    "BSND": dict(batch=2, seq_q=8, seq_k=48, top_k=16),
    "TND": dict(lengths_q=[5, 1, 7], lengths_k=[40, 9, 30], top_k=16),
}


@pytest.mark.parametrize("dtype", [BF16, FP16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("sparse_mode", [0, 3])
def test_matches_golden(dtype, layout, sparse_mode):
    # Duplicated indices in every row; in mode 3 the row tails are -1 and must be ignored.
    case = make_case(np.random.default_rng(7), dtype, layout, sparse_mode, **CASES[layout])
    *actual, reported = run_op(case, layout, sparse_mode)
    check(actual, golden_of(case, layout, sparse_mode), dtype)
    assert reported == []


def test_medium_bsnd_bf16():
    case = make_case(
        np.random.default_rng(3), BF16, "BSND", 3, batch=1, seq_q=96, seq_k=384, top_k=256, duplicates=False
    )
    *actual, reported = run_op(case, "BSND", 3)
    check(actual, golden_of(case, "BSND", 3), BF16)
    assert reported == []


def test_exact_all_ones_with_duplicates():
    # Reference §1.D.2: ones everywhere, every index 1, fp16, sparse mode 3, n = topK = 128 per row:
    # S = 128, dW = 128*128, dq = 128, dk[b, 1] = S1*topK*N1 and every other key row 0.
    ones = lambda *shape: np.ones(shape, FP16)
    case = dict(
        query=ones(2, 3, 64, 128),
        key=ones(2, 200, 1, 128),
        dy=ones(2, 3, 128),
        indices=np.ones((2, 3, 128), np.int32),
        weights=ones(2, 3, 64),
    )
    dq, dk, dw, reported = run_op(case, "BSND", 3)
    assert np.all(dq == 128) and np.all(dw == 16384)
    assert np.all(dk[:, 1] == 3 * 128 * 64)
    assert np.count_nonzero(dk) == 2 * 128
    assert reported == []


def test_relu_gradient_at_zero_is_zero():
    # Zero key rows give scores of exactly 0: relu'(0) = 0, so they receive no gradient at all.
    case = make_case(np.random.default_rng(6), FP16, "BSND", 0, batch=1, seq_q=4, seq_k=12, top_k=8)
    case["key"][0, :3] = 0
    case["indices"][0, :, :3] = [0, 1, 2]
    dq, dk, dw, _ = run_op(case, "BSND", 0)
    assert not dk[0, :3].any()
    check((dq, dk, dw), golden_of(case, "BSND", 0), FP16)


def test_minus_one_in_mode_0_is_reported_and_skipped():
    case = make_case(np.random.default_rng(11), FP16, "BSND", 3, batch=1, seq_q=6, seq_k=10, top_k=16)
    # Mode 3 data (rows end in -1) run as mode 0: every entry is read, the -1s are out of range.
    assert (case["indices"] == -1).any()
    *actual, reported = run_op(case, "BSND", 0)
    check(actual, golden_of(case, "BSND", 0), FP16)
    assert reported == ["index-out-of-range"]


def test_rows_without_keys_are_zero_and_reported():
    # Mode 3 with S1 > S2: rows s1 < S1 - S2 see no key (n = 0); the NPU leaves them unwritten.
    # Zeros there are the emulator's choice, not a CANN fact.
    case = make_case(np.random.default_rng(5), BF16, "BSND", 3, batch=1, seq_q=12, seq_k=4, top_k=8)
    dq, dk, dw, reported = run_op(case, "BSND", 3)
    assert not dq[0, :8].any() and not dw[0, :8].any()
    assert dq[0, 8:].any()
    check((dq, dk, dw), golden_of(case, "BSND", 3), BF16)
    assert reported == ["unwritten-output"]


def test_any_nonzero_sparse_mode_is_causal():
    case = make_case(np.random.default_rng(9), FP16, "BSND", 3, batch=1, seq_q=4, seq_k=20, top_k=8)
    assert [a.tobytes() for a in run_op(case, "BSND", 5)[:3]] == [a.tobytes() for a in run_op(case, "BSND", 3)[:3]]


def test_non_contiguous_query_is_accepted():
    case = make_case(np.random.default_rng(2), FP16, "BSND", 3, batch=1, seq_q=4, seq_k=20, top_k=8)
    storage = np.ascontiguousarray(case["query"].transpose(0, 1, 3, 2))  # [B, S1, D, N1]
    base = ae.to_device(storage)
    query = ae.Tensor(
        case["query"].shape,
        base.dtype,
        strides=(4 * 128 * 64, 128 * 64, 1, 64),
        addr=base.addr,
        storage_shape=storage.shape,
    )
    inputs = [query] + [ae.to_device(case[n]) for n in ("key", "dy", "indices", "weights")]
    outs = [ae.empty(case[n].shape, base.dtype) for n in ("query", "key", "weights")]
    ae.run("LightningIndexerGrad", *inputs, None, None, 64, "BSND", 3, 0, 0, False, *outs)
    check([ae.numpy(t) for t in outs], golden_of(case, "BSND", 3), FP16)


def torch_grads(case, layout, sparse_mode):
    """torch.autograd of I = sum_h w * relu(q . k[idx]) over each row's first n entries, in fp32.

    The NPU rounds the gradient reaching relu's output (Y = w * dy) to the input dtype before it
    goes on (reference §1.C); a hook on that tensor does the same, everything else is autograd.
    """
    torch = pytest.importorskip("torch")
    narrow = {BF16: torch.bfloat16, FP16: torch.float16}[case["query"].dtype]
    q, k, w = (torch.tensor(case[n].astype(np.float32), requires_grad=True) for n in ("query", "key", "weights"))
    dy, idx = torch.tensor(case["dy"].astype(np.float32)), torch.tensor(case["indices"].astype(np.int64))
    top_k = dy.shape[-1]
    if layout == "BSND":
        spans = [(q[b], k[b, :, 0], w[b], dy[b], idx[b]) for b in range(q.shape[0])]
    else:
        ends_q, ends_k = case["cu_seq_q"].tolist(), case["cu_seq_k"].tolist()
        spans = [
            (q[a:e], k[c:f, 0], w[a:e], dy[a:e], idx[a:e])
            for a, e, c, f in zip([0] + ends_q[:-1], ends_q, [0] + ends_k[:-1], ends_k)
        ]
    loss = 0
    for qb, kb, wb, dyb, ib in spans:
        seq_q, seq_k = qb.shape[0], kb.shape[0]
        s1 = torch.arange(seq_q)[:, None]
        n = top_k if sparse_mode == 0 else (seq_k - seq_q + s1 + 1).clamp(0, top_k)
        live = torch.arange(top_k)[None, :] < n
        scores = torch.relu(torch.einsum("shd,skd->shk", qb, kb[ib.clamp(min=0)]))
        scores.register_hook(lambda grad: grad.to(narrow).float())
        index_scores = torch.einsum("sh,shk->sk", wb, scores) * live
        loss = loss + (index_scores * dyb).sum()
    loss.backward()
    return q.grad.numpy(), k.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("dtype", [BF16, FP16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("layout,sparse_mode", [("BSND", 3), ("TND", 0)])
def test_matches_torch_autograd(dtype, layout, sparse_mode):
    case = make_case(np.random.default_rng(4), dtype, layout, sparse_mode, **CASES[layout])
    expected = torch_grads(case, layout, sparse_mode)
    *actual, _ = run_op(case, layout, sparse_mode)
    check(actual, expected, dtype)


def test_topk_beyond_the_workspace_is_reported():
    case = make_case(np.random.default_rng(12), BF16, "BSND", 3, batch=1, seq_q=2, seq_k=6, top_k=2049)
    *actual, reported = run_op(case, "BSND", 3)
    check(actual, golden_of(case, "BSND", 3), BF16)
    assert reported == ["workspace-overflow"]


def test_short_dy_is_read_as_zeros_and_reported():
    case = make_case(np.random.default_rng(13), FP16, "BSND", 3, batch=1, seq_q=4, seq_k=20, top_k=8)
    short = dict(case, dy=case["dy"][:, :3])  # the kernel reads 4 rows of 8
    *actual, reported = run_op(short, "BSND", 3)
    padded = dict(case, dy=np.concatenate([short["dy"], np.zeros_like(case["dy"][:, :1])], axis=1))
    check(actual, golden_of(padded, "BSND", 3), FP16)
    assert reported == ["out-of-bounds-read"]


def test_tnd_empty_batch_is_reported_and_computed_as_intended():
    case = make_case(np.random.default_rng(14), BF16, "TND", 3, lengths_q=[2, 0, 3], lengths_k=[9, 4, 12], top_k=8)
    *actual, reported = run_op(case, "TND", 3)
    check(actual, golden_of(case, "TND", 3), BF16)
    assert reported == ["unsupported-input"]


def test_tnd_rows_past_the_last_offset_are_zero_and_reported():
    case = make_case(np.random.default_rng(15), BF16, "TND", 0, lengths_q=[3, 3], lengths_k=[9, 12], top_k=8)
    case["cu_seq_q"] = np.array([3, 5], np.int32)  # token 5 belongs to no batch
    dq, dk, dw, reported = run_op(case, "TND", 0)
    assert not dq[5].any() and not dw[5].any()
    check((dq, dk, dw), golden_of(case, "TND", 0), BF16)
    assert reported == ["unwritten-output"]


def test_key_batch_smaller_than_query_batch_is_reported():
    # The tiling takes B from the query: batch 1's keys and dk rows lie past a one-batch key tensor.
    case = make_case(np.random.default_rng(16), FP16, "BSND", 0, batch=2, seq_q=2, seq_k=10, top_k=4)
    case["key"] = case["key"][:1]
    dq, dk, dw, reported = run_op(case, "BSND", 0)
    assert reported == ["index-out-of-range", "out-of-bounds-write", "unwritten-output"]
    assert not dq[1].any() and dq[0].any()


# --- rounding-mode ties (tests/ties.py) --------------------------------------------------------


def tie_case(dtype, seed=0, rows=4, keys=16, top_k=8, heads=64, dim=128, active=6):
    """BSND inputs (batch 1, sparse mode 0) where every fp32 sum is exact and each rounded quantity
    lands on midpoints: q and key entries in {-1, 0, 1} (first 4 dims, `active` heads per row) make
    the scores small integers; dy holds p-bit values in [1, 2) (p = the dtype's precision), so
    relu(S)·dy sums (dweights) and G·K sums (dq) are ties about 1/8 of the time; weights ±{1,3,5}/4
    and ±{1,3,5}/2 make Y = w·dy ties up to 1/4 of the time, and dk sums them over rows and heads."""
    rng = np.random.default_rng(seed)
    name = np.dtype(dtype).name
    p = ties.FORMATS[name][0]
    q = np.zeros((1, rows, heads, dim))
    for r in range(rows):
        q[0, r, rng.permutation(heads)[:active], :4] = rng.integers(-1, 2, (active, 4))
    k = np.zeros((1, keys, 1, dim))
    k[..., :4] = rng.integers(-1, 2, (1, keys, 1, 4))
    dy = rng.integers(2 ** (p - 1), 2**p, (1, rows, top_k)) * 2.0 ** (1 - p) * rng.choice([-1, 1], (1, rows, top_k))
    w = rng.choice([1.0, 3.0, 5.0], (1, rows, heads)) * rng.choice([0.25, 0.5, -0.25, -0.5], (1, rows, heads))
    idx = rng.integers(0, keys, (1, rows, top_k)).astype(np.int32)
    case = dict(query=q.astype(dtype), key=k.astype(dtype), dy=dy.astype(dtype), indices=idx, weights=w.astype(dtype))

    def golden(modes):
        dq, dk, dw = np.zeros(q.shape), np.zeros(k.shape), np.zeros(w.shape)
        for r in range(rows):
            kr = k[0, idx[0, r], 0]  # [topK, D]
            relu = np.maximum(q[0, r] @ kr.T, 0)  # [H, topK]
            dw[0, r] = relu @ dy[0, r]
            y = ties.round_to(w[0, r][:, None] * dy[0, r][None, :], name, modes["Y"])
            g = np.where(relu > 0, y, 0.0)
            dq[0, r] = g @ kr
            np.add.at(dk[0, :, 0], idx[0, r], g.T @ q[0, r])
        return dict(
            dq=ties.to_output(dq, name, modes["dq"]),
            dk=ties.to_output(dk, name, modes["dk"]),
            dweights=ties.to_output(dw, name, modes["dweights"]),
        )

    return case, golden


@pytest.mark.parametrize("dtype", [BF16, FP16], ids=["bf16", "fp16"])
def test_roundings_at_ties(dtype):
    """Y = w·dy and dq round to nearest even (fixpipe, plain casts); dweights and dk CAST_ROUND."""
    case, golden = tie_case(dtype)
    want = ties.assert_sensitive(
        golden, {"Y": "even", "dq": "even", "dk": "away", "dweights": "away"}, "LIG", finals=("dq", "dk", "dweights")
    )
    dq, dk, dw, reported = run_op(case, "BSND", 0)
    assert reported == []
    for name, got in (("dq", dq), ("dk", dk), ("dweights", dw)):
        ties.assert_bits(got, want[name], name)
