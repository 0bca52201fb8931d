"""ScatterPaKvCache's NHSD scatter mode on Atlas A2/A3 (ops-transformer branch 9.1.0
attention/scatter_pa_kv_cache/op_host/scatter_pa_kv_cache_tiling.cpp GetTemplateType, CheckInputDimNumNHSD,
CheckInputShapeNHSD, DoNHSDOpTiling; op_kernel/scatter_pa_kv_cache_nhsd.h): exact bytes against the loop reference,
the tiling's refusals (561103 behind the 9.1.0 op_api), absent before 9.1.0."""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.pytest_plugin import select
from golden import scatter_pa_kv_cache as golden
import test_scatter_pa_kv_cache as base
from test_scatter_pa_kv_cache import BF16, kinds, scatter

dev = base.dev  # the fixture

A2_CHIPS = ["Ascend910B", "Ascend910_93"]
INVALID, L0_FAILED, NO_KERNEL = 161002, 561103, 561003


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
