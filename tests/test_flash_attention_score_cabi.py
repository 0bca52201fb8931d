"""aclnnFlashAttentionScoreV2 through the C ABI: the status code of every validation rule (op_api
161001/161002; infershape, kernel selection and tiling 161001 through the ViewCopy of the nullptr
L0 result) and valid baselines that run both phases, once per chip family."""

import pytest

import cabi

NULLPTR, INVALID = 161001, 161002
OK = [
    "ok.layout.BSH",
    "ok.layout.SBH",
    "ok.layout.BSND",
    "ok.layout.BNSD",
    "ok.dtype.bf16",
    "ok.dtype.fp32",
    "ok.mode0.mask_band",
    "ok.mode1",
    "ok.mode2",
    "ok.mode3",
    "ok.mode4",
    "ok.mode5",
    "ok.mode6",
    "ok.mode_negative_is_a_full_mask",
    "ok.mode9_without_mask",
    "ok.pse1",
    "ok.pse0.row_broadcast",
    "ok.pse_fp32_with_fp16_query_type2",
    "ok.pse3",
    "ok.dropout",
    "ok.keep_prob_without_drop_mask",
    "ok.padding_mask_ignored",
    "ok.inner_precise_2",
    "ok.tokens_int64",
    "ok.empty_key",
    "ok.all_out_empty",
    "ok.softmax_out_null",
    "out.attention_out_dtype",
    "release.pse_like_query_not_out",
    "tiling.drop_mask_keep_prob_1",
    "chip.mode7_without_mask",
    "chip.start_idx_beyond_int32",
    "chip.start_idx_int32_edge",
    "chip.value_empty",
]
EXPECTED = {
    **{rule: 0 for rule in OK},
    **{
        f"null.{name}": NULLPTR
        for name in (
            "query",
            "key",
            "value",
            "inputLayout",
            "softmaxMaxOut",
            "softmaxSumOut",
            "attentionOutOut",
            "workspaceSize",
            "executor",
        )
    },
    **{
        rule: INVALID
        for rule in (
            "format.query_nz",
            "dtype.key_mixed",
            "dtype.query_int8",
            "dtype.pse_type2_null",
            "dtype.pse_type2_fp16",
            "dtype.pse_type1_fp32",
            "head_num.zero",
            "shape.layout_lower_case",
            "shape.layout_rank",
            "shape.d_zero",
            "shape.qd_kd",
            "shape.vd",
            "shape.d_max",
            "shape.kv_rank",
            "release.layout_lower_case_bsh",
            "release.pse_like_out",
            "release.query_hifloat8",
        )
    },
    **{
        rule: NULLPTR
        for rule in (
            "select.atten_mask_fp16",
            "select.drop_mask_int8",
            "select.padding_mask_fp32",
            "tiling.bsh_batch",
            "tiling.bnsd_d",
            "tiling.keep_prob_zero",
            "tiling.keep_prob_above_one",
            "tiling.pse_type_4",
            "tiling.tnd",
            "tiling.h1_heads",
            "tiling.head_num",
            "tiling.gqa",
            "tiling.pse_null_type0",
            "tiling.pse_inner_rank",
            "tiling.pse_inner_size",
            "tiling.pse_rank",
            "tiling.pse_batch",
            "tiling.pse_shape",
            "tiling.pse_alibi_short_s1",
            "tiling.mask_shape4",
            "tiling.mask_shape2",
            "tiling.mask_rank3",
            "tiling.mask_compressed",
            "tiling.mask_compressed_prefix",
            "tiling.drop_size",
            "tiling.tokens_both_negative",
            "tiling.tokens_no_block",
            "tiling.tokens_band_mode4",
            "tiling.sparse_mode_7",
            "tiling.prefix_missing",
            "tiling.prefix_range",
            "tiling.prefix_mode5_mask",
            "tiling.pse_inner_s1_s2",
            "tiling.pse_alibi_not_causal",
            "out.softmax_max_shape",
            "out.attention_out_shape",
        )
    },
}


