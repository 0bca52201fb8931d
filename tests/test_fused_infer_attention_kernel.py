"""FusedInferAttentionScore's FIA-V3 non-quant kernels (A2/A3) against the float64 golden, their
tiling's key blocks, and each rounded quantity at ties."""

import ml_dtypes
import numpy as np
import pytest

import precision
import ties

from aclnn_emu.kernels.casts import BF16
from aclnn_emu.kernels.flash_attention import fused_infer_attention as fia
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from golden import fused_infer_attention_score as golden

BIG = pfa.SPARSE_INT_MAX


def _data(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _assert_out(actual, want, dtype):
    """attentionOut to the dtype's standard, cancelling sums judged against their terms (floor)."""
    message = precision.failure(np.asarray(actual, np.float64), want.out, np.dtype(dtype).name, floor=want.floor)
    assert message is None, f"attentionOut: {message}"


def _assert_lse(actual, expected, what="softmaxLse"):
    """lse is fp32 throughout (log(l) + m): fp32's standard; same infinities."""
    assert np.array_equal(np.isinf(actual), np.isinf(expected)), f"{what}: infinities differ"
    finite = np.isfinite(expected)
    precision.assert_meets(actual[finite], expected[finite], np.float32, what)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_prefill_gqa_causal_matches_golden(dtype):
    """S1 > 16: 512-key blocks; right-down causal (sparse 3) with ragged lengths; GQA 8 / 2."""
    rng = np.random.default_rng(1)
    q, k, v = (_data(rng, s, dtype) for s in ((2, 8, 700, 128), (2, 2, 700, 128), (2, 2, 700, 128)))
    act_q, act_kv = [700, 500], [700, 650]
    tiling = fia.gqa_tiling(700, 4, False, True, 3, 0, 700)
    assert tiling.kv_block == 512
    out, lse = fia.fused_infer_attention(
        q,
        k,
        v,
        scale=128**-0.5,
        bands=pfa.batch_bands(3, BIG, 0, True, act_q, act_kv),
        act_q=act_q,
        act_kv=act_kv,
        tiling=tiling,
        lse=True,
    )
    want = golden.attention(
        q, k, v, scale=128**-0.5, kv_block=512, sparse_mode=3, act_q=act_q, act_kv=act_kv, has_mask=True
    )
    assert out.dtype == dtype
    _assert_out(out, want, dtype)
    _assert_lse(lse, want.lse)
    assert not out[1, :, 500:].any() and np.isinf(lse[1, :, 500:]).all()  # rows past act_q


@pytest.mark.parametrize("group, block", [(4, 8192), (8, 4096), (16, 2048)])
def test_decode_key_blocks_follow_the_group(group, block):
    """S1 = 1: the key block shrinks as G grows (CalcInnerSize); a batch without keys is 0 and
    keeps the legacy-IFA lse init -3.4e38."""
    rng = np.random.default_rng(group)
    s2 = 9000
    q, k, v = (_data(rng, s, np.float16) for s in ((3, 2 * group, 1, 64), (3, 2, s2, 64), (3, 2, s2, 64)))
    act_kv = [s2, 2100, 0]
    tiling = fia.gqa_tiling(1, group, False, False, 0, 0, s2)
    assert tiling.kv_block == block
    out, lse = fia.fused_infer_attention(
        q,
        k,
        v,
        scale=0.125,
        bands=pfa.batch_bands(0, BIG, BIG, False, [1] * 3, act_kv),
        act_q=[1] * 3,
        act_kv=act_kv,
        tiling=tiling,
        lse=True,
        lse_unseen=fia.LSE_UNSEEN_LEGACY_IFA,
    )
    want = golden.attention(
        q, k, v, scale=0.125, kv_block=block, act_kv=act_kv, lse_unseen=float(fia.LSE_UNSEEN_LEGACY_IFA)
    )
    _assert_out(out, want, np.float16)
    np.testing.assert_array_equal(lse[2], np.float32(-3.4e38))
    _assert_lse(lse[:2], want.lse[:2])


def test_paged_block_size_floors_the_key_block():
    """A page size that does not divide the key block floors it to whole pages."""
    assert fia.gqa_tiling(1, 4, False, False, 0, 112, 9000).kv_block == 8176
    assert fia.gqa_tiling(64, 4, False, False, 0, 128, 9000).kv_block == 512
    assert fia.gqa_tiling(64, 4, True, True, 2, 0, 9000).kv_block == 512
    assert fia.gqa_tiling(8, 4, False, True, 2, 0, 9000).kv_block == 1024
    assert fia.gqa_tiling(8, 4, False, False, 0, 0, 300).kv_block == 300
    assert fia.mla_tiling(96, 9000).kv_block == 480


def test_mla_rope_matches_golden():
    """MLA: D 512 + rope 64, Dv 512, one KV head, G 16, bf16; two query rows (MTP)."""
    rng = np.random.default_rng(7)
    q, k, v = (_data(rng, s, BF16) for s in ((1, 16, 2, 512), (1, 1, 700, 512), (1, 1, 700, 512)))
    q_rope, k_rope = _data(rng, (1, 16, 2, 64), BF16), _data(rng, (1, 1, 700, 64), BF16)
    tiling = fia.mla_tiling(0, 700)
    out, _ = fia.fused_infer_attention(
        q,
        k,
        v,
        scale=576**-0.5,
        bands=pfa.batch_bands(0, BIG, BIG, False, [2], [700]),
        act_q=[2],
        act_kv=[700],
        tiling=tiling,
        rope=fia.Rope(q_rope, k_rope),
    )
    _assert_out(out, golden.attention(q, k, v, scale=576**-0.5, kv_block=512, rope=(q_rope, k_rope)), BF16)


def test_sink_joins_the_row_sum_and_the_lse():
    rng = np.random.default_rng(9)
    q, k, v = (_data(rng, s, np.float16) for s in ((1, 4, 40, 64), (1, 1, 90, 64), (1, 1, 90, 64)))
    sink = (rng.standard_normal(4) * 3).astype(ml_dtypes.bfloat16).astype(np.float32)
    common = dict(scale=0.125, bands=pfa.batch_bands(0, BIG, BIG, False, [40], [90]), act_q=[40], act_kv=[90])
    out, lse = fia.fused_infer_attention(q, k, v, tiling=fia.Tiling(512), sink=sink, lse=True, **common)
    plain, plain_lse = fia.fused_infer_attention(q, k, v, tiling=fia.Tiling(512), lse=True, **common)
    want = golden.attention(q, k, v, scale=0.125, kv_block=512, sink=sink)
    _assert_out(out, want, np.float16)
    _assert_lse(lse, want.lse)
    assert (lse > plain_lse).all() and (np.abs(out.astype(np.float32)) <= np.abs(plain.astype(np.float32)) + 1e-3).all()


@pytest.mark.parametrize("invalid_rows", [False, True])
def test_fully_masked_rows(invalid_rows):
    """attenMask masking every key of a row: its scores are -1e12, finite, so O is the mean of V and
    lse = log(S2) - 1e12; with the row-invalid correction O is 0 and lse +inf."""
    rng = np.random.default_rng(11)
    q, k, v = (_data(rng, s, np.float16) for s in ((1, 2, 6, 64), (1, 1, 30, 64), (1, 1, 30, 64)))
    mask = np.zeros((1, 6, 30), np.uint8)
    mask[0, 2] = 1
    out, lse = fia.fused_infer_attention(
        q,
        k,
        v,
        scale=0.125,
        bands=pfa.batch_bands(0, BIG, BIG, True, [6], [30]),
        act_q=[6],
        act_kv=[30],
        tiling=fia.Tiling(30),
        mask=pfa.Mask(mask),
        lse=True,
        masked_lse_inf=[invalid_rows],
        zero_masked_rows=invalid_rows,
    )
    want = golden.attention(q, k, v, scale=0.125, kv_block=30, mask=mask, masked_lse_inf=invalid_rows)
    if invalid_rows:
        want.out[:, :, 2] = 0
    else:
        mean = v[0, 0].astype(np.float64).mean(0)
        np.testing.assert_allclose(want.out[0, :, 2], np.tile(mean, (2, 1)), rtol=1e-3, atol=1e-4)
    _assert_out(out, want, np.float16)
    _assert_lse(lse, want.lse)


def _no_band(rows, keys):
    return dict(bands=[(BIG, BIG)], act_q=[rows], act_kv=[keys], tiling=fia.Tiling(keys))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_P_rounds_ties_away(dtype):
    """P = CAST_ROUND(E) to the key dtype for fp16 and bf16 alike. Row i scores key 0 at 0 (the max)
    and key 1 at y_i, whose fp32 exp is a midpoint; V = (0, 1), so O = P_1 / (1 + e)."""
    y, e = ties.exp_ties(np.random.default_rng(21), dtype, 32)
    q, key = ties.dot_terms(y, dtype, 16)
    k = np.stack([np.zeros(16, dtype), key])[None, None]
    v = np.stack([np.zeros(16), np.ones(16)]).astype(dtype)[None, None]
    out, _ = fia.fused_infer_attention(q[None, None], k, v, scale=1.0, **_no_band(32, 2))
    out_mode = "away" if dtype == np.float16 else "even"
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.two_key_output(e, dtype, modes["P"], out_mode)}, {"P": "away"}, "FIA P"
    )
    ties.assert_bits(out[0, 0], np.repeat(want["out"][:, None], 16, axis=1), "out")


