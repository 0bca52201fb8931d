"""aclnnIncreFlashAttentionV4 on Ascend910_95 through the Python API against the float64 goldens.

There a FLOAT16/BF16 key runs PromptFlashAttentionTilingV2 and the arch35 flash-attention kernels
(ops/flash_attention/incre/checks_arch35.py), an INT8 key IFATilingV2 and the arch35 antiquant kernel
(incre/antiquant_arch35.py), whose key/value the references dequantise in numpy's fp16/bf16 arithmetic.
References: the PromptFlashAttention golden with high_precision (the arch35 roundings) for dense
caches, a query S above 1 and int8 outputs; the IncreFlashAttention golden, whose per-element floor
judges cancelling sums, for page attention and pseShift (the PFA golden has no pse). Held to CANN's precision standard; the per-chip roundings
bit for bit.
"""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
from aclnn_emu import DataType
from aclnn_emu.meta import TensorList
from golden import incre_flash_attention as ifa_golden
from golden import prompt_flash_attention as pfa_golden
import test_incre_flash_attention
from test_incre_flash_attention import BF16, expect, kv_layout, meets, paged_cache, run_ifa, uniform_case, values

BIG = pfa_golden.BIG
ON_ARCH35 = pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)


@pytest.fixture(autouse=True)
def fixed_data(monkeypatch):
    """Each test draws its own data, whatever ran before it."""
    monkeypatch.setattr(test_incre_flash_attention, "RNG", np.random.default_rng(20260311))


def arch35(q, k, v, lengths, mask=None, scale=0.125):
    """The arch35 kernels' result [B, N, D] for q [B, N, D] and k/v [B, N2, S, D]: no token band
    (PFAConvertContext passes pre/next tokens 2147483647), mask [B, S2] or None."""
    out = pfa_golden.attention(
        q[:, :, None],
        k,
        v,
        scale=scale,
        pre=BIG,
        nxt=BIG,
        act_kv=lengths,
        mask=None if mask is None else mask[:, None, :],
        high_precision=True,
    )
    return out[:, :, 0]


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_layouts_gqa_and_lengths(chip, dtype, layout):
    q = values((3, 8, 64), dtype)
    k, v = values((3, 2, 77, 64), dtype), values((3, 2, 77, 64), dtype)
    lengths = (77, 30, 5)
    out = run_ifa(
        q, [kv_layout(k, layout)], [kv_layout(v, layout)], layout=layout, kv_heads=2, scale=64**-0.5, actual=lengths
    )
    precision.assert_meets(out, arch35(q, k, v, lengths, scale=64**-0.5), np.dtype(dtype).name)


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("heads_major,layout", [(True, "BNSD"), (False, "BNSD"), (False, "BSH"), (False, "BSND")])
def test_page_attention(chip, dtype, heads_major, layout):
    q = values((3, 8, 64), dtype)
    lens = (300, 17, 128)
    k, v = values((3, 2, 300, 64), dtype), values((3, 2, 300, 64), dtype)
    kc, vc, table = paged_cache(k, v, 64, heads_major, lens)
    mask = (np.random.default_rng(3).random((3, table.shape[1] * 64)) < 0.2).astype(np.int8)
    out = run_ifa(q, [kc], [vc], layout=layout, kv_heads=2, actual=lens, table=table, block_size=64, mask=mask)
    expected = expect(
        q,
        [ifa_golden.dense_rows(kc, table[b], 64, n, 2, heads_major) for b, n in enumerate(lens)],
        [ifa_golden.dense_rows(vc, table[b], 64, n, 2, heads_major) for b, n in enumerate(lens)],
        scale=0.125,
        lengths=lens,
        mask=mask,
        small_dtype=np.dtype(dtype).name,
    )
    meets(out, expected, dtype)


@ON_ARCH35
def test_query_s_above_one_runs_as_prompt_attention(chip):
    """No [1, 16] bound: a query S of 20 runs, every row over all keys (no causal band)."""
    q = values((2, 4, 20, 32), np.float16)
    k, v = values((2, 2, 50, 32), np.float16), values((2, 2, 50, 32), np.float16)
    out = ae.empty((2, 4, 20, 32), DataType.ACL_FLOAT16)
    ae.run(
        "IncreFlashAttentionV4",
        ae.to_device(q),
        TensorList([ae.to_device(k)]),
        TensorList([ae.to_device(v)]),
        None,
        None,
        (50, 33),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        4,
        0.125,
        "BNSD",
        2,
        0,
        1,
        out,
    )
    expected = pfa_golden.attention(q, k, v, scale=0.125, pre=BIG, nxt=BIG, act_kv=(50, 33), high_precision=True)
    precision.assert_meets(ae.numpy(out), expected, "float16")


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_mask_and_pse(chip, dtype):
    q = values((3, 4, 32), dtype)
    k, v = values((3, 2, 40, 32), dtype), values((3, 2, 40, 32), dtype)
    mask = np.random.default_rng(5).random((3, 1, 1, 48)) < 0.3
    pse = values((1, 4, 1, 40), dtype)
    actual = (40, 17, 7)
    out = run_ifa(q, [k], [v], kv_heads=2, actual=actual, mask=mask.astype(np.uint8), pse=pse)
    expected = expect(
        q,
        list(k),
        list(v),
        scale=0.125,
        lengths=actual,
        mask=mask.reshape(3, 48),
        pse=pse[:, :, 0],
        small_dtype=np.dtype(dtype).name,
    )
    meets(out, expected, dtype)


