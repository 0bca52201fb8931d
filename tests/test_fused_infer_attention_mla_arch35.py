"""FusedInferAttentionScore's rope calls on Ascend910_95 (PromptFlashAttentionTilingV2 CheckRope):
IFA MLA (D 512 + rope 64, one KV head, S 1-16) dense, paged and TND, and a rope call with S = 1,
against the float64 reference of golden.fused_infer_mla_arch35 under CANN's precision standard;
the roundings at ties; the IFA MLA rules' codes."""

import numpy as np
import pytest

import precision
import ties
from golden import fused_infer_attention_score as fia_golden
from golden import fused_infer_mla_arch35 as golden
from test_fused_infer_attention_score import BF16, _lse_meets, _paged, run_fia

RNG = np.random.default_rng(20261128)
D, ROPE, CAUSAL = 512, 64, np.triu(np.ones((2048, 2048), bool), 1)
TO = {
    "BNSD": lambda x: x,
    "BSND": lambda x: x.transpose(0, 2, 1, 3),
    "BSH": lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1),
}


def _back(x, layout, n):
    if layout == "BNSD":
        return x
    b, s = x.shape[:2]
    return x.reshape(b, s, n, -1).transpose(0, 2, 1, 3)


def _data(b, n, s1, s2, dtype, d=D):
    q, qr = (RNG.standard_normal((b, n, s1, w)).astype(dtype) for w in (d, ROPE))
    k, kr, v = (RNG.standard_normal((b, 1, s2, w)).astype(dtype) for w in (d, ROPE, d))
    return q, qr, k, kr, v


def _check(out, lse, data, dtype, **kw):
    """attentionOut against the reference, softmaxLse against the FIA-V3 maths' (the second pass)."""
    q, qr, k, kr, v = data
    want = golden.attention(q, qr, k, kr, v, **kw)
    floor_kw = {x: kw[x] for x in ("scale", "sparse_mode", "act_kv") if x in kw}
    fia = fia_golden.attention(q, k, v, kv_block=512, has_mask=bool(kw.get("sparse_mode")), rope=(qr, kr), **floor_kw)
    message = precision.failure(out.astype(np.float64), want, np.dtype(dtype).name, floor=fia.floor)
    assert message is None, message
    if lse is not None:
        _lse_meets(lse, fia.lse)
    without_rope = fia_golden.attention(q, k, v, kv_block=512, has_mask=bool(kw.get("sparse_mode")), **floor_kw)
    assert precision.failure(out.astype(np.float64), without_rope.out, np.dtype(dtype).name) is not None


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("s1", [1, 4])
def test_ifa_mla_dense(chip, dtype, layout, s1, capfd):
    """IFA MLA (N 32, one KV head) over a dense cache, ragged key lengths; S = 1 without a mask,
    S = 4 (multi-token prediction) causal: sparse 3 with the compressed mask (BNSD: with a warning,
    its mask reading is not established). softmaxLse in [B, N, S] order in every layout: BSND runs as
    BSH (UpdateTilingKeyLayoutType), whose offset puts the merged (s, n) rows at (n, s)."""
    b, n, s2 = 2, 32, 300
    act_kv = [300, 77]
    data = _data(b, n, s1, s2, dtype)
    q, qr, k, kr, v = data
    causal = dict(attenMaskOptional=CAUSAL, sparseMode=3) if s1 > 1 else {}
    out, lse = run_fia(
        version=3,
        query=TO[layout](q),
        key=[TO[layout](k)],
        value=[TO[layout](v)],
        queryRopeOptional=TO[layout](qr),
        keyRopeOptional=TO[layout](kr),
        out_shape=TO[layout](q).shape,
        lse_shape=(b, n, s1, 1),
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=576**-0.5,
        inputLayout=layout,
        **causal,
    )
    assert ("inferred.ifa_mla_bnsd_mask" in capfd.readouterr().err) == (layout == "BNSD" and s1 > 1)
    kw = dict(scale=576**-0.5, act_kv=act_kv, sparse_mode=3 if s1 > 1 else 0)
    _check(_back(out, layout, n), lse[..., 0], data, dtype, **kw)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
