"""aclnnScatterPaKvCache through the C ABI: every validation rule's code on each chip, one numerics
program checked against the references, and the two spec samples."""

import pathlib

import numpy as np
import pytest

import cabi
from golden import scatter_pa_kv_cache as golden

ROOT = pathlib.Path(__file__).resolve().parent.parent
OK, NULL, INVALID, TILING, KERNEL, AICORE = 0, 161001, 161002, 561002, 561003, 507015

# Codes on Atlas A2/A3 (Membase tiling, reference §3.A.1-4).
A2 = {
    "ok.normal": OK,
    "ok.normal_nchw_is_nd": OK,
    "ok.normal_int64_slots": OK,
    "ok.nz": OK,
    "ok.nz_5d": TILING,  # CheckInputDimNum: 4-D caches only (9.1.0: 5-D NZ ones too, below)
    "ok.key_only": OK,
    "ok.nct": OK,
    "ok.alibi": OK,
    "ok.rope": OK,
    # GetTemplateType: any other cacheMode is read as Norm, any other scatterMode as a plain scatter
    "mode.unknown_scatter_mode": OK,
    "mode.unknown_cache_mode": OK,
    "mode.nhsd": OK,
    # NHSD-shaped caches [blocks, heads, blockSize, D] that also fit the plain scatter's [blocks, blockSize, heads, D]
    "mode.nhsd_caches": OK,
    "ok.omni": OK,
    "ok.alibi_4d": INVALID,
    "ok.rope_4d": INVALID,
    "ok.empty_caches_before_lookup": OK,
    "ok.mixed_int8_key_fp16_value": OK,
    "null.key": NULL,
    "null.keyCacheRef": NULL,
    "null.slotMapping": NULL,
    "null.value": NULL,
    "null.valueCacheRef": NULL,
    "dtype.float_key": INVALID,
    "dtype.hifloat8": INVALID,
    "dtype.key_cache_differs": INVALID,
    "dtype.value_cache_differs": INVALID,
    "dtype.fp16_key_int8_value": INVALID,
    "dtype.slot_int16": INVALID,
    "format.key_cache_fractal_nz": INVALID,
    "format.key_fractal_nz": INVALID,
    "optional.compress_lens_int64": KERNEL,
    "optional.seq_lens_float": KERNEL,
    "tiling.key_rank": TILING,
    "tiling.key_cache_rank": TILING,
    "tiling.slot_rank": TILING,
    "tiling.value_rank": TILING,
    "tiling.value_cache_rank": TILING,
    "tiling.kv_dims": TILING,
    "tiling.cache_dims": TILING,
    "tiling.nz_cache_dims": TILING,
    "tiling.zero_tokens": TILING,
    "tiling.zero_value_head": TILING,
    "tiling.cache_capacity": TILING,
    "tiling.nz_dim1": TILING,
    "tiling.nz_dim3": TILING,
    "tiling.nz_align": TILING,
    "tiling.compress_rank": TILING,
    "tiling.compress_null": TILING,
    "tiling.no_batches": TILING,
    "tiling.nct_short_strides": TILING,
    # no_kernel: the A2/A3 kernel list has no case for the tiling key. Emulator's choices, not CANN
    # facts: rows under one 32-byte block (a zero-length DataCopy) fail the kernel lookup (561003),
    # and a Rope/Omni call without compressSeqOffset, which the NPU kernel reads from
    # address 0 (undefined), is reported as an AI Core exception.
    "no_kernel.int8_nct": KERNEL,
    "no_kernel.int8_rope": KERNEL,
    "unestablished.short_rows": KERNEL,
    "ok.rows_of_one_and_a_half_blocks": OK,
    "kernel.rope_without_offsets": AICORE,
    # FLOAT data is not registered on A2/A3: the arch35-only cases stop at the kernel lookup
    "tiling95.kv_rank": INVALID,
    "tiling95.four_d_without_seq_lens": INVALID,
    "tiling95.rope_cache_dim2": INVALID,
    "tiling95.rope_offsets_len": INVALID,
    "tiling95.alibi_slot_dim1": INVALID,
    "tiling95.alibi_value_dim2": INVALID,
    "tiling95.slot_2d_not_fully_loaded": INVALID,
}