@ON_ARCH35
def test_kv_left_padding_shifts_the_mask_and_the_pse(chip):
    """InitKVLeftPaddingSize: batch b reads tokens [S - pad - len_b, S - pad); attenmask.h and
    CalPseShiftCoreOffset add the padding to the mask and pse columns (both read at the token's own
    column); a batch that does not fit (S - pad - len < 0) reads no token and is zero."""
    q = values((3, 2, 16), np.float16)
    k, v = values((3, 2, 30, 16), np.float16), values((3, 2, 30, 16), np.float16)
    actual, pad = (12, 25, 27), 4
    mask = np.random.default_rng(7).random((3, 1, 1, 30)) < 0.3
    pse = values((3, 2, 1, 30), np.float16)
    out = run_ifa(q, [k], [v], actual=actual, padding=np.array([pad]), mask=mask.astype(np.uint8), pse=pse)
    check_padded(out, q, k, v, actual, pad, mask, pse)


def check_padded(out, q, k, v, actual, pad, mask, pse):
    """Batches 0 and 1 against the golden with the kv left padding; batch 2 (no room) is zero."""
    s2 = k.shape[2]
    starts = [s2 - pad - n for n in actual]
    expected = expect(
        q[:2],
        list(k[:2]),
        list(v[:2]),
        scale=0.125,
        lengths=actual[:2],
        starts=starts[:2],
        mask=mask.reshape(3, s2)[:2],
        pse=pse[:2, :, 0],
    )  # the golden reads both at start + j
    meets(out[:2], expected, np.float16)
    assert np.all(out[2] == 0)


@ON_ARCH35
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_post_quant_int8_output(chip, per_channel):
    q = values((2, 4, 32), BF16)
    k, v = values((2, 4, 24, 32), BF16), values((2, 4, 24, 32), BF16, 3.0)
    shape = (4, 32) if per_channel else (1,)
    rng = np.random.default_rng(9)
    scale = (rng.random(shape) * 40 + 10).astype(np.float32)
    offset = rng.integers(-5, 6, shape).astype(np.float32)
    out = run_ifa(q, [k], [v], quant2=scale, offset2=offset, out_dtype=DataType.ACL_INT8)
    expected = pfa_golden.attention(
        q[:, :, None],
        k,
        v,
        scale=0.125,
        pre=BIG,
        nxt=BIG,
        quant2=scale.astype(np.float64),
        offset2=offset.astype(np.float64),
        high_precision=True,
    )[:, :, 0]
    diff = np.abs(out.astype(np.int64) - expected)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.99


@ON_ARCH35
def test_empty_key_gives_zeros(chip):
    """CheckEmptyTensor: a key or value without elements zero-fills attentionOut, nothing else checked."""
    q = values((2, 4, 32), np.float16)
    k = np.zeros((2, 2, 0, 32), np.float16)
    out = run_ifa(q, [k], [k], kv_heads=2, pse=values((7, 7), np.float16))
    assert out.shape == (2, 4, 32) and np.all(out == 0)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
def test_bf16_output_rounding_per_chip(chip):
    """O = 1 + 2**-8 lies halfway between bf16 1 and 1 + 2**-7: the arch32 kernel (A2/A3) stores it
    with CAST_RINT (1), the arch35 one with CAST_ROUND (1 + 2**-7)."""
    q, k, v = uniform_case([[1.0] * 16, [1.0 + 2**-7] * 16], BF16)
    out = run_ifa(q, [k], [v]).astype(np.float32)
    assert np.all(out == (1.0 if chip == "Ascend910B" else 1.0 + 2**-7))


@ON_ARCH35
def test_ignored_inputs_warn(chip, capfd):
    """A2/A3 reject antiquant and quant parameters with a FLOAT16 key and output; TilingV2 never reads
    them: the call runs, and says so."""
    q = values((1, 2, 16), np.float16)
    k = values((1, 2, 8, 16), np.float16)
    out = run_ifa(q, [k], [k], antiquant=(np.ones(2, np.float16), None), quant2=np.ones(1, np.float32))
    assert "antiquantScale, quantScale2 ignored" in capfd.readouterr().err
    meets(out, expect(q, list(k), list(k), scale=0.125, lengths=[8]), np.float16)


