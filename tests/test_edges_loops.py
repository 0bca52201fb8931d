"""The compiled loops (aclnn_emu/kernels/*.c) at widths that are not a multiple of the vector, in
every loop and every store and at every instruction-set level this CPU runs, against references
written here in numpy and float64 (tests/ties.py for the roundings): a loop's vector body and its
scalar tail must agree, and no store may reach past the row it writes. Masked or unseen rows sit at
several positions in a chunk, not one.
"""

import ml_dtypes
import numpy as np
import pytest

from aclnn_emu.kernels import native
from ties import one_more_bit, round_to

RNG = np.random.default_rng(2031)
WIDTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 47, 63, 65, 127, 129]
LEVELS = native.ISAS[: native.ISAS.index(native.best_isa()) + 1]
NARROW = {
    "fp16_even": (np.float16, "even"),
    "fp16_away": (np.float16, "away"),
    "bf16_away": (ml_dtypes.bfloat16, "away"),
}
NARROW["bf16_even"] = (ml_dtypes.bfloat16, "even")
PAD = 3  # elements past each row's width that a loop must leave alone


@pytest.fixture(params=LEVELS, autouse=True)
def level(request):
    """Every test runs at each instruction-set level the CPU has (the loops are compiled per level)."""
    before = native.isa()
    assert native.use_isa(request.param) == request.param
    yield request.param
    native.use_isa(before)


def _padded(rows, cols, dtype=np.float32, fill=7.0):
    """A [rows, cols] view with PAD elements of `fill` after each row."""
    return np.full((rows, cols + PAD), fill, dtype)[:, :cols]


def _scores(shape):
    return (RNG.standard_normal(shape) * 4).astype(np.float32)


# -- softmax ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("masked", [(), (0,), (5,), (11,), (0, 6, 11)])
def test_online_softmax_block_at_every_width_and_masked_rows_anywhere(cols, masked):
    rows = 12
    s = _scores((rows, cols))
    s[list(masked)] = -np.inf
    prev_max = RNG.standard_normal(rows).astype(np.float32)
    prev_max[list(masked)] = -np.inf
    prev_sum = np.where(np.isinf(prev_max), 0, RNG.random(rows) + 1).astype(np.float32)
    m, l, alpha = prev_max.copy(), prev_sum.copy(), np.empty(rows, np.float32)
    block = _padded(rows, cols)
    block[...] = s
    native.softmax_block_(block, m, l, alpha)
    want_max = np.maximum(prev_max, s.max(axis=1))
    shift = np.where(np.isinf(want_max), 0, want_max)
    e = np.exp(s.astype(np.float64) - shift[:, None])
    want_alpha = np.exp(prev_max.astype(np.float64) - shift)
    np.testing.assert_array_equal(m, want_max)
    np.testing.assert_allclose(block, e, rtol=2e-6, atol=0)
    np.testing.assert_allclose(alpha, want_alpha, rtol=2e-6, atol=0)
    np.testing.assert_allclose(l, prev_sum * want_alpha + e.sum(axis=1), rtol=1e-5, atol=0)
    for r in masked:
        assert not block[r].any() and l[r] == 0
    assert (block.base[:, cols:] == 7).all()


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("fp16", [False, True])
def test_scale_at_every_width_leaves_the_row_padding(cols, fp16):
    rows, pre, post = 5, 0.3, 1.7
    x = _scores((rows, cols)) * 3000  # past fp16's range for some: infinite after the fp16 step
    got = _padded(rows, cols)
    got[...] = x
    native.scale_(got, pre, fp16, post)
    scaled = (x * np.float32(pre)).astype(np.float64)  # one float32 rounding, as the loop's product
    if fp16:
        scaled = round_to(scaled, np.float16, "even").astype(np.float32).astype(np.float64)
    want = (scaled * np.float64(np.float32(post))).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert (got.base[:, cols:] == 7).all()


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("lanes", [1, 8])
def test_softmax_probs_at_every_width(cols, lanes):
    rows = 6
    s = _scores((rows, cols))
    m = (s.max(axis=1, keepdims=True) + RNG.random((rows, lanes))).astype(np.float32)
    l = (RNG.random((rows, lanes)) + 0.5).astype(np.float32)
    got = s.copy()
    native.softmax_probs_(got, m, l, lane0=3)
    lane = (3 + np.arange(cols)) % lanes
    want = np.exp(s.astype(np.float64) - m[:, lane]) / l[:, lane]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("rounding", [None, *NARROW])
