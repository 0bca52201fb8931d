"""FusedInferAttentionScoreV4's MLA full quant on Ascend910_95 (FP8 E4M3 query, key and value with BF16
queryRope and keyRope, queryQuantMode 3, key/value modes 0; PromptFlashAttentionTilingV2
`enableIFAMLAFullQuant`, the DeepSeek FP8 decode path): the kernels against the float64 golden (CANN's
precision standard) dense and paged, a tie test per rounded quantity (P's narrowing to FP8 E4M3, the
output's CAST_ROUND to BF16), and the scale reads the shape rule lets through."""

import ml_dtypes
import numpy as np
import pytest

import precision
import ties
import aclnn_emu as ae
from aclnn_emu import DataType
from golden import mla_full_quant as golden
from test_fused_infer_attention_score import _lse_meets, _paged, run_fia

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
BF16 = np.dtype(ml_dtypes.bfloat16)
D, ROPE = 512, 64
CAUSAL = np.triu(np.ones((2048, 2048), bool), 1)
TO = {
    "BNSD": lambda x: x,
    "BSND": lambda x: x.transpose(0, 2, 1, 3),
    "BSH": lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1),
}
SCALE_TO = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1), "BSH": lambda x: x.transpose(0, 2, 1)}


def _back(x, layout, n):
    if layout == "BNSD":
        return x
    b, s = x.shape[:2]
    return x.reshape(b, s, n, -1).transpose(0, 2, 1, 3)


def _data(rng, b, n, s1, s2):
    """(device arrays, float64 values): FP8 q, k, v; BF16 ropes."""
    q, k, v = (
        (rng.standard_normal(shape) * 4).astype(E4M3)
        for shape in ((b, n, s1, D), (b, 1, s2, D), (b, 1, s2, D))
    )  # fmt: skip
    qr, kr = ((rng.standard_normal(shape) * 3).astype(BF16) for shape in ((b, n, s1, ROPE), (b, 1, s2, ROPE)))
    return (q, qr, k, kr, v), tuple(x.astype(np.float64) for x in (q, qr, k, kr, v))


def _run(dev, dq, dk, dv, *, layout, n, scale, cache=None, **named):
    """The V4 call in ``layout`` (``dev`` as [B, N, S, D]); ``cache``: (key, value, keyRope caches,
    blockTable, blockSize). Returns attentionOut as [B, N, S1, Dv]."""
    q, qr, k, kr, v = dev
    keys = dict(key=[TO[layout](k)], value=[TO[layout](v)], keyRopeOptional=TO[layout](kr))
    if cache is not None:
        kc, vc, krc, table, bs = cache
        keys = dict(key=[kc], value=[vc], keyRopeOptional=krc, blockTableOptional=table, blockSize=bs)
    out, _ = run_fia(
        query=TO[layout](q),
        queryRopeOptional=TO[layout](qr),
        out_shape=TO[layout](q).shape,
        out_dtype=DataType.ACL_BF16,
        dequantScaleQueryOptional=np.ascontiguousarray(SCALE_TO[layout](dq)).astype(np.float32),
        keyAntiquantScaleOptional=np.array([dk], np.float32),
        valueAntiquantScaleOptional=np.array([dv], np.float32),
        queryQuantMode=3,
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=scale,
        inputLayout=layout,
        **keys,
        **named,
    )
    return _back(out, layout, n)


