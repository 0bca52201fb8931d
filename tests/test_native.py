"""The compiled loops (aclnn_emu/kernels/native.c): roundings and conversions bit-exact with real
casts, exp within 1 ulp of float64, the online-softmax step against a float64 reference, the
packed matmul in its documented summation order, the attention block calls with the bits of the
steps they replace, piece copies byte-exact, every operator giving the
same bytes at every ISA level and worker count, and each C source compiling on its own."""

import concurrent.futures
import fnmatch
import json
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import sysconfig

import ml_dtypes
import numpy as np
import pytest

from aclnn_emu.kernels import native
from aclnn_emu.opdef import registry
from aclnn_emu.shim import native as shim
from aclnn_emu.kernels.casts import BF16, cast_round

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _fp16_edges() -> np.ndarray:
    """Every fp16 midpoint and its neighbours, fp16 subnormal ties, overflow edges and specials."""
    finite = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mid = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(3)
    spread = (rng.standard_normal(1 << 16) * 10.0 ** rng.integers(-9, 6, 1 << 16)).astype(np.float32)
    specials = np.float32(
        [
            0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            65504,
            65519.996,
            65520,
            -65520,
            3e38,
            -3e38,
            2**-25,
            -(2**-25),
            2**-26,
            -(2**-26),
            1.5 * 2**-24,
            1e-45,
        ]
    )
    parts = [mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(1e9)), spread, specials]
    return np.concatenate(parts + [-x for x in parts[:3]])


def _same_bits(got: np.ndarray, expected: np.ndarray) -> bool:
    nan = np.isnan(expected)
    return np.array_equal(np.isnan(got), nan) and np.array_equal(
        got[~nan].view(f"u{got.itemsize}"), expected[~nan].view(f"u{got.itemsize}")
    )


def test_fp16_rounding_matches_a_real_conversion_bit_for_bit():
    x = _fp16_edges()
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16).astype(np.float32)
    assert _same_bits(native.scale_(x.copy(), fp16=True), expected)


def test_scale_rounds_between_the_two_factors():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10000).astype(np.float32) * np.float32(300)
    pre, post = np.float32(0.37), np.float32(0.0883883)
    with np.errstate(over="ignore"):
        expected = (x * pre).astype(np.float16).astype(np.float32) * post
    assert _same_bits(native.scale_(x.copy(), pre=pre, fp16=True, post=post), expected)
    assert _same_bits(native.scale_(x.copy(), pre=pre, post=post), x * pre * post)


def test_narrow_fp16_writes_the_bits_numpy_does():
    x = _fp16_edges()
    out = np.empty(x.shape, np.float16)
    native.narrow_fp16(out, x)
    with np.errstate(over="ignore"):
        assert _same_bits(out, x.astype(np.float16))
    with pytest.raises(ValueError):
        native.narrow_fp16(np.empty(3, np.float32), x[:3])