@pytest.mark.parametrize("dropout", [False, True])
def test_softmax_grad_at_every_width_rounds_every_element(cols, rounding, dropout):
    rows = 4
    grad, probs = _scores((rows, cols)), RNG.random((rows, cols)).astype(np.float32)
    keep = (RNG.integers(0, 2, (rows, cols)) * 1.25).astype(np.float32) if dropout else None
    dsum = RNG.standard_normal(rows).astype(np.float32)
    got = grad.copy()
    native.softmax_grad_(got, probs, dsum, keep, rounding)
    inner = grad * keep - dsum[:, None] if dropout else grad - dsum[:, None]  # float32 steps, as the loop
    exact = (inner * probs).astype(np.float64)
    want = exact if rounding is None else round_to(exact, *NARROW[rounding])
    np.testing.assert_array_equal(got, want.astype(np.float32))


# -- stores and element-wise loops -------------------------------------------------------------------
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("rounding", [None, "fp16_even", "fp16_away", "bf16_away"])
def test_stores_at_every_width_round_every_element(cols, rounding):
    rows = 5
    src = (RNG.standard_normal((rows, cols)) * 300).astype(np.float32)
    divisor = (RNG.random(rows) + 0.5).astype(np.float32)
    dtype = {None: np.float32, "fp16_even": np.float16, "fp16_away": np.float16, "bf16_away": ml_dtypes.bfloat16}
    padded = np.zeros((rows, cols + 3), dtype[rounding])  # a row stride past the width: no spill into it
    native.store_rows(padded[:, :cols], src, divisor, rounding)
    exact = src.astype(np.float64) / divisor[:, None].astype(np.float64)
    got = padded[:, :cols].astype(np.float64)
    bits = {None: 23, "fp16_even": 10, "fp16_away": 10, "bf16_away": 7}[rounding]  # mantissa bits kept
    ulp = 2.0 ** (np.floor(np.log2(np.abs(exact))) - bits)
    # the nearest value of the grid, up to a float32 rounding of the quotient before it is narrowed
    assert (np.abs(got - exact) <= 0.5 * ulp + np.abs(exact) * 2.0**-23).all()
    assert not padded[:, cols:].any()


@pytest.mark.parametrize("cols", WIDTHS)
def test_rescale_add_at_every_width(cols):
    rows = 3
    acc, add = (RNG.standard_normal((rows, cols)).astype(np.float32) for _ in range(2))
    alpha = RNG.random(rows).astype(np.float32)
    got = acc.copy()
    native.rescale_add_(got, alpha, add)
    assert got.tobytes() == (acc * alpha[:, None] + add).tobytes()


@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("rounding", [None, *NARROW])
@pytest.mark.parametrize("product", [False, True])
def test_round_product_at_every_width_rounds_ties_by_its_mode(n, rounding, product):
    """Values one bit finer than the narrow type: about half are ties, where the modes differ."""
    narrow = NARROW.get(rounding, (np.float16, None))[0]
    a = one_more_bit(RNG, n, narrow).astype(np.float32)
    b = np.ones(n, np.float32) if product else None
    dst = np.empty(n + PAD, np.float32)
    dst[n:] = 7
    native.round_product(dst[:n], a, b, rounding)
    exact = (a * b if product else a).astype(np.float64)
    want = exact if rounding is None else round_to(exact, *NARROW[rounding])
    assert dst[:n].tobytes() == want.astype(np.float32).tobytes() and (dst[n:] == 7).all()


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_widen_at_every_width_and_row_stride(cols, dtype):
    rows = 4
    src = _padded(rows, cols, dtype, fill=-1)
    src[...] = RNG.standard_normal((rows, cols)) * 100
    out = _padded(rows, cols)
    native.widen(src, out)
    assert out.tobytes() == src.astype(np.float32).tobytes() and (out.base[:, cols:] == 7).all()


