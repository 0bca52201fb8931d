"""aclnnFusedInferAttentionScore V1-V4 through the C ABI: every rule's status code, per chip.

All four versions forward to the generated aclnnInnerFusedInferAttentionScore
(op_host/CMakeLists.txt ACLNNTYPE aclnn_inner), so the framework codes are the generated entry
point's: required NULLs 161001 (query, key, value, attentionOut, softmaxLse), the kernel key over
fused_infer_attention_score_def.cpp 161002 for a required tensor / 561003 for an optional one alone,
and every tiling failure 561002. Atlas A2/A3 run TilingFusedInferAttentionScore
(fused_infer_attention_score_tiling.cpp): RouteToFia (arch32/fused_infer_attention_score_tiling_v3.cpp)
sends FLOAT16/BF16 calls with D 64/128 (MLA 512 + 64) to TilingFusedInferAttentionScoreV3, whose
FiaInfoParser::Parse (arch32/..._tiling_info_parser.cpp) and TilingCheck::Check
(arch32/..._tiling_check_{single_para,existence,feature}.cpp) decide the "a2.tiling" codes; D 32
goes to the IFA (S = 1) or PFA tiling. Ascend910_95 runs TilingFusedInferAttentionScoreV2
(arch35/fused_infer_attention_score_tiling_v2.cpp), which hands every case here to
PromptFlashAttentionTilingV2; the "a2." cases run on Atlas A2/A3 only (the program skips them
there)."""

import pytest

import cabi

SUCCESS, NULLPTR, INVALID, TILING, NOT_IMPLEMENTED = 0, 161001, 161002, 561002, 561003