def test_store_rows_to_nearest_even_writes_the_bits_numpy_does():
    x = _fp16_edges()
    x = x[: len(x) // 64 * 64].reshape(-1, 64)
    divisor = np.float32(np.random.default_rng(2).random(len(x)) * 4)
    divisor[:3] = [1, 0, np.inf]
    for d in (None, divisor):
        out = np.empty(x.shape, np.float16)
        native.store_rows(out, x, d, "fp16_even")
        with np.errstate(all="ignore"):
            assert _same_bits(out, (x if d is None else x / d[:, None]).astype(np.float16))


def test_widen_is_exact_for_every_fp16_and_bf16_pattern_and_any_row_stride():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for dtype in (np.float16, ml_dtypes.bfloat16):
        patterns = every.view(dtype).reshape(256, 256)
        assert _same_bits(native.widen(patterns), patterns.astype(np.float32))
        window = patterns[3:200:2, 10:138]  # rows 2 * 256 apart, contiguous inside
        assert _same_bits(native.widen(window), window.astype(np.float32))
        wide = np.full((window.shape[0], 300), np.float32(7))
        native.widen(window, out=wide[:, 50:178])  # into rows 300 floats apart
        assert _same_bits(wide[:, 50:178], window.astype(np.float32))
        assert (wide[:, :50] == 7).all() and (wide[:, 178:] == 7).all()
    odd = np.arange(24, dtype=np.int8).reshape(4, 6)[:, ::2]  # not fp16/bf16 rows: numpy's cast
    assert np.array_equal(native.widen(odd), odd.astype(np.float32))


def _softmax_state(rows):
    return np.full(rows, -np.inf, np.float32), np.zeros(rows, np.float32), np.empty(rows, np.float32)


def test_exp_is_within_one_ulp_and_reaches_zero():
    rng = np.random.default_rng(1)
    y = np.concatenate(
        [
            -np.logspace(-8, 2.05, 100000),
            rng.uniform(-20, 0, 50000),
            [0.0, -0.0, -87.3, -87.4, -100.0, -103.9, -104.0, -110.0, -1e4, -np.inf],
        ]
    ).astype(np.float32)
    s = np.concatenate([y, [0]]).astype(np.float32)[None, :]  # the row max is 0: E = exp(y)
    row_max, row_sum, alpha = _softmax_state(1)
    native.softmax_block_(s, row_max, row_sum, alpha)
    got, exact = s[0, :-1].astype(np.float64), np.exp(y.astype(np.float64))
    normal = exact >= np.finfo(np.float32).tiny
    ulp = np.abs(got[normal] - exact[normal]) / np.spacing(exact[normal].astype(np.float32))
    assert ulp.max() <= 1.0
    tiny = np.finfo(np.float32).smallest_subnormal
    assert np.all(np.abs(got[~normal] - exact[~normal]) <= tiny)  # subnormals: correctly rounded
    assert got[-1] == 0 and got[-3] == 0  # e^-inf, e^-110
    assert row_max[0] == 0 and alpha[0] == 0


def _softmax_reference(blocks, pre, fp16, post):
    """Online softmax over the key blocks with the fp32 steps the kernel takes (scaling, rounding,
    subtracting the max) and float64 exponentials and sums: (E per block, running max, row sum)."""
    running_max = np.full(blocks[0].shape[0], -np.inf, np.float32)
    row_sum = np.zeros(blocks[0].shape[0])
    probabilities = []
    for block in blocks:
        scores = block * pre
        if fp16:
            scores = scores.astype(np.float16).astype(np.float32)
        scores = scores * post
        new_max = np.maximum(running_max, scores.max(axis=1))
        shift = np.where(np.isneginf(new_max), np.float32(0), new_max)
        e = np.exp((scores - shift[:, None]).astype(np.float64))
        row_sum = row_sum * np.exp(running_max - shift) + e.sum(axis=1)
        running_max = new_max
        probabilities.append(e)
    return probabilities, running_max, row_sum


@pytest.mark.parametrize("rounding", [None, "fp16_even", "bf16_away"])
def test_online_softmax_over_two_blocks_matches_float64(rounding):
    rng = np.random.default_rng(2)
    blocks = [rng.standard_normal((64, 300)).astype(np.float32) * 40 for _ in range(2)]
    blocks[1][5] += 30  # a row whose max moves in the second block
    blocks[0][7] = -np.inf  # a row with no key in the first block
    blocks[0][9] = blocks[1][9] = -np.inf  # a row with no key at all
    pre, post = np.float32(1.0), np.float32(0.0883883)
    expected_p, expected_max, expected_sum = _softmax_reference(blocks, pre, True, post)
    row_max, row_sum, alpha = _softmax_state(64)
    for block, expected in zip(blocks, expected_p):
        s = block.copy()
        native.softmax_block_(s, row_max, row_sum, alpha, pre=pre, fp16=True, post=post, rounding=rounding)
        if rounding == "fp16_even":
            expected = expected.astype(np.float32).astype(np.float16).astype(np.float64)
        elif rounding == "bf16_away":
            expected = cast_round(expected.astype(np.float32), BF16).astype(np.float64)
        # exp within 1 ulp; a narrowed value may land on the other side of a tie (one ulp off)
        tolerance = {None: 2**-23, "fp16_even": 2**-10, "bf16_away": 2**-7}[rounding]
        assert np.all(np.abs(s - expected) <= tolerance * np.maximum(expected, 1e-30) + 1e-40)
    assert np.array_equal(row_max, expected_max)
    live = np.isfinite(expected_max)
    assert np.allclose(row_sum[live], expected_sum[live], rtol=1e-5)
    assert row_sum[9] == 0 and np.isneginf(row_max[9])


def test_nan_and_infinite_scores_make_their_row_nan():
    s = np.zeros((3, 40), np.float32)
    s[1, 4] = np.nan
    s[2, 7] = np.inf
    row_max, row_sum, alpha = _softmax_state(3)
    native.softmax_block_(s, row_max, row_sum, alpha, rounding="fp16_even")
    assert np.all(s[0] == 1) and row_sum[0] == 40
    assert np.isnan(row_sum[1]) and np.isnan(s[1]).all()
    assert np.isnan(row_sum[2]) and np.isnan(s[2, 7])


@pytest.mark.parametrize("lanes,lane0", [(1, 0), (8, 0), (8, 5)])
def test_backward_probabilities_read_the_right_softmax_lane(lanes, lane0):
    rng = np.random.default_rng(7)
    s = rng.standard_normal((64, 72)).astype(np.float32) * 4
    stats = rng.standard_normal((64, 8)).astype(np.float32)
    row_max, row_sum = stats[:, :lanes], np.abs(stats[:, :lanes]) + 1  # strided views, as the kernel has
    columns = (lane0 + np.arange(72)) % lanes
    expected = np.exp((s - row_max[:, columns]).astype(np.float64)) / row_sum[:, columns]
    native.softmax_probs_(s, row_max, row_sum, lane0=lane0)
    assert np.allclose(s, expected, rtol=3e-7, atol=0)


@pytest.mark.parametrize("rounding,dtype", [("fp16_away", np.float16), ("bf16_away", BF16)])
def test_cast_round_products_and_score_gradients_match_cast_round(rounding, dtype):
    rng = np.random.default_rng(8)
    probs = rng.random((32, 50)).astype(np.float32)
    keep = (rng.random((32, 50)) < 0.8).astype(np.float32) * np.float32(1.25)
    grad = (rng.standard_normal((32, 50)) * 10.0 ** rng.integers(-8, 4, (32, 50))).astype(np.float32)
    dsum = rng.standard_normal(32).astype(np.float32)
    edges = _fp16_edges()[:1600].reshape(32, 50)
    out = np.empty_like(probs)
    native.round_product(out, edges, None, rounding)
    assert _same_bits(out, cast_round(edges, dtype).astype(np.float32))
    native.round_product(out, probs, keep, rounding)
    assert _same_bits(out, cast_round(probs * keep, dtype).astype(np.float32))
    for k in (None, keep):
        got = grad.copy()
        native.softmax_grad_(got, probs, dsum, k, rounding)
        exact = ((grad if k is None else grad * k) - dsum[:, None]) * probs
        assert _same_bits(got, cast_round(exact, dtype).astype(np.float32))


@pytest.mark.parametrize("rounding,dtype", [("fp16_away", np.float16), ("bf16_away", BF16)])
def test_softmax_block_narrows_its_exponentials_by_cast_round(rounding, dtype):
    """P is exactly CAST_ROUND of the block's exponentials: rows whose values stay normal fp16s,
    rows reaching fp16's subnormals (below 2^-14, a pass of their own for fp16) and rows with NaN
    or infinite scores."""
    rng = np.random.default_rng(11)
    s = (rng.standard_normal((48, 333)) * np.float32([1.0, 4.0, 40.0])[np.arange(48) % 3, None]).astype(np.float32)
    s[40, 5], s[41, 9], s[42, :100] = np.nan, np.inf, -np.inf
    exact, state = s.copy(), _softmax_state(48)
    native.softmax_block_(exact, *state, post=0.5)
    got, state = s.copy(), _softmax_state(48)
    native.softmax_block_(got, *state, post=0.5, rounding=rounding)
    assert (exact[:39:3] >= 2**-14).all() and (exact[2:39:3] < 2**-14).any(axis=1).all()
    assert _same_bits(got, cast_round(exact, dtype).astype(np.float32))


def test_bf16_ties_to_even_is_a_real_conversion():
    """ "bf16_even" (CAST_RINT) gives the bits of ml_dtypes' conversion at every bf16 midpoint, its
    neighbours, overflow and the specials, in round_product and in the softmax's P."""
    finite = np.arange(0x7F80, dtype=np.uint16).view(BF16).astype(np.float64)
    mid = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)
    edges = np.concatenate(
        [
            mid,
            np.nextafter(mid, np.float32(0)),
            np.nextafter(mid, np.float32(np.inf)),
            np.float32([0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-45]),
        ]
    )
    edges = np.concatenate([edges, -edges])
    out = np.empty_like(edges)
    native.round_product(out, edges, None, "bf16_even")
    assert _same_bits(out, edges.astype(BF16).astype(np.float32))
    rng = np.random.default_rng(14)
    s = (rng.standard_normal((24, 301)) * 6).astype(np.float32)
    s[20, 3], s[21, :50] = np.nan, -np.inf
    exact, got = s.copy(), s.copy()
    native.softmax_block_(exact, *_softmax_state(24), post=0.5)
    native.softmax_block_(got, *_softmax_state(24), post=0.5, rounding="bf16_even")
    assert _same_bits(got, exact.astype(BF16).astype(np.float32))


