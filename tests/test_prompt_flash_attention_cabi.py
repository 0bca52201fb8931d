"""aclnnPromptFlashAttentionV2 through the C ABI: every validation rule's status code, one numerics case."""
import numpy as np
import pytest

import cabi
import precision
from golden import prompt_flash_attention as golden

NULLPTR, INVALID, TILING, NOT_IMPLEMENTED = 161001, 161002, 561103, 561003

EXPECTED = {
    **{f"ok.{name}": 0 for name in ("BNSD", "BSH", "BSND", "BNSD_BSND", "NSD", "sparse0", "sparse1", "sparse2",
                                     "sparse3", "sparse4", "gqa", "int8", "fp16_int8_out", "actual_seq",
                                     "empty_kv", "empty_out_before_dtype", "SH", "SH_one_batch", "SH_padded_d",
                                     "TND", "TND_causal", "TND_band", "TND_d192", "TND_empty_kv", "TND_tokens_ignored",
                                     "sparse20", "sparse21", "sparse22")},
    **{f"null.{name}": NULLPTR for name in ("query", "key", "value", "attentionOut", "inputLayout")},
    **{name: INVALID for name in ("dtype.qkv_same", "dtype.query", "dtype.attentionOut", "dtype.attenMask",
                                  "dtype.attenMask_int8", "shape.numHeads", "shape.qkv_rank", "shape.layout_rank",
                                  "shape.layout_empty", "shape.layout", "shape.d_zero", "shape.d_max",
                                  "shape.d_gt_dv_int8", "format.nd", "out.shape")},
    **{name: TILING for name in (
        "infershape.bsh_rank", "d.equal", "mask.bf16_dtype", "quant.int8_fp16_out", "shape.query_empty",
        "shape.layout_exact", "empty.int8", "empty.n", "quant.int8_scales_null", "quant.int8_scales_empty",
        "heads.negative", "heads.max", "heads.query", "heads.key", "heads.divisible", "heads.group",
        "batch.equal", "actual_seq.actualSeqLengths_len", "actual_seq.query_range", "actual_seq.key_range",
        "mask.rank", "mask.shape", "mask.compressed_shape", "sparse.mode", "sparse.band_negative",
        "sparse.mask_required", "sparse.mask_dtype", "tokens.both_negative", "tokens.order",
        "tokens.next_vs_s1", "tokens.pre_vs_s2", "tokens.pre_vs_actual_kv", "tokens.next_vs_actual_q",
        "tokens.int8_band_negative", "quant.offset_uncomputed_rows", "tokens.band_next", "tokens.band_pre",
        "quant.fp16_int8_out", "quant2.scale_null", "quant2.scale_empty", "quant2.per_channel_align",
        "quant2.scale_dtype", "quant2.offset_dtype", "quant2.bf16_scale", "quant2.fp16_scale",
        "quant2.offset_size", "quant2.size", "kernel.deqScale1_dtype", "kernel.quantScale1_dtype",
        "kernel.quantScale2_dtype",
        # BSH with a FRACTAL_NZ-shaped (4-D) query: the op_api reads D from it, infershape rejects rank 4.
        "infershape.bsh_nz",
        # sparseMode 20-22 (CheckBaseApiRequiredInput, CheckBaseApiOptionalInput).
        "base_api.empty", "base_api.fp16_dtypes", "base_api.bf16_dtypes", "base_api.mask", "base_api.layout",
        "base_api.nsd_not_sh", "base_api.sh_only", "base_api.actual_null", "base_api.int8_kernel",
        "base_api.lengths_fit",
        # SH (the A2/A3 tiling).
        "sh.batch_equal", "batch.sh_max", "sh.q_kv_diff", "sh.sum", "quant.sh_int8_out", "sh.kv_hidden",
        # TND (CheckInputShapeWhenLayoutIsTND, CheckActSeqWhenLayoutIsTND, the TND template).
        "io.tnd_int8", "tnd.actual_len_max", "tnd.actual_null", "tnd.actual_empty", "tnd.query_t", "tnd.key_t",
        "tnd.kv_n", "tnd.query_n", "tnd.group", "tnd.d", "tnd.group_d192", "tnd.dtype", "tnd.actual_len_equal",
        "tnd.actual_negative", "tnd.actual_decreasing", "tnd.sparse_mode", "tnd.mode0_mask", "tnd.band_dv",
        "tnd.causal_s1_s2", "tnd.band_tokens")},
    "not_implemented.base_api_mla": NOT_IMPLEMENTED,
}


@pytest.fixture(scope="module")
def codes():
    result = cabi.compile_and_run("prompt_flash_attention_rules.cpp")
    assert result.returncode == 0, result.stdout + result.stderr
    return cabi.rule_codes(result.stdout)


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_status_code(codes, rule):
    assert codes.get(rule) == EXPECTED[rule], f"{rule}: got {codes.get(rule)}, expected {EXPECTED[rule]}"


def test_every_reported_rule_is_asserted(codes):
    assert set(codes) == set(EXPECTED)


def test_numerics_through_c():
    result = cabi.compile_and_run("prompt_flash_attention_rules.cpp", "numerics")
    assert result.returncode == 0, result.stdout + result.stderr
    out = np.array([float(x) for x in result.stdout.split()]).reshape(1, 2, 4, 16)
    i = np.arange(128)
    qk = (((i * 7 % 13) - 6) / 4.0).astype(np.float16).reshape(1, 2, 4, 16)
    v = np.sin(0.37 * i).astype(np.float32).astype(np.float16).reshape(1, 2, 4, 16)
    precision.assert_meets(out, golden.attention(qk, qk, v, scale=0.25), "float16")
