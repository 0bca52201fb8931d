"""FusedInferAttentionScoreV5's alibi (pseType 2/3) on Ascend950 under CANN 9.0.0: the PFA route's rules and
kernels (fused_infer/alibi_arch35.py), against a float64 reference (golden.fused_infer_attention_score.alibi added
to the scores of the PFA golden's high-precision rules) to CANN's precision standard.

Sources (v9.0.0): attention/prompt_flash_attention/op_host/prompt_flash_attention_tiling_v2.cpp (SetAttributeInfo,
CheckAlibiPseShiftTypeAndShape, the crossover rules, the per-batch length rule, SetQKVStartIdx; every failure
561002), attention/incre_flash_attention/op_host/incre_flash_attention_tiling_v2.cpp ProcessPseShift (the IFA
route), attention/common/op_kernel/arch35/pse.h ComputeInnerPseOffset (the bias)."""

import re

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
from aclnn_emu.pytest_plugin import select
from golden import fused_infer_attention_score as golden
from golden import prompt_flash_attention as pfa_golden

BF16 = ml_dtypes.bfloat16
TILING, NOT_EMULATED = 561002, 561003  # FIND_KERNEL is 561003 too
RNG = np.random.default_rng(20261129)
N, N2, D = 4, 2, 128
SLOPES = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)


@pytest.fixture(autouse=True)
def _ascend950_9_0(monkeypatch):
    select(monkeypatch, cann_version="9.0.0", soc="Ascend910_95")


def _inputs(dtype=np.float16, b=1, s=37):
    q = RNG.standard_normal((b, N, s, D)).astype(dtype)
    k, v = (RNG.standard_normal((b, N2, s, D)).astype(dtype) for _ in range(2))
    return q, k, v


def _call(q, k, v, pse_type=2, slopes=SLOPES, layout="BNSD", **extra):
    return list(
        ae.ops.FusedInferAttentionScoreV5(
            q, [k], [v], pseShiftOptional=slopes, pseType=pse_type, numHeads=N, numKeyValueHeads=N2,
            scaleValue=D**-0.5, inputLayout=layout, **extra,
        )
    )[0]  # fmt: skip


