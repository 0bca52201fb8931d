"""FusedInferAttentionScore queryPaddingSize / kvPaddingSize on the PFA route (D 32 is no FIA-V3
head size, S > 1): the PFA kernels read batch b's last actualSeqLengths[b] query rows before the
query padding and its last actualSeqLengthsKv[b] keys before the key padding
(`prompt_flash_attention_s1s2_bns1_x910_base.h` GetQueryLeftPaddingSize / GetKVLeftPaddingSize,
arch35 `flash_attention_score_block_cube.h` CalcS1Coord / CalcS2Coord), the mask and pse at those
rows and keys (`LoopSOuterOffsetInit`, `CalPseShiftOffset`, arch35 `attenmask.h`); the other
output rows are 0 (needInit). With sparseMode 0 the tilings open the token window
(SetSparseModeData): the mask alone decides. The padding moves rows and adds no rounding, so the
kernels' roundings are those of the unpadded tests (test_prompt_flash_attention_v3)."""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
from golden import fused_infer_attention_score as fia_golden
from golden import left_padding
from golden import prompt_flash_attention as pfa_golden
import test_prompt_flash_attention_v3 as pfa_v3
from test_fused_infer_attention_score import BF16, RNG, run_fia

CHIPS = ["Ascend910B", "Ascend910_95"]
SCALE = 0.125


def _bnsd_to(x, layout):
    return pfa_v3.to_layout(x, layout)


def _call(q, k, v, layout, **named):
    b, n, s1, d = q.shape
    out, lse = run_fia(
        query=_bnsd_to(q, layout), key=[_bnsd_to(k, layout)], value=[_bnsd_to(v, layout)],
        out_shape=_bnsd_to(q, layout).shape, numHeads=n, numKeyValueHeads=k.shape[1], scaleValue=SCALE,
        inputLayout=layout, **named,
    )  # fmt: skip
    if layout != "BNSD":
        out = out.reshape(b, s1, n, -1).transpose(0, 2, 1, 3)
    return out, lse


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_padded_rows_mask_and_pse(chip, dtype, layout):
    """Both paddings, per-batch lengths, a [B, S1, S2] mask and a [1, N, S1, S2] pse: every batch
    attends its own rows, the mask and pse are read at them, preTokens/nextTokens (which would cut
    the window) are ignored, the rest of the output is 0; batch 2 does not fit its padding (read
    from row 0 on A2/A3, 0 on Ascend910_95)."""
    b, n, s1, s2, d = 3, 4, 24, 48, 32
    q, k = pfa_v3.grid((b, n, s1, d), dtype), pfa_v3.grid((b, 2, s2, d), dtype)
    v = RNG.standard_normal((b, 2, s2, d)).astype(dtype)
    mask = RNG.random((b, s1, s2)) < 0.3
    pse = pfa_v3.grid((1, n, s1, s2), dtype, spread=2)
    act_q, act_kv, q_pad, kv_pad = [9, 20, 24], [30, 5, 44], 3, 2
    out, _ = _call(
        q, k, v, layout, attenMaskOptional=mask, pseShiftOptional=pse, actualSeqLengthsOptional=act_q,
        actualSeqLengthsKvOptional=act_kv, queryPaddingSizeOptional=np.array([q_pad], np.int64),
        kvPaddingSizeOptional=np.array([kv_pad], np.int64), preTokens=1, nextTokens=0, innerPrecise=1,
    )  # fmt: skip
    kind = pfa_v3.kind(chip, dtype, 1, True)

    def attend(qq, kk, vv, m, p):
        return pfa_golden.attention(qq, kk, vv, scale=SCALE, nxt=pfa_golden.BIG, mask=m, pse=p, **kind)

    arch35 = chip == "Ascend910_95"  # batch 2's 24 rows do not fit before 3 rows of padding: 0 there
    want = left_padding.attention(
        q, k, v, act_q, act_kv, q_pad, kv_pad, attend, mask=mask, pse=pse, overflow_empty=arch35
    )
    precision.assert_meets(out, want, np.dtype(dtype).name)
    rows = np.zeros((b, s1), bool)
    for bi, first in enumerate(left_padding.first_row(s1, aq, q_pad) for aq in act_q[: 2 if arch35 else 3]):
        rows[bi, first : first + act_q[bi]] = True
    by_row = np.asarray(out, np.float64).transpose(0, 2, 1, 3)  # [B, S1, N, D]
    assert (by_row[~rows] == 0).all() and (by_row[rows] != 0).any()


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_causal_band_is_the_batch_own(chip):
    """sparseMode 3 (the compressed 2048 x 2048 mask) anchors the band at the bottom right of each
    batch's actual rows and keys, wherever the padding puts them; a negative padding counts as 0.
    Batch 1's 12 query rows do not fit before 9 rows of padding in S1 16: the x910 kernels read
    rows 0-11 (GetQueryLeftPaddingSize clamps at 0), the arch35 ones take its length as 0
    (InitQueryLeftPaddingSize)."""
    b, n, s1, s2, d = 2, 2, 16, 40, 32
    q, k = pfa_v3.grid((b, n, s1, d), np.float16), pfa_v3.grid((b, n, s2, d), np.float16)
    v = RNG.standard_normal((b, n, s2, d)).astype(np.float16)
    act_q, act_kv, q_pad, kv_pad = [6, 12], [20, 33], 9, -4
    out, _ = _call(
        q, k, v, "BNSD", attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1), sparseMode=3,
        actualSeqLengthsOptional=act_q, actualSeqLengthsKvOptional=act_kv,
        queryPaddingSizeOptional=np.array([q_pad], np.int64), kvPaddingSizeOptional=np.array([kv_pad], np.int64),
    )  # fmt: skip
    kind = pfa_v3.kind(chip, np.float16, 1, False)

    def attend(qq, kk, vv, m, p):
        return pfa_golden.attention(qq, kk, vv, scale=SCALE, sparse_mode=3, **kind)

    arch35 = chip == "Ascend910_95"
    want = left_padding.attention(q, k, v, act_q, act_kv, q_pad, kv_pad, attend, overflow_empty=arch35)
    assert not left_padding.fits(s1, act_q[1], q_pad)
    precision.assert_meets(out, want, "float16")
    assert (np.asarray(out[1], np.float64) == 0).all() == arch35


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_padded_softmax_lse(chip):
    """softmaxLse (the second pass) is written at the batch's padded query rows; the other rows
    keep the value of rows without keys (+inf)."""
    b, n, s1, s2, d = 2, 4, 16, 40, 32
    q, k = (RNG.standard_normal(shape).astype(np.float16) for shape in ((b, n, s1, d), (b, 2, s2, d)))
    v = RNG.standard_normal((b, 2, s2, d)).astype(np.float16)
    act_q, act_kv, q_pad, kv_pad = [10, 7], [25, 40], 1, 0
    _, lse = _call(
        q, k, v, "BNSD", lse_shape=(b, n, s1, 1), actualSeqLengthsOptional=act_q, actualSeqLengthsKvOptional=act_kv,
        queryPaddingSizeOptional=np.array([q_pad], np.int64), kvPaddingSizeOptional=np.array([kv_pad], np.int64),
    )  # fmt: skip
    want = np.full((b, n, s1), np.inf)
    for bi in range(b):
        i0, j0 = s1 - act_q[bi] - q_pad, s2 - act_kv[bi] - kv_pad
        one = fia_golden.attention(
            q[bi : bi + 1, :, i0 : i0 + act_q[bi]], k[bi : bi + 1, :, j0 : j0 + act_kv[bi]],
            v[bi : bi + 1, :, j0 : j0 + act_kv[bi]], scale=SCALE, kv_block=8192,
        )  # fmt: skip
        want[bi, :, i0 : i0 + act_q[bi]] = one.lse[0]
    assert np.array_equal(np.isinf(lse[..., 0]), np.isinf(want))
    finite = np.isfinite(want)
    precision.assert_meets(lse[..., 0][finite], want[finite], np.float32, "softmaxLse")


