"""aclnnFusedInferAttentionScoreV2's shared prefix through the C ABI (tests/c/
fused_infer_attention_score_prefix.cpp): every case's status code, per chip.

D 32 is no FIA-V3 head size, so on Atlas A2/A3 a query S of 1 takes the IFA tiling
(incre_flash_attention_tiling.cpp ProcessOptionalTensors: ProcessSharedPrefix with
SharedPrefixCheckBasic and SharedPrefixCheckShapes, then ProcessSharedPrefixLen) and S 16 the PFA
tiling (prompt_flash_attention_tiling.cpp RunBigKernelTilingWithParams: the prefix pair, tensor
list, page attention, left padding, ranks and shapes, then actualSharedPrefixLen, batch 1, N and D).
Ascend910_95's TilingFusedInferAttentionScoreV2 sends both FLOAT16 calls to
PromptFlashAttentionTilingV2 (DoOpTiling: the prefix pair; CheckPrefix: TND, tensor list, left
padding, GetAndCheckPrefixShape, CheckKeyValuePrefixConsistency, CheckActSharedPrefix; a tensor list
fails CheckPrefix, a block table CheckPACrossover) and INT8 ones to IFATilingV2, which
ConvertContextToParamsIFA hands no prefix: those run without it. Every tiling failure is 561002.

The "tnd." cases are TND FLOAT16 calls with D 128 that Atlas A2/A3's CheckSpecConditions
(arch32/fused_infer_attention_score_tiling_v3.cpp) keeps off RouteToFia whatever the prefix, and
IsUsingFAI (fused_infer_attention_score_tiling.cpp) sends to the split-fuse tiling: MHA with
innerPrecise 1, GQA with innerPrecise 0, dense or over a 3-D paged cache of blockSize 128.
"""

import pytest

import cabi

SUCCESS, TILING, NOT_IMPLEMENTED = 0, 561002, 561003

RULES = ("paged", "key_only", "value_only", "length_range", "length_negative", "length_count", "batch_two", "heads",
         "empty", "rank", "shapes", "kv_padding")  # fmt: skip
# query S 1 and 16, D 32 and 128 (a FIA-V3 head size: CheckGqaFeatureSupport keeps a prefix off RouteToFia,
# so the same IFA and PFA tilings decide)
DECODE, PREFILL = ("decode", "decode_d128"), ("prefill", "prefill_d128")
AT = DECODE + PREFILL
SPLIT_FUSE = ("tnd.split_fuse_mha", "tnd.split_fuse_prefix_unfit", "tnd.split_fuse_gqa", "tnd.split_fuse_gqa_paged")
COMMON = {
    **{f"ok.dense_{at}": SUCCESS for at in AT},
    **{f"{rule}_{at}": TILING for rule in RULES for at in AT},
    **{f"list_{at}": TILING for at in PREFILL},  # RunBigKernelTilingWithParams (A2/A3), CheckPrefix (Ascend910_95)
    "int8.dense": SUCCESS,
    "int8.list": SUCCESS,
}
ON_A2 = {
    # IFATiling::ProcessSharedPrefix takes a tensor list; the split kernel attends each batch to the prefix first
    **{f"list_{at}": SUCCESS for at in DECODE},
    # SharedPrefixCheckShapes reads S of an empty prefix as 0 (sMaxPrefix_), which nothing refuses
    **{f"empty_{at}": SUCCESS for at in DECODE},
    # SharedPrefixCheckBasic: no page attention; a missing prefix tensor
    "int8.paged": TILING,
    "int8.value_only": TILING,
    # CheckFAIAvailability checks no prefix input and ConvertContextToParamsFAI hands FAInferTiling none:
    # an unfit prefix (batch 2, two lengths) or a paged cache beside it fails nothing
    **{name: SUCCESS for name in SPLIT_FUSE},
    # IsUsingFAI reads no key dtype; CheckFAIQKV (fused_infer_attention_score_tiling.cpp) then refuses
    # an INT8 key beside a FLOAT16 query
    "a2.tnd.split_fuse_int8_key": TILING,
    # RunBigKernelTilingWithParams reads no prefix batch (and, TND-like, no S) for TND and NSD queries: a length
    # above that S fails its range, then "prefix batch num(0) only support 1!"
    **{
        f"a2.{case}": TILING
        for case in ("tnd_pfa", "tnd_pfa_length", "tnd_pfa_length_zero", "nsd_pfa", "nsd_pfa_length")
    },  # fmt: skip
    # SharedPrefixCheckShapes compares a TND prefix as BNSD: its dimension 3 reads 0, never the query's D
    # (ProcessMlaRope, earlier in ProcessOptionalTensors, refuses a TND D 512 query without rope too)
    "a2.tnd_ifa": TILING,
    "a2.tnd_ifa_heads": TILING,
}
ON_ARCH35 = {
    **{f"list_{at}": TILING for at in DECODE},  # CheckPrefix: no tensor list
    # GetAndCheckPrefixShape reads N and D off the key: the tiling passes the prefix and the kernels
    # (flash_attention_score_block_cube.h) read it at the key's strides, here past its end (shared_prefix
    # REFUSED prefix_heads); a prefix holding the rows read runs
    **{f"heads_{at}": NOT_IMPLEMENTED for at in AT},
    "arch35.heads_short": NOT_IMPLEMENTED,
    "arch35.heads_fit": SUCCESS,
    # ConvertContextToParamsIFA passes IFATilingV2 no prefix: no rule sees it
    "int8.paged": SUCCESS,
    "int8.value_only": SUCCESS,
    "arch35.tnd": TILING,  # CheckPrefix: "when TND is used, system prefix is not supported!"
    **{name: TILING for name in SPLIT_FUSE},  # the same CheckPrefix rule (a block table: CheckPACrossover too)
}


def expected_on(soc: str) -> dict:
    return {**COMMON, **(ON_ARCH35 if soc == "Ascend910_95" else ON_A2)}


@pytest.fixture(scope="module", params=["Ascend910B", "Ascend910_93", "Ascend910_95"])
def chip(request):
    result = cabi.compile_and_run("fused_infer_attention_score_prefix.cpp", env={"ACLNN_EMU_SOC": request.param})
    assert result.returncode == 0, result.stdout + result.stderr
    return request.param, cabi.rule_codes(result.stdout)


def test_every_case_code(chip):
    soc, codes = chip
    wrong = {case: (codes.get(case), want) for case, want in expected_on(soc).items() if codes.get(case) != want}
    assert not wrong, f"{soc}: (got, expected) {wrong}"


def test_every_reported_case_is_asserted(chip):
    soc, codes = chip
    assert set(codes) == set(expected_on(soc))
