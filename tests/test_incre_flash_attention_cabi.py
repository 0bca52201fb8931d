"""aclnnIncreFlashAttentionV4 through the C ABI: every validation rule's status code, per chip.

Atlas A2 and A3 share the OpDef and IFATiling, so every code is the same on both; on
Ascend910_95 (IFATilingV2, not emulated) everything past the NULL checks and the empty-output
early return is 561003."""
import pytest

import cabi

SUCCESS, NULLPTR, INVALID, TILING, NOT_IMPLEMENTED = 0, 161001, 161002, 561002, 561003

OK = ("BNSD", "BSND", "BSH", "BSH_NBSD", "paged_blocks_h", "paged_blocks_n_d", "paged_bsh", "tensor_list",
      "int8_antiquant", "int8_per_tensor", "post_quant", "post_quant_per_channel", "mask_pse", "mask_covers_actual", "kv_padding",
      "empty_out_before_dtype", "mtp", "mtp_bsh_any_mask", "mtp_g32_s8", "kv_heads_more", "quant2_rank5")
TILING_RULES = (
    "query_empty", "heads_zero", "kv_heads", "bsh_h", "layout", "query_heads", "query_s", "tnd_rope",
    "inner_precise", "blocktable_empty", "pa_bnbd_layout", "kv_list_short", "kv_shape_same", "kv_list_rank",
    "kv_list_batch", "kv_list_heads", "kv_list_same", "bsh_dims", "bsh_d", "bnsd_dims", "bnsd_d", "format", "group",
    "pa_block_align16", "pa_block_align32", "batch", "head_dim", "kv_heads_max", "actual_seq_null",
    "actual_seq_len", "actual_seq_negative", "actual_seq_range", "pse_rank", "pse_shape", "pse_s", "mask_batch",
    "mask_s", "quant1.dequantScale1", "quant1.quantScale1", "quant1.dequantScale2", "quant2.scale_present",
    "quant2.offset_present", "quant2.scale_null", "quant2.shape_quantScale2", "quant2.shape_quantOffset2",
    "antiquant.unenabled", "antiquant.scale_null", "antiquant.rank_differ", "antiquant.per_tensor_antiquantScale",
    "antiquant.rank_antiquantScale", "antiquant.per_channel_antiquantScale",
    "antiquant.per_channel_antiquantOffset", "pa_nd_stride", "pa_block_zero", "pa_block_max", "pa_actual_seq",
    # incre_flash_attention_tiling_check.cpp: CheckQKOutShape, ProcessPseShift, CheckGqaIOTensor, CheckGqaAntiquantTensor
    "kv_nz_not_paged", "kv_nz.pse", "bsh_h_zero", "kv_nz.antiquant", "kv_nz.query_dtype", "kv_nz.shape", "kv_nz.antiquant_scale")

EXPECTED = {
    **{f"ok.{name}": SUCCESS for name in OK},
    **{f"null.{name}": NULLPTR for name in ("query", "key", "value", "attentionOut")},
    **{f"dtype.{name}": INVALID for name in ("query", "attentionOut", "key_list_mixed", "key_format")},
    **{f"kernel.{name}": NOT_IMPLEMENTED for name in ("pse_dtype", "mask_dtype", "blocktable_dtype",
                                                      "antiquant_fp32", "quant2_bf16_fp16_query")},
    # ifa_speculative (SplitUnbalanced's split past the batch), reads past the key or quantScale2
    **{f"refused.{name}": NOT_IMPLEMENTED for name in ("mtp", "mtp_int8", "kv_heads", "quant2_rank")},
    **{f"tiling.{name}": TILING for name in TILING_RULES},
}


def expected_on(soc: str) -> dict:
    if soc != "Ascend910_95":
        return EXPECTED
    return {rule: code if code == NULLPTR or rule == "ok.empty_out_before_dtype" else NOT_IMPLEMENTED
            for rule, code in EXPECTED.items()}


@pytest.fixture(scope="module", params=["Ascend910B", "Ascend910_93", "Ascend910_95"])
def chip(request):
    result = cabi.compile_and_run("incre_flash_attention_rules.cpp", env={"ACLNN_EMU_SOC": request.param})
    assert result.returncode == 0, result.stdout + result.stderr
    return request.param, cabi.rule_codes(result.stdout)


def test_every_rule_code(chip):
    soc, codes = chip
    wrong = {rule: (codes.get(rule), want) for rule, want in expected_on(soc).items() if codes.get(rule) != want}
    assert not wrong, f"{soc}: (got, expected) {wrong}"


def test_every_reported_rule_is_asserted(chip):
    assert set(chip[1]) == set(EXPECTED)
