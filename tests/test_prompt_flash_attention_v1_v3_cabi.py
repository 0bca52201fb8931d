"""aclnnPromptFlashAttention (V1) and aclnnPromptFlashAttentionV3 through the C ABI, once per chip
family: what each entry point drops from or adds to the shared path, each code with the source file
and function that decides it; V3's numerics with a pseShift and each innerPrecise."""

import numpy as np
import pytest

import cabi
import precision
from golden import prompt_flash_attention as golden

NULLPTR, INVALID, TILING = 161001, 161002, 561103
TILING_A2 = "prompt_flash_attention_tiling.cpp"
TILING_V2 = "prompt_flash_attention_tiling_v2.cpp"
INNER = "aclnn_prompt_flash_attention_inner.cpp"

# rule -> (code, the source that decides it); Atlas A2/A3 (Ascend910B, Ascend910_93: SocVersion ASCEND910B)
A2 = {
    "v1.ok": (0, "aclnn_prompt_flash_attention.cpp aclnnPromptFlashAttentionGetWorkspaceSize"),
    "v1.pse_dropped": (
        0,
        "aclnn_prompt_flash_attention.cpp aclnnPromptFlashAttentionGetWorkspaceSize: (void) pseShift",
    ),
    "v1.null.query": (NULLPTR, f"{INNER} InnerPromptFlashAttentionGetWorkspaceSize CheckNotNull"),
    "v1.fp16_mask": (0, f"{TILING_A2} RunBigKernelTilingWithParams: V1 fixes innerPrecise 1 (high performance)"),
    "v1.actual_seq_range": (TILING, f"{TILING_A2} CheckActualSeqLength"),
    "v3.ok": (0, "aclnn_prompt_flash_attention_v3.cpp aclnnPromptFlashAttentionV3GetWorkspaceSize"),
    **{
        name: (0, f"{TILING_A2} CheckPseShiftTypeAndShape: [1|B, N, >=S1, >=S2] of the query's dtype")
        for name in ("v3.pse", "v3.pse_batch_broadcast", "v3.pse_bf16", "v3.pse_larger")
    },
    "v3.pse_empty": (0, f"{TILING_A2} CheckPseShiftTypeAndShape: an empty pse sets usePseShift 0"),
    "v3.pse_dtype": (INVALID, f"{INNER} CheckTensorDataType: pseShift dtype follows q/k/v"),
    "v3.pse_empty_dtype": (INVALID, f"{INNER} CheckTensorDataType: any non-null pseShift"),
    "v3.pse_rank": (TILING, f"{TILING_A2} CheckPseShiftTypeAndShape: 4 dimensions"),
    **{
        name: (TILING, f"{TILING_A2} CheckPseShiftTypeAndShape: [1|B, N, >=S1, >=S2]")
        for name in ("v3.pse_heads", "v3.pse_short", "v3.pse_batch")
    },
    "v3.pse_tnd": (TILING, f"{TILING_A2} RunBigKernelTilingWithParams: When Layout is TND, not support PSE"),
    **{
        f"v3.inner_precise{p}": (0, f"{TILING_A2} RunBigKernelTilingWithParams: bit 1 row invalid, bit 0 precision")
        for p in (0, 1, 2, 3)
    },
    "v3.inner_precise4": (
        TILING,
        f"{TILING_A2} RunBigKernelTilingWithParams: no APPROXIMATE_COMPUTATION on ASCEND910B",
    ),
    "v3.inner_precise5": (0, f"{TILING_A2} RunBigKernelTilingWithParams: above 4 only a warning, its bits used"),
    "v3.inner_precise_negative": (0, f"{TILING_A2} RunBigKernelTilingWithParams: read as uint64, its bits used"),
    "v3.fp16_mask": (0, f"{TILING_A2} CheckMaskType: fp16 high performance takes an fp16 mask"),
    "v3.fp16_mask_high_precision": (TILING, f"{TILING_A2} CheckMaskType: fp16 high precision, bool/int8/uint8"),
    "v3.fp16_mask_pse": (
        TILING,
        f"{TILING_A2} RunBigKernelTilingWithParams: an fp16 pse forces high precision; then CheckMaskType",
    ),
    "v3.fp16_mask_row_invalid": (TILING, f"{TILING_A2} CheckMaskType: no fp16 mask when innerPrecise = 2 or 3"),
    "v3.base_api": (0, f"{TILING_A2} CheckBaseApiOptionalInput"),
    "v3.base_api_inner_precise2": (TILING, f"{TILING_A2} CheckBaseApiOptionalInput: innerPrecise 0 or 1"),
    "v3.base_api_bf16_inner_precise2": (0, f"{TILING_A2} CheckBaseApiOptionalInput: bf16 forced to high precision"),
    "v3.base_api_high_precision": (
        0,
        f"{TILING_A2} TilingGetBaseApiTilingKeyAttentionAscendC: fp16, innerPrecise 0, key + 2000000000",
    ),
    **{
        name: (0, f"{TILING_A2} CheckBaseApiPse / SetBaseApiPseInfo: checked, maskType left unset, not read")
        for name in ("v3.base_api_pse", "v3.base_api_pse_norm_2d", "v3.base_api_pse_norm_3d")
    },
    **{
        name: (0, f"{TILING_A2} CheckBaseApiPse / SetBaseApiPseInfo: the kernels' mask")
        for name in (
            "v3.base_api_pse_norm_4d",
            "v3.base_api_pse_alibi_3d",
            "v3.base_api_pse_alibi_4d",
            "v3.base_api_pse_alibi_compress",
            "v3.base_api_pse_mla_high_precision",
            "v3.base_api_pse_mla_half",
        )
    },
    **{
        name: (TILING, f"{TILING_A2} CheckBaseApiNormMask / CheckBaseApiAlibiMask: CheckBaseApiMaskVal")
        for name in (
            "v3.base_api_pse_norm_short",
            "v3.base_api_pse_norm_batch",
            "v3.base_api_pse_alibi_heads",
            "v3.base_api_pse_alibi_4d_batch",
        )
    },
    **{
        name: (TILING, f"{TILING_A2} CheckBaseApiMaskBasic: 2 to 4 dimensions")
        for name in ("v3.base_api_pse_norm_rank1", "v3.base_api_pse_norm_rank5")
    },
    "v3.base_api_pse_alibi_2d": (TILING, f"{TILING_A2} SetBaseApiAlibiMaskInfo: a 2-D alibi mask needs maxSeqLen 256"),
    "v3.base_api_pse_alibi_compress_4d": (TILING, f"{TILING_A2} CheckBaseApiAlibiMask: a compressed alibi mask is 3-D"),
    "v3.base_api_pse_mla_alibi": (TILING, f"{TILING_A2} CheckBaseApiPse: MLA not support alibi"),
    # Emulator gap: the 4-D norm mask is not shape-checked and its kernels would read past it (refused, 561103).
    "v3.base_api_pse_norm_4d_read_past": (TILING, "aclnn-emu refused.pse_read (prompt_flash_attention_base_api.h)"),
}
# Ascend910_95: TilingV2 (CheckSingleAttribute, CheckCrossoverAttribute) where it answers otherwise.
ARCH35 = {
    "v1.fp16_mask": (TILING, f"{TILING_V2} CheckInnerPrecise forces high precision; CheckMaskTypeAndShape"),
    "v3.inner_precise5": (TILING, f"{TILING_V2} CheckInnerPrecise: 0-3 only"),
    "v3.inner_precise_negative": (TILING, f"{TILING_V2} CheckInnerPrecise: 0-3 only"),
    "v3.fp16_mask": (TILING, f"{TILING_V2} CheckInnerPrecise forces high precision; CheckMaskTypeAndShape"),
    "v3.pse_tnd": (TILING, f"{TILING_V2} CheckTNDLayoutCrossover: When layout is TND, pse is not supported"),
    **{
        name: (TILING, f"{TILING_V2} CheckIO/SetInputLayout: no SH layout, no base-API path")
        for name in (
            "v3.base_api",
            "v3.base_api_inner_precise2",
            "v3.base_api_bf16_inner_precise2",
            "v3.base_api_high_precision",
            *(name for name in A2 if name.startswith("v3.base_api_pse")),
        )
    },
}
BY_FAMILY = {"Ascend910B": A2, "Ascend910_93": A2, "Ascend910_95": {**A2, **ARCH35}}