OK = (
    "prefill", "v1", "v2", "v3", "bsh", "causal", "ifa_route", "pfa_route", "lse_null_flag_false", "lse",
    "lse_ifa_route", "lse_pfa_route", "lse_antiquant_decode", "int4_d64", "pse_pfa_route", "paged_bsh_cache",
    "paged_bnsd_cache", "paged_lse", "paged_prefill", "pfa_padding", "sink", "sink_ifa_route", "sink_pfa_route",
    "list_pfa_route", "mla_decode", "mla_paged",
)  # fmt: skip
A2_OK = (
    "paged_nz", "paged_nz_lse", "pfa_paged", "pfa_paged_lse", "pfa_paged_bnbsh", "pfa_paged_bsh", "pfa_paged_one_length", "pfa_paged_mask",
    "lse_d64", "legacy_ifa_sparse_ignored", "mla_rope", "prefix_nbsd", "fia_v3_padding_pse", "pfa_tnd_sink",
    "pfa_tnd_d192", "pfa_kv_antiquant", "pfa_kv_antiquant_per_channel",
)  # fmt: skip
# (rule, the function of the 8.5 source that fails it)
A2_TILING = {
    "inner_precise": "CheckSingleParaInnerPrecise",
    "sparse_mode": "CheckSingleParaSparseMode",
    "mask_required": "CheckFeatureMask",
    "sink_shape": "CheckFeatureGqaNoquantSink",
    "rope_pair": "CheckRopeExistence",
    "paged_actual_kv": "CheckFeatureActualSeqLensExistence",
    "block_size": "CheckFeatureNoquantBlockSize",
    "sink_mla": "CheckFeatureMlaSink",
    "dequant_query": "CheckParaExistenceGqaNoquant",
    "group": "FiaInfoParser::GetGSize",
    "actual_q_range": "CheckFeatureActualSeqLensQData",
    "actual_kv_range": "CheckFeatureActualSeqLensKvData",
    "consistency_key": "CheckKVShapeForBatchContinuous",
    "paged_nz_shape": "CheckKVShapeForPageAttention",
    "pse_nz": "CheckFeaturePSE",
    # prompt_flash_attention_tiling.cpp (the PFA route, a block table): RunBigKernelTilingWithParams, then
    # CheckActualSeqLength and CheckPATypeAndShape
    "pfa_paged_shared_prefix": "RunBigKernelTilingWithParams",
    "pfa_paged_actual_kv_required": "RunBigKernelTilingWithParams",
    "pfa_paged_actual_kv_negative": "CheckActualSeqLength",
    "pfa_paged_block_size": "CheckPATypeAndShape",
    "pfa_paged_key_value_rank": "CheckPATypeAndShape",
    "pfa_paged_cache_shape": "CheckPATypeAndShape",
    "pfa_paged_key_value": "CheckPATypeAndShape",
    "pfa_paged_cache_layout": "CheckPATypeAndShape",
    "pfa_paged_block_table_shape": "CheckPATypeAndShape",
    "pfa_paged_cache_blocks": "CheckPATypeAndShape",
    "pfa_paged_mask_s2": "CheckAttenMaskShape",  # sK = tmpS2, max blocks x blockSize with a block table
    "consistency_out": "CheckAttenOut",
    "consistency_lse": "CheckSoftmaxLseShape",
    "list_lengths": "FiaInfoParser::GetKvCache",
    # fused_infer_attention_score_tiling_check_consistency.cpp CheckMultiParaConsistency
    "mask_shape": "CheckAttentionMask",
    "tokens_window": "CheckTokens",
    "pse_shape": "CheckPseShiftShape",
    "query_rope_shape": "CheckQRopeShape",
    "prefix_batch": "CheckSystemPrefixShape",
    # fused_infer_attention_score_tiling_check_feature.cpp CheckFeatureLeftPadding, CheckFeaturePSE
    "padding_layout": "CheckFeatureLeftPadding",
    "padding_query_s": "CheckFeatureLeftPadding",
    "padding_kv_lengths": "CheckFeatureLeftPadding",
    "pse_layout": "CheckFeaturePSE",
    # fused_infer_attention_score_tiling.cpp TilingProcess4PFA, first CheckDequantParams, then
    # ConvertAttrsPFA ("PFA not support query dequant now")
    "pfa_dequant_query_s": "CheckDequantParams",
    "pfa_dequant_query_rope": "CheckDequantParams",
    "pfa_antiquant_mode": "CheckDequantParams",
    "pfa_query_quant_mode": "ConvertAttrsPFA",
    # prompt_flash_attention_tiling.cpp CheckLearnableSinkWhenLayoutIsTND (inside
    # CheckInputShapeWhenLayoutIsTND): sink [N], value D 64/128
    "pfa_tnd_sink_rank": "CheckLearnableSinkWhenLayoutIsTND",
    "pfa_tnd_sink_n": "CheckLearnableSinkWhenLayoutIsTND",
    "pfa_tnd_sink_dv": "CheckLearnableSinkWhenLayoutIsTND",
    "pfa_padding_kv_lengths": "CheckParamsPFA",
    "pfa_padding_shape": "CheckParamsPFA",
    # prompt_flash_attention_tiling.cpp
    "pfa_post_quant_padding": "CheckPostQuantParams",
    # the PFA route's KV antiquant (fused_infer/kv_antiquant_pfa): TilingProcess4PFA's head-size rule,
    # then in prompt_flash_attention_tiling.cpp CheckIOType, CheckAntiquantParamsShape /
    # CheckPerchannelAntiquantParamsShape, and RunBigKernelTilingWithParams's MSD query-S limit
    "pfa_d_align_int8": "TilingProcess4PFA",
    "pfa_bf16_kv_scales": "CheckIOType",
    "pfa_per_tensor_scale": "CheckAntiquantParamsShape",
    "pfa_scale_rank": "CheckPerchannelAntiquantParamsShape",
    "pfa_scale_null": "CheckPerchannelAntiquantParamsShape",
    "pfa_msd_s": "RunBigKernelTilingWithParams",
    "pfa_msd_modes": "RunBigKernelTilingWithParams",  # the MSD kernels' rules after the split
    # incre_flash_attention_tiling.cpp IFATiling::ProcessAntiQuant
    "ifa_value_scale_missing": "CheckKeyAndValueAntiquantScaleOffset",
    "ifa_value_scale_dtype": "CheckAntiQuantParamValueType",
    "ifa_modes_differ": "CheckKvAntiquant4SplitMode",
    "ifa_mode_paged": "CheckKVAntiQuantMode",
    # ProcessAntiQuantMode -> CheckAntiQuantParam (incre_flash_attention_tiling_check.cpp) on the key's scale
    "ifa_per_token_s": "CheckKVAntiQuantPerToken",
    "ifa_per_channel": "CheckKVAntiQuantPerChannel",
    "ifa_per_token_head": "CheckKVAntiQuantPerHead",
    # ProcessGqaKvNz -> CheckGqaAttribute -> CheckDefaultMisc("IFA GQA with KV NZ"): no softmaxLse
    "ifa_kv_nz_lse": "CheckDefaultMisc",
    # ProcessBlockTable -> CheckKVAntiQuantParamsInPagedAttention (modes 4, 5)
    "ifa_paged_params": "CheckKVAntiQuantParamsShapeInPagedAttention",
}

