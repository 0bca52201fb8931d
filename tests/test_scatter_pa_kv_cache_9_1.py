"""ScatterPaKvCache's Atlas A2/A3 tiling of ops-transformer branch 9.1.0 (attention/scatter_pa_kv_cache/op_host/
scatter_pa_kv_cache_tiling.cpp): the NHSD scatter mode (GetTemplateType, CheckInputDimNumNHSD, CheckInputShapeNHSD,
DoNHSDOpTiling; op_kernel/scatter_pa_kv_cache_nhsd.h) and 5-D PA_NZ caches (CheckInputDimNumNz, CheckInputShapeNz):
exact bytes against the loop references, the tiling's refusals (561103 behind the 9.1.0 op_api), 8.5's behaviour."""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.pytest_plugin import select
from golden import scatter_pa_kv_cache as golden
import test_scatter_pa_kv_cache as base
from test_scatter_pa_kv_cache import BF16, kinds, scatter

dev = base.dev  # the fixture

A2_CHIPS = ["Ascend910B", "Ascend910_93"]
INVALID, TILING, L0_FAILED, NO_KERNEL = 161002, 561002, 561103, 561003


@pytest.fixture
def release(chip, monkeypatch):
    select(monkeypatch, cann_version="9.1.0", soc=chip)


def _case(rng, dtype, tokens=6, heads=3, d=16, dv=32, blocks=4, block_size=4):
    key, value = golden.random_data(rng, (tokens, heads, d), dtype), golden.random_data(rng, (tokens, heads, dv), dtype)
    kc = golden.random_data(rng, (blocks, heads, block_size, d), dtype)
    vc = golden.random_data(rng, (blocks, heads, block_size, dv), dtype)
    return key, value, kc, vc


@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("slot_dtype", [ae.DataType.ACL_INT32, ae.DataType.ACL_INT64])
def test_nhsd_moves_each_head_to_its_block_row(chip, release, dev, dtype, slot_dtype):
    """The kernel reads slot_mapping in its own dtype (ScatterPaKvCacheNHSD<DTYPE_KEY, DTYPE_SLOT_MAPPING>)."""
    rng = np.random.default_rng(5)
    key, value, kc, vc = _case(rng, dtype)
    slots = np.array([0, 5, 15, 6, 9, 12])
    out_k, out_v = scatter(dev, key, kc, slots, value, vc, cache_mode="Norm", scatter_mode="NHSD",
                           slot_dtype=slot_dtype)  # fmt: skip
    assert golden.same_bits(out_k, golden.nhsd(kc, key, slots))
    assert golden.same_bits(out_v, golden.nhsd(vc, value, slots))
    assert kinds() == []


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_nhsd_negative_slots_are_not_skipped(chip, release, dev):
    """No slot < 0 test in the kernel: C's division puts slot -1 one row before its block, so head 0 writes before
    the cache (reported, skipped) and head h > 0 over the last row of head h - 1 in block 0."""
    key, value, kc, vc = _case(np.random.default_rng(6), np.float16, tokens=2)
    slots = np.array([-1, 7])
    out_k, out_v = scatter(dev, key, kc, slots, value, vc, scatter_mode="NHSD")
    assert golden.same_bits(out_k, golden.nhsd(kc, key, slots))
    assert golden.same_bits(out_v, golden.nhsd(vc, value, slots))
    assert not golden.same_bits(out_k[0, 0, 3], kc[0, 0, 3])  # head 1 of token 0 landed there
    assert kinds() == ["index-out-of-range"]


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize(
    "change,code",
    [
        (dict(d=8), L0_FAILED),  # kHeadSize * 2 bytes not a multiple of 32
        (dict(blocks=1), L0_FAILED),  # numBlocks * blockSize < numTokens
        # key and value of different dtypes: the op_api's CheckDtypeValid, before the tiling's own NHSD check
        (dict(dv=48, value_dtype=np.int8), INVALID),
        (dict(dtype=np.int8, d=32, dv=32), NO_KERNEL),  # the NHSD kernel is built for FP16/BF16 keys only
    ],
)
def test_nhsd_tiling_refusals(chip, release, dev, change, code):
    change = dict(change)
    value_dtype = change.pop("value_dtype", None)
    dtype = change.pop("dtype", np.float16)
    key, value, kc, vc = _case(np.random.default_rng(7), dtype, **change)
    if value_dtype is not None:
        value, vc = value.astype(value_dtype), vc.astype(value_dtype)
    with pytest.raises(ae.AclnnError) as info:
        scatter(dev, key, kc, np.arange(len(key)), value, vc, scatter_mode="NHSD")
    assert info.value.code == code


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_nhsd_is_an_ordinary_scatter_before_9_1_0(chip, dev):
    """8.5's tiling compares scatterMode with its own names only: NHSD runs as the plain scatter (caches
    [blocks, blockSize, heads, D])."""
    key, value, kc, vc = _case(np.random.default_rng(8), np.float16, heads=1, block_size=1)
    slots = np.array([0, 1, 2, 3, 0, 1])[:4]
    key, value = key[:4], value[:4]
    out_k, _ = scatter(dev, key, kc, slots, value, vc, scatter_mode="NHSD")
    assert golden.same_bits(out_k, golden.vllm_normal(kc, key, slots))


