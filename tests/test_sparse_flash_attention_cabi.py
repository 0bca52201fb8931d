"""aclnnSparseFlashAttention through the C ABI: every validation rule's status code.

A generated entry point in CANN 8.5: nulls and dtypes are the framework's (161001 / 161002 /
561003); SFAInfoParser::Parse and SFATilingCheck::Process reject with 561002, in their order.
The tiling accepts Ascend910B only, though the OpDef also registers Ascend910_93.
tests/c/sparse_flash_attention_rules.cpp prints one "<rule> <code>" per case.
"""

import pytest

import cabi
from aclnn_emu import status

PROGRAM = "sparse_flash_attention_rules.cpp"
NULL, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID
TILING, NO_KERNEL = status.ACLNN_ERR_INNER_TILING_ERROR, status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR
TILING_RULES = (
    "query_rope_null",
    "layout_query",
    "layout_kv",
    "layout_mismatch",
    "pa_key_rank",
    "lse_pa",
    "tnd_actual_seq_q_null",
    "actual_seq_q_size",
    "query_rope_rank",
    "pa_block_table_null",
    "block_table_rank",
    "block_table_dim1",
    "rank.query",
    "layout_rank.query",
    "rank.key",
    "layout_rank.key",
    "sparse_mode",
    "sparse_block_size_3",
    "sparse_block_size_256",
    "pre_tokens",
    "next_tokens",
    "attention_mode_0",
    "attention_mode",
    "key_rope_null",
    "pa_actual_seq_kv_null",
    "batch",
    "n2",
    "g",
    "head_dim",
    "head_dim_v",
    "rope_dim",
    "block_size_align",
    "block_size_sparse",
    "shape.key",
    "shape.value",
    "shape.key_rope",
    "shape.query_rope",
    "shape.sparse_indices",
    "shape.attention_out",
    "actualSeqLengthsQ_batch",
    "tnd_actual_seq_kv_null",
    "actualSeqLengths_batch",
    "block_table_not_pa",
    "block_table_batch",
)

EXPECTED = {
    **{
        f"null.{name}": NULL
        for name in ("query", "key", "value", "sparseIndices", "attentionOutOut", "softmaxMaxOut", "softmaxSumOut")
    },
    "null.softmaxMaxOut_without_lse": NULL,
    "null.softmax_both_without_lse": NULL,
    "dtype.query_fp32": INVALID,
    "dtype.value_mixed": INVALID,
    "dtype.sparseIndices_int64": INVALID,
    "dtype.softmaxMaxOut_fp16": INVALID,
    "dtype.attentionOutOut_mixed": INVALID,
    "optional.query_rope_fp16": 0,  # inferred: a portability warning unless strict
    "optional.actual_seq_int64": 0,
    **{f"tiling.{rule}": TILING for rule in TILING_RULES},
    "tiling.layout_null_ok": 0,
    "tiling.softmax_shape_unchecked_ok": 0,
    "tiling.tnd_softmax_shape": 0,
    "tiling.tnd_empty_key": TILING,  # CompareShape: the expected shape's first dim (T2) must not be 0
    "empty.all_outputs_ok": 0,
    "run.bsnd_ok": 0,
    "run.tnd_ok": 0,
    "run.paged_ok": 0,
    "run.null_softmax": NULL,
    "run.null_value": NULL,
    "phase2.workspace_small": INVALID,
    "phase2.executor_null": NULL,
}


# 9.0.0 and branch 9.1.0, attention/sparse_flash_attention/op_host/op_api/aclnn_sparse_flash_attention.cpp
# aclnnSparseFlashAttentionGetWorkspaceSize: with returnSoftmaxLse a null softmaxMax or softmaxSum returns
# ge::GRAPH_FAILED (-1); without it, both null become [0] FLOAT tensors (TensorHolder) before
# aclnnInnerSparseFlashAttentionGetWorkspaceSize, the generated entry point of 8.5 (one null alone still
# reaches its null check). Branch 9.1.0 adds `valueTensor = (value == nullptr) ? key : value`.
WRAPPER = {
    "null.softmaxMaxOut": status.GRAPH_FAILED,
    "null.softmaxSumOut": status.GRAPH_FAILED,
    "null.softmax_both_without_lse": 0,
    "run.null_softmax": 0,
}
VALUE_IS_KEY = {"null.value": 0, "run.null_value": 0}
# 9.0.0 and branch 9.1.0 op_host/sparse_flash_attention_tiling.cpp: CheckAttenOut compares softmaxMax/Sum with
# [B, N2, S1, G] / [N2, T1, G] when returnSoftmaxLse; CompareShape no longer refuses a first dim of 0, and what the
# kernel does with a TND key of T2 0 is not established (561003).
TILING_9 = {
    "tiling.softmax_shape_unchecked_ok": TILING,
    "tiling.tnd_softmax_shape": TILING,
    "tiling.tnd_empty_key": NO_KERNEL,
}
BY_RELEASE = {
    "8.5.0-beta.1": EXPECTED,
    "8.5.0": EXPECTED,
    "9.0.0": {**EXPECTED, **WRAPPER, **TILING_9},
    "9.1.0": {**EXPECTED, **WRAPPER, **VALUE_IS_KEY, **TILING_9},
}


@pytest.fixture(scope="module")
def program():
    return cabi.build(PROGRAM)


def _codes(program, *args, **env):
    return cabi.rules(program, *args, env=env)


def test_every_rule_returns_the_source_code(program):
    codes, stderr = _codes(program)
    assert codes == EXPECTED
    assert "ACLNN_EMU_STRICT=1 returns 561003" in stderr


def test_inferred_rules_fail_under_strict(program):
    codes, _ = _codes(program, ACLNN_EMU_STRICT="1")
    assert codes["optional.query_rope_fp16"] == NO_KERNEL
    assert codes["optional.actual_seq_int64"] == NO_KERNEL


@pytest.mark.parametrize("version", BY_RELEASE)
def test_every_rule_per_release(program, version):
    codes, stderr = _codes(program, ACLNN_EMU_CANN_VERSION=version)
    assert codes == BY_RELEASE[version]
    assert ("destroys the [0] placeholders" in stderr) == version.startswith("9.")


@pytest.mark.parametrize("version", BY_RELEASE)
@pytest.mark.parametrize("soc, code", [("Ascend910B", 0), ("Ascend910_93", TILING), ("Ascend910_95", NO_KERNEL)])
def test_chips_per_release(program, soc, code, version):
    """Ascend910_93 has a registered kernel but the tiling's GetNpuInfo refuses it until branch 9.1.0, whose
    GetNpuInfo takes NpuArch DAV_2201 (Atlas A2 and A3); the 9.x wrapper hands the call to the generated entry
    point unchanged. (9.1.0 also registers ascend950, not emulated: versions.UNEMULATED.)"""
    if soc == "Ascend910_93" and version == "9.1.0":
        code = 0
    codes, _ = _codes(program, "soc", ACLNN_EMU_SOC=soc, ACLNN_EMU_CANN_VERSION=version)
    assert codes == {"soc.bsnd": code}
