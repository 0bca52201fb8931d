"""aclnnFlashAttentionScoreV4 (CANN 9.0.0 on): the V3 and VarLen maths through V4's one call, against the float64
reference; the paths whose maths the emulator lacks refused (561003); absent before 9.0.0.

Source: attention/flash_attention_score/op_api/aclnn_flash_attention_score.cpp
aclnnFlashAttentionScoreV4GetWorkspaceSize at v9.0.0 and 9.1.0 (the same function in both): CheckFaParam, the
empty-output shortcut, InputDtypeCheck, AnalysisInput (no CheckFormat), then the L0 op with every input."""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
from aclnn_emu.pytest_plugin import select
from test_flash_attention_score import ACL, INT32_MAX, Case

INVALID, NOT_EMULATED, L0_FAILED = 161002, 561003, 161001


def run_v4(case, version="9.0.0", out_dtype=0, seed=0, offset=0, dscale=None, lengths=None, layout=None, **extra):
    """Phase 1 (and 2 on success) of V4 on `case`'s inputs; (status, softmaxMax, softmaxSum, attentionOut)."""
    q, k, v, attrs = case.q, case.k, case.v, case.attrs
    layout = layout or case.layout
    smax_shape, out_shape = extra.pop("shapes")
    smax, ssum = ae.empty(smax_shape, ae.DataType.ACL_FLOAT), ae.empty(smax_shape, ae.DataType.ACL_FLOAT)
    out = ae.empty(out_shape, extra.pop("out_acl", ACL[np.dtype(case.dtype)]))
    dev = [None if attrs.get(n) is None else ae.to_device(attrs[n]) for n in ("pse", "drop_mask", "atten_mask")]
    scale = None if dscale is None else ae.to_device(np.ones(dscale, np.float32))
    args = [
        ae.to_device(q), ae.to_device(k), ae.to_device(v), dev[0], dev[1], None, dev[2],
        None, None, scale, None, None,  # queryRope, keyRope, dScaleQ/K/V
        None, attrs.get("prefix"), *(lengths or (None, None)), None, None,
        float(attrs["scale"]), float(attrs.get("keep_prob", 1.0)), attrs.get("pre_tokens", INT32_MAX),
        attrs.get("next_tokens", INT32_MAX), case.n1, layout, 0, attrs.get("sparse_mode", 0), out_dtype,
        attrs.get("pse_type", 1), extra.pop("softmax_layout", ""), seed, offset, smax, ssum, None, out,
    ]  # fmt: skip
    try:
        ae.run("FlashAttentionScoreV4", *args)
    except ae.AclnnError as exc:
        return exc.code, str(exc), None, None  # the message in place of softmaxMax
    return 0, ae.numpy(smax), ae.numpy(ssum), ae.numpy(out)


def _bnsd(case):
    b, n1, s1, _ = case.q.shape
    return (b, n1, s1, 8), (b, n1, s1, case.v.shape[3])


@pytest.fixture(params=["9.0.0", "9.1.0"])
def release(request, monkeypatch):
    select(monkeypatch, cann_version=request.param)
    return request.param


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("out_dtype", [0, 1])
def test_v4_matches_the_reference(release, dtype_name, out_dtype):
    """outDtype only picks the output of an FP8/HiFloat8 query (op_api/flash_attention_score.cpp): a float query
    gives its own dtype either way."""
    case = Case(dtype_name, "BNSD", atten_mask=np.triu(np.ones((48, 40), np.uint8), 1), sparse_mode=0,
                pre_tokens=INT32_MAX, next_tokens=0)  # fmt: skip
    code, smax, ssum, out = run_v4(case, out_dtype=out_dtype, shapes=_bnsd(case))
    assert code == 0
    g_out, g_max, _, floor = case.golden()
    assert precision.failure(out, g_out, dtype_name, floor=floor) is None
    assert precision.failure(smax, g_max, "float32", bound=1e-4) is None


