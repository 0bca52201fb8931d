"""The CANN releases aclnn-emu presents (ACLNN_EMU_CANN_VERSION) and the rules that differ between them.

Every operator rule is read from ops-transformer 8.5.0-beta.1 unless a rule here says otherwise. A
rule that changed in a later release is declared once in RULES: what a caller observes, and for
each release it holds in, the source that decides it (ref, file, function). A check consults it
with `env.version.has(name)` at the point the source has it; nothing is copied per release.

Sources:
- OPS: cannmirror/ops-transformer, tags v8.5.0-beta.1, v8.5.0, v9.0.0; 9.1.0 is the branch `9.1.0`
  (commit 3311e26), as the repository has no v9.1.0 tag.
- RT: hicann/runtime at the same release tags, `include/external/acl/acl_rt.h`
  ACL_MAJOR_VERSION/ACL_MINOR_VERSION/ACL_PATCH_VERSION (what aclrtGetVersion reports).
"""

import dataclasses

from . import platform, status


@dataclasses.dataclass(frozen=True)
class Release:
    name: str  # what ACLNN_EMU_CANN_VERSION takes and the version functions report
    ops_ref: str  # the OPS ref its rules are read from
    acl_api: tuple[int, int, int]  # RT's ACL_MAJOR/MINOR/PATCH_VERSION
    ascend950: bool  # the Ascend910_95 family is named Ascend950 (platform.PARTS_950), NpuArch DAV_3510

    def has(self, rule: str) -> bool:
        """Whether the behaviour RULES[rule] describes holds in this release."""
        return self.name in RULES[rule].sources

    def source(self, rule: str) -> str:
        """Where this release's source decides RULES[rule] (ref:file function)."""
        return f"{self.ops_ref}:{RULES[rule].sources[self.name]}"

    @property
    def parts(self) -> tuple[str, ...]:
        """The part names and family aliases ACLNN_EMU_SOC takes in this release."""
        known = platform.names(self.ascend950)
        return known if self.name == "9.1.0" else tuple(n for n in known if n not in platform.NEW_IN_9_1)


RELEASES = {
    r.name: r
    for r in (
        Release("8.5.0-beta.1", "v8.5.0-beta.1", (1, 15, 0), False),
        Release("8.5.0", "v8.5.0", (1, 16, 0), False),
        Release("9.0.0", "v9.0.0", (1, 17, 0), True),
        Release("9.1.0", "9.1.0", (1, 17, 0), True),
    )
}
ORDER = tuple(RELEASES)  # oldest first
DEFAULT = "8.5.0"


def since(name: str) -> tuple[str, ...]:
    """`name` and every later release."""
    return ORDER[ORDER.index(name) :]


def declares(release: "Release", first: str | None) -> bool:
    """Whether `release`'s headers declare an entry point first declared in release `first` (None: every one)."""
    return first is None or release.name in since(first)


@dataclasses.dataclass(frozen=True)
class Rule:
    what: str  # the behaviour a caller observes where the rule holds
    sources: dict  # release name -> "file function" of OPS at that release's ref, for each release it holds in


def _at(releases, where: dict) -> dict:
    """Each of `releases` with its source: `where` maps a release to the file and function from it on."""
    found, current = {}, None
    for name in ORDER:
        current = where.get(name, current)
        if name in releases:
            found[name] = current
    return found


_PFA_API, _IFA_API = "attention/prompt_flash_attention/", "attention/incre_flash_attention/"
_FIA_API = "attention/fused_infer_attention_score/"
_FAG = "attention/flash_attention_score_grad/"
_FAG_API = f"{_FAG}op_api/aclnn_flash_attention_score_grad.cpp"
_FAG_ARCH35 = f"{_FAG}op_host/arch35/"
_FAS_API = "attention/flash_attention_score/op_api/aclnn_flash_attention_score.cpp"
_OP_API_MOVED = {"9.0.0": "op_host/op_api/", "9.1.0": "op_api/"}  # 9.1.0 moves op_api out of op_host


def _moved(root: str, file: str, function: str) -> dict:
    return {r: f"{root}{d}{file} {function}" for r, d in _OP_API_MOVED.items()}


def _moved_host(root: str, file: str, function: str) -> dict:
    """An op_api that stays under op_host/ in 9.1.0."""
    return {r: f"{root}op_host/op_api/{file} {function}" for r in _OP_API_MOVED}