@pytest.mark.parametrize("n", WIDTHS)
def test_narrow_fp16_at_every_width_rounds_to_even(n):
    src = one_more_bit(RNG, n, np.float16, 1, 1 << 16).astype(np.float32)  # ties, and past 65504
    dst = np.full(n + PAD, 7, np.float16)
    native.narrow_fp16(dst[:n], src)
    assert dst[:n].tobytes() == round_to(src, np.float16, "even").astype(np.float16).tobytes()
    assert (dst[n:] == 7).all()


@pytest.mark.parametrize("cols", WIDTHS)
def test_scatter_add_rows_at_every_width_adds_repeats_in_order(cols):
    acc = _padded(6, cols)
    acc[...] = RNG.standard_normal((6, cols))
    pos = np.array([5, 0, 5, 2, 5])  # a row hit three times: first, middle and last
    vals = RNG.standard_normal((len(pos), cols)).astype(np.float32)
    want = acc.copy()
    for p, v in zip(pos, vals):
        want[p] += v
    native.scatter_add_rows(acc, pos, vals)
    assert acc.tobytes() == want.tobytes() and (acc.base[:, cols:] == 7).all()


@pytest.mark.parametrize("piece", [1, 2, 3, 15, 16, 17, 31, 33, 63, 65, 129, 257])
def test_copy_pieces_at_every_piece_size(piece):
    src = RNG.integers(0, 256, 4096, dtype=np.uint8)
    dst = np.zeros(4096, np.uint8)
    dst_offsets, src_offsets = np.array([0, 1000, 1, 2001]), np.array([7, 3, 500, 1500])
    native.copy_pieces(
        dst, src, dst_offsets, src_offsets, pieces=3, piece_bytes=piece, dst_stride=piece + 5, src_stride=piece + 1
    )
    want = np.zeros_like(dst)
    for d, s in zip(dst_offsets, src_offsets):
        for p in range(3):
            at, frm = d + p * (piece + 5), s + p * (piece + 1)
            want[at : at + piece] = src[frm : frm + piece]
    assert dst.tobytes() == want.tobytes()


# -- matrix loops ------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 7, 16, 33])
@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_matmul_panels_at_every_width(k, n, dtype):
    m = 5
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k)).astype(dtype).T  # a transposed view, as keys.T
    out = _padded(m, n)
    native.matmul_panels(out, a, native.pack_panels(b))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.abs(a).sum(axis=1, keepdims=True).max())
    assert (out.base[:, n:] == 7).all()


@pytest.mark.parametrize("m", [1, 5, 6, 7, 13, 47, 48, 49, 100])
@pytest.mark.parametrize("k, col0, cols", [(1, 0, 9), (33, 0, 64), (64, 5, 40)])
def test_matmul_panels_reads_a_transposed_a_as_its_row_major_copy(m, k, col0, cols):
    """A transposed view of A (the backward's Pᵀ, dSᵀ), with rows past whole tiles and strip groups
    and a power-of-two row stride: the bits of the same product from a row-major copy."""
    stored = RNG.standard_normal((k, 128)).astype(np.float32)
    a = stored[:, :m].T  # [m, k], contiguous columns 128 floats apart
    panels = native.pack_panels(RNG.standard_normal((k, 80)).astype(np.float32))
    got, want = _padded(m, cols), _padded(m, cols)
    native.matmul_panels(got, a, panels, col0)
    native.matmul_panels(want, np.ascontiguousarray(a), panels, col0)
    assert got.tobytes() == want.tobytes() and (got.base[:, cols:] == 7).all()


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("m, k, col0, cols", [(7, 33, 5, 40), (13, 64, 0, 64), (3, 0, 0, 9)])
def test_matmul_panels_accumulate_adds_the_whole_product(transposed, m, k, col0, cols):
    """out += a @ B: the product's bits added to out's in one fp32 addition, the pad left alone."""
    a = (
        RNG.standard_normal((k, m)).astype(np.float32).T
        if transposed
        else RNG.standard_normal((m, k)).astype(np.float32)
    )
    panels = native.pack_panels(RNG.standard_normal((k, 80)).astype(np.float32))
    start = RNG.standard_normal((m, cols)).astype(np.float32)
    start[0, 0] = -0.0  # -0 + a product of +0 is +0
    got = _padded(m, cols)
    got[...] = start
    native.matmul_panels(got, a, panels, col0, accumulate=True)
    want = start + native.matmul_panels(np.empty((m, cols), np.float32), a, panels, col0)
    assert got.tobytes() == want.tobytes() and (got.base[:, cols:] == 7).all()


