"""aclnnFusedInferAttentionScoreV5 (CANN 9.0.0 on): V4's inner call with qStartIdx, kvStartIdx and pseType, which V4
passes as NULL, NULL and 0 (op_api aclnn_fused_infer_attention_score_v5.cpp / _v4.cpp at v9.0.0 and branch 9.1.0).
With those values V5 computes V4's bits on every chip; on Ascend950 under 9.x it is the entry point left (V1-V4
return 361001 there)."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.pytest_plugin import select

NOT_EMULATED, WITHDRAWN = 561003, 361001


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


@pytest.mark.parametrize("extra", [dict(pseType=1), dict(qStartIdxOptional=[0]), dict(kvStartIdxOptional=[3])])
def test_v5s_own_parameters_are_not_emulated(monkeypatch, extra):
    select(monkeypatch, cann_version="9.0.0", soc="Ascend910B")
    with pytest.raises(ae.AclnnError) as info:
        _call("FusedInferAttentionScoreV5", *_inputs(), **extra)
    assert info.value.code == NOT_EMULATED


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "8.5.0"])
def test_v5_is_absent_before_9(monkeypatch, version):
    select(monkeypatch, cann_version=version)
    with pytest.raises(ae.AclnnError, match=f"not part of CANN {version}"):
        _call("FusedInferAttentionScoreV5", *_inputs())
