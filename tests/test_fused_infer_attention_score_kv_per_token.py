"""FusedInferAttentionScoreV2+ per-token and per-head key/value antiquant on the A2/A3 IFA route
(S = 1, INT8 key/value beside an fp16/bf16 query): keyAntiquantMode = valueAntiquantMode = 1 (a
FLOAT scale and offset per cache position, [1, B, S'] or [B, S']), 3 (per position and KV head,
[B, N2, S']), 2 (one scale per KV head, [N2], in the query's dtype), 4 / 5 (per position, and
KV head, kept in the paged cache's blocks, [blocks, (N2,) blockSize]), and the key per channel with
the value per token (modes 0 and 1). The arch32 split kernel (incre_flash_attention_split_Bbn2s2_Us2.h,
DealAntiqBmm1ResBaseBlockPerToken / DealAntiqBmm2ResBaseBlockPerToken) reads the parameters of
batch b at position kvPaddingBegin + j (the logical token of a paged cache); the float64 reference
is tests/golden/incre_flash_attention.py."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from golden import incre_flash_attention as ifa_golden
from test_fused_infer_attention_score import run_fia

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(20261129)
DTYPES = pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])


def _int8(shape):
    return RNG.integers(-128, 128, shape, dtype=np.int8)


def _token_params(b, s, rank, with_offset):
    """(scale, offset or None) [1, B, S'] (rank 3) or [B, S'] float32, and their [B, S'] float64 view."""
    shape = (1, b, s) if rank == 3 else (b, s)
    scale = (RNG.random(shape) * 0.02 + 0.005).astype(np.float32)
    offset = RNG.standard_normal(shape).astype(np.float32) * 3 if with_offset else None
    view = (scale.reshape(b, s), np.zeros((b, s)) if offset is None else offset.reshape(b, s))
    return scale, offset, view


def _assert_meets(out, want, magnitude, dtype):
    message = precision.failure(out.astype(np.float64), want, np.dtype(dtype).name, floor=magnitude)
    assert message is None, message


def _separate(ks, ko, vs, vo, k_mode, v_mode):
    named = dict(keyAntiquantScaleOptional=ks, valueAntiquantScaleOptional=vs)
    named.update(keyAntiquantMode=k_mode, valueAntiquantMode=v_mode)
    if ko is not None:
        named.update(keyAntiquantOffsetOptional=ko, valueAntiquantOffsetOptional=vo)
    return named


@DTYPES
@pytest.mark.parametrize("rank", [3, 2], ids=["1BS", "BS"])
@pytest.mark.parametrize("with_offset", [True, False], ids=["offset", "no_offset"])
def test_key_and_value_per_token(dtype, rank, with_offset):
    """Modes 1: the key and the value dequantised with their own parameters per position; the
    parameters' S (90) may exceed the cache's (70), and batch 1 stops at its actual length."""
    b, n, n2, s, d = 2, 8, 2, 70, 32
    q = RNG.standard_normal((b, n, 1, d)).astype(dtype)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    ks, ko, key_view = _token_params(b, 90, rank, with_offset)
    vs, vo, value_view = _token_params(b, 90, rank, with_offset)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=d**-0.5, inputLayout="BNSD", actualSeqLengthsKvOptional=(70, 41),
        **_separate(ks, ko, vs, vo, 1, 1),
    )  # fmt: skip
    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q[:, :, 0], list(k8), list(v8), scale=d**-0.5, lengths=[70, 41], antiquant=(*key_view, *value_view),
        per_token=(True, True), small_dtype=np.dtype(dtype).name, magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out[:, :, 0], want, magnitude, dtype)


def test_key_per_channel_value_per_token():
    """Modes 0 and 1 (the tiling's PER_CHANNEL_TOKEN_MODE): the key's scale [1, N2, 1, D] in the
    query's dtype, the value's FLOAT [1, B, S']; BSH layout. (The A2/A3 OpDef registers the pair
    for an fp16 query only: test_bf16_channel_token_pair_has_no_kernel.)"""
    dtype = np.float16
    b, n, n2, s, d = 3, 4, 2, 50, 32
    q = RNG.standard_normal((b, 1, n * d)).astype(dtype)
    k8, v8 = _int8((b, s, n2 * d)), _int8((b, s, n2 * d))
    ks = (RNG.random((1, n2, 1, d)) * 0.02 + 0.005).astype(dtype)
    ko = RNG.integers(-3, 4, (1, n2, 1, d)).astype(dtype)
    vs, vo, value_view = _token_params(b, s, 3, True)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BSH", **_separate(ks, ko, vs, vo, 0, 1),
    )  # fmt: skip
    per_head = [x.reshape(b, s, n2, d).transpose(0, 2, 1, 3) for x in (k8, v8)]
    magnitude = np.zeros((b, n, d))
    channel = [x.astype(np.float64).reshape(n2, d) for x in (ks, ko)]
    want = ifa_golden.attention(
        q.reshape(b, n, d), list(per_head[0]), list(per_head[1]), scale=0.125, lengths=[s] * b,
        antiquant=(*channel, *value_view), per_token=(False, True), small_dtype=np.dtype(dtype).name,
        magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out.reshape(b, n, d), want, magnitude, dtype)


