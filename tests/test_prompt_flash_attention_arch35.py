"""aclnnPromptFlashAttentionV2 on Ascend910_95 (TilingV2, arch35 kernels): the inputs TilingV2 runs
where the A2/A3 tiling refuses them or computes them otherwise, against the float64 golden.

Each test names the TilingV2 function that lets the call through; the C-ABI status codes of the
same rules are in test_prompt_flash_attention_cabi.py.
"""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
from aclnn_emu import DataType
from golden import prompt_flash_attention as golden
from test_prompt_flash_attention import BF16, RNG, int8_inputs, qk_values, randn, run_pfa

pytestmark = pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
BIG = 2147483647


def half_inputs(q_shape, kv_shape, dtype, dv=None):
    v_shape = kv_shape[:3] + (dv or kv_shape[3],)
    return qk_values(q_shape, dtype), qk_values(kv_shape, dtype), randn(v_shape, dtype)


@pytest.mark.parametrize("pre,nxt", [(BIG, 0), (-3, -3)])
def test_one_row_query_with_a_mask_ignores_the_tokens(chip, pre, nxt):
    """SetSparseModeData: a one-row query with a mask (enableIFA) sets both tokens to 2147483647, so
    mode 0 with the default nextTokens = 0 attends every unmasked key (A2/A3: key 0 only), and
    negative tokens pass the token rules."""
    q, k, v = half_inputs((2, 2, 1, 32), (2, 2, 40, 32), np.float16)
    mask = RNG.random((2, 40)) < 0.3
    out = run_pfa(q, k, v, mode=0, pre=pre, nxt=nxt, mask=mask)
    expected = golden.attention(
        q, k, v, scale=0.125, sparse_mode=0, pre=BIG, nxt=BIG, mask=mask[:, None, :], high_precision=True
    )
    precision.assert_meets(out, expected, "float16")
    causal = golden.attention(
        q, k, v, scale=0.125, sparse_mode=0, pre=BIG, nxt=0, mask=mask[:, None, :], high_precision=True
    )
    assert not np.allclose(out, causal, atol=1e-2), "the A2/A3 window (key 0 only) must not apply"


def test_bf16_query_ignores_int8_scales_with_an_int8_output(chip):
    """CheckQuant refuses deqScale1/quantScale1/deqScale2 with an INT8 output for fp16 only; the
    bf16 kernel never reads them, so the bytes equal those of the call without them."""
    q, k, v = half_inputs((1, 2, 24, 32), (1, 2, 30, 32), BF16)
    scale2 = np.asarray([40.0], np.float32)
    scales = dict(
        deq1=np.asarray([0.5], np.float32), quant1=np.asarray([3.0], np.float32), deq2=np.asarray([0.25], np.float32)
    )
    out = run_pfa(q, k, v, quant2=scale2, out_dtype=DataType.ACL_INT8, **scales)
    assert np.array_equal(out, run_pfa(q, k, v, quant2=scale2, out_dtype=DataType.ACL_INT8))
    expected = golden.attention(q, k, v, scale=0.125, quant2=40.0, high_precision=True)
    assert np.all(np.abs(out.astype(np.int64) - expected) <= 1)
    assert np.mean(out != expected) <= 1e-3


def test_post_quant_per_channel_with_d16(chip):
    """CheckPostQuantShape: a per-channel scale holds qN x vD elements, with no 32-element D rule."""
    q, k, v = half_inputs((1, 2, 24, 16), (1, 2, 30, 16), np.float16)
    scale2 = RNG.uniform(20, 60, (2, 16)).astype(np.float32)
    offset2 = RNG.uniform(-3, 3, (2, 16)).astype(np.float32)
    out = run_pfa(q, k, v, quant2=scale2, offset2=offset2, out_dtype=DataType.ACL_INT8)
    expected = golden.attention(q, k, v, scale=0.125, quant2=scale2, offset2=offset2, high_precision=True)
    assert np.all(np.abs(out.astype(np.int64) - expected) <= 1)
    assert np.mean(out != expected) <= 1e-3


def test_int8_output_band_with_a_negative_token(chip):
    """CheckMultiFeatureCrossover has no int8-output band rule (A2/A3: 561103); rows the band leaves
    without keys are 0 (needInit zero-fills the output)."""
    q, k, v = half_inputs((1, 2, 24, 32), (1, 2, 30, 32), np.float16)
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    out = run_pfa(
        q,
        k,
        v,
        mode=4,
        pre=-2,
        nxt=12,
        mask=mask,
        quant2=np.asarray([40.0], np.float32),
        offset2=np.asarray([2.0], np.float32),
        out_dtype=DataType.ACL_INT8,
    )
    expected = golden.attention(
        q, k, v, scale=0.125, sparse_mode=4, pre=-2, nxt=12, mask=None, quant2=40.0, offset2=2.0, high_precision=True
    )
    assert np.all(out[:, :, 22:] == 0), "the band (keys i + 8 .. i + 18 of 30) leaves rows 22, 23 without keys"
    assert np.all(np.abs(out.astype(np.int64) - expected) <= 1)
    assert np.mean(out != expected) <= 1e-3


