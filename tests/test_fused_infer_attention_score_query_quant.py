"""FusedInferAttentionScoreV4's per-block full quant on Ascend910_95 (FP8 E4M3 / HiFloat8 query, key
and value, queryQuantMode = keyAntiquantMode = valueAntiquantMode = 7; PromptFlashAttentionTilingV2
`enablePerblockQuant`): the kernels against the float64 golden (CANN's precision standard), a tie
test per rounded quantity (P's narrowing to the input type, the output's CAST_ROUND), the casts, and
what the route does with dequantScaleQuery otherwise."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from aclnn_emu import DataType
from aclnn_emu.kernels.casts import cast_rint_e4m3, cast_round_hif8, hif8_to_float32
from golden import perblock_quant as golden
from test_fused_infer_attention_score import run_fia

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
BF16 = np.dtype(ml_dtypes.bfloat16)
HIF8 = DataType.ACL_HIFLOAT8
OUT = {np.dtype(np.float16): DataType.ACL_FLOAT16, BF16: DataType.ACL_BF16}
LAYOUT = {
    "BNSD": lambda x: x,
    "BSND": lambda x: x.transpose(0, 2, 1, 3),
    "BSH": lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1),
}


def _blocks(rows, size):
    return -(-rows // size)


def _quantised(x, fmt):
    """(device array, float64 values) of float data in FP8 E4M3 or HiFloat8 (codes)."""
    if fmt == "hif8":
        codes = cast_round_hif8(x.astype(np.float32))
        return codes, hif8_to_float32(codes).astype(np.float64)
    q = x.astype(E4M3)
    return q, q.astype(np.float64)


def _hif8_dev(x, dtype=None):
    """test_fused_infer_attention_score.dev with uint8 arrays sent as HiFloat8 codes."""
    if x is None:
        return None
    x = np.ascontiguousarray(x)
    return ae.to_device(x, dtype=HIF8 if x.dtype == np.uint8 and dtype is None else dtype)


def _run(q, k, v, dq, dk, dv, *, fmt, out_dtype, layout="BNSD", scale=0.125, **named):
    """The V4 call in ``layout`` (q, k, v as [B, N, S, D]: FP8 E4M3 arrays, or HiFloat8 codes with
    ``fmt`` "hif8"); returns attentionOut as [B, N, S1, Dv]."""
    n, n2 = q.shape[1], k.shape[1]
    to = LAYOUT[layout]
    with pytest.MonkeyPatch.context() as patch:
        if fmt == "hif8":
            patch.setattr("test_fused_infer_attention_score.dev", _hif8_dev)
        out = _call(to, q, k, v, dq, dk, dv, out_dtype, n, n2, scale, layout, named)
    back = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    back["BSH"] = lambda x: x.reshape(x.shape[0], x.shape[1], n, -1).transpose(0, 2, 1, 3)
    return back[layout](out)


def _call(to, q, k, v, dq, dk, dv, out_dtype, n, n2, scale, layout, named):
    out, _ = run_fia(
        query=to(q),
        key=[to(k)],
        value=[to(v)],
        out_shape=to(np.empty(q.shape[:3] + (v.shape[3],), np.int8)).shape,
        out_dtype=OUT[np.dtype(out_dtype)],
        dequantScaleQueryOptional=dq[..., None].astype(np.float32),
        keyAntiquantScaleOptional=dk[..., None].astype(np.float32),
        valueAntiquantScaleOptional=dv[..., None].astype(np.float32),
        queryQuantMode=7,
        keyAntiquantMode=7,
        valueAntiquantMode=7,
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=scale,
        inputLayout=layout,
        **named,
    )
    return out


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("out_dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("fmt,layout", [("e4m3", "BNSD"), ("e4m3", "BSND"), ("e4m3", "BSH"), ("hif8", "BNSD")])
def test_per_block_meets_the_standard(chip, fmt, out_dtype, layout):
    """GQA 4/2, S1 = 200 (two query scale blocks, the second partial), S2 = 600 (three key blocks:
    the first value scale applied at the second block, a partial last block); scales differ per
    block so a scale read from the wrong block fails. (HiFloat8 in one layout: its golden rounds
    element by element.)"""
    b, n, n2, s1, s2, d = 2, 4, 2, 200, 600, 64
    rng = np.random.default_rng(20261129)
    q, qf = _quantised(rng.standard_normal((b, n, s1, d)) * 2, fmt)
    k, kf = _quantised(rng.standard_normal((b, n2, s2, d)) * 2, fmt)
    v, vf = _quantised(rng.standard_normal((b, n2, s2, d)) * 2, fmt)
    dq = rng.uniform(0.02, 0.06, (b, n, _blocks(s1, 128))).astype(np.float32)
    dk, dv = (rng.uniform(0.02, 0.06, (b, n2, _blocks(s2, 256))).astype(np.float32) for _ in range(2))
    out = _run(q, k, v, dq, dk, dv, fmt=fmt, out_dtype=out_dtype, layout=layout)
    narrow = golden.e4m3_even if fmt == "e4m3" else golden.hif8_away
    want = golden.attention(qf, kf, vf, dq, dk, dv, scale=0.125, narrow_p=narrow)
    message = precision.failure(out.astype(np.float64), want.out, np.dtype(out_dtype).name, floor=want.floor)
    assert message is None, message


def _exp_midpoints():
    """(y, e): float32 y < 0 whose float32 exponential (numpy's, the emulator's) is an FP8 E4M3
    midpoint in [1/8, 1), where HiFloat8 has E4M3's grid (3 mantissa bits for exponents -3 to -1).
    E4M3 has four midpoints per binade where the two modes differ, too few for ties.exp_ties's
    0.1-ulp rule, so the scores a few ulps around log(midpoint) are searched."""
    wanted = np.unique(np.abs(ties.midpoints(np.random.default_rng(5), 4000, "float8_e4m3fn", 2.0**-3, 1)))
    near = np.log(wanted).astype(np.float32)
    y = np.concatenate([near + np.float32(step) * np.spacing(near) for step in range(-8, 9)])
    e = np.exp(y).astype(np.float64)
    hit = np.isin(e, wanted)
    y, first = np.unique(y[hit], return_index=True)
    assert len(y) >= 4, "too few exponentials land on midpoints"
    return y, e[hit][first]


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("fmt", ["e4m3", "hif8"])
def test_p_narrowing_ties(chip, fmt):
    """P = E narrowed to the input type: FP8 E4M3 ties to even (CAST_RINT), HiFloat8 ties away
    (CAST_ROUND); on [1/2, 1) both grids hold 3 mantissa bits, so the same midpoints tell them
    apart. Each (head, query block) row has scores (0, y) through dScale = dq (scale 1, dk 1):
    key 0 raw 0, key 1 raw -1 with dq = -y, values (0, 1), so O = fp32(P_1 / (1 + e))."""
    n, s1, d = 8, 256, 16  # 16 (head, query block) rows
    blocks = _blocks(s1, 128)
    y, e = _exp_midpoints()
    pick = np.arange(n * blocks) % len(y)
    y, e = y[pick], e[pick]
    q = np.zeros((1, n, s1, d))
    q[..., 0] = 1
    k = np.zeros((1, n, 2, d))
    k[0, :, 1, 0] = -1
    v = np.zeros((1, n, 2, d))
    v[0, :, 1, :] = 1
    dq = -y.reshape(1, n, blocks)
    ones = np.ones((1, n, 1), np.float32)
    device = {"e4m3": lambda x: x.astype(E4M3), "hif8": lambda x: cast_round_hif8(x.astype(np.float32))}[fmt]
    out = _run(device(q), device(k), device(v), dq, ones, ones, fmt=fmt, out_dtype=np.float16, scale=1.0)
    per_row = np.repeat(e.reshape(n, blocks), 128, axis=1)[:, :s1]
    p_mode = "even" if fmt == "e4m3" else "away"

    def golden_p(modes):  # P on the E4M3 grid (the HiFloat8 grid is the same on [1/8, 1))
        return {"out": ties.two_key_output(per_row, "float8_e4m3fn", modes["p"], None)}

    want = ties.assert_sensitive(golden_p, {"p": p_mode}, "P")
    expected = ties.round_to(want["out"].astype(np.float32).astype(np.float64), np.float16, "away")
    ties.assert_bits(out[0, :, :, 0], expected, f"{fmt} P")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("out_dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_output_cast_ties(chip, out_dtype):
    """attentionOut = CAST_ROUND (ties away) of the fp32 O (Bmm2DataCopyOut): a zero query gives
    P = (1, 1) and l = 2, values (1, 1), so O = (2 dv) / 2 = dv, set to midpoints of the output type."""
    n, s1, d = 4, 16, 64
    dv = ties.midpoints(np.random.default_rng(6), (1, n, 1), out_dtype, 1, 64)
    q = np.zeros((1, n, s1, d)).astype(E4M3)
    k = np.zeros((1, n, 2, d)).astype(E4M3)
    v = np.ones((1, n, 2, d)).astype(E4M3)
    ones = np.ones((1, n, 1), np.float32)
    out = _run(q, k, v, np.ones((1, n, 1), np.float32), ones, dv, fmt="e4m3", out_dtype=out_dtype)
    rows = np.broadcast_to(dv[0, :, :, None], (n, s1, d))

    def case(modes):
        return {"out": ties.to_output(rows, out_dtype, modes["out"])}

    want = ties.assert_sensitive(case, {"out": "away"}, "attentionOut", finals=("out",))
    ties.assert_bits(out[0], want["out"], "attentionOut")


def test_cast_rint_e4m3_ties_and_saturation():
    """The P cast: midpoints go to the even neighbour; SatMode::SAT clamps to ±448 where ml_dtypes
    would give NaN; NaN stays NaN."""
    mid = ties.midpoints(np.random.default_rng(7), 400, "float8_e4m3fn", 2.0**-6, 256)
    got = cast_rint_e4m3(mid.astype(np.float32)).astype(np.float64)
    assert np.array_equal(got, ties.round_to(mid, "float8_e4m3fn", "even"))
    assert not np.array_equal(got, ties.round_to(mid, "float8_e4m3fn", "away"))
    edge = cast_rint_e4m3(np.array([500.0, -1e30, np.nan], np.float32)).astype(np.float64)
    assert edge[0] == 448 and edge[1] == -448 and np.isnan(edge[2])


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("route", ["pfa", "ifa", "int8"])
def test_dequant_scale_query_ignored_off_the_quant_kernels(chip, route, capfd):
    """Of Ascend910_95's kernels only the per-block and MLA full-quant ones read dequantScaleQuery:
    an fp16 query (the PFA kernels), an fp16 query over an INT8 key (IFATilingV2, which never reads
    it, and its antiquant kernels) or an INT8 query (per tensor: deqScale1, quantScale1, deqScale2;
    INVOKE_PFA_INT8_OP_IMPL_V2) gives the output of the same call without it, bit for bit."""
    n, n2, s1, s2, d = 4, 2, 1 if route == "ifa" else 32, 64, 64
    rng = np.random.default_rng(8)
    q = rng.standard_normal((1, n, s1, d)).astype(np.float16)
    if route == "ifa":
        k, v = (rng.integers(-128, 128, (1, n2, s2, d), dtype=np.int8) for _ in range(2))
        named = dict(antiquantScaleOptional=np.full((2,), 0.01, np.float16))
    elif route == "int8":
        q = rng.integers(-100, 100, q.shape, dtype=np.int8)
        k, v = (rng.integers(-100, 100, (1, n2, s2, d), dtype=np.int8) for _ in range(2))
        scales = (("deqScale1Optional", 1e-3), ("quantScale1Optional", 100.0), ("deqScale2Optional", 1e-4))
        named = {name: np.full((1,), x, np.float32) for name, x in scales}
    else:
        k, v = (rng.standard_normal((1, n2, s2, d)).astype(np.float16) for _ in range(2))
        named = {}
    call = dict(query=q, key=[k], value=[v], out_shape=q.shape, out_dtype=DataType.ACL_FLOAT16, numHeads=n)
    call.update(numKeyValueHeads=n2, scaleValue=0.125)
    call.update(inputLayout="BNSD", **named)
    plain, _ = run_fia(**call)
    capfd.readouterr()
    scaled, _ = run_fia(**call, dequantScaleQueryOptional=np.full((1, n, 1, 1), 4.0, np.float32), queryQuantMode=3)
    assert "dequantScaleQuery is ignored" in capfd.readouterr().err
    assert np.array_equal(plain.view(np.uint16), scaled.view(np.uint16))
