"""ScatterPaKvCache kernels against the independent loop references, bit for bit."""

import ml_dtypes
import numpy as np
import pytest

from aclnn_emu.kernels.kv_cache import scatter_a2 as a2
from aclnn_emu.kernels.kv_cache import scatter_arch35 as arch35
from aclnn_emu.kernels.kv_cache import scatter_blocks
from aclnn_emu.kernels.kv_cache.scatter_rows import balanced_cores, blocked_cores
from golden import scatter_pa_kv_cache as golden

CORES = 48
BF16 = np.dtype(ml_dtypes.bfloat16)


def kinds(findings):
    return sorted(kind for kind, _ in findings)


def test_core_splits_follow_the_tilings():
    # AllocateTask: 10 tasks on 4 cores -> 3, 3, 2, 2; NZ/arch35: ceil(10/4) = 3 per core -> 3, 3, 3, 1.
    assert balanced_cores(10, 4).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    assert blocked_cores(10, 4).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    assert balanced_cores(3, 48).tolist() == [0, 1, 2]


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.int8])
def test_normal_matches_reference_and_vllm_loop(dtype):
    rng = np.random.default_rng(1)
    tokens, heads, head_size, blocks, block_size = 37, 3, 16, 8, 16
    key = golden.random_data(rng, (tokens, heads, head_size), dtype)
    cache = golden.random_data(rng, (blocks, block_size, heads, head_size), dtype)
    slots = rng.permutation(blocks * block_size)[:tokens].astype(np.int64)
    slots[[3, 17]] = -1
    out = cache.copy()
    findings = a2.scatter_nd(out.reshape(-1), key.reshape(-1), slots, heads * head_size, CORES, "keyCache", "key")
    assert findings == []
    assert golden.same_bits(out, golden.a2_nd(cache, key, slots, heads * head_size))
    assert golden.same_bits(out, golden.vllm_normal(cache, key, slots))


@pytest.mark.parametrize("pattern", ["runs", "scattered"])
def test_normal_large_goes_through_parallel_pieces(pattern):
    rng = np.random.default_rng(2)
    tokens, row = 5000, 64
    key = golden.random_data(rng, (tokens, row), np.float16)
    cache = np.zeros((8192, row), np.float16)
    if pattern == "runs":  # sequences filling blocks of 32 from a block table, one padding token
        slots = (rng.permutation(256)[:157, None] * 32 + np.arange(32)).reshape(-1)[:tokens]
        slots[100] = -1
    else:
        slots = rng.permutation(8192)[:tokens]
    out = cache.copy()
    assert a2.scatter_nd(out.reshape(-1), key.reshape(-1), slots, row, CORES, "keyCache", "key") == []
    assert golden.same_bits(out, golden.a2_nd(cache, key, slots, row))


def test_duplicate_slots_last_token_wins_and_cross_core_duplicates_race():
    rng = np.random.default_rng(3)
    tokens, row = 100, 8  # 48 cores: tokens 0-2 on core 0, 3-5 on core 1, ...
    key = golden.random_data(rng, (tokens, row), np.float16)
    slots = np.arange(tokens, dtype=np.int64)
    slots[1] = slots[0]  # same core: ordered, no race
    cache = np.zeros((128, row), np.float16)
    out = cache.copy()
    assert a2.scatter_nd(out.reshape(-1), key.reshape(-1), slots, row, CORES, "keyCache", "key") == []
    assert golden.same_bits(out, golden.a2_nd(cache, key, slots, row))
    slots[50] = slots[2]  # core 0 and core 16: a race on the hardware
    out = cache.copy()
    findings = a2.scatter_nd(out.reshape(-1), key.reshape(-1), slots, row, CORES, "keyCache", "key")
    assert kinds(findings) == ["write-race"] and "[2]" in findings[0][1]
    assert golden.same_bits(out, golden.a2_nd(cache, key, slots, row))


def test_slots_beyond_the_cache_are_skipped_and_reported():
    key = np.arange(4 * 8, dtype=np.float16).reshape(4, 8)
    cache = np.zeros((6, 8), np.float16)
    slots = np.array([0, 6, 2, 99])
    out = cache.copy()
    findings = a2.scatter_nd(out.reshape(-1), key.reshape(-1), slots, 8, CORES, "keyCache", "key")
    assert kinds(findings) == ["index-out-of-range"]
    assert golden.same_bits(out, golden.a2_nd(cache, key, slots, 8))