# Codes on arch35 (arch35 tiling, §3.A.5): mode strings ignored, the key's rank and the optional
# tensors choose the scenario, one dtype for all four data tensors.
A95 = dict(A2)
A95.update(
    {
        # the arch35 tiling ignores scatterMode: a plain scatter, whose caches [blocks, blockSize, heads, D] hold
        # 4 heads where key has 2
        "mode.nhsd_caches": TILING,
        "ok.nz": TILING,
        "ok.key_only": TILING,
        "ok.alibi": TILING,
        "ok.rope": TILING,
        "ok.omni": TILING,
        "ok.alibi_4d": OK,
        "ok.rope_4d": OK,
        "ok.mixed_int8_key_fp16_value": INVALID,
        "dtype.float_key": OK,
        "dtype.hifloat8": OK,
        "tiling.slot_rank": OK,
        "tiling.cache_dims": OK,
        "tiling.zero_tokens": OK,
        "tiling.zero_value_head": OK,
        "tiling.cache_capacity": OK,
        "tiling.nct_short_strides": OK,
        "no_kernel.int8_nct": OK,
        "no_kernel.int8_rope": TILING,
        "unestablished.short_rows": TILING,
        "ok.rows_of_one_and_a_half_blocks": TILING,
        "kernel.rope_without_offsets": TILING,
        "tiling95.kv_rank": TILING,
        "tiling95.four_d_without_seq_lens": TILING,
        "tiling95.rope_cache_dim2": TILING,
        "tiling95.rope_offsets_len": TILING,
        "tiling95.alibi_slot_dim1": TILING,
        "tiling95.alibi_value_dim2": TILING,
        "tiling95.slot_2d_not_fully_loaded": TILING,
    }
)
EXPECTED = {"Ascend910B": A2, "Ascend910_93": A2, "Ascend910_95": A95}

# The releases (ACLNN_EMU_CANN_VERSION). 8.5.0-beta.1 and 9.0.0 still generate the entry point (no
# op_api/ under attention/scatter_pa_kv_cache at tags v8.5.0-beta.1, v9.0.0): their codes are 8.5.0's,
# except that 9.x's Ascend950 part has 72 vector cores where the 8.5 part has 64, so the 2112 tokens fit.
NINE_PART = {"tiling95.slot_2d_not_fully_loaded": OK}
# Branch 9.1.0, attention/scatter_pa_kv_cache/op_host/op_api/aclnn_scatter_pa_kv_cache.cpp
# aclnnScatterPaKvCacheGetWorkspaceSize: CheckNullptr (every failure ACLNN_ERR_INNER_NULLPTR; a null value
# passes it), the empty return, CheckShape and CheckDtypeValid (161002), then l0op::ScatterPaKvCache, whose
# failed kernel lookup or tiling is a nullptr result: 561103. The rules aclnn-emu adds (no_kernel,
# unestablished) keep their codes; a null value reaches the launch without the REQUIRED value (561103,
# inferred).
INNER = 561103
OP_API_9_1 = {
    **{
        name: INNER for name in ("null.key", "null.keyCacheRef", "null.slotMapping", "null.value", "null.valueCacheRef")
    },  # fmt: skip
    "tiling.zero_tokens": OK,  # key and value empty: the empty return
    "tiling.value_rank": INVALID,  # CheckShape: value rank 0, 3 or 4
    "ok.mixed_int8_key_fp16_value": INVALID,  # CheckDtypeValid: key == value unless PA_NZ
    "optional.compress_lens_int64": INVALID,  # CheckDtypeValid: == slotMapping's dtype
    "optional.seq_lens_float": INVALID,
    "format.key_cache_fractal_nz": INNER,  # no format check: the kernel lookup
    "format.key_fractal_nz": INNER,
}
# Branch 9.1.0 op_host/scatter_pa_kv_cache_tiling.cpp GetTemplateType on Atlas A2/A3: other strings fail; NHSD is a
# template of its own (CheckInputShapeNHSD: Normal()'s caches [2, 4, 2, 16] hold 4 heads where key has 2; the NHSD
# ones run); CheckInputDimNumNz / CheckInputShapeNz take 5-D NZ caches. (The arch35 tiling of 9.1.0 is not emulated:
# 8.5's ignores the strings.)
MODES_9_1 = {"mode.unknown_scatter_mode": INNER, "mode.unknown_cache_mode": INNER, "mode.nhsd": INNER, "ok.nz_5d": OK}
A2_9_1 = {
    **{rule: INNER if code == TILING else code for rule, code in A2.items()},
    **OP_API_9_1,  # FLOAT and HIFLOAT8 are off CheckDtypeValid's A2/A3 list: ok.*_4d and tiling95.* stay 161002
    **MODES_9_1,
}
A95_9_1 = {**{rule: INNER if code == TILING else code for rule, code in A95.items()}, **NINE_PART, **OP_API_9_1}
BY_RELEASE = {
    "8.5.0-beta.1": EXPECTED,
    "9.0.0": {**EXPECTED, "Ascend910_95": {**A95, **NINE_PART}},
    "9.1.0": {"Ascend910B": A2_9_1, "Ascend910_93": A2_9_1, "Ascend910_95": A95_9_1},
}


def test_status_codes(family):
    result = cabi.compile_and_run("scatter_pa_kv_cache_codes.cpp", env={"ACLNN_EMU_SOC": family})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == EXPECTED[family]