def test_mla_group_above_64(chip):
    """SetAndCheckHeadNumRatio: no group limit with D 192 / Dv 128 (here 128 query heads on one)."""
    q, k, v = half_inputs((1, 128, 4, 192), (1, 1, 24, 192), np.float16, dv=128)
    out = run_pfa(q, k, v, kv_heads=1)
    expected = golden.attention(q, k, v, scale=0.125, high_precision=True)
    precision.assert_meets(out, expected, "float16")


def whole_uint64(scale):
    """A UINT64 quant param holding all 32 bits of the fp32 scale (bit 46 set, as aclnnTransQuantParam)."""
    return np.asarray([scale], np.float32).view(np.uint32).astype(np.uint64) | np.uint64(1 << 46)


DEQ1, DEQ2 = np.float32(1 / 3000.1), np.float32(1 / 900.7)  # low mantissa bits set


def test_int8_to_fp16_keeps_the_dequant_products_in_fp32(chip):
    """The arch35 full-quant kernel (prompt_flash_attention_normal_bns1_preload.h, vf_softmaxflashv3.h,
    vector2 AscendDequant): deq scales read whole from their first four bytes, S = deq1 * Q8 K8^T and
    the block outputs deq2 * E8 V8 in fp32, E8 = rint(fp16(fp16(E) * fp16(quant1))); a deqScale1 of
    UINT64 with a deqScale2 of FLOAT is read alike (no flag-dependent misread)."""
    q, k, v = int8_inputs(s1=40, s2=1100)  # two key blocks
    out = run_pfa(
        q, k, v, deq1=whole_uint64(DEQ1), quant1=np.asarray([120.7], np.float32), deq2=np.asarray([DEQ2], np.float32)
    )
    expected = golden.attention(q, k, v, scale=0.125, deq1=DEQ1, quant1=120.7, deq2=DEQ2, high_precision=True)
    assert out.dtype == np.float16
    precision.assert_meets(out, expected, "float16")
    a2_steps = golden.attention(q, k, v, scale=0.125, deq1=DEQ1, quant1=120.7, deq2=DEQ2)
    assert not np.allclose(out, a2_steps, rtol=0, atol=0), "the A2/A3 fp16 steps must not apply"


def test_post_quant_rounds_through_fp16(chip):
    """vf_post_quant.h: an int8 output is int8(half(o * scale + offset)), both casts CAST_RINT. With
    o * scale = 2.5 + 2**-12 (V rows all equal) half rounds to the tie 2.5, which rint takes to 2
    (A2/A3: 3)."""
    q = np.zeros((1, 1, 4, 16), np.float16)
    v = np.full((1, 1, 8, 16), 1 + 2.0**-10, np.float16)
    scale2 = np.asarray([(2.5 + 2.0**-12) / (1 + 2.0**-10)], np.float32)
    out = run_pfa(q, q[:, :, :1].repeat(8, 2), v, quant2=scale2, out_dtype=DataType.ACL_INT8)
    assert np.all(out == 2)


def test_tnd_with_an_int8_query(chip):
    """TilingV2 has no TND int8 rule and the arch35 int8 kernels list the TND layout."""
    q_len, kv_len = [12, 30], [20, 9]
    q = RNG.integers(-128, 128, (42, 2, 32)).astype(np.int8)
    k = RNG.integers(-128, 128, (29, 2, 32)).astype(np.int8)
    v = RNG.integers(-128, 128, (29, 2, 32)).astype(np.int8)
    out = ae.empty((42, 2, 32), DataType.ACL_FLOAT16)
    scales = [np.asarray([x], np.float32) for x in (DEQ1, 127.0, DEQ2)]
    ae.run(
        "PromptFlashAttentionV2",
        *(ae.to_device(x) for x in (q, k, v)),
        None,
        None,
        (12, 42),
        (20, 29),
        *(ae.to_device(x) for x in scales),
        None,
        None,
        2,
        0.125,
        BIG,
        0,
        "TND",
        0,
        0,
        out,
    )
    expected = golden.packed_attention(
        q, k, v, q_len, kv_len, scale=0.125, deq1=DEQ1, quant1=127.0, deq2=DEQ2, high_precision=True
    )
    precision.assert_meets(ae.numpy(out), expected, "float16")


@pytest.mark.parametrize("mode", [2, 4])
def test_one_row_query_under_a_compressed_mode_warns(chip, mode, capfd):
    """Modes 2 and 4 keep the compressed-mask mode while enableIFA opens the window: what the kernel
    reads from the [B, S2] mask is not established, so the call runs with a portability warning."""
    q, k, v = half_inputs((2, 2, 1, 32), (2, 2, 16, 32), np.float16)
    mask = np.zeros((2, 16), bool)
    out = run_pfa(q, k, v, mode=mode, pre=4, nxt=4, mask=mask)
    assert "compressed-mask mode" in capfd.readouterr().err
    expected = golden.attention(q, k, v, scale=0.125, sparse_mode=mode, pre=4, nxt=4, high_precision=True)
    precision.assert_meets(out, expected, "float16")
