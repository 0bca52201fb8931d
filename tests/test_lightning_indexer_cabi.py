"""aclnnLightningIndexer through the C ABI: every validation rule's status code.

A generated entry point in CANN 8.5: nulls and dtypes are the framework's (161001 / 161002 /
561003), everything LIInfoParser::ParseAndCheck rejects is 561002, in its order.
tests/c/lightning_indexer_rules.cpp prints one "<rule> <code>" per case.
"""

import pytest

import cabi
from aclnn_emu import status, versions

PROGRAM = "lightning_indexer_rules.cpp"
NULL, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID
TILING, NO_KERNEL = status.ACLNN_ERR_INNER_TILING_ERROR, status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR
TILING_RULES = (
    "layout_mismatch",
    "layout_key",
    "layout_query",
    "sparse_count_0",
    "sparse_count_2049",
    "sparse_mode_1",
    "pre_tokens",
    "next_tokens",
    "return_values_pa",
    "pa_block_table_null",
    "pa_actual_seq_k_null",
    "tnd_actual_seq_k_null",
    "tnd_actual_seq_q_null",
    "block_table_not_pa",
    "block_table_rank",
    "rank.key",
    "rank.query",
    "rank.sparse_indices",
    "rank.weights",
    "n2",
    "actual_seq_q_size",
    "head_dim",
    "block_size",
    "block_count",
    "tnd_batch",
    "tnd_t",
    "bsnd_batch",
    "bsnd_actual_seq_k",
    "bsnd_weights_out_batch",
    "bsnd_actual_seq_q",
    "bsnd_s1",
    "weights_n1",
    "key_head_dim",
    "out_n2",
    "out_sparse_count",
)

EXPECTED = {
    **{f"null.{name}": NULL for name in ("query", "key", "weights", "sparseIndicesOut", "sparseValuesOut")},
    "null.sparseValuesOut_returned": NULL,
    "dtype.query_fp32": INVALID,
    "dtype.weights_fp32": INVALID,
    "dtype.weights_mixed": INVALID,
    "dtype.sparseIndicesOut_int64": INVALID,
    "dtype.sparseValuesOut_mixed": INVALID,
    "format.key_nz": INVALID,
    "optional.actual_seq_int64": 0,  # inferred: a portability warning unless strict
    **{f"tiling.{rule}": TILING for rule in TILING_RULES},
    # 8.5 has no tiling check of these (a multiple of 1024 past 2048 is 9.x's): the run reports them (sanitizer)
    "tiling.sparse_count_3072": TILING,
    "tiling.heads_65": 0,
    "tiling.values_rank": 0,
    "tiling.values_sparse_count": 0,
    "tiling.tnd_values_t": 0,
    "run.weights_fp32": INVALID,
    "tiling.layout_null_ok": 0,
    "tiling.sparse_count_low_word_ok": 0,
    "empty.all_outputs_ok": 0,
    "run.bsnd_ok": 0,
    "run.tnd_values_ok": 0,
    "run.paged_ok": 0,
    "run.null_values": NULL,
    "phase2.workspace_small": INVALID,
    "phase2.executor_null": NULL,
}


# 9.0.0 and branch 9.1.0, attention/lightning_indexer/op_host/op_api/aclnn_lightning_indexer.cpp
# aclnnLightningIndexerGetWorkspaceSize: a null query, or a null sparseValuesOut with returnValues, return
# ge::GRAPH_FAILED (-1); any other null sparseValuesOut becomes a [0] tensor of query's dtype (TensorHolder)
# before aclnnInnerLightningIndexerGetWorkspaceSize, the generated entry point of 8.5.
WRAPPER = {
    "null.query": status.GRAPH_FAILED,
    "null.sparseValuesOut": 0,
    "null.sparseValuesOut_returned": status.GRAPH_FAILED,
    "run.null_values": 0,
}

# 9.0.0 and branch 9.1.0 (the same in both), attention/lightning_indexer/op_host: lightning_indexer_def.cpp pairs
# FLOAT weights with bf16/fp16 query and key; lightning_indexer_tiling.cpp GetAndCheckAttrParaInfo also accepts a
# sparse_count that is a multiple of 1024 (past 2048 aclnn-emu does not establish the kernels' selection: 561003),
# CheckShapeDim / ValidateInputShapesMatch check sparse_values like sparse_indices with return_value, GetN1Size
# refuses N1 > 64.
TILING_9 = {
    "dtype.weights_fp32": 0,
    "run.weights_fp32": 0,
    "tiling.sparse_count_3072": NO_KERNEL,
    "tiling.heads_65": TILING,
    "tiling.values_rank": TILING,
    "tiling.values_sparse_count": TILING,
    "tiling.tnd_values_t": TILING,
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


def test_inferred_rule_fails_under_strict(program):
    codes, _ = _codes(program, ACLNN_EMU_STRICT="1")
    assert codes["optional.actual_seq_int64"] == NO_KERNEL


@pytest.mark.parametrize("version", versions.ORDER)
@pytest.mark.parametrize("soc, code", [("Ascend910B", 0), ("Ascend910_93", 0), ("Ascend910_95", NO_KERNEL)])
def test_registered_chips_only(program, soc, code, version):
    """In every release (the 9.x wrapper hands the call to the generated entry point unchanged). Branch 9.1.0
    registers ascend950 and arch35 kernels, which aclnn-emu does not emulate (versions.UNEMULATED)."""
    codes, _ = _codes(program, "soc", ACLNN_EMU_SOC=soc, ACLNN_EMU_CANN_VERSION=version)
    assert codes == {"soc.bsnd": code}


@pytest.mark.parametrize("version", versions.ORDER)
def test_every_rule_per_release(program, version):
    codes, _ = _codes(program, ACLNN_EMU_CANN_VERSION=version)
    assert codes == {**EXPECTED, **({**WRAPPER, **TILING_9} if version.startswith("9.") else {})}