@ON_ARCH35
def test_rules_come_from_prompt_flash_attention_tiling_v2(chip):
    """Same code as on A2/A3 (561002), another rule: the shared PFA arch35 checks answer here."""
    q = values((2, 4, 32), np.float16)
    k = values((2, 2, 16, 32), np.float16)
    with pytest.raises(ae.AclnnError) as err:
        run_ifa(q, [k], [k], kv_heads=-1)
    assert err.value.status == 561002 and "numKeyValueHeads(-1) is negative" in err.value.message
    with pytest.raises(ae.AclnnError) as err:
        run_ifa(q, [k], [k], kv_heads=2, layout="BSH_NBSD")
    assert err.value.status == 561002 and "Invalid input layout:BSH_NBSD" in err.value.message


def arch35_dequant(x8, scale, offset, dtype):
    """The arch35 W8 dequantisation in numpy's own half arithmetic: dtype(x) (+ offset) * scale,
    each operation rounded to dtype (vf_antiquant_w8.h)."""
    y = x8.astype(dtype)
    if offset is not None:
        y = (y.astype(np.float64) + offset.astype(np.float64)).astype(dtype)
    return (y.astype(np.float64) * scale.astype(np.float64)).astype(dtype)


def int8_case(dtype, shape, per_channel, with_offset=True, seed=11):
    """int8 key/value [B, N2, S, D] with antiquant parameters (per tensor [2] or per channel [2, N2, 1, D])."""
    rng = np.random.default_rng(seed)
    b, n2, s, d = shape
    k8, v8 = (rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2))
    pshape = (2, n2, 1, d) if per_channel else (2,)
    scale = (rng.random(pshape) * 0.02 + 0.005).astype(dtype)
    offset = rng.integers(-3, 4, pshape).astype(dtype) if with_offset else None
    per = (lambda x, i: x[i][None]) if per_channel else (lambda x, i: x[i])
    k = arch35_dequant(k8, per(scale, 0), None if offset is None else per(offset, 0), dtype)
    v = arch35_dequant(v8, per(scale, 1), None if offset is None else per(offset, 1), dtype)
    return k8, v8, scale, offset, k, v


def test_arch35_dequantisation_bit_for_bit():
    """Each step rounds to the query's dtype: bit-identical to numpy's fp16/bf16 arithmetic."""
    from aclnn_emu.kernels.flash_attention.antiquant_arch35 import dequantize

    rng = np.random.default_rng(4)
    x8 = rng.integers(-128, 128, (64, 128), dtype=np.int8)
    for dtype in (np.float16, BF16):
        scale = (rng.random(128) * 3).astype(dtype)
        offset = (rng.standard_normal(128) * 40).astype(dtype)
        got = dequantize(x8, scale, offset, dtype)
        assert got.dtype == dtype
        assert np.array_equal(got.view(np.uint16), arch35_dequant(x8, scale, offset, dtype).view(np.uint16))
        one_step = ((x8 + offset.astype(np.float64)) * scale.astype(np.float64)).astype(dtype)
        assert not np.array_equal(got.view(np.uint16), one_step.view(np.uint16)), "the Q_T rounding must show"


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
@pytest.mark.parametrize("params", ["per_tensor", "per_channel", "per_channel_no_offset"])
def test_int8_key_value(chip, dtype, layout, params):
    """IFATilingV2 and the arch35 antiquant kernel: the key/value dequantised in the query's dtype,
    then the arch35 flash-attention maths (pfa.ARCH35)."""
    per_channel = params != "per_tensor"
    k8, v8, scale, offset, k, v = int8_case(dtype, (3, 2, 60, 32), per_channel, params != "per_channel_no_offset")
    if per_channel and layout != "BNSD":  # the [2, H] and [2, N2, D] forms of the same values
        scale = scale.reshape(2, -1) if layout == "BSH" else scale.reshape(2, 2, 32)
        offset = None if offset is None else offset.reshape(scale.shape)
    q = values((3, 8, 32), dtype)
    lengths = (60, 23, 1)
    out = run_ifa(
        q,
        [kv_layout(k8, layout)],
        [kv_layout(v8, layout)],
        layout=layout,
        kv_heads=2,
        actual=lengths,
        antiquant=(scale, offset),
    )
    precision.assert_meets(out, arch35(q, k, v, lengths), np.dtype(dtype).name)


@ON_ARCH35
@pytest.mark.parametrize("heads_major,layout", [(True, "BNSD"), (False, "BSH")])
def test_int8_page_attention(chip, heads_major, layout):
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 100, 32), True)
    lens = (100, 41)
    kc, vc, table = paged_cache(k8, v8, 32, heads_major, lens)
    q = values((2, 4, 32), np.float16)
    out = run_ifa(
        q, [kc], [vc], layout=layout, kv_heads=2, actual=lens, table=table, block_size=32, antiquant=(scale, offset)
    )
    precision.assert_meets(out, arch35(q, k, v, lens), "float16")


