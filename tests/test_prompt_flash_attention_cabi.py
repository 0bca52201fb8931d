"""aclnnPromptFlashAttentionV2 through the C ABI: every validation rule's status code, one numerics case."""

import numpy as np
import pytest

import cabi
import precision
from golden import prompt_flash_attention as golden

NULLPTR, INVALID, TILING = 161001, 161002, 561103

EXPECTED = {
    **{
        f"ok.{name}": 0
        for name in (
            "BNSD",
            "BSH",
            "BSND",
            "BNSD_BSND",
            "NSD",
            "sparse0",
            "sparse1",
            "sparse2",
            "sparse3",
            "sparse4",
            "gqa",
            "int8",
            "fp16_int8_out",
            "actual_seq",
            "empty_kv",
            "empty_out_before_dtype",
            "SH",
            "SH_one_batch",
            "SH_padded_d",
            "TND",
            "TND_causal",
            "TND_band",
            "TND_d192",
            "TND_empty_kv",
            "TND_tokens_ignored",
            "sparse20",
            "mla_d192",
            "base_api_mla",
            "base_api_mla_bnsd",
            "base_api_mla_uneven",
        )
    },
    # D > Dv: A2/A3 pad V to D in the op_api; TilingV2 wants equal key and value shapes.
    "v2.d_gt_dv": 0,
    # S1 = 1: A2/A3 read a 2-D mask as [S1m, S2m] and take batch 1 or B.
    "v2.ifa_mask_batch": 0,
    "v2.ifa_mask_2d": 0,
    # fp16 with an fp16 (additive) mask: the high-performance path of A2/A3.
    "v2.fp16_mask": 0,
    # int8 scales with a bf16 query and an INT8 output: refused by A2/A3 ("quant.fp16_int8_out").
    "v2.bf16_int8_out_scales": TILING,
    # Post-quant per channel with D = 16: A2/A3 want D a multiple of 32 elements.
    "v2.quant2_per_channel_d16": TILING,
    # Post-quant scale [H] (1-D), [1, 1], or an offset of another rank: A2/A3 count elements only.
    "v2.quant2_1d_per_channel": 0,
    "v2.quant2_one_2d": 0,
    "v2.quant2_offset_rank": 0,
    # A 3-D quantScale2, D padded 8 -> 16, no quantOffset2: accepted from 8.5.0 (per release below).
    "v2.quant2_3d_null_offset": 0,
    # G = 128 with D 192 / Dv 128: A2/A3 keep the group limit of 64.
    "v2.mla_group": TILING,
    # A one-row query with a mask and negative tokens: A2/A3 apply the tokens.
    "v2.ifa_mask_tokens": TILING,
    # INT8 in and out, INT8 one-row query with D 256: A2/A3 have kernels for both.
    "v2.int8_int8_out": 0,
    "v2.int8_decode_d256": 0,
    # bf16 TND, D 192, equal batches, no mask: the A2/A3 var-len kernels run it.
    "v2.bf16_tnd_merge": 0,
    **{f"null.{name}": NULLPTR for name in ("query", "key", "value", "attentionOut", "inputLayout")},
    **{
        name: INVALID
        for name in (
            "dtype.qkv_same",
            "dtype.query",
            "dtype.attentionOut",
            "dtype.attenMask",
            "dtype.attenMask_int8",
            "shape.numHeads",
            "shape.qkv_rank",
            "shape.layout_rank",
            "shape.layout_empty",
            "shape.layout",
            "release.ntd",
            "shape.d_zero",
            "shape.d_max",
            "shape.d_gt_dv_int8",
            "format.nd",
            "out.shape",
        )
    },
    **{
        name: TILING
        for name in (
            "infershape.bsh_rank",
            "d.equal",
            "mask.bf16_dtype",
            "quant.int8_fp16_out",
            "shape.query_empty",
            "shape.layout_exact",
            "empty.int8",
            "empty.n",
            "quant.int8_scales_null",
            "quant.int8_scales_empty",
            "heads.negative",
            "heads.max",
            "heads.query",
            "heads.key",
            "heads.divisible",
            "heads.group",
            "batch.equal",
            "actual_seq.actualSeqLengths_len",
            "actual_seq.query_range",
            "actual_seq.key_range",
            "mask.rank",
            "mask.shape",
            "mask.compressed_shape",
            "sparse.mode",
            "sparse.band_negative",
            "sparse.mask_required",
            "sparse.mask_dtype",
            "tokens.both_negative",
            "tokens.order",
            "tokens.next_vs_s1",
            "tokens.pre_vs_s2",
            "tokens.pre_vs_actual_kv",
            "tokens.next_vs_actual_q",
            "tokens.int8_band_negative",
            "quant.offset_uncomputed_rows",
            "tokens.band_next",
            "tokens.band_pre",
            "quant.fp16_int8_out",
            "quant2.scale_null",
            "quant2.scale_empty",
            "quant2.per_channel_align",
            "quant2.scale_dtype",
            "quant2.offset_dtype",
            "quant2.bf16_scale",
            "quant2.fp16_scale",
            "quant2.offset_size",
            "quant2.size",
            "kernel.deqScale1_dtype",
            "kernel.quantScale1_dtype",
            "kernel.quantScale2_dtype",
            # BSH with a FRACTAL_NZ-shaped (4-D) query: the op_api reads D from it, infershape rejects rank 4.
            "infershape.bsh_nz",
            # sparseMode 20-22 (CheckBaseApiRequiredInput, CheckBaseApiOptionalInput).
            "base_api.empty",
            "base_api.fp16_dtypes",
            "base_api.bf16_dtypes",
            "base_api.mask",
            "base_api.layout",
            "base_api.nsd_not_sh",
            "base_api.sh_only",
            "base_api.actual_null",
            # CheckBaseApiPse: the base-API mask is pseShift; without one, sparseMode 21 and 22 fail
            "base_api.sparse21_without_pse",
            "base_api.sparse22_without_pse",
            "base_api.int8_kernel",
            "base_api.lengths_fit",
            "base_api.lengths_fit_mla",
            "base_api.sh_dv",
            "base_api.mla_lengths_read",
            # SH (the A2/A3 tiling).
            "sh.batch_equal",
            "batch.sh_max",
            "sh.q_kv_diff",
            "sh.sum",
            "quant.sh_int8_out",
            "sh.kv_hidden",
            # TND (CheckInputShapeWhenLayoutIsTND, CheckActSeqWhenLayoutIsTND, the TND template).
            "io.tnd_int8",
            "tnd.actual_len_max",
            "tnd.actual_null",
            "tnd.actual_empty",
            "tnd.query_t",
            "tnd.key_t",
            "tnd.kv_n",
            "tnd.query_n",
            "tnd.group",
            "tnd.d",
            "tnd.group_d192",
            "tnd.dtype",
            "tnd.actual_len_equal",
            "tnd.actual_negative",
            "tnd.actual_decreasing",
            "tnd.sparse_mode",
            "tnd.mode0_mask",
            "tnd.band_dv",
            "tnd.causal_s1_s2",
            "tnd.band_tokens",
        )
    },
}