# Ascend910_95: the op_api (aclnn_flash_attention_score.cpp aclnnFlashAttentionScoreV2GetWorkspaceSize)
# skips CheckFormat; flash_attention_score_tiling.cpp TilingFlashAttentionScore runs IsEmptyInputRegbase
# and the arch35 templates (op_host/arch35/flash_attention_score_tiling_regbase.cpp and _basic.cpp).
ARCH35 = {
    # aclnnFlashAttentionScoreV2GetWorkspaceSize: CheckFormat only when the SocVersion is not ASCEND910_95
    "format.query_nz": 0,
    # ..._regbase.cpp AnalyzeDropOptionalInput: "Dropmask parameter is invalid, please check keepProb."
    "tiling.drop_mask_keep_prob_1": NULLPTR,
    # ..._regbase.cpp AnalyzePseOptionalInput has no "PseInput is nullptr, but pseType is not default" check
    "tiling.pse_null_type0": 0,
    # ..._basic.cpp SetPseAlibiParamsRegbase returns before any check for pseType 2/3: S1 != S2 runs
    "tiling.pse_inner_s1_s2": 0,
    # ..._regbase.cpp GetSparseInfo: "Not support sparse mode" before the no-attenMask return
    "ok.mode9_without_mask": NULLPTR,
    "chip.mode7_without_mask": NULLPTR,
    # ..._regbase.cpp SetQKVStartIdx: kvStartIdx - qStartIdx must fit int32, with or without pse
    "chip.start_idx_beyond_int32": NULLPTR,
}
BY_FAMILY = {"Ascend910B": EXPECTED, "Ascend910_93": EXPECTED, "Ascend910_95": {**EXPECTED, **ARCH35}}


@pytest.fixture(scope="module")
def rules_run(family):
    return cabi.compile_and_run("flash_attention_score_rules.cpp", env={"ACLNN_EMU_SOC": family})


def test_every_rule_returns_the_source_code(rules_run, family):
    assert rules_run.returncode == 0, rules_run.stdout + rules_run.stderr
    assert cabi.rule_codes(rules_run.stdout) == BY_FAMILY[family]


# Where another CANN release (ACLNN_EMU_CANN_VERSION; the tables above are 8.5.0's) answers differently, with
# that release's source, attention/flash_attention_score/op_api/aclnn_flash_attention_score.cpp at its ref
# (aclnn_emu/versions.py declares each rule).
# 9.0.0 and 9.1.0 InputDtypeCheck: a pseType 0/1 pse must have attentionOut's dtype (was query's); the
# fp16/bf16/fp32 range of query/key/value is checked on DAV_2201 only (StrideLimited()), so on Ascend950 an int8
# query meets the L0 kernel selection (161001) and a HiFloat8 one the ascend950 OpDef's quant kernels, which V2
# gives no dequant scales (not established, 561003).
PSE_LIKE_OUT = {"release.pse_like_out": 0, "release.pse_like_query_not_out": INVALID}
RANGE_ON_A2A3_ONLY = {"dtype.query_int8": NULLPTR, "release.query_hifloat8": 561003}
# 9.1.0 AnalysisAxis upper-cases inputLayout (every chip): lower-case layouts run; on DAV_2201,
# aclnnFlashAttentionScoreV2GetWorkspaceSize's InputOutputDtypeCheck refuses an attentionOut dtype unlike query's.
UPPER_CASED = {"shape.layout_lower_case": 0, "release.layout_lower_case_bsh": 0}
QUERY_IS_OUT = {"out.attention_out_dtype": INVALID, "release.pse_like_out": INVALID}


def release_expected(family: str, version: str) -> dict:
    codes = dict(BY_FAMILY[family])
    if version.startswith("9."):
        codes.update(PSE_LIKE_OUT)
        if family == "Ascend910_95":
            codes.update(RANGE_ON_A2A3_ONLY)
    if version == "9.1.0":
        codes.update(UPPER_CASED)
        if family != "Ascend910_95":
            codes.update(QUERY_IS_OUT)
    return codes


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "9.0.0", "9.1.0"])
def test_every_rule_per_release(family, version):
    assert cabi.release_codes("flash_attention_score_rules.cpp", family, version) == release_expected(family, version)


def test_output_dtype_mismatch_is_an_inferred_rule():
    """attentionOut in another dtype than query fails ViewCopy on hardware (inferred): a warning by
    default, 161001 under ACLNN_EMU_STRICT=1."""
    strict = cabi.compile_and_run(
        "flash_attention_score_rules.cpp", "out.attention_out_dtype", env={"ACLNN_EMU_STRICT": "1"}
    )
    assert cabi.rule_codes(strict.stdout) == {"out.attention_out_dtype": NULLPTR}