@pytest.mark.parametrize("rounding", list(native.ROUNDING))
@pytest.mark.parametrize("low", [-86.0, -9.5])
@pytest.mark.parametrize("length", [1000, 6000])
def test_rows_whose_exponentials_are_normal_get_the_bits_of_any_row(rounding, low, length):
    """A row whose differences to its max stay within [-86, 0] takes the cheaper exponential (every
    e^y a normal number; in two passes up to 1024 scores), within [-9.5, 0] also the cheaper fp16
    roundings (every e^y a normal fp16); a row that also holds -inf takes the general one: same
    bits."""
    rng = np.random.default_rng(13)
    low = np.float32(low)
    y = np.concatenate(
        [
            np.float32([0, low, np.nextafter(low, np.float32(0))]),
            -rng.random(length * 5 // 6 - 3).astype(np.float32) * -low,
            -rng.random(length // 6).astype(np.float32) * 1e-3,
        ]
    )
    fast, slow = y[None].copy(), np.concatenate([y, np.float32([-np.inf])])[None].copy()
    native.softmax_block_(fast, *_softmax_state(1), rounding=rounding)
    native.softmax_block_(slow, *_softmax_state(1), rounding=rounding)
    assert _same_bits(fast[0], slow[0, :-1])


def test_rescale_add_is_numpys_product_then_sum():
    rng = np.random.default_rng(12)
    acc = (rng.standard_normal((40, 72)) * 10.0 ** rng.integers(-30, 30, (40, 72))).astype(np.float32)
    add = (rng.standard_normal((40, 72)) * 10.0 ** rng.integers(-30, 30, (40, 72))).astype(np.float32)
    alpha = np.float32(rng.random(40))
    alpha[:3] = [0, np.inf, np.nan]
    acc[5, :4], add[6, :4] = [np.nan, np.inf, -0.0, 0.0], [np.nan, -np.inf, -0.0, 0.0]
    expected = acc.copy()
    with np.errstate(all="ignore"):
        expected *= alpha[:, None]
        expected += add
    native.rescale_add_(acc, alpha, add)
    assert _same_bits(acc, expected)
    with pytest.raises(ValueError, match="shape"):
        native.rescale_add_(acc, alpha, add[:, :8])


def test_softmax_block_rejects_what_it_cannot_write_in_place():
    row_max, row_sum, alpha = _softmax_state(4)
    with pytest.raises(ValueError):
        native.softmax_block_(np.zeros((4, 8)), row_max, row_sum, alpha)  # float64
    with pytest.raises(ValueError):
        native.softmax_block_(np.zeros((8, 4), np.float32).T, row_max, row_sum, alpha)
    with pytest.raises(ValueError):
        native.softmax_block_(np.zeros((5, 8), np.float32), row_max, row_sum, alpha)


def test_softmax_block_and_scale_work_on_rows_with_a_gap_between_them():
    """A score block whose rows are padded apart gives the bits of the contiguous block and leaves
    the padding alone."""
    rng = np.random.default_rng(8)
    scores = (rng.standard_normal((5, 40)) * 20).astype(np.float32)
    padded = np.full((5, 48), 7.0, np.float32)
    padded[:, :40] = scores
    for fp16 in (False, True):
        dense, view = scores.copy(), padded.copy()[:, :40]
        dense_state, view_state = _softmax_state(5), _softmax_state(5)
        native.softmax_block_(dense, *dense_state, pre=0.5, fp16=fp16, post=0.25, rounding="fp16_even")
        native.softmax_block_(view, *view_state, pre=0.5, fp16=fp16, post=0.25, rounding="fp16_even")
        assert _same_bits(view, dense) and all(map(_same_bits, view_state, dense_state))
        assert (view.base[:, 40:] == 7).all()
        view = padded.copy()[:, :40]
        assert _same_bits(
            native.scale_(view, pre=0.37, fp16=fp16, post=3.0), native.scale_(scores.copy(), 0.37, fp16, 3.0)
        )
        assert (view.base[:, 40:] == 7).all()


def _halves(rng, shape) -> np.ndarray:
    """fp32 values that are fp16 numbers: their products are exact in fp32 and in float64."""
    return rng.standard_normal(shape).astype(np.float16).astype(np.float32)


def _chunked_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """matmul.c's order, written out: per chunk of 32 k steps c = round32(a[k] * b[k] + c) from 0
    (an fmaf, exact here in float64 for fp16-valued inputs), the chunks' sums added in k order."""
    total = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], 32):
        chain = np.zeros_like(total)
        for kk in range(k0, min(k0 + 32, a.shape[1])):
            chain = (chain.astype(np.float64) + np.outer(a[:, kk], b[kk])).astype(np.float32)
        total = chain if k0 == 0 else total + chain
    return total