# Where Ascend910_95 (TilingV2, the arch35 kernels) answers differently from Atlas A2/A3, with the
# source file and function that decide it. Every other rule gives the A2/A3 code there too.
TILING_V2 = "prompt_flash_attention_tiling_v2.cpp"
ARCH35 = {
    **{
        f"ok.{name}": (TILING, f"{TILING_V2} CheckIO/SetInputLayout: no SH or NSD layout")
        for name in ("NSD", "SH", "SH_one_batch", "SH_padded_d")
    },
    "ok.sparse20": (TILING, f"{TILING_V2} CheckSparseMode: modes 0-4 only, no base-API path"),
    **{
        name: (TILING, f"{TILING_V2} CheckSparseMode: modes 0-4 only")
        for name in (
            "ok.base_api_mla_uneven",
            "ok.base_api_mla",
            "ok.base_api_mla_bnsd",
            "base_api.lengths_fit_mla",
            "base_api.sh_dv",
            "base_api.mla_lengths_read",
        )
    },
    "format.nd": (
        0,
        "aclnn_prompt_flash_attention_inner.cpp AnalysisInputShapeInfo: needPad = false on "
        "ASCEND910_95, so CheckTensorFormat never runs (portability warning instead)",
    ),
    **{
        name: (
            0,
            f"{TILING_V2} CheckEmptyTensor/SetEmptyTensor: empty key/value zero-fill the output before any "
            "layout, batch, head or int8 rule",
        )
        for name in ("base_api.empty", "empty.int8", "empty.n")
    },
    **{
        name: (
            0,
            f"{TILING_V2} runs TND by its own rules (CheckActSeq, GetAndCheckShape): no bf16-only, D, "
            "sparse-mode or per-batch S1 <= S2 rule of the A2/A3 var-len template",
        )
        for name in (
            "tnd.d",
            "tnd.group_d192",
            "tnd.dtype",
            "tnd.sparse_mode",
            "tnd.mode0_mask",
            "tnd.band_dv",
            "tnd.causal_s1_s2",
        )
    },
    "v2.d_gt_dv": (
        TILING,
        f"{TILING_V2} CheckKeyValueParamsConsistency: key and value shapes equal (but for "
        "the MLA D 192 / Dv 128); the op_api pads nothing on ASCEND910_95",
    ),
    "v2.ifa_mask_batch": (
        TILING,
        f"{TILING_V2} CheckMaskShape/CheckMaskShapeCrossSparse (enableIFAMask): with a "
        "one-row query the mask batch must be B",
    ),
    "v2.fp16_mask": (
        TILING,
        f"{TILING_V2} CheckInnerPrecise forces high precision, CheckMaskTypeAndShape then "
        "refuses an fp16 mask for fp16 input",
    ),
    "out.shape": (
        TILING,
        f"{TILING_V2} CheckQueryOutParamsConsistency: output dims must equal the query's, "
        "checked in the tiling (A2/A3: after it, 161002)",
    ),
    "io.tnd_int8": (
        0,
        f"{TILING_V2} has no TND int8 rule (CheckQuant, CheckTNDLayoutCrossover); the arch35 int8 "
        "kernels list InOutLayoutType_TND_TND",
    ),
    **{
        name: (0, f"{TILING_V2} CheckMultiFeatureCrossover: no int8-output band or offset rule")
        for name in ("tokens.int8_band_negative", "quant.offset_uncomputed_rows")
    },
    "v2.bf16_int8_out_scales": (
        0,
        f"{TILING_V2} CheckQuant: only an fp16 query refuses deqScale1/quantScale1/deqScale2 with postQuant",
    ),
    "v2.quant2_per_channel_d16": (
        0,
        f"{TILING_V2} CheckPostQuantShape: per channel = qN x vD elements, no 32-element D rule",
    ),
    **{
        name: (
            TILING,
            f"{TILING_V2} CheckPostQuantShape: a 1-D scale is [1], any other has qN x vD elements, "
            "the offset has the scale's rank",
        )
        for name in ("v2.quant2_1d_per_channel", "v2.quant2_one_2d", "v2.quant2_offset_rank")
    },
    "v2.mla_group": (0, f"{TILING_V2} SetAndCheckHeadNumRatio: G <= 64 only without enablePFAMLA"),
    "v2.ifa_mask_tokens": (
        0,
        f"{TILING_V2} SetSparseModeData: enableIFA with a mask sets both tokens to "
        "2147483647 before CheckSparseMode's token rules",
    ),
    **{
        name: (
            0,
            "prompt_flash_attention_template_tiling_key.h has no arch35 binary for it: portability warning "
            "(561103 under ACLNN_EMU_STRICT=1)",
        )
        for name in ("v2.int8_int8_out", "v2.int8_decode_d256", "v2.bf16_tnd_merge")
    },
}


