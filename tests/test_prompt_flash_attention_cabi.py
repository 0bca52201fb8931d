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
                                     "empty_kv", "empty_out_before_dtype")},
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
        "kernel.quantScale2_dtype")},
    "not_implemented.sparse21": NOT_IMPLEMENTED,
}


@pytest.fixture(scope="module")
def codes(family):
    # the same table on every family: no PromptFlashAttentionV2 rule of the emulator depends on the chip yet
    result = cabi.compile_and_run("prompt_flash_attention_rules.cpp", env={"ACLNN_EMU_SOC": family})
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
