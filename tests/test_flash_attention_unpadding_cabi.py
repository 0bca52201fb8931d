"""The FlashAttentionScoreGrad entry points beside V2 through the C ABI (tests/c/flash_attention_unpadding_rules.cpp):
aclnnFlashAttentionScoreGrad (V1), V3 and aclnnFlashAttentionUnpaddingScoreGrad V1-V5, every rule of their own
op_api, once per chip family. Source: ops-transformer 8.5.0-beta.1
attention/flash_attention_score_grad/op_api/aclnn_flash_attention_score_grad.cpp (op_api below) and the FAG
tilings (every L0 failure is 161001)."""

import pytest

import cabi
from aclnn_emu import versions

NULLPTR, INVALID = 161001, 161002
UNPADDINGS = ("Unpadding", "UnpaddingV2", "UnpaddingV3", "UnpaddingV4", "UnpaddingV5")
NULLS = ("query", "key", "value", "dy", "attentionIn", "dqOut", "dkOut", "dvOut", "workspaceSize", "executor")
# op_api isSupportMultiInput of the backward returns its own codes: nullptr-type failures (one rope
# without the other, no attenMask) are 161001, the rest 161002; InvalidTensorDimCheck (rope rank) 161002.
ROPE = {
    "query_rope_only": NULLPTR,
    "rank": INVALID,
    "wider_than_d": INVALID,
    "fp16": INVALID,
    "prefix_mode": INVALID,
    "no_mask": NULLPTR,
    "dropout": INVALID,
    "keep_prob": INVALID,
    "padded_d": INVALID,
}