# Where another CANN release (ACLNN_EMU_CANN_VERSION; the tables above are 8.5.0's) answers
# differently, per family, with that release's source (aclnn_emu/versions.py declares each rule).
# 9.x's unreviewed PFA tiling changes are not emulated (docs/coverage.md): there the 8.5 codes stand.
OPS_API = "attention/prompt_flash_attention/op_host/op_api/"
RELEASE_CHANGES = {
    ("8.5.0-beta.1", family): {
        "v2.quant2_3d_null_offset": (
            TILING,
            f"v8.5.0-beta.1:{OPS_API}aclnn_prompt_flash_attention_inner.cpp PreprocessQKVInput: pads the null "
            "quantOffset2 (8.5.0 pads it only when given)",
        )
    }
    for family in ("Ascend910B", "Ascend910_93")
}
# 9.0.0 and 9.1.0 ContiguousInput casts an fp16 attenMask to uint8 after the op_api's dtype checks: the tiling's
# mask dtype checks then see a byte mask (a bf16 query's, sparse mode 2's).
for _version, _api in (("9.0.0", f"v9.0.0:{OPS_API}"), ("9.1.0", "9.1.0:attention/prompt_flash_attention/op_api/")):
    for _family in ("Ascend910B", "Ascend910_93"):
        RELEASE_CHANGES[(_version, _family)] = {
            **{
                rule: (0, f"{_api}aclnn_prompt_flash_attention_inner.cpp ContiguousInput: l0op::Cast to DT_UINT8")
                for rule in ("mask.bf16_dtype", "sparse.mask_dtype")
            },
            "release.ntd": (
                TILING,
                f'{_api}aclnn_prompt_flash_attention_inner.cpp AnalysisAxis reads NTD and passes "NTD" on; '
                "op_host/prompt_flash_attention_tiling.cpp SetInputLayout knows no NTD",
            ),
        }
