"""aclnnIncreFlashAttentionV4 through the C ABI: every validation rule's status code, per chip.

Atlas A2 and A3 share the OpDef and IFATiling, so every code is the same on both. Ascend910_95
shares the OpDef (the generated entry point's codes) but runs IFATilingV2, which hands a FLOAT16/BF16
key to PromptFlashAttentionTilingV2: ON_ARCH35 lists every rule whose code differs there, with the
source file and function that decides it."""

import pytest

import cabi
from aclnn_emu import versions

SUCCESS, NULLPTR, INVALID, TILING, NOT_IMPLEMENTED = 0, 161001, 161002, 561002, 561003

OK = (
    "BNSD",
    "BSND",
    "BSH",
    "BSH_NBSD",
    "paged_blocks_h",
    "paged_blocks_n_d",
    "paged_bsh",
    "tensor_list",
    "int8_antiquant",
    "int8_per_tensor",
    "int8_paged",
    "post_quant",
    "post_quant_per_channel",
    "mask_pse",
    "mask_covers_actual",
    "kv_padding",
    "empty_out_before_dtype",
    "mtp",
    "mtp_bsh_any_mask",
    "mtp_g32_s8",
    "kv_heads_more",
    "quant2_rank5",
)
TILING_RULES = (
    "query_empty",
    "heads_zero",
    "kv_heads",
    "bsh_h",
    "layout",
    "query_heads",
    "query_s",
    "tnd_rope",
    "tnd_rope_d512",
    "inner_precise",
    "blocktable_empty",
    "pa_bnbd_layout",
    "kv_list_short",
    "kv_shape_same",
    "kv_list_rank",
    "kv_list_batch",
    "kv_list_heads",
    "kv_list_same",
    "bsh_dims",
    "bsh_d",
    "bnsd_dims",
    "bnsd_d",
    "format",
    "group",
    "pa_block_align16",
    "pa_block_align32",
    "batch",
    "head_dim",
    "kv_heads_max",
    "actual_seq_null",
    "actual_seq_len",
    "actual_seq_negative",
    "actual_seq_range",
    "pse_rank",
    "pse_shape",
    "pse_s",
    "mask_batch",
    "mask_s",
    "quant1.dequantScale1",
    "quant1.quantScale1",
    "quant1.dequantScale2",
    "quant2.scale_present",
    "quant2.offset_present",
    "quant2.scale_null",
    "quant2.shape_quantScale2",
    "quant2.shape_quantOffset2",
    "antiquant.unenabled",
    "antiquant.scale_null",
    "antiquant.rank_differ",
    "antiquant.per_tensor_antiquantScale",
    "antiquant.rank_antiquantScale",
    "antiquant.per_channel_antiquantScale",
    "antiquant.per_channel_antiquantOffset",
    "pa_nd_stride",
    "pa_block_zero",
    "pa_block_max",
    "pa_actual_seq",
    # incre_flash_attention_tiling_check.cpp: CheckQKOutShape, ProcessPseShift, CheckGqaIOTensor, CheckGqaAntiquantTensor
    "kv_nz_not_paged",
    "kv_nz.pse",
    "bsh_h_zero",
    "kv_nz.antiquant",
    "kv_nz.query_dtype",
    "kv_nz.shape",
    "kv_nz.antiquant_scale",
)
# Calls written for the Ascend910_95 rules, with their Atlas A2/A3 codes.
ARCH35_ON_A2 = {
    "empty_kv": SUCCESS,
    "inner_precise_3": TILING,
    "inner_precise_4": TILING,
    "quant2_rank1_per_channel": SUCCESS,
    "quant2_offset_size": TILING,
    "pa_actual_negative": TILING,
    "pa_block_multiple_128": SUCCESS,
    "pa_cache_bnsd": SUCCESS,
    "pa_table_rank": SUCCESS,
    "pa_nz": TILING,
    "pa_nz_shape": TILING,
    "pa_one_length": SUCCESS,
    "mask_rows": SUCCESS,
    "heads_negative": TILING,
    "kv_padding_no_room": SUCCESS,
    "int8_inner_precise_2": TILING,
    "int8_query_s2": SUCCESS,
    "int8_pa_nz": TILING,
    "int8_pa_kv_padding": SUCCESS,
    "int8_pa_table_batch": SUCCESS,
    "bsh_h_remainder": TILING,
    "int8_kv_heads_more": SUCCESS,
    "int8_kv_heads_fewer": NOT_IMPLEMENTED,
    "int8_s8_merged_short": SUCCESS,
    "int8_s9_unmerged_fits": SUCCESS,
    "int8_s2_inner_precise_3": TILING,
    "int8_s2_antiquant_1nd": SUCCESS,
    "int8_s2_mask": SUCCESS,
    "int8_s2_mask_rows": SUCCESS,
    "int8_s2_mask_heads": SUCCESS,
    "int8_s2_pse": TILING,
    "int8_s2_pse_rows": SUCCESS,
    "int8_s2_kv_padding": SUCCESS,
    "int8_s2_antiquant_h": TILING,
}