def test_nct_reads_rows_at_stride_and_offset():
    rng = np.random.default_rng(4)
    tokens, row, stride, offset = 9, 12, 20, 5
    src = golden.random_data(rng, (tokens * stride + offset,), BF16)
    cache = np.zeros((16, row), BF16)
    slots = rng.permutation(16)[:tokens]
    out = cache.copy()
    assert a2.scatter_nd(out.reshape(-1), src, slots, row, CORES, "keyCache", "key", stride, offset) == []
    assert golden.same_bits(out, golden.a2_nd(cache, src, slots, row, stride, offset))
    # A stride that runs past the input: the last rows are reads outside the tensor.
    out = cache.copy()
    findings = a2.scatter_nd(out.reshape(-1), src, slots, row, CORES, "keyCache", "key", stride + 3, offset)
    assert kinds(findings) == ["out-of-bounds-read"]
    assert golden.same_bits(out, golden.a2_nd(cache, src, slots, row, stride + 3, offset))


def test_int64_slots_read_as_int32_words():
    slots = np.array([5, 7, -1, 2], dtype=np.int64)
    assert golden.int32_words(slots, 4).tolist() == [5, 0, 7, 0]


@pytest.mark.parametrize("dtype, last", [(np.float16, 16), (BF16, 16), (np.int8, 32)])
@pytest.mark.parametrize("pattern", ["runs", "scattered"])
def test_nz_matches_reference(dtype, last, pattern):
    rng = np.random.default_rng(5)
    tokens, heads, head_size, blocks, block_size = 70, 2, 32, 6, 16
    key = golden.random_data(rng, (tokens, heads, head_size), dtype)
    cache = golden.random_data(rng, (blocks, heads * head_size // last, block_size, last), dtype)
    if pattern == "runs":  # three sequences filling whole and partial blocks
        table = rng.permutation(blocks)
        slots = np.concatenate(
            [
                table[0] * block_size + np.arange(16),
                table[1] * block_size + np.arange(16),
                table[2] * block_size + 3 + np.arange(13),
                table[3] * block_size + np.arange(16),
                table[4] * block_size + np.arange(9),
            ]
        )
    else:
        slots = rng.permutation(blocks * block_size)[:tokens]
    slots[5] = -1
    out = cache.copy()
    assert a2.scatter_nz([(out, key.reshape(tokens, -1), "keyCache")], slots, CORES) == []
    assert golden.same_bits(out, golden.a2_nz(cache, key, slots))


def test_nz_duplicates_and_out_of_range():
    rng = np.random.default_rng(6)
    key = golden.random_data(rng, (4, 1, 16), np.float16)
    cache = np.zeros((2, 1, 4, 16), np.float16)
    slots = np.array([1, 1, 9, 3])  # 4 tokens on 4 cores: the duplicate is a race
    out = cache.copy()
    findings = a2.scatter_nz([(out, key.reshape(4, -1), "keyCache")], slots, CORES)
    assert kinds(findings) == ["index-out-of-range", "write-race"]
    assert golden.same_bits(out, golden.a2_nz(cache, key, slots))


@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_alibi_matches_reference(dtype):
    rng = np.random.default_rng(7)
    heads, head_size, seq_lens = 3, 32, np.array([5, 9, 4])
    key = golden.random_data(rng, (seq_lens.sum(), heads, head_size), dtype)
    cache = golden.random_data(rng, (4, 16, 1, head_size), dtype)
    wins = rng.integers(0, 5, size=len(seq_lens) * heads)
    slots = np.arange(len(wins)) * 6
    out = cache.copy()
    findings = a2.scatter_alibi(
        out.reshape(-1), key.reshape(-1), slots, wins, seq_lens, heads, head_size, CORES, "keyCache", "key"
    )
    assert findings == []
    assert golden.same_bits(out, golden.a2_alibi(cache, key, slots, wins, seq_lens, heads, head_size))


def rope_case(rng, dtype, head_size=32):
    heads, seq_lens = 2, np.array([6, 9, 3])
    key = golden.random_data(rng, (seq_lens.sum(), heads, head_size), dtype)
    cache = golden.random_data(rng, (10, 8, 1, head_size), dtype)
    tasks = len(seq_lens) * heads
    # per head: a window inside the sequence, "no compression" (-1), w = 0, and o = L
    offsets = np.array([1, -1, 2, 0, 1, 3])
    wins = np.array([3, 2, 0, 5, 2, 1])
    slots = np.arange(tasks) * 12
    return key, cache, slots, wins, seq_lens, offsets, heads


@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("omni", [False, True])
def test_rope_and_omni_match_reference(dtype, omni):
    key, cache, slots, wins, seq_lens, offsets, heads = rope_case(np.random.default_rng(8), dtype)
    plans = a2.rope_plans(slots, wins, seq_lens, offsets, heads)
    out = cache.copy()
    findings = a2.scatter_rope(
        out.reshape(-1), key.reshape(-1), plans, heads, 32, 0, 2 * len(plans), CORES, omni, "keyCache", "key"
    )
    assert findings == []
    assert golden.same_bits(out, golden.a2_rope(cache, key, slots, wins, seq_lens, offsets, heads, 32, omni))


@pytest.mark.parametrize("dtype, head", [(np.float16, 24), (BF16, 40), (np.int8, 48)])
def test_alibi_rows_of_partial_blocks_over_several_ub_loads(dtype, head):
    """A window longer than the UB buffer (w·rowBytes >= ubSize): the kernel restarts each load at a
    true cache row, so the drift of the truncated rows resets at every load."""
    rng = np.random.default_rng(11)
    heads, seq_lens = 1, np.array([9000, 5])
    key = golden.random_data(rng, (seq_lens.sum(), heads, head), dtype)
    cache = golden.random_data(rng, (9100, 1, 1, head), dtype)
    slots, wins = np.array([0, 9050]), np.array([8999, 5])
    geo = scatter_blocks.Geometry(key.dtype, head, heads)
    assert 8999 * geo.row // (scatter_blocks.MAX_UB_SIZE - 64) + 1 > 1  # several loads
    out = cache.copy()
    findings = scatter_blocks.alibi(
        out.reshape(-1), key.reshape(-1), geo, slots, wins, seq_lens, CORES, "keyCache", "key"
    )
    assert findings == []
    assert golden.same_bits(out, golden.a2_blocks_alibi(cache, key, slots, wins, seq_lens, heads, head))


@pytest.mark.parametrize("omni", [False, True])
def test_rope_rows_of_partial_blocks_over_several_loads(omni):
    """Runs longer than copyFp16Num elements, and a mean over more tokens than one UB half holds
    (the tail load leaves the rest of its half as an earlier load wrote it)."""
    rng = np.random.default_rng(12)
    heads, head, seq_lens = 2, 24, np.array([4000, 3])
    key = golden.random_data(rng, (seq_lens.sum(), heads, head), np.float16)
    cache = golden.random_data(rng, (2 * 4100, 1, 1, head), np.float16)
    slots, wins, offsets = np.array([0, 4100, 4050, 8150]), np.array([1300, 2100, 2, 0]), np.array([2001, 10, 0, -1])
    plans = a2.rope_plans(slots, wins, seq_lens, offsets, heads)
    out = cache.copy()
    findings = scatter_blocks.rope(
        out.reshape(-1),
        key.reshape(-1),
        scatter_blocks.Geometry(key.dtype, head, heads),
        plans,
        0,
        CORES,
        omni,
        "keyCache",
        "key",
    )
    assert findings == []
    assert golden.same_bits(out, golden.a2_blocks_rope(cache, key, slots, wins, seq_lens, offsets, heads, head, omni))


def test_partial_block_writes_outside_the_cache_and_races_are_reported():
    # rows of 24 fp16 (48 bytes), one 32-byte block each: three tasks on three cores, two tokens each.
    key = np.arange(1, 6 * 24 + 1, dtype=np.float16).reshape(6, 1, 24)
    cache = np.zeros((4, 1, 1, 24), np.float16)
    geo = scatter_blocks.Geometry(key.dtype, 24, 1)
    findings = scatter_blocks.alibi(
        cache.reshape(-1),
        key.reshape(-1),
        geo,
        np.array([0, 1, 3]),
        np.array([2, 2, 2]),
        np.array([2, 2, 2]),
        3,
        "keyCache",
        "key",
    )
    # Token i of a copy is read 32 bytes (H blocks) after token i - 1, not a row: task 0 reads elements
    # [0, 32) and writes bytes [0, 64), task 1 reads [48, 80) into [48, 112) (a race on row 1),
    # task 2 reads [96, 128) into [144, 208), past the cache's 192 bytes.
    assert kinds(findings) == ["index-out-of-range", "write-race"]
    f = key.reshape(-1)
    expected = np.concatenate([f[0:24], f[48:80], np.zeros(16, np.float16), f[96:120]])
    assert golden.same_bits(cache.reshape(-1), expected)


def test_rope_rows_longer_than_a_ub_half_report_the_kernels_division_by_zero():
    head = 15361  # fp16 rows of 30722 bytes: 15360 // head = 0 tokens per load
    key = np.ones((2, 1, head), np.float16)
    cache = np.zeros((2, 1, 1, head), np.float16)
    plans = a2.rope_plans(np.array([0]), np.array([2]), np.array([2]), np.array([0]), 1)
    findings = scatter_blocks.rope(
        cache.reshape(-1),
        key.reshape(-1),
        scatter_blocks.Geometry(key.dtype, head, 1),
        plans,
        0,
        CORES,
        False,
        "keyCache",
        "key",
    )
    assert kinds(findings) == ["divide-by-zero"] and not cache.any()


def test_rope_mean_is_an_fp32_running_sum_rounded_to_even():
    # 2048 + 1 + 1 in fp32 order, / 3: a float64 mean would round differently in fp16 here.
    rows = np.array([[2048.0], [1.0], [1.0], [0.5]], np.float32).astype(np.float16)
    from aclnn_emu.kernels.kv_cache.scatter_rows import window_mean

    assert golden.same_bits(window_mean(rows, 4), golden.fp32_mean(rows, 4, np.float16))
    big = np.full((3000, 1), 1.0, np.float32)
    big[0] = 1 << 24  # fp32 sum stalls at 2**24: order matters
    assert window_mean(big, 1)[0] == np.float32(1 << 24)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.int8, np.uint16, np.int32, ml_dtypes.float8_e4m3fn])