def _expected():
    codes = {
        "Grad.ok.bsnd": 0,
        "GradV3.ok.sink": 0,
        # op_api aclnnFlashAttentionScoreGradGetWorkspaceSize: the null checks, then headNum <= 0
        **{f"Grad.null.{name}": NULLPTR for name in NULLS},
        "Grad.head_num.zero": INVALID,
        "Grad.tiling.tnd_without_lengths": NULLPTR,
        # op_api InvalidTensorDimCheck: sinkIn and dsinkOut must be 1-D
        "GradV3.sink.rank": INVALID,
        "GradV3.dsink.rank": INVALID,
        "UnpaddingV5.sink.rank": INVALID,
        # 8.5.0 op_api FlashAttentionScoreGradV5GetWorkspace (V3, UnpaddingV5): a sink with an fp32 query
        "GradV3.sink.fp32_query": INVALID,
        "UnpaddingV5.sink.fp32_query": INVALID,
        # the arch32 tiling refuses a non-FLOAT sink; Ascend910_95's ignores the sink (tnd.SINK_IGNORED)
        "GradV3.sink.fp16": NULLPTR,
        "GradV3.sink.size": NULLPTR,
        # op_api PostFlashAttentionScoreGrad: the ViewCopy of a result into an output of another shape fails
        "UnpaddingV5.out.dsink_shape": NULLPTR,
        "UnpaddingV5.out.dq_rope_shape": NULLPTR,
        "UnpaddingV4.ok.same_as_input": 0,
        # tiling CheckTndShapeValid (the arch32 TND tilings alike): softmaxMax/Sum [T1, N1, 8]
        "UnpaddingV4.softmax.shape": NULLPTR,
        "UnpaddingV4.softmax.shape_same_as_input": NULLPTR,
        # op_api aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize: softmaxInLayout "same_as_input" or ""
        "UnpaddingV4.softmax_layout.unknown": INVALID,
        # its null check joins the conditions with ||: one nullptr passes it (the device then dereferences
        # it); aclnn-emu returns 161001 with a portability warning
        "UnpaddingV4.null.all_but_dq_present": NULLPTR,
        "UnpaddingV3.ok.rope": 0,
        "UnpaddingV3.ok.rope_d64": 0,
        "UnpaddingV5.ok.rope_sink": 0,
    }
    for entry in UNPADDINGS:
        codes.update(
            {
                f"{entry}.ok.tnd": 0,
                f"{entry}.ok.causal": 0,
                # op_api aclnnFlashAttentionUnpaddingScoreGrad*GetWorkspaceSize: strcmp(inputLayout, "TND")
                # comes first, before the null checks
                f"{entry}.layout.bsnd": INVALID,
                f"{entry}.layout.null_query_bsnd": INVALID,
                f"{entry}.null.query_tnd": NULLPTR,
                f"{entry}.head_num.zero": INVALID,
                f"{entry}.tiling.seq_null": NULLPTR,
                f"{entry}.tiling.seq_sizes_differ": NULLPTR,
                # every length 0: a run (branch 9.1.0's A2/A3 tiling takes its empty-output path,
                # flash_attention_score_grad_tiling.cpp IsTndAllSeqLenZero)
                f"{entry}.ok.all_lengths_zero": 0,
                # cumulative lengths that decrease: how the kernels read them is not established
                f"{entry}.tiling.eod_nonzero": 561003,
                # tiling ProcessPseInfo (arch32 s1s2_bn2gs1s2 / s1s2_bn2): a 1-D pse of N1*T2 or N1*sum(S1*S2),
                # else 4-D [1|B, N1, 1024, maxS2] with causal tokens; the pse dtype is the query's
                f"{entry}.ok.pse_one_row": 0,
                f"{entry}.ok.pse_packed": 0,
                f"{entry}.ok.pse_one_row_of_key_t": 0,
                f"{entry}.pse.one_row_of_kv_sum": NULLPTR,
                f"{entry}.pse.length": NULLPTR,
                f"{entry}.pse.rank_2": NULLPTR,
                f"{entry}.pse.dtype": NULLPTR,
                f"{entry}.pse.alibi_not_causal": NULLPTR,
                f"{entry}.ok.pse_alibi": 0,
                # tiling ProcessTokensInfo (TND; arch35 CheckUnpadTokensInfo alike): -preTokens, -nextTokens
                # within the batch's lengths and preTokens + nextTokens > 0
                f"{entry}.ok.mode0_band": 0,
                f"{entry}.tokens.mode0_sum_not_positive": NULLPTR,
                f"{entry}.tokens.mode0_pre_past_s2": NULLPTR,
                f"{entry}.ok.mode0_pre_within_s2": 0,
                f"{entry}.tokens.mode0_empty_batch": NULLPTR,
                f"{entry}.tokens.mode4_next_past_s2": NULLPTR,
                f"{entry}.tokens.mode7_sum_not_positive": NULLPTR,
                # tiling CheckAttenMaskShape: 4-D [B, N1|1, ...] or [1, 1, ...], the last two maxS1 x maxS2;
                # B is the batch count without trailing batches whose lengths are both 0
                f"{entry}.ok.mask_one": 0,
                f"{entry}.ok.mask_per_batch": 0,
                f"{entry}.ok.mask_per_head": 0,
                f"{entry}.mask.heads": NULLPTR,
                f"{entry}.mask.rows": NULLPTR,
                f"{entry}.ok.mask_trailing_empty": 0,
                f"{entry}.mask.trailing_empty_counted": NULLPTR,
                # arch32 CheckAttenMaskShape: an uncompressed 4-D mask's last two dimensions are [maxS1, maxS2];
                # a 2-D one is [maxS1, maxS2] or [T1, T2]
                f"{entry}.mask.last_dims_wider": NULLPTR,
                f"{entry}.mask.two_d_other_shape": NULLPTR,
                f"{entry}.mask.two_d_read_past": NULLPTR,
                f"{entry}.mask.all_same_last_dims_wider": NULLPTR,
                f"{entry}.mask.all_same_too_small": NULLPTR,
                # arch32 ProcessTokensInfo (TND): mode 0 needs preTokens + nextTokens > 0 in every batch
                f"{entry}.tokens.all_same_mode0_sum_zero": NULLPTR,
                # arch32 VarLenSparseModeProcess (TND, with a mask): no mode 5
                f"{entry}.mask.all_same_prefix5_no_prefix": NULLPTR,
                f"{entry}.ok.all_same_prefix5": NULLPTR,
            }
        )
    for entry in ("UnpaddingV2", "UnpaddingV5"):
        codes.update(
            {
                f"{entry}.ok.pse_slopes": 0,
                # tiling ProcessPseInfo: slopes exactly [N1] or [B, N1]; no sparse mode 7; a pseType other
                # than 1 needs a pse
                f"{entry}.pse.slopes_size": NULLPTR,
                # [B, N1] slopes with a trailing empty batch: the arch32 B leaves it out (161001)
                f"{entry}.pse.slopes_trailing_empty": NULLPTR,
                f"{entry}.pse.slopes_mode7": NULLPTR,
                # op_host/arch32/flash_attention_score_grad_tiling_s1s2_bn2gs1s2.cpp ProcessPseInfo tests the
                # sparseMode attribute (ProcessSparseModeInfo reads it before looking at the mask), so without
                # an attenMask too: no mode 7; mode 8 needs S1 - S2 + qStartIdx - kvStartIdx = 0 in batch 0
                # (16 - 24 here) (Ascend910_95: ..._regbase.cpp ProcessInnerPseInfo alike)
                f"{entry}.pse.slopes_mode7_no_mask": NULLPTR,
                f"{entry}.pse.slopes_mode8_no_mask": NULLPTR,
                # ..._s1s2_bn2gs1s2_sab.cpp: the SameAb template (priority 15500, before S1s2Bn2gs1s2's 16000)
                # takes a non-FLOAT TND call averaging >= 1024 tokens per batch (IsCapable, isTndSABHit in
                # ..._tiling_common.cpp), and its ProcessPseInfo has no sparse-mode rules (arch35: 161001)
                f"{entry}.ok.pse_slopes_mode7_same_ab": 0,
                f"{entry}.pse.null_type0": NULLPTR,
                # pseType 5 without a pse: arch32 ProcessPseInfo (a pseType other than 1 needs a pse); the
                # arch35 ProcessPseInfo checks pseType < 4 first
                f"{entry}.pse.type_5_without_pse": NULLPTR,
            }
        )
    for entry in ("UnpaddingV3", "UnpaddingV5"):
        codes.update({f"{entry}.rope.{rule}": code for rule, code in ROPE.items()})
    return codes