@DTYPES
def test_per_token_head(dtype):
    """Modes 3: [B, N2, S'] FLOAT, each KV head its own parameters per position."""
    b, n, n2, s, d = 2, 8, 2, 64, 32
    q = RNG.standard_normal((b, n, 1, d)).astype(dtype)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    ks, vs = ((RNG.random((b, n2, 70)) * 0.02 + 0.005).astype(np.float32) for _ in range(2))
    ko, vo = (RNG.standard_normal((b, n2, 70)).astype(np.float32) * 3 for _ in range(2))
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BNSD", actualSeqLengthsKvOptional=(64, 33), **_separate(ks, ko, vs, vo, 3, 3),
    )  # fmt: skip
    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q[:, :, 0], list(k8), list(v8), scale=0.125, lengths=[64, 33], antiquant=(ks, ko, vs, vo),
        per_token=(True, True), small_dtype=np.dtype(dtype).name, magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out[:, :, 0], want, magnitude, dtype)


@DTYPES
def test_per_tensor_head(dtype):
    """Modes 2: one scale and offset per KV head [N2] in the query's dtype, for all D channels of
    that head (CopyAntiquantScale duplicates it)."""
    b, n, n2, s, d = 2, 4, 2, 50, 32
    q = RNG.standard_normal((b, 1, n, d)).astype(dtype)
    k8, v8 = _int8((b, s, n2, d)), _int8((b, s, n2, d))
    ks, vs = ((RNG.random(n2) * 0.02 + 0.005).astype(dtype) for _ in range(2))
    ko, vo = (RNG.integers(-3, 4, n2).astype(dtype) for _ in range(2))
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BSND", **_separate(ks, ko, vs, vo, 2, 2),
    )  # fmt: skip
    channels = [np.repeat(x.astype(np.float64)[:, None], d, axis=1) for x in (ks, ko, vs, vo)]
    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q[:, 0], list(k8.transpose(0, 2, 1, 3)), list(v8.transpose(0, 2, 1, 3)), scale=0.125, lengths=[s] * b,
        antiquant=channels, small_dtype=np.dtype(dtype).name, magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out[:, 0], want, magnitude, dtype)


@DTYPES
@pytest.mark.parametrize("mode", [4, 5], ids=["token", "token_head"])
def test_per_token_in_the_cache_blocks(dtype, mode):
    """Modes 4 / 5: FLOAT parameters [blocks, blockSize] / [blocks, N2, blockSize] beside a paged
    cache, position p of batch b (and KV head n2) at block blockTable[b, p / blockSize], slot p %
    blockSize (the split kernel's CopyAntiquantParamsParamsPagedAttentionImpl)."""
    b, n, n2, d, bs, blocks = 2, 4, 2, 32, 32, 6
    q = RNG.standard_normal((b, 1, n * d)).astype(dtype)
    kc, vc = _int8((blocks, bs, n2 * d)), _int8((blocks, bs, n2 * d))
    table = np.array([[4, 1, 0], [2, 5, 3]], np.int32)
    shape = (blocks, bs) if mode == 4 else (blocks, n2, bs)
    ks, vs = ((RNG.random(shape) * 0.02 + 0.005).astype(np.float32) for _ in range(2))
    ko, vo = (RNG.standard_normal(shape).astype(np.float32) * 3 for _ in range(2))
    lengths = (90, 37)
    out, _ = run_fia(
        version=2, query=q, key=[kc], value=[vc], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BSH", blockTableOptional=table, blockSize=bs,
        actualSeqLengthsKvOptional=lengths, **_separate(ks, ko, vs, vo, mode, mode),
    )  # fmt: skip
    rows = [[ifa_golden.dense_rows(c, table[i], bs, lengths[i], n2, False) for i in range(b)] for c in (kc, vc)]

    def by_position(x):  # [B, Sp] (mode 4) or [B, N2, Sp] (mode 5): batch b's blocks one after another
        per_batch = [np.concatenate([x[block] for block in table[i]], axis=-1) for i in range(b)]
        return np.stack(per_batch)

    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q.reshape(b, n, d), rows[0], rows[1], scale=0.125, lengths=list(lengths),
        antiquant=[by_position(x) for x in (ks, ko, vs, vo)], per_token=(True, True),
        small_dtype=np.dtype(dtype).name, magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out.reshape(b, n, d), want, magnitude, dtype)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