@pytest.mark.parametrize("chip", A2_CHIPS, indirect=True)
@pytest.mark.parametrize("slot_dtype", [ae.DataType.ACL_INT32, ae.DataType.ACL_INT64])
def test_pa_nz_5d_caches_take_the_4d_bytes(chip, release, dev, slot_dtype):
    """CheckInputDimNumNz / CheckInputShapeNz: a PA_NZ cache may be 5-D [blocks, heads, D / last, blockSize, last],
    which holds the bytes of the 4-D [blocks, heads x D / last, blockSize, last] in the same order."""
    rng = np.random.default_rng(9)
    tokens, heads, head, blocks, block = 20, 2, 32, 3, 16
    key, value = (golden.random_data(rng, (tokens, heads, head), np.float16) for _ in range(2))
    kc, vc = (golden.random_data(rng, (blocks, heads * head // 16, block, 16), np.float16) for _ in range(2))
    slots = rng.permutation(blocks * block)[:tokens]
    slots[3] = -1
    five = (blocks, heads, head // 16, block, 16)
    out_k, out_v = scatter(dev, key, kc.reshape(five), slots, value, vc.reshape(five), cache_mode="PA_NZ",
                           slot_dtype=slot_dtype)  # fmt: skip
    assert out_k.shape == five
    assert golden.same_bits(out_k.reshape(kc.shape), golden.a2_nz(kc, key, slots))
    assert golden.same_bits(out_v.reshape(vc.shape), golden.a2_nz(vc, value, slots))


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("version,code", [("8.5.0", TILING), ("9.1.0", L0_FAILED)])
def test_pa_nz_5d_cache_shapes(chip, dev, monkeypatch, version, code):
    """8.5: a 5-D cache is refused (CheckInputDimNum, 561002); 9.1.0 checks dim 2 against D / last (561103)."""
    select(monkeypatch, cann_version=version, soc=chip)
    key = np.zeros((4, 2, 32), np.float16)
    cache = np.zeros((2, 2, 1, 16, 16), np.float16)  # D / last is 2
    with pytest.raises(ae.AclnnError) as info:
        scatter(dev, key, cache, np.arange(4), key, cache, cache_mode="PA_NZ")
    assert info.value.code == code


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_pa_nz_block_size_is_bounded_by_uint16(chip, release, dev):
    """CheckInputShapeNz: blockSize > UINT16_MAX fails the tiling (8.5 bounds it by UINT_MAX only)."""
    key = np.zeros((1, 1, 16), np.float16)
    cache = np.zeros((1, 1, 65536, 16), np.float16)
    with pytest.raises(ae.AclnnError) as info:
        scatter(dev, key, cache, np.arange(1), key, cache, cache_mode="PA_NZ")
    assert info.value.code == L0_FAILED
