"""FusedInferAttentionScore on the Atlas A2/A3 PFA route with separate key/value antiquant
parameters and query S <= 16: the PFA tiling turns on its MSD kernels
(prompt_flash_attention_s1s2_bns1_x910.h, msdMode MSD_ON), which split the query and the softmax
numerators into two int8 pieces each and run both products in int8 (kernels/flash_attention/
pfa_msd.py). Per channel (modes 0) the BF16 parameters beside a BF16 query, per token (modes 1) the
FLOAT [B2, S2] ones beside an fp16 or BF16 query. The float64 reference is attention over the
dequantised key and value (tests/golden/pfa_msd.py)."""

import ml_dtypes
import numpy as np
import pytest

import precision
import ties
from aclnn_emu.runtime import sanitizer
from golden import fused_infer_attention_score as golden
from golden import pfa_msd
from test_fused_infer_attention_score import _lse_meets, run_fia
import test_prompt_flash_attention_v3 as pfa_v3

F16 = np.float16
BF16 = ml_dtypes.bfloat16
F32 = np.float32
RNG = np.random.default_rng(20261129)
A2_CHIPS = pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
CHANNEL_SHAPES = {"n2_d": lambda n2, d: (n2, d), "n2_1_d": lambda n2, d: (n2, 1, d), "h2": lambda n2, d: (n2 * d,)}


def _int8(shape):
    return RNG.integers(-128, 128, shape, dtype=np.int8)


def _check(out, layout, q, k, v, *, scale, dtype, **mask):
    b, n, s1, d = q.shape
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    want = golden.attention(q, k, v, kv_block=512, scale=scale, **mask)
    message = precision.failure(back.astype(np.float64), want.out, dtype, floor=want.floor)
    assert message is None, message
    assert not sanitizer.reports()


@A2_CHIPS
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("shape", list(CHANNEL_SHAPES))
@pytest.mark.parametrize("with_offset", [True, False], ids=["offset", "no_offset"])
def test_per_channel_beside_a_bf16_query(chip, layout, shape, with_offset):
    """GQA (8 heads on 2), S1 12 against 1500 keys (two key blocks of the online softmax), causal
    sparse mode 3 with batch 1 shorter; the key offset is a row constant of the scores, which the
    kernels leave out (softmax does not see it)."""
    b, n, n2, s1, s2, d = 2, 8, 2, 12, 1500, 64
    q = RNG.standard_normal((b, n, s1, d)).astype(BF16)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    pshape = CHANNEL_SHAPES[shape](n2, d)
    ks, vs = ((RNG.random(pshape) * 0.02 + 0.005).astype(BF16) for _ in range(2))
    ko, vo = ((RNG.standard_normal(pshape) * 4).astype(BF16) for _ in range(2)) if with_offset else (None, None)
    named = dict(keyAntiquantScaleOptional=ks, valueAntiquantScaleOptional=vs)
    if with_offset:
        named.update(keyAntiquantOffsetOptional=ko, valueAntiquantOffsetOptional=vo)
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    act_kv = [1500, 1100]
    out, _ = run_fia(
        query=to(q), key=[to(k8)], value=[to(v8)], out_shape=to(q).shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=d**-0.5, inputLayout=layout, sparseMode=3, attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        actualSeqLengthsKvOptional=tuple(act_kv), **named,
    )  # fmt: skip
    k, v = pfa_msd.dequantised(k8, ks, ko, False), pfa_msd.dequantised(v8, vs, vo, False)
    _check(out, layout, q, k, v, scale=d**-0.5, dtype="bfloat16", sparse_mode=3, act_kv=act_kv, has_mask=True)


@A2_CHIPS
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("with_offset", [True, False], ids=["offset", "no_offset"])
def test_per_token(chip, layout, dtype, with_offset, capfd):
    """FLOAT [B, S2] parameters per key row, D 128, S1 16 against 1300 keys with an explicit
    [B, S1, S2] mask (some keys masked per row). With offsets the kernels' row sums and fused
    multiply-adds serve, whose orders are a portability warning (inferred.msd_sums)."""
    b, n, n2, s1, s2, d = 2, 4, 2, 16, 1300, 128
    q = RNG.standard_normal((b, n, s1, d)).astype(dtype)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    ks, vs = ((RNG.random((b, s2)) * 0.02 + 0.005).astype(F32) for _ in range(2))
    ko, vo = ((RNG.standard_normal((b, s2)) * 4).astype(F32) for _ in range(2)) if with_offset else (None, None)
    named = dict(keyAntiquantScaleOptional=ks, valueAntiquantScaleOptional=vs, keyAntiquantMode=1, valueAntiquantMode=1)
    if with_offset:
        named.update(keyAntiquantOffsetOptional=ko, valueAntiquantOffsetOptional=vo)
    mask = RNG.random((b, s1, s2)) < 0.2
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    out, _ = run_fia(
        query=to(q), key=[to(k8)], value=[to(v8)], out_shape=to(q).shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=d**-0.5, inputLayout=layout, attenMaskOptional=mask, **named,
    )  # fmt: skip
    k, v = pfa_msd.dequantised(k8, ks, ko, True), pfa_msd.dequantised(v8, vs, vo, True)
    name = "float16" if dtype == F16 else "bfloat16"
    _check(out, layout, q, k, v, scale=d**-0.5, dtype=name, mask=mask)
    assert ("inferred.msd_sums" in capfd.readouterr().err) == with_offset


COEFF1, EXPAND = F32(127.49), F32(254.98)  # the kernels' msdAntiqCoeff1 and msdAntiqExpandCoeff