def _meets(out, want):
    message = precision.failure(out.astype(np.float64), want.out, "bfloat16", floor=want.floor)
    assert message is None, message


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("s1", [1, 4])
def test_dense_meets_the_standard(chip, layout, s1):
    """N 32, one KV head, ragged key lengths over three key blocks of 128 (the second batch's last
    partial); S = 4 causal (sparse 3); scores of a few units. Per-row query scales, so a scale read in
    another row order fails."""
    b, n, s2 = 2, 32, 300
    act_kv = [300, 141]
    rng = np.random.default_rng(20261129)
    dev, (qf, qrf, kf, krf, vf) = _data(rng, b, n, s1, s2)
    dq = rng.uniform(0.2, 0.6, (b, n, s1)).astype(np.float32)
    dk, dv = np.float32(0.3), np.float32(0.02)
    causal = dict(attenMaskOptional=CAUSAL, sparseMode=3) if s1 > 1 else {}
    out = _run(dev, dq, dk, dv, layout=layout, n=n, scale=576**-0.5, actualSeqLengthsKvOptional=tuple(act_kv), **causal)
    want = golden.attention(qf, qrf, kf, krf, vf, dq, dk, dv, scale=576**-0.5, act_kv=act_kv, causal=s1 > 1)
    _meets(out, want)
    flipped = golden.attention(qf, qrf, kf, krf, vf, dq[:, ::-1], dk, dv, scale=576**-0.5, act_kv=act_kv, causal=s1 > 1)
    assert precision.failure(out.astype(np.float64), flipped.out, "bfloat16", floor=flipped.floor) is not None


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout,cache_layout", [("BNSD", "BnNBsD"), ("BSH", "BnBsH"), ("BSND", "NZ")])
@pytest.mark.parametrize("s1", [1, 2])
def test_paged_meets_the_standard(chip, layout, cache_layout, s1):
    """The decode loop's call: key, value and keyRope in one block table of 32-token blocks (the
    IFA rule: 32 bytes of FP8), NZ with the key's D0 32 and keyRope's 16 (BF16, CheckPACacheShape)."""
    b, n, s2, bs = 2, 64, 400, 32
    act_kv = [400, 97]
    rng = np.random.default_rng(11)
    dev, (qf, qrf, kf, krf, vf) = _data(rng, b, n, s1, s2)
    q, qr, k, kr, v = dev
    kc, table = _paged(k, bs, cache_layout, np.random.default_rng(5))
    vc, _ = _paged(v, bs, cache_layout, np.random.default_rng(5))
    krc, _ = _paged(kr, bs, cache_layout, np.random.default_rng(5))
    dq = rng.uniform(0.2, 0.6, (b, n, s1)).astype(np.float32)
    causal = dict(attenMaskOptional=CAUSAL, sparseMode=3) if s1 > 1 else {}
    out = _run(
        dev, dq, 0.3, 0.02, layout=layout, n=n, scale=576**-0.5, cache=(kc, vc, krc, table, bs),
        actualSeqLengthsKvOptional=tuple(act_kv), **causal,
    )  # fmt: skip
    want = golden.attention(qf, qrf, kf, krf, vf, dq, 0.3, 0.02, scale=576**-0.5, act_kv=act_kv, causal=s1 > 1)
    _meets(out, want)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_tnd_meets_the_standard(chip):
    """TND (dequantScaleQuery [T, N]): batches of 1 and 3 query rows, causal, against their own keys
    (130 and 260: each batch's key blocks start at its own first key)."""
    n, q_lens, kv_lens = 32, [1, 3], [130, 260]
    rng = np.random.default_rng(13)
    tq, tk = sum(q_lens), sum(kv_lens)
    (q, qr, _, _, _), _ = _data(rng, 1, n, tq, 1)
    (_, _, k, kr, v), _ = _data(rng, 1, 1, 1, tk)
    dq = rng.uniform(0.2, 0.6, (1, n, tq)).astype(np.float32)
    packed = [x[0].transpose(1, 0, 2) for x in (q, qr, k, kr, v)]  # [T, N, D]
    out, _ = run_fia(
        query=packed[0], key=[packed[2]], value=[packed[4]], queryRopeOptional=packed[1], keyRopeOptional=packed[3],
        out_shape=packed[0].shape, out_dtype=DataType.ACL_BF16, dequantScaleQueryOptional=dq[0].T.copy(),
        keyAntiquantScaleOptional=np.array([0.3], np.float32), valueAntiquantScaleOptional=np.array([0.02], np.float32),
        queryQuantMode=3, numHeads=n, numKeyValueHeads=1, scaleValue=576**-0.5, inputLayout="TND",
        attenMaskOptional=CAUSAL, sparseMode=3, actualSeqLengthsOptional=tuple(np.cumsum(q_lens).tolist()),
        actualSeqLengthsKvOptional=tuple(np.cumsum(kv_lens).tolist()),
    )  # fmt: skip
    qs, ks = np.cumsum([0, *q_lens]), np.cumsum([0, *kv_lens])
    for bi in range(len(q_lens)):
        rows, keys = slice(qs[bi], qs[bi + 1]), slice(ks[bi], ks[bi + 1])
        want = golden.attention(
            *(x.astype(np.float64)[:, :, rows] for x in (q, qr)),
            *(x.astype(np.float64)[:, :, keys] for x in (k, kr, v)),
            dq[:, :, rows], 0.3, 0.02, scale=576**-0.5, causal=True,
        )  # fmt: skip
        _meets(out[rows].transpose(1, 0, 2)[None], want)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