@pytest.mark.parametrize(
    "m,k,n,col0,cols",
    [
        (13, 100, 70, 0, 70),
        (1, 192, 40, 5, 30),
        (7, 33, 96, 40, 50),
        (12, 64, 64, 32, 32),
        (4, 1, 3, 0, 3),
        (9, 40, 64, 0, 64),
        (10, 70, 50, 3, 40),
        (11, 32, 33, 1, 32),
    ],
)
def test_matmul_panels_sums_in_its_documented_order(m, k, n, col0, cols):
    """Bits of the chunked order for any row count (rows past a multiple of 6 in pair tiles or one
    padded tile), column window and k; within fp32 rounding of the float64 product; B packed from a
    transposed view is the same B."""
    rng = np.random.default_rng(m * 1000 + k)
    a, b = _halves(rng, (m, k)), _halves(rng, (k, n))
    out = np.full((m, cols + 9), 5.0, np.float32)
    native.matmul_panels(out[:, :cols], a, native.pack_panels(b), col0)
    expected = _chunked_sum(a, b[:, col0 : col0 + cols])
    assert _same_bits(out[:, :cols], expected) and (out[:, cols:] == 5).all()
    exact = a.astype(np.float64) @ b[:, col0 : col0 + cols]
    assert np.abs(out[:, :cols] - exact).max() <= 1e-6 * np.abs(a).max() * np.abs(b).max() * k
    transposed = native.pack_panels(np.ascontiguousarray(b.T).T)
    assert _same_bits(native.matmul_panels(np.empty((m, cols), np.float32), a, transposed, col0), expected)
    packed = native.pack_panels(b).data
    for dtype in (np.float16, BF16, np.int8):  # packed straight from the narrower type
        narrow = b.astype(dtype)
        wide = native.pack_panels(narrow.astype(np.float32)).data
        for view in (narrow, np.ascontiguousarray(narrow.T).T):
            assert _same_bits(native.pack_panels(view).data, wide)
    assert _same_bits(native.pack_panels(b.astype(np.float16)).data, packed)


NEG_FLT_MAX = np.float32(-np.finfo(np.float32).max)


def _attention_operands(rng, rows=101, d=72, dv=40, keys=300):
    """q [rows, d] and the packed Kᵀ and V: row 5 of q scores exactly -FLT_MAX against every key
    (a fully masked row, unless scaled)."""
    q, kt, v = _halves(rng, (rows, d)), _halves(rng, (d, keys)), _halves(rng, (keys, dv))
    q[5], q[5, 0], kt[0] = 0, NEG_FLT_MAX, 1
    return q, native.pack_panels(kt), native.pack_panels(v)


def _attention_steps(q, keys, values, bounds, state, acc, acc_set, zero_unseen, **scaling):
    """aclemu_attention_blocks written out as the step-by-step calls it replaces."""
    row_max, row_sum = state
    alpha = np.empty_like(row_max)
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        s = native.matmul_panels(np.empty((len(q), c1 - c0), np.float32), q, keys, c0)
        native.softmax_block_(s, row_max, row_sum, alpha, **scaling)
        if zero_unseen:
            s[row_max == NEG_FLT_MAX] = 0
        pv = native.matmul_panels(np.empty(acc.shape, np.float32), s, values.rows(c0, c1))
        if acc_set:
            native.rescale_add_(acc, alpha, pv)
        else:
            acc[...], acc_set = pv, True