EXPECTED = {
    **{f"ok.{name}": SUCCESS for name in OK},
    **{f"null.{name}": NULLPTR for name in ("query", "key", "value", "attentionOut", "softmaxLse")},
    # the kernel key; V1 does not re-type an INT32 key/value as INT4 (TensorPreProcess is V2-V4's)
    **{f"dtype.{name}": INVALID for name in ("query", "attentionOut", "key_int32_v1", "softmaxLse")},
    **{f"kernel.{name}": NOT_IMPLEMENTED for name in ("sink_dtype", "block_table_dtype")},
    # aclnn_fused_infer_attention_score_inner.cpp TensorPreProcess re-types it INT4, which the
    # OpDef registers; the A2/A3 IFA route runs it (Ascend910_95: ON_ARCH35)
    "int4_v2": SUCCESS,
    # softmaxLse beside an INT8 key/value with query S > 1: the A2/A3 PFA route (its KV antiquant,
    # prompt_flash_attention_tiling.cpp CheckIOType; softmaxLse from the second pass) with or without a
    # mask; Ascend910_95's IFA route without one (flash_attention_score_antiquant_block_vec.h
    # SoftmaxLseCopyOut), with one delegate.NOT_IMPLEMENTED (lse)
    "lse_antiquant_prefill": SUCCESS,
    # left padding beside a shared prefix: prompt_flash_attention_tiling.cpp RunBigKernelTilingWithParams
    # (A2/A3), prompt_flash_attention_tiling_v2.cpp CheckPrefix (Ascend910_95)
    "tiling.pfa_prefix_padding": TILING,
    # FiaInfoParser::GetN1Size (A2/A3); TilingV2 DoOpTiling "Q numhead is 0" (Ascend910_95)
    "tiling.heads_zero": TILING,
    # fused_infer_attention_score_tiling.cpp CheckKvPFA / GetCumulativeKeyValueSInBNSD (A2/A3),
    # arch35/fused_infer_attention_score_tiling_v2.cpp CheckTensorList (Ascend910_95): the counts, the
    # heads and S of the list; prompt_flash_attention_tiling{,_v2}.cpp: each key length within its tensor
    **{f"tiling.{name}": TILING for name in ("list_count", "list_kv_heads", "list_s", "list_actual_kv")},
    # A2/A3 IFA route: incre_flash_attention_tiling.cpp IFATiling::ProcessQuant, an FP16 query takes
    # no dequantScaleQuery (Ascend910_95: delegate.NOT_IMPLEMENTED query_quant)
    "query_quant.decode": TILING,
}
ON_A2 = {
    **{f"a2.ok.{name}": SUCCESS for name in A2_OK},
    **{f"a2.tiling.{name}": TILING for name in A2_TILING},
    # delegate.NOT_IMPLEMENTED (kv_antiquant) on the A2/A3 PFA route: the MSD kernels (key/value scales,
    # query S <= 16), FLOAT combined parameters (InitKvAntiquant reads them as the query dtype)
    **{f"a2.not_implemented.{name}": NOT_IMPLEMENTED for name in ("pfa_msd", "pfa_float_params")},
    "lse_antiquant_prefill_mask": SUCCESS,
    # CheckKvPFA: a list whose first tensor has the query's batch is no list; the PFA tiling reads that tensor
    "list_batch_two": SUCCESS,
    # separate key/value antiquant that passes IFATiling::ProcessAntiQuant runs per token (modes 1),
    # per token + head (modes 3), per token in the cache's blocks (modes 4) and key per channel /
    # value per token (modes 0, 1); that pair with a
    # per-tensor [1] key scale (CheckKVAntiQuantParaShapeLegal then switches the kernels to per
    # channel) is delegate.NOT_IMPLEMENTED (kv_antiquant)
    "a2.ok.kv_antiquant_per_token": SUCCESS,
    "a2.ok.kv_antiquant_per_token_head": SUCCESS,
    "a2.ok.kv_antiquant_channel_token": SUCCESS,
    "a2.ok.kv_antiquant_paged_params": SUCCESS,
    "a2.not_implemented.kv_antiquant_per_tensor_key": NOT_IMPLEMENTED,
    # delegate.NOT_IMPLEMENTED (paged_pfa): TND takes CheckPAWhenBaseApi and the base-API kernels
    "a2.not_implemented.pfa_paged_tnd": NOT_IMPLEMENTED,
}