def test_softmax_lse(chip, layout):
    """softmaxLse = log(l) + m of the kernel's own scaled scores, where IFA MLA's offsets put it: in
    [B, N, S, 1] order for BNSD, and for BSH and BSND (which runs as BSH: InOutLayoutType_BSH_BSH),
    whose row stride of S reorders the merged (s, n) rows (S 3, causal)."""
    b, n, s1, s2 = 2, 32, 3, 200
    act_kv = [200, 90]
    rng = np.random.default_rng(17)
    dev, (qf, qrf, kf, krf, _) = _data(rng, b, n, s1, s2)
    q, qr, k, kr, v = dev
    dq = rng.uniform(0.2, 0.6, (b, n, s1)).astype(np.float32)
    to = TO[layout]
    _, lse = run_fia(
        query=to(q), key=[to(k)], value=[to(v)], queryRopeOptional=to(qr), keyRopeOptional=to(kr),
        out_shape=to(q).shape, out_dtype=DataType.ACL_BF16, lse_shape=(b, n, s1, 1),
        dequantScaleQueryOptional=np.ascontiguousarray(SCALE_TO[layout](dq)),
        keyAntiquantScaleOptional=np.array([0.3], np.float32), valueAntiquantScaleOptional=np.array([0.02], np.float32),
        queryQuantMode=3, numHeads=n, numKeyValueHeads=1, scaleValue=576**-0.5, inputLayout=layout,
        attenMaskOptional=CAUSAL, sparseMode=3, actualSeqLengthsKvOptional=tuple(act_kv),
    )  # fmt: skip
    want = golden.lse(qf, qrf, kf, krf, dq, 0.3, scale=576**-0.5, act_kv=act_kv, causal=True)
    _lse_meets(lse[..., 0], want)
    assert not np.allclose(lse[..., 0], want.transpose(0, 2, 1).reshape(b, n, s1))  # the (s, n) order differs


def _p_midpoints():
    """(y, e): float32 y < 0 whose float32 exponential e (numpy's, the emulator's) makes fp32(e * 448)
    an FP8 E4M3 midpoint in [32, 448): the scores a few ulps around log(midpoint / 448) are searched."""
    wanted = np.unique(np.abs(ties.midpoints(np.random.default_rng(5), 4000, "float8_e4m3fn", 32, 448)))
    near = np.log(wanted / 448).astype(np.float32)
    y = np.concatenate([near + np.float32(step) * np.spacing(near) for step in range(-64, 65)])
    e = np.exp(y)
    hit = np.isin((e * np.float32(448)).astype(np.float64), wanted)
    y, first = np.unique(y[hit], return_index=True)
    assert len(y) >= 8, "too few exponentials land on midpoints"
    return y, e[hit][first].astype(np.float64)


