"""aclnnGatherPaKvCache through the Python API: every cache mode per chip, bit-exact against the loop
references in tests/golden, the inverse of ScatterPaKvCache, and the warnings and sanitizer
reports for what the kernels do outside the doc."""

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import config
from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.ops.kv_cache.common import DTYPES_ARCH35
from aclnn_emu.runtime import sanitizer
from golden import gather_pa_kv_cache as golden
from golden.scatter_pa_kv_cache import random_data, same_bits

BF16 = np.dtype(ml_dtypes.bfloat16)
A2_CHIPS = ["Ascend910B", "Ascend910_93"]
NUMPY = {
    DataType.ACL_HIFLOAT8: np.uint8,
    DataType.ACL_FLOAT8_E5M2: ml_dtypes.float8_e5m2,
    DataType.ACL_FLOAT8_E4M3FN: ml_dtypes.float8_e4m3fn,
    DataType.ACL_FLOAT: np.float32,
    DataType.ACL_FLOAT16: np.float16,
    DataType.ACL_BF16: BF16,
    DataType.ACL_INT8: np.int8,
    DataType.ACL_UINT8: np.uint8,
    DataType.ACL_INT16: np.int16,
    DataType.ACL_UINT16: np.uint16,
    DataType.ACL_INT32: np.int32,
    DataType.ACL_UINT32: np.uint32,
}


@pytest.fixture
def dev():
    """to_device that frees everything at the end of the test."""
    made = []

    def make(array, dtype=None, format=Format.ACL_FORMAT_ND):
        tensor = ae.to_device(array, dtype, format)
        made.append(tensor)
        return tensor

    yield make
    for tensor in made:
        ae.free(tensor)


@dataclasses.dataclass
class Case:
    """Caches, index tensors and the outputs' previous contents of one call."""

    key_cache: np.ndarray
    value_cache: np.ndarray
    tables: np.ndarray
    seq_lens: np.ndarray
    key: np.ndarray
    value: np.ndarray
    seq_offset: np.ndarray | None = None
    cumsum: bool = False
    nz: bool = False

    @property
    def args(self) -> dict:
        return dict(seq_offset=self.seq_offset, cumsum=self.cumsum)


