"""The FlashAttentionScore entry points beside V2 through the C ABI (tests/c/flash_attention_var_len_rules.cpp):
aclnnFlashAttentionScore (V1), V3 and aclnnFlashAttentionVarLenScore V1-V5, every rule of their own op_api
and of the TND tiling, once per chip family. Sources: ops-transformer 8.5.0-beta.1
attention/flash_attention_score/op_api/aclnn_flash_attention_score.cpp (abbreviated op_api below) and
op_host/arch32/flash_attention_score_tiling_general.cpp (tiling)."""

import pytest

import cabi

NULLPTR, INVALID = 161001, 161002
VAR_LENS = ("VarLen", "VarLenV2", "VarLenV3", "VarLenV4", "VarLenV5")
ROPE_RULES = (
    "query_rope_only",
    "wider_than_d",
    "fp16",
    "rope_fp16",
    "prefix_mode",
    "no_mask",
    "dropout",
    "keep_prob",
    "padded_d",
)
NULLS = (
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


def _expected():
    codes = {
        "Score.ok.bsnd": 0,
        "ScoreV3.ok.sink": 0,
        # op_api aclnnFlashAttentionScoreV3GetWorkspaceSize: a [0]-shaped sink is passed to L0 as nullptr
        "ScoreV3.ok.empty_sink": 0,
        "VarLenV3.ok.rope": 0,
        "VarLenV5.ok.rope_sink_tnd_softmax": 0,
        "VarLenV4.ok.same_as_input": 0,
        # tiling: only "same_as_input" with TND sets tndSoftmaxOut; any other string is the default layout
        "VarLenV4.ok.unknown_softmax_layout": 0,
        # op_api aclnnFlashAttentionScoreGetWorkspaceSize: CheckFaParam, then (L0 outputs checked for nullptr)
        **{f"Score.null.{name}": NULLPTR for name in NULLS},
        # tiling GetShapeAttrsInfo: TND needs actual sequence lengths, which V1 cannot pass
        "Score.tiling.tnd_without_lengths": NULLPTR,
        # op_api InputDtypeCheck
        "Score.dtype.int8": INVALID,
    }
    for entry in VAR_LENS:
        codes.update(
            {
                f"{entry}.ok.tnd": 0,
                f"{entry}.ok.causal": 0,
                # op_api aclnnFlashAttentionVarLenScore*GetWorkspaceSize: strcmp(inputLayout, "TND") after the
                # empty-output shortcut and CheckFaParam
                f"{entry}.layout.bsnd": INVALID,
                f"{entry}.layout.lower_case": INVALID,
                f"{entry}.layout.bsnd_all_out_empty": 0,
                f"{entry}.null.query_before_layout": NULLPTR,
                # tiling GetShapeAttrsInfo (TND branch) / GetActualSeqLenData: every L0 failure is 161001
                f"{entry}.tiling.seq_null": NULLPTR,
                f"{entry}.tiling.seq_sizes_differ": NULLPTR,
                f"{entry}.tiling.seq_past_t1": NULLPTR,
                f"{entry}.tiling.head_num": NULLPTR,
                # tiling CheckPretokenAndNexttoken (VarLenSparseModeProcess): per-batch invalid rows
                f"{entry}.tokens.mode3_s1_above_s2": NULLPTR,
                f"{entry}.tokens.mode4_negative_pre": NULLPTR,
                f"{entry}.tokens.mode7_positive_next": NULLPTR,
                f"{entry}.tokens.mode8_pre_below_s2": NULLPTR,
                f"{entry}.ok.mode8": 0,
                # tiling AnalyzeOptionalInput (TND): a pse told by dimension 0, N1*sum(S2) or N1*sum(S1*S2), or
                # [1|B, N1, 1024, maxS2]
                f"{entry}.ok.pse_one_row": 0,
                f"{entry}.ok.pse_packed": 0,
                f"{entry}.pse.shape": NULLPTR,
                # tiling FlashAttentionVarLenScoreTiling::SetPseAlibiParams: rank >= 2; the alibi form needs
                # equal lengths and a causal sparse type
                f"{entry}.pse.rank_1": NULLPTR,
                f"{entry}.pse.alibi_unequal": NULLPTR,
                f"{entry}.pse.alibi_not_causal": NULLPTR,
                f"{entry}.ok.pse_alibi": 0,
                # tiling GetSparseInfo (SparseNoMaskModeCheck): mode 0 with a mask, per batch
                f"{entry}.ok.mode0_band": 0,
                f"{entry}.tokens.mode0_negative_next": NULLPTR,
                f"{entry}.tokens.mode0_row_without_keys": NULLPTR,
                f"{entry}.tokens.mode0_band_gap": NULLPTR,
                # VarLenSparseModeProcess runs only with a mask on Atlas A2/A3
                f"{entry}.sparse.mode5_without_mask": 0,
                # tiling AnalyzeOptionalInput: a 4-D mask is [1|B, 1, maxS1, maxS2] or [B, N1, maxS1, maxS2];
                # rank 2 or 4
                f"{entry}.ok.mask_one": 0,
                f"{entry}.ok.mask_per_batch": 0,
                f"{entry}.ok.mask_per_head": 0,
                f"{entry}.mask.heads": NULLPTR,
                f"{entry}.mask.rows": NULLPTR,
                f"{entry}.mask.rank_3": NULLPTR,
            }
        )
    for entry in ("VarLenV2", "VarLenV5"):
        codes.update(
            {
                f"{entry}.ok.pse_slopes": 0,
                f"{entry}.ok.pse_slopes_equal": 0,
                # tiling AnalyzeOptionalInput: slopes of rank 1 or 2
                f"{entry}.pse.slopes_rank": NULLPTR,
                # tiling FlashAttentionVarLenScoreTiling::SetPseAlibiParams: no mode 7; mode 8 needs batch 0's
                # S1 - S2 + qStartIdx - kvStartIdx == 0
                f"{entry}.pse.slopes_mode7": NULLPTR,
                f"{entry}.pse.slopes_mode8": NULLPTR,
                # tiling AnalyzeOptionalInput: pseType other than 1 without a pse
                f"{entry}.pse.null_type0": NULLPTR,
            }
        )
    for entry in ("VarLenV3", "VarLenV5"):
        # op_api isSupportMultiInput, wrapped in CHECK_RET(..., ACLNN_ERR_PARAM_NULLPTR): 161001 for every rule
        codes.update({f"{entry}.rope.{rule}": NULLPTR for rule in ROPE_RULES})
    for entry in ("ScoreV3", "VarLenV5"):
        codes.update(
            {
                f"{entry}.sink.fp16": INVALID,  # op_api InputDtypeCheck: "The data type of sink ... should be fp32"
                f"{entry}.sink.size": NULLPTR,  # tiling: "Input sink shapeSize is invalid"
                f"{entry}.sink.rank": NULLPTR,  # tiling: "sink shape only support [n,]"
            }
        )
    return codes


EXPECTED = _expected()
# Ascend910_95: no arch35 tiling reads the sink (op_host/arch35/*: no sink input handling), so its
# size and rank are never checked and the call runs as without one (a warning says so).
ARCH35 = {f"{entry}.sink.{rule}": 0 for entry in ("ScoreV3", "VarLenV5") for rule in ("size", "rank")}
# Ascend910_95, the TND pse: op_host/arch35/flash_attention_score_tiling_regbase.cpp AnalyzePseOptionalInput has no
# check of a pseType without a pse; flash_attention_score_tiling_varlen.cpp SetPseAlibiParamsRegbase has no rank check
# (a 1-D pse passes) and refuses slopes unless every batch has S1 = S2 outside sparse mode 8.
ARCH35.update({f"{entry}.pse.null_type0": 0 for entry in ("VarLenV2", "VarLenV5")})
ARCH35.update({f"{entry}.ok.pse_slopes": NULLPTR for entry in ("VarLenV2", "VarLenV5")})
ARCH35.update({f"{entry}.pse.rank_1": 0 for entry in VAR_LENS})
# A 4-D TND mask runs on Ascend910_95 too, with the codes above: op_host/arch35/flash_attention_score_tiling_regbase.cpp
# Analyze4DimAttenOptionalInput accepts [1|B, 1, maxS1, maxS2] and [B, N1, maxS1, maxS2] only (161001 otherwise);
# its kernels read it with another row stride (tests/test_flash_attention_var_len_kernel.py). The arch35
# GetSparseInfo rejects mode 5 with or without a mask.
ARCH35.update({f"{entry}.sparse.mode5_without_mask": NULLPTR for entry in VAR_LENS})
BY_FAMILY = {"Ascend910B": EXPECTED, "Ascend910_93": EXPECTED, "Ascend910_95": {**EXPECTED, **ARCH35}}


@pytest.fixture(scope="module")
def rules_run(family):
    return cabi.compile_and_run("flash_attention_var_len_rules.cpp", env={"ACLNN_EMU_SOC": family})


def test_every_rule_returns_the_source_code(rules_run, family):
    assert rules_run.returncode == 0, rules_run.stdout + rules_run.stderr
    assert cabi.rule_codes(rules_run.stdout) == BY_FAMILY[family]


def test_the_sink_is_ignored_on_arch35_with_a_warning():
    result = cabi.compile_and_run(
        "flash_attention_var_len_rules.cpp", "ScoreV3.ok.sink", env={"ACLNN_EMU_SOC": "Ascend910_95"}
    )
    assert cabi.rule_codes(result.stdout) == {"ScoreV3.ok.sink": 0}
    assert "sinkOptional is ignored on Ascend910_95" in result.stderr