EXPECTED = _expected()
# Ascend910_95, the TND pse: op_host/arch35/flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp ProcessPseInfo
# checks pseType < 4 first, with or without a pse, and no pseType without a pse; its 1-D pse is N1*t2 with t2 the last
# actualSeqKvLen (GetShapeAttrsInfo), not the key's rows.
ARCH35 = {f"{entry}.pse.null_type0": 0 for entry in ("UnpaddingV2", "UnpaddingV5")}
for entry in UNPADDINGS:
    ARCH35.update({f"{entry}.ok.pse_one_row_of_key_t": NULLPTR, f"{entry}.pse.one_row_of_kv_sum": 0})
# ... and its ProcessInnerPseInfo compares [B, N1] slopes with a B that counts every batch (GetShapeAttrsInfo)
ARCH35.update({f"{entry}.pse.slopes_trailing_empty": 0 for entry in ("UnpaddingV2", "UnpaddingV5")})
# ... before the shape, on the sparseMode attribute, with no SameAb template: mode 7 fails
ARCH35.update({f"{entry}.ok.pse_slopes_mode7_same_ab": NULLPTR for entry in ("UnpaddingV2", "UnpaddingV5")})
# A TND mask on Ascend910_95: op_host/arch35/flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp
# SetAttenMaskShapeType checks a 4-D mask's dimensions 0 and 1 only, against a B that counts every batch
# (GetShapeAttrsInfo: b = the lengths' count), so the trailing empty batch counts, and no 2-D shape; its
# CheckAttenMaskShape skips TND. The kernels read batch b's rows the mask's last dimension apart (attenmask.h
# ComputeOffsetForNoCompress): a mask they would read past the end of is refused (161001, rule
# refused.tnd_mask_short: mask.rows, two_d_read_past). With every batch of the same lengths (isAllSame,
# ProcessSparseModeInfo) the layout becomes BSND: CheckAttenMaskShape then needs rows x columns >= S1 x S2, and
# ProcessTokensInfo checks the pad scene (preTokens + nextTokens >= 0).
for entry in UNPADDINGS:
    ARCH35.update(
        {
            f"{entry}.ok.mask_trailing_empty": NULLPTR,
            f"{entry}.mask.trailing_empty_counted": 0,
            f"{entry}.mask.last_dims_wider": 0,
            f"{entry}.mask.two_d_other_shape": 0,
            f"{entry}.mask.all_same_last_dims_wider": 0,
            f"{entry}.tokens.all_same_mode0_sum_zero": 0,
            # ..._regbase.cpp SetPrefixSparseParams only warns about a missing prefix, but the BSND kernels'
            # CheckIsValidBlock (op_kernel/arch35/flash_attention_score_grad_kernel_base.h) reads prefixN[b]
            # (refused.tnd_prefix_short)
            f"{entry}.ok.all_same_prefix5": 0,
        }
    )
