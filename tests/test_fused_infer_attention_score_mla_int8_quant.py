"""FusedInferAttentionScoreV4's MLA full quant on Atlas A2/A3 (INT8 query, key and value with BF16
queryRope and keyRope, queryQuantMode 3, key/value modes 0, the IFA tiling's quantFlag_ with
ropeFlag_, the DeepSeek INT8 decode): the kernel against the float64 golden (CANN's precision
standard) over a paged cache, a tie test per rounded quantity (P's two casts, the fp16 P V, the
output's CAST_RINT to BF16), the INT8 product's bias reading, and what stays refused."""

import ml_dtypes
import numpy as np
import pytest

import precision
import ties
from aclnn_emu import DataType
from aclnn_emu.errors import AclnnError
from golden import mla_int8_quant as golden
from test_fused_infer_attention_score import _paged, run_fia

BF16 = np.dtype(ml_dtypes.bfloat16)
D, ROPE, BS = 512, 64, 128
A2_A3 = ["Ascend910B", "Ascend910_93"]
TO = {
    "BSND": lambda x: x.transpose(0, 2, 1, 3),
    "BSH": lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1),
}
CACHE = {"BSH": "BnBsH", "BSND": "NZ"}


def _run(q, qr, k, kr, v, dq, dk, dv, *, layout="BSND", scale=576**-0.5, act_kv=None, **named):
    """The V4 call: q, qr [B, N, 1, D]; k, kr, v [B, 1, S2, D] paged in blocks of 128 (NZ for BSND,
    [blocks, 128, D] for BSH); dq [B, N]. Returns attentionOut as [B, N, Dv]."""
    b, n = q.shape[:2]
    caches = [_paged(x, BS, CACHE[layout], np.random.default_rng(5)) for x in (k, v, kr)]
    act_kv = act_kv or [k.shape[2]] * b
    out, _ = run_fia(
        query=TO[layout](q), queryRopeOptional=TO[layout](qr), key=[caches[0][0]], value=[caches[1][0]],
        keyRopeOptional=caches[2][0], blockTableOptional=caches[0][1], blockSize=BS,
        actualSeqLengthsKvOptional=tuple(act_kv), out_shape=TO[layout](q).shape, out_dtype=DataType.ACL_BF16,
        dequantScaleQueryOptional=np.ascontiguousarray(dq[:, None, :], np.float32),
        keyAntiquantScaleOptional=np.array([dk], np.float32), valueAntiquantScaleOptional=np.array([dv], np.float32),
        queryQuantMode=3, numHeads=n, numKeyValueHeads=1, scaleValue=scale, inputLayout=layout, **named,
    )  # fmt: skip
    return out.reshape(b, n, -1)


def _data(rng, b, n, s2):
    q, k, v = (rng.integers(-127, 128, shape).astype(np.int8) for shape in ((b, n, 1, D), (b, 1, s2, D), (b, 1, s2, D)))
    qr, kr = ((rng.standard_normal(shape) * 300).astype(BF16) for shape in ((b, n, 1, ROPE), (b, 1, s2, ROPE)))
    return q, qr, k, kr, v


def _golden(q, qr, k, kr, v, dq, dk, dv, act_kv, scale=576**-0.5):
    f = [x.astype(np.float64) for x in (q, qr, k, kr, v)]
    return golden.attention(
        f[0][:, :, 0], f[1][:, :, 0], f[2][:, 0], f[3][:, 0], f[4][:, 0], dq.astype(np.float64), dk, dv,
        scale=scale, act_kv=act_kv, kv_block=512,
    )  # fmt: skip


@pytest.mark.parametrize("chip", A2_A3, indirect=True)
@pytest.mark.parametrize("layout", ["BSH", "BSND"])
def test_paged_meets_the_standard(chip, layout):
    """N 32 over ragged key lengths (three key blocks of 512, a partial one, none); per-head query
    scales, so scales read in another order fail; scores of a few units, a fair part of them the rope's."""
    b, n, s2 = 3, 32, 1100
    act_kv = [1100, 141, 0]
    rng = np.random.default_rng(20261129)
    data = _data(rng, b, n, s2)
    dq = rng.uniform(2e-4, 6e-4, (b, n)).astype(np.float32)
    out = _run(*data, dq, 0.5, 0.02, layout=layout, act_kv=act_kv).astype(np.float64)
    want = _golden(*data, dq, 0.5, 0.02, act_kv)
    message = precision.failure(out, want.out[:, :, 0], "bfloat16", floor=want.floor[:, :, 0])
    assert message is None, message
    assert not out[2].any()  # a batch without keys is 0
    flipped = _golden(*data, dq[:, ::-1], 0.5, 0.02, act_kv)
    assert precision.failure(out, flipped.out[:, :, 0], "bfloat16", floor=flipped.floor[:, :, 0]) is not None