RULES = {
    "lig.validate_params_first": Rule(
        "LightningIndexerGrad: null inputs (161001), then a query dtype other than fp16/bf16 or a key/dy/weights "
        "dtype other than query's (161002), before the output checks and the empty-query return",
        _moved_host(
            "attention/lightning_indexer_grad/",
            "aclnn_lightning_indexer_grad.cpp",
            "aclnnLightningIndexerGradGetWorkspaceSize, ValidateParams, CheckDataType",
        ),
    ),
    "spkc.hand_written_op_api": Rule(
        "ScatterPaKvCache: a hand-written op_api. Null key/keyCacheRef/slotMapping, or a valueCacheRef null with "
        "a value given, 561103; a null value is allowed there; nothing to do when key or keyCacheRef is empty "
        "and value is null or empty; key rank 3/4 and value rank 0/3/4, then the dtypes (per chip list, "
        "caches equal to their inputs, key equal to value unless PA_NZ, the index tensors equal to "
        "slotMapping's), 161002; the kernel lookup and the tiling behind it, 561103",
        {
            "9.1.0": "attention/scatter_pa_kv_cache/op_host/op_api/aclnn_scatter_pa_kv_cache.cpp "
            "aclnnScatterPaKvCacheGetWorkspaceSize, CheckNullptr, CheckShape, CheckDtypeValid"
        },
    ),
    "spkc.a2_template_modes": Rule(
        "ScatterPaKvCache on Atlas A2/A3: a cacheMode other than Norm, '' or PA_NZ, or a Norm-mode scatterMode other "
        "than None, '', Rope, Alibi, Omni, Nct or NHSD fails the tiling (8.5: read as Norm and as a plain scatter); "
        "NHSD is a template of its own (caches [blocks, heads, blockSize, D]; FP16/BF16 only, no negative-slot skip); "
        "PA_NZ is never key-only, and a key-only call (a 0-D valueCache) takes only the plain and Nct modes",
        {
            "9.1.0": "attention/scatter_pa_kv_cache/op_host/scatter_pa_kv_cache_tiling.cpp GetTemplateType, "
            "CheckInputDimNumNHSD, CheckInputShapeNHSD, DoNHSDOpTiling; op_kernel/scatter_pa_kv_cache_nhsd.h"
        },
    ),
    "spkc.a2_nz_5d_caches": Rule(
        "ScatterPaKvCache on Atlas A2/A3 with cacheMode PA_NZ: the caches may also be 5-D [blocks, heads, D / last, "
        "blockSize, last] (the same bytes as the 4-D [blocks, heads x D / last, blockSize, last]; 8.5: 4-D only, "
        "the tiling's 561002), and a blockSize above 65535 fails the tiling",
        {
            "9.1.0": "attention/scatter_pa_kv_cache/op_host/scatter_pa_kv_cache_tiling.cpp CheckInputDimNumNz, "
            "CheckInputShapeNz"
        },
    ),
    "gpkc.hand_written_op_api": Rule(
        "GatherPaKvCache: a hand-written op_api. Null required tensors 161001; nothing to do when any cache or "
        "output is empty; the ranks (caches 4, blockTables 2, seqLens 1, keyRef/valueRef 2 or 3), then the "
        "dtypes (per chip list, outputs equal to their caches, the index tensors INT32/INT64 and equal), "
        "161002; the infershape, kernel lookup and tiling behind it, 561103",
        {
            "9.1.0": "attention/gather_pa_kv_cache/op_host/op_api/aclnn_gather_pa_kv_cache.cpp "
            "aclnnGatherPaKvCacheGetWorkspaceSize, CheckNullptr, CheckShape, CheckDtypeValid"
        },
    ),
    "li.null_values_placeholder": Rule(
        "LightningIndexer: a null query returns -1 (ge::GRAPH_FAILED), as does a null sparseValuesOut with "
        "returnValues; otherwise a null sparseValuesOut becomes a [0] tensor of query's dtype before the "
        "generated checks (8.5: 161001)",
        _moved_host(
            "attention/lightning_indexer/",
            "aclnn_lightning_indexer.cpp",
            "aclnnLightningIndexerGetWorkspaceSize, TensorHolder",
        ),
    ),
    "li.fp32_weights": Rule(
        "LightningIndexer on Atlas A2/A3: FLOAT weights with bf16/fp16 query and key (the OpDef's third and fourth "
        "pairs; the kernel reads them as they are, where it casts half weights to FLOAT) (8.5: no kernel, 161002)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": "attention/lightning_indexer/op_host/lightning_indexer_def.cpp, lightning_indexer_tiling.cpp "
                "GetAndCheckInOutDataType"
            },
        ),
    ),
    "li.tiling_9": Rule(
        "LightningIndexer: the tiling also accepts a sparseCount that is a multiple of 1024 (past 2048: not "
        "established, 561003), checks sparseValuesOut's rank and dims like sparseIndicesOut's with returnValues, "
        "and refuses more than 64 query heads (561002; 8.5: ran, past the kernel's workspace)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": "attention/lightning_indexer/op_host/lightning_indexer_tiling.cpp GetAndCheckAttrParaInfo, "
                "CheckShapeDim, GetN1Size, ValidateInputShapesMatch"
            },
        ),
    ),
    "sfa.null_softmax_placeholders": Rule(
        "SparseFlashAttention: with returnSoftmaxLse a null softmaxMaxOut or softmaxSumOut returns -1 "
        "(ge::GRAPH_FAILED); without it both null become [0] FLOAT tensors before the generated checks "
        "(8.5: 161001; one of them null is still 161001)",
        _moved_host(
            "attention/sparse_flash_attention/",
            "aclnn_sparse_flash_attention.cpp",
            "aclnnSparseFlashAttentionGetWorkspaceSize, TensorHolder",
        ),
    ),
    "sfa.tiling_9": Rule(
        "SparseFlashAttention: with returnSoftmaxLse the tiling checks softmaxMaxOut and softmaxSumOut are [B, N2, "
        "S1, G] (BSND) or [N2, T1, G] (TND) (561002; 8.5: any shape, written in its element order); CompareShape "
        "no longer refuses an expected shape whose first dim is 0 (a TND key of T2 0: not established, 561003)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": "attention/sparse_flash_attention/op_host/sparse_flash_attention_tiling.cpp CheckAttenOut, "
                "CheckSoftmaxMaxShape, CheckSoftmaxSumShape, CompareShape"
            },
        ),
    ),
    "sfa.tiling_on_atlas_a3": Rule(
        "SparseFlashAttention runs on Atlas A3: the tiling's GetNpuInfo accepts NpuArch DAV_2201 (Atlas A2 and A3), "
        "where it accepted SocVersion ASCEND910B only (561002 on Ascend910_93)",
        {
            "9.1.0": "attention/sparse_flash_attention/op_host/sparse_flash_attention_tiling.cpp SFAInfoParser::GetNpuInfo"
        },
    ),
    "sfa.null_value_is_key": Rule(
        "SparseFlashAttention: a null value is replaced by key (8.5 and 9.0.0: 161001)",
        {
            "9.1.0": "attention/sparse_flash_attention/op_host/op_api/aclnn_sparse_flash_attention.cpp "
            "aclnnSparseFlashAttentionGetWorkspaceSize"
        },
    ),
    "fas.query_dtype_is_out_dtype_on_a2a3": Rule(
        "FlashAttentionScoreV2 and V3 on Atlas A2/A3 (DAV_2201): an attentionOut dtype other than query's is 161002 "
        "(before: run, the ViewCopy cast inferred)",
        {
            "9.1.0": f"{_FAS_API} aclnnFlashAttentionScoreV2GetWorkspaceSize, aclnnFlashAttentionScoreV3GetWorkspaceSize, "
            "InputOutputDtypeCheck"
        },
    ),
    "fas.shape_check_on_a2a3": Rule(
        "FlashAttentionScoreV2 on Atlas A2/A3 (DAV_2201): a query or key whose rank is not the layout's length is "
        "161002 before AnalysisInput (the same code AnalysisAxis gives most such calls)",
        {"9.1.0": f"{_FAS_API} aclnnFlashAttentionScoreV2GetWorkspaceSize, ShapeCheck"},
    ),
    "fas.layout_upper_cased": Rule(
        "FlashAttentionScore (not the TND-only VarLen entry points): AnalysisAxis upper-cases inputLayout, so "
        "'bsnd', 'Bsh'... run as BSND, BSH... and the L0 call gets the upper-case layout (before: 161002)",
        {"9.1.0": f"{_FAS_API} AnalysisAxis"},
    ),
    "fas.pse_dtype_is_out_dtype": Rule(
        "FlashAttentionScore (every entry point): a pseType 0/1 pse must have attentionOut's dtype, not query's "
        "(161002 either way)",
        _at(since("9.0.0"), {"9.0.0": f"{_FAS_API} InputDtypeCheck"}),
    ),
    "fas.qkv_dtype_range_on_a2a3_only": Rule(
        "FlashAttentionScore on Ascend950: InputDtypeCheck no longer limits query/key/value to fp16/bf16/fp32 "
        "(StrideLimited() only); an int8 query then has no kernel (161001), an FP8/HiFloat8 one reaches the quant "
        "kernels V1-V3 give no dequant scales (not established, 561003)",
        _at(since("9.0.0"), {"9.0.0": f"{_FAS_API} InputDtypeCheck"}),
    ),
    "fag.fp32_query_with_sink_refused": Rule(
        "FlashAttentionScoreGradV3 and FlashAttentionUnpaddingScoreGradV5: a sink with an fp32 query is 161002, "
        "after the rank checks (beta.1 goes on to the tiling)",
        _at(since("8.5.0"), {"8.5.0": f"{_FAG_API} FlashAttentionScoreGradV5GetWorkspace"}),
    ),
    "fag.quant_query_on_ascend950": Rule(
        "FlashAttentionScoreGrad on Ascend950 (not StrideLimited): InputDtypeCheck lets an FP8/HiFloat8 query "
        "through with any key/value/dy dtype (before: 161002 on every chip)",
        _at(since("9.0.0"), {"9.0.0": f"{_FAG_API} InputDtypeCheck"}),
    ),
    "fag.tnd_lengths_in_op_api": Rule(
        "FlashAttentionScoreGrad with inputLayout TND on Atlas A2/A3 (StrideLimited): GetInputShapeInfo returns "
        "161002 without actualSeqQLen/KvLen, with a query or key T below the sum of the lengths, or with both T "
        "above it and a last length other than 0 (before: the tiling's 161001, or a run)",
        _at(since("9.0.0"), {"9.0.0": f"{_FAG_API} GetInputShapeInfo, CheckDimT"}),
    ),
    "fag.io_dtype_shape_check": Rule(
        "FlashAttentionScoreGrad (every entry point): InputOutputDtypeAndShapeCheck right after the headNum check "
        "returns 161002 for q/k/v/dy dtypes, a layout other than BNSD/BSND/BSH/SBH/TND, a rank other than the "
        "layout's, key/value or query/dy shapes differing before the last dim, unequal batches, attentionIn "
        "unlike dy, dq/dk/dv (and rope, sink) outputs unlike their inputs in shape or dtype, a non-fp32 sink "
        "(before: 161001 from the L0 call, or a run)",
        {
            "9.1.0": f"{_FAG_API} aclnnFlashAttentionScoreGradV2GetWorkspaceSize (every entry point), "
            "InputOutputDtypeAndShapeCheck"
        },
    ),
    "fag.v4_output_shapes": Rule(
        "FlashAttentionScoreGradV4: right after the headNum check, dqOut/dkOut/dvOut/dqRopeOut/dkRopeOut/dsinkOut, each "
        "given with its input, shaped unlike query/keyIn/value/queryRopeOptional/keyRopeOptional/sinkInOptional is "
        "161002 (9.0.0: the ViewCopy of the result, 161001)",
        {
            "9.1.0": f"{_FAG_API} aclnnFlashAttentionScoreGradV4GetWorkspaceSize "
            "(OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE_FAGV4)"
        },
    ),
    "fag.v4_sink_and_softmax_layout": Rule(
        "FlashAttentionScoreGradV4: after GetInputShapeInfo, a sink needs a dsinkOut (161001), FLOAT sink and dsinkOut "
        "and fp16/bf16 query/keyIn/value/dy/attentionIn/dq/dk/dv (and ropes) (161002); softmaxInLayout must be '' or, "
        "with TND, same_as_input (161002); the L0 op gets the sink and softmaxInLayout (9.0.0: no sink, '')",
        {
            "9.1.0": f"{_FAG_API} FlashAttentionScoreGradV4GetWorkspace, CheckSinkOptionalInput "
            "(9.0.0: the L0 call passes dsink = nullptr and defaultSoftmaxInLayout)"
        },
    ),
    "fag.tnd_pse_row_is_kv_sum_on_a2a3": Rule(
        "FlashAttentionScoreGrad with inputLayout TND on Atlas A2/A3: a 1-D pse of one row per query head is "
        "N1 x the sum of the key lengths long (before: N1 x the key's T2; the two differ when T2 exceeds the sum)",
        {
            "9.1.0": f"{_FAG}op_host/arch22/flash_attention_score_grad_tiling_s1s2_bn2gs1s2.cpp "
            "ProcessPseInfo (likewise _s1s2_bn2.cpp GetPseInfo, _s1s2_bn2gs1s2_sab.cpp ProcessPseInfo)"
        },
    ),
    "fag.arch35_rope_d64": Rule(
        "FlashAttentionScoreGrad on Ascend950: a queryRope/keyRope head dim other than 64 is 161001 (8.5: "
        "GetShapeAttrsInfo returns false, i.e. success, and skips ProcessOptionalInput; aclnn-emu runs such calls)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp GetShapeAttrsInfo",
                "9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_normal_regbase.cpp GetShapeAttrsInfo",
            },
        ),
    ),
    "fag.arch35_tnd_eod": Rule(
        "FlashAttentionScoreGrad with inputLayout TND on Ascend950: once a cumulative length decreases, every later "
        "one must be 0 (EOD), else 161001 (8.5: decreasing lengths are read as they are, not established)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp GetShapeAttrsInfo",
                "9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_normal_regbase.cpp GetShapeAttrsInfo",
            },
        ),
    ),
    "fag.arch35_tnd_tokens_skip_empty_batches": Rule(
        "FlashAttentionScoreGrad with inputLayout TND on Ascend950, sparse modes 0 and 4: the token checks skip a "
        "batch whose query or key length is 0 (before: such a batch failed any negative preTokens/nextTokens)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp "
                "CheckUnpadTokensInfo",
                "9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp CheckUnpadTokensInfo",
            },
        ),
    ),
    "fag.arch35_bn2s2_needs_d128_with_dropout": Rule(
        "FlashAttentionScoreGrad on Ascend950, every TND batch of the same lengths: SetSplitAxis gives the layout "
        "TND back (the BN2S2 split) only when keepProb is 1 or D <= 128 (8.5: any D <= 512), so with dropout and "
        "D > 128 the kernels keep the BSND layout",
        _at(
            since("9.0.0"),
            {
                "9.0.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp SetSplitAxis",
                "9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp SetSplitAxis",
            },
        ),
    ),
    "fag.arch35_tnd_softmax_unchecked": Rule(
        "FlashAttentionScoreGrad with inputLayout TND on Ascend950: the tiling no longer checks softmaxMax/softmaxSum "
        "against [T1, N1, 8] (8.5: 161001); aclnn-emu refuses other shapes as not established (561003)",
        _at(
            since("9.0.0"),
            {
                "9.0.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp CheckTndShapeValid",
                "9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp CheckTndShapeValid, "
                "CheckSoftmaxMaxSumTndShape",
            },
        ),
    ),
    "fag.arch35_tnd_softmax_same_as_input_checked": Rule(
        "FlashAttentionScoreGrad with inputLayout TND on Ascend950 and softmaxInLayout same_as_input: softmaxMax/"
        "softmaxSum must be [T1, N1, 8] again (161001)",
        {"9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp CheckSoftmaxMaxSumTndShape"},
    ),
    "fag.arch35_grad_shapes": Rule(
        "FlashAttentionScoreGrad on Ascend950: dy shaped unlike attentionIn, dy unlike query or value unlike key "
        "but for the head dim, or a value head dim unlike dy's is 161001 (before: not checked by the arch35 tiling)",
        {"9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_normal_regbase.cpp GetShapeAttrsInfo"},
    ),
    "fag.arch35_exact_mask": Rule(
        "FlashAttentionScoreGrad on Ascend950, not TND: an uncompressed attenMask must be [S1, S2] unless the B or "
        "BN template could take the call (then rows x columns >= S1 x S2 is enough); 161001 (before: rows x "
        "columns >= S1 x S2 always)",
        {"9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp CheckAttenMaskShape"},
    ),
    "fag.arch35_sink": Rule(
        "FlashAttentionScoreGrad on Ascend950 reads sinkInOptional: [N1] FLOAT with a [N1] dsinkOut and an fp16/bf16 "
        "query, else 161001; the gradients include the sink and dsinkOut is written (before: the sink was ignored)",
        {"9.1.0": f"{_FAG_ARCH35}flash_attention_score_grad_tiling_common_regbase.cpp ProcessSinkInfo"},
    ),
    "pfa.pad_of_null_quant_offset2_fails": Rule(
        "PromptFlashAttention on Atlas A2/A3: a 3-/4-D quantScale2 with a null quantOffset2, where the op_api "
        "pads D, returns 561103 (8.5.0 pads the offset only when it is given, and accepts the call)",
        {"8.5.0-beta.1": f"{_PFA_API}op_host/op_api/aclnn_prompt_flash_attention_inner.cpp PreprocessQKVInput"},
    ),
    "pfa.fp16_mask_cast_to_uint8": Rule(
        "PromptFlashAttention V1-V3: an fp16 attenMask is cast to uint8 on every chip after the op_api's dtype "
        "checks, so the tiling and the kernel see a byte mask (a nonzero value masks the score, filled as a "
        "bool mask is) where 8.5 adds mask * -10000",
        _moved(_PFA_API, "aclnn_prompt_flash_attention_inner.cpp", "ContiguousInput"),
    ),
    "pfa.ntd_layout_in_op_api": Rule(
        'PromptFlashAttention V1-V3: the op_api reads a 3-D layout starting with NTD and hands the L0 op "NTD", '
        "which the Atlas A2/A3 tiling does not know (SetInputLayout): 561103 where 8.5's op_api returns 161002",
        _moved(
            _PFA_API,
            "aclnn_prompt_flash_attention_inner.cpp",
            "CheckDimsAndLayout, AnalysisAxis (then op_host/prompt_flash_attention_tiling.cpp SetInputLayout)",
        ),
    ),
    "pfa.v1_v3_withdrawn_on_ascend950": Rule(
        "on Ascend950 (DAV_3510) PromptFlashAttention V1-V3 return 361001 in both phases",
        _moved(
            _PFA_API,
            "aclnn_prompt_flash_attention_v2.cpp",
            "aclnnPromptFlashAttentionV2GetWorkspaceSize, aclnnPromptFlashAttentionV2 (likewise V1, V3)",
        ),
    ),
    "ifa.tnd_rope_check_d512_only": Rule(
        "IncreFlashAttention on Atlas A2/A3: a TND query without rope inputs fails the tiling only with D 512 "
        "(8.5: every TND or TND_NTD one); the others reach 9.x's TND paths, not emulated (561003)",
        {
            r: f"{_IFA_API}op_host/incre_flash_attention_tiling.cpp GetRopeAndGqaFlag (8.5: QKVPreProcess4TND)"
            for r in ("9.0.0", "9.1.0")
        },
    ),
    "fia.v1_v4_withdrawn_on_ascend950": Rule(
        "on Ascend950 (DAV_3510) FusedInferAttentionScore V1-V4 return 361001 in both phases (GetMaxWorkspaceSize "
        "of V2-V4 too); V5 is the entry point there",
        _moved(
            _FIA_API,
            "aclnn_fused_infer_attention_score_v4.cpp",
            "aclnnFusedInferAttentionScoreV4GetWorkspaceSize, aclnnFusedInferAttentionScoreV4GetMaxWorkspaceSize, "
            "aclnnFusedInferAttentionScoreV4 (likewise V1-V3)",
        ),
    ),
    "fia.v5_pse_type_zero_only": Rule(
        "FusedInferAttentionScoreV5: a pseType other than 0 fails the tiling (561002) on every Ascend950 call and on "
        "Atlas A2/A3's FIA-V3 route (9.0.0: Ascend950 takes 0, 2 and 3, A2/A3 read no pseType)",
        {
            "9.1.0": f"{_FIA_API}op_host/fused_infer_attention_score_tiling_info_parser.cpp FiaInfoParser::"
            "GetPseShiftFlag (arch35/..._tiling_v4.cpp TilingFusedInferAttentionScoreV4, arch22/..._tiling_v3.cpp "
            "TilingFusedInferAttentionScoreV3)"
        },
    ),
    "ifa.v1_v4_withdrawn_on_ascend950": Rule(
        "on Ascend950 (DAV_3510) IncreFlashAttention V1-V4 return 361001 in both phases",
        _moved(
            _IFA_API,
            "aclnn_incre_flash_attention_v4.cpp",
            "aclnnIncreFlashAttentionV4GetWorkspaceSize, aclnnIncreFlashAttentionV4 (likewise V1-V3)",
        ),
    ),
}


