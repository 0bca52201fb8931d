"""aclnnFlashAttentionScoreGradV4 (CANN 9.0.0 on): V2's, V3's and the Unpadding entry points' maths through V4's one
call, against torch.autograd and bit for bit against the entry points it stands for; seed and offset drawing the
Ascend950 keep mask; the sink and softmaxInLayout as each release hands them to the L0 op.

Source: attention/flash_attention_score_grad/op_api/aclnn_flash_attention_score_grad.cpp
FlashAttentionScoreGradV4GetWorkspace at v9.0.0 (the L0 op gets dsink = nullptr and defaultSoftmaxInLayout) and at
branch 9.1.0 (sinkInOptionalCngs and softmaxInLayout), with seed, offset and outDtype in both."""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.kernels.flash_attention.dropout import packed_keep_mask
from aclnn_emu.pytest_plugin import select
from test_flash_attention_score_grad import MASK_2048, Case, assert_matches, assert_matches_torch

NULLPTR, NOT_EMULATED = 161001, 561003
GRADS = ("dqOut", "dkOut", "dvOut")


@pytest.fixture(params=["9.0.0", "9.1.0"])
def release(request, monkeypatch):
    select(monkeypatch, cann_version=request.param)
    return request.param


def _tensors(case):
    a = case.attrs
    return dict(
        query=case.q,
        keyIn=case.k,
        value=case.v,
        dy=case.dy,
        pseShiftOptional=a.get("pse"),
        dropMaskOptional=a.get("drop_mask"),
        attenMaskOptional=a.get("atten_mask"),
        softmaxMaxOptional=case.smax,
        softmaxSumOptional=case.ssum,
        attentionInOptional=case.out,
        prefixOptional=a.get("prefix"),
        scaleValue=float(a["scale"]),
        keepProb=float(a["keep_prob"]),
        preTokens=a.get("pre_tokens", 2147483647),
        nextTokens=a.get("next_tokens", 2147483647),
        headNum=case.n1,
        inputLayout=case.layout,
        sparseMode=a.get("sparse_mode", 0),
        pseType=a.get("pse_type", 1),
    )


def grad_v4(case, **extra):
    """V4 on `case`'s inputs: its result (dq, dk, dv, dqRope, dkRope, dpse, dsink)."""
    return ae.ops.FlashAttentionScoreGradV4(**{**_tensors(case), **extra})


def grad_v2(case):
    return ae.ops.FlashAttentionScoreGradV2(**_tensors(case))


@pytest.mark.parametrize(
    "dtype_name,layout,attrs",
    [
        ("bfloat16", "BSND", {}),
        ("float16", "BSH", {"sparse_mode": 3, "atten_mask": MASK_2048}),
        ("float32", "SBH", {"sparse_mode": 4, "atten_mask": MASK_2048, "pre_tokens": 7, "next_tokens": 2}),
        ("float16", "BNSD", {"keep_prob": 0.75}),
    ],
)
def test_v4_against_torch_autograd(release, dtype_name, layout, attrs):
    pytest.importorskip("torch")
    case = Case(dtype_name, layout, n1=4, n2=2, s1=40, s2=40, **attrs)
    assert_matches_torch(case, list(grad_v4(case))[:3])


@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
def test_v4_gives_v2s_bits(release, layout):
    case = Case("float16", layout, sparse_mode=2, atten_mask=MASK_2048, pse=None)
    got, want = grad_v4(case), grad_v2(case)
    for name in GRADS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