@pytest.mark.parametrize(
    "acc_set,zero_unseen,scaled",
    [(False, False, True), (True, True, False), (False, True, False), (True, False, False)],
)
def test_attention_blocks_give_the_bits_of_the_steps_they_replace(acc_set, zero_unseen, scaled):
    """Blocks of several widths, rows beyond one chunk (96) and one whose scores are all -FLT_MAX:
    the same max, sum and output bits as matmul, softmax_block_, matmul and rescale_add_ in turn."""
    rng = np.random.default_rng(16)
    q, keys, values = _attention_operands(rng)
    bounds = [7, 100, 164, 300]
    scaling = dict(pre=0.5, fp16=True, post=0.125, rounding="fp16_away") if scaled else dict(rounding="bf16_away")
    start = (np.full(len(q), -np.inf, np.float32), np.zeros(len(q), np.float32))
    start[0][5] = NEG_FLT_MAX
    acc = (
        rng.standard_normal((len(q), values.n)).astype(np.float32)
        if acc_set
        else np.full((len(q), values.n), np.nan, np.float32)
    )
    acc[5] = 0
    expected, state = acc.copy(), tuple(x.copy() for x in start)
    _attention_steps(q, keys, values, bounds, state, expected, acc_set, zero_unseen, **scaling)
    got, got_state = acc.copy(), tuple(x.copy() for x in start)
    native.attention_blocks(
        q, keys, values, bounds, *got_state, got, acc_set=acc_set, zero_unseen=zero_unseen, **scaling
    )
    assert _same_bits(got, expected) and all(map(_same_bits, got_state, state))
    if not scaled:  # the unseen row: P = 0, or 1 for every key
        assert (got[5] == 0).all() == zero_unseen


def test_attention_blocks_reject_what_does_not_fit():
    q, keys, values = _attention_operands(np.random.default_rng(17))
    state = (np.full(len(q), -np.inf, np.float32), np.zeros(len(q), np.float32))
    acc = np.zeros((len(q), values.n), np.float32)
    for bounds in ([0, 50, 50], [10], [0, 301], [-1, 20]):
        with pytest.raises(ValueError, match="bounds"):
            native.attention_blocks(q, keys, values, bounds, *state, acc, acc_set=True)
    with pytest.raises(ValueError, match="does not fit"):
        native.attention_blocks(q[:, :70], keys, values, [0, 10], *state, acc, acc_set=True)


def _attention_grad_steps(q, dy, panels, c0, c1, softmax, dsum, scale, grads, pse, pse_first, masked, keep, rounding):
    """aclemu_attention_grad_block written out as the step-by-step calls it replaces."""
    kt, k, vt, q_rows, dy_rows = panels
    dq, acc_k, acc_v = grads
    row_max, row_sum, fill = softmax
    s = native.matmul_panels(np.empty((len(q), c1 - c0), np.float32), q, kt, c0)
    if pse is not None and pse_first:
        s += pse
    s *= np.float32(scale)
    if pse is not None and not pse_first:
        s += pse
    native.softmax_probs_(s, row_max, row_sum, lane0=c0)
    lanes = (c0 + np.arange(c1 - c0)) % row_max.shape[1]
    np.copyto(s, fill[:, lanes], where=masked if masked is not None else False)
    dropped = np.empty_like(s)
    native.round_product(dropped, s, keep, rounding)
    native.matmul_panels(acc_v[c0:c1], dropped.T, dy_rows, accumulate=True)
    grad = native.matmul_panels(np.empty_like(s), dy, vt, c0)
    native.softmax_grad_(grad, s, dsum, keep, rounding)
    native.matmul_panels(dq, grad, k.rows(c0, c1), accumulate=True)
    native.matmul_panels(acc_k[c0:c1], grad.T, q_rows, accumulate=True)


@pytest.mark.parametrize(
    "lanes,pse_first,extras,rounding",
    [
        (1, None, "", "fp16_away"),
        (8, True, "mask keep", "bf16_away"),
        (1, False, "mask keep", None),
        (8, None, "", "fp16_even"),
        (1, None, "keep max", "fp16_away"),
        (1, True, "max", "bf16_even"),
    ],
)
def test_attention_grad_block_gives_the_bits_of_the_steps_it_replaces(lanes, pse_first, extras, rounding):
    """Rows over several chunks (L2 set small), a key block that starts mid-panel and mid-lane, head
    dims of no whole panel; with or without pse (either order), mask and dropout factors: dq, dK and
    dV with the bits of the matmul, softmax and rounding calls in turn. With "max", every fourth row's
    statistic is its true maximum, so with one lane those rows take the block's shorter
    exponential (every S - m in [-86, 0]) and the others its general one (the next rows' maxima
    are 90 above theirs)."""
    rng = np.random.default_rng(31)
    rows, keys, d, dv, c0, c1 = 77, 300, 72, 40, 37, 290
    q, dy = _halves(rng, (rows, d)), _halves(rng, (rows, dv))
    k, v = _halves(rng, (keys, d)), _halves(rng, (keys, dv))
    panels = (native.pack_panels(k.T), native.pack_panels(k), native.pack_panels(v.T))
    panels += (native.pack_panels(q), native.pack_panels(dy))
    softmax = (
        rng.standard_normal((rows, lanes)).astype(np.float32) + 2,
        rng.random((rows, lanes)).astype(np.float32) * 40 + 1,
        rng.random((rows, lanes)).astype(np.float32),
    )
    dsum = rng.standard_normal(rows).astype(np.float32)
    shape = (rows, c1 - c0)
    pse = None if pse_first is None else rng.standard_normal(shape).astype(np.float32)
    masked = rng.random(shape) < 0.3 if "mask" in extras else None
    keep = np.where(rng.random(shape) < 0.8, np.float32(1.25), np.float32(0)) if "keep" in extras else None
    if "max" in extras:
        scores = native.matmul_panels(np.empty(shape, np.float32), q, panels[0], c0)
        scores = (scores + pse) * np.float32(0.125) if pse_first else scores * np.float32(0.125)
        softmax[0][::4] = scores.max(axis=1, keepdims=True)[::4]
        softmax[0][1::4] = scores.max(axis=1, keepdims=True)[1::4] + 90  # every S - m below -86
    grads = (
        rng.standard_normal((rows, d)).astype(np.float32),
        rng.standard_normal((keys, d)).astype(np.float32),
        rng.standard_normal((keys, dv)).astype(np.float32),
    )
    expected, got = (tuple(x.copy() for x in grads) for _ in range(2))
    _attention_grad_steps(q, dy, panels, c0, c1, softmax, dsum, 0.125, expected, pse, pse_first, masked, keep, rounding)
    native.lib.aclemu_set_cache_sizes(32 << 10, 64 << 10)  # chunks of 6 rows
    try:
        native.attention_grad_block(
            q, dy, panels, c0, c1, softmax, dsum, 0.125, got,
            pse=pse, pse_first=bool(pse_first), masked=masked, keep=keep, rounding=rounding,
        )  # fmt: skip
    finally:
        native.lib.aclemu_set_cache_sizes(*native.cache_sizes()[:2])
    assert all(map(_same_bits, got, expected))