def _small(**named):
    q, k = np.zeros((2, 8, 16, 32), np.float16), np.zeros((2, 2, 80, 32), np.float16)
    return dict(query=q, key=[k], value=[k], **named)


_K1 = np.zeros((1, 2, 80, 32), np.float16)
# Ascend910_95 (message each rule's failure names): fused_infer_attention_score_tiling_v2.cpp
# ConvertContextToParamsPFA, then CheckKVPaddingCrossover; every failure is 561002.
ARCH35_RULES = {
    "list": (dict(key=[_K1, _K1], value=[_K1, _K1]), "When tensorlist is used, left padding is not supported"),
    # before the PFA tiling's own list rules, which would fail the list's count first
    "list_first": (dict(key=[_K1] * 3, value=[_K1] * 3), "When tensorlist is used, left padding is not supported"),
    "shape": (dict(kvPaddingSizeOptional=np.zeros(2, np.int64)), r"kvPaddingSize \[2\] must be a \[1\] tensor"),
    "q_lengths": (
        dict(queryPaddingSizeOptional=np.zeros(1, np.int64), actualSeqLengthsKvOptional=None),
        "queryPaddingSize needs",
    ),
}


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("case", ARCH35_RULES)
def test_arch35_padding_rules(chip, case):
    named, message = ARCH35_RULES[case]
    call = _small(kvPaddingSizeOptional=np.zeros(1, np.int64), actualSeqLengthsKvOptional=[80, 80])
    call.update(named)
    call = {name: x for name, x in call.items() if x is not None}
    with pytest.raises(ae.errors.TilingError, match=message) as failure:
        ae.ops.FusedInferAttentionScoreV4(numHeads=8, numKeyValueHeads=2, inputLayout="BNSD", **call)
    assert failure.value.status == 561002


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_padding_and_pse_on_the_fia_v3_route(chip, dtype, layout):
    """Query D 192 / value D 128 skips CheckGqaConstrain's legacy-layout test, so RouteToFia takes
    padding and pseShift to the FIA-V3 kernels (fia_kernel_nonquant.h: qPaddingBeginOffset /
    kvPaddingBeginOffset on the rows, the mask and the pse, fia_block_vec_nonquant.h adding the pse
    cast to fp32 after the scale). Batch 2's key length and padding exceed S2: the kernel's
    DEAL_ZERO leaves it 0; softmaxLse keeps +inf there."""
    b, n, s1, s2 = 3, 4, 20, 72
    q, k = pfa_v3.grid((b, n, s1, 192), dtype), pfa_v3.grid((b, 2, s2, 192), dtype)
    v = RNG.standard_normal((b, 2, s2, 128)).astype(dtype)
    mask = RNG.random((b, s1, s2)) < 0.2
    pse = pfa_v3.grid((b, n, s1, s2), dtype, spread=2)
    act_q, act_kv, q_pad, kv_pad = [11, 15, 20], [50, 66, 70], 4, 6
    out_shape = _bnsd_to(np.zeros((b, n, s1, 128)), layout).shape
    out, lse = run_fia(
        query=_bnsd_to(q, layout), key=[_bnsd_to(k, layout)], value=[_bnsd_to(v, layout)], out_shape=out_shape,
        lse_shape=(b, n, s1, 1), numHeads=n, numKeyValueHeads=2, scaleValue=SCALE, inputLayout=layout,
        attenMaskOptional=mask, pseShiftOptional=pse, actualSeqLengthsOptional=act_q,
        actualSeqLengthsKvOptional=act_kv, queryPaddingSizeOptional=np.array([q_pad], np.int64),
        kvPaddingSizeOptional=np.array([kv_pad], np.int64), preTokens=0, nextTokens=0,
    )  # fmt: skip
    if layout != "BNSD":
        out = out.reshape(b, s1, n, -1).transpose(0, 2, 1, 3)

    def part(name, fill=0.0):
        def attend(qq, kk, vv, m, p):
            return getattr(fia_golden.attention(qq, kk, vv, scale=SCALE, kv_block=512, mask=m, pse=p), name)

        return left_padding.attention(
            q, k, v, act_q, act_kv, q_pad, kv_pad, attend, mask, pse, overflow_empty=True, fill=fill
        )

    message = precision.failure(np.asarray(out, np.float64), part("out"), np.dtype(dtype).name, floor=part("floor"))
    assert message is None, message
    assert not left_padding.fits(s2, act_kv[2], kv_pad) and (np.asarray(out[2], np.float64) == 0).all()
    want_lse = part("lse", fill=np.inf)  # rows no batch reaches keep +inf
    assert np.array_equal(np.isinf(lse[..., 0]), np.isinf(want_lse))
    finite = np.isfinite(want_lse)
    precision.assert_meets(lse[..., 0][finite], want_lse[finite], np.float32, "softmaxLse")


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_key_padding_in_the_ifa_route_lse(chip):
    """S = 1, D 32: the IFA route reads each batch's keys before kvPaddingSize
    (InitKVLeftPaddingSize), and so does the second pass that writes softmaxLse; batch 1's keys
    do not fit before the padding: no keys, its lse is the unseen value of the legacy IFA shape
    (InitOutputSingleCore's -3.4e38, as for every row without keys there)."""
    b, n, s2, d = 2, 4, 40, 32
    q, k = (RNG.standard_normal(shape).astype(np.float16) for shape in ((b, n, 1, d), (b, 2, s2, d)))
    v = RNG.standard_normal((b, 2, s2, d)).astype(np.float16)
    act_kv, kv_pad = [25, 38], 5
    _, lse = _call(
        q, k, v, "BNSD", lse_shape=(b, n, 1, 1), actualSeqLengthsKvOptional=act_kv,
        kvPaddingSizeOptional=np.array([kv_pad], np.int64),
    )  # fmt: skip
    j0 = s2 - act_kv[0] - kv_pad
    one = fia_golden.attention(q[:1], k[:1, :, j0 : j0 + 25], v[:1, :, j0 : j0 + 25], scale=SCALE, kv_block=8192)
    precision.assert_meets(lse[0, :, 0, 0], one.lse[0, :, 0], np.float32, "softmaxLse")
    assert (lse[1] == np.float32(-3.4e38)).all()