def _tie_scale(m: int) -> np.float32:
    """A FLOAT scale s with fp32(s * 127.49) == m + 0.5 exactly (a tie of the first piece)."""
    s = F32((m + 0.5) / float(COEFF1))
    for _ in range(64):
        p = F32(s * COEFF1)
        if p == m + 0.5:
            return s
        s = np.nextafter(s, F32(np.inf) if p < m + 0.5 else F32(-np.inf))
    raise AssertionError(f"no fp32 scale puts {m} + 0.5 on the grid")


# FLOAT scales s whose a = fp32(s * 127.49) is 1 + f with fp32(f * 254.98) = k + 0.5 for even k (found
# by a search over the fp32 grid): a tie of the second piece; the first (round(a) = 1) is none
SECOND_TIES = np.array(
    [0.00878200028091669, 0.009151147678494453, 0.009520294144749641, 0.00988944061100483, 0.010258587077260017,
     0.01062773447483778, 0.010996880941092968, 0.011366027407348156, 0.011735174804925919], F32,
)  # fmt: skip


@A2_CHIPS
def test_value_pieces_round_half_away(chip):
    """Both int8 pieces of each softmax numerator (per token: P * scaleV, over the block's largest)
    round half away from zero (MsdAIterExpand's CAST_ROUND): zero keys give P = 1 on every key, key
    0's scale 1 is the block's largest, keys 1-15 put P * scaleV * 127.49 on m + 0.5 (a tie of the
    first piece), keys 16-24 its remainder times 254.98 on k + 0.5 (a tie of the second); one-hot
    values make output channel j - 1 read key j alone, and its fp16 output (l = S2) shows which way
    each tie went. Two query rows: S = 1 would take the IFA route."""
    first_ties = np.array([_tie_scale(m) for m in range(1, 16)], F32)
    scales = np.concatenate([[F32(1)], first_ties, SECOND_TIES])
    keys, d = len(scales), 32
    a = (scales[1:] * COEFF1).astype(np.float64)  # fp32 products, exact in float64
    assert np.array_equal(a[:15], np.arange(1, 16) + 0.5)
    assert np.all(ties.is_tie(np.float64(F32(F32(a[15:] - 1) * EXPAND)), "int8"))
    v8 = np.zeros((1, 1, keys, d), np.int8)
    weights = RNG.integers(64, 128, keys - 1)
    v8[0, 0, np.arange(1, keys), np.arange(keys - 1)] = weights
    out, _ = run_fia(
        query=np.ones((1, 1, 2, d), F16), key=[np.zeros((1, 1, keys, d), np.int8)], value=[v8],
        out_shape=(1, 1, 2, d), numHeads=1, inputLayout="BNSD", keyAntiquantMode=1, valueAntiquantMode=1,
        keyAntiquantScaleOptional=np.ones((1, keys), F32), valueAntiquantScaleOptional=scales[None],
    )  # fmt: skip
    step, coeff2 = F32(1) / EXPAND, F32(1) / COEFF1

    def golden_out(modes):
        first = ties.round_to(a, "int8", modes["first piece"])
        second = ties.round_to(np.float64(F32(F32(a - first) * EXPAND)), "int8", modes["second piece"])
        comb = F32(F32(F32(first * weights) + F32(F32(second * weights) * step)) * coeff2)
        o = np.zeros(d)
        o[: keys - 1] = F32(comb / F32(keys))
        return {"attentionOut": np.broadcast_to(ties.to_output(o, "float16", "away"), (2, d))}

    modes = {"first piece": "away", "second piece": "away"}
    want = ties.assert_sensitive(golden_out, modes, "MSD value pieces")
    ties.assert_bits(out[0, 0], want["attentionOut"], "attentionOut")


@A2_CHIPS
@pytest.mark.parametrize("per_token", [False, True], ids=["per_channel", "per_token"])
def test_softmax_lse(chip, per_token, capfd):
    """The MSD kernels write softmaxLse themselves (SoftmaxLseCopyOut): log(l) + m of their scores,
    per channel with the key offset's row constant scaleValue * sum(q * scaleK * offsetK) added back,
    so it is the dequantised scores' lse; rows past actualSeqLengths keep the initialisation's +inf
    (InitLseOutputSingleCore)."""
    b, n, n2, s1, s2, d = 2, 4, 2, 10, 200, 64
    dtype, pdtype, pshape = (F16, F32, (b, s2)) if per_token else (BF16, BF16, (n2, d))
    q = RNG.standard_normal((b, n, s1, d)).astype(dtype)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    ks, vs = ((RNG.random(pshape) * 0.02 + 0.005).astype(pdtype) for _ in range(2))
    ko, vo = ((RNG.standard_normal(pshape) * 4).astype(pdtype) for _ in range(2))
    act_q, act_kv = [10, 7], [200, 150]
    out, lse = run_fia(
        query=q, key=[k8], value=[v8], out_shape=q.shape, lse_shape=(b, n, s1, 1), numHeads=n, numKeyValueHeads=n2,
        scaleValue=d**-0.5, inputLayout="BNSD", sparseMode=3, attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        actualSeqLengthsOptional=tuple(act_q), actualSeqLengthsKvOptional=tuple(act_kv),
        keyAntiquantScaleOptional=ks, valueAntiquantScaleOptional=vs, keyAntiquantOffsetOptional=ko,
        valueAntiquantOffsetOptional=vo, keyAntiquantMode=int(per_token), valueAntiquantMode=int(per_token),
    )  # fmt: skip
    k, v = pfa_msd.dequantised(k8, ks, ko, per_token), pfa_msd.dequantised(v8, vs, vo, per_token)
    want = golden.attention(
        q, k, v, kv_block=512, scale=d**-0.5, sparse_mode=3, act_q=act_q, act_kv=act_kv, has_mask=True
    )
    _lse_meets(lse[..., 0], want.lse)
    assert "inferred.msd_sums" in capfd.readouterr().err
