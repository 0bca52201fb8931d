"""aclnnIncreFlashAttentionV4 numerics through the Python API against the float64 golden.

Every case runs both phases through ``aclnn_emu.run`` and holds the result to CANN's precision
standard (fp16 1e-3, bf16 4e-3 on >= 99.9 % of elements); int8 outputs match the golden's grid
(a rounding tie may land one step away on < 0.1 % of them). Tie cases check the kernel's output
roundings bit for bit.
"""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from aclnn_emu import DataType
from aclnn_emu.kernels import native
from aclnn_emu.meta import TensorList
from golden import incre_flash_attention as golden

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(20251124)


def q_layout(q, layout):
    """[B, N, D] -> the query in `layout` (S = 1)."""
    b, n, d = q.shape
    return {"BNSD": q.reshape(b, n, 1, d), "BSND": q.reshape(b, 1, n, d), "BSH": q.reshape(b, 1, n * d)}[
        layout.split("_")[0]
    ]


def kv_layout(x, layout):
    """[B, N2, S, D] -> `layout`."""
    if layout == "BNSD":
        return x
    bsnd = x.transpose(0, 2, 1, 3)
    return bsnd if layout == "BSND" else bsnd.reshape(x.shape[0], x.shape[2], -1)


def dev(x, dtype=None):
    return None if x is None else ae.to_device(np.ascontiguousarray(x), dtype=dtype)


def run_ifa(
    q,
    key_list,
    value_list,
    *,
    layout="BNSD",
    scale=0.125,
    kv_heads=0,
    actual=None,
    mask=None,
    pse=None,
    antiquant=None,
    table=None,
    block_size=0,
    padding=None,
    quant2=None,
    offset2=None,
    out_dtype=None,
    inner_precise=1,
    out_layout=None,
):
    """q [B, N, D]; key_list/value_list: arrays already in their layout (one per list entry)."""
    b, n, d = q.shape
    out_dtype = out_dtype or ae.dtypes.from_numpy(q.dtype)
    out_shape = q_layout(np.empty((b, n, d), np.int8), layout).shape if out_layout is None else out_layout
    out = ae.empty(out_shape, out_dtype)
    keys = TensorList([dev(k) for k in key_list])
    values = TensorList([dev(v) for v in value_list])
    aq_scale, aq_offset = (None, None) if antiquant is None else antiquant
    ae.run(
        "IncreFlashAttentionV4",
        dev(q_layout(q, layout)),
        keys,
        values,
        dev(pse),
        dev(mask),
        None if actual is None else tuple(actual),
        None,
        None,
        None,
        dev(quant2),
        dev(offset2),
        dev(aq_scale),
        dev(aq_offset),
        dev(table, DataType.ACL_INT32),
        dev(padding, DataType.ACL_INT64),
        n,
        scale,
        layout,
        kv_heads,
        block_size,
        inner_precise,
        out,
    )
    result = ae.numpy(out)
    return result.reshape(b, n, d) if out_layout is None else result


