"""aclnnFusedInferAttentionScoreV5 beside V4 through the C ABI, once per chip family under each CANN release.

Source: attention/fused_infer_attention_score/op_host/op_api/aclnn_fused_infer_attention_score_v5.cpp (v9.0.0;
op_api/ on branch 9.1.0) aclnnFusedInferAttentionScoreV5GetWorkspaceSize: TensorPreProcess, PrefixTensorPreProcess,
the softmaxLse placeholder, then aclnnInnerFusedInferAttentionScoreGetWorkspaceSize with qStartIdx, kvStartIdx and
pseType, where V4 passes nullptr, nullptr and 0 (aclnn_fused_infer_attention_score_v4.cpp, which from v9.0.0 returns
361001 on NpuArch DAV_3510 in GetWorkspaceSize, GetMaxWorkspaceSize and phase 2)."""

import pytest

import cabi
from aclnn_emu import versions

NULLPTR, WITHDRAWN, NOT_EMULATED = 161001, 361001, 561003
SOURCE = "fused_infer_attention_score_v5_rules.cpp"
V4_GONE = "Interface aclnnFusedInferAttentionScore versions V1 to V4 are no longer supported on Ascend950."
V5_RULES = ("v5.ok", "v5.null.query", "v5.gap.start_indices", "v5.gap.pse_type")


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
    assert codes == {
        "v5.ok": 0,
        # the generated inner entry point's required-input check
        "v5.null.query": NULLPTR,
        # not emulated (fused_infer/checks.py V5_PATHS): the 9.x tilings' reading of them is not reviewed
        "v5.gap.start_indices": NOT_EMULATED,
        "v5.gap.pse_type": NOT_EMULATED,
    }