def test_v4_with_a_sink_gives_v3s_bits_from_9_1_0(monkeypatch):
    """9.1.0 passes sinkInOptional to the L0 op (CheckSinkOptionalInput first): dq/dk/dv and dsink as V3's."""
    select(monkeypatch, cann_version="9.1.0")
    case = Case("bfloat16", "BSND", n1=4, n2=2)
    sink = np.linspace(-1, 1, 4).astype(np.float32)
    got = grad_v4(case, sinkInOptional=sink)
    want = ae.ops.FlashAttentionScoreGradV3(sinkInOptional=sink, **_tensors(case))
    for name in (*GRADS, "dsinkOut"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


def test_v4_ignores_the_sink_under_9_0_0(monkeypatch, capfd):
    """v9.0.0 hands the L0 op a nullptr sink: the gradients are those without a sink; with a dsinkOut the result the
    op_api copies has no established shape (561003)."""
    select(monkeypatch, cann_version="9.0.0")
    case = Case("float16", "BSND")
    sink = np.ones(2, np.float32)
    no_dsink = ae.empty((0,), ae.DataType.ACL_FLOAT)  # PostFlashAttentionScoreGrad copies no [0] dsinkOut
    got = grad_v4(case, sinkInOptional=sink, dsinkOut=no_dsink)
    want = grad_v2(case)
    for name in GRADS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert "sinkInOptional is ignored" in capfd.readouterr().err
    with pytest.raises(ae.AclnnError) as info:
        grad_v4(case, sinkInOptional=sink)
    assert info.value.code == NOT_EMULATED


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_95"])
def test_v4_tnd_gives_the_unpadding_bits(release, monkeypatch, soc):
    """TND with lengths runs the variable-length path, as UnpaddingScoreGradV2 does (V4 passes pseType; no rope)."""
    select(monkeypatch, cann_version=release, soc=soc)
    rng = np.random.default_rng(3)
    cu_q, cu_kv, n1, n2, d = [16, 40, 77], [24, 50, 95], 4, 2, 32
    q, dy = (rng.standard_normal((cu_q[-1], n1, d)).astype(np.float16) for _ in range(2))
    k, v = (rng.standard_normal((cu_kv[-1], n2, d)).astype(np.float16) for _ in range(2))
    common = dict(
        attenMaskOptional=MASK_2048,
        actualSeqQLenOptional=cu_q,
        actualSeqKvLenOptional=cu_kv,
        scaleValue=0.125,
        headNum=n1,
        inputLayout="TND",
        sparseMode=3,
    )
    fwd = ae.ops.FlashAttentionVarLenScore(q, key=k, value=v, **common)
    stats = dict(
        softmaxMaxOptional=fwd.softmaxMaxOut,
        softmaxSumOptional=fwd.softmaxSumOut,
        attentionInOptional=fwd.attentionOutOut,
    )
    got = ae.ops.FlashAttentionScoreGradV4(q, keyIn=k, value=v, dy=dy, **stats, **common)
    want = ae.ops.FlashAttentionUnpaddingScoreGradV2(q, keyIn=k, value=v, dy=dy, **stats, **common)
    for name in GRADS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


def test_v4_seed_and_offset_draw_the_ascend950_keep_mask(release, monkeypatch):
    """arch35 ProcessDropoutInfo reads V4's seed and offset attributes for the mask the kernel draws (keepProb < 1,
    no dropMask), where the other entry points pass 0 and 0."""
    select(monkeypatch, cann_version=release, soc="Ascend910_95")
    b, n1, s1, s2 = 2, 2, 48, 37
    case = Case("float16", "BSH", b=b, n1=n1, s1=s1, s2=s2, keep_prob=0.8,
                drop_mask=packed_keep_mask(1234, 64, b * n1 * s1, s2, 0.8))  # fmt: skip
    want = case.golden()
    del case.attrs["drop_mask"]
    got = grad_v4(case, seed=1234, offset=64)
    assert_matches(case, [getattr(got, name) for name in GRADS], want)
    zero_seed = grad_v4(case)
    assert not np.array_equal(zero_seed.dqOut, got.dqOut)  # the seed changes the mask


@pytest.mark.parametrize("out_dtype", [0, 1, 7])
def test_v4_out_dtype_is_read_for_quant_queries_only(release, out_dtype):
    """InferDataType4FlashAttentionScoreGrad and arch35 ProcessQuantInfo read outDtype for FP8/HiFloat8 queries
    only: a float query's gradients keep its dtype and bits."""
    case = Case("bfloat16", "BNSD")
    got = grad_v4(case, outDtype=out_dtype)
    for name, want in zip(GRADS, (case.q, case.k, case.v)):
        assert getattr(got, name).dtype == want.dtype
    np.testing.assert_array_equal(got.dqOut, grad_v2(case).dqOut)


def test_v4_same_as_input_under_9_0_0_reads_the_statistics_token_by_token(monkeypatch, capfd):
    """v9.0.0 passes defaultSoftmaxInLayout (""): a caller's same_as_input is not read."""
    select(monkeypatch, cann_version="9.0.0")
    case = Case("float16", "BSND")
    got = grad_v4(case, softmaxInLayout="same_as_input")
    np.testing.assert_array_equal(got.dqOut, grad_v2(case).dqOut)
    assert "softmaxInLayout 'same_as_input' is ignored" in capfd.readouterr().err


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "8.5.0"])
def test_v4_is_absent_before_9(monkeypatch, version):
    select(monkeypatch, cann_version=version)
    with pytest.raises(ae.AclnnError, match=f"not part of CANN {version}") as info:
        grad_v4(Case("float16", "BNSD"))
    assert info.value.code == NOT_EMULATED


def test_v4_dequant_scales_are_not_emulated(release):
    with pytest.raises(ae.AclnnError) as info:
        grad_v4(Case("float16", "BNSD"), dScaleDyOptional=np.ones(1, np.float32))
    assert info.value.code == NOT_EMULATED
