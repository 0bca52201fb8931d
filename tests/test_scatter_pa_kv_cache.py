"""aclnnScatterPaKvCache through the Python API: every scenario per chip, bit-exact against the
loop references, plus the warnings and sanitizer reports the issue asks for."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.dtypes import DataType
from aclnn_emu.runtime import sanitizer
import ties
from golden import hifloat8
from golden import scatter_pa_kv_cache as golden

BF16 = np.dtype(ml_dtypes.bfloat16)
A2_CHIPS = ["Ascend910B", "Ascend910_93"]
FP8 = {
    np.dtype(ml_dtypes.float8_e4m3fn): DataType.ACL_FLOAT8_E4M3FN,  # dtypes.from_numpy has no fp8 entries
    np.dtype(ml_dtypes.float8_e5m2): DataType.ACL_FLOAT8_E5M2,
}


@pytest.fixture
def dev():
    """to_device that frees everything at the end of the test."""
    made = []

    def make(array, dtype=None):
        dtype = dtype or FP8.get(np.asarray(array).dtype)
        # to_device(np.ascontiguousarray) gives a 0-d array one dimension; key-only mode needs none
        tensor = ae.to_device(array, dtype) if np.ndim(array) else ae.empty((), dtype or DataType.ACL_FLOAT16)
        made.append(tensor)
        return tensor

    yield make
    for tensor in made:
        ae.free(tensor)


def scatter(
    dev,
    key,
    kc,
    slots,
    value,
    vc,
    cl=None,
    cso=None,
    lens=None,
    cache_mode=None,
    scatter_mode=None,
    strides=None,
    offsets=None,
    slot_dtype=DataType.ACL_INT32,
):
    """Run the op on device copies; return the two caches."""
    index = lambda x: None if x is None else dev(np.asarray(x), slot_dtype)  # noqa: E731
    tkc, tvc = dev(kc), dev(vc)
    ae.run(
        "ScatterPaKvCache",
        dev(key),
        tkc,
        index(slots),
        dev(value),
        tvc,
        index(cl),
        index(cso),
        index(lens),
        cache_mode,
        scatter_mode,
        strides,
        offsets,
    )
    return ae.numpy(tkc), ae.numpy(tvc)


def kinds():
    return sorted({kind for kind, _ in sanitizer.reports()})


# -- Atlas A2 / A3 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.int8])
def test_normal(chip, dev, dtype):
    rng = np.random.default_rng(1)
    key, value = golden.random_data(rng, (20, 2, 16), dtype), golden.random_data(rng, (20, 2, 24), dtype)
    kc, vc = golden.random_data(rng, (4, 8, 2, 16), dtype), golden.random_data(rng, (4, 8, 2, 24), dtype)
    slots = rng.permutation(32)[:20]
    slots[[2, 9]] = -1
    out_k, out_v = scatter(dev, key, kc, slots, value, vc, scatter_mode="None")
    assert golden.same_bits(out_k, golden.vllm_normal(kc, key, slots))
    assert golden.same_bits(out_v, golden.vllm_normal(vc, value, slots))
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_normal_int64_slots_are_read_as_int32_words(chip, dev, capfd):
    rng = np.random.default_rng(2)
    key, kc = golden.random_data(rng, (6, 1, 16), np.float16), np.zeros((2, 8, 1, 16), np.float16)
    slots = np.array([3, 9, 4, 12, 5, 1], np.int64)
    out_k, _ = scatter(dev, key, kc, slots, key, kc, slot_dtype=DataType.ACL_INT64)
    words = golden.int32_words(slots, 6)  # [3, 0, 9, 0, 4, 0]
    assert golden.same_bits(out_k, golden.a2_nd(kc, key, words, 16))
    assert "reads slot_mapping as int32" in capfd.readouterr().err
    assert kinds() == ["write-race"]  # tokens 1, 3, 5 all hit word 0 on different cores


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_int8_key_moves_value_in_bytes(chip, dev, capfd):
    rng = np.random.default_rng(3)
    key, kc = golden.random_data(rng, (5, 2, 32), np.int8), np.zeros((2, 4, 2, 32), np.int8)
    value, vc = golden.random_data(rng, (5, 2, 32), np.float16), np.zeros((2, 4, 2, 32), np.float16)
    slots = np.array([7, 0, 3, 5, 2])
    _, out_v = scatter(dev, key, kc, slots, value, vc)
    as_bytes = golden.a2_nd(vc.view(np.int8), value.view(np.int8), slots, 64)  # H·Dv bytes per token
    assert golden.same_bits(out_v.view(np.int8), as_bytes)
    assert "moves it as INT8" in capfd.readouterr().err


@pytest.mark.parametrize("chip", ["Ascend910_93"], indirect=True)
def test_nct_reads_value_with_the_key_stride(chip, dev, capfd):
    rng = np.random.default_rng(4)
    tokens, heads, head, stride = 6, 2, 16, 80
    key_buf, value_buf = (golden.random_data(rng, (tokens * stride,), BF16) for _ in range(2))
    kc, vc = np.zeros((2, 4, heads, head), BF16), np.zeros((2, 4, heads, head), BF16)
    slots = np.array([1, 6, 0, 3, 7, 2])
    tkc, tvc = dev(kc), dev(vc)
    bufs = [dev(key_buf), dev(value_buf)]
    key, value = (
        ae.Tensor(
            (tokens, heads, head),
            DataType.ACL_BF16,
            (stride, head, 1),
            0,
            ae.Format.ACL_FORMAT_ND,
            (tokens * stride,),
            b.addr,
        )
        for b in bufs
    )
    ae.run(
        "ScatterPaKvCache",
        key,
        tkc,
        dev(slots.astype(np.int32)),
        value,
        tvc,
        None,
        None,
        None,
        "Norm",
        "Nct",
        (stride, 96),
        (8, 24),
    )
    assert golden.same_bits(ae.numpy(tkc), golden.a2_nd(kc, key_buf, slots, 32, stride, 8))
    assert golden.same_bits(ae.numpy(tvc), golden.a2_nd(vc, value_buf, slots, 32, stride, 24))
    assert "not strideV = 96" in capfd.readouterr().err
    key.destroy(), value.destroy()


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_key_only_when_value_cache_has_no_dims(chip, dev):
    rng = np.random.default_rng(5)
    key, kc = golden.random_data(rng, (7, 1, 32), np.int8), golden.random_data(rng, (3, 4, 1, 32), np.int8)
    slots = np.array([0, 11, -1, 4, 5, 8, 2])
    zero = np.zeros((), np.float16)
    out_k, out_v = scatter(dev, key, kc, slots, zero, zero)
    assert golden.same_bits(out_k, golden.vllm_normal(kc, key, slots))
    assert out_v.shape == ()


@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("key_dtype, value_dtype", [(np.float16, np.float16), (np.int8, BF16)])
@pytest.mark.parametrize("slot_dtype", [DataType.ACL_INT32, DataType.ACL_INT64])
def test_pa_nz(chip, dev, key_dtype, value_dtype, slot_dtype):
    rng = np.random.default_rng(6)
    tokens, heads, head, blocks, block = 40, 2, 64, 5, 16
    key = golden.random_data(rng, (tokens, heads, head), key_dtype)
    value = golden.random_data(rng, (tokens, heads, head), value_dtype)
    last_k, last_v = 32 // np.dtype(key_dtype).itemsize, 32 // np.dtype(value_dtype).itemsize
    kc = golden.random_data(rng, (blocks, heads * head // last_k, block, last_k), key_dtype)
    vc = golden.random_data(rng, (blocks, heads * head // last_v, block, last_v), value_dtype)
    slots = np.concatenate([16 * 3 + np.arange(16), 16 + np.arange(14), rng.permutation(16)[:10] + 64])
    slots[7] = -1
    out_k, out_v = scatter(dev, key, kc, slots, value, vc, cache_mode="PA_NZ", slot_dtype=slot_dtype)
    assert golden.same_bits(out_k, golden.a2_nz(kc, key, slots))
    assert golden.same_bits(out_v, golden.a2_nz(vc, value, slots))
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_duplicates_and_out_of_range_slots_are_reported(chip, dev):
    key, kc = np.arange(4 * 16, dtype=np.float16).reshape(4, 1, 16), np.zeros((1, 8, 1, 16), np.float16)
    slots = np.array([2, 2, 9, 5])  # 4 tokens on 4 cores: a race; slot 9 beyond the 8 slots
    out_k, _ = scatter(dev, key, kc, slots, key, kc)
    assert golden.same_bits(out_k, golden.a2_nd(kc, key, slots, 16))
    assert kinds() == ["index-out-of-range", "write-race"]


def compress_case(rng, dtype):
    heads, head, seq_lens = 2, 16, np.array([5, 7])
    key = golden.random_data(rng, (seq_lens.sum(), heads, head), dtype)
    value = golden.random_data(rng, (seq_lens.sum(), heads, head), dtype)
    kc, vc = golden.random_data(rng, (4, 8, 1, head), dtype), golden.random_data(rng, (4, 8, 1, head), dtype)
    wins, offsets, slots = np.array([2, 0, 3, 7]), np.array([1, 2, -1, 0]), np.array([0, 8, 16, 24])
    return key, value, kc, vc, slots, wins, seq_lens, offsets, heads, head


@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("mode", ["Rope", "Omni", "Alibi"])
def test_compress_modes(chip, dev, dtype, mode):
    key, value, kc, vc, slots, wins, seq_lens, offsets, heads, head = compress_case(np.random.default_rng(7), dtype)
    out_k, out_v = scatter(
        dev, key, kc, slots, value, vc, wins, None if mode == "Alibi" else offsets, seq_lens, scatter_mode=mode
    )
    for src, cache, out in ((key, kc, out_k), (value, vc, out_v)):
        if mode == "Alibi":
            expected = golden.a2_alibi(cache, src, slots, wins, seq_lens, heads, head)
        else:
            expected = golden.a2_rope(cache, src, slots, wins, seq_lens, offsets, heads, head, mode == "Omni")
        assert golden.same_bits(out, expected)
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910_93"], indirect=True)
def test_compress_int64_index_tensors_are_read_as_int32_words(chip, dev, capfd):
    key, value, kc, vc, slots, wins, seq_lens, offsets, heads, head = compress_case(
        np.random.default_rng(9), np.float16
    )
    slots, wins, lens = np.array([0, 12, 3, 20]), np.array([2, 1, 0, 3]), np.array([12, 0])  # lens as int32 words
    out_k, _ = scatter(
        dev, key, kc, slots, value, vc, wins, None, lens, scatter_mode="Alibi", slot_dtype=DataType.ACL_INT64
    )
    words = [golden.int32_words(x, n) for x, n in ((slots, 4), (wins, 4), (lens, 2))]
    assert golden.same_bits(out_k, golden.a2_alibi(kc, key, *words, heads, head))
    assert "and the compress tensors as int32" in capfd.readouterr().err


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_compress_value_uses_the_key_head_size(chip, dev, capfd):
    rng = np.random.default_rng(8)
    key, kc = golden.random_data(rng, (6, 1, 16), np.float16), np.zeros((2, 8, 1, 16), np.float16)
    value, vc = golden.random_data(rng, (6, 1, 32), np.float16), np.zeros((2, 8, 1, 32), np.float16)
    slots, wins, lens = np.array([0]), np.array([4]), np.array([6])
    _, out_v = scatter(dev, key, kc, slots, value, vc, wins, None, lens, scatter_mode="Alibi")
    assert golden.same_bits(out_v, golden.a2_alibi(vc, value, slots, wins, lens, 1, 16))
    assert "key's head size 16, not v_head_size 32" in capfd.readouterr().err


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_empty_caches_succeed_without_work(chip, dev):
    empty = np.zeros((0, 8, 1, 16), np.float32)  # FLOAT is not even registered on A2: the check comes first
    key = np.ones((2, 1, 16), np.float32)
    code, workspace, executor = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(
        dev(key), dev(empty), dev(np.zeros(2, np.int32)), dev(key), dev(empty), None, None, None, None, None, None, None
    )
    assert (code, workspace) == (0, 0) and executor


@pytest.mark.parametrize("chip", A2_CHIPS + ["Ascend910_95"], indirect=True)
def test_workspace_is_the_tools_workspace(chip, dev):
    key, kc = np.ones((2, 1, 16), np.float16), np.zeros((1, 4, 1, 16), np.float16)
    code, workspace, _ = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(
        dev(key),
        dev(kc),
        dev(np.arange(2, dtype=np.int32)),
        dev(key),
        dev(kc),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    )
    assert (code, workspace) == (0, 16 << 20)


# -- Ascend910_95 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, ml_dtypes.float8_e4m3fn])
@pytest.mark.parametrize("slot_dtype", [DataType.ACL_INT32, DataType.ACL_INT64])
def test_arch35_normal(chip, dev, dtype, slot_dtype):
    rng = np.random.default_rng(9)
    key, value = golden.random_data(rng, (9, 3, 5), dtype), golden.random_data(rng, (9, 3, 4), dtype)
    kc, vc = golden.random_data(rng, (3, 4, 3, 5), dtype), golden.random_data(rng, (3, 4, 3, 4), dtype)
    slots = rng.permutation(12)[:9]
    out_k, out_v = scatter(dev, key, kc, slots, value, vc, slot_dtype=slot_dtype)
    assert golden.same_bits(out_k, golden.vllm_normal(kc, key, slots))
    assert golden.same_bits(out_v, golden.vllm_normal(vc, value, slots))


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_ignores_the_mode_strings_and_writes_negative_slots_out_of_range(chip, dev, capfd):
    rng = np.random.default_rng(10)
    key, kc = golden.random_data(rng, (4, 2, 16), np.float16), np.zeros((2, 4, 2, 16), np.float16)
    slots = np.array([1, -1, 6, 3])
    out_k, _ = scatter(dev, key, kc, slots, key, kc, cache_mode="PA_NZ", scatter_mode="Nct", strides=(7, 7))
    assert golden.same_bits(out_k, golden.arch35_normal(kc, key, slots))
    assert "ignored" in capfd.readouterr().err
    assert kinds() == ["index-out-of-range"]


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int8])
@pytest.mark.parametrize("mode", ["rope", "alibi"])
def test_arch35_compress(chip, dev, capfd, dtype, mode):
    rng = np.random.default_rng(11)
    batch, seq, heads, head = 2, 6, 3, 8
    key, value = (golden.random_data(rng, (batch, seq, heads, head), dtype) for _ in range(2))
    kc, vc = golden.random_data(rng, (6, 8, 1, head), dtype), golden.random_data(rng, (6, 8, 1, head), dtype)
    lens = np.array([6, 4])
    wins, offsets = np.array([[2, 0, 3], [1, 4, 2]]), np.array([1, 0, 2, 0, 3, 1])
    slots = np.array([[0, 8, 16], [24, 32, 44]])  # 44 + 3 reaches beyond the 48 slots: skipped
    cso = offsets if mode == "rope" else None
    out_k, out_v = scatter(dev, key, kc, slots, value, vc, wins, cso, lens)
    for src, cache, out in ((key, kc, out_k), (value, vc, out_v)):
        expected = (
            golden.arch35_rope(cache, src, slots, wins, lens, offsets)
            if mode == "rope"
            else golden.arch35_alibi(cache, src, slots, wins, lens)
        )
        assert golden.same_bits(out, expected)
    assert ("tokens [0, L - w - o)" in capfd.readouterr().err) == (mode == "rope")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_rope_mean_of_hifloat8_rounds_half_away(chip, dev, capfd):
    """The arch35 Rope kernel casts the fp32 mean of HIFLOAT8 data back with CAST_ROUND."""
    rng = np.random.default_rng(13)
    batch, seq, heads, head = 2, 6, 3, 32
    finite = np.array([c for c in range(256) if c not in (0x80, 0x6F, 0xEF)], np.uint8)
    key, value = (rng.choice(finite, (batch, seq, heads, head)) for _ in range(2))
    key[0, 1:3, 0, :4] = [[0x08, 0x08, 0x09, 0x10], [0x09, 0x0A, 0x0A, 0x10]]  # means 1.0625, 1.1875, ...: ties
    kc, vc = (rng.choice(finite, (6, 8, 1, head)) for _ in range(2))
    lens, wins, offsets = np.array([6, 4]), np.array([[2, 0, 3], [1, 4, 2]]), np.array([1, 0, 2, 0, 3, 1])
    slots = np.array([[0, 8, 16], [24, 32, 40]])
    hif8 = DataType.ACL_HIFLOAT8
    index = lambda x: dev(np.asarray(x), DataType.ACL_INT32)  # noqa: E731
    tkc, tvc = dev(kc, hif8), dev(vc, hif8)
    ae.run(
        "ScatterPaKvCache",
        dev(key, hif8),
        tkc,
        index(slots),
        dev(value, hif8),
        tvc,
        index(wins),
        index(offsets),
        index(lens),
        None,
        None,
        None,
        None,
    )
    for src, cache, out in ((key, kc, ae.numpy(tkc)), (value, vc, ae.numpy(tvc))):
        expected = golden.arch35_rope(cache, src, slots, wins, lens, offsets, hifloat8.cast_round_mean)
        assert golden.same_bits(out.view(np.uint8), expected)
    # the tie 1.0625 (between 1.0 and 1.125) went away from zero
    assert ae.numpy(tkc).view(np.uint8)[0, 1, 0, 0] == 0x09


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_compress_mean_rounds_to_nearest_even_at_ties(chip, dev, dtype):
    """Rope compression stores the fp32 window mean rounded to nearest even (CAST_RINT). Keys on the
    [1, 2) grid and windows of 2 and 4 tokens make the exact means ties half or a quarter of the time
    (tests/ties.py); the golden rounds them to even, so rounding away would differ there."""
    rng = np.random.default_rng(11)
    heads, head, seq_lens = 2, 16, np.array([6, 7])
    digits = ties.FORMATS[np.dtype(dtype).name][0]
    key = rng.integers(2 ** (digits - 1), 2**digits, (seq_lens.sum(), heads, head)) * 2.0 ** (1 - digits)
    key = key.astype(dtype)
    kc = np.zeros((4, 8, 1, head), dtype)
    wins, offsets, slots = np.array([2, 4, 2, 4]), np.array([1, 0, 2, 3]), np.array([0, 8, 16, 24])
    out_k, _ = scatter(dev, key, kc, slots, key, kc.copy(), wins, offsets, seq_lens, scatter_mode="Rope")
    assert golden.same_bits(out_k, golden.a2_rope(kc, key, slots, wins, seq_lens, offsets, heads, head))
    starts = np.r_[0, np.cumsum(seq_lens)[:-1]]
    means = [
        key[starts[i // heads] + o : starts[i // heads] + o + w, i % heads].astype(np.float64).mean(axis=0)
        for i, (w, o) in enumerate(zip(wins, offsets))
    ]
    assert ties.is_tie(np.concatenate(means), np.dtype(dtype).name).sum() >= 8