@pytest.mark.parametrize("d", [D, 128], ids=["ifa_mla", "pfa_rope"])
def test_rope_over_a_key_value_list(chip, layout, d):
    """A key/value tensor list beside a rope: CheckTensorList wants one keyRope of the list's batches and
    every key tensor of its S, so the list is the dense cache cut per batch; the kernels read each
    batch's tensor and the keyRope at that batch (flash_attention_score_block_cube.h,
    flash_attention_kvsame_bn2gs1s2.h GetKeyRopeOffset). The output is the dense call's, bit for bit,
    and meets the reference."""
    b, n, s1, s2 = 2, 32, 2, 96
    act_kv = [96, 41]
    data = _data(b, n, s1, s2, np.float16, d)
    q, qr, k, kr, v = data
    kv_heads = 1
    if d == 128:  # PFARope keeps the group limit of 64
        n = 4
        q, qr = q[:, :n], qr[:, :n]
        data = (q, qr, k, kr, v)
    named = dict(
        version=3, query=TO[layout](q), queryRopeOptional=TO[layout](qr), keyRopeOptional=TO[layout](kr),
        out_shape=TO[layout](q).shape, actualSeqLengthsKvOptional=tuple(act_kv), numHeads=n,
        numKeyValueHeads=kv_heads, scaleValue=(d + ROPE) ** -0.5, inputLayout=layout,
    )  # fmt: skip
    listed, _ = run_fia(key=[TO[layout](k[i : i + 1]) for i in range(b)],
                        value=[TO[layout](v[i : i + 1]) for i in range(b)], **named)  # fmt: skip
    dense, _ = run_fia(key=[TO[layout](k)], value=[TO[layout](v)], **named)
    assert np.array_equal(listed.view(np.uint16), dense.view(np.uint16))
    _check(_back(listed, layout, n), None, data, np.float16, scale=(d + ROPE) ** -0.5, act_kv=act_kv)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout,cache_layout", [("BNSD", "BnNBsD"), ("BSH", "BnBsH"), ("BSND", "BnBsH")])
@pytest.mark.parametrize("s1", [1, 2])
def test_ifa_mla_paged(chip, dtype, layout, cache_layout, s1):
    """IFA MLA decode over a paged cache (key, value and keyRope in one block table) with a block
    size of 64, which only the IFA rule of CheckPATypeAndShape takes (the PFA one wants 128s)."""
    b, n, s2, bs = 2, 64, 400, 64
    act_kv = [400, 129]
    data = _data(b, n, s1, s2, dtype)
    q, qr, k, kr, v = data
    caches = [_paged(x, bs, cache_layout, np.random.default_rng(5)) for x in (k, v, kr)]
    causal = dict(attenMaskOptional=CAUSAL, sparseMode=3) if s1 > 1 else {}
    out, lse = run_fia(
        version=3,
        query=TO[layout](q),
        key=[caches[0][0]],
        value=[caches[1][0]],
        queryRopeOptional=TO[layout](qr),
        keyRopeOptional=caches[2][0],
        blockTableOptional=caches[0][1],
        blockSize=bs,
        out_shape=TO[layout](q).shape,
        lse_shape=(b, n, s1, 1),
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=576**-0.5,
        inputLayout=layout,
        **causal,
    )
    kw = dict(scale=576**-0.5, act_kv=act_kv, sparse_mode=3 if s1 > 1 else 0)
    _check(_back(out, layout, n), lse[..., 0], data, dtype, **kw)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_ifa_mla_tnd(chip, dtype):
    """IFA MLA in TND: batches of 1 and 3 query rows (causal) against their own keys."""
    n, q_lens, kv_lens = 32, [1, 3], [150, 260]
    tq, tk = sum(q_lens), sum(kv_lens)
    q, qr = (RNG.standard_normal((tq, n, w)).astype(dtype) for w in (D, ROPE))
    k, kr, v = (RNG.standard_normal((tk, 1, w)).astype(dtype) for w in (D, ROPE, D))
    q_ends, kv_ends = tuple(np.cumsum(q_lens).tolist()), tuple(np.cumsum(kv_lens).tolist())
    out, lse = run_fia(
        version=3,
        query=q,
        key=[k],
        value=[v],
        queryRopeOptional=qr,
        keyRopeOptional=kr,
        out_shape=q.shape,
        lse_shape=(tq, n, 1),
        attenMaskOptional=CAUSAL,
        actualSeqLengthsOptional=q_ends,
        actualSeqLengthsKvOptional=kv_ends,
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=576**-0.5,
        inputLayout="TND",
        sparseMode=3,
    )
    for (q0, q1), (k0, k1) in zip(zip((0,) + q_ends, q_ends), zip((0,) + kv_ends, kv_ends)):
        bnsd = lambda x, r0, r1: x[r0:r1].transpose(1, 0, 2)[None]  # noqa: E731
        data = [bnsd(x, q0, q1) for x in (q, qr)] + [bnsd(x, k0, k1) for x in (k, kr, v)]
        _check(bnsd(out, q0, q1), lse[q0:q1, :, 0].T[None], data, dtype, scale=576**-0.5, sparse_mode=3)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
def test_pfa_rope_with_one_query_row(chip, dtype, paged):
    """D 128 + rope 64 with S = 1: CheckRope switches the tiling's IFA mode off, so the row is an
    ordinary PFARope row (the PFA block-size rule, 128s, holds for its cache)."""
    b, n, n2, s2, bs = 2, 8, 2, 300, 128
    act_kv = [300, 150]
    q, qr = (RNG.standard_normal((b, n, 1, w)).astype(dtype) for w in (128, ROPE))
    k, kr, v = (RNG.standard_normal((b, n2, s2, w)).astype(dtype) for w in (128, ROPE, 128))
    keys = dict(key=[k], value=[v], keyRopeOptional=kr)
    if paged:
        caches = [_paged(x, bs, "BnNBsD", np.random.default_rng(5)) for x in (k, v, kr)]
        keys = dict(key=[caches[0][0]], value=[caches[1][0]], keyRopeOptional=caches[2][0])
        keys.update(blockTableOptional=caches[0][1], blockSize=bs)
    out, lse = run_fia(
        version=3,
        query=q,
        queryRopeOptional=qr,
        out_shape=q.shape,
        lse_shape=(b, n, 1, 1),
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=192**-0.5,
        inputLayout="BNSD",
        **keys,
    )
    kw = dict(scale=192**-0.5, act_kv=act_kv, kv_block=1024)
    _check(out, lse[..., 0], (q, qr, k, kr, v), dtype, **kw)