def test_every_rule_returns_the_source_code(family):
    cabi.assert_rules_by_family("prompt_flash_attention_v1_v3_rules.cpp", family, BY_FAMILY[family])


# 9.0.0 and 9.1.0 on Atlas A2/A3: the op_api casts an fp16 attenMask to uint8 after its dtype checks
# (ContiguousInput), so the tiling's CheckMaskType sees a byte mask and lets these through; on the Ascend910_95
# family (Ascend950) V1-V3 are withdrawn (361001 before any argument, aclnn_prompt_flash_attention_v3.cpp).
MASK_CAST = {rule: 0 for rule in ("v3.fp16_mask_high_precision", "v3.fp16_mask_pse", "v3.fp16_mask_row_invalid")}


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "9.0.0", "9.1.0"])
def test_every_rule_per_release(family, version):
    codes = cabi.release_codes("prompt_flash_attention_v1_v3_rules.cpp", family, version)
    expected = {rule: code for rule, (code, _) in BY_FAMILY[family].items()}
    if version.startswith("9."):
        expected = {rule: 361001 for rule in expected} if family == "Ascend910_95" else {**expected, **MASK_CAST}
    assert codes == expected


def _numerics_golden(inner_precise, arch35):
    """What the program's numerics case computes: q = k on a quarter grid, v = sin, pse on a half
    grid, row 3 fully masked and one key of row 5."""
    i = np.arange(2 * 8 * 16)
    qk = (((i * 7) % 13 - 6) / 4.0).astype(np.float16).reshape(1, 2, 8, 16)
    v = np.sin(0.37 * i).astype(np.float16).reshape(1, 2, 8, 16)
    pse = ((np.arange(128) % 9 - 4) / 2.0).astype(np.float16).reshape(1, 2, 8, 8)
    mask = np.zeros((1, 8, 8), bool)
    mask[0, 3] = True
    mask[0, 5, 2] = True
    row_invalid = bool(inner_precise & 2)
    fill = -float(np.finfo(np.float32).max)
    kind = dict(high_precision=True) if arch35 else dict(x910_high_precision=True)  # fp16 pse: high precision
    return golden.attention(
        qk, qk, v, scale=0.25, sparse_mode=1, mask=mask, pse=pse, invalid_max=fill if row_invalid else None, **kind
    )


@pytest.mark.parametrize("inner_precise", [0, 1, 2, 3])
def test_v3_numerics_with_pse_and_each_inner_precise(family, inner_precise):
    result = cabi.compile_and_run(
        "prompt_flash_attention_v1_v3_rules.cpp", "numerics", inner_precise, env={"ACLNN_EMU_SOC": family}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = np.array([float(x) for x in result.stdout.split()]).reshape(1, 2, 8, 16)
    expected = _numerics_golden(inner_precise, family == "Ascend910_95")
    precision.assert_meets(out, expected, "float16")
    assert (out[0, :, 3] == 0).all() == bool(inner_precise & 2)
