"""aclnnGatherPaKvCache through the C ABI: every validation rule's code on each chip (and under
ACLNN_EMU_STRICT=1), one numerics program checked against the loop references, and the doc sample."""

import pathlib

import numpy as np
import pytest

import cabi
from golden import gather_pa_kv_cache as golden
from golden.scatter_pa_kv_cache import same_bits

ROOT = pathlib.Path(__file__).resolve().parent.parent
OK, NULL, INVALID, TILING, KERNEL, AICORE = 0, 161001, 161002, 561002, 561003, 507015

# Atlas A2/A3: Tiling4GatherPaKvCache checks the mode string and five positive sizes, nothing else.
A2 = {
    "ok.norm": OK,
    "workspace.norm": 16 * 1024 * 1024,
    "ok.norm_cumsum": OK,
    "ok.no_seq_offset": OK,
    "ok.null_cache_mode_is_norm": OK,
    "ok.nchw_is_nd": OK,
    "ok.int8": OK,
    "ok.nz_nd_caches": OK,
    "ok.nz_fractal_nz_caches": INVALID,
    "ok.empty_outputs_before_lookup": OK,
    "null.keyCache": NULL,
    "null.valueCache": NULL,
    "null.blockTables": NULL,
    "null.seqLens": NULL,
    "null.keyRef": NULL,
    "null.valueRef": NULL,
    "dtype.float": INVALID,
    "dtype.hifloat8": INVALID,
    "dtype.key_cache_differs": INVALID,
    "dtype.value_ref_differs": INVALID,
    "dtype.int64_indices": INVALID,
    "dtype.mixed_indices": INVALID,
    "optional.seq_offset_int64": KERNEL,
    "optional.seq_offset_float": KERNEL,
    "format.key_ref_fractal_nz": INVALID,
    "format.block_tables_fractal_nz": INVALID,
    "format.caches_differ": INVALID,
    "tiling.cache_mode": TILING,
    "tiling.cache_mode_empty": TILING,
    "tiling.cache_mode_case": TILING,
    "tiling.blockSize": TILING,
    "tiling.blockSize_nz": TILING,
    "tiling.numTokens": TILING,
    "tiling.numblkTabCol": TILING,
    "tiling.numblkTabCol_missing": TILING,
    "tiling.tokenSizeK": TILING,
    "tiling.tokenSizeK_missing": TILING,
    "tiling.tokenSizeV": TILING,
    "tiling.tokenSizeV_nz_missing": TILING,
    # the arch35 shape checks: A2/A3 runs these calls (reads outside a tensor are sanitizer reports)
    "t95.key_cache_rank": OK,
    "t95.key_cache_dims": OK,
    "t95.key_cache_nz_dim3": INVALID,
    "t95.key_cache_fractal_nz_in_norm": INVALID,
    "t95.key_cache_nd_in_pa_nz": OK,
    "t95.value_cache_rank": OK,
    "t95.value_cache_nz_dim3": INVALID,
    "t95.value_cache_dims": OK,
    "t95.value_cache_nz_dims": INVALID,
    "t95.block_tables_rank": OK,
    "t95.seq_lens_rank": OK,
    "t95.seq_lens_len": OK,
    "t95.seq_lens_len_cumsum": OK,
    "t95.key_rank": OK,
    "t95.key_dims": OK,
    "t95.key_heads": OK,
    "t95.key_nz_hidden": INVALID,
    "t95.value_rank": TILING,
    "t95.value_tokens": OK,
    "t95.value_dims": OK,
    "t95.value_nz_hidden": INVALID,
    "t95.seq_offset_rank": OK,
    "t95.seq_offset_len": OK,
    # Emulator's choice, not a CANN fact: a table too wide for the PA_NZ locate buffer makes the
    # kernel divide by zero (undefined on the NPU); aclnn-emu reports an AI Core exception.
    "kernel.nz_table_width": AICORE,
    "inferred.nz_token_over_148k": OK,
}

# Ascend910_95: GatherPaKvCacheTiling; 12 dtypes, INT64 indices, FRACTAL_NZ caches for PA_NZ.
A95 = {rule: TILING if rule.startswith("t95.") else code for rule, code in A2.items()}
A95.update(
    {
        "workspace.norm": 32,
        "ok.nz_nd_caches": TILING,
        "ok.nz_fractal_nz_caches": OK,
        "dtype.float": OK,
        "dtype.hifloat8": OK,
        "dtype.int64_indices": OK,
        "tiling.cache_mode_empty": OK,
        "kernel.nz_table_width": TILING,
        "inferred.nz_token_over_148k": TILING,
    }
)
EXPECTED = {"Ascend910B": A2, "Ascend910_93": A2, "Ascend910_95": A95}