def _two_keys(n, s1, y_rows, v_value):
    """A call whose row (head h, row i) has raw scores (0, -1) and the query scale -y: scores (0, y),
    values (0, v_value) (rope zero, scale 1, dk 1)."""
    q = np.zeros((1, n, s1, D))
    q[..., 0] = 1
    k = np.zeros((1, 1, 2, D))
    k[0, 0, 1, 0] = -1
    v = np.zeros((1, 1, 2, D))
    v[0, 0, 1, :] = v_value
    zeros = (np.zeros((1, n, s1, ROPE)).astype(BF16), np.zeros((1, 1, 2, ROPE)).astype(BF16))
    dev = (q.astype(E4M3), zeros[0], k.astype(E4M3), zeros[1], v.astype(E4M3))
    return dev, -y_rows.reshape(1, n, s1)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_p_narrowing_ties(chip):
    """P = FP8 E4M3 of fp32(E * 448), ties to even (CAST_RINT): scores (0, y) with fp32(e^y * 448) a
    midpoint, values (0, 1), so out = fp32(fp32(P_1 / (1 + e)) / 448), cast to BF16 ties away."""
    n, s1 = 32, 4
    y, e = _p_midpoints()
    pick = np.arange(n * s1) % len(y)
    dev, dq = _two_keys(n, s1, y[pick], 1)
    out = _run(dev, dq, 1.0, 1.0, layout="BNSD", n=n, scale=1.0)
    rows = e[pick].reshape(n, s1)

    def case(modes):
        p = ties.round_to((rows.astype(np.float32) * np.float32(448)).astype(np.float64), "float8_e4m3fn", modes["p"])
        o = (np.float32(p) / np.float32(1 + rows)) * np.float32(1 / 448)
        return {"out": ties.round_to(o.astype(np.float64), BF16, "away")}

    want = ties.assert_sensitive(case, {"p": "even"}, "P")
    ties.assert_bits(out[0, :, :, 0], want["out"], "P")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_output_cast_ties(chip):
    """attentionOut = CAST_ROUND (ties away) of the fp32 O: a zero query gives P = (448, 448) and
    l = 2, values (1, 1), so O = fp32(fp32(896 dv) / 2) * fp32(1 / 448) = dv for the BF16 midpoints
    dv picked here."""
    n = 32
    dv = ties.midpoints(np.random.default_rng(6), 400, BF16, 1, 64)
    o = (np.float32(896) * dv.astype(np.float32) / np.float32(2)) * np.float32(1 / 448)
    dv = np.unique(dv[o.astype(np.float64) == dv])
    assert len(dv) >= 8
    got = []
    for value in dv[:8]:
        dev, dq = _two_keys(n, 1, np.zeros(n), 1)
        q, qr, k, kr, v = dev
        dev = (np.zeros_like(q), qr, k, kr, np.ones_like(v))
        got.append(_run(dev, np.ones((1, n, 1), np.float32), 1.0, value, layout="BNSD", n=n, scale=1.0)[0, :, 0, :])
    rows = np.broadcast_to(dv[:8, None, None], (8, n, D))

    def case(modes):
        return {"out": ties.to_output(rows, BF16, modes["out"])}

    want = ties.assert_sensitive(case, {"out": "away"}, "attentionOut", finals=("out",))
    ties.assert_bits(np.stack(got), want["out"], "attentionOut")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_scales_read_whatever_their_shapes(chip):
    """The shape rule fails only when both of its halves do, and the kernel reads dequantScaleQuery
    in the query's row order and element 0 of the key and value scales: a [B, N, S, 1] query scale
    and [2] key/value scales give the output of the [B, N, S] and [1] ones, bit for bit."""
    b, n, s1, s2 = 1, 32, 2, 150
    rng = np.random.default_rng(9)
    dev, _ = _data(rng, b, n, s1, s2)
    dq = rng.uniform(0.01, 0.05, (b, n, s1)).astype(np.float32)
    plain = _run(dev, dq, 0.03, 0.02, layout="BNSD", n=n, scale=0.05)
    q, qr, k, kr, v = dev
    common = dict(
        query=q, key=[k], value=[v], queryRopeOptional=qr, keyRopeOptional=kr, out_shape=q.shape,
        out_dtype=DataType.ACL_BF16, valueAntiquantScaleOptional=np.array([0.02], np.float32), queryQuantMode=3,
        numHeads=n, numKeyValueHeads=1, scaleValue=0.05, inputLayout="BNSD",
    )  # fmt: skip
    four_d, _ = run_fia(
        dequantScaleQueryOptional=dq[..., None], keyAntiquantScaleOptional=np.array([0.03], np.float32), **common
    )
    two, _ = run_fia(
        dequantScaleQueryOptional=dq, keyAntiquantScaleOptional=np.array([0.03, 7.0], np.float32), **common
    )
    assert np.array_equal(ties.bits(plain), ties.bits(four_d))
    assert np.array_equal(ties.bits(plain), ties.bits(two))


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_kv_padding_meets_the_standard(chip, layout):
    """kvPaddingSize: each batch's keys are the actualSeqLengthsKv rows ending that many rows before
    S2 (infer_flash_attention_kvcache.h InitKVLeftPaddingSize, the key, value and keyRope offsets);
    the query rows stay (queryPaddingSize cannot reach IFA MLA, whose actualSeqLengths rule refuses
    the lengths it needs). Golden over the batch's own rows; the rows from key 0 fail."""
    b, n, s1, s2, pad = 2, 32, 1, 300, 7
    act_kv = [200, 141]
    rng = np.random.default_rng(23)
    dev, (qf, qrf, kf, krf, vf) = _data(rng, b, n, s1, s2)
    dq = rng.uniform(0.2, 0.6, (b, n, s1)).astype(np.float32)
    out = _run(
        dev, dq, 0.3, 0.02, layout=layout, n=n, scale=576**-0.5, actualSeqLengthsKvOptional=tuple(act_kv),
        kvPaddingSizeOptional=np.array([pad], np.int64),
    )  # fmt: skip
    firsts = [s2 - ak - pad for ak in act_kv]
    moved = [np.stack([np.roll(x[i], -f, axis=1) for i, f in enumerate(firsts)]) for x in (kf, krf, vf)]
    want = golden.attention(qf, qrf, *moved[:2], moved[2], dq, 0.3, 0.02, scale=576**-0.5, act_kv=act_kv)
    _meets(out, want)
    unpadded = golden.attention(qf, qrf, kf, krf, vf, dq, 0.3, 0.02, scale=576**-0.5, act_kv=act_kv)
    assert precision.failure(out.astype(np.float64), unpadded.out, "bfloat16", floor=unpadded.floor) is not None