def _tie_case(dtype, e_rows=32):
    """Two keys; the rope product alone scores key 1 (Q·Kᵀ is 0): row h's P_1 is exp(y_h), a
    midpoint of ``dtype``, and V = (0, 1) on every channel, so O = P_1 / (1 + e)."""
    y, e = ties.exp_ties(np.random.default_rng(31), dtype, e_rows)
    terms, key = ties.dot_terms(y, dtype, 16)
    q = np.zeros((1, e_rows, 1, D), dtype)
    qr = np.zeros((1, e_rows, 1, ROPE), dtype)
    qr[0, :, 0, :16] = terms
    k, v = np.zeros((1, 1, 2, D), dtype), np.zeros((1, 1, 2, D), dtype)
    kr = np.zeros((1, 1, 2, ROPE), dtype)
    kr[0, 0, 1, :16] = key
    v[0, 0, 1] = 1
    return (q, qr, k, kr, v), e


def _run_tie(q, qr, k, kr, v):
    out, _ = run_fia(
        version=3, query=q, key=[k], value=[v], queryRopeOptional=qr, keyRopeOptional=kr, out_shape=q.shape,
        numHeads=q.shape[1], numKeyValueHeads=1, scaleValue=1.0, inputLayout="BNSD",
    )  # fmt: skip
    return out[0, :, 0]


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_ifa_mla_rounds_P_to_nearest_even(chip, dtype):
    """The arch35 softmax narrows P to the input dtype nearest even. The scores come from the rope
    product only, so the case also fails if the rope does not join Q·Kᵀ."""
    data, e = _tie_case(dtype)
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.two_key_output(e, dtype, modes["P"], "away")}, {"P": "even"}, "IFA MLA P"
    )
    ties.assert_bits(_run_tie(*data), np.repeat(want["out"][:, None], D, axis=1), "out")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_ifa_mla_output_rounds_ties_away(chip, dtype):
    """The output cast is CAST_ROUND (flash_attention_kvsame_bn2gs1s2.h). Q = 0: P = 1 on both
    keys, so O = (v0 + v1) / 2, a midpoint for v0 and v1 one step apart."""
    rng = np.random.default_rng(32)
    v0 = ties.round_to(ties.one_more_bit(rng, D, dtype), dtype, "even")
    v1 = v0 + np.sign(v0) * np.spacing(np.abs(v0).astype(dtype)).astype(np.float64)
    v = np.stack([v0, v1]).astype(dtype)[None, None]
    q, qr = np.zeros((1, 32, 1, D), dtype), np.zeros((1, 32, 1, ROPE), dtype)
    k, kr = np.zeros((1, 1, 2, D), dtype), np.zeros((1, 1, 2, ROPE), dtype)
    want = ties.assert_sensitive(
        lambda modes: {"out": ties.to_output((v0 + v1) / 2, dtype, modes["out"])}, {"out": "away"}, "out", ("out",)
    )
    ties.assert_bits(_run_tie(q, qr, k, kr, v), np.tile(want["out"], (32, 1)), "out")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_ifa_mla_walks_keys_in_blocks_of_128(chip, dtype):
    """The config's S2 base of 128: key 0 scores 0 in the first block, key 128 scores t_h in the
    second (keys 1-127 score -100: P 0), V = (1, 0, ...). Per 128-key block P_0 = 1 is rescaled by
    the fp32 exp(-t_h); one longer block would narrow exp(-t_h) to the input dtype as P_0."""
    n, keys = 32, 129
    t = 1 + np.arange(n) / 16
    q, qr = np.zeros((1, n, 1, D), dtype), np.zeros((1, n, 1, ROPE), dtype)
    qr[0, :, 0, 0], qr[0, :, 0, 1] = t, 1
    k, v = np.zeros((1, 1, keys, D), dtype), np.zeros((1, 1, keys, D), dtype)
    kr = np.zeros((1, 1, keys, ROPE), dtype)
    kr[0, 0, 1:128, 1], kr[0, 0, 128, 0], v[0, 0, 0] = -100, 1, 1
    out = _run_tie(q, qr, k, kr, v)
    want, longer = (
        ties.round_to(golden.attention(q, qr, k, kr, v, scale=1.0, kv_block=block)[0, :, 0], dtype, "away")
        for block in (golden.IFA_MLA_KV_BLOCK, 1024)
    )
    assert not np.array_equal(want, longer), "the case does not tell the block sizes apart"
    ties.assert_bits(out, want, "out")