def to_nz(cache):
    """(blocks, N2, blockSize, D) -> the NZ cache (blocks, N2, D / 16, blockSize, 16)."""
    blocks, n2, bs, d = cache.shape
    return np.ascontiguousarray(cache.reshape(blocks, n2, bs, d // 16, 16).transpose(0, 1, 3, 2, 4))


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_page_attention_nz_cache(chip, dtype, layout):
    """A 5-D cache: element (block, n, token, d) at [block, n, d // 16, token, d % 16] (CopyInL1.h)."""
    q = values((2, 4, 64), dtype)
    lens = (80, 13)
    k, v = values((2, 2, 80, 64), dtype), values((2, 2, 80, 64), dtype)
    kc, vc, table = paged_cache(k, v, 32, True, lens)
    out = run_ifa(q, [to_nz(kc)], [to_nz(vc)], layout=layout, kv_heads=2, actual=lens, table=table, block_size=32)
    expected = expect(
        q,
        [ifa_golden.dense_rows(kc, table[b], 32, n, 2, True) for b, n in enumerate(lens)],
        [ifa_golden.dense_rows(vc, table[b], 32, n, 2, True) for b, n in enumerate(lens)],
        scale=0.125,
        lengths=lens,
        small_dtype=np.dtype(dtype).name,
    )
    meets(out, expected, dtype)


@ON_ARCH35
def test_int8_page_attention_nz_cache(chip):
    """IFATilingV2's NZ cache for int8: D0 = 16 int8 values (CheckKvCacheValue, CopyKVPaNz)."""
    k8, v8, scale, offset, k, v = int8_case(BF16, (2, 2, 70, 32), True)
    lens = (70, 38)
    kc, vc, table = paged_cache(k8, v8, 32, True, lens)
    q = values((2, 4, 32), BF16)
    out = run_ifa(
        q, [to_nz(kc)], [to_nz(vc)], kv_heads=2, actual=lens, table=table, block_size=32, antiquant=(scale, offset)
    )
    precision.assert_meets(out, arch35(q, k, v, lens), "bfloat16")


@ON_ARCH35
@pytest.mark.parametrize("heads_major", [True, False], ids=["BnNBsD", "BnBsH"])
def test_mla_page_attention(chip, heads_major):
    """Key D 192, value D 128 in page attention: the value cache is read with its own D."""
    q = values((2, 4, 192), np.float16)
    lens = (50, 17)
    k, v = values((2, 1, 50, 192), np.float16), values((2, 1, 50, 128), np.float16)
    kc, _, table = paged_cache(k, k, 16, heads_major, lens)
    vc = np.zeros((kc.shape[0], 1, 16, 128), np.float16)  # the values in the same blocks
    for b, n in enumerate(lens):
        for c in range(-(-n // 16)):
            rows = v[b, :, c * 16 : (c + 1) * 16]
            vc[table[b, c], :, : rows.shape[1]] = rows
    vc = vc if heads_major else vc.reshape(-1, 16, 128)
    out = ae.empty((2, 4, 1, 128), DataType.ACL_FLOAT16)
    ae.run(
        "IncreFlashAttentionV4",
        ae.to_device(q[:, :, None]),
        TensorList([ae.to_device(kc)]),
        TensorList([ae.to_device(vc)]),
        None,
        None,
        lens,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        ae.to_device(table, DataType.ACL_INT32),
        None,
        4,
        192**-0.5,
        "BNSD",
        1,
        16,
        1,
        out,
    )
    expected = pfa_golden.attention(
        q[:, :, None], k, v, scale=192**-0.5, pre=BIG, nxt=BIG, act_kv=lens, high_precision=True
    )
    precision.assert_meets(ae.numpy(out), expected, "float16")


@ON_ARCH35
def test_bsh_key_h_with_remainder_read_by_kv_heads(chip, capfd):
    """A BSH key of H = N2 x D + 1 passes (D = H / numKeyValueHeads): the kernel reads its flat
    elements as [B, S, N2 x D]."""
    q = values((2, 4, 32), np.float16)
    k, v = values((2, 16, 65), np.float16), values((2, 16, 65), np.float16)
    out = run_ifa(q, [k], [v], layout="BSH", kv_heads=2, actual=(16, 9))
    assert "read as [2, 16, 64]" in capfd.readouterr().err
    view = lambda x: x.reshape(-1)[: 2 * 16 * 64].reshape(2, 16, 2, 32).transpose(0, 2, 1, 3)
    precision.assert_meets(out, arch35(q, view(k), view(v), (16, 9)), "float16")


@ON_ARCH35
def test_int8_key_heads_read_by_kv_heads(chip):
    """IFATilingV2 compares D alone: a BNSD key of 3 heads with numKeyValueHeads 2 is read as
    [B, 2, S, D] over its flat elements; 1 head would be read past its end (refused)."""
    k8, v8, scale, offset, _, _ = int8_case(np.float16, (2, 3, 20, 32), False)
    q = values((2, 4, 32), np.float16)
    out = run_ifa(q, [k8], [v8], kv_heads=2, antiquant=(scale, offset))
    view = lambda x: x.reshape(-1)[: 2 * 2 * 20 * 32].reshape(2, 2, 20, 32)
    k = arch35_dequant(view(k8), scale[0], offset[0], np.float16)
    v = arch35_dequant(view(v8), scale[1], offset[1], np.float16)
    precision.assert_meets(out, arch35(q, k, v, (20, 20)), "float16")
    with pytest.raises(ae.AclnnError) as err:
        run_ifa(q, [k8[:, :1]], [v8[:, :1]], kv_heads=2, antiquant=(scale, offset))
    assert err.value.status == 561003 and "past the key" in err.value.message


@ON_ARCH35
def test_int8_mask_pse_and_left_padding(chip):
    """Mask and pse from the padded column on, as for FLOAT16 keys."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (3, 2, 30, 16), False)
    q = values((3, 2, 16), np.float16)
    actual, pad = (12, 25, 27), 4
    mask = np.random.default_rng(7).random((3, 1, 1, 30)) < 0.3
    pse = values((3, 2, 1, 30), np.float16)
    out = run_ifa(
        q,
        [k8],
        [v8],
        actual=actual,
        padding=np.array([pad]),
        mask=mask.astype(np.uint8),
        pse=pse,
        antiquant=(scale, offset),
    )
    check_padded(out, q, k, v, actual, pad, mask, pse)


@ON_ARCH35
def test_int8_tensor_list(chip):
    """One tensor per batch (the query's batch differs from the key's): each batch its own S."""
    q = values((2, 4, 32), BF16)
    parts = [int8_case(BF16, (1, 2, s, 32), True, seed=s) for s in (9, 21)]
    scale, offset = parts[0][2], parts[0][3]
    k = [arch35_dequant(p[0], scale[0][None], offset[0][None], BF16)[0] for p in parts]
    v = [arch35_dequant(p[1], scale[1][None], offset[1][None], BF16)[0] for p in parts]
    out = run_ifa(q, [p[0] for p in parts], [p[1] for p in parts], kv_heads=2, antiquant=(scale, offset))
    expected = expect(q, k, v, scale=0.125, lengths=[9, 21], small_dtype="bfloat16")
    meets(out, expected, BF16)


@ON_ARCH35
def test_int8_key_int8_output(chip):
    k8, v8, scale, offset, k, v = int8_case(BF16, (2, 4, 24, 32), True)
    q = values((2, 4, 32), BF16)
    rng = np.random.default_rng(9)
    q_scale = (rng.random((4, 32)) * 40 + 10).astype(np.float32)
    q_offset = rng.integers(-5, 6, (4, 32)).astype(np.float32)
    out = run_ifa(
        q, [k8], [v8], antiquant=(scale, offset), quant2=q_scale, offset2=q_offset, out_dtype=DataType.ACL_INT8
    )
    expected = pfa_golden.attention(
        q[:, :, None],
        k,
        v,
        scale=0.125,
        pre=BIG,
        nxt=BIG,
        quant2=q_scale.astype(np.float64),
        offset2=q_offset.astype(np.float64),
        high_precision=True,
    )[:, :, 0]
    diff = np.abs(out.astype(np.int64) - expected)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.99


@ON_ARCH35
def test_int8_rules_come_from_ifa_tiling_v2(chip):
    """IFATilingV2's own checks (561002), and the INT8 path it does not emulate (561003)."""
    q = values((2, 4, 32), np.float16)
    k8 = np.zeros((2, 2, 16, 32), np.int8)
    with pytest.raises(ae.AclnnError) as err:
        run_ifa(q, [k8], [k8], kv_heads=2, antiquant=(np.ones(2, np.float16), None), inner_precise=2)
    assert err.value.status == 561002 and "Precision mode[2] should be 0 or 1" in err.value.message
    with pytest.raises(ae.AclnnError) as err:
        run_ifa(q, [k8], [k8], kv_heads=2, antiquant=(np.ones((2, 4, 32), np.float16), None))
    assert err.value.status == 561002 and "when per_channel mode" in err.value.message
    q2 = values((2, 4, 2, 32), np.float16)
    with pytest.raises(ae.AclnnError) as err:
        run_s1(q2, k8, k8, (np.ones(2, np.float16), None), mask=np.zeros((2, 1, 16), np.bool_))
    assert err.value.status == 561002 and "attenMask Q_S(1) must be larger than or equal to sQ(2)" in err.value.message
    with pytest.raises(ae.AclnnError) as err:
        run_s1(q2, k8, k8, (np.ones(2, np.float16), None), mask=np.zeros((2, 2, 2, 16), np.bool_))
    assert err.value.status == 561002 and "attenMask batch(2) must be 1 or 2" in err.value.message
    with pytest.raises(ae.AclnnError) as err:
        run_s1(q2, k8, k8, (np.ones(2, np.float16), None), mask=np.zeros((1, 1, 2, 2, 16), np.bool_))
    assert err.value.status == 561002 and "attenMask dim(5) must be 2 or 3 or 4!" in err.value.message
    with pytest.raises(ae.AclnnError) as err:
        run_s1(q2, k8, k8, (np.ones(2, np.float16), None), precise=4)
    assert err.value.status == 561002 and "Precision mode[4] should be 0 or 1 or 2 or 3." in err.value.message


def run_s1(
    q, k8, v8, antiquant, layout="BNSD", kv_heads=2, actual=None, mask=None, precise=1, table=None, block_size=0
):
    """IncreFlashAttentionV4 with a query [B, N, S, D] (BNSD) or [B, S, N x D] (BSH) of any S; a
    [B, N2, S, D] key/value, or a paged cache with `table`."""
    heads = q.shape[1] if layout == "BNSD" else q.shape[2] // k8.shape[3]
    dev = lambda x: None if x is None else ae.to_device(x)
    out = ae.empty(q.shape, DataType.ACL_FLOAT16 if q.dtype == np.float16 else DataType.ACL_BF16)
    key = k8 if layout == "BNSD" or table is not None else kv_layout(k8, layout)
    value = v8 if layout == "BNSD" or table is not None else kv_layout(v8, layout)
    ae.run(
        "IncreFlashAttentionV4",
        ae.to_device(q),
        TensorList([ae.to_device(key)]),
        TensorList([ae.to_device(value)]),
        None,
        dev(mask),
        actual,
        None,
        None,
        None,
        None,
        None,
        dev(antiquant[0]),
        dev(antiquant[1]),
        None if table is None else ae.to_device(table.astype(np.int32)),
        None,
        heads,
        0.125,
        layout,
        kv_heads,
        block_size,
        precise,
        out,
    )
    return ae.numpy(out)


def every_key(q, k, v, lengths):
    """float64 attention of every query row over all of its batch's keys [0, length): the block walk
    ComputeS2LoopInfo makes without an attenMask (GetSparseParam leaves the tokens at their maximum)."""
    return pfa_golden.attention(q, k, v, scale=0.125, pre=BIG, nxt=BIG, act_kv=lengths, high_precision=True)


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("precise", [0, 1, 3])
def test_int8_query_s_above_one_sees_every_key(chip, dtype, precise):
    """isPFAFlag_: V4's unset tokens give IFA_BAND of width 0 in the tiling, yet without a mask the
    kernel walks every key block for every row. G·S 80 > 32: no merge, 20 rows per batch."""
    k8, v8, scale, offset, k, v = int8_case(dtype, (3, 2, 60, 32), True)
    q = values((3, 8, 20, 32), dtype)
    lengths = (60, 23, 20)
    out = run_s1(q, k8, v8, (scale, offset), actual=lengths, precise=precise)
    expected = every_key(q, k, v, lengths)
    precision.assert_meets(out, expected, np.dtype(dtype).name)


@ON_ARCH35
def test_int8_query_s_above_one_merged_gs(chip):
    """G·S = 16 <= 32 (CheckPFAMerge): 16 rows per key/value head, each over all 16 keys; 15 keys
    leave the rows past the cut to the core split (unestablished, 561003)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 16, 32), False)
    q = values((2, 4, 8, 32), np.float16)
    bsh = lambda x: x.transpose(0, 2, 1, 3).reshape(2, 8, 128)
    out = run_s1(bsh(q), k8, v8, (scale, offset), layout="BSH")
    precision.assert_meets(out, bsh(every_key(q, k, v, (16, 16))), "float16")
    with pytest.raises(ae.AclnnError) as err:
        run_s1(q, k8, v8, (scale, offset), actual=(16, 15))
    assert err.value.status == 561003 and "batch 1 has 15 keys for 16 query rows" in err.value.message
    assert "does not establish" in err.value.message


@ON_ARCH35
def test_mla_value_head_dim(chip):
    """Query/key D 192 with value D 128 (MLA_QKD_SIZE / MLA_VD_SIZE): TilingV2 compares every dim of
    query and output but the last, and the output has the value's D."""
    q = values((2, 4, 1, 192), np.float16)
    k, v = values((2, 2, 40, 192), np.float16), values((2, 2, 40, 128), np.float16)
    out = ae.empty((2, 4, 1, 128), DataType.ACL_FLOAT16)
    ae.run(
        "IncreFlashAttentionV4",
        ae.to_device(q),
        TensorList([ae.to_device(k)]),
        TensorList([ae.to_device(v)]),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        4,
        192**-0.5,
        "BNSD",
        2,
        0,
        1,
        out,
    )
    expected = pfa_golden.attention(q, k, v, scale=192**-0.5, pre=BIG, nxt=BIG, high_precision=True)
    precision.assert_meets(ae.numpy(out), expected, "float16")


@ON_ARCH35
def test_int8_query_s_above_one_page_attention(chip):
    """Page attention takes no G·S merge (CheckPFAMerge): 5 rows per batch over all its keys."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 100, 32), True)
    lens = (100, 41)
    kc, vc, table = paged_cache(k8, v8, 32, True, lens)
    q = values((2, 4, 5, 32), np.float16)
    out = run_s1(q, kc, vc, (scale, offset), actual=lens, table=table, block_size=32)
    precision.assert_meets(out, every_key(q, k, v, lens), "float16")


def block_walk(q, k, v, mask, lengths, s2_base, row_invalid, pse=None, starts=None):
    """The isPFAFlag_ walk as one IncreFlashAttention-golden row per query row. With a mask: rows
    below min(S1, keys), in blocks of 16 rows at off, each over the keys [off // s2_base * s2_base,
    off + the block's rows) with its mask and pse row there; a row whose keys are all masked
    averages them (the golden's -FLT_MAX fill) or, with row_invalid, is 0. Without one (mask None):
    every row over all its batch's keys. Key j of batch b is token starts[b] + j (kv left padding),
    for the mask and pse columns too. Returns (golden, floor) as `expect`."""
    b, n, s1, d = q.shape
    m = np.zeros((1, s1, k.shape[2]), np.bool_) if mask is None else mask[None] if mask.ndim == 2 else mask
    starts = [0] * b if starts is None else starts
    rows, keys, vals, masks, pses, where = [], [], [], [], [], []
    for bi in range(b):
        count = s1 if mask is None else min(s1, lengths[bi])
        for i in range(count):
            off = i // 16 * 16
            j0, j1 = (0, lengths[bi]) if mask is None else (off // s2_base * s2_base, off + min(16, count - off))
            j0, j1 = j0 + starts[bi], j1 + starts[bi]
            rows.append(q[bi, :, i])
            keys.append(k[bi, :, j0:j1])
            vals.append(v[bi, :, j0:j1])
            masks.append(m[bi if m.shape[0] > 1 else 0, i, j0:j1])
            if pse is not None:
                pses.append(pse[bi if pse.shape[0] > 1 else 0, :, i, j0:j1])
            where.append((bi, i, masks[-1].all() if row_invalid else False))
    width = max(x.shape[1] for x in keys)
    pad = lambda x: np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, width - x.shape[-1])], constant_values=1)
    golden, floor = expect(
        np.stack(rows),
        keys,
        vals,
        scale=0.125,
        lengths=[x.shape[1] for x in keys],
        mask=np.stack([pad(x) for x in masks]),
        small_dtype=np.dtype(q.dtype).name,
        pse=None if pse is None else np.stack([pad(x) for x in pses]),
    )
    out, out_floor = np.zeros(q.shape), np.zeros(q.shape)
    for r, (bi, i, dead) in enumerate(where):
        out[bi, :, i], out_floor[bi, :, i] = (0, 0) if dead else (golden[r], floor[r])
    return out, out_floor


@ON_ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("precise", [1, 3])
def test_int8_query_s_above_one_with_mask(chip, dtype, precise):
    """With an attenMask the kernel gets the tokens (0, 0): 16-row blocks over the keys up to the
    block's last row (D 32: s2 base 1024, every block from key 0); batch 1 has 33 keys for 40
    rows (its rows 33.. stay 0); row 5 is fully masked (an average, or 0 with innerPrecise 3)."""
    k8, v8, scale, offset, k, v = int8_case(dtype, (2, 2, 60, 32), True)
    q = values((2, 4, 40, 32), dtype)
    rng = np.random.default_rng(3)
    mask = rng.random((2, 40, 64)) < 0.3
    mask[:, 5] = True
    lengths = (60, 33)
    out = run_s1(q, k8, v8, (scale, offset), actual=lengths, mask=mask, precise=precise)
    assert np.all(out[1, :, 33:] == 0)
    meets(out, block_walk(q, k, v, mask, lengths, 1024, precise >= 2), dtype)


@ON_ARCH35
def test_int8_query_s_above_one_mask_block_start(chip):
    """D 512: s2 base 128, so the s1 blocks at 128 and 144 start their keys at 128; a 2-D
    [S1, S2] uint8 mask is shared by the batches."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (1, 1, 160, 512), False, seed=5)
    q = values((1, 2, 150, 512), np.float16) * np.float16(0.2)
    mask = (np.random.default_rng(8).random((150, 160)) < 0.2).astype(np.uint8)
    out = run_s1(q, k8, v8, (scale, offset), kv_heads=1, mask=mask, precise=0)
    meets(out, block_walk(q, k, v, mask, (160,), 128, False), np.float16)


def run_s1_with(q, k8, v8, antiquant, *, mask=None, pse=None, actual=None, padding=None, precise=1, quant2=None):
    """run_s1 (BNSD, two key/value heads) with pseShift, kvPaddingSize and an INT8 output
    (quant2 = (quantScale2, quantOffset2)) as well."""
    dev = lambda x: None if x is None else ae.to_device(x)
    out = ae.empty(
        q.shape, DataType.ACL_INT8 if quant2 else DataType.ACL_FLOAT16 if q.dtype == np.float16 else DataType.ACL_BF16
    )
    quant2 = quant2 or (None, None)
    ae.run(
        "IncreFlashAttentionV4",
        ae.to_device(q),
        TensorList([ae.to_device(k8)]),
        TensorList([ae.to_device(v8)]),
        dev(pse),
        dev(mask),
        actual,
        None,
        None,
        None,
        dev(quant2[0]),
        dev(quant2[1]),
        dev(antiquant[0]),
        dev(antiquant[1]),
        None,
        dev(padding),
        q.shape[1],
        0.125,
        "BNSD",
        k8.shape[1],
        0,
        precise,
        out,
    )
    return ae.numpy(out)


@ON_ARCH35
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_int8_query_s_above_one_pse(chip, masked):
    """pseShift [1, N, >= S, >= S2] with isPFAFlag_: no G·S merge (CheckPFAMerge), added at the row's
    own row and key; with a mask D 32 takes s2 base 512 (SetfaRunBaseSize), so the blocks of rows
    512.. would start there (here every block starts at 0)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 40, 32), True, seed=6)
    q = values((2, 4, 24, 32), np.float16)
    pse = values((1, 4, 30, 48), np.float16)
    mask = (np.random.default_rng(2).random((2, 24, 40)) < 0.25) if masked else None
    out = run_s1_with(q, k8, v8, (scale, offset), mask=mask, pse=pse, actual=(40, 31))
    meets(out, block_walk(q, k, v, mask, (40, 31), 512, False, pse=pse), np.float16)


@ON_ARCH35
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_int8_query_s_above_one_kv_left_padding(chip, masked):
    """kvPaddingSize with isPFAFlag_ (CheckSupportKVLeftPadding): batch b's keys are the tokens
    [S2 - pad - length, S2 - pad); the mask and pseShift columns start there too
    (CalPseShiftCoreOffset adds kvLeftPaddingSize); a batch that does not fit is 0."""
    k8, v8, scale, _, k, v = int8_case(np.float16, (3, 2, 40, 32), False, with_offset=False, seed=9)
    q = values((3, 4, 20, 32), np.float16)
    pse = values((3, 4, 20, 40), np.float16)
    mask = (np.random.default_rng(4).random((3, 20, 40)) < 0.25) if masked else None
    lengths, pad = (30, 22, 38), 5
    out = run_s1_with(q, k8, v8, (scale, None), mask=mask, pse=pse, actual=lengths, padding=np.array([pad], np.int64))
    starts = [40 - pad - n for n in lengths]
    expected = block_walk(
        q[:2],
        k[:2],
        v[:2],
        None if mask is None else mask[:2],
        lengths[:2],
        1024,
        False,
        pse=pse[:2],
        starts=starts[:2],
    )
    meets(out[:2], expected, np.float16)
    assert np.all(out[2] == 0)


@ON_ARCH35
def test_int8_query_s_above_one_h_params_refused(chip):
    """CheckKVAntiQuantParaShapeLegal admits [N2·D] with isPFAFlag_, but InitQuant reads the value's
    parameters from element N2·D on: past the tensor (refused, 561003)."""
    k8 = np.zeros((2, 2, 16, 32), np.int8)
    with pytest.raises(ae.AclnnError) as err:
        run_s1(values((2, 4, 2, 32), np.float16), k8, k8, (np.ones(64, np.float16), None))
    assert err.value.status == 561003 and "rather than read past the input" in err.value.message


@ON_ARCH35
def test_int8_query_s_above_one_row_invalid_int8_output(chip):
    """innerPrecise 3 (isRowInvalid) with an INT8 output: RowInvalid zeroes a fully masked row
    before the post-quantisation, so it holds round(0 x scale + offset) = its offsets."""
    k8, v8, scale, offset, k, v = int8_case(BF16, (1, 2, 24, 32), True, seed=12)
    q = values((1, 4, 20, 32), BF16)
    rng = np.random.default_rng(13)
    mask = rng.random((1, 20, 24)) < 0.2
    mask[0, [3, 17]] = True
    q_scale = (rng.random((4, 32)) * 40 + 10).astype(np.float32)
    q_offset = rng.integers(-5, 6, (4, 32)).astype(np.float32)
    out = run_s1_with(q, k8, v8, (scale, offset), mask=mask, actual=(24,), precise=3, quant2=(q_scale, q_offset))
    assert np.array_equal(out[0][:, [3, 17]], np.repeat(q_offset[:, None], 2, axis=1).astype(np.int8))
    golden, _ = block_walk(q, k, v, mask, (24,), 1024, True)
    expected = np.clip(np.rint(golden * q_scale[None, :, None] + q_offset[None, :, None]), -128, 127)
    diff = np.abs(out.astype(np.int64) - expected)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.98


@ON_ARCH35
@pytest.mark.parametrize("d, with_pse", [(32, True), (128, False)], ids=["d32_pse", "d128"])
def test_int8_query_s_above_one_mask_s2_base_512(chip, d, with_pse):
    """s2 base 512 (SetfaRunBaseSize: D <= 64 with pseShift, or 64 < D <= 128): the s1 block at 512
    takes the keys [512, 520) alone."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (1, 1, 530, d), False, seed=14)
    q = values((1, 2, 520, d), np.float16) * np.float16(0.3)
    mask = np.random.default_rng(15).random((520, 530)) < 0.1
    pse = values((1, 2, 520, 530), np.float16) if with_pse else None
    out = run_s1_with(q, k8, v8, (scale, offset), mask=mask, pse=pse, actual=(530,))
    meets(out, block_walk(q, k, v, mask, (530,), 512, False, pse=pse), np.float16)