@pytest.mark.parametrize("keys", [1, 9, 17, 33, 65, 129])
@pytest.mark.parametrize("d, dv", [(7, 9), (16, 16), (33, 17)])
@pytest.mark.parametrize("unseen", [(), (0,), (4,), (0, 3, 6)])
@pytest.mark.parametrize("zero_unseen", [False, True])
def test_attention_blocks_at_every_width_with_unseen_rows_anywhere(keys, d, dv, unseen, zero_unseen):
    """Query rows that see no key (a -inf query against positive keys: every score -inf) at several
    positions of the chunk keep a zero sum and output; the other rows get the softmax of their scores."""
    rows = 7
    q = RNG.standard_normal((rows, d)).astype(np.float32)
    q[list(unseen)] = -np.inf
    k = (RNG.random((d, keys)) + 0.5).astype(np.float32)
    v = RNG.standard_normal((keys, dv)).astype(np.float32)
    bounds = np.array(sorted({0, max(1, keys // 3), keys}))  # blocks of odd widths
    row_max, row_sum = np.full(rows, -np.finfo(np.float32).max, np.float32), np.zeros(rows, np.float32)
    acc = np.zeros((rows, dv), np.float32)
    native.attention_blocks(
        q, native.pack_panels(k), native.pack_panels(v), bounds, row_max, row_sum, acc, acc_set=False,
        post=0.5, zero_unseen=zero_unseen,
    )  # fmt: skip
    seen = np.setdiff1d(np.arange(rows), unseen)
    scores = q[seen].astype(np.float64) @ k.astype(np.float64) * 0.5
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    out = acc
    np.testing.assert_allclose(out[seen] / row_sum[seen, None], want, rtol=1e-4, atol=1e-5)
    bound = (np.abs(q[seen]).astype(np.float64) @ k.astype(np.float64)).max(axis=1) * 1e-6  # fp32 sums' error
    assert (np.abs(row_max[seen] - scores.max(axis=1)) <= bound).all()
    assert not out[list(unseen)].any() and not row_sum[list(unseen)].any()


# -- decode loops ------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 7, 16, 17, 33, 65, 129, 512])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.int8])
def test_decode_scores_and_values_at_every_width(d, dtype):
    heads, groups, rows, head_stride = 2, 3, 5, 64 * 1024
    if dtype is np.int8:
        base = RNG.integers(-100, 100, 2 * head_stride).astype(np.int8)
        dequant = (RNG.random((heads, d)).astype(np.float32) * 0.05, RNG.standard_normal((heads, d)).astype(np.float32))
    else:
        base = (RNG.standard_normal(2 * head_stride) * 0.5).astype(dtype)
        dequant = None
    offsets = np.array([0, 3 * d + 1, 7, 1000, 2 * d], np.int64)  # odd, overlapping and far-apart rows
    cache = np.stack([[base[h * head_stride + o :][:d] for o in offsets] for h in range(heads)]).astype(np.float64)
    if dequant is not None:
        cache = (cache + dequant[1][:, None, :]) * dequant[0][:, None, :]
    q = RNG.standard_normal((heads, groups, d)).astype(np.float32)
    scores = np.empty((heads, groups, rows), np.float32)
    native.decode_scores(scores, q, base, offsets, head_stride, dequant)
    want = np.einsum("hgd,hrd->hgr", q.astype(np.float64), cache)
    scale = np.einsum("hgd,hrd->hgr", np.abs(q.astype(np.float64)), np.abs(cache))
    assert (np.abs(scores - want) <= 1e-5 * scale + 1e-30).all()
    p = RNG.random((heads, groups, rows)).astype(np.float32)
    acc = RNG.standard_normal((heads, groups, d)).astype(np.float32)
    start = acc.astype(np.float64)
    native.decode_values(acc, p, base, offsets, head_stride, dequant)
    want = start + np.einsum("hgr,hrd->hgd", p.astype(np.float64), cache)
    scale = np.abs(start) + np.einsum("hgr,hrd->hgd", p.astype(np.float64), np.abs(cache))
    assert (np.abs(acc - want) <= 1e-5 * scale + 1e-30).all()