# (rule, the function that fails it on Ascend910_95: prompt_flash_attention_tiling_v2.cpp, or
# fused_infer_attention_score_tiling_v2.cpp for ConvertContextToParamsPFA and CheckKVPaddingCrossover)
ARCH35_TILING = {
    "paged_block_size_decode": "CheckPATypeAndShape",
    "paged_block_size": "CheckPATypeAndShape",
    "paged_actual_kv_required": "CheckPATypeAndShape",
    "paged_cache_shape": "CheckPACacheShape",
    "paged_key_value": "CheckPAKeyValueShape",
    "paged_cache_rank": "CheckPAKeyValueShape",
    "paged_block_table_shape": "CheckBlockTableShape",
    "paged_block_table_rank": "CheckBlockTableShape",
    "paged_actual_kv_negative": "CheckPACrossover",
    "paged_shared_prefix": "CheckPACrossover",
    "padding_kv_lengths": "CheckKVPaddingCrossover",
    "padding_q_lengths": "CheckKVPaddingCrossover",
    "padding_shape": "CheckKVPaddingCrossover",
    "paged_padding": "CheckKVPaddingCrossover",
    "list_padding": "ConvertContextToParamsPFA",
    "tnd_padding": "CheckTNDLayoutCrossover",
    "rope_pair": "CheckRope",
    "rope_d": "GetAndCheckRopeShape",
    "rope_shape": "GetAndCheckRopeShape",
    "rope_head_d": "GetAndCheckRopeShape",
    "rope_tnd_t": "GetAndCheckRopeShape",
    "rope_group": "SetAndCheckHeadNumRatio",  # the group limit PFARope keeps (PFA/IFA MLA lift it)
    "rope_mla_s": "CheckIFAMLA",
    "rope_mla_s_17": "CheckIFAMLA",
    "rope_mla_heads": "CheckIFAMLA",
    "rope_mla_kv_heads": "CheckInputDimAndHeadNum",  # BNSD: the default 0 reads as N, the key has 1 head
    "rope_mla_actual_q": "CheckActSeqLen",
    "rope_mla_mask_decode": "CheckMaskCrossIFAMLA",
    "rope_mla_mask": "CheckMaskCrossIFAMLA",
    "paged_mla_block_size": "CheckPATypeAndShape",
    "paged_key_rope_rank": "CheckBlockTableShape",
    "paged_key_rope_cache": "CheckPACacheShape",
    "paged_nz_d0": "CheckPACacheShape",
    "paged_tnd_kv_negative": "CheckActSeq",
    "paged_tnd_kv_count": "CheckActSeq",
    "paged_tnd_block_table_shape": "CheckBlockTableShape",
    "paged_tnd_mask_s2": "CheckMaskShapeCrossSparse",  # sK = S2, max blocks x blockSize with a block table
    "paged_ntd": "SetInputLayout",
    # incre_flash_attention_tiling_v2.cpp IFATilingV2::ProcessAntiQuant (split mode): the pairs,
    # KeyAndValueAntiQuantParamConsistencyCheck, equal modes, then CheckAntiQuantParam ->
    # CheckKVAntiQuantParaShapeLegal (per token, CheckKVAntiQuantPerChannel, the page-attention modes)
    "split_value_scale_missing": "ProcessAntiQuant",
    "split_scale_shapes": "KeyAndValueAntiQuantParamConsistencyCheck",
    "split_modes_differ": "ProcessAntiQuant",
    "split_per_token_s": "CheckKVAntiQuantParaShapeLegal",
    "split_per_channel": "CheckKVAntiQuantPerChannel",
    "split_pa_unpaged": "CheckKVAntiQuantParaShapeLegal",
    # an 8-bit float query outside per block: SetAttributeInfo makes it per tensor, which takes INT8 only
    "per_tensor_fp8": "CheckPerTensorQuantParams",
    # per-block full quant (SetAttributeInfo: FP8 E4M3 / HiFloat8 with the three quant modes 7)
    "per_block_paged": "CheckPerblockQuantParams",
    "per_block_tensor_list": "CheckPerblockQuantParams",
    "per_block_scale_missing": "CheckPerblockQuantParams",  # reads the shapes before its nullptr check
    "per_block_scale_dtype": "CheckPerblockQuantParams",
    "per_block_tnd": "CheckPerblockQuantParams",
    "per_block_head_size": "CheckPerblockQuantParams",
    "per_block_scale_rank": "CheckPerblockQuantParams",
    "per_block_query_scale_shape": "CheckPerblockQuantParams",
    "per_block_key_scale_shape": "CheckPerblockQuantParams",
    "per_block_actual_seq": "CheckPerblockCrossover",
    "per_block_inner_precise": "CheckPerblockCrossover",
    "per_block_lse": "CheckPerblockCrossover",
    "per_block_mask": "CheckPerblockCrossover",
    "per_block_pse": "CheckPerblockCrossover",
}
ON_ARCH35 = {
    # CheckTensorList: every list tensor of batch 1
    "list_batch_two": TILING,
    # incre_flash_attention_tiling_v2.cpp ProcessBaseTensors: an INT4 key/value needs D a multiple of 64 (D 32 here)
    "int4_v2": TILING,
    "lse_antiquant_prefill_mask": NOT_IMPLEMENTED,
    # TilingFusedInferAttentionScoreV2 sends a query of the key's dtype to PromptFlashAttentionTilingV2,
    # whose SetAttributeInfo quantises no FLOAT16 query; its kernels are never handed dequantScaleQuery
    # (prompt_flash_attention_entry_regbase.h): ignored, with a warning
    "query_quant.decode": SUCCESS,
    # per-block full quant runs (FP8 E4M3 and HiFloat8, BNSD and BSH); the OpDef pairs an 8-bit float
    # query with FLOAT16/BF16 outputs only (the kernel key, 161002)
    "arch35.ok.per_block": SUCCESS,
    "arch35.ok.per_block_hif8": SUCCESS,
    "arch35.ok.per_block_bsh": SUCCESS,
    "arch35.dtype.per_block_out": INVALID,
    # delegate.NOT_IMPLEMENTED (query_quant): the MLA full-quant kernels (FP8 E4M3 with queryRope/keyRope)
    "arch35.not_implemented.mla_full_quant": NOT_IMPLEMENTED,
    # delegate.NOT_IMPLEMENTED (per_block_prefix): prompt_flash_attention_tiling_v2.cpp GetEnableDN
    # leaves the DN kernels with a shared prefix
    "arch35.not_implemented.per_block_prefix": NOT_IMPLEMENTED,
    "arch35.ok.paged_decode_block_48": SUCCESS,
    # separate key/value antiquant per token, per token + head and key per channel / value per token
    # (fused_infer/kv_antiquant_arch35); in the paged cache's blocks (modes 4) delegate.NOT_IMPLEMENTED
    **{f"arch35.ok.kv_antiquant_{name}": SUCCESS for name in ("per_token", "per_token_head", "channel_token")},
    "arch35.not_implemented.kv_antiquant_paged_params": NOT_IMPLEMENTED,
    "arch35.ok.rope": SUCCESS,
    "arch35.ok.paged_rope": SUCCESS,
    "arch35.ok.rope_tnd": SUCCESS,
    "arch35.ok.rope_tnd_ragged": SUCCESS,
    "arch35.ok.paged_nz": SUCCESS,
    "arch35.ok.paged_nz_lse": SUCCESS,
    "arch35.ok.paged_tnd": SUCCESS,
    "arch35.ok.paged_tnd_lse": SUCCESS,
    "arch35.ok.paged_tnd_mask": SUCCESS,
    "arch35.ok.rope_decode": SUCCESS,
    "arch35.ok.rope_tnd_decode": SUCCESS,
    "arch35.ok.mla": SUCCESS,
    "arch35.ok.mla_causal": SUCCESS,
    "arch35.ok.mla_128_heads": SUCCESS,  # SetAndCheckHeadNumRatio: no group limit with IFA MLA
    "arch35.ok.paged_mla_block_16": SUCCESS,
    **{f"arch35.tiling.{name}": TILING for name in ARCH35_TILING},
}


def expected_on(soc: str) -> dict:
    return {**EXPECTED, **ON_ARCH35} if soc == "Ascend910_95" else {**EXPECTED, **ON_A2}


@pytest.fixture(scope="module", params=["Ascend910B", "Ascend910_93", "Ascend910_95"])
def chip(request):
    result = cabi.compile_and_run("fused_infer_attention_score_rules.cpp", env={"ACLNN_EMU_SOC": request.param})
    assert result.returncode == 0, result.stdout + result.stderr
    return request.param, cabi.rule_codes(result.stdout)


def test_every_rule_code(chip):
    soc, codes = chip
    wrong = {rule: (codes.get(rule), want) for rule, want in expected_on(soc).items() if codes.get(rule) != want}
    assert not wrong, f"{soc}: (got, expected) {wrong}"


def test_every_reported_rule_is_asserted(chip):
    soc, codes = chip
    assert set(codes) == set(expected_on(soc))