@pytest.mark.parametrize("dtype, mode", [(np.float16, "away"), (BF16, "even")], ids=["fp16", "bf16"])
def test_output_rounding(dtype, mode):
    """fp16 out CAST_ROUND, bf16 out CAST_RINT (Bmm2CastAndCopyOut). Q = 0: P = 1 on both keys, so
    O = (v0 + v1) / 2, a midpoint for v0 and v1 one step apart."""
    rng = np.random.default_rng(22)
    v0 = ties.round_to(ties.one_more_bit(rng, 64, dtype), dtype, "even")
    v1 = v0 + np.sign(v0) * np.spacing(np.abs(v0).astype(dtype)).astype(np.float64)
    midpoint = (v0 + v1) / 2
    v = np.stack([v0, v1]).astype(dtype)[None, None]
    q, k = np.zeros((1, 1, 4, 64), dtype), np.zeros((1, 1, 2, 64), dtype)
    out, _ = fia.fused_infer_attention(q, k, v, scale=1.0, **_no_band(4, 2))
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.to_output(midpoint, dtype, modes["out"])}, {"out": mode}, "FIA out", ("out",)
    )
    ties.assert_bits(out[0, 0], np.tile(want["out"], (4, 1)), "out")


def test_unpack_int4_low_nibble_first_and_signed():
    """Eight INT4 values per INT32 word, element 2i in the low nibble of byte i, two's complement."""
    values = np.array([[1, -1, 7, -8, 0, 3, -5, 2]], np.int8)
    nibbles = (values.astype(np.uint8) & 0x0F).reshape(1, 4, 2)
    words = (nibbles[..., 0] | (nibbles[..., 1] << 4)).astype(np.uint8).view(np.int32)
    np.testing.assert_array_equal(fia.unpack_int4(words), values)