def test_attention_grad_block_rejects_what_does_not_fit():
    rng = np.random.default_rng(32)
    q, dy, k = _halves(rng, (10, 32)), _halves(rng, (10, 32)), _halves(rng, (50, 32))
    panels = (native.pack_panels(k.T), native.pack_panels(k), native.pack_panels(k.T))
    panels += (native.pack_panels(q), native.pack_panels(dy))
    softmax = (np.zeros((10, 1), np.float32),) * 3
    grads = (np.zeros((10, 32), np.float32), np.zeros((50, 32), np.float32), np.zeros((50, 32), np.float32))
    with pytest.raises(ValueError, match="do not fit"):
        native.attention_grad_block(q, dy, panels, 40, 60, softmax, np.zeros(10, np.float32), 1.0, grads)
    with pytest.raises(ValueError, match="masked has shape"):
        native.attention_grad_block(
            q, dy, panels, 0, 20, softmax, np.zeros(10, np.float32), 1.0, grads, masked=np.zeros((10, 21), bool)
        )


def test_matmul_panels_edges():
    rng = np.random.default_rng(9)
    panels = native.pack_panels(_halves(rng, (0, 40)))
    assert (native.matmul_panels(np.full((3, 40), 5.0, np.float32), np.empty((3, 0), np.float32), panels) == 0).all()
    panels = native.pack_panels(_halves(rng, (16, 40)))
    assert panels.rows(4, 10).k == 6 and panels.n == 40
    with pytest.raises(ValueError, match="do not fit"):
        native.matmul_panels(np.empty((3, 10), np.float32), np.empty((3, 16), np.float32), panels, 31)
    with pytest.raises(ValueError, match="do not fit"):
        native.matmul_panels(np.empty((3, 10), np.float32), np.empty((3, 15), np.float32), panels)
    with pytest.raises(ValueError, match="contiguous rows"):
        native.matmul_panels(np.empty((10, 3), np.float32).T, np.empty((3, 16), np.float32), panels)
    with pytest.raises(ValueError, match="float32"):
        native.pack_panels(np.empty((4, 4)))


def _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, piece_bytes, dst_stride, src_stride):
    """native.copy_pieces writes into `dst` the bytes of the plain pair-by-pair, piece-by-piece loop
    (a later pair overwrites an earlier one)."""
    expected = dst.copy()
    for d, s_ in zip(dst_offsets, src_offsets):
        for p in range(pieces):
            at, start = d + p * dst_stride, s_ + p * src_stride
            expected[at : at + piece_bytes] = src[start : start + piece_bytes]
    native.copy_pieces(
        dst,
        src,
        dst_offsets,
        src_offsets,
        pieces=pieces,
        piece_bytes=piece_bytes,
        dst_stride=dst_stride,
        src_stride=src_stride,
    )
    assert np.array_equal(dst, expected)


def test_copy_pieces_moves_exact_bytes_in_pair_order():
    rng = np.random.default_rng(4)
    src = rng.integers(0, 256, 64 * 96, dtype=np.uint8)
    dst = np.zeros(40 * 1024, np.uint8)
    expected = dst.copy()
    dst_offsets = np.array([0, 5000, 300, 5000, 9000])  # 5000 twice: the later pair wins
    src_offsets = np.array([0, 96, 7, 4000, 2000])
    for piece_bytes in (32, 5):
        for d, s in zip(dst_offsets, src_offsets):
            for p in range(3):
                expected[d + p * 1024 : d + p * 1024 + piece_bytes] = src[s + p * 96 : s + p * 96 + piece_bytes]
        native.copy_pieces(
            dst, src, dst_offsets, src_offsets, pieces=3, piece_bytes=piece_bytes, dst_stride=1024, src_stride=96
        )
        assert np.array_equal(dst, expected)
    with pytest.raises(ValueError):
        native.copy_pieces(
            dst, src, np.array([40 * 1024 - 31]), np.array([0]), pieces=1, piece_bytes=32, dst_stride=0, src_stride=0
        )