# The releases (ACLNN_EMU_CANN_VERSION). 8.5.0-beta.1 and 9.0.0 still generate the entry point (no
# op_api/ under attention/gather_pa_kv_cache at tags v8.5.0-beta.1, v9.0.0): 8.5.0's codes.
# Branch 9.1.0, attention/gather_pa_kv_cache/op_host/op_api/aclnn_gather_pa_kv_cache.cpp
# aclnnGatherPaKvCacheGetWorkspaceSize: CheckNullptr (161001), the return when any cache or output is
# empty, CheckShape and CheckDtypeValid (161002), then l0op::GatherPaKvCache, whose failed infershape,
# kernel lookup or tiling is a nullptr result: 561103. Every 161002 of the generated entry point was
# its kernel lookup, so 8.5.0's 161002, 561003 and 561002 become 561103 unless the op_api's own checks
# decide first.
INNER = 561103
OP_API_9_1 = {
    **{
        name: OK
        for name in (
            "tiling.blockSize",
            "tiling.blockSize_nz",
            "tiling.tokenSizeK",
            "tiling.tokenSizeV",
            "t95.key_cache_dims",
            "t95.key_dims",
        )
    },  # an empty cache or output  # fmt: skip
    **{
        name: INVALID
        for name in (
            "tiling.numblkTabCol_missing",
            "tiling.tokenSizeV_nz_missing",
            "t95.key_cache_rank",
            "t95.value_cache_rank",
            "t95.block_tables_rank",
            "t95.seq_lens_rank",
            "t95.key_rank",
        )
    },  # CheckShape's ranks  # fmt: skip
    **{
        name: INVALID
        for name in (
            "dtype.key_cache_differs",
            "dtype.value_ref_differs",
            "dtype.mixed_indices",
            "optional.seq_offset_int64",
            "optional.seq_offset_float",
        )
    },  # CheckDtypeValid  # fmt: skip
}
OFF_A2_LIST = {"dtype.hifloat8": INVALID}  # CheckDtypeValid's A2/A3 list has no HIFLOAT8 (Ascend950's has)


def _behind_op_api(codes: dict) -> dict:
    return {rule: INNER if code in (INVALID, KERNEL, TILING) else code for rule, code in codes.items()}


A2_9_1 = {**_behind_op_api(A2), **OP_API_9_1, **OFF_A2_LIST}
BY_RELEASE = {
    "8.5.0-beta.1": EXPECTED,
    "9.0.0": EXPECTED,
    "9.1.0": {"Ascend910B": A2_9_1, "Ascend910_93": A2_9_1, "Ascend910_95": {**_behind_op_api(A95), **OP_API_9_1}},
}


def test_status_codes(family):
    result = cabi.compile_and_run("gather_pa_kv_cache_codes.cpp", env={"ACLNN_EMU_SOC": family})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == EXPECTED[family]


@pytest.mark.parametrize("version", BY_RELEASE)
def test_status_codes_per_release(family, version):
    """The same calls under each other release (8.5.0, the default, is test_status_codes)."""
    env = {"ACLNN_EMU_SOC": family, "ACLNN_EMU_CANN_VERSION": version}
    result = cabi.compile_and_run("gather_pa_kv_cache_codes.cpp", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == BY_RELEASE[version][family]


def test_strict_mode_returns_the_code_of_the_inferred_rule():
    """The code is aclnn-emu's estimate of what the NPU most likely returns (an inferred rule), not
    a CANN fact."""
    result = cabi.compile_and_run("gather_pa_kv_cache_codes.cpp", env={"ACLNN_EMU_STRICT": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == {**A2, "inferred.nz_token_over_148k": AICORE}


def test_numerics_through_the_c_abi(tmp_path):
    heads, head, blocks, block, rows = 2, 64, 5, 16, 48
    result = cabi.compile_and_run("gather_pa_kv_cache_numerics.cpp", tmp_path / "outputs.bin")
    assert result.returncode == 0, result.stdout + result.stderr
    got = np.fromfile(tmp_path / "outputs.bin", np.float16)
    table = np.array([[3, 0, 4], [1, 2, 0], [4, 4, 1]])
    lens = [20, 9, 16]
    size = blocks * block * heads * head
    nd, nz = (blocks, block, heads, head), (blocks, heads * head // 16, block, 16)
    data = {seed: cabi.lcg_fp16(size if seed < 7 else rows * heads * head, seed) for seed in range(3, 11)}
    norm = golden.a2_norm(
        data[3].reshape(nd),
        data[4].reshape(nd),
        table,
        lens,
        data[7].reshape(rows, heads, head),
        data[8].reshape(rows, heads, head),
        seq_offset=[0, 16, 5],
    )
    paged = golden.a2_nz(
        data[5].reshape(nz),
        data[6].reshape(nz),
        table,
        [0, 20, 29, 45],
        data[9].reshape(rows, -1),
        data[10].reshape(rows, -1),
        cumsum=True,
    )
    sent = [cabi.lcg_fp16(45 * heads * head, seed) for seed in (1, 2)]
    assert same_bits(got, np.concatenate([x.reshape(-1) for x in norm + paged + sent]))
    # cumulative lengths on the A2/A3 PA_NZ kernel: where batch 0 starts is read before it is copied in
    assert "uninitialized-read" in result.stderr


def test_sample_runs_unchanged_on_the_default_chip():
    result = cabi.compile_and_run(ROOT / "samples" / "aclnnGatherPaKvCache.cpp")
    assert result.returncode == 0, result.stdout + result.stderr
    # block 1 of the all-ones cache, 12 tokens of 32 x 2 fp16: the sample prints the first 256 values
    assert result.stdout.splitlines() == [f"result[{i}] is: 1" for i in range(256)]
    assert "sanitizer" not in result.stderr
