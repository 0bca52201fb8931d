"""aclnnFlashAttentionScoreV4 through the C ABI, once per chip family under each CANN release.

Source at v9.0.0 and at 9.1.0 (the same function in both): attention/flash_attention_score/op_api/
aclnn_flash_attention_score.cpp aclnnFlashAttentionScoreV4GetWorkspaceSize: CheckFaParam (nulls, 161001), the
empty-output shortcut, InputDtypeCheck and AnalysisInput (161002); no CheckFormat on any chip; then the L0 op,
whose failures reach the caller as the ViewCopy of a nullptr output (161001)."""

import pytest

import cabi

NULLPTR, INVALID, NOT_EMULATED = 161001, 161002, 561003
SOURCE = "flash_attention_score_v4_rules.cpp"
NULLS = ("query", "key", "value", "inputLayout", "softmaxMaxOut", "softmaxSumOut", "attentionOutOut")
EXPECTED = {
    **{rule: 0 for rule in ("ok.bnsd", "ok.bsh", "ok.tnd", "ok.tnd_same_as_input", "ok.out_dtype_1", "ok.seed_offset")},
    **{f"null.{name}": NULLPTR for name in (*NULLS, "workspaceSize", "executor")},
    # V4 never calls CheckFormat (V2/V3 do on DAV_2201): an NZ query runs as on Ascend910_95
    "format.query_nz": 0,
    # InputDtypeCheck, before the dequant scales reach the L0 op
    "dtype.key_mixed": INVALID,
    "dtype.key_mixed_before_dscale": INVALID,
    # AnalysisInput
    "head_num.zero": INVALID,
    # the arch32 tiling never reads out_dtype (flash_attention_score_tiling_general.cpp)
    "tiling.out_dtype_2": 0,
    # the TND tiling needs actual_seq_qlen/kvlen
    "tiling.tnd_without_lengths": NULLPTR,
    # both tilings read the lengths in their TND layout branch only (arch32 flash_attention_score_tiling_general.cpp,
    # arch35 flash_attention_score_tiling_regbase.cpp AnalyzeTndLayout)
    "ok.dense_lengths_ignored": 0,
    # not emulated (score/checks.py V4_PATHS)
    "gap.dscale": NOT_EMULATED,
    "gap.rope": NOT_EMULATED,
}
# op_host/arch35/flash_attention_score_tiling_regbase.cpp GetShapeAttrsInfo: "outDtype value is out of range"
ARCH35 = {"tiling.out_dtype_2": NULLPTR}


@pytest.mark.parametrize("version", ["9.0.0", "9.1.0"])
def test_every_rule_returns_the_source_code(family, version):
    expected = {**EXPECTED, **(ARCH35 if family == "Ascend910_95" else {})}
    assert cabi.release_codes(SOURCE, family, version) == expected


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "8.5.0"])
def test_absent_before_9(family, version):
    """The 8.5 headers declare no V4 (a program calling it does not link there): the one library exports it, and
    phase 1 refuses it under an 8.5 release (calls.py _declared), after the C boundary's own null checks of the
    workspaceSize and executor pointers."""
    codes = cabi.release_codes(SOURCE, family, version)
    assert codes == {
        rule: NULLPTR if rule in ("null.workspaceSize", "null.executor") else NOT_EMULATED for rule in EXPECTED
    }