def test_bf16_channel_token_pair_has_no_kernel(chip):
    """op_host/fused_infer_attention_score_def.cpp (ascend910b/910_93 configs): no kernel key takes a
    BF16 key scale beside a FLOAT value scale, so the generated entry point returns 561003 before the
    tiling."""
    q = np.zeros((1, 1, 1, 32), BF16)
    k8 = np.zeros((1, 1, 8, 32), np.int8)
    ks, vs = np.ones((1, 1, 1, 32), BF16), np.ones((1, 8), np.float32)
    with pytest.raises(ae.errors.KernelNotFound) as failure:
        run_fia(
            version=2, query=q, key=[k8], value=[k8], out_shape=q.shape, numHeads=1, inputLayout="BNSD",
            **_separate(ks, None, vs, None, 0, 1),
        )  # fmt: skip
    assert failure.value.status == 561003


def test_per_token_over_a_paged_cache():
    """A paged BSH cache [blocks, 32, H]: the parameters are indexed by the logical token (the
    tiling's S is the table's capacity, 3 x 32, so S' >= 96)."""
    b, n, n2, d, bs = 2, 4, 2, 32, 32
    q = RNG.standard_normal((b, 1, n * d)).astype(np.float16)
    kc, vc = _int8((6, bs, n2 * d)), _int8((6, bs, n2 * d))
    table = np.array([[4, 1, 0], [2, 5, 3]], np.int32)
    ks, ko, key_view = _token_params(b, 96, 3, True)
    vs, vo, value_view = _token_params(b, 96, 3, True)
    lengths = (77, 40)
    out, _ = run_fia(
        version=2, query=q, key=[kc], value=[vc], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BSH", blockTableOptional=table, blockSize=bs,
        actualSeqLengthsKvOptional=lengths, **_separate(ks, ko, vs, vo, 1, 1),
    )  # fmt: skip
    rows = [[ifa_golden.dense_rows(c, table[i], bs, lengths[i], n2, False) for i in range(b)] for c in (kc, vc)]
    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q.reshape(b, n, d), rows[0], rows[1], scale=0.125, lengths=list(lengths),
        antiquant=(*key_view, *value_view), per_token=(True, True), magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out.reshape(b, n, d), want, magnitude, np.float16)


def test_per_token_with_kv_left_padding():
    """kvPaddingSize: batch b's keys are the positions [S - pad - len_b, S - pad), and so are the
    parameters read (kvPaddingBeginOffset)."""
    b, n, n2, s, d, pad = 2, 4, 2, 60, 32, 5
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    ks, ko, key_view = _token_params(b, s, 3, True)
    vs, vo, value_view = _token_params(b, s, 3, True)
    lengths = (30, 52)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BNSD", actualSeqLengthsKvOptional=lengths,
        kvPaddingSizeOptional=np.array([pad], np.int64), **_separate(ks, ko, vs, vo, 1, 1),
    )  # fmt: skip
    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q[:, :, 0], list(k8), list(v8), scale=0.125, lengths=list(lengths), starts=[s - pad - x for x in lengths],
        antiquant=(*key_view, *value_view), per_token=(True, True), magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out[:, :, 0], want, magnitude, np.float16)


def test_per_token_across_the_kernel_chunks():
    """3000 keys: the parameters of every chunk of the walk are those of its positions."""
    b, n, n2, s, d = 1, 2, 1, 3000, 32
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    ks, ko, key_view = _token_params(b, s, 2, True)
    vs, vo, value_view = _token_params(b, s, 2, True)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=0.125, inputLayout="BNSD", **_separate(ks, ko, vs, vo, 1, 1),
    )  # fmt: skip
    magnitude = np.zeros((b, n, d))
    want = ifa_golden.attention(
        q[:, :, 0], list(k8), list(v8), scale=0.125, lengths=[s], antiquant=(*key_view, *value_view),
        per_token=(True, True), magnitude=magnitude,
    )  # fmt: skip
    _assert_meets(out[:, :, 0], want, magnitude, np.float16)


