"""aclnnFusedInferAttentionScoreV5 (CANN 9.0.0 on): V4's inner call with qStartIdx, kvStartIdx and pseType, which V4
passes as NULL, NULL and 0 (op_api aclnn_fused_infer_attention_score_v5.cpp / _v4.cpp at v9.0.0 and branch 9.1.0).
With those values V5 computes V4's bits on every chip; on Ascend950 under 9.x it is the entry point left (V1-V4
return 361001 there)."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.pytest_plugin import select

NOT_EMULATED, WITHDRAWN, TILING = 561003, 361001, 561002


def _call(entry, q, k, v, **extra):
    return list(
        getattr(ae.ops, entry)(
            q, [k], [v], numHeads=4, numKeyValueHeads=2, scaleValue=128**-0.5, inputLayout="BNSD",
            softmaxLseFlag=True, **extra,
        )
    )  # fmt: skip


def _inputs(dtype=np.float16, s1=37):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 4, s1, 128)).astype(dtype)
    k, v = (rng.standard_normal((1, 2, 301, 128)).astype(dtype) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize("version", ["9.0.0", "9.1.0"])
@pytest.mark.parametrize("s1,extra", [(37, dict(nextTokens=0, sparseMode=0)), (1, {})])
def test_v5_gives_v4s_bits_on_atlas_a2(monkeypatch, version, s1, extra):
    select(monkeypatch, cann_version=version, soc="Ascend910B")
    q, k, v = _inputs(s1=s1)
    for got, want in zip(
        _call("FusedInferAttentionScoreV5", q, k, v, **extra), _call("FusedInferAttentionScoreV4", q, k, v, **extra)
    ):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("version", ["9.0.0", "9.1.0"])
def test_v5_on_ascend950_gives_what_v4_gave_under_8_5(monkeypatch, version):
    """The same arch35 route; V4 itself is withdrawn there under 9.x."""
    q, k, v = _inputs()
    select(monkeypatch, cann_version="8.5.0", soc="Ascend910_95")
    want = _call("FusedInferAttentionScoreV4", q, k, v, nextTokens=0)
    select(monkeypatch, cann_version=version, soc="Ascend910_95")
    for got, expected in zip(_call("FusedInferAttentionScoreV5", q, k, v, nextTokens=0), want):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ae.AclnnError, match="no longer supported on Ascend950") as info:
        _call("FusedInferAttentionScoreV4", q, k, v, nextTokens=0)
    assert info.value.code == WITHDRAWN


def test_v5_with_a_learnable_sink_gives_v4s_bits(monkeypatch):
    select(monkeypatch, cann_version="9.1.0", soc="Ascend910B")
    q, k, v = _inputs(ml_dtypes.bfloat16, s1=1)
    sink = np.linspace(-1, 1, 4).astype(ml_dtypes.bfloat16)
    got = _call("FusedInferAttentionScoreV5", q, k, v, learnableSinkOptional=sink)
    want = _call("FusedInferAttentionScoreV4", q, k, v, learnableSinkOptional=sink)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[0], _call("FusedInferAttentionScoreV5", q, k, v)[0])  # the sink is applied


STARTS = dict(qStartIdxOptional=[5], kvStartIdxOptional=[-3])


def _pse(q, k):
    """A [1, N, S1, S2] pseShift of the query's dtype."""
    return np.random.default_rng(3).standard_normal((1, q.shape[1], q.shape[2], k.shape[2])).astype(q.dtype)


@pytest.mark.parametrize("version", ["9.0.0", "9.1.0"])
@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93", "Ascend910_95"])
def test_start_indices_without_an_alibi_give_v4s_bits(monkeypatch, version, soc):
    """Only the alibi kernels read them (fused_infer/pse_type.py): with pseType 0 the call is V4's."""
    select(monkeypatch, cann_version=version, soc=soc)
    q, k, v = _inputs()
    plain = _call("FusedInferAttentionScoreV5", q, k, v, nextTokens=0)
    for got, want in zip(_call("FusedInferAttentionScoreV5", q, k, v, nextTokens=0, **STARTS), plain):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("pse_type", [1, 2, 3, -1])