def make_case(
    rng,
    lens,
    dtype=np.float16,
    heads=2,
    head_k=16,
    head_v=32,
    blocks=12,
    block=8,
    width=None,
    nz=False,
    cumsum=False,
    offset_blocks=None,
    extra_rows=3,
    column_offsets=False,
):
    """Random caches and a random block table for sequences of the given lengths; seqOffset in
    tokens (offset_blocks[b] * block + something below a block) or, with column_offsets, in
    columns (what the A2/A3 PA_NZ kernel adds)."""
    dtype = np.dtype(dtype)
    width = width or max(-(-n // block) for n in lens) + (max(offset_blocks) if offset_blocks else 0)
    last = 32 // dtype.itemsize
    shapes = [(blocks, heads * h // last, block, last) if nz else (blocks, block, heads, h) for h in (head_k, head_v)]
    tokens = sum(lens) + extra_rows
    out_shape = [(tokens, heads * h) if nz else (tokens, heads, h) for h in (head_k, head_v)]
    seq_lens = np.concatenate(([0], np.cumsum(lens))) if cumsum else np.array(lens)
    offsets = None
    if offset_blocks is not None:
        offsets = np.array(offset_blocks) * (1 if column_offsets else block)
        if not column_offsets:
            offsets += rng.integers(0, block, len(lens))
    return Case(
        random_data(rng, shapes[0], dtype),
        random_data(rng, shapes[1], dtype),
        rng.integers(0, blocks, (len(lens), width)),
        seq_lens,
        random_data(rng, out_shape[0], dtype),
        random_data(rng, out_shape[1], dtype),
        offsets,
        cumsum,
        nz,
    )


def run_gather(dev, case: Case, mode=None, index=DataType.ACL_INT32, dtype=None, cache_format=Format.ACL_FORMAT_ND):
    """Both phases on device copies of the case; the two outputs."""
    key, value = dev(case.key, dtype), dev(case.value, dtype)
    idx = lambda x: None if x is None else dev(np.asarray(x), index)  # noqa: E731
    ae.run(
        "GatherPaKvCache",
        dev(case.key_cache, dtype, cache_format),
        dev(case.value_cache, dtype, cache_format),
        idx(case.tables),
        idx(case.seq_lens),
        key,
        value,
        idx(case.seq_offset),
        mode or ("PA_NZ" if case.nz else "Norm"),
        case.cumsum,
    )
    return ae.numpy(key), ae.numpy(value)


def kinds():
    return sorted({kind for kind, _ in sanitizer.reports()})


def check(outputs, expected):
    for got, want in zip(outputs, expected):
        assert same_bits(got, want)


# -- Atlas A2 / A3 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.int8])
@pytest.mark.parametrize("cumsum", [False, True])
def test_a2_norm(chip, dev, dtype, cumsum):
    rng = np.random.default_rng(10)
    case = make_case(rng, [5, 17, 8, 1], dtype, cumsum=cumsum, offset_blocks=[0, 2, 1, 3])
    check(
        run_gather(dev, case),
        golden.a2_norm(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, **case.args),
    )
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_norm_starts_cumulative_lengths_at_their_first_value(chip, dev):
    rng = np.random.default_rng(11)
    case = make_case(rng, [3, 9], cumsum=True, extra_rows=6)
    case.seq_lens = case.seq_lens + 4  # [4, 7, 16]: rows 4 .. 15
    out = run_gather(dev, case)
    check(
        out,
        golden.a2_norm(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, cumsum=True),
    )
    assert same_bits(out[0][:4], case.key[:4])


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_norm_moves_whole_32_byte_units_per_block(chip, dev, capfd):
    rng = np.random.default_rng(12)
    case = make_case(rng, [7, 10], np.int8, heads=1, head_k=6, head_v=20, block=4)  # 6- and 20-byte rows
    out = run_gather(dev, case)
    expected = golden.a2_norm(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value)
    check(out, expected)
    # a full block of key moves 24 bytes -> 0 units: nothing of the key arrives
    assert same_bits(out[0], case.key)
    assert not same_bits(out[1], case.value)
    assert "whole 32-byte units" in capfd.readouterr().err


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_norm_reads_block_columns_past_the_row(chip, dev):
    rng = np.random.default_rng(13)
    case = make_case(rng, [9, 4], width=2, offset_blocks=[1, 0])  # batch 0 needs columns 1, 2 of 2
    check(
        run_gather(dev, case),
        golden.a2_norm(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, **case.args),
    )
    assert kinds() == []


@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.int8])
def test_a2_pa_nz(chip, dev, dtype, capfd):
    rng = np.random.default_rng(14)
    case = make_case(rng, [5, 17, 8, 1], dtype, nz=True, offset_blocks=[0, 2, 1, 3], column_offsets=True)
    check(
        run_gather(dev, case),
        golden.a2_nz(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, **case.args),
    )
    assert kinds() == []
    assert "not seqOffset[b] / block_size" in capfd.readouterr().err


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("batches", [3, 8])
def test_a2_pa_nz_cumulative_lengths_read_unfilled_buffer_words(chip, dev, batches):
    rng = np.random.default_rng(15)
    case = make_case(rng, list(rng.integers(1, 12, batches)), nz=True, cumsum=True)
    check(
        run_gather(dev, case),
        golden.a2_nz(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, cumsum=True),
    )
    assert kinds() == ["uninitialized-read"]
    # batch 0's start always; with 8 batches the 32-byte copy of seqLens also stops before seqLens[8]
    read = "[0, 8]" if batches == 8 else "[0]"
    assert f"seqLens element(s) {read} from unified-buffer words it has not copied" in sanitizer.reports()[0][1]


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_pa_nz_chunks_of_batches_read_stale_words(chip, dev):
    """1277 columns leave room for 8 batches per buffer fill: with cumulative lengths batch 7 reads
    its end from the first block-table word, as the hardware does."""
    rng = np.random.default_rng(16)
    case = make_case(rng, [2] * 10, nz=True, cumsum=True, width=1277, blocks=4, block=2)
    case.tables[0, 0] = 3  # batch 7 then ends at 3: -11 tokens, and batch 8 starts there
    out = run_gather(dev, case)
    lens = np.diff(case.seq_lens)
    lens[7], lens[8] = 3 - case.seq_lens[7], case.seq_lens[9] - 3
    check(out, golden.a2_nz(case.key_cache, case.value_cache, case.tables, lens, case.key, case.value))
    reports = " ".join(m for _, m in sanitizer.reports())
    assert "seqLens element(s) [8]" in reports and "hold other data" in reports


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_pa_nz_token_over_148_kib_is_a_portability_rule(chip, dev, capfd, monkeypatch):
    rng = np.random.default_rng(17)
    case = make_case(rng, [2], nz=True, heads=1, head_k=76 * 1024, head_v=16, blocks=2, block=2)
    check(
        run_gather(dev, case),
        golden.a2_nz(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value),
    )
    assert "rows above the 148 KiB" in capfd.readouterr().err
    monkeypatch.setattr(config, "current", dataclasses.replace(config.current, strict=True))
    with pytest.raises(ae.AclnnError) as error:
        run_gather(dev, case)
    assert error.value.status == 507015


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_checks_no_ranks(chip, dev, capfd):
    """PA_NZ outputs given as [T, 16, 4] instead of [T, 64]: the token size is keyRef's dim 1, 16
    elements, which the kernel also uses to step through the cache's blocks."""
    rng = np.random.default_rng(18)
    case = make_case(rng, [3, 5], nz=True, heads=4, head_k=16, head_v=16)
    flat = [x.reshape(-1, 1, x.shape[2], 16) for x in (case.key_cache, case.value_cache)]
    expected = golden.a2_nz(*flat, case.tables, case.seq_lens, case.key.reshape(-1, 16), case.value.reshape(-1, 16))
    case.key, case.value = case.key.reshape(len(case.key), 16, 4), case.value.reshape(len(case.value), 16, 4)
    out = run_gather(dev, case)
    check([x.reshape(-1, 16) for x in out], expected)
    assert "checks no ranks" in capfd.readouterr().err


# -- Ascend910_95 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("nz", [False, True])
@pytest.mark.parametrize("cumsum", [False, True])
@pytest.mark.parametrize("index", [DataType.ACL_INT32, DataType.ACL_INT64])
def test_arch35(chip, dev, nz, cumsum, index):
    rng = np.random.default_rng(20)
    case = make_case(rng, [5, 17, 8, 1, 12], nz=nz, cumsum=cumsum, offset_blocks=[0, 2, 1, 3, 0])
    fmt = Format.ACL_FORMAT_FRACTAL_NZ if nz else Format.ACL_FORMAT_ND
    check(
        run_gather(dev, case, index=index, cache_format=fmt),
        golden.arch35(
            case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, nz=nz, **case.args
        ),
    )
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", DTYPES_ARCH35, ids=lambda d: d.name)
def test_arch35_every_dtype(chip, dev, dtype):
    rng = np.random.default_rng(21)
    np_dtype = np.dtype(NUMPY[dtype])
    case = make_case(rng, [6, 3], np.uint8 if np_dtype.itemsize == 1 else np_dtype, nz=True, head_k=32, head_v=64)
    case = dataclasses.replace(
        case, **{f: getattr(case, f).view(np_dtype) for f in ("key_cache", "value_cache", "key", "value")}
    )
    check(
        run_gather(dev, case, dtype=dtype, cache_format=Format.ACL_FORMAT_FRACTAL_NZ),
        golden.arch35(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, nz=True),
    )


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_cuts_at_the_output_and_fills_columns_past_the_row_with_zeros(chip, dev):
    rng = np.random.default_rng(22)
    case = make_case(rng, [9, 6, 5], width=2, offset_blocks=[1, 0, 0], extra_rows=0)
    case.key, case.value = case.key[:12], case.value[:12]  # batch 1 is cut after 3 tokens, 2 dropped
    out = run_gather(dev, case)
    check(
        out,
        golden.arch35(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, **case.args),
    )
    assert not out[0][8].any()  # batch 0's column 2 of 2: zeros
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_cores_stop_at_their_own_first_batch_past_the_output(chip, dev):
    """70 batches on 64 cores: two batches a core. Batch 0 starts past the output, so its core
    skips batch 1 too; the other cores go on."""
    rng = np.random.default_rng(23)
    case = make_case(rng, [2] * 70, cumsum=True, blocks=40, block=2, extra_rows=0)
    case.seq_lens[0] = 500
    out = run_gather(dev, case)
    check(
        out,
        golden.arch35(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, cumsum=True),
    )
    assert same_bits(out[0][2:4], case.key[2:4])  # batch 1's rows: untouched
    assert not same_bits(out[0][4:6], case.key[4:6])


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("index", [DataType.ACL_INT32, DataType.ACL_INT64])
def test_arch35_pa_nz_divides_a_negative_int32_seq_offset_as_unsigned(chip, dev, index):
    rng = np.random.default_rng(24)
    case = make_case(rng, [16], nz=True, offset_blocks=[0], extra_rows=0)
    case.seq_offset = np.array([-8])  # one block back
    out = run_gather(dev, case, index=index, cache_format=Format.ACL_FORMAT_FRACTAL_NZ)
    unshifted = golden.arch35(
        case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, nz=True
    )
    assert not out[0][:8].any()  # column -1: zeros either way
    if index == DataType.ACL_INT32:  # (2^32 - 8) / 8: far past the row
        assert not out[0].any()
    else:  # -1: the second block reads column 0
        assert same_bits(out[0][8:], unshifted[0][:8])


# -- Gather is the inverse of scatter --------------------------------------------------------------
def scatter_then_gather(dev, rng, dtype, nz, lens, cumsum, offsets, heads=2, head=32, block=8, blocks=16, data=None):
    """Scatter the tokens of sequences (starting at table column offsets[b]) into a paged cache
    with ScatterPaKvCache, gather them back; return (tokens, gathered) for key and value."""
    np_dtype = np.dtype(dtype)
    width = max(-(-n // block) + o for n, o in zip(lens, offsets))
    tables = rng.permutation(blocks)[: len(lens) * width].reshape(len(lens), width)
    slots = np.concatenate(
        [
            tables[b, o + np.arange(n) // block] * block + np.arange(n) % block
            for b, (n, o) in enumerate(zip(lens, offsets))
        ]
    ).astype(np.int32)
    tokens = sum(lens)
    last = 32 // np_dtype.itemsize
    kv = [random_data(rng, (tokens, heads, head), np_dtype) for _ in range(2)]
    cache_shape = (blocks, heads * head // last, block, last) if nz else (blocks, block, heads, head)
    caches = [dev(np.zeros(cache_shape, np_dtype), data) for _ in range(2)]
    ae.run(
        "ScatterPaKvCache",
        dev(kv[0], data),
        caches[0],
        dev(slots),
        dev(kv[1], data),
        caches[1],
        None,
        None,
        None,
        "PA_NZ" if nz else "Norm",
        None,
        None,
        None,
    )
    out_shape = (tokens, heads * head) if nz else (tokens, heads, head)
    outs = [dev(np.zeros(out_shape, np_dtype), data) for _ in range(2)]
    seq_lens = np.concatenate(([0], np.cumsum(lens))) if cumsum else np.array(lens)
    # seqOffset in tokens (divided by the block size), in columns for the A2/A3 PA_NZ kernel
    shift = np.array(offsets) * (1 if nz else block)
    ae.run(
        "GatherPaKvCache",
        caches[0],
        caches[1],
        dev(tables.astype(np.int32)),
        dev(seq_lens.astype(np.int32)),
        outs[0],
        outs[1],
        dev(shift.astype(np.int32)),
        "PA_NZ" if nz else "Norm",
        cumsum,
    )
    return [x.reshape(out_shape) for x in kv], [ae.numpy(o) for o in outs]


@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("nz", [False, True], ids=["Norm", "PA_NZ"])
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.int8])
@pytest.mark.parametrize("cumsum", [False, True])
def test_gather_inverts_scatter_on_a2(chip, dev, nz, dtype, cumsum):
    rng = np.random.default_rng(30)
    sent, back = scatter_then_gather(dev, rng, dtype, nz, [13, 1, 24, 8], cumsum, [0, 2, 1, 0])
    check(back, sent)
    # the PA_NZ kernel reads where cumulative lengths start before it has copied them in (seqLens[0] = 0 here)
    assert kinds() == (["uninitialized-read"] if nz and cumsum else [])


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", DTYPES_ARCH35, ids=lambda d: d.name)
@pytest.mark.parametrize("cumsum", [False, True])
def test_gather_inverts_scatter_on_arch35(chip, dev, dtype, cumsum):
    rng = np.random.default_rng(31)
    sent, back = scatter_then_gather(dev, rng, NUMPY[dtype], False, [13, 1, 24, 8], cumsum, [0, 2, 1, 0], data=dtype)
    check(back, sent)
    assert kinds() == []


# -- What the hardware leaves undefined ------------------------------------------------------------
@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
def test_blocks_outside_the_cache_read_as_zeros(chip, dev):
    rng = np.random.default_rng(40)
    case = make_case(rng, [6, 4], blocks=3, extra_rows=0)
    case.tables[0, 0], case.tables[1, 0] = 3, -2
    out = run_gather(dev, case)
    assert not out[0].any() and not out[1].any()
    assert kinds() == ["out-of-bounds-read"]


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("nz", [False, True])
def test_a2_rows_past_the_output_are_skipped(chip, dev, nz):
    rng = np.random.default_rng(41)
    case = make_case(rng, [6, 9], nz=nz, extra_rows=0)
    case.key, case.value = case.key[:10], case.value[:10]
    gold = golden.a2_nz if nz else golden.a2_norm
    big = dataclasses.replace(
        case, key=np.concatenate([case.key, case.key[:5]]), value=np.concatenate([case.value, case.value[:5]])
    )
    expected = gold(big.key_cache, big.value_cache, big.tables, big.seq_lens, big.key, big.value)
    check(run_gather(dev, case), [e[:10] for e in expected])
    assert kinds() == ["index-out-of-range"]


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
def test_overlapping_batches_are_a_race_the_last_write_wins(chip, dev):
    rng = np.random.default_rng(42)
    case = make_case(rng, [6, 1, 5], cumsum=True)
    case.seq_lens = np.array([0, 6, 3, 8])  # batch 1 runs back from row 6 to 3, batch 2 rewrites rows 3..5
    gold = golden.a2_norm if chip == "Ascend910B" else golden.arch35
    check(
        run_gather(dev, case),
        gold(case.key_cache, case.value_cache, case.tables, case.seq_lens, case.key, case.value, cumsum=True),
    )
    assert kinds() == ["write-race"]


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_short_seq_lens_read_past_the_tensor(chip, dev):
    rng = np.random.default_rng(43)
    case = make_case(rng, [3, 5], cumsum=True)
    case.seq_lens = case.seq_lens[:2]  # A2/A3 checks no length: the kernel reads 3
    out = run_gather(dev, case)
    full = np.array([0, 3, 0])  # the missing end reads as 0
    check(out, golden.a2_norm(case.key_cache, case.value_cache, case.tables, full, case.key, case.value, cumsum=True))
    assert kinds() == ["out-of-bounds-read"]


# -- Chip hints ------------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a_fractal_nz_cache_names_the_chip_that_registers_it(chip, dev):
    rng = np.random.default_rng(50)
    case = make_case(rng, [3], nz=True)
    with pytest.raises(ae.AclnnError) as error:
        run_gather(dev, case, cache_format=Format.ACL_FORMAT_FRACTAL_NZ)
    assert error.value.status == 161002
    assert error.value.message.endswith(
        "format FRACTAL_NZ is registered on Ascend910_95. The same call is accepted on Ascend910_95; ACLNN_EMU_SOC "
        "selects the emulated chip (now Ascend910B2, an Ascend910B)"
    )


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_an_nd_cache_in_pa_nz_mode_is_a_tiling_error_on_arch35_but_runs_on_a2(chip, dev):
    rng = np.random.default_rng(51)
    case = make_case(rng, [3], nz=True)
    with pytest.raises(ae.AclnnError) as error:
        run_gather(dev, case)
    assert error.value.status == 561002
    assert "keyCache format should be FRACTAL_NZ" in error.value.message
    assert error.value.message.endswith(
        "The same call is accepted on Ascend910B and Ascend910_93; ACLNN_EMU_SOC "
        "selects the emulated chip (now Ascend910_9599, an Ascend910_95)"
    )