# -- the roundings, bit for bit ----------------------------------------------------------------------
@DTYPES
def test_P_rounds_ties_away_on_the_per_token_path(dtype):
    """Batch b scores key 0 at 0 and key 1 at y_b through the key's per-token scale (q = e_0, key 1
    = e_0, scale y_b: S = (1 + 0) * y_b exactly in fp32), where fp32 exp(y_b) is a midpoint of the
    dtype; the value's per-token scale 1 over V = (0, 1): O = CAST_ROUND(e) / (1 + e)."""
    y, e = ties.exp_ties(np.random.default_rng(13), dtype, 16)
    b, d = len(y), 32
    q = np.zeros((b, 1, 1, d), dtype)
    q[..., 0] = 1
    k8 = np.zeros((b, 1, 2, d), np.int8)
    k8[:, :, 1, 0] = 1
    v8 = np.zeros((b, 1, 2, d), np.int8)
    v8[:, :, 1] = 1
    ks = np.stack([np.ones(b), y], axis=1).astype(np.float32)
    vs = np.ones((b, 2), np.float32)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=1, scaleValue=1.0,
        inputLayout="BNSD", **_separate(ks, None, vs, None, 1, 1),
    )  # fmt: skip
    out_mode = "away" if np.dtype(dtype) == np.float16 else "even"

    def golden_out(modes):
        return {"out": ties.two_key_output(e, dtype, modes["P"], out_mode)}

    want = ties.assert_sensitive(golden_out, {"P": "away"}, "attentionOut")
    ties.assert_bits(out[:, 0, 0], np.repeat(want["out"][:, None], d, axis=1), "attentionOut")


def _output_tie(dtype):
    """(1 + half an ulp of the output dtype, what its final cast gives: fp16 CAST_ROUND 1 + ulp, bf16
    CAST_RINT the even 1); the assertion shows the two roundings differ there."""
    ulp = 2.0**-10 if np.dtype(dtype) == np.float16 else 2.0**-7
    tie = 1 + ulp / 2
    assert ties.round_to(np.float64(tie), dtype, "away") != ties.round_to(np.float64(tie), dtype, "even")
    return np.float32(tie), 1 + ulp if np.dtype(dtype) == np.float16 else 1.0


def _one_key(dtype, v, named):
    """attentionOut of one query head over one key scoring 0 (P = 1): O = the dequantised value."""
    q = np.zeros((1, 1, 1, 32), dtype)
    k8 = np.zeros((1, 1, 1, 32), np.int8)
    v8 = np.full((1, 1, 1, 32), v, np.int8)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=1, scaleValue=1.0,
        inputLayout="BNSD", **named,
    )  # fmt: skip
    return out[0, 0, 0]


@pytest.mark.parametrize("carrier", ["scale", "offset"])
@pytest.mark.parametrize(
    "dtype,modes",
    [(np.float16, (1, 1)), (BF16, (1, 1)), (np.float16, (0, 1)), (np.float16, (3, 3)), (BF16, (3, 3))],
    ids=["fp16_token_token", "bf16_token_token", "fp16_channel_token", "fp16_token_head", "bf16_token_head"],
)
def test_output_tie_through_the_value_parameters(dtype, carrier, modes):
    """One key, P = 1: O = (v + offset) * scale of the value's per-token parameters, one of them
    carrying a midpoint of the output dtype."""
    tie, want = _output_tie(dtype)
    shape = (1, 1, 1) if modes == (3, 3) else (1, 1)
    vs = np.full(shape, tie if carrier == "scale" else 1, np.float32)
    vo = np.full(shape, 0 if carrier == "scale" else tie, np.float32)
    ks, ko = np.ones(shape, np.float32), np.zeros(shape, np.float32)
    if modes[0] == 0:
        ks, ko = np.ones((1, 1, 1, 32), dtype), np.zeros((1, 1, 1, 32), dtype)
    out = _one_key(dtype, 1 if carrier == "scale" else 0, _separate(ks, ko, vs, vo, *modes))
    ties.assert_bits(out, np.full(32, want), "attentionOut")


@DTYPES
def test_output_tie_per_tensor_head(dtype):
    """Modes 2 (parameters in the query's dtype, which holds no midpoint of itself): (127 + 1922) *
    2**-11 (fp16) and (1 + 256) * 2**-8 (bf16) are the midpoints, reached in fp32."""
    tie, want = _output_tie(dtype)
    v, offset, scale = (127, 1922, 2.0**-11) if np.dtype(dtype) == np.float16 else (1, 256, 2.0**-8)
    assert (v + offset) * scale == tie
    ks, ko = np.ones(1, dtype), np.zeros(1, dtype)
    vs, vo = np.full(1, scale, dtype), np.full(1, offset, dtype)
    out = _one_key(dtype, v, _separate(ks, ko, vs, vo, 2, 2))
    ties.assert_bits(out, np.full(32, want), "attentionOut")