@pytest.mark.parametrize("pieces,piece_bytes,src_step", [(1, 64, 64), (1, 64, 200), (4, 32, 128), (3, 6, 40)])
def test_copy_pieces_runs_of_consecutive_destinations(pieces, piece_bytes, src_step):
    """Runs (destinations piece_bytes apart, sources a constant step apart) are copied piece-major
    or as one block; the bytes must be those of the plain pair-by-pair loop."""
    rng = np.random.default_rng(6)
    src = rng.integers(0, 256, 200 * src_step + pieces * 1000, dtype=np.uint8)
    dst_stride = 50 * piece_bytes
    dst = np.zeros(pieces * dst_stride + 60 * piece_bytes, np.uint8)
    run = np.arange(40)
    dst_offsets = np.concatenate([run * piece_bytes, [7 * piece_bytes], 45 * piece_bytes + run[:5] * piece_bytes])
    src_offsets = np.concatenate([3 + run * src_step, [11], 4000 + run[:5] * src_step])
    _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, piece_bytes, dst_stride, 1000)


@pytest.mark.parametrize(
    "pieces,piece_bytes,dst_step,dst_stride",
    [
        (4, 32, 128, 32),  # the gather out of a PA_NZ cache: a token's pieces side by side, tokens a row apart
        (3, 6, 40, 12),  # destinations more than a pair's span apart
        (3, 8, 20, 8),  # less than a span apart: the pairs overlap, the later one must win
        (3, 8, 8, 40),  # piece_bytes apart, but longer than the pieces' spacing: pairs overlap too
    ],
)
def test_copy_pieces_runs_of_spaced_destinations(pieces, piece_bytes, dst_step, dst_stride):
    """Pairs whose destinations and sources step evenly give the bytes of the pair-by-pair loop,
    however the copier groups them."""
    rng = np.random.default_rng(7)
    src = rng.integers(0, 256, 4096, dtype=np.uint8)
    dst = np.zeros(pieces * dst_stride + 60 * dst_step + 64, np.uint8)
    run = np.arange(30)
    dst_offsets, src_offsets = 5 + run * dst_step, 9 + run * 32
    _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, piece_bytes, dst_stride, 1000)


@pytest.mark.parametrize("piece_bytes", [32, 6])
def test_copy_pieces_groups_of_rising_destinations(piece_bytes):
    """Rising destinations that start within one piece stride (a PA_NZ block's slots in slot order)
    are copied piece by piece across the group; the bytes must be those of the pair-by-pair loop,
    also where a later pair's piece lands on an earlier pair's next piece (a stride apart) or on
    the same destination (a repeat: the later pair wins)."""
    rng = np.random.default_rng(11)
    pieces, stride = 6, 40 * piece_bytes
    within = np.sort(rng.choice(39, 20, replace=False)) * piece_bytes
    dst_offsets = np.concatenate(
        [within, 3 * stride + within[:7], [3 * stride + within[6]], 4 * stride + within[:3], [stride + 1, stride + 2]]
    )
    dst_offsets = np.concatenate([dst_offsets, [stride, 2 * stride]])  # last: nothing overwrites them
    src_offsets = rng.permutation(len(dst_offsets)) * pieces * piece_bytes
    src = rng.integers(0, 256, len(dst_offsets) * pieces * piece_bytes, dtype=np.uint8)
    dst = np.zeros(12 * stride, np.uint8)
    _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, piece_bytes, stride, piece_bytes)


@pytest.mark.parametrize("pieces,piece_bytes", [(1, 2048), (2, 256), (1, 200)])
def test_large_copies_of_large_pieces_give_the_same_bytes(pieces, piece_bytes):
    """Copies of 1 MiB and more write pieces of 256 bytes and up with streaming stores where the
    destination is 16-byte aligned: aligned and misaligned destinations, runs, repeats and pairs
    in any order must give the bytes of the plain loop."""
    rng = np.random.default_rng(9)
    rows = (2 << 20) // (pieces * piece_bytes)
    src = rng.integers(0, 256, rows * pieces * piece_bytes + 64, dtype=np.uint8)
    dst_stride = piece_bytes * 4
    slots = np.concatenate([rng.permutation(rows * 3)[: rows - 40], np.arange(100, 120), [5, 5, 7] * 6 + [8, 9]])
    dst_offsets = slots * piece_bytes + np.where(slots % 5 == 0, 8, 0)  # some not 16-byte aligned
    src_offsets = np.arange(len(slots)) * pieces * piece_bytes + 16
    dst = np.zeros(dst_offsets.max() + (pieces - 1) * dst_stride + piece_bytes + 64, np.uint8)
    _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, piece_bytes, dst_stride, piece_bytes)


@pytest.mark.parametrize("base", [0, 16, 32])  # line-aligned blocks, never, and half a line off
def test_large_copies_of_adjacent_nz_pieces_give_the_same_bytes(base):
    """Copies of 1 MiB and more stream the whole 64-byte lines of runs of 32-byte pieces written side
    by side (a PA_NZ block's consecutive slots): runs starting and ending mid-line, single slots
    and repeats must give the bytes of the plain loop."""
    rng = np.random.default_rng(10)
    pieces, block, blocks = 8, 128, 96
    dst_stride = block * 32
    runs = [rng.integers(0, blocks) * block + rng.integers(0, 40) + np.arange(rng.integers(1, 88)) for _ in range(100)]
    slots = np.concatenate([*runs, rng.integers(0, blocks * block, 300), [7, 7, 8, 7]])
    dst_offsets = base + slots // block * pieces * dst_stride + slots % block * 32
    src_offsets = rng.permutation(len(slots)) * pieces * 32 + 8
    src = rng.integers(0, 256, len(slots) * pieces * 32 + 64, dtype=np.uint8)
    whole = np.zeros(blocks * pieces * dst_stride + 128, np.uint8)
    dst = whole[-whole.ctypes.data % 64 :][: blocks * pieces * dst_stride + 64]  # lines start at dst + base - base % 64
    assert len(slots) * pieces * 32 >= 1 << 20
    _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, 32, dst_stride, 32)