@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93"])
def test_atlas_a2_under_9_0_reads_no_pse_type(monkeypatch, soc, pse_type):
    """No A2/A3 tiling of 9.0.0 reads pse_type or the start indices: the pseShift is added as V4 adds it."""
    select(monkeypatch, cann_version="9.0.0", soc=soc)
    q, k, v = _inputs()
    pse = _pse(q, k)
    want = _call("FusedInferAttentionScoreV4", q, k, v, pseShiftOptional=pse)
    got = _call("FusedInferAttentionScoreV5", q, k, v, pseShiftOptional=pse, pseType=pse_type, **STARTS)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[0], _call("FusedInferAttentionScoreV4", q, k, v)[0])  # the pse is applied


@pytest.mark.parametrize("pse_type", [1, 2, -1])
def test_atlas_a2_under_9_1_refuses_pse_type_on_the_fia_v3_route_only(monkeypatch, pse_type):
    """FiaInfoParser::GetPseShiftFlag (9.1.0) runs on the FIA-V3 route alone; a pseShift makes this call a legacy
    GQA one (CheckGqaConstrain), which the PFA route takes without reading pseType."""
    select(monkeypatch, cann_version="9.1.0", soc="Ascend910B")
    q, k, v = _inputs()
    with pytest.raises(ae.AclnnError, match="The value of pse_type must be 0") as info:
        _call("FusedInferAttentionScoreV5", q, k, v, pseType=pse_type)
    assert info.value.code == TILING
    pse = _pse(q, k)
    want = _call("FusedInferAttentionScoreV4", q, k, v, pseShiftOptional=pse)
    for a, b in zip(_call("FusedInferAttentionScoreV5", q, k, v, pseShiftOptional=pse, pseType=pse_type), want):
        np.testing.assert_array_equal(a, b)


def _int8_kv(k, v):
    """An INT8 key/value with per-channel scales: Ascend950's IFA route."""
    scale = np.full((2, 2, 1, 128), 0.05, np.float16)  # [2 (key, value), N2, 1, D]
    return (np.clip(np.rint(t / 0.05), -127, 127).astype(np.int8) for t in (k, v)), dict(antiquantScale=scale)


@pytest.mark.parametrize("antiquant", [False, True], ids=["pfa_route", "ifa_route"])
@pytest.mark.parametrize(
    "version,pse_type,code,message",
    [
        ("9.0.0", 1, TILING, r"PseType\(1\) is not support, pseType must be 0/2/3"),
        ("9.0.0", -1, TILING, r"PseType\(-1\) is not support"),
        ("9.0.0", 2, TILING, "pseShift shape is null"),  # the alibi's slopes (test_..._alibi.py)
        ("9.0.0", 3, TILING, "pseShift shape is null"),
        ("9.1.0", 1, TILING, "The value of pse_type must be 0"),
        ("9.1.0", 2, TILING, "The value of pse_type must be 0"),
    ],
)
def test_pse_type_on_ascend950(monkeypatch, antiquant, version, pse_type, code, message):
    select(monkeypatch, cann_version=version, soc="Ascend910_95")
    q, k, v = _inputs(s1=1 if antiquant else 37)
    extra = {}
    if antiquant:
        (k, v), extra = _int8_kv(k, v)
        extra["antiquantScaleOptional"] = extra.pop("antiquantScale")
    _call("FusedInferAttentionScoreV5", q, k, v, **extra)  # the call itself runs
    with pytest.raises(ae.AclnnError, match=message) as info:
        _call("FusedInferAttentionScoreV5", q, k, v, pseType=pse_type, **extra)
    assert info.value.code == code


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "8.5.0"])
def test_v5_is_absent_before_9(monkeypatch, version):
    select(monkeypatch, cann_version=version)
    with pytest.raises(ae.AclnnError, match=f"not part of CANN {version}"):
        _call("FusedInferAttentionScoreV5", *_inputs())