def _channel_zero(n, s2):
    """A query of N heads with 1 in channel 0 and zero keys [1, 1, S2, D]: a key's raw score is its
    channel 0."""
    q = np.zeros((1, n, 1, D), np.int8)
    q[..., 0] = 1
    return q, np.zeros((1, 1, s2, D), np.int8)


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_later_block_p_scaled_to_its_own_max(chip):
    """P is scaled to 127 against its own key block's max (pMax): a first block holding one key of
    score 4 and a second block of scores 0 gives the second block's E about e^-4, whose P stays exact
    only through 127 / pMax (without it P would be rint(2.3))."""
    n, s2 = 32, 1024
    rng = np.random.default_rng(8)
    q, k = _channel_zero(n, s2)
    k[0, 0, 0, 0] = 100
    v = rng.integers(-127, 128, (1, 1, s2, D)).astype(np.int8)
    qr, kr = np.zeros((1, n, 1, ROPE), BF16), np.zeros((1, 1, s2, ROPE), BF16)
    dq = np.ones((1, n), np.float32)
    out = _run(q, qr, k, kr, v, dq, 0.04, 0.02, scale=1.0).astype(np.float64)
    want = _golden(q, qr, k, kr, v, dq, 0.04, 0.02, [s2], scale=1.0)
    message = precision.failure(out, want.out[:, :, 0], "bfloat16", floor=want.floor[:, :, 0])
    assert message is None, message


def _two_keys(n, v0, v1):
    """A zero-rope call of N heads over two keys whose raw INT8 products are (0, -1) for a query of
    ones in its channel 0; values v0, v1 [N?, D] int8 rows."""
    q, k = _channel_zero(n, 2)
    k[0, 0, 1, 0] = -1
    v = np.stack([v0, v1]).astype(np.int8)[None, None]
    zeros = np.zeros((1, n, 1, ROPE), BF16), np.zeros((1, 1, 2, ROPE), BF16)
    return q, zeros[0], k, zeros[1], v


def _p_ties(n):
    """fp32 scores y < 0 whose fp32 exponential e makes fp32(e * 127) a half integer (an INT8 tie)
    or an fp16 midpoint next to one (an fp16 tie whose rounding decides the INT8 one)."""
    half = np.arange(20, 127) + 0.5
    ulp = np.ldexp(1.0, np.frexp(half)[1] - 11)  # fp16's spacing there
    wanted = np.concatenate([half, half - ulp / 2, half + ulp / 2])
    near = np.log(wanted / 127).astype(np.float32)
    y = np.concatenate([near + np.float32(step) * np.spacing(near) for step in range(-64, 65)])
    hit = np.isin((np.exp(y) * np.float32(127)).astype(np.float64), wanted)
    y = np.unique(y[hit])
    assert len(y) >= n // 2, "too few exponentials land on ties"
    return y[np.arange(n) % len(y)]


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_p_casts_ties(chip):
    """P = INT8 of fp16 of fp32(E * 127), both ties to even (CAST_RINT): scores (0, y) per head with
    fp32(e^y * 127) at or rounding in fp16 to a half integer, values (0, 1), so
    out = fp32(fp32(P_1 / (1 + e)) * fp32(1 / 127)), cast to BF16 ties to even."""
    n = 64
    y = _p_ties(n)
    dev = _two_keys(n, np.zeros(D), np.ones(D))
    out = _run(*dev, -y.reshape(1, n), 1.0, 1.0, scale=1.0)
    e = np.exp(y.astype(np.float32))
    t = (e * np.float32(127)).astype(np.float64)

    def case(modes):
        p = ties.round_to(ties.round_to(t, "float16", modes["fp16"]), "int8", modes["int8"])
        o = (np.float32(p) / (np.float32(1) + e)) * np.float32(1 / 127.0)
        return {"out": ties.to_output(o.astype(np.float64), BF16, "even")[:, None].repeat(D, 1)}

    want = ties.assert_sensitive(case, {"fp16": "even", "int8": "even"}, "P")
    ties.assert_bits(out[0], want["out"], "P")


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_pv_fp16_ties(chip):
    """P V leaves the cube as fp16 of int32(P V) / 1024 (Fixpipe DEQF16): a zero query gives
    P = (127, 127) and l = 2; value sums s = v0 + v1 whose 127 s / 1024 are fp16 midpoints; dv 127
    makes fp32(dv * fp32(1 / 127)) 1, so out = fp32(acc * 1024) / 2, cast to BF16 ties to even."""
    n = 32
    sums = np.arange(17, 255)
    sums = sums[ties.is_tie(127 * sums / 1024, "float16")]
    s = sums[np.arange(D) % len(sums)]
    v0 = s // 2
    q, qr, k, kr, v = _two_keys(n, v0, s - v0)
    out = _run(np.zeros_like(q), qr, k, kr, v, np.ones((1, n)), 1.0, 127.0, scale=1.0)
    pv = (127 * s).astype(np.float64)

    def case(modes):
        acc = ties.round_to(pv / 1024, "float16", modes["pv"])
        o = (np.float32(acc * 1024) / np.float32(2)) * (np.float32(127) * np.float32(1 / 127.0))
        return {"out": np.broadcast_to(ties.to_output(o.astype(np.float64), BF16, "even"), (n, D))}

    want = ties.assert_sensitive(case, {"pv": "even"}, "P V")
    ties.assert_bits(out[0], want["out"], "P V")