BY_FAMILY = {
    "Ascend910B": EXPECTED,
    "Ascend910_93": EXPECTED,
    "Ascend910_95": {**EXPECTED, **ARCH35, "GradV3.sink.fp16": 0, "GradV3.sink.size": 0},
}
# Where another CANN release answers differently (the tables above are 8.5.0's; aclnn_emu/versions.py declares
# each rule), at attention/flash_attention_score_grad/op_api/aclnn_flash_attention_score_grad.cpp of its ref:
# 8.5.0-beta.1 has no fp32-query-with-sink check (FlashAttentionScoreGradV5GetWorkspace from v8.5.0 on);
BETA_1 = {"GradV3.sink.fp32_query": 0, "UnpaddingV5.sink.fp32_query": 0}
# 9.0.0 and 9.1.0 GetInputShapeInfo, CheckDimT, on Atlas A2/A3 only (StrideLimited): TND without lengths;
TND_LENGTHS = {
    "Grad.tiling.tnd_without_lengths": INVALID,
    **{f"{entry}.tiling.seq_null": INVALID for entry in UNPADDINGS},
}
# 9.1.0 InputOutputDtypeAndShapeCheck, which every entry point runs after its headNum check: the sink dtype,
# dsinkOut and dqRopeOut shaped like their inputs.
IO_CHECK = {
    "GradV3.sink.fp16": INVALID,
    "UnpaddingV5.out.dsink_shape": INVALID,
    "UnpaddingV5.out.dq_rope_shape": INVALID,
}

# 9.1.0 op_host/arch22 ProcessPseInfo (..._s1s2_bn2gs1s2.cpp, ..._sab.cpp; ..._s1s2_bn2.cpp GetPseInfo): a
# one-row-per-head pse is N1 x the key lengths' sum long, no longer N1 x T2 (T2 56, the lengths' sum 48).
PSE_ROW = {
    **{f"{entry}.ok.pse_one_row_of_key_t": NULLPTR for entry in UNPADDINGS},
    **{f"{entry}.pse.one_row_of_kv_sum": 0 for entry in UNPADDINGS},
}

# 9.0.0 and 9.1.0 on Ascend950, op_host/arch35 GetShapeAttrsInfo (..._s1s2_bn2gs1s2_regbase.cpp, then
# ..._normal_regbase.cpp): after a cumulative length decreases the later ones must be 0 (EOD); a rope head dim
# other than 64 is refused (8.5 returned false, i.e. success); CheckUnpadTokensInfo skips an empty batch.
ARCH35_9 = {
    # common_regbase.cpp CheckTndShapeValid no longer checks the softmax shapes: the kernels' reads are not established
    "UnpaddingV4.softmax.shape": 561003,
    "UnpaddingV4.softmax.shape_same_as_input": 561003,
    **{f"{entry}.tiling.eod_nonzero": NULLPTR for entry in UNPADDINGS},
    **{f"{entry}.tokens.mode0_empty_batch": 0 for entry in UNPADDINGS},
    "UnpaddingV3.ok.rope": NULLPTR,
    "UnpaddingV5.ok.rope_sink": NULLPTR,
}
# 9.1.0 on Ascend950, ..._common_regbase.cpp ProcessSinkInfo: the sink is read, [N1] FLOAT;
# CheckSoftmaxMaxSumTndShape checks [T1, N1, 8] again with softmaxInLayout same_as_input.
ARCH35_9_1 = {"GradV3.sink.size": NULLPTR, "UnpaddingV4.softmax.shape_same_as_input": NULLPTR}


def release_expected(family: str, version: str) -> dict:
    codes = dict(BY_FAMILY[family])
    if version == "8.5.0-beta.1":
        codes.update(BETA_1)
    if version.startswith("9."):
        codes.update(ARCH35_9 if family == "Ascend910_95" else TND_LENGTHS)
    if version == "9.1.0":
        codes.update(IO_CHECK)
        codes.update(ARCH35_9_1 if family == "Ascend910_95" else PSE_ROW)
    return codes


@pytest.fixture(scope="module")
def rules_run(family):
    return cabi.compile_and_run("flash_attention_unpadding_rules.cpp", env={"ACLNN_EMU_SOC": family})


def test_every_rule_returns_the_source_code(rules_run, family):
    assert rules_run.returncode == 0, rules_run.stdout + rules_run.stderr
    assert cabi.rule_codes(rules_run.stdout) == BY_FAMILY[family]


@pytest.mark.parametrize("version", [v for v in versions.ORDER if v != versions.DEFAULT])
def test_every_rule_per_release(family, version):
    assert cabi.release_codes("flash_attention_unpadding_rules.cpp", family, version) == release_expected(
        family, version
    )


def test_v4_null_check_is_an_inferred_rule():
    """A nullptr dqOut passes V4's ||-joined null check on the device and is then dereferenced:
    aclnn-emu warns and returns 161001 (also under ACLNN_EMU_STRICT=1)."""
    result = cabi.compile_and_run("flash_attention_unpadding_rules.cpp", "UnpaddingV4.null.all_but_dq_present")
    assert cabi.rule_codes(result.stdout) == {"UnpaddingV4.null.all_but_dq_present": NULLPTR}
    assert "inferred.null_outputs_v4" in result.stderr