@pytest.mark.parametrize("version", BY_RELEASE)
def test_status_codes_per_release(family, version):
    """The same calls under each other release (8.5.0, the default, is test_status_codes)."""
    env = {"ACLNN_EMU_SOC": family, "ACLNN_EMU_CANN_VERSION": version}
    result = cabi.compile_and_run("scatter_pa_kv_cache_codes.cpp", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == BY_RELEASE[version][family]


def test_numerics_through_the_c_abi(tmp_path):
    tokens, heads, head, blocks, block = 40, 2, 64, 5, 16
    result = cabi.compile_and_run("scatter_pa_kv_cache_numerics.cpp", tmp_path / "caches.bin")
    assert result.returncode == 0, result.stdout + result.stderr
    caches = np.fromfile(tmp_path / "caches.bin", np.float16)
    key = cabi.lcg_fp16(tokens * heads * head, 1).reshape(tokens, heads, head)
    value = cabi.lcg_fp16(tokens * heads * head, 2).reshape(tokens, heads, head)
    nz_shape, nd_shape = (blocks, heads * head // 16, block, 16), (blocks, block, heads, head)
    slots = np.array([3, 0, 4])[np.arange(tokens) // block] * block + np.arange(tokens) % block
    slots[5] = -1
    reversed_slots = blocks * block - 1 - 2 * np.arange(tokens)
    expected = [
        golden.a2_nz(cabi.lcg_fp16(blocks * block * heads * head, 3).reshape(nz_shape), key, slots),
        golden.a2_nz(cabi.lcg_fp16(blocks * block * heads * head, 4).reshape(nz_shape), value, slots),
        golden.vllm_normal(cabi.lcg_fp16(blocks * block * heads * head, 5).reshape(nd_shape), key, reversed_slots),
        golden.vllm_normal(cabi.lcg_fp16(blocks * block * heads * head, 6).reshape(nd_shape), value, reversed_slots),
    ]
    assert golden.same_bits(caches, np.concatenate([e.reshape(-1) for e in expected]))


@pytest.mark.parametrize("part", ["Ascend910B", "Ascend910_93"])
def test_compress_modes_with_rows_of_one_and_a_half_blocks(tmp_path, part):
    """fp16 head rows of 48 bytes: the kernels' DataCopy moves one 32-byte block per token (rows drift
    against the cache, the rest of each row stays), and Rope's mean sums the packed blocks."""
    heads, head, tokens, shape = 2, 24, 12, (4, 8, 1, 24)
    result = cabi.compile_and_run(
        "scatter_pa_kv_cache_blocks.cpp", tmp_path / "caches.bin", env={"ACLNN_EMU_SOC": part}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    caches = np.fromfile(tmp_path / "caches.bin", np.float16).reshape(6, *shape)
    key = cabi.lcg_fp16(tokens * heads * head, 1).reshape(tokens, heads, head)
    value = cabi.lcg_fp16(tokens * heads * head, 2).reshape(tokens, heads, head)
    slots, wins, offsets, lens = (
        np.array([0, 8, 16, 24]),
        np.array([2, 0, 3, 7]),
        np.array([1, 2, -1, 0]),
        np.array([5, 7]),
    )
    seed = 3
    for index, mode in enumerate(("Alibi", "Rope", "Omni")):
        for src in (key, value):
            before = cabi.lcg_fp16(np.prod(shape), seed).reshape(shape)
            seed += 1
            if mode == "Alibi":
                expected = golden.a2_blocks_alibi(before, src, slots, wins, lens, heads, head)
            else:
                expected = golden.a2_blocks_rope(before, src, slots, wins, lens, offsets, heads, head, mode == "Omni")
            got = caches[2 * index + (src is value)]
            assert golden.same_bits(got, expected), mode
            # The drift is real: the whole-row reference differs, and some bytes of written rows stay.
            whole = (
                golden.a2_alibi(before, src, slots, wins, lens, heads, head)
                if mode == "Alibi"
                else golden.a2_rope(before, src, slots, wins, lens, offsets, heads, head, mode == "Omni")
            )
            assert not golden.same_bits(got, whole)


def test_a2_sample_runs_unchanged_on_the_default_chip():
    result = cabi.compile_and_run(ROOT / "samples" / "aclnnScatterPaKvCache.cpp")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result[127] is:" in result.stdout
    # slots {1, 1} on two cores: the race the hardware has (identical data, so the result is the same)
    assert "write-race" in result.stderr


def test_arch35_sample_runs_unchanged_on_arch35_and_is_rejected_on_a2():
    sample = ROOT / "samples" / "aclnnScatterPaKvCache_1.cpp"
    result = cabi.compile_and_run(sample, env={"ACLNN_EMU_SOC": "Ascend910_95"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result[83] is:" in result.stdout
    # slots {0, 3, ..., 15} against 2 x 2 = 4 cache slots: the arch35 kernel skips most writes (§3.E.8)
    assert "index-out-of-range" in result.stderr
    # On Atlas A2 the FLOAT key has no registered kernel: the lookup fails before the tiling sees the 4-D key
    rejected = cabi.compile_and_run(sample)
    assert rejected.returncode != 0
    assert "aclnnScatterPaKvCacheGetWorkspaceSize failed. ERROR: 161002" in rejected.stdout