def _pages_by_hand(cache, table, lengths, kv_heads, d, block, width, first):
    """The pages as the docs address them, one token at a time: block table[b][t // block], row t % block."""
    out = np.zeros((len(lengths), kv_heads, width, d), cache.dtype)
    for b, length in enumerate(lengths):
        for t in range(length):
            ids = table.reshape(-1)[b * table.shape[1] :]
            if t // block >= len(ids) or not 0 <= ids[t // block] < cache.shape[0]:
                continue
            i, r = ids[t // block], t % block
            for n in range(kv_heads):
                if cache.ndim == 3:
                    row = cache[i, r, n * d : (n + 1) * d]
                elif cache.ndim == 4:
                    row = cache[i, n, r]
                else:
                    row = cache[i, n, :, r].reshape(-1)
                out[b, n, first + t] = row
    return out


@pytest.mark.parametrize("layout", ["BnBsH", "BnNBsD", "NZ"])
def test_pages_gather_moves_each_token_row_exactly(layout):
    """pages.gather (the compiled piece copier) against a token-by-token walk, bytes compared: ragged
    lengths ending inside a block, an empty batch, an id outside the cache and a table row too short
    (zeros, reported), after a prefix of 3 rows."""
    from aclnn_emu.ops.flash_attention.fused_infer import pages
    from aclnn_emu.runtime import sanitizer

    rng = np.random.default_rng(7)
    blocks, block, kv_heads, d = 9, 16, 3, 32
    shapes = {"BnBsH": (blocks, block, kv_heads * d), "BnNBsD": (blocks, kv_heads, block, d)}
    shapes["NZ"] = (blocks, kv_heads, d // 16, block, 16)
    cache = rng.integers(0, 1 << 16, shapes[layout], dtype=np.uint16).view(np.float16)
    table = np.array([[4, 0, 7], [8, 99, 2], [1, 3, 5], [6, -1, 0]], np.int32)[:, :3]
    lengths = [40, 35, 0, 60]  # the last needs a fourth table entry, past the table's 12
    first, width = 3, 3 + 60
    out = np.zeros((4, kv_heads, width, d), np.float16)
    sanitizer.clear()
    pages.gather(cache, table, lengths, kv_heads, d, block, "test cache", out, first)
    want = _pages_by_hand(cache, table, lengths, kv_heads, d, block, width, first)
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))
    reported = [text for _, text in sanitizer.reports()]
    assert any("blockTable[1] holds ids [99]" in text for text in reported), reported
    assert any("blockTable[3] holds ids [-1]" in text for text in reported), reported
    assert any("batch 3 reads blockTable entries 9..12 past its 12" in text for text in reported), reported
