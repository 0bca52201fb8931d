"""aclnnSparseFlashAttention numerics through the Python API against the float64 golden
(tests/golden/sparse_flash_attention.py), to CANN's precision standard."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import ties
from golden.sparse_flash_attention import reference
from precision import failure

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
INT64_MAX = (1 << 63) - 1
D, DR = 512, 64


def run_op(case, *, scale, block_size, mode, layout="BSND", layout_kv=None, table=None, lse=True):
    """Both phases; returns (out, softmax_max [rows, G], softmax_sum [rows, G])."""
    names = ("query", "key", "value", "indices")
    tensors = [ae.to_device(case[n]) for n in names]
    optional = [
        None if case.get(n) is None else ae.to_device(np.asarray(case[n], np.int32))
        for n in ("table", "cu_seq_q", "cu_seq_kv")
    ]
    ropes = [ae.to_device(case[n]) for n in ("query_rope", "key_rope")]
    q = case["query"]
    out = ae.empty((*q.shape[:-1], case["value"].shape[-1]), ae.dtypes.from_numpy(q.dtype))
    rows, heads = int(np.prod(q.shape[:-2])), q.shape[-2]
    stat_shape = (q.shape[0], 1, q.shape[1], heads) if layout == "BSND" else (1, q.shape[0], heads)
    smax, ssum = (ae.empty(stat_shape, ae.dtypes.from_numpy(np.dtype(np.float32))) for _ in range(2))
    ae.run(
        "SparseFlashAttention",
        *tensors,
        *optional,
        *ropes,
        scale,
        block_size,
        layout,
        layout_kv or layout,
        mode,
        INT64_MAX,
        INT64_MAX,
        2,
        lse,
        out,
        smax,
        ssum,
    )
    result = (ae.numpy(out), ae.numpy(smax).reshape(rows, heads), ae.numpy(ssum).reshape(rows, heads))
    for t in tensors + ropes + [t for t in optional if t is not None] + [out, smax, ssum]:
        ae.free(t)
    return result


def make_case(rng, dtype, *, lens_q, lens_k, heads, block_size, count, layout="BSND", junk=True):
    """Random inputs; each index row holds ascending in-range blocks, shuffled in places, with
    duplicates, out-of-range ids and -1s scattered in when `junk`."""
    rows = []
    for len_q, len_k in zip(lens_q, lens_k):
        blocks = -(-len_k // block_size)
        for _ in range(len_q):
            row = np.sort(rng.choice(blocks, min(count, blocks), replace=False)).astype(np.int32)
            row = np.concatenate([row, np.full(count - len(row), -1, np.int32)])
            if junk:
                spots = rng.integers(0, count, 3)
                row[spots] = [-1, blocks + 5, row[0]]
            rows.append(row)
    total_q, total_k = sum(lens_q), sum(lens_k)
    normal = lambda *shape: rng.standard_normal(shape).astype(dtype)  # noqa: E731
    case = dict(
        query=normal(total_q, heads, D),
        query_rope=normal(total_q, heads, DR),
        key=normal(total_k, 1, D),
        key_rope=normal(total_k, 1, DR),
        value=normal(total_k, 1, D),
        indices=np.stack(rows)[:, None, :],
    )
    if layout == "BSND":
        b = len(lens_q)
        for name in case:
            per = lens_k[0] if name in ("key", "key_rope", "value") else lens_q[0]
            case[name] = case[name].reshape(b, per, *case[name].shape[1:])
    else:
        case["cu_seq_q"], case["cu_seq_kv"] = np.cumsum(lens_q), np.cumsum(lens_k)
    return case


def golden(case, **attrs):
    return reference(
        case["query"],
        case["query_rope"],
        case["key"],
        case["key_rope"],
        case["value"],
        case["indices"],
        cu_seq_q=case.get("cu_seq_q"),
        cu_seq_kv=case.get("cu_seq_kv"),
        **attrs,
    )


def check(got, gold, dtype):
    out, smax, ssum = got
    g_out, g_max, g_sum = gold
    floor = np.abs(g_out).mean()  # outputs that cancel to ~0 are judged against the typical size
    assert failure(out, g_out, dtype, floor=floor) is None, failure(out, g_out, dtype, floor=floor)
    assert failure(smax, g_max, np.float32, floor=np.abs(g_max).mean()) is None
    assert failure(ssum, g_sum, np.float32) is None


@pytest.mark.parametrize("dtype", [BF16, FP16])
@pytest.mark.parametrize("mode, block_size", [(0, 1), (3, 1), (3, 16), (0, 64)])
def test_bsnd_matches_golden(dtype, mode, block_size):
    rng = np.random.default_rng(block_size + mode)
    case = make_case(
        rng, dtype, lens_q=[5, 5], lens_k=[700, 700], heads=8, block_size=block_size, count=max(4, 640 // block_size)
    )
    attrs = dict(scale=0.04, block_size=block_size, sparse_mode=mode)
    check(run_op(case, scale=0.04, block_size=block_size, mode=mode), golden(case, **attrs), dtype)


@pytest.mark.parametrize("mode", [0, 3])
def test_tnd_cumulative_lengths(mode):
    rng = np.random.default_rng(9)
    case = make_case(rng, BF16, lens_q=[3, 6], lens_k=[100, 1300], heads=4, block_size=4, count=300, layout="TND")
    attrs = dict(scale=0.05, block_size=4, sparse_mode=mode, layout="TND")
    check(run_op(case, scale=0.05, block_size=4, mode=mode, layout="TND"), golden(case, **attrs), BF16)


def test_rows_without_keys():
    """Mode 3 with fewer keys than queries: the first rows see no key (zero output, max -2e38,
    sum 0); an index row of only -1 and out-of-range ids likewise."""
    rng = np.random.default_rng(11)
    case = make_case(rng, FP16, lens_q=[4], lens_k=[2], heads=2, block_size=1, count=4, junk=False)
    case["indices"][0, 3, 0] = [-1, 7, -1, 9]
    out, smax, ssum = run_op(case, scale=0.1, block_size=1, mode=3)
    assert (out.reshape(4, -1)[[0, 1, 3]] == 0).all()
    assert (smax[[0, 1, 3]] == np.float32(-2e38)).all() and (ssum[[0, 1, 3]] == 0).all()
    check((out, smax, ssum), golden(case, scale=0.1, block_size=1, sparse_mode=3), FP16)


def test_paged_keys_match_contiguous():
    """PA_BSND reads the same keys through the block table: identical results."""
    rng = np.random.default_rng(12)
    case = make_case(rng, BF16, lens_q=[4], lens_k=[64], heads=2, block_size=16, count=4, junk=False)
    contiguous = run_op(case, scale=0.05, block_size=16, mode=3, lse=False)
    order = np.array([2, 0, 3, 1])
    paged = dict(case, table=np.argsort(order)[None, :], cu_seq_kv=[64])
    for name in ("key", "key_rope", "value"):
        paged[name] = case[name].reshape(4, 16, 1, -1)[order]
    got = run_op(paged, scale=0.05, block_size=16, mode=3, layout_kv="PA_BSND", lse=False)
    assert (got[0] == contiguous[0]).all()


def test_softmax_statistics_feed_the_backward():
    """softmaxMax/Sum are in the layout SparseFlashAttentionGrad reads: recomputing P from them
    with the grad's formula reproduces the forward's probabilities (rows sum to 1)."""
    rng = np.random.default_rng(13)
    case = make_case(rng, BF16, lens_q=[3], lens_k=[50], heads=4, block_size=1, count=50, junk=False)
    out, smax, ssum = run_op(case, scale=0.05, block_size=1, mode=0)
    q = np.concatenate([case["query"], case["query_rope"]], -1).reshape(3, 4, -1).astype(np.float64)
    k = np.concatenate([case["key"], case["key_rope"]], -1).reshape(50, -1).astype(np.float64)
    s = 0.05 * np.einsum("rgd,jd->rgj", q, k)
    p = np.exp(s - smax[..., None]) / ssum[..., None]
    assert np.allclose(p.sum(-1), 1.0, rtol=1e-4)


@pytest.mark.parametrize("dtype", [BF16, FP16])
def test_P_rounds_ties_away_from_zero(dtype):
    """Row r selects key 0, scored 0 (the max), and key 1, scored y_r, whose fp32 exp is a midpoint
    of the dtype: P = (1, CAST_ROUND(e_r)), V = (0, 1), so O = P_1 / (1 + e_r) shows the rounding
    of P (output: bf16 CAST_RINT, fp16 CAST_ROUND)."""
    rows = 32
    y, e = ties.exp_ties(np.random.default_rng(14), dtype, rows)
    q, key = ties.dot_terms(y, dtype, D)
    value = np.stack([np.zeros(D), np.ones(D)]).astype(dtype)
    case = dict(
        query=q.reshape(1, rows, 1, D),
        query_rope=np.zeros((1, rows, 1, DR), dtype),
        key=np.stack([np.zeros(D, dtype), key]).reshape(1, 2, 1, D),
        key_rope=np.zeros((1, 2, 1, DR), dtype),
        value=value.reshape(1, 2, 1, D),
        indices=np.tile(np.int32([0, 1]), (1, rows, 1, 1)),
    )
    out, _, ssum = run_op(case, scale=1.0, block_size=1, mode=0)
    out_mode = "even" if dtype == BF16 else "away"
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.two_key_output(e, dtype, modes["P"], out_mode)}, {"P": "away"}, "attentionOut"
    )
    ties.assert_bits(out.reshape(rows, D), np.repeat(want["out"][:, None], D, axis=1), "attentionOut")
    assert np.array_equal(ssum[:, 0], (1 + e).astype(np.float32))


@pytest.mark.parametrize("dtype", [BF16, FP16])
def test_output_rounding_at_ties(dtype):
    """q = 0: both selected keys get P = 1, so O = (v0 + v1) / 2 exactly in fp32; v0 and v1 one step
    apart put O on the midpoint: bf16 CAST_RINT keeps the even neighbour, fp16 CAST_ROUND the larger
    magnitude."""
    rng = np.random.default_rng(15)
    v0 = ties.one_more_bit(rng, D, dtype)
    v0 = ties.round_to(v0, dtype, "even")  # on the grid; v1 one step further out
    v1 = v0 + np.sign(v0) * np.spacing(np.abs(v0).astype(dtype)).astype(np.float64)
    midpoint = (v0 + v1) / 2
    case = dict(
        query=np.zeros((1, 4, 1, D), dtype),
        query_rope=np.zeros((1, 4, 1, DR), dtype),
        key=np.zeros((1, 2, 1, D), dtype),
        key_rope=np.zeros((1, 2, 1, DR), dtype),
        value=np.stack([v0, v1]).astype(dtype).reshape(1, 2, 1, D),
        indices=np.tile(np.int32([0, 1]), (1, 4, 1, 1)),
    )
    out, _, _ = run_op(case, scale=1.0, block_size=1, mode=0)
    mode = "even" if dtype == BF16 else "away"
    assert ties.is_tie(midpoint, dtype).any(), "the case must separate the two roundings"
    ties.assert_bits(out.reshape(4, D), np.tile(ties.round_to(midpoint, dtype, mode), (4, 1)), "attentionOut")


@pytest.mark.parametrize(
    "edit, code, words",
    [
        (lambda c: c.update(value=c["value"].astype(FP16)), 161002, ["value", "FLOAT16"]),
        (lambda c: c.update(query_rope=c["query_rope"][..., :32].copy()), 561002, ["rope_head_dim", "32"]),
        (lambda c: c.update(indices=c["indices"][:, :1].copy()), 561002, ["sparse_indices", "[1, 1, 1, 4]"]),
    ],
)
def test_messages_name_the_argument(edit, code, words):
    case = make_case(
        np.random.default_rng(14), BF16, lens_q=[2], lens_k=[16], heads=2, block_size=1, count=4, junk=False
    )
    edit(case)
    with pytest.raises(ae.AclnnError) as failed:
        run_op(case, scale=0.1, block_size=1, mode=3)
    assert failed.value.status == code
    assert all(word in failed.value.message for word in words), failed.value.message
