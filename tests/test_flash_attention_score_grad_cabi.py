"""aclnnFlashAttentionScoreGradV2 through the C ABI: the status code of every validation rule of the
reference (§1A), valid baselines that run both phases, and a numerics check of a C program's output."""

import numpy as np
import pytest

import cabi
import precision
from aclnn_emu import versions
from golden import flash_attention_score_grad as golden

NULLPTR, INVALID = 161001, 161002
OK = [
    "ok.layout.BSH",
    "ok.layout.SBH",
    "ok.layout.BSND",
    "ok.layout.BNSD",
    "ok.dtype.bf16",
    "ok.dtype.fp32",
    "ok.mode0.mask_band",
    "ok.mode1",
    "ok.mode2",
    "ok.mode3",
    "ok.mode4",
    "ok.mode5",
    "ok.mode6",
    "ok.pse1",
    "ok.pse0.row_broadcast",
    "ok.pse2",
    "ok.pse3",
    "ok.dropout",
    "ok.tokens_int32_max",
    "ok.inner_precise_ignored",
    "ok.empty_key",
    "ok.all_out_empty",
    "out.dq_dtype",
]
# Null checks are op_api (161001); headNum, ranks, head dims and the q/k/v/dy dtypes (InputDtypeCheck, which
# PreFlashAttentionScoreGrad runs before the L0 call) are op_api (161002); everything the infershape, kernel
# selection and tiling reject comes back as 161001, the other dtype errors included.
EXPECTED = {
    **{rule: 0 for rule in OK},
    **{
        f"null.{name}": NULLPTR
        for name in (
            "query",
            "keyIn",
            "value",
            "dy",
            "attentionIn",
            "dqOut",
            "dkOut",
            "dvOut",
            "workspaceSize",
            "executor",
        )
    },
    **{
        rule: INVALID
        for rule in (
            "head_num.zero",
            "rank.dy_2d",
            "dtype.query_int8",
            "dtype.key_mixed",
            "chip.query_hifloat8",
            "chip.query_fp8_e4m3",
            "shape.d_zero",
            "shape.rank4",
            "shape.rank4_lower_case_bsh",
            "shape.qd_kd",
            "shape.vd",
        )
    },
    **{
        rule: NULLPTR
        for rule in (
            "infershape.layout",
            "tiling.layout_lower_case",
            "tiling.tnd_in_v2",
            "dtype.atten_mask_fp16",
            "dtype.drop_mask_int8",
            "dtype.pse_bf16",
            "tiling.softmax_max_null",
            "tiling.softmax_sum_1d",
            "tiling.bsh_batch",
            "tiling.h1_heads",
            "tiling.head_num",
            "tiling.softmax_dtype",
            "tiling.attention_in_dtype",
            "tiling.softmax_shape",
            "tiling.attention_in_shape",
            "tiling.dy_shape",
            "tiling.keep_prob_zero",
            "tiling.keep_prob_above_one",
            "tiling.drop_null",
            "tiling.drop_size",
            "tiling.sparse_mode_9",
            "tiling.sparse_mode_negative",
            "tiling.sparse_mode_7_needs_tnd",
            "tiling.pse_type_4",
            "tiling.tokens_int64_max",
            "tiling.tokens_mode0",
            "tiling.mask_lead",
            "tiling.mask_rank3",
            "tiling.prefix_mode6",
            "tiling.pse_null_type0",
            "tiling.pse_dtype_type1",
            "tiling.pse_shape",
            "tiling.pse_alibi_not_causal",
            "tiling.pse_inner_shape",
            "tiling.mask_shape_mode0",
            "tiling.mask_shape_mode2",
            "tiling.mask_shape_mode6",
            "tiling.pad_tokens_int64",
            "out.dq_shape",
            "out.dv_shape",
            "tiling.value_seq",
            "tiling.key_batch",
        )
    },
}