def values(shape, dtype, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def expect(q, keys, values, **kwargs):
    """The golden output and its per-element floor (golden.attention's `magnitude`)."""
    floor = np.zeros(q.shape)
    return golden.attention(q, keys, values, magnitude=floor, **kwargs), floor


def meets(actual, expected, dtype):
    """`expected` is (golden, floor): cancelling sums are judged against their terms' magnitude."""
    golden_out, floor = expected
    message = precision.failure(np.asarray(actual, np.float64), golden_out, np.dtype(dtype).name, floor=floor)
    assert message is None, message


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_layouts_and_gqa(dtype, layout):
    q = values((3, 8, 64), dtype)
    k, v = values((3, 2, 77, 64), dtype), values((3, 2, 77, 64), dtype)
    out = run_ifa(q, [kv_layout(k, layout)], [kv_layout(v, layout)], layout=layout, kv_heads=2, scale=64**-0.5)
    assert out.dtype == np.dtype(dtype)
    expected = expect(q, list(k), list(v), scale=64**-0.5, lengths=[77] * 3, small_dtype=np.dtype(dtype).name)
    meets(out, expected, dtype)


@pytest.fixture(params=native.ISAS[: native.ISAS.index(native.best_isa()) + 1])
def isa(request):
    """Each instruction-set level this CPU runs: each has its own decode paths (AVX-512, F16C, the
    generic loops)."""
    try:
        yield native.use_isa(request.param)
    finally:
        native.use_isa("auto")


@pytest.mark.parametrize(
    "heads,d",
    [(6, 128), (2, 128), (6, 64), (10, 40), (6, 20), (8, 64)],
    ids=["g3_d128", "g1_d128", "g3_d64", "g5_d40", "g3_d20", "g4_d64"],
)
def test_group_sizes_and_head_dims(heads, d, isa):
    """Odd groups and the head dims the compiled paths specialise (64 and 128; multiples of 8) or
    leave to the generic loop, at every instruction-set level."""
    q = values((2, heads, d), np.float16)
    k, v = values((2, 2, 300, d), np.float16), values((2, 2, 300, d), np.float16)
    out = run_ifa(q, [k], [v], kv_heads=2, scale=d**-0.5, actual=(300, 123))
    expected = expect(q, list(k), list(v), scale=d**-0.5, lengths=[300, 123])
    meets(out, expected, np.float16)


def test_long_cache_crosses_softmax_chunks():
    q = values((2, 4, 32), np.float16)
    k, v = values((2, 4, 5000, 32), np.float16, 2.0), values((2, 4, 5000, 32), np.float16)
    out = run_ifa(q, [k], [v], actual=(5000, 4100))
    expected = expect(q, list(k), list(v), scale=0.125, lengths=[5000, 4100])
    meets(out, expected, np.float16)


def test_actual_lengths_mask_and_pse():
    q = values((3, 4, 32), np.float16)
    k, v = values((3, 2, 40, 32), np.float16), values((3, 2, 40, 32), np.float16)
    mask = RNG.random((3, 1, 1, 48)) < 0.3
    mask[2, 0, 0, :7] = True  # batch 2: every token it reads is masked
    pse = values((1, 4, 1, 40), np.float16)
    actual = (40, 17, 7)
    out = run_ifa(q, [k], [v], kv_heads=2, actual=actual, mask=mask.astype(np.uint8), pse=pse)
    expected = expect(q, list(k), list(v), scale=0.125, lengths=actual, mask=mask.reshape(3, 48), pse=pse[:, :, 0])
    meets(out, expected, np.float16)
    # all-masked row: -1e12 is finite, so the row averages its values
    np.testing.assert_allclose(out[2, 0], v[2, 0, :7].astype(np.float64).mean(axis=0), rtol=2e-3, atol=2e-3)


def test_zero_length_batch_is_zero():
    q = values((2, 2, 16), np.float16)
    k, v = values((2, 2, 8, 16), np.float16), values((2, 2, 8, 16), np.float16)
    out = run_ifa(q, [k], [v], actual=(0, 8))
    assert np.all(out[0] == 0)
    meets(out[1:], expect(q[1:], list(k[1:]), list(v[1:]), scale=0.125, lengths=[8]), np.float16)


@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_tensor_list_one_tensor_per_batch(layout):
    q = values((3, 4, 32), np.float16)
    lens = (5, 19, 11)
    ks = [values((1, 4, s, 32), np.float16) for s in lens]
    vs = [values((1, 4, s, 32), np.float16) for s in lens]
    out = run_ifa(q, [kv_layout(k, layout) for k in ks], [kv_layout(v, layout) for v in vs], layout=layout)
    expected = expect(q, [k[0] for k in ks], [v[0] for v in vs], scale=0.125, lengths=lens)
    meets(out, expected, np.float16)


def test_kv_left_padding():
    q = values((2, 2, 16), np.float16)
    k, v = values((2, 2, 30, 16), np.float16), values((2, 2, 30, 16), np.float16)
    actual, pad = (12, 25), 4
    out = run_ifa(q, [k], [v], actual=actual, padding=np.array([pad]))
    starts = [30 - pad - n for n in actual]  # tokens [S - pad - len, S - pad)
    expected = expect(q, list(k), list(v), scale=0.125, lengths=actual, starts=starts)
    meets(out, expected, np.float16)
    out_short = run_ifa(q, [k], [v], actual=(12, 28), padding=np.array([pad]))
    assert np.all(out_short[1] == 0), "no room left of the padding: the batch is zero"


def paged_cache(k, v, block_size, heads_major, lens, spare=3, rng=None):
    """Scatter [B, N2, S, D] rows into a shuffled paged cache; returns (kc, vc, table). ``rng``: the
    calling module's generator (so its data does not depend on what ran before), else this one's."""
    b, n2, _, d = k.shape
    per_batch = [-(-n // block_size) for n in lens]
    max_blocks = max(per_batch) + 1
    total = sum(per_batch) + spare
    order = (RNG if rng is None else rng).permutation(total)
    table = np.full((b, max_blocks), -1, np.int32)
    shape = (total, n2, block_size, d) if heads_major else (total, block_size, n2 * d)
    kc, vc = np.zeros(shape, k.dtype), np.zeros(shape, v.dtype)
    used = 0
    for bi, n in enumerate(lens):
        for c in range(per_batch[bi]):
            blk = order[used]
            used += 1
            table[bi, c] = blk
            j0, j1 = c * block_size, min(n, (c + 1) * block_size)
            for cache, src in ((kc, k), (vc, v)):
                rows = src[bi, :, j0:j1]  # [N2, t, D]
                if heads_major:
                    cache[blk, :, : j1 - j0] = rows
                else:
                    cache[blk, : j1 - j0] = rows.transpose(1, 0, 2).reshape(j1 - j0, -1)
    return kc, vc, table


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("heads_major,layout", [(True, "BNSD"), (False, "BNSD"), (False, "BSH"), (False, "BSND")])
def test_page_attention(dtype, heads_major, layout):
    q = values((3, 8, 64), dtype)
    lens = (300, 17, 128)
    k, v = values((3, 2, 300, 64), dtype), values((3, 2, 300, 64), dtype)
    kc, vc, table = paged_cache(k, v, 64, heads_major, lens)
    out = run_ifa(q, [kc], [vc], layout=layout, kv_heads=2, actual=lens, table=table, block_size=64)
    expected = expect(
        q,
        [golden.dense_rows(kc, table[b], 64, n, 2, heads_major) for b, n in enumerate(lens)],
        [golden.dense_rows(vc, table[b], 64, n, 2, heads_major) for b, n in enumerate(lens)],
        scale=0.125,
        lengths=lens,
        small_dtype=np.dtype(dtype).name,
    )
    meets(out, expected, dtype)


def test_page_attention_chunks_with_mask_and_pse():
    q = values((2, 4, 32), np.float16)
    lens = (2500, 700)
    k, v = values((2, 4, 2500, 32), np.float16), values((2, 4, 2500, 32), np.float16)
    kc, vc, table = paged_cache(k, v, 128, True, lens)
    s_max = table.shape[1] * 128
    mask = (RNG.random((2, s_max)) < 0.2).astype(np.int8)
    pse = values((2, 4, 1, s_max), np.float16)
    out = run_ifa(q, [kc], [vc], actual=lens, table=table, block_size=128, mask=mask, pse=pse)
    expected = expect(
        q,
        [golden.dense_rows(kc, table[b], 128, n, 4, True) for b, n in enumerate(lens)],
        [golden.dense_rows(vc, table[b], 128, n, 4, True) for b, n in enumerate(lens)],
        scale=0.125,
        lengths=lens,
        mask=mask,
        pse=pse[:, :, 0],
    )
    meets(out, expected, np.float16)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_int8_antiquant(dtype, per_channel):
    q = values((2, 4, 32), dtype)
    k8 = RNG.integers(-128, 128, (2, 2, 50, 32), dtype=np.int8)
    v8 = RNG.integers(-128, 128, (2, 2, 50, 32), dtype=np.int8)
    shape = (2, 2, 1, 32) if per_channel else (2,)
    scale = (RNG.random(shape) * 0.02 + 0.005).astype(dtype)
    offset = RNG.integers(-3, 4, shape).astype(dtype)
    out = run_ifa(q, [k8], [v8], kv_heads=2, antiquant=(scale, offset))
    s, o = scale.astype(np.float64), offset.astype(np.float64)
    if per_channel:
        s, o = s.reshape(2, 2, 32), o.reshape(2, 2, 32)
    expected = expect(
        q,
        list(k8),
        list(v8),
        scale=0.125,
        lengths=[50, 50],
        antiquant=(s[0], o[0], s[1], o[1]),
        small_dtype=np.dtype(dtype).name,
    )
    meets(out, expected, dtype)


def test_int8_antiquant_in_page_attention():
    q = values((2, 4, 32), np.float16)
    lens = (70, 33)
    k8 = RNG.integers(-128, 128, (2, 2, 70, 32), dtype=np.int8)
    v8 = RNG.integers(-128, 128, (2, 2, 70, 32), dtype=np.int8)
    kc, vc, table = paged_cache(k8, v8, 32, False, lens)
    scale = (RNG.random((2, 64)) * 0.02 + 0.005).astype(np.float16)
    out = run_ifa(
        q, [kc], [vc], layout="BSH", kv_heads=2, actual=lens, table=table, block_size=32, antiquant=(scale, None)
    )
    s = scale.astype(np.float64).reshape(2, 2, 32)
    expected = expect(
        q,
        [golden.dense_rows(kc, table[b], 32, n, 2, False) for b, n in enumerate(lens)],
        [golden.dense_rows(vc, table[b], 32, n, 2, False) for b, n in enumerate(lens)],
        scale=0.125,
        lengths=lens,
        antiquant=(s[0], 0.0, s[1], 0.0),
    )
    meets(out, expected, np.float16)


@pytest.mark.parametrize("dtype,scale_dtype", [(np.float16, np.float32), (BF16, np.float32), (BF16, BF16)])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_post_quant_int8_output(dtype, scale_dtype, per_channel):
    q = values((2, 4, 32), dtype)
    k, v = values((2, 4, 24, 32), dtype), values((2, 4, 24, 32), dtype, 3.0)
    shape = (4, 32) if per_channel else (1,)
    scale = (RNG.random(shape) * 40 + 10).astype(scale_dtype)
    offset = RNG.integers(-5, 6, shape).astype(scale_dtype)
    out = run_ifa(q, [k], [v], quant2=scale, offset2=offset, out_dtype=DataType.ACL_INT8)
    assert out.dtype == np.int8
    expected = golden.attention(
        q,
        list(k),
        list(v),
        scale=0.125,
        lengths=[24, 24],
        small_dtype=np.dtype(dtype).name,
        out_quant=(scale.astype(np.float64), offset.astype(np.float64)),
    )
    diff = np.abs(out.astype(np.int64) - expected)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.99


def test_nbsd_output_layout_is_filled_batch_major():
    """*_NBSD: attentionOut is shaped [N, B, 1, D], but only the MLA kernel reads outputLayout
    (incre_flash_attention_tiling_mla.h); the decode kernels write row (b, n) at (b N + n) D."""
    q = values((2, 4, 16), np.float16)
    k, v = values((2, 4, 10, 16), np.float16), values((2, 4, 10, 16), np.float16)
    out = run_ifa(q, [kv_layout(k, "BSH")], [kv_layout(v, "BSH")], layout="BSH_NBSD", out_layout=(4, 2, 1, 16))
    expected = expect(q, list(k), list(v), scale=0.125, lengths=[10, 10])
    meets(out.reshape(2, 4, 16), expected, np.float16)


# -- the kernel's roundings, bit for bit ------------------------------------------------------------
def uniform_case(v_rows, dtype):
    """One query head over len(v_rows) keys that all score 0: P is exactly uniform, O = mean(V)."""
    n_keys = len(v_rows)
    q = np.zeros((1, 1, 16), dtype)
    k = np.zeros((1, 1, n_keys, 16), dtype)
    v = np.asarray(v_rows, np.float64)[None, None].astype(dtype)
    return q, k, v


def test_fp16_output_rounds_ties_away():
    """O = 1 + 2**-11 lies halfway between fp16 1 and 1 + 2**-10: CAST_ROUND takes 1 + 2**-10."""
    q, k, v = uniform_case([[1.0] * 16, [1.0 + 2**-10] * 16], np.float16)
    out = run_ifa(q, [k], [v])
    assert np.all(out == np.float16(1.0 + 2**-10))


def test_bf16_output_rounds_ties_to_even():
    """O = 1 + 2**-8 lies halfway between bf16 1 and 1 + 2**-7: CAST_RINT keeps the even 1."""
    q, k, v = uniform_case([[1.0] * 16, [1.0 + 2**-7] * 16], BF16)
    out = run_ifa(q, [k], [v])
    assert np.all(out.astype(np.float32) == 1.0)


@pytest.mark.parametrize("per_channel,expected", [(False, 2), (True, 3)], ids=["per_tensor_rint", "per_channel_away"])
def test_post_quant_tie(per_channel, expected):
    """O * scale = 2.5: AscendQuant (per tensor) rounds to even, the per-channel path (via fp16,
    CAST_ROUND) away from zero."""
    q, k, v = uniform_case([[2.0] * 16, [3.0] * 16], np.float16)
    scale = np.full((1, 16) if per_channel else (1,), 1.0, np.float32)
    out = run_ifa(q, [k], [v], quant2=scale, out_dtype=DataType.ACL_INT8)
    assert np.all(out == expected)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_P_rounds_ties_away_from_zero(dtype):
    """Head n scores key 0 at 0 (the max) and key 1 at y_n, whose fp32 exp is a midpoint of the
    dtype: P = (1, CAST_ROUND(e_n)), V = (0, 1), so O = P_1 / (1 + e_n) shows the rounding of P
    (fp16 output CAST_ROUND, bf16 CAST_RINT)."""
    y, e = ties.exp_ties(np.random.default_rng(12), dtype, 32)
    q, key = ties.dot_terms(y, dtype, 16)
    k = np.broadcast_to(np.stack([np.zeros(16, dtype), key]), (32, 2, 16))[None]
    v = np.broadcast_to(np.stack([np.zeros(16), np.ones(16)]).astype(dtype), (32, 2, 16))[None]
    out = run_ifa(q[None], [k], [v], scale=1.0, kv_heads=32)
    out_mode = "away" if np.dtype(dtype) == np.float16 else "even"

    def golden_out(modes):
        return {"out": ties.two_key_output(e, dtype, modes["P"], out_mode)}

    want = ties.assert_sensitive(golden_out, {"P": "away"}, "attentionOut")
    ties.assert_bits(out[0], np.repeat(want["out"][:, None], 16, axis=1), "attentionOut")


def test_post_quant_per_channel_rounds_to_fp16_first():
    """O * scale = 2.5 - 2**-10, an fp16 midpoint: CAST_ROUND to fp16 gives 2.5, then 3; without the
    fp16 step the int8 rounding would give 2."""
    q, k, v = uniform_case([[2.5 - 2**-9] * 16, [2.5] * 16], np.float16)
    out = run_ifa(q, [k], [v], quant2=np.ones((1, 16), np.float32), out_dtype=DataType.ACL_INT8)
    assert np.all(out == 3)


def test_kv_left_padding_with_mask_and_pse():
    """Mask and pse columns are those of the tokens: they start at the padding's first token too."""
    q = values((2, 2, 16), np.float16)
    k, v = values((2, 2, 30, 16), np.float16), values((2, 2, 30, 16), np.float16)
    actual, pad = (12, 25), 4
    mask = RNG.random((2, 1, 1, 30)) < 0.3
    pse = values((1, 2, 1, 30), np.float16)
    out = run_ifa(q, [k], [v], actual=actual, padding=np.array([pad]), mask=mask.astype(np.uint8), pse=pse)
    starts = [30 - pad - n for n in actual]
    expected = expect(
        q, list(k), list(v), scale=0.125, lengths=actual, starts=starts, mask=mask.reshape(2, 30), pse=pse[:, :, 0]
    )
    meets(out, expected, np.float16)


def test_softmax_chunks_are_2048_tokens():
    """The emulator's own choice (the hardware's split of S is not modelled): the online softmax
    walks 2048-token chunks. Head n reads 1024 tokens scored 0 with value 1 and then one token scored
    s_n > 0 with value 0, exp(-s_n) = e_n an fp16 midpoint. In one chunk the first tokens get
    P = CAST_ROUND(e_n); had a chunk ended before the last token, they would get P = 1 rescaled by
    the unrounded e_n."""
    y, e = ties.exp_ties(np.random.default_rng(16), np.float16, 32)
    q, key = ties.dot_terms(-y, np.float16, 16)
    k = np.zeros((1, 32, 1025, 16), np.float16)
    k[0, :, 1024] = key
    v = np.ones((1, 32, 1025, 16), np.float16)
    v[0, :, 1024] = 0
    out = run_ifa(q[None], [k], [v], scale=1.0, kv_heads=32)

    def golden_out(modes):
        o = np.float32(1024 * ties.round_to(e, np.float16, modes["P"])) / np.float32(1024 * e + 1)
        return {"out": ties.round_to(o.astype(np.float64), np.float16, "away")}

    want = ties.assert_sensitive(golden_out, {"P": "away"}, "attentionOut")
    ties.assert_bits(out[0], np.repeat(want["out"][:, None], 16, axis=1), "attentionOut")