def test_v4_gives_what_v3_gives(release):
    case = Case("float16", "BNSD", keep_prob=0.75)
    code, smax, ssum, out = run_v4(case, shapes=_bnsd(case))
    assert code == 0
    w_max, w_sum, w_out = case.run()  # V2's path (V3 adds only the sink and start indices)
    assert np.array_equal(out, w_out) and np.array_equal(smax, w_max) and np.array_equal(ssum, w_sum)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_v4_seed_and_offset_draw_the_arch35_keep_mask(chip, release, monkeypatch):
    """arch35 flash_attention_score_tiling_regbase.cpp GetShapeAttrsInfo reads V4's seed and offset attributes
    for the mask the kernel draws (keepProb < 1, no dropMask), where V1-V3 pass 0 and 0."""
    from aclnn_emu.kernels.flash_attention.dropout import keep_mask

    select(monkeypatch, cann_version=release, soc="Ascend910_95")
    case = Case("float16", "BNSD", s1=24, s2=32, keep_prob=0.8)
    del case.attrs["drop_mask"]
    _, _, _, out = run_v4(case, seed=1234, offset=64, shapes=_bnsd(case))
    case.attrs["drop_mask"] = np.packbits(keep_mask(1234, 64, 2 * 2 * 24, 32, 0.8).reshape(-1), bitorder="little")
    g_out, _, _, floor = case.golden()
    assert precision.failure(out, g_out, "float16", floor=floor) is None
    del case.attrs["drop_mask"]
    _, _, _, zero_seed = run_v4(case, shapes=_bnsd(case))
    assert not np.array_equal(zero_seed, out)  # the seed changes the mask


@pytest.mark.parametrize(
    "chip,out_dtype,code",
    [("Ascend910B", 2, 0), ("Ascend910_95", 2, L0_FAILED), ("Ascend910_95", -1, L0_FAILED)],
    indirect=["chip"],
)
def test_v4_out_dtype_range_is_checked_by_the_arch35_tiling_only(chip, release, monkeypatch, out_dtype, code):
    """arch35 flash_attention_score_tiling_regbase.cpp GetShapeAttrsInfo: outDtype outside [0, 2) fails the tiling,
    which the op_api returns as 161001 (the nullptr L0 output); the arch32 tiling never reads outDtype."""
    select(monkeypatch, cann_version=release, soc=chip)
    case = Case("float16", "BNSD")
    assert run_v4(case, out_dtype=out_dtype, shapes=_bnsd(case))[0] == code


def test_v4_dequant_scales_are_not_emulated(release):
    case = Case("float16", "BNSD")
    assert run_v4(case, dscale=(1,), shapes=_bnsd(case))[0] == NOT_EMULATED


def test_v4_lengths_with_a_dense_layout_are_ignored(release):
    """Both tilings read actual_seq_qlen/kvlen in their TND layout branch only (arch32
    flash_attention_score_tiling_general.cpp, arch35 flash_attention_score_tiling_regbase.cpp AnalyzeTndLayout)."""
    case = Case("float16", "BNSD")
    code, smax, ssum, out = run_v4(case, lengths=((5, 9), (3, 4)), shapes=_bnsd(case))
    assert code == 0
    _, w_max, w_sum, w_out = run_v4(case, shapes=_bnsd(case))
    assert np.array_equal(out, w_out) and np.array_equal(smax, w_max)


def test_v4_checks_dtypes_before_the_l0_op(release):
    """InputDtypeCheck (161002) before the dequant scales reach the L0 op."""
    case = Case("float16", "BNSD")
    case.k = case.k.astype(np.float32)
    assert run_v4(case, dscale=(1,), shapes=_bnsd(case))[0] == INVALID


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "8.5.0"])
def test_v4_is_absent_before_9(monkeypatch, version):
    """The 8.5 headers declare no V4: phase 1 refuses it as not part of the release."""
    select(monkeypatch, cann_version=version)
    case = Case("float16", "BNSD")
    code, message, _, _ = run_v4(case, shapes=_bnsd(case))
    assert code == NOT_EMULATED and f"not part of CANN {version}" in message