# The chip-dependent calls on Atlas A2/A3 (arch32 tilings): dropout needs a dropMask, a dropMask with
# keepProb 1 is ignored, an uncompressed attenMask must be exactly [S1, S2].
EXPECTED.update(
    {
        "chip.drop_generated": NULLPTR,
        "chip.drop_with_keep_prob_one": 0,
        "chip.mask_larger_than_s1_s2": NULLPTR,
        "chip.mask_covers_only_in_elements": NULLPTR,
        "chip.prefix_mode6_without_mask": 0,
        "chip.layout_lower_case_bsnd": NULLPTR,
        "chip.alibi_pse_without_mask": 0,
        "chip.pse_type0_without_pse": NULLPTR,
        "chip.tokens_without_mask": NULLPTR,
        "chip.mask_larger_fp32": NULLPTR,
        # dy and attentionIn rows of another head dim than value's: how the kernels read them is not established
        "chip.dy_value_head_dim": 561003,
    }
)
# Ascend910_95: the op_api has no chip branch (aclnn_flash_attention_score_grad.cpp); the tiling
# (flash_attention_score_grad_tiling.cpp TilingFlashAttentionGradScore) runs the arch35 arch35 one.
ARCH35 = {
    # ..._regbase.cpp ProcessDropoutInfo: no dropMask means dropMaskOuter = false, the kernel generates it
    "tiling.drop_null": 0,
    "chip.drop_generated": 0,
    # ProcessDropoutInfo: "DropMask parameter is invalid, please check keepProb value."
    "chip.drop_with_keep_prob_one": NULLPTR,
    # ..._regbase.cpp CheckAttenMaskShape: an uncompressed mask needs rows x columns >= S1 x S2 only
    "chip.mask_larger_than_s1_s2": 0,
    "chip.mask_larger_fp32": 0,
    # accepted by the source, but how the kernel reads a mask narrower than S2 is not established
    "chip.mask_covers_only_in_elements": 561003,
    # CheckAttentionInShape (..._common_regbase.cpp) compares only the rank; no IsSameShapeButValueDLeEqD
    # of query/dy in the arch35 tiling: accepted, the kernel's indexing is not established
    "tiling.attention_in_shape": 561003,
    "tiling.dy_shape": 561003,
    "tiling.value_seq": 561003,
    # ProcessOptionalInput reads keepProb with no range check: > 1 runs without dropout, <= 0 is not established
    "tiling.keep_prob_above_one": 0,
    "tiling.keep_prob_zero": 561003,
    # ProcessPseInfo: no pse means no pse, whatever pseType (A2/A3's "pseType is not default" check is absent)
    "tiling.pse_null_type0": 0,
    "chip.pse_type0_without_pse": 0,
    # ProcessTokensInfo: int64 tokens, reset to INT32_MAX without an attenMask, checked only with one
    "tiling.tokens_int64_max": 0,
    "tiling.tokens_mode0": 0,
    "chip.tokens_without_mask": 0,
    # ProcessPseInfo runs after ProcessTokensInfo: without a mask the alibi pse sees nextTokens INT32_MAX
    "chip.alibi_pse_without_mask": NULLPTR,
    # SetSparseParams / SetPrefixSparseParams: mode 6 needs B prefix values with or without a mask
    "chip.prefix_mode6_without_mask": NULLPTR,
    # GetShapeAttrsInfo: strcmp on the layout, any other 4-letter layout is read as BSND
    "chip.layout_lower_case_bsnd": 0,
}
BY_FAMILY = {"Ascend910B": EXPECTED, "Ascend910_93": EXPECTED, "Ascend910_95": {**EXPECTED, **ARCH35}}


@pytest.fixture(scope="module")
def rules_run(family):
    return cabi.compile_and_run("flash_attention_score_grad_rules.cpp", env={"ACLNN_EMU_SOC": family})


def test_every_rule_returns_the_source_code(rules_run, family):
    assert rules_run.returncode == 0, rules_run.stdout + rules_run.stderr
    assert cabi.rule_codes(rules_run.stdout) == BY_FAMILY[family]