def _alpha_ties():
    """(y, e): fp32 scores y < 0 whose fp32 exponential e is the fp16 midpoint m/32 + 2^-12 (m odd in
    17..31), whose even neighbour is m/32."""
    targets = np.arange(17, 32, 2) / 32 + 2.0**-12
    near = np.log(targets).astype(np.float32)
    y = np.concatenate([near + np.float32(step) * np.spacing(near) for step in range(-64, 65)])
    hit = np.isin(np.exp(y).astype(np.float64), targets)
    e, first = np.unique(np.exp(y[hit]), return_index=True)
    assert len(e) >= 4, "too few exponentials land on fp16 midpoints"
    return y[hit][first], e.astype(np.float64)


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_running_sum_fp16_ties(chip):
    """The fp16 running sum after the first key block: acc = fp16(O_1 + fp16(acc_0 * fp16(alpha))).
    512 keys of score y (P 127, acc_0 = 127 v0 / 2), then one of score 0 (alpha = e^y, P 127,
    O_1 = 127 v1 / 1024): e^y on fp16 midpoints next to m/32 ties alpha's cast, v0 = +-1 ties the
    product (127 m odd, 12 bits), v1 = 16 mod 32 ties the sum (other v1 keep the product's tie
    visible); dv 127, so out = fp32(acc * 1024) / l with l = fp32(512 e + 1), cast to BF16 ties to
    even."""
    n, s2 = 32, 513
    y, e = _alpha_ties()
    pick = np.arange(n) % len(y)
    q, k = _channel_zero(n, s2)
    k[0, 0, :512, 0] = -1
    d = np.arange(D)
    v0 = np.where(d // 2 % 2, 1, -1)
    v1 = np.where(d % 2, d // 4 % 41 - 20, np.array([16, -16, 48, -48, 80, -80, 112, -112])[d // 4 % 8])
    v = np.concatenate([np.broadcast_to(v0, (512, D)), v1[None]]).astype(np.int8)[None, None]
    qr, kr = np.zeros((1, n, 1, ROPE), BF16), np.zeros((1, 1, s2, ROPE), BF16)
    out = _run(q, qr, k, kr, v, -y[pick].reshape(1, n), 1.0, 127.0, scale=1.0)
    alpha = e[pick][:, None]
    acc0, o1 = 127 * v0[None] / 2, ties.round_to(127 * v1[None] / 1024, "float16", "even")  # O_1 out of DEQF16
    l_sum = (np.float32(512) * alpha.astype(np.float32)) + np.float32(1)

    def case(modes):
        alpha_h = ties.round_to(alpha, "float16", modes["alpha"])
        scaled = ties.round_to(acc0 * alpha_h, "float16", modes["product"])
        acc = ties.round_to(o1 + scaled, "float16", modes["sum"])
        o = np.float32(acc * 1024) / l_sum
        return {"out": ties.to_output(o.astype(np.float64), BF16, "even")}

    want = ties.assert_sensitive(case, {"alpha": "even", "product": "even", "sum": "even"}, "running sum")
    ties.assert_bits(out[0], want["out"], "running sum")


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_block_p_max_fp16_ties(chip):
    """A later key block's P V is scaled back by fp16(pMax) in fp16: one key of score 0 and 511 far
    below it (E 0), then one key of score y whose e^y is an fp16 midpoint next to m/32: pMax = e^y ties its
    cast, P 127 and v1 = +-1 tie the product 127 v1 / 1024 * pMax (127 m odd, 12 bits); the first
    block's values 0, so acc is that product; dv 127, out = fp32(acc * 1024) / (1 + e^y)."""
    n, s2 = 32, 513
    y, e = _alpha_ties()
    pick = np.arange(n) % len(y)
    q, k = _channel_zero(n, s2)
    k[0, 0, 512, 0] = -1
    v = np.zeros((1, 1, s2, D), np.int8)
    v[0, 0, 512] = np.where(np.arange(D) % 2, 1, -1)
    qr, kr = np.zeros((1, n, 1, ROPE), np.float32), np.zeros((1, 1, s2, ROPE), np.float32)
    qr[..., 0], kr[0, 0, 1:512, 0] = 1, -1e6  # through the rope: scores far below, E = 0
    qr, kr = qr.astype(BF16), kr.astype(BF16)
    out = _run(q, qr, k, kr, v, -y[pick].reshape(1, n), 1.0, 127.0, scale=1.0)
    p_max = e[pick][:, None]
    o1 = 127 * v[0, 0, 512][None].astype(np.float64) / 1024
    l_sum = np.float32(1) + p_max.astype(np.float32)

    def case(modes):
        p_max_h = ties.round_to(p_max, "float16", modes["p_max"])
        acc = ties.round_to(o1 * p_max_h, "float16", modes["product"])
        o = np.float32(acc * 1024) / l_sum
        return {"out": ties.to_output(o.astype(np.float64), BF16, "even")}

    want = ties.assert_sensitive(case, {"p_max": "even", "product": "even"}, "pMax")
    ties.assert_bits(out[0], want["out"], "pMax")


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_output_cast_ties(chip):
    """attentionOut = CAST_RINT (ties to even) of the fp32 O: a zero query and values of one give
    O = fp32(127 fp32(dv * fp32(1 / 127))) = dv for the BF16 midpoints dv picked here."""
    n = 32
    dv = np.abs(ties.midpoints(np.random.default_rng(6), 400, BF16, 1, 64))
    o = np.float32(127) * (dv.astype(np.float32) * np.float32(1 / 127.0))
    dv = np.unique(dv[o.astype(np.float64) == dv])[:8]
    assert len(dv) == 8
    got = []
    for value in dv:
        q, qr, k, kr, v = _two_keys(n, np.ones(D), np.ones(D))
        got.append(_run(np.zeros_like(q), qr, k, kr, v, np.ones((1, n)), 1.0, value, scale=1.0)[0])
    rows = np.broadcast_to(dv[:, None, None], (8, n, D))

    def case(modes):
        return {"out": ties.to_output(rows, BF16, modes["out"])}

    want = ties.assert_sensitive(case, {"out": "even"}, "attentionOut", finals=("out",))
    ties.assert_bits(np.stack(got), want["out"], "attentionOut")


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_product_bias_reading(chip):
    """The INT8 product accumulates on int32 bits 0x4B200000 read back as fp32 2^23 + 2^21: a sum of
    2^23 (query and key all -128) carries into the exponent and reads as 1.25 x 2^23, so with a scale
    of 2^-23 its score is 1.25, not 1, against a second key of score 0."""
    n = 32
    q = np.full((1, n, 1, D), -128, np.int8)
    k = np.zeros((1, 1, 2, D), np.int8)
    k[0, 0, 0] = -128
    v = np.zeros((1, 1, 2, D), np.int8)
    v[0, 0, 0] = 1
    zeros = np.zeros((1, n, 1, ROPE), BF16), np.zeros((1, 1, 2, ROPE), BF16)
    out = _run(q, zeros[0], k, zeros[1], v, np.full((1, n), 2.0**-23), 1.0, 1.0, scale=1.0)

    def expected(score):
        e1 = np.exp(np.float32(-score))  # the second key, below the first by the score
        return (np.float32(127) / (np.float32(1) + e1)) * np.float32(1 / 127.0)

    assert np.all(out.astype(np.float32) == np.float32(expected(1.25)).astype(BF16).astype(np.float32))
    assert not np.all(out.astype(np.float32) == np.float32(expected(1.0)).astype(BF16).astype(np.float32))


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_other_shapes_stay_refused(chip):
    """A query S other than 1 passes the tiling's checks but its kernel walk is not emulated (561003)."""
    rng = np.random.default_rng(3)
    q, qr, k, kr, v = _data(rng, 1, 32, 130)
    q2, qr2 = np.concatenate([q, q], axis=2), np.concatenate([qr, qr], axis=2)
    with pytest.raises(AclnnError) as err:
        run_fia(
            query=TO["BSND"](q2), queryRopeOptional=TO["BSND"](qr2), key=[_paged(k, BS, "NZ", rng)[0]],
            value=[_paged(v, BS, "NZ", rng)[0]], keyRopeOptional=_paged(kr, BS, "NZ", rng)[0],
            blockTableOptional=np.arange(2, dtype=np.int32).reshape(1, 2), blockSize=BS,
            actualSeqLengthsKvOptional=(130,), out_shape=TO["BSND"](q2).shape, out_dtype=DataType.ACL_BF16,
            dequantScaleQueryOptional=np.ones((1, 2, 32), np.float32),
            keyAntiquantScaleOptional=np.array([1.0], np.float32), valueAntiquantScaleOptional=np.array([1.0], np.float32),
            queryQuantMode=3, numHeads=32, numKeyValueHeads=1, scaleValue=1.0, inputLayout="BSND",
        )  # fmt: skip
    assert err.value.code == 561003
