"""aclnnFusedInferAttentionScoreV5 beside V4 through the C ABI, once per chip family under each CANN release.

Source: attention/fused_infer_attention_score/op_host/op_api/aclnn_fused_infer_attention_score_v5.cpp (v9.0.0;
op_api/ on branch 9.1.0) aclnnFusedInferAttentionScoreV5GetWorkspaceSize: TensorPreProcess, PrefixTensorPreProcess,
the softmaxLse placeholder, then aclnnInnerFusedInferAttentionScoreGetWorkspaceSize with qStartIdx, kvStartIdx and
pseType, where V4 passes nullptr, nullptr and 0 (aclnn_fused_infer_attention_score_v4.cpp, which from v9.0.0 returns
361001 on NpuArch DAV_3510 in GetWorkspaceSize, GetMaxWorkspaceSize and phase 2)."""

import pytest

import cabi
from aclnn_emu import versions

NULLPTR, WITHDRAWN, TILING, NOT_EMULATED = 161001, 361001, 561002, 561003
SOURCE = "fused_infer_attention_score_v5_rules.cpp"
V4_GONE = "Interface aclnnFusedInferAttentionScore versions V1 to V4 are no longer supported on Ascend950."
V5_RULES = (
    "v5.ok", "v5.null.query", "v5.start_indices", "v5.pse_type1.pfa", "v5.pse_type1.fia_v3", "v5.pse_type2.pfa",
    "v5.alibi.ok", "v5.alibi.scalar_slopes", "v5.alibi.lengths",
)  # fmt: skip


@pytest.mark.parametrize("version", versions.ORDER)
def test_v5_and_v4_per_release(family, version):
    result = cabi.compile_and_run(SOURCE, env={"ACLNN_EMU_SOC": family, "ACLNN_EMU_CANN_VERSION": version})
    assert result.returncode == 0, result.stdout + result.stderr
    codes = cabi.rule_codes(result.stdout)
    nine = version.startswith("9.")
    withdrawn = nine and family == "Ascend910_95"
    assert codes.pop("v4.ok") == codes.pop("v4.ok.phase2") == (WITHDRAWN if withdrawn else 0)
    assert (V4_GONE in result.stdout) == withdrawn
    if not nine:  # the 8.5 headers declare no V5 (calls.py _declared)
        assert codes == dict.fromkeys(V5_RULES, NOT_EMULATED)
        return
    a2, v9_0 = family != "Ascend910_95", version == "9.0.0"
    assert codes == {
        "v5.ok": 0,
        # the generated inner entry point's required-input check
        "v5.null.query": NULLPTR,
        # read only by the alibi kernels (pseType 2/3): with pseType 0 they change nothing
        "v5.start_indices": 0,
        # 9.0.0: no A2/A3 tiling reads pse_type; Ascend950's PromptFlashAttentionTilingV2::SetAttributeInfo takes
        # 0/2/3 (prompt_flash_attention_tiling_v2.cpp). 9.1.0: FiaInfoParser::GetPseShiftFlag takes 0 only
        # (fused_infer_attention_score_tiling_info_parser.cpp), on Ascend950 and A2/A3's FIA-V3 route (D 128 here)
        "v5.pse_type1.pfa": 0 if a2 else TILING,
        "v5.pse_type1.fia_v3": 0 if a2 and v9_0 else TILING,
        # no slopes: A2/A3 read no pseType (9.1.0's PFA route no parser); Ascend950 9.0.0's
        # CheckAlibiPseShiftTypeAndShape (prompt_flash_attention_tiling_v2.cpp) needs them
        "v5.pse_type2.pfa": 0 if a2 else TILING,
        # FLOAT slopes [N]: no ascend910b/ascend910_93 combination of fused_infer_attention_score_def.cpp takes a
        # FLOAT pse_shift (the kernel lookup, 561003); Ascend950 9.0.0 runs the alibi, 9.1.0's parser refuses it
        "v5.alibi.ok": NOT_EMULATED if a2 else 0 if v9_0 else TILING,
        # a 0-d tensor: no dimension checked, slope[n] read for both heads (fused_infer/alibi_arch35.py REFUSED)
        "v5.alibi.scalar_slopes": NOT_EMULATED if a2 or v9_0 else TILING,
        # actualSeqLengths [8] beside 16 keys: the alibi's per-batch length rule
        "v5.alibi.lengths": NOT_EMULATED if a2 else TILING,
    }