# Where another CANN release answers differently (the tables above are 8.5.0's; aclnn_emu/versions.py declares
# each rule), with that release's source; FAG_API is attention/flash_attention_score_grad/op_api/ at each ref.
FAG_API = "aclnn_flash_attention_score_grad.cpp"
# 9.0.0 and 9.1.0 InputDtypeCheck: FP8/HiFloat8 queries pass where StrideLimited() is false (Ascend950); ARCH35's
# OpDef registers them, and ProcessQuantInfo without the dequant scales V2 cannot pass is not established.
QUANT_QUERY = {"chip.query_hifloat8": 561003, "chip.query_fp8_e4m3": 561003}
# 9.1.0 aclnnFlashAttentionScoreGradV2GetWorkspaceSize: InputOutputDtypeAndShapeCheck after the headNum check:
# InputOutputShapeCheck (strcmp'd layout, ranks, key/value and query/dy shapes but the last dim, batches,
# attentionIn = dy, dq/dk/dv = q/k/v) and the output dtypes; on Ascend950 the quant queries stop at the dq dtype.
IO_CHECK = {
    rule: INVALID
    for rule in (
        "infershape.layout",
        "tiling.layout_lower_case",
        "chip.layout_lower_case_bsnd",
        "tiling.bsh_batch",
        "tiling.key_batch",
        "tiling.value_seq",
        "tiling.dy_shape",
        "tiling.attention_in_shape",
        "out.dq_shape",
        "out.dv_shape",
        "out.dq_dtype",
        "chip.query_hifloat8",
        "chip.query_fp8_e4m3",
    )
}


# 9.0.0 and 9.1.0 GetInputShapeInfo on Atlas A2/A3 (StrideLimited), CheckDimT: TND without actualSeqQLen/KvLen.
TND_LENGTHS = {"tiling.tnd_in_v2": INVALID}

# 9.1.0 on Ascend950, op_host/arch35: CheckAttenMaskShape (..._common_regbase.cpp) wants an attenMask of exactly
# [S1, S2] unless the B or BN template could take the call, which an fp32 query rules out; GetShapeAttrsInfo
# (..._normal_regbase.cpp) compares value's head dim with dy's.
ARCH35_9_1 = {"chip.mask_larger_fp32": NULLPTR, "chip.dy_value_head_dim": NULLPTR}


def release_expected(family: str, version: str) -> dict:
    codes = dict(BY_FAMILY[family])
    if version.startswith("9."):
        codes.update(QUANT_QUERY if family == "Ascend910_95" else TND_LENGTHS)
    if version == "9.1.0":
        codes.update(IO_CHECK)
        if family == "Ascend910_95":
            codes.update(ARCH35_9_1)
    return codes


@pytest.mark.parametrize("version", [v for v in versions.ORDER if v != versions.DEFAULT])
def test_every_rule_per_release(family, version):
    assert cabi.release_codes("flash_attention_score_grad_rules.cpp", family, version) == release_expected(
        family, version
    )


def test_output_dtype_mismatch_is_an_inferred_rule():
    """dq with another dtype than query fails ViewCopy on hardware (inferred): a warning by default,
    161001 under ACLNN_EMU_STRICT=1."""
    strict = cabi.compile_and_run("flash_attention_score_grad_rules.cpp", "out.dq_dtype", env={"ACLNN_EMU_STRICT": "1"})
    assert cabi.rule_codes(strict.stdout) == {"out.dq_dtype": NULLPTR}


def test_c_program_gradients_match_the_golden():
    """A C++ program (BSH fp16, GQA, causal) runs both phases and prints its inputs and dq/dk/dv."""
    result = cabi.compile_and_run("flash_attention_score_grad_numerics.cpp")
    assert result.returncode == 0, result.stdout + result.stderr
    printed = {}
    for line in result.stdout.splitlines():
        name, *numbers = line.split()
        printed[name] = np.array(numbers, np.float64)
    q, dy, out = (printed[n].reshape(1, 12, 16).astype(np.float16) for n in ("q", "dy", "out"))
    k, v = (printed[n].reshape(1, 20, 8).astype(np.float16) for n in ("k", "v"))
    smax, ssum = (printed[n].reshape(1, 2, 12, 8).astype(np.float32) for n in ("smax", "ssum"))
    spec = dict(
        scale=0.35,
        head_num=2,
        layout="BSH",
        dtype_name="float16",
        atten_mask=np.triu(np.ones((2048, 2048), np.uint8), 1),
        sparse_mode=2,
    )
    want = golden.backward(q, k, v, dy, out, smax, ssum, **spec)
    floors = golden.largest_terms(q, k, v, dy, out, smax, ssum, **spec)
    for name, g, floor in zip(("dq", "dk", "dv"), want, floors):
        failure = precision.failure(printed[name].reshape(g.shape), g, "float16", floor=floor)
        assert failure is None, f"{name}: {failure}"