def _tnd():
    q = RNG.standard_normal((37, N, D)).astype(np.float16)
    k, v = (RNG.standard_normal((37, N2, D)).astype(np.float16) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("pse_type", [2, 3])
@pytest.mark.parametrize(
    "starts", [(None, None), ([3], [1]), ([0], [700]), ([5], None)], ids=["no_starts", "both", "far", "query_only"]
)
def test_alibi_meets_the_reference(dtype, pse_type, starts):
    """The bias after the scale, each start index read alone (0 without one)."""
    q, k, v = _inputs(dtype)
    q_start, kv_start = starts
    out = _call(q, k, v, pse_type, qStartIdxOptional=q_start, kvStartIdxOptional=kv_start)
    bias = golden.alibi(SLOPES, pse_type, 37, 37, (q_start or [0])[0], (kv_start or [0])[0])
    want = pfa_golden.attention(q, k, v, scale=D**-0.5, nxt=pfa_golden.BIG, pse=bias, high_precision=True)
    floor = golden.attention(q, k, v, scale=D**-0.5, kv_block=512, pse=bias).floor
    message = precision.failure(np.asarray(out, np.float64), want, np.dtype(dtype).name, floor=floor)
    assert message is None, message
    plain = list(
        ae.ops.FusedInferAttentionScoreV5(
            q, [k], [v], numHeads=N, numKeyValueHeads=N2, scaleValue=D**-0.5, inputLayout="BNSD"
        )
    )[0]
    assert not np.array_equal(out, plain)  # the bias is applied


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_alibi_with_causal_ragged_batches(dtype):
    """Sparse mode 3 with each batch's lengths equal (the tiling's alibi rule): d counts each batch's own rows."""
    q, k, v = _inputs(dtype, b=2, s=48)
    lengths = [29, 48]
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    out = _call(
        q, k, v, 3, actualSeqLengthsOptional=lengths, actualSeqLengthsKvOptional=lengths, attenMaskOptional=mask,
        sparseMode=3, qStartIdxOptional=[2], kvStartIdxOptional=[9],
    )  # fmt: skip
    bias = golden.alibi(SLOPES, 3, 48, 48, 2, 9)
    kw = dict(scale=D**-0.5, sparse_mode=3, act_q=lengths, act_kv=lengths, pse=bias)
    want = pfa_golden.attention(q, k, v, high_precision=True, **kw)
    floor = golden.attention(q, k, v, kv_block=512, has_mask=True, **kw).floor
    rows = np.arange(48)[None, None, :, None] < np.array(lengths)[:, None, None, None]
    message = precision.failure(
        np.where(rows, np.asarray(out, np.float64), 0), np.where(rows, want, 0), np.dtype(dtype).name, floor=floor
    )
    assert message is None, message


def _code(**extra):
    q, k, v = extra.pop("qkv", None) or _inputs()
    with pytest.raises(ae.AclnnError) as info:
        _call(q, k, v, **extra)
    return info.value.code, str(info.value)


@pytest.mark.parametrize(
    "extra,code,message",
    [
        # CheckAlibiPseShiftTypeAndShape
        (dict(slopes=None), TILING, "pseShift shape is null"),
        (
            dict(slopes=SLOPES.astype(np.float16)),
            TILING,
            "pse shift type must be float, but pse shift type = DT_FLOAT16",
        ),
        (dict(slopes=SLOPES.reshape(1, 4)), TILING, r"The dim of pseShift\(2\) must be 1"),
        (dict(slopes=SLOPES[:3]), TILING, r"The length of pseShift\(3\) must be equal to query head number"),
        # the crossover rules
        (
            dict(learnableSinkOptional=np.zeros(N, BF16)),
            TILING,
            "When learnable sink is used, AlibiPse is not supported",
        ),
        (
            dict(queryPaddingSizeOptional=np.array([0], np.int64), actualSeqLengthsOptional=[37]),
            TILING,
            "left padding is not supported",
        ),
        # the per-batch length rule
        (dict(actualSeqLengthsOptional=[20]), TILING, r"actualSeqLengths\[0\]\(seq size of query\)=20 must be equal"),
        # SetQKVStartIdx
        (dict(qStartIdxOptional=[2**31]), TILING, "qStartIdx should >= -2147483648 and <= 2147483647"),
        (dict(kvStartIdxOptional=[2**20 + 1]), TILING, "kvStartIdx - qStartIdx should >= -1048576 and <= 1048576"),
        # SetAttributeInfo
        (dict(pse_type=4), TILING, r"PseType\(4\) is not support"),
        # not emulated after the checks (a 0-d slopes tensor: the C-ABI suite, ae.ops passes no 0-d tensor)
        (dict(softmaxLseFlag=True), NOT_EMULATED, "with softmaxLse"),
        (dict(qkv=_inputs(s=1)), NOT_EMULATED, "with a query S of 1"),
        (
            dict(qkv=_tnd(), layout="TND", actualSeqLengthsOptional=[37], actualSeqLengthsKvOptional=[37]),
            NOT_EMULATED,
            "inputLayout TND",
        ),
    ],
)
def test_alibi_rules(extra, code, message):
    got, text = _code(**extra)
    assert got == code, text
    assert re.search(message, text), text


def test_alibi_with_one_head():
    """One query head and one slope (PSE_1_N2_G_SLOPE: offset n)."""
    q = RNG.standard_normal((1, 1, 24, D)).astype(np.float16)
    k, v = (RNG.standard_normal((1, 1, 24, D)).astype(np.float16) for _ in range(2))
    out = list(
        ae.ops.FusedInferAttentionScoreV5(
            q, [k], [v], pseShiftOptional=np.array([0.3], np.float32), pseType=2, numHeads=1, scaleValue=D**-0.5,
            inputLayout="BNSD",
        )
    )[0]  # fmt: skip
    bias = golden.alibi([0.3], 2, 24, 24)
    want = pfa_golden.attention(q, k, v, scale=D**-0.5, nxt=pfa_golden.BIG, pse=bias, high_precision=True)
    floor = golden.attention(q, k, v, scale=D**-0.5, kv_block=512, pse=bias).floor
    message = precision.failure(np.asarray(out, np.float64), want, "float16", floor=floor)
    assert message is None, message


def test_alibi_on_the_ifa_route():
    """An INT8 key: IFATilingV2::ProcessPseShift's CheckAlibiPseShiftTypeAndShape refuses non-FLOAT slopes, and the
    OpDef registers FLOAT pse_shift beside no INT8 key (the generated entry point's kernel key, 561003)."""
    q = RNG.standard_normal((1, N, 1, D)).astype(np.float16)
    k, v = (RNG.integers(-8, 8, (1, N2, 40, D)).astype(np.int8) for _ in range(2))
    scale = np.full((2, N2, 1, D), 0.05, np.float16)
    got, text = _code(qkv=(q, k, v), antiquantScaleOptional=scale, slopes=SLOPES.astype(np.float16))
    assert got == TILING and "pse shift type must be float, but pse shift type = DT_FLOAT16." in text, text
    got, text = _code(qkv=(q, k, v), antiquantScaleOptional=scale, slopes=None)
    assert got == TILING and "When pseType = 2/3, pseShift shape is null." in text, text
    got, text = _code(qkv=(q, k, v), antiquantScaleOptional=scale)
    assert got == NOT_EMULATED and "no registered kernel takes optional input(s) pseShiftOptional (FLOAT" in text, text


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93"])
def test_float_slopes_on_atlas_a2_fail_the_kernel_key(monkeypatch, soc):
    """No A2/A3 tiling of 9.0.0 reads pseType; the OpDef's ascend910b/ascend910_93 pse_shift has no FLOAT
    (fused_infer_attention_score_def.cpp), so FLOAT slopes fail the generated entry point's kernel key."""
    select(monkeypatch, cann_version="9.0.0", soc=soc)
    got, text = _code()
    assert got == NOT_EMULATED and "no registered kernel" in text, text