EXPECTED = {
    **{f"ok.{name}": SUCCESS for name in OK},
    **{f"null.{name}": NULLPTR for name in ("query", "key", "value", "attentionOut")},
    **{f"dtype.{name}": INVALID for name in ("query", "attentionOut", "key_list_mixed", "key_format")},
    **{
        f"kernel.{name}": NOT_IMPLEMENTED
        for name in ("pse_dtype", "mask_dtype", "blocktable_dtype", "antiquant_fp32", "quant2_bf16_fp16_query")
    },
    # ifa_speculative (SplitUnbalanced's split past the batch), reads past the key or quantScale2
    **{f"refused.{name}": NOT_IMPLEMENTED for name in ("mtp", "mtp_int8", "kv_heads", "quant2_rank")},
    **{f"tiling.{name}": TILING for name in TILING_RULES},
    **{f"arch35.{name}": code for name, code in ARCH35_ON_A2.items()},
}

IFA_V2 = "incre_flash_attention_tiling_v2.cpp"
PFA_V2 = "prompt_flash_attention_tiling_v2.cpp PromptFlashAttentionTilingV2::"
# Ascend910_95: (code, where the 8.5 source decides it). IFATilingV2::DoSubOpTiling sends a
# FLOAT16/BF16 key to PromptFlashAttentionTilingV2 (through PFAConvertContext) and an INT8 key to
# its own RunBigKernelTiling.
ON_ARCH35 = {
    "ok.BSH_NBSD": (TILING, PFA_V2 + "CheckIO/SetInputLayout: no *_NBSD layout"),
    "ok.tensor_list": (
        TILING,
        PFA_V2 + "CheckQueryAndKey: PFAConvertContext sets isKvContinuous = 1, so the "
        "first list tensor's batch is compared with the query's",
    ),
    "ok.mask_covers_actual": (
        TILING,
        PFA_V2 + "CheckMaskShape (enableIFAMask): the mask spans S2, not the largest actual length",
    ),
    # An INT8 key: IFATilingV2::RunBigKernelTiling (ops/flash_attention/incre/antiquant_arch35.py); the
    # A2/A3 codes hold for ok.int8_*, tiling.antiquant.* and tiling.pa_block_align32 (CheckAntiQuantParam,
    # CheckPABlockSize), the rules below differ.
    # A query S above 1 sets isPFAFlag_ (ProcessBaseTensors); ok.int8_query_s2 and int8_s9_unmerged_fits
    # run there as on A2/A3.
    "refused.mtp_int8": (
        SUCCESS,
        IFA_V2 + " ProcessBaseTensors: isPFAFlag_ lifts the S = 1 rule; every row "
        "has all 16 keys (ComputeS2LoopInfo without an attenMask)",
    ),
    "arch35.int8_s8_merged_short": (
        NOT_IMPLEMENTED,
        IFA_V2 + " FixParamWithRowInvalid: S x G (CheckPFAMerge) rows "
        "over a batch of 15 keys cut the core split "
        "(unestablished.soc_antiquant_short_kv)",
    ),
    "arch35.int8_s2_inner_precise_3": (SUCCESS, IFA_V2 + " ProcessBaseTensors: innerPrecise 0-3 with isPFAFlag_"),
    "arch35.int8_s2_antiquant_1nd": (TILING, IFA_V2 + " CheckKVAntiQuantPerChannel: no [2, 1, N2, D] with isPFAFlag_"),
    "arch35.int8_s2_mask": (
        SUCCESS,
        IFA_V2 + " ProcessAttenMaskSparsePFA: a [B, S, S2] mask with isPFAFlag_; "
        "the kernel walks it with the tokens 0 (ComputeS2LoopInfo)",
    ),
    "arch35.int8_s2_mask_rows": (TILING, IFA_V2 + " CheckMaskShapeCrossSparse: attenMask Q_S >= the query's S"),
    "arch35.int8_s2_mask_heads": (TILING, IFA_V2 + " CheckMaskShapeCrossSparse: a 4-D mask has one head"),
    "arch35.int8_s2_pse": (SUCCESS, IFA_V2 + " CheckPseShiftShape: (1 or B, N, >= S, >= S2) with isPFAFlag_"),
    "arch35.int8_s2_pse_rows": (TILING, IFA_V2 + " CheckPseShiftShape: pseShift S0 >= the query's S with isPFAFlag_"),
    "arch35.int8_s2_kv_padding": (
        SUCCESS,
        IFA_V2 + " CheckSupportKVLeftPadding: left padding with isPFAFlag_ (InitKVLeftPaddingSize)",
    ),
    "arch35.int8_s2_antiquant_h": (
        NOT_IMPLEMENTED,
        IFA_V2 + " CheckKVAntiQuantParaShapeLegal admits [N2·D]; "
        "InitQuant reads the value's from element N2·D on "
        "(refused.soc_antiquant_h_params)",
    ),
    "arch35.int8_pa_nz": (SUCCESS, IFA_V2 + " CheckKvCacheValue: (blocks, N2, D / 16, blockSize, 16)"),
    "arch35.bsh_h_remainder": (
        SUCCESS,
        PFA_V2 + "GetAndCheckShape: a BSH key's D is H / numKeyValueHeads, a "
        "remainder passes; the kernel reads it as [B, S, N2 x D]",
    ),
    "arch35.int8_pa_kv_padding": (TILING, IFA_V2 + " ProcessKVPaddingSize: no left padding with page attention"),
    "arch35.int8_pa_table_batch": (TILING, IFA_V2 + " ProcessBlockTable: blockTable dim 0 = batch"),
    "ok.mtp": (SUCCESS, PFA_V2 + "RunBigKernelTilingWithParams: any query S runs (no [1, 16] rule)"),
    "tiling.query_s": (SUCCESS, PFA_V2 + "RunBigKernelTilingWithParams: any query S runs (no [1, 16] rule)"),
    "tiling.kv_nz_not_paged": (TILING, PFA_V2 + "GetAndCheckShape: a dense BNSD key has rank 4"),
    **{
        rule: (TILING, PFA_V2 + "CheckInputDimAndHeadNum: key heads vs numKeyValueHeads")
        for rule in ("ok.kv_heads_more", "refused.kv_heads")
    },
    "ok.quant2_rank5": (SUCCESS, PFA_V2 + "CheckPostQuantShape: any rank > 1 holding N x D values"),
    "tiling.inner_precise": (SUCCESS, PFA_V2 + "CheckInnerPrecise: 0-3"),
    "arch35.inner_precise_3": (SUCCESS, PFA_V2 + "CheckInnerPrecise: 0-3"),
    "tiling.format": (SUCCESS, PFA_V2 + "RunBigKernelTilingWithParams: no storage-format check"),
    **{
        f"tiling.{rule}": (SUCCESS, PFA_V2 + "CheckQuant/SetAttributeInfo: read only for an INT8 output or key")
        for rule in (
            "quant1.dequantScale1",
            "quant1.quantScale1",
            "quant1.dequantScale2",
            "quant2.scale_present",
            "quant2.offset_present",
            "antiquant.unenabled",
        )
    },
    "arch35.quant2_rank1_per_channel": (TILING, PFA_V2 + "CheckPostQuantShape: a rank-1 scale is per tensor"),
    "arch35.pa_block_multiple_128": (TILING, PFA_V2 + "CheckPATypeAndShape: blockSize % 128 for a query S > 1"),
    "arch35.pa_cache_bnsd": (TILING, PFA_V2 + "CheckPACacheShape: (blocks, N, blockSize, D)"),
    "arch35.pa_table_rank": (TILING, PFA_V2 + "CheckBlockTableShape: a 2-D block table"),
    "arch35.pa_nz": (SUCCESS, PFA_V2 + "CheckPACacheShape: (blocks, N, D / 16, blockSize, 16)"),
    "arch35.pa_nz_shape": (TILING, PFA_V2 + "CheckPACacheShape: (blocks, N, D / 16, blockSize, 16)"),
    **{
        rule: (TILING, PFA_V2 + "CheckMaskShapeCrossSparse: S1 of the mask >= query S")
        for rule in ("arch35.mask_rows", "ok.mtp_bsh_any_mask")
    },
    "refused.mtp": (
        SUCCESS,
        PFA_V2 + "RunBigKernelTilingWithParams: any query S runs; the arch35 kernels split "
        "rows without IFATiling's SplitUnbalanced",
    ),
    "refused.quant2_rank": (TILING, PFA_V2 + "CheckPostQuantShape: a rank > 1 scale must hold N x D values"),
    **{
        f"tiling.kv_nz.{rule}": (TILING, IFA_V2 + " CheckKvCacheValue: D0 of an NZ cache is 16 (BLOCK_SIZE)")
        for rule in ("pse", "query_dtype", "shape", "antiquant_scale")
    },
    "tiling.bsh_h_zero": (
        SUCCESS,
        PFA_V2 + "RunBigKernelTilingWithParams: an empty key/value writes zeros before any shape check",
    ),
}