@dataclasses.dataclass(frozen=True)
class Unemulated:
    """A change a release makes that a caller can observe and aclnn-emu does not reproduce: the call
    behaves there as in 8.5.0 (or, for an entry point, is not exported)."""

    since: str  # the first release with the change (it holds in every later one)
    what: str
    where: str  # file (and function) of OPS at that release's ref


_FAS = "attention/flash_attention_score/"
_SA = "attention/"
UNEMULATED = (
    Unemulated(
        "8.5.0",
        "FlashAttentionScoreGradV2 (A2/A3 same-AB template): the dsink workspace is added only with a sink "
        "(aclnn-emu's workspace size is its own)",
        f"{_FAG}op_host/arch32/flash_attention_score_grad_tiling_s1s2_bn2gs1s2_sab.cpp",
    ),
    Unemulated(
        "8.5.0",
        "IncreFlashAttentionV4's flash-decode split stops when no core is left (where the KV splits fall; "
        "aclnn-emu does not model the split)",
        f"{_IFA_API}op_host/incre_flash_attention_tiling.cpp SplitBalancedForEachHead",
    ),
    Unemulated(
        "9.0.0",
        "FusedInferAttentionScore on Atlas A2/A3: RouteToFia is rewritten and sends nearly every FLOAT16/BF16 call "
        "to the FIA-V3 kernels (all but D 256 / D 80-with-prefix MHA decode, NSD and the split-fuse TND calls), "
        "whose 9.x feature checks take pse, left padding, shared prefix and output quantisation; CheckSpecConditions "
        "and IsUsingFAI (split-fuse) widen, IsUsingIFA adds TND over an INT8 NZ cache; aclnn-emu keeps 8.5's routes "
        "and checks, and warns where the 9.x routing differs",
        f"{_FIA_API}op_host/arch32/fused_infer_attention_score_tiling_v3.cpp RouteToFia, CheckSpecConditions "
        "(op_host/arch22/ in 9.1.0, with ..._tiling_check_feature.cpp); op_host/fused_infer_attention_score_tiling.cpp "
        "IsUsingFAI, IsGqaMtp",
    ),
    Unemulated(
        "9.1.0",
        "FusedInferAttentionScoreV5: CheckTensorContiguous refuses a non-contiguous key/value (first tensor), keyRope "
        "or key/value antiquant scale with 561002 when the opbase lacks NnopbaseSupportTensorV2 (a weak symbol); "
        "aclnn-emu presents an opbase that has it, so such calls run as with V4",
        f"{_FIA_API}op_api/aclnn_fused_infer_attention_score_v5.cpp CheckTensorContiguous",
    ),
    Unemulated(
        "9.0.0",
        "FlashAttentionScoreGrad TND on Ascend950: cumulative lengths that fall to 0 and stay 0 (EOD) leave the "
        "trailing batches empty; aclnn-emu still refuses decreasing lengths as not established (561003)",
        f"{_FAG}op_host/arch35/flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp GetShapeAttrsInfo",
    ),
    Unemulated(
        "9.0.0",
        "FlashAttentionScoreGrad on Ascend950 with an FP8/HiFloat8 query: ProcessQuantInfo and [B, N1, S1, 1] "
        "softmax statistics (the quant path stays not established, 561003)",
        f"{_FAG}op_host/arch35/flash_attention_score_grad_tiling_s1s2_bn2gs1s2_regbase.cpp ProcessQuantInfo, "
        "CheckSoftmaxMaxShape",
    ),
    Unemulated(
        "9.0.0",
        "IncreFlashAttention on A2/A3: the flash-decode balancing (SplitBalancedFd; where the KV splits fall)",
        f"{_IFA_API}op_host/incre_flash_attention_tiling.cpp SplitBalancedFd, IsFdBalanceCase",
    ),
    Unemulated(
        "9.1.0",
        "FlashAttentionScoreGrad TND on A2/A3: with a query or key T past the lengths' sum, the NZ post step stops at "
        "the sum, so what the rows past it hold is not established; aclnn-emu writes 0 there",
        f"{_FAG}op_host/arch22/flash_attention_score_grad_tiling_s1s2_bn2gs1s2.cpp (nzPostNeedEffectiveT)",
    ),
    Unemulated(
        "9.0.0",
        "FlashAttentionScore: no D padding or transpose on Ascend950 (internal to the op_api: how the kernel "
        "then reads an unaligned D is not established; aclnn-emu computes the result as 8.5 does)",
        f"{_FAS}op_api/aclnn_flash_attention_score.cpp AnalysisInput, PreprocessQKV, Postprocess",
    ),
    Unemulated(
        "9.0.0",
        "FlashAttentionScoreGrad: GetInputShapeInfo rewritten (BSH/SBH with a query H below headNum reads D 0 and "
        "goes on, the qD/kD check for 3-/4-D queries only, no D padding on Ascend950) and InvalidTensorDimCheck "
        "ignores an empty sink",
        f"{_FAG}op_api/aclnn_flash_attention_score_grad.cpp GetInputShapeInfo, InvalidTensorDimCheck",
    ),
    Unemulated(
        "9.0.0",
        "LightningIndexer and SparseFlashAttention: the 9.x kernels (LightningIndexer's selection of more than 2048 "
        "keys included); aclnn-emu runs the 8.5 kernels behind the 9.x wrappers and tiling rules",
        f"{_SA}lightning_indexer/op_kernel, {_SA}sparse_flash_attention/op_kernel",
    ),
    Unemulated(
        "9.1.0",
        "LightningIndexer and SparseFlashAttention on Ascend950: the OpDefs register ascend950 and the tilings take "
        "NpuArch DAV_3510 (LightningIndexer: N1 of 8/16/24/32/64, weights of query's dtype, B/S1/S2 or T above 0; "
        "SparseFlashAttention: sparseBlockSize 1) with new arch35 kernels (LightningIndexer's fused multiply-add of "
        "the relu'd scores over heads and its vector top-k are not reviewed); aclnn-emu keeps 8.5's refusal of the "
        "family (561003)",
        f"{_SA}lightning_indexer/op_host/lightning_indexer_def.cpp, "
        f"{_SA}sparse_flash_attention/op_host/sparse_flash_attention_def.cpp",
    ),
    Unemulated(
        "9.1.0",
        "ScatterPaKvCache and GatherPaKvCache: the rewritten tilings, the Ascend950 kernel lists and new kernels "
        "(non-contiguous caches, NZ on Ascend950); aclnn-emu runs the 8.5 tilings and kernels behind the 9.1.0 "
        "op_api checks (spkc/gpkc.hand_written_op_api)",
        f"{_SA}scatter_pa_kv_cache/op_host/scatter_pa_kv_cache_tiling*.cpp, scatter_pa_kv_cache_def.cpp; "
        f"{_SA}gather_pa_kv_cache/op_host/gather_pa_kv_cache_tiling*.cpp, gather_pa_kv_cache_def.cpp",
    ),
)