WITHDRAWN_ON_950 = {
    "9.0.0": f"v9.0.0:{OPS_API}aclnn_prompt_flash_attention_v2.cpp aclnnPromptFlashAttentionV2GetWorkspaceSize",
    "9.1.0": "9.1.0:attention/prompt_flash_attention/op_api/aclnn_prompt_flash_attention_v2.cpp "
    "aclnnPromptFlashAttentionV2GetWorkspaceSize",
}


def run_rules(**env):
    result = cabi.compile_and_run("prompt_flash_attention_rules.cpp", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return cabi.rule_codes(result.stdout)


@pytest.fixture(scope="module")
def codes():
    return run_rules()


@pytest.fixture(scope="module")
def codes_arch35():
    return run_rules(ACLNN_EMU_SOC="Ascend910_95")


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_status_code(codes, rule):
    assert codes.get(rule) == EXPECTED[rule], f"{rule}: got {codes.get(rule)}, expected {EXPECTED[rule]}"


def test_every_reported_rule_is_asserted(codes):
    assert set(codes) == set(EXPECTED)


def test_ascend910_93_runs_the_a2_tiling():
    """PlatformAscendC maps Ascend910_93 to SocVersion ASCEND910B: the same tiling, the same codes."""
    assert run_rules(ACLNN_EMU_SOC="Ascend910_93") == EXPECTED


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_status_code_on_ascend910_95(codes_arch35, rule):
    expected, source = ARCH35.get(rule, (EXPECTED[rule], "same rule as on A2/A3"))
    assert codes_arch35.get(rule) == expected, (
        f"{rule} on Ascend910_95: got {codes_arch35.get(rule)}, expected {expected} ({source})"
    )


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "9.0.0", "9.1.0"])
@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93", "Ascend910_95"])
def test_status_codes_per_release(version, soc):
    """Every rule under another release: 8.5.0's code (tables above) unless RELEASE_CHANGES says
    otherwise; on the Ascend910_95 family under 9.x (Ascend950) every call is 361001 (WITHDRAWN_ON_950)."""
    codes = run_rules(ACLNN_EMU_SOC=soc, ACLNN_EMU_CANN_VERSION=version)
    base = {r: ARCH35.get(r, (code, ""))[0] if soc == "Ascend910_95" else code for r, code in EXPECTED.items()}
    if soc == "Ascend910_95" and version in WITHDRAWN_ON_950:
        expected = {rule: 361001 for rule in base}  # WITHDRAWN_ON_950[version] decides it before any argument
    else:
        expected = {**base, **{r: code for r, (code, _) in RELEASE_CHANGES.get((version, soc), {}).items()}}
    wrong = {r: (codes.get(r), expected[r]) for r in expected if codes.get(r) != expected[r]}
    assert not wrong, f"{version} on {soc}: (got, expected) {wrong}"


def test_portability_rules_on_ascend910_95():
    """Under ACLNN_EMU_STRICT=1 the inferred rules return their code: a private format reaching kernel
    selection, and the TilingV2 results no arch35 kernel template covers."""
    strict = run_rules(ACLNN_EMU_SOC="Ascend910_95", ACLNN_EMU_STRICT="1")
    for rule in ("format.nd", "v2.int8_int8_out", "v2.int8_decode_d256", "v2.bf16_tnd_merge"):
        assert strict[rule] == TILING, rule


def test_numerics_through_c():
    result = cabi.compile_and_run("prompt_flash_attention_rules.cpp", "numerics")
    assert result.returncode == 0, result.stdout + result.stderr
    out = np.array([float(x) for x in result.stdout.split()]).reshape(1, 2, 4, 16)
    i = np.arange(128)
    qk = (((i * 7 % 13) - 6) / 4.0).astype(np.float16).reshape(1, 2, 4, 16)
    v = np.sin(0.37 * i).astype(np.float32).astype(np.float16).reshape(1, 2, 4, 16)
    precision.assert_meets(out, golden.attention(qk, qk, v, scale=0.25), "float16")