# Under ACLNN_EMU_CANN_VERSION 9.0.0 and 9.1.0 the Ascend910_95 family is Ascend950, where V1-V4 return
# 361001 before reading an argument: ops-transformer v9.0.0
# attention/incre_flash_attention/op_host/op_api/aclnn_incre_flash_attention_v4.cpp
# aclnnIncreFlashAttentionV4GetWorkspaceSize (branch 9.1.0: attention/incre_flash_attention/op_api/, the
# same function). 8.5.0 changes nothing V4 reaches (its TND check needs rope, which V4 cannot pass).
# 9.x's A2/A3 tiling (incre_flash_attention_tiling.cpp GetRopeAndGqaFlag) refuses a rope-less TND query only
# with D 512: other TND calls reach 9.x's TND paths, which aclnn-emu does not emulate (561003). 9.x's other IFA
# tiling changes reach no V4 input (docs/divergences/cann_versions.md), so there the 8.5 codes stand.
WITHDRAWN_ON_950 = ("9.0.0", "9.1.0")
TND_D512_ONLY = {"tiling.tnd_rope": 561003}


def expected_on(soc: str, version: str = "8.5.0") -> dict:
    if soc != "Ascend910_95":
        return {**EXPECTED, **TND_D512_ONLY} if version in WITHDRAWN_ON_950 else EXPECTED
    if version in WITHDRAWN_ON_950:
        return dict.fromkeys(EXPECTED, 361001)
    return {**EXPECTED, **{rule: code for rule, (code, _) in ON_ARCH35.items()}}


def test_arch35_table_names_known_rules():
    assert set(ON_ARCH35) <= set(EXPECTED)


@pytest.fixture(
    scope="module",
    params=[(v, soc) for v in versions.ORDER for soc in ("Ascend910B", "Ascend910_93", "Ascend910_95")],
    ids=lambda p: "-".join(p),
)
def chip(request):
    version, soc = request.param
    env = {"ACLNN_EMU_SOC": soc, "ACLNN_EMU_CANN_VERSION": version}
    result = cabi.compile_and_run("incre_flash_attention_rules.cpp", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return soc, version, cabi.rule_codes(result.stdout)


def test_every_rule_code(chip):
    soc, version, codes = chip
    expected = expected_on(soc, version)
    wrong = {rule: (codes.get(rule), want) for rule, want in expected.items() if codes.get(rule) != want}
    assert not wrong, f"{soc} under CANN {version}: (got, expected) {wrong}"


def test_every_reported_rule_is_asserted(chip):
    assert set(chip[2]) == set(EXPECTED)
