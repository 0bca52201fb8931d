"""aclnnIncreFlashAttention V1, V2 and V3 through the C ABI, once per chip family. None has checks of
its own: each passes the generated inner op (aclnnInnerIncreFlashAttention) its arguments and fixed
values, so each code comes from the shared path; the rules here are the ones the adapters change.
- aclnn_incre_flash_attention.cpp (V1): pseShift dropped (`(void) pseShift`), no quantisation,
  antiquantisation, block table or kvPaddingSize, blockSize 0, innerPrecise 1;
- aclnn_incre_flash_attention_v2.cpp (V2): the same but the quantisation parameters go on;
- aclnn_incre_flash_attention_v3.cpp (V3): everything but kvPaddingSize goes on."""

import cabi

NULLPTR, TILING, NOT_EMULATED = 161001, 561002, 561003
ENTRY = {
    "v1": "aclnn_incre_flash_attention.cpp aclnnIncreFlashAttentionGetWorkspaceSize",
    "v2": "aclnn_incre_flash_attention_v2.cpp aclnnIncreFlashAttentionV2GetWorkspaceSize",
    "v3": "aclnn_incre_flash_attention_v3.cpp aclnnIncreFlashAttentionV3GetWorkspaceSize",
}
IFA_A2 = "incre_flash_attention_tiling.cpp IFATiling::"
IFA_CHECK = "incre_flash_attention_tiling_check.cpp IFATiling::"
PFA_V2 = "prompt_flash_attention_tiling_v2.cpp PromptFlashAttentionTilingV2::"
GENERATED = "the generated aclnnInnerIncreFlashAttentionGetWorkspaceSize"


def _per_entry(version):
    """(code, source) of each rule every entry point reports, on Atlas A2/A3."""
    dropped = version in ("v1", "v2")
    pse = (0, f"{ENTRY[version]}: (void) pseShift") if dropped else None
    return {
        f"{version}.ok": (0, ENTRY[version]),
        f"{version}.null.query": (NULLPTR, f"{GENERATED}: required input query"),
        f"{version}.null.key": (NULLPTR, f"{GENERATED}: required input key"),
        f"{version}.mask": (0, f"{IFA_CHECK}ProcessAttenMask"),
        f"{version}.actual_seq": (0, f"{IFA_A2}ParseActualSeqLens"),
        f"{version}.actual_seq_range": (TILING, f"{IFA_A2}ParseActualSeqLens: at most the key's S"),
        f"{version}.pse": pse or (0, f"{IFA_CHECK}ProcessPseShift"),
        f"{version}.pse_dtype": pse or (NOT_EMULATED, "incre_flash_attention_def.cpp: no kernel for a FLOAT pse"),
        f"{version}.pse_rank": pse or (TILING, f"{IFA_CHECK}ProcessPseShift: 4 dimensions"),
    }


A2 = {
    **_per_entry("v1"),
    **_per_entry("v2"),
    **_per_entry("v3"),
    "v2.post_quant": (0, f"{ENTRY['v2']}: quantScale2 goes on"),
    "v3.post_quant": (0, f"{ENTRY['v3']}: quantScale2 goes on"),
    "v3.int8_antiquant": (0, f"{ENTRY['v3']}: antiquantScale goes on"),
    "v3.paged": (0, f"{ENTRY['v3']}: blocktable and blockSize go on"),
    "v3.inner_precise0": (0, f"{IFA_A2}InputAttrsPreProcess: precision mode 0 or 1"),
    "v3.inner_precise2": (TILING, f"{IFA_A2}InputAttrsPreProcess: precision mode 0 or 1"),
    "v3.inner_precise4": (TILING, f"{IFA_A2}InputAttrsPreProcess: precision mode 0 or 1"),
}
# Ascend910_95: IFATilingV2 hands an FLOAT16/BF16 key to PromptFlashAttentionTilingV2.
ARCH35 = {
    **{f"{v}.actual_seq_range": (TILING, f"{PFA_V2}CheckActSeqLen: in [0, the key's S]") for v in ENTRY},
    "v3.pse_rank": (TILING, f"{PFA_V2}CheckPseShiftTypeAndShape: 4 dimensions"),
    "v3.inner_precise2": (0, f"{PFA_V2}CheckInnerPrecise: 0-3"),
    "v3.inner_precise4": (TILING, f"{PFA_V2}CheckInnerPrecise: 0-3"),
}
BY_FAMILY = {"Ascend910B": A2, "Ascend910_93": A2, "Ascend910_95": {**A2, **ARCH35}}


def test_every_rule_returns_the_source_code(family):
    cabi.assert_rules_by_family("incre_flash_attention_v1_v3_rules.cpp", family, BY_FAMILY[family])