def test_arch35_normal_matches_reference(dtype):
    rng = np.random.default_rng(9)
    key = golden.random_data(rng, (11, 2, 7), dtype)
    cache = golden.random_data(rng, (3, 5, 2, 7), dtype)
    slots = rng.permutation(15)[:11]
    slots[4] = -3  # not skipped by this kernel: falls before the cache
    out = cache.copy()
    findings = arch35.scatter_normal(out.reshape(-1), key.reshape(-1), slots, 14, CORES, "keyCache", "key", False)
    assert kinds(findings) == ["index-out-of-range"]
    assert golden.same_bits(out, golden.arch35_normal(cache, key, slots))


def test_arch35_int32_slot_offsets_overflow():
    key = np.ones((2, 4096), np.float16)
    cache = np.zeros((1, 1 << 20), np.float16)  # rows of 4096: slot 1 << 19 needs offset 2**31
    slots = np.array([0, 1 << 19])
    findings = arch35.scatter_normal(cache.reshape(-1), key.reshape(-1), slots, 4096, CORES, "keyCache", "key", True)
    assert kinds(findings) == ["index-out-of-range"] and "int32" in findings[0][1]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16])
def test_arch35_alibi_matches_reference(dtype):
    rng = np.random.default_rng(10)
    batch, seq, heads, head_size = 2, 5, 3, 8
    key = golden.random_data(rng, (batch, seq, heads, head_size), dtype)
    cache = golden.random_data(rng, (4, 6, 1, head_size), dtype)
    seq_lens = np.array([5, 3])
    wins = np.array([[2, 0, 5], [4, 1, 3]])  # w = 4 > L = 3: the first source token is negative, skipped
    slots = np.array([[0, 3, 6], [12, 18, 22]])  # 22 + 2 >= 24: the kernel skips that write
    out = cache.copy()
    findings = arch35.scatter_alibi(
        out.reshape(-1),
        key.reshape(-1),
        slots.reshape(-1),
        wins.reshape(-1),
        seq_lens,
        (batch, seq, heads),
        head_size,
        24,
        CORES,
        "keyCache",
        "key",
    )
    assert kinds(findings) == ["index-out-of-range"]
    assert golden.same_bits(out, golden.arch35_alibi(cache, key, slots, wins, seq_lens))


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, BF16, np.int8, np.uint8, np.int32, np.uint32, ml_dtypes.float8_e5m2]
)
def test_arch35_rope_matches_reference(dtype):
    rng = np.random.default_rng(11)
    batch, seq, heads, head_size = 2, 6, 2, 8
    key = golden.random_data(rng, (batch, seq, heads, head_size), dtype)
    cache = golden.random_data(rng, (8, 8, 1, head_size), dtype)
    seq_lens = np.array([6, 4])
    offsets = np.array([1, 0, 2, 4])
    wins = np.array([[3, 7], [1, 0]])  # o + w beyond S: the mean covers [o, S)
    slots = np.array([[0, 10], [20, 30]])
    out = cache.copy()
    findings = arch35.scatter_rope(
        out.reshape(-1),
        key.reshape(-1),
        slots.reshape(-1),
        wins.reshape(-1),
        seq_lens,
        offsets,
        (batch, seq, heads),
        head_size,
        64,
        CORES,
        "keyCache",
        "key",
    )
    assert findings == []
    assert golden.same_bits(out, golden.arch35_rope(cache, key, slots, wins, seq_lens, offsets))