@pytest.mark.parametrize("pieces,base", [(64, 0), (7, 16), (8, 8)])  # even, odd; 16-byte aligned rows or not
def test_large_copies_out_of_nz_blocks_give_the_same_bytes(pieces, base):
    """Copies of 1 MiB and more out of PA_NZ blocks (the gather: a block's consecutive slots into
    token rows) move two pieces at a time with streaming stores; runs starting and ending
    mid-block, an odd piece count and rows off the 16-byte grid must give the bytes of the plain loop."""
    rng = np.random.default_rng(12)
    block, blocks, row = 128, 40, pieces * 32 + 48
    piece_stride = block * 32
    starts = rng.integers(0, 60, 50)
    runs = [b * block + s + np.arange(rng.integers(1, block - s)) for b, s in zip(rng.permutation(blocks), starts)]
    slots = np.concatenate(runs)
    while len(slots) * pieces * 32 < 1 << 20:
        slots = np.concatenate([slots, slots])
    src = rng.integers(0, 256, blocks * pieces * piece_stride, dtype=np.uint8)
    src_offsets = slots // block * pieces * piece_stride + slots % block * 32
    dst_offsets = base + np.arange(len(slots)) * row
    whole = np.zeros(len(slots) * row + 128, np.uint8)
    dst = whole[-whole.ctypes.data % 64 :][: len(slots) * row + 64]
    _copies_like_the_plain_loop(dst, src, dst_offsets, src_offsets, pieces, 32, 32, piece_stride)


def test_scatter_add_rows_adds_repeated_positions_in_order():
    rng = np.random.default_rng(8)
    acc = rng.standard_normal((50, 37)).astype(np.float32)
    pos = rng.integers(0, 50, 400)  # many positions repeat
    vals = (rng.standard_normal((400, 37)) * 10.0 ** rng.integers(-6, 6, (400, 1))).astype(np.float32)
    expected = acc.copy()
    for p, v in zip(pos, vals):
        expected[p] += v
    native.scatter_add_rows(acc, pos, vals)
    assert _same_bits(acc, expected)
    with pytest.raises(ValueError, match="outside"):
        native.scatter_add_rows(acc, np.array([50]), vals[:1])


WORKER_COUNTS = (1, 2, 3)


def _operator_digests(isa: str, workers: int) -> dict:
    """tests/same_bits_cases.py's digests, run in a process of its own with the ISA level and
    worker count set."""
    env = {**os.environ, "ACLNN_EMU_ISA": isa, "ACLNN_EMU_THREADS": str(workers)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "same_bits_cases.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_operator_gives_the_same_bytes_at_every_isa_level_and_worker_count():
    """Every operator of ae.ops, on row and key counts that fill no vector, block or worker evenly
    (fp16 and bf16, bands, grouped kv heads, the decode paths), gives the same bytes at every ISA
    level this CPU runs and with 1, 2 and 3 kernel workers."""
    levels = native.ISAS[: native.ISAS.index(native.best_isa()) + 1]
    configurations = [(isa, workers) for isa in levels for workers in WORKER_COUNTS]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda c: _operator_digests(*c), configurations))
    reference = runs[0]["digests"]
    assert {name.split()[0] for name in reference} == {op.name for op in registry.all_ops()}
    for (isa, workers), run in zip(configurations, runs):
        assert run["isa"] == isa and run["workers"] in (workers, 1)  # 1: BLAS cannot be held to one thread
        differing = [name for name in reference if run["digests"][name] != reference[name]]
        assert not differing, f"{isa} with {workers} workers: {differing}"


@pytest.mark.skipif(native.best_isa() == native.ISAS[-1], reason="this CPU runs every level")
def test_a_level_the_cpu_lacks_runs_the_best_it_has(capsys):
    best = native.best_isa()
    try:
        assert native.use_isa("avx512") == best
    finally:
        native.use_isa("auto")
    assert f"ACLNN_EMU_ISA=avx512: this CPU's best level is {best}" in capsys.readouterr().err


def _compile_alone(source, tmp_path, *flags) -> subprocess.CompletedProcess:
    """`source` (a path relative to the project root) compiled by itself, as the build compiles it."""
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    command = [*compiler, *shim.FLAGS, "-fPIC", "-Wall", "-Wno-maybe-uninitialized", "-Werror", *flags]
    command += ["-I", str(ROOT / shim.KERNELS), "-c", str(ROOT / source), "-o", str(tmp_path / "out.o")]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("source", shim.SOURCES, ids=lambda path: path.name)
def test_each_c_source_compiles_on_its_own(source, tmp_path):
    result = _compile_alone(source, tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(
    platform.machine() != "x86_64" or "clang" in (sysconfig.get_config_var("CC") or ""), reason="GCC on x86-64"
)
def test_a_gcc_too_old_for_the_isa_levels_is_refused_with_the_fix(tmp_path):
    result = _compile_alone(shim.SOURCES[0], tmp_path, "-D__GNUC__=11")
    assert result.returncode != 0
    assert "cannot build the AVX2 and AVX-512 loops" in result.stderr
    assert "(version " in result.stderr and "CC=gcc-12" in result.stderr


def test_every_source_and_header_ships_as_package_data():
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11 on)
    with open(ROOT / "pyproject.toml", "rb") as file:
        patterns = tomllib.load(file)["tool"]["setuptools"]["package-data"]["aclnn_emu.kernels"]
    for path in (*shim.SOURCES, *shim.HEADERS):
        assert any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns), path
