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
    "pfa_tnd_d192", "pfa_paged_tnd", "pfa_paged_tnd_lse", "pfa_paged_tnd_bnbsh",
    "pfa_paged_nsd", "pfa_paged_nsd_bnbsh", "fai_paged_d256", "fai_paged_lse", "fai_paged_causal",
    "pfa_kv_antiquant", "pfa_kv_antiquant_per_channel",
    # FLOAT combined parameters: no rule of prompt_flash_attention_tiling.cpp reads their dtype (the
    # kernels read their memory as fp16, InitKvAntiquant)
    "pfa_kv_antiquant_float_params",
    # the MSD kernels (key/value scales, query S <= 16) past RunBigKernelTilingWithParams's rules:
    # per channel (BF16 [N2, D] beside a BF16 query) and per token (FLOAT [B2, S2]), softmaxLse too
    "pfa_msd", "pfa_msd_per_token", "pfa_msd_lse",
    "pfa_int4_empty", "pfa_paged_antiquant", "pfa_paged_antiquant_lse", "pfa_prefix_antiquant_lse",
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
    "pfa_int4_paged_cache_shape": "CheckPATypeAndShape",  # on the INT4 shapes (last dimension x 8)
    # a TND (or NSD) query: the shape read sets no prefix batch, so every shared prefix fails there
    "pfa_prefix_tnd": "RunBigKernelTilingWithParams",
    # an INT8 cache beside an fp16 query (fused_infer/paged_antiquant_arch32): CheckAntiquantParamsShape's
    # per-channel branch beside a block table (the modes, then CheckPerchannelAntiquantParamsShape on the
    # key's and the value's own parameters), then CheckPAAntiquantSupportScenarios
    "pfa_paged_antiquant_modes": "CheckAntiquantParamsShape",
    "pfa_paged_value_scale_shape": "CheckPerchannelAntiquantParamsShape",
    "pfa_paged_key_scale_null": "CheckPerchannelAntiquantParamsShape",
    "pfa_paged_antiquant_per_tensor": "CheckPAAntiquantSupportScenarios",
    "pfa_paged_antiquant_precise": "CheckPAAntiquantSupportScenarios",
    "pfa_paged_antiquant_sparse": "CheckPAAntiquantSupportScenarios",
    "pfa_paged_antiquant_layout": "CheckPAAntiquantSupportScenarios",
    "pfa_paged_key_value": "CheckPATypeAndShape",
    "pfa_paged_cache_layout": "CheckPATypeAndShape",
    "pfa_paged_block_table_shape": "CheckPATypeAndShape",
    "pfa_paged_cache_blocks": "CheckPATypeAndShape",
    "pfa_paged_mask_s2": "CheckAttenMaskShape",  # sK = tmpS2, max blocks x blockSize with a block table
    "pfa_paged_nsd_block_table_shape": "CheckPATypeAndShape",
    # a TND query with a block table: CheckInputShapeWhenLayoutIsTND and CheckActSeqWhenLayoutIsTND
    # (key lengths each batch's own), then CheckPASparseMode and CheckPAWhenBaseApi
    # (checkPABlockSizeAndBlockTable, culActSeqLenParamsWhenPA, CheckPAKeyValueParams)
    "pfa_paged_tnd_d32": "CheckInputShapeWhenLayoutIsTND",
    "pfa_paged_tnd_kv_count": "CheckActSeqWhenLayoutIsTND",
    "pfa_paged_tnd_kv_negative": "CheckActSeqWhenLayoutIsTND",
    "pfa_paged_tnd_sparse_mode": "CheckPASparseMode",
    "pfa_paged_tnd_mask": "CheckPASparseMode",
    "pfa_paged_tnd_block_size": "checkPABlockSizeAndBlockTable",
    "pfa_paged_tnd_cache_block": "culActSeqLenParamsWhenPA",
    "pfa_paged_tnd_no_blocks": "CheckPAWhenBaseApi",
    "pfa_paged_tnd_cache_shape": "checkPAKeyValueDimsWhenBNBD",
    "pfa_paged_tnd_block_table_shape": "CheckPAWhenBaseApi",
    "pfa_paged_tnd_cache_blocks": "CheckPAWhenBaseApi",
    # fused_infer_attention_score_tiling.cpp TilingProcess4SplitFuse -> CheckFAIAvailability
    "fai_lse_shape": "CheckFAILseOutput",
    "fai_block_size": "CheckFAISinglePara",
    "fai_mask_shape": "CheckFAIMaskShape",
    "fai_mask_mode": "CheckFAIMask",
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
    "pfa_d_align": "TilingProcess4PFA",  # every dtype; FIA's op_api pads no D
    "pfa_bf16_kv_scales": "CheckIOType",
    "pfa_per_tensor_scale": "CheckAntiquantParamsShape",
    "pfa_scale_rank": "CheckPerchannelAntiquantParamsShape",
    "pfa_scale_null": "CheckPerchannelAntiquantParamsShape",
    "pfa_msd_s": "RunBigKernelTilingWithParams",
    # the MSD kernels' rules after the split (fused_infer/kv_antiquant_msd): modes, then per mode the
    # parameters' shapes and dtypes
    "pfa_msd_modes": "RunBigKernelTilingWithParams",
    "pfa_msd_channel_rank": "RunBigKernelTilingWithParams",
    "pfa_msd_channel_shape": "RunBigKernelTilingWithParams",
    "pfa_msd_channel_dtype": "RunBigKernelTilingWithParams",
    "pfa_msd_token_shape": "RunBigKernelTilingWithParams",
    "pfa_msd_int4": "RunBigKernelTilingWithParams",
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
    # fused_infer_attention_score_tiling_check_existence.cpp CheckParaExistenceMlaNoquant: every rope pair
    # (ROPE_SPLIT, FiaInfoParser::GetRopeMode) takes no pse, padding, shared prefix or quantScale2
    **dict.fromkeys(
        (
            "rope_pse",
            "rope_query_padding",
            "rope_kv_padding",
            "mla_pse",
            "mla_kv_padding",
            "rope_quant_scale2",
            "rope_prefix",
        ),
        "CheckParaExistenceMlaNoquant",
    ),  # fmt: skip
    # rope calls RouteToFia leaves (an INT8 cache beside a BF16 query, an INT8 query):
    # fused_infer_attention_score_tiling.cpp CheckInputLayout (IsMla, CheckInputLayoutMla), then
    # incre_flash_attention_tiling{,_check}.cpp: ProcessPageAttentionFlag, ProcessQuant /
    # CheckQkvQuantParams4FullQuant, ProcessKVPaddingSize -> CheckSupportKVLeftPadding, ProcessMlaRope
    "rope_antiquant": "CheckMlaMisc",  # "antiquant is not supported in MLA."
    "rope_mla_layout": "CheckInputLayoutMla",
    "rope_mla_pair": "IsMla",
    "rope_mla_tnd_unpaged": "CheckInputLayoutMla",
    "rope_paged_bnbd_layout": "ProcessPageAttentionFlag",
    "rope_mla_kv_padding": "CheckSupportKVLeftPadding",
    "rope_full_quant_bnbd": "ProcessPageAttentionFlag",
    "rope_full_quant_bnsd": "ProcessQuant",
    "rope_full_quant_mode": "CheckQkvQuantParams4FullQuant",
    "rope_full_quant_query_scale": "CheckQueryQuantParam4FullQuant",  # BSND: [B, S, N]
    "rope_full_quant_kv_scale": "CheckKVQuantParam4FullQuant",  # [1]
    "rope_atb_layout": "AtbTilingCheck",  # the ATB path (AtbCheckFlag910) takes BSH/BSND/BNSD/TND
    "rope_pfa_base_api": "CheckBaseApiOptionalInput",  # sparse 20-22: SH only, which no rope call has
    "rope_pfa_tnd_d": "CheckInputShapeWhenLayoutIsTND",  # a TND rope: D 128, rope D 64
    "rope_pfa_tnd_int8": "CheckIOType",  # "When Layout is TND, not support QKV dataType is all int8!"
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
    # mask; Ascend910_95's IFA route, mask or not (flash_attention_score_antiquant_block_vec.h SoftmaxLseCopyOut)
    "lse_antiquant_prefill": SUCCESS,
    "lse_antiquant_prefill_mask": SUCCESS,
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
    # no dequantScaleQuery (Ascend910_95: ignored with a warning, ON_ARCH35)
    "query_quant.decode": TILING,
}
ON_A2 = {
    **{f"a2.ok.{name}": SUCCESS for name in A2_OK},
    **{f"a2.tiling.{name}": TILING for name in A2_TILING},
    # the PA antiquant kernels read FLOAT key/value parameters as fp16 memory too (InitKvAntiquant)
    "a2.not_implemented.pfa_paged_float_params": NOT_IMPLEMENTED,
    # delegate.NO_KERNEL (int4_pfa): prompt_flash_attention_arch32.h builds its PFA kernels for a key other
    # than INT4 only, softmaxLse or not; an empty key/value takes the empty-tensor kernel, which it keeps
    **{f"a2.no_kernel.{name}": NOT_IMPLEMENTED for name in ("pfa_int4", "pfa_int4_lse", "pfa_int4_paged")},
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
    # prompt_flash_attention_arch32.h hands a rope to the base-API kernels alone: the x910 kernels of an
    # INT8 query (S 32 > 16: the PFA route) run without it (rope_arch32.ignored_on_pfa, with a warning)
    "a2.ok.rope_pfa_ignored": SUCCESS,
    # the IFA MLA full-quant kernel (incre_flash_attention_preload_mla.h QUANT) runs an S 1 INT8 decode
    "a2.ok.rope_full_quant": SUCCESS,
    # incre_flash_attention_tiling_check.cpp CheckMlaAttrs: the IFA tiling's MLA takes one KV head
    "rope_antiquant_decode": TILING,
    # delegate.NOT_IMPLEMENTED (rope): the IFA tiling's ATB path (AtbCheckFlag910), the IFA MLA full-quant kernel
    # with a query S of 2
    **{f"a2.not_implemented.rope_{name}": NOT_IMPLEMENTED for name in ("atb", "full_quant")},
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
    # arch35/fused_infer_attention_score_tiling_v2.cpp CheckTensorList with a keyRope
    "rope_list_batch": "CheckTensorList",
    "rope_list_s": "CheckTensorList",
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
    "split_paged_params": "CheckKVAntiQuantShapePA",  # at the end of ProcessBlockTable
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
    # MLA full quant (SetAttributeInfo: FP8 E4M3 query, key and value with queryRope and keyRope)
    **{
        f"mla_fq_{name}": "CheckMLAFullQuant"
        for name in (
            "out_dtype",
            "rope_dtype",
            "query_mode",
            "kv_mode",
            "query_scale_null",
            "kv_scale_null",
            "scale_shape",
            "offset",
            "int8_scales",
            "prefix",
        )
    },
    # incre_flash_attention_tiling_v2.cpp IFATilingV2::ProcessAttenMaskSparsePFA (an INT8 key, query S > 1):
    # CheckSparseMode (after SetSparseModeData), then CheckMaskCrossover
    "antiquant_mask_template": "CheckMaskShapeCrossSparse",
    "antiquant_sparse_mode": "CheckSparseMode",
    "antiquant_mask_required": "CheckMaskCrossover",
    "antiquant_band_negative": "CheckSparseMode",
    "antiquant_next_vs_s1": "CheckSparseMode",
    "antiquant_actual_q_range": "ProcessActualSeqLen",  # ActualSeqLengthsQ[i] in [0, S]
}
ON_ARCH35 = {
    # CheckTensorList: every list tensor of batch 1
    "list_batch_two": TILING,
    # incre_flash_attention_tiling_v2.cpp ProcessBaseTensors: an INT4 key/value needs D a multiple of 64 (D 32 here)
    "int4_v2": TILING,
    # an attenMask beside an INT8 key with query S > 1 (incre/sparse_arch35, launch_arch35.MaskBlocks), with the
    # query's lengths and queryPaddingSize too (incre_flash_attention_tiling_v2.cpp CheckSupportQLeftPadding)
    "arch35.ok.antiquant_mask_causal": SUCCESS,
    "arch35.ok.antiquant_mask_lengths": SUCCESS,
    "arch35.ok.antiquant_mask_padding": SUCCESS,
    # incre_flash_attention_tiling_v2.cpp ProcessAntiQuant without key/value scales (not split mode): antiquantMode
    # picks the path, the key/value modes only set kPerChnVPerTokFlag_ (0 and 1), which GenAntiquantModeVal turns
    # into the pair's kernels with antiquantMode 0 (delegate.REFUSED, their parameters absent); antiquantMode 1 is
    # the combined per-token path, delegate.NOT_IMPLEMENTED (kv_antiquant)
    "arch35.ok.kv_modes_alone": SUCCESS,
    "arch35.refused.kv_pair_without_params": NOT_IMPLEMENTED,
    "arch35.not_implemented.combined_per_token": NOT_IMPLEMENTED,
    # softmaxLse beside an INT8 5-D (NZ) paged cache: IFATilingV2 has no rule against it and the NZ layout is a
    # copy flag (paLayoutType) of the one antiquant kernel (flash_attention_score_antiquant_block_vec.h)
    "arch35.ok.antiquant_paged_nz_lse": SUCCESS,
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
    # MLA full quant (FP8 E4M3 with queryRope/keyRope) runs for D 512: BNSD, causal, BSH, TND, paged, and with
    # one of the two scale-shape halves failing (prompt_flash_attention_tiling_v2.cpp CheckMLAFullQuant
    # fails only when both do)
    **{
        f"arch35.ok.mla_full_quant{name}": SUCCESS
        for name in ("", "_causal", "_bsh", "_tnd", "_paged", "_lse", "_query_scale_4d", "_key_scale_2")
    },
    # the OpDef (kernel key): BF16 ropes with a BF16 output only, FLOAT scales only; so CheckMLAFullQuant's
    # scale dtype rule cannot fail and its output rule only beside FLOAT16 ropes
    **{f"arch35.kernel.mla_fq_{name}": NOT_IMPLEMENTED for name in ("out_dtype", "scale_dtype")},
    # after CheckMLAFullQuant and the other checks: D 128 (PFARope) and pseShift build tiling keys
    # (prompt_flash_attention_tiling_v2.cpp UpdateTilingKeyConfig, UpdateTilingKeyPseMode) that
    # fused_infer_attention_score_template_tiling_key.h lists no kernel for (mla_full_quant_arch35.NO_KERNEL)
    **{f"arch35.no_kernel.mla_full_quant_{name}": NOT_IMPLEMENTED for name in ("pfa_rope", "pse")},
    # a dequantScaleQuery the kernel (flash_attention_score_block_vec_base.h ProcessVec1) would read past
    # (mla_full_quant_arch35.REFUSED)
    "arch35.refused.mla_full_quant_short_scale": NOT_IMPLEMENTED,
    # queryPaddingSize needs actualSeqLengths (fused_infer_attention_score_tiling_v2.cpp
    # CheckKVPaddingCrossover), which IFA MLA refuses outside TND (prompt_flash_attention_tiling_v2.cpp
    # CheckActSeqLen); kvPaddingSize offsets the key rows (infer_flash_attention_kvcache.h ComputeParamBatch)
    "arch35.tiling.mla_full_quant_query_padding": TILING,
    "arch35.ok.mla_full_quant_kv_padding": SUCCESS,
    # delegate.NOT_IMPLEMENTED (per_block_prefix): prompt_flash_attention_tiling_v2.cpp GetEnableDN
    # leaves the DN kernels with a shared prefix
    "arch35.not_implemented.per_block_prefix": NOT_IMPLEMENTED,
    "arch35.ok.paged_decode_block_48": SUCCESS,
    # separate key/value antiquant per token, per token + head and key per channel / value per token
    # (fused_infer/kv_antiquant_arch35), and beside the paged cache's blocks (modes 4)
    **{
        f"arch35.ok.kv_antiquant_{name}": SUCCESS
        for name in ("per_token", "per_token_head", "channel_token", "paged_params")
    },
    # ... per token over a 5-D (NZ) paged cache runs (LoadAntiquantParamsPerToken, AntiquantVFImplW8PerTokenNz)
    "arch35.ok.kv_antiquant_paged_nz": SUCCESS,
    "arch35.ok.rope": SUCCESS,
    "arch35.ok.rope_list": SUCCESS,
    # arch35/fused_infer_attention_score_tiling_v2.cpp: ConvertContextToParamsIFA hands IFATilingV2 no
    # rope and UpdateTilingKeyHasRope sets hasRope 0: the antiquant kernel runs without it
    "rope_antiquant_decode": SUCCESS,
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
