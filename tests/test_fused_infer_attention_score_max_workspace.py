"""aclnnFusedInferAttentionScoreV{2,3,4}GetMaxWorkspaceSize through the C ABI, per chip.

op_host/op_api/aclnn_fused_infer_attention_score_{v2,v3,v4}.cpp (cannmirror/ops-transformer
v8.5.0-beta.1) define them with default visibility in no header: the version's wrapper, then
aclnnInnerFusedInferAttentionScoreTensorGetWorkspaceSize with each IntArray an INT64 tensor without
data (FakeArray). So the generated entry point's codes stand (NULL query 161001; a NULL workspaceSize
161001), every tiling failure is 561002 (FiaInfoParser::GetN1Size, numHeads 0; on Ascend910_95
TilingFusedInferAttentionScoreV2::DoOpTiling), and on Atlas A2/A3 FiaInfoParser::GetMaxWorkspaceFlag
sets isMaxWorkspace once a length is given: CheckFeatureActualSeqLens{Q,Kv}Data skip the values
(fused_infer_attention_score_tiling_check_feature.cpp) while CheckFeatureActualSeqLensExistence still
wants the key lengths of a paged cache. Launching the executor is the emulator's AI-core exception
(507015): the kernel would read lengths that hold no data."""

import pytest

import cabi

SUCCESS, NULLPTR, TILING, AICORE = 0, 161001, 561002, 507015

EXPECTED = {
    **{f"ok.{name}": SUCCESS for name in ("v2", "v3", "v4", "same_size")},
    "launched": AICORE,
    "null.query": NULLPTR,
    "null.workspaceSize": NULLPTR,
    "tiling.heads_zero": TILING,
}
ON_A2 = {
    **{f"a2.ok.{name}": SUCCESS for name in ("kv_lengths_unread", "q_lengths_unread", "paged", "mask_shape_unread")},
    # CheckTokens (…_tiling_check_consistency.cpp) is no data check: it runs under isMaxWorkspace
    "a2.tiling.tokens_window": TILING,
    # the same call through GetWorkspaceSize: CheckFeatureActualSeqLensKvData reads 81 > S2 (80)
    "a2.tiling.kv_lengths_plain": TILING,
    "a2.tiling.paged_no_kv_lengths": TILING,
}

# prompt_flash_attention_tiling_v2.cpp CheckPATypeAndShape: under isMaxWorkspace S2 is blockTable's
# columns x blockSize and CheckBlockTableShape (CheckPACacheShape) is skipped; without any length
# isMaxWorkspace is false and the key lengths are required
ON_ARCH35 = {
    "arch35.ok.paged": SUCCESS,
    "arch35.ok.paged_blocks_unread": SUCCESS,
    "arch35.tiling.paged_blocks_plain": TILING,
    "arch35.tiling.paged_no_kv_lengths": TILING,
    # CheckPerblockCrossover: enableActSeqLenKV needs the lengths' data (SetAttributeInfo), which
    # FakeArray's tensors do not hold; through GetWorkspaceSize the same call fails
    "arch35.ok.per_block_lengths": SUCCESS,
    "arch35.tiling.per_block_lengths_plain": TILING,
}


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93", "Ascend910_95"])
def test_every_rule_code(soc):
    result = cabi.compile_and_run("fused_infer_attention_score_max_workspace.cpp", env={"ACLNN_EMU_SOC": soc})
    assert result.returncode == 0, result.stdout + result.stderr
    codes = cabi.rule_codes(result.stdout)
    expected = {**EXPECTED, **(ON_ARCH35 if soc == "Ascend910_95" else ON_A2)}
    assert codes == expected, f"{soc}: {result.stderr[-2000:]}"