def unemulated(release: "Release") -> list[Unemulated]:
    """The changes up to `release` that aclnn-emu does not reproduce."""
    return [u for u in UNEMULATED if release.name in since(u.since)]


@dataclasses.dataclass(frozen=True)
class Withdrawal:
    """Entry points a release refuses on a chip family before reading any argument, in both phases."""

    rule: str
    entry_points: tuple[str, ...]
    family: str
    code: int
    message: str  # the source's error message


WITHDRAWALS = (
    Withdrawal(
        "pfa.v1_v3_withdrawn_on_ascend950",
        ("PromptFlashAttention", "PromptFlashAttentionV2", "PromptFlashAttentionV3"),
        platform.A5,
        status.ACLNN_ERR_RUNTIME_ERROR,
        "Interface aclnnPromptFlashAttention versions V1 to V3 are no longer supported on Ascend950.",
    ),
    Withdrawal(
        "fia.v1_v4_withdrawn_on_ascend950",
        tuple(f"FusedInferAttentionScore{v}" for v in ("", "V2", "V3", "V4")),
        platform.A5,
        status.ACLNN_ERR_RUNTIME_ERROR,
        "Interface aclnnFusedInferAttentionScore versions V1 to V4 are no longer supported on Ascend950.",
    ),
    Withdrawal(
        "ifa.v1_v4_withdrawn_on_ascend950",
        tuple(f"IncreFlashAttention{v}" for v in ("", "V2", "V3", "V4")),
        platform.A5,
        status.ACLNN_ERR_RUNTIME_ERROR,
        "Interface aclnnIncreFlashAttention versions V1 to V4 are no longer supported on Ascend950.",
    ),
)


def withdrawal(op_name: str, release: Release, family: str) -> Withdrawal | None:
    """The withdrawal that refuses `op_name` in `release` on `family`, if one does."""
    for w in WITHDRAWALS:
        if op_name in w.entry_points and family == w.family and release.has(w.rule):
            return w
    return None
