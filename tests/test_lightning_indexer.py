"""aclnnLightningIndexer numerics through the Python API against the float64 golden
(tests/golden/lightning_indexer.py), with CANN's precision standard for the values and exact
indices where the scores are exact (ties, padding), near-tie swaps explained otherwise."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import pytest_plugin
from golden.lightning_indexer import reference, row_scores
from precision import assert_meets

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
INT64_MAX = (1 << 63) - 1


def run_op(
    query, key, weights, *, count, mode, layout="BSND", layout_key=None, seq_q=None, seq_k=None, table=None, values=True
):
    """Both phases; returns (indices [rows, count], values [rows, count] as float64 or None)."""
    tensors = [ae.to_device(a) for a in (query, key, weights)]
    optional = [None if a is None else ae.to_device(np.asarray(a, np.int32)) for a in (seq_q, seq_k, table)]
    rows = int(np.prod(query.shape[:-2]))
    lead = query.shape[:-2]
    idx = ae.empty((*lead, 1, count), ae.dtypes.from_numpy(np.dtype(np.int32)))
    val = ae.empty((*lead, 1, count), ae.dtypes.from_numpy(query.dtype))
    ae.run(
        "LightningIndexer",
        *tensors,
        *optional,
        layout,
        layout_key or layout,
        count,
        mode,
        INT64_MAX,
        INT64_MAX,
        values,
        idx,
        val,
    )
    got_idx = ae.numpy(idx).reshape(rows, count)
    got_val = ae.numpy(val).reshape(rows, count).astype(np.float64) if values else None
    for t in tensors + [t for t in optional if t is not None] + [idx, val]:
        ae.free(t)
    return got_idx, got_val


def random_case(rng, dtype, batch=1, s1=8, s2=600, heads=64):
    query = rng.standard_normal((batch, s1, heads, 128)).astype(dtype)
    key = rng.standard_normal((batch, s2, 1, 128)).astype(dtype)
    weights = (rng.standard_normal((batch, s1, heads)) * 0.1).astype(dtype)
    return query, key, weights


def check(got, gold, query, key, weights, flat_keys_of_row, dtype):
    """Values to the precision standard; indices equal except near-ties of the float64 scores."""
    idx, val = got
    g_idx, g_val = gold
    assert ((idx == -1) == (g_idx == -1)).all(), "padding differs"
    finite = g_idx >= 0
    assert_meets(val[finite], g_val[finite], dtype, "sparseValuesOut")
    assert np.isneginf(val[~finite]).all()
    heads, dim = query.shape[-2], query.shape[-1]
    q, w = query.reshape(-1, heads, dim), weights.reshape(-1, heads)
    for r, k in zip(*np.nonzero(idx != g_idx)):
        keys = flat_keys_of_row(r)
        mine, theirs = row_scores(q[r], keys[[idx[r, k], g_idx[r, k]]], w[r])
        scale = np.abs(g_val[r][finite[r]]).max()
        assert abs(mine - theirs) <= 1e-5 * scale, f"row {r} position {k}: {idx[r, k]} vs {g_idx[r, k]}"


@pytest.mark.parametrize("dtype", [BF16, FP16])
@pytest.mark.parametrize("mode", [0, 3])
def test_bsnd_matches_golden(dtype, mode):
    rng = np.random.default_rng(1)
    query, key, weights = random_case(rng, dtype, batch=2, s1=6, s2=700)
    got = run_op(query, key, weights, count=64, mode=mode)
    gold = reference(query, key, weights, sparse_count=64, sparse_mode=mode)
    check(got, gold, query, key, weights, lambda r: key[r // 6, :, 0], dtype)


def test_fp32_weights_from_9_0_0(monkeypatch):
    """CANN 9.x pairs FLOAT weights with bf16 query/key (lightning_indexer_def.cpp): the scores use the
    weights unrounded (the golden gets the FLOAT weights; rounded to bf16 they would miss it)."""
    pytest_plugin.select(monkeypatch, cann_version="9.0.0")
    rng = np.random.default_rng(6)
    query, key, _ = random_case(rng, BF16, batch=1, s1=6, s2=300, heads=8)
    weights = (rng.standard_normal((1, 6, 8)) * 0.1).astype(np.float32)
    got = run_op(query, key, weights, count=32, mode=3)
    gold = reference(query, key, weights, sparse_count=32, sparse_mode=3)
    check(got, gold, query, key, weights, lambda r: key[0, :, 0], BF16)
    # head 1 weighs 1 + 2^-10, which bf16 rounds to 1: key 1 then ties key 0 and loses the tie
    query, key = np.zeros((1, 1, 2, 128), BF16), np.zeros((1, 2, 1, 128), BF16)
    query[0, 0, 0, 0] = query[0, 0, 1, 1] = key[0, 0, 0, 0] = key[0, 1, 0, 1] = 1
    weights = np.array([[[1, 1 + 2**-10]]], np.float32)
    assert run_op(query, key, weights, count=1, mode=0)[0][0, 0] == 1
    assert run_op(query, key, weights.astype(BF16), count=1, mode=0)[0][0, 0] == 0


@pytest.mark.parametrize("mode", [0, 3])
def test_tnd_cumulative_lengths(mode):
    rng = np.random.default_rng(2)
    lens_q, lens_k = [3, 7], [40, 530]
    query = rng.standard_normal((sum(lens_q), 16, 128)).astype(BF16)
    key = rng.standard_normal((sum(lens_k), 1, 128)).astype(BF16)
    weights = rng.standard_normal((sum(lens_q), 16)).astype(BF16)
    cu_q, cu_k = np.cumsum(lens_q), np.cumsum(lens_k)
    got = run_op(query, key, weights, count=32, mode=mode, layout="TND", seq_q=cu_q, seq_k=cu_k)
    gold = reference(query, key, weights, sparse_count=32, sparse_mode=mode, layout="TND", cu_seq_q=cu_q, cu_seq_k=cu_k)
    batch_of = lambda r: int(np.searchsorted(cu_q, r, side="right"))  # noqa: E731
    keys_of = lambda r: key[(0 if batch_of(r) == 0 else cu_k[batch_of(r) - 1]) : cu_k[batch_of(r)], 0]  # noqa: E731
    check(got, gold, query, key, weights, keys_of, BF16)


def test_bsnd_actual_lengths_and_padding():
    """Rows past a batch's actual query length, and causal rows with fewer keys than sparse_count,
    are padded with -1 / -inf; a batch with fewer keys than queries has all-padding rows."""
    rng = np.random.default_rng(3)
    query, key, weights = random_case(rng, FP16, batch=2, s1=6, s2=40, heads=8)
    act_q, act_k = [5, 6], [40, 3]
    got = run_op(query, key, weights, count=48, mode=3, seq_q=act_q, seq_k=act_k)
    gold = reference(query, key, weights, sparse_count=48, sparse_mode=3, act_q=act_q, act_k=act_k)
    assert (got[0][5] == -1).all() and (got[0][6:9] == -1).all()  # row past act_q; rows with no key
    assert (got[0][11, :3] >= 0).all() and (got[0][11, 3:] == -1).all()
    check(got, gold, query, key, weights, lambda r: key[r // 6, :, 0], FP16)


def test_paged_keys():
    rng = np.random.default_rng(4)
    query = rng.standard_normal((2, 4, 8, 128)).astype(BF16)
    cache = rng.standard_normal((6, 16, 1, 128)).astype(BF16)
    weights = rng.standard_normal((2, 4, 8)).astype(BF16)
    table = np.array([[5, 0, 3], [1, 2, 4]], np.int32)
    act_k = [40, 33]
    got = run_op(query, cache, weights, count=24, mode=3, layout_key="PA_BSND", seq_k=act_k, table=table, values=False)
    gold = reference(query, cache, weights, sparse_count=24, sparse_mode=3, act_k=act_k, block_table=table)
    flat = cache.reshape(-1, 128)
    pos = np.arange(48)
    keys_of = lambda r: flat[table[r // 4][pos // 16] * 16 + pos % 16]  # noqa: E731
    assert got[1] is None
    check((got[0], gold[1]), gold, query, cache, weights, keys_of, BF16)


def _tie_case(s1, s2, dtype):
    """Small integers: every product and sum is exact in fp32, so scores equal the float64 ones and
    ties are real. Keys repeat four patterns, so each score occurs about s2/4 times."""
    rng = np.random.default_rng(5)
    query = rng.integers(-1, 3, (1, s1, 16, 128)).astype(dtype)
    patterns = rng.integers(-1, 3, (4, 128))
    key = patterns[rng.integers(0, 4, s2)].reshape(1, s2, 1, 128).astype(dtype)
    weights = rng.choice([0.5, 1.0, 2.0], (1, s1, 16)).astype(dtype)
    return query, key, weights


@pytest.mark.parametrize("s1", [3, 4, 5, 9])
def test_tie_order_is_exact(s1):
    """Batches of up to 4 query rows keep equal scores in index order; longer batches put a later
    512-key block first among equal scores (its lower index first inside the block). 4 and 5 sit on
    either side of the boundary."""
    query, key, weights = _tie_case(s1, 1300, BF16)
    idx, val = run_op(query, key, weights, count=512, mode=0)
    g_idx, g_val = reference(query, key, weights, sparse_count=512, sparse_mode=0)
    assert (idx == g_idx).all()
    if s1 > 4:  # the rule really differs from plain index order here
        first_tie = [
            i
            for i in range(len(g_idx[0]) - 1)
            if g_val[0, i] == g_val[0, i + 1] and g_idx[0, i] // 512 != g_idx[0, i + 1] // 512
        ]
        assert first_tie and g_idx[0, first_tie[0]] > g_idx[0, first_tie[0] + 1]


@pytest.mark.parametrize(
    "dtype, dot, weight, expected",
    [
        (BF16, 257, 2.0**-8, 1.0 + 2.0**-7),  # 1 + 2^-8: halfway between bf16 1 and 1 + 2^-7
        (FP16, 2049, 2.0**-11, 1.0 + 2.0**-10),  # 1 + 2^-11: halfway between fp16 1 and 1 + 2^-10
    ],
)
def test_values_round_half_away_from_zero(dtype, dot, weight, expected):
    """The kernel narrows the fp32 scores with CAST_ROUND: a halfway score rounds away from zero
    (round-half-to-even would give 1.0)."""
    query = np.ones((1, 1, 1, 128), dtype)
    k = np.full(128, (dot - 1) // 128, np.float64)
    k[0] += dot - k.sum()
    key = k.reshape(1, 1, 1, 128).astype(dtype)
    weights = np.full((1, 1, 1), weight, dtype)
    assert float(query.astype(np.float64).ravel() @ key.astype(np.float64).ravel()) == dot
    idx, val = run_op(query, key, weights, count=4, mode=0)
    assert idx[0].tolist() == [0, -1, -1, -1]
    assert val[0, 0] == expected and np.isneginf(val[0, 1:]).all()


def _vector_unit_sum(products: np.ndarray) -> np.float32:
    """The 8.5 kernel's order (lightning_indexer_vector.h DoScale + DoReduce), written out per
    element in float32: slot i adds heads i, 16+i, 32+i, ... pass after pass; the slots past the
    largest power of two are added onto the first ones; then halves are added pairwise (one slot:
    Adds 0, which turns -0.0 into 0.0)."""
    slots = [np.float32(p) for p in products[:16]]
    for g0 in range(16, len(products), 16):
        for i, p in enumerate(products[g0 : g0 + 16]):
            slots[i] = np.float32(p) + slots[i]
    n = len(slots)
    if n == 1:
        return slots[0] + np.float32(0)
    half = n if n <= 2 else 1 << (n.bit_length() - 1)
    for i in range(n - half):
        slots[i] = slots[i] + slots[half + i]
    while half > 2:
        half //= 2
        for i in range(half):
            slots[i] = slots[i] + slots[half + i]
    return slots[0] + slots[1]


@pytest.mark.parametrize("heads", [64, 12, 1])
def test_head_sum_follows_the_vector_unit_order(heads):
    """fp32 sums of widely scaled terms depend on their order: the kernel's is reproduced bit for bit."""
    from aclnn_emu.kernels.sparse_attention.lightning_indexer import head_sum

    rng = np.random.default_rng(6)
    s = (rng.standard_normal((3, heads, 50)) * 10.0 ** rng.integers(-4, 6, (3, heads, 1))).astype(np.float32)
    w = rng.standard_normal((3, heads)).astype(np.float32)
    products = np.maximum(s, 0) * w[:, :, None]
    expected = np.array([[_vector_unit_sum(products[r, :, j]) for j in range(50)] for r in range(3)])
    got = head_sum(s.copy(), w)
    assert (got.view(np.uint32) == expected.view(np.uint32)).all()
    if heads == 64:
        assert (products.sum(axis=1, dtype=np.float32) != expected).any()  # another order differs


@pytest.mark.parametrize(
    "change, code, words",
    [
        (dict(weights=np.zeros((1, 4, 2), np.float32)), 161002, ["weights", "FLOAT"]),
        (dict(count=4096), 561002, ["sparse_count", "4096"]),
        (dict(layout_key="TND"), 561002, ["layout_query", "layout_key"]),
        (dict(key=np.zeros((1, 8, 1, 64), BF16)), 561002, ["key", "64"]),
    ],
)
def test_messages_name_the_argument(change, code, words):
    args = dict(
        query=np.zeros((1, 4, 2, 128), BF16),
        key=np.zeros((1, 8, 1, 128), BF16),
        weights=np.zeros((1, 4, 2), BF16),
        count=8,
        layout_key="BSND",
    )
    args.update(change)
    with pytest.raises(ae.AclnnError) as failed:
        run_op(args["query"], args["key"], args["weights"], count=args["count"], mode=3, layout_key=args["layout_key"])
    assert failed.value.status == code
    assert all(word in failed.value.message for word in words), failed.value.message