def _refusal(dev, dq, **named):
    with pytest.raises(ae.errors.AclnnError) as failure:
        _run(dev, dq, 0.3, 0.02, layout="BNSD", n=dev[0].shape[1], scale=0.05, **named)
    return failure.value


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_pse_has_no_kernel_and_short_scales_are_refused(chip):
    """After the checks: a pseShift (FLOAT16, the dtype the kernel key pairs with an FP8 query) names a
    tiling key FIA's kernel list lacks (PSE_MODE_PSE_NONE_TYPE only), no_kernel; a dequantScaleQuery
    of fewer than B x N x S elements would be read past its end, refused. Both 561003."""
    b, n, s1, s2 = 2, 32, 1, 150
    dev, _ = _data(np.random.default_rng(3), b, n, s1, s2)
    dq = np.full((b, n, s1), 0.3, np.float32)
    pse = _refusal(dev, dq, pseShiftOptional=np.zeros((b, n, s1, s2), np.float16))
    assert pse.status == 561003 and "no kernel" in str(pse) and "pseShift" in str(pse)
    short = _refusal(dev, dq[:, : n // 2].copy())
    assert short.status == 561003 and "rather than read past" in str(short)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_pfa_rope_has_no_kernel(chip):
    """A head size of 128 passes CheckRope (PFARope) and CheckMLAFullQuant, but its tiling key's config
    (UpdateTilingKeyConfig: D 128 + rope) is not the one FIA's kernel list builds the full-quant
    kernel for (D 576 / Dv 512): no_kernel, 561003."""
    q, k = np.zeros((2, 8, 64, 128), E4M3), np.zeros((2, 2, 80, 128), E4M3)
    with pytest.raises(ae.errors.AclnnError) as failure:
        run_fia(
            query=q, key=[k], value=[k], out_shape=q.shape, out_dtype=DataType.ACL_BF16,
            queryRopeOptional=np.zeros((2, 8, 64, ROPE), BF16), keyRopeOptional=np.zeros((2, 2, 80, ROPE), BF16),
            dequantScaleQueryOptional=np.ones((2, 8, 64), np.float32),
            keyAntiquantScaleOptional=np.ones(1, np.float32), valueAntiquantScaleOptional=np.ones(1, np.float32),
            queryQuantMode=3, numHeads=8, numKeyValueHeads=2, scaleValue=0.1, inputLayout="BNSD",
        )  # fmt: skip
    assert failure.value.status == 561003 and "no kernel" in str(failure.value)
    assert "DAligned576_DVAligned512" in str(failure.value)
