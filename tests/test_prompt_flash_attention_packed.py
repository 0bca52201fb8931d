"""aclnnPromptFlashAttentionV2 on the packed layouts against the float64 golden: SH, TND and the
sparseMode 20-22 base-API path (Atlas A2, the default chip).

Each batch is a run of rows; the golden (``packed_attention``) attends each batch on its own. The
inputs are chosen so the roundings show: scores on a 1/4 grid (exact in fp32, so the fp16 score
rounding cannot flip with the summation order), long rows whose P narrowing accumulates, and a
bf16 output that lands exactly on a rounding tie.
"""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
from aclnn_emu import DataType
from golden import prompt_flash_attention as golden

BIG = 2147483647
BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(20261124)


def grid(shape, dtype):
    return (np.round(RNG.standard_normal(shape) * 4) / 4).astype(dtype)


def randn(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


def run_packed(q, k, v, layout, *, act_q=None, act_kv=None, mode=0, pre=BIG, nxt=0, mask=None, scale=0.125, kv_heads=0):
    """q/k/v as [T, N, D]; SH passes them as [T, N*D]. Returns the output as [T, N, Dv]."""
    t, n, _ = q.shape
    dv = v.shape[2]
    as_layout = (lambda x: x.reshape(x.shape[0], -1)) if layout == "SH" else (lambda x: x)
    out = ae.empty(as_layout(np.empty((t, n, dv), np.int8)).shape, ae.dtypes.from_numpy(q.dtype))
    ae.run(
        "PromptFlashAttentionV2",
        *(ae.to_device(as_layout(x)) for x in (q, k, v)),
        None,
        None if mask is None else ae.to_device(mask),
        act_q,
        act_kv,
        None,
        None,
        None,
        None,
        None,
        n,
        scale,
        pre,
        nxt,
        layout,
        kv_heads,
        mode,
        out,
    )
    return ae.numpy(out).reshape(t, n, dv)


def cumulative(lengths):
    return tuple(int(x) for x in np.cumsum(lengths))


def compressed_mask():
    return np.triu(np.ones((2048, 2048), bool), 1)


# -- TND (bf16 only on A2/A3: the var-len kernels) --------------------------------------------------
@pytest.mark.parametrize("mode,pre,nxt", [(0, BIG, 0), (3, BIG, 0), (4, 7, 2), (4, -3, 20)])
@pytest.mark.parametrize("d,dv", [(64, 64), (128, 128), (192, 128)])
def test_tnd(mode, pre, nxt, d, dv):
    if mode == 4 and dv not in (64, 128):
        pytest.skip("band mode takes Dv 64/128 only")
    q_len, kv_len = [37, 0, 150, 9], [40, 12, 1100, 9]  # a long batch (> one 1024-key block), an empty one
    q = grid((sum(q_len), 2, d), BF16)
    k = grid((sum(kv_len), 2, d), BF16)
    v = randn((sum(kv_len), 2, dv), BF16)
    mask = None if mode == 0 else compressed_mask()
    out = run_packed(
        q, k, v, "TND", act_q=cumulative(q_len), act_kv=cumulative(kv_len), mode=mode, pre=pre, nxt=nxt, mask=mask
    )
    expected = golden.packed_attention(q, k, v, q_len, kv_len, scale=0.125, sparse_mode=mode, pre=pre, nxt=nxt)
    assert out.dtype == BF16
    precision.assert_meets(out, expected, "bfloat16")


def test_tnd_gqa_and_an_empty_key_batch():
    q_len, kv_len = [20, 31], [0, 45]
    q = grid((51, 4, 128), BF16)
    k = grid((45, 2, 128), BF16)
    v = randn((45, 2, 128), BF16)
    out = run_packed(q, k, v, "TND", act_q=cumulative(q_len), act_kv=cumulative(kv_len), kv_heads=2)
    expected = golden.packed_attention(q, k, v, q_len, kv_len, scale=0.125)
    precision.assert_meets(out, expected, "bfloat16")
    assert np.all(out[:20] == 0), "a batch without keys comes out 0"


def tie_values(rows, heads, d):
    """V whose mean over a batch's keys lies exactly halfway between two bf16 values (1 + 2**-8),
    with Q = 0 so every key gets the same weight exactly: the output's last rounding decides."""
    v = np.ones((rows, heads, d), np.float32)
    v[1::2] += 2.0**-7
    return np.zeros((rows, heads, d), BF16), v.astype(BF16)


def test_tnd_rounds_the_bf16_output_ties_away():
    zeros, v = tie_values(8, 2, 64)
    out = run_packed(zeros, zeros, v, "TND", act_q=(4, 8), act_kv=(4, 8))
    assert np.all(out.astype(np.float32) == 1 + 2.0**-7), "CAST_ROUND: the tie goes away from zero"
    assert np.all(out == golden.to_bf16(1 + 2.0**-8, "away"))


# -- SH (the A2/A3 tiling; batches packed by the query lengths) -------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
def test_sh(dtype, mode):
    q_len, kv_len = [30, 70, 28], [25, 70, 11]  # key rows of batch b start where its query rows do
    t = sum(q_len)
    q, k, v = grid((t, 2, 48), dtype), grid((t, 2, 48), dtype), randn((t, 2, 48), dtype)  # D 48: padded to 64
    mask, pre, nxt = None, BIG, 0
    if mode == 0:
        mask, pre, nxt = RNG.random((3, t, t)) < 0.2, 11, 5  # >= [S, S2] of the whole tensor
    elif mode == 1:
        mask = RNG.random((1, t, t)) < 0.2
    else:
        mask, pre, nxt = compressed_mask(), 9, 3
    out = run_packed(q, k, v, "SH", act_q=tuple(q_len), act_kv=tuple(kv_len), mode=mode, pre=pre, nxt=nxt, mask=mask)
    starts = np.concatenate(([0], np.cumsum(q_len)[:-1]))
    golden_mask = mask if mode in (0, 1) else None
    expected = np.zeros(out.shape)
    for b, (q0, aq, ak) in enumerate(zip(starts, q_len, kv_len)):
        part = golden.packed_attention(
            q[q0 : q0 + aq],
            k[q0 : q0 + ak],
            v[q0 : q0 + ak],
            [aq],
            [ak],
            scale=0.125,
            sparse_mode=mode,
            pre=pre,
            nxt=nxt,
            mask=None if golden_mask is None else golden_mask[[b % len(golden_mask)]],
        )
        expected[q0 : q0 + aq] = part
    precision.assert_meets(out, expected, np.dtype(dtype).name)


def test_sh_without_lengths_is_one_batch():
    q, k, v = grid((33, 2, 32), np.float16), grid((33, 2, 32), np.float16), randn((33, 2, 32), np.float16)
    out = run_packed(q, k, v, "SH")
    precision.assert_meets(out, golden.packed_attention(q, k, v, [33], [33], scale=0.125), "float16")


def test_sh_gqa():
    q = grid((40, 4, 32), np.float16)
    k, v = grid((40, 2, 32), np.float16), randn((40, 2, 32), np.float16)
    out = run_packed(q, k, v, "SH", act_q=(15, 25), act_kv=(15, 20), kv_heads=2)
    expected = golden.packed_attention(q, k, v, [15, 25], [15, 20], kv_starts=[0, 15], scale=0.125)
    precision.assert_meets(out, expected, "float16")


# -- sparseMode 20-22: the base-API kernels (SH, no mask, per-batch lengths) ------------------------
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("mode", [20])
def test_base_api(dtype, mode):
    q_len, kv_len = [40, 0, 300, 17], [33, 8, 1200, 17]  # the key rows follow their own lengths
    q = grid((sum(q_len) + 5, 2, 64), dtype)  # 5 trailing rows of no batch: 0
    k = grid((sum(kv_len), 2, 64), dtype)
    v = randn((sum(kv_len), 2, 64), dtype)
    out = run_packed(q, k, v, "SH", act_q=tuple(q_len), act_kv=tuple(kv_len), mode=mode, pre=-5, nxt=-5)
    expected = golden.packed_attention(
        q,
        k,
        v,
        q_len,
        kv_len,
        scale=0.125,
        sparse_mode=1,  # no mask, no band
        bf16_even=True,
    )
    precision.assert_meets(out, expected, np.dtype(dtype).name)
    assert np.all(out[-5:] == 0)


def run_layout(q, k, v, layout, heads, *, act_q=None, act_kv=None, mode=20):
    """q/k/v in the layout's own shape; the output in the layout's shape."""
    out = ae.empty(q.shape, ae.dtypes.from_numpy(q.dtype))
    ae.run(
        "PromptFlashAttentionV2",
        *(ae.to_device(x) for x in (q, k, v)),
        None,
        None,
        act_q,
        act_kv,
        None,
        None,
        None,
        None,
        None,
        heads,
        0.125,
        BIG,
        0,
        layout,
        0,
        mode,
        out,
    )
    return ae.numpy(out)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize(
    "layout,shape,act",
    [("SH", (48, 2 * 288), (16, 16, 16)), ("BNSD", (3, 2, 20, 288), None), ("BSND", (3, 20, 2, 320), (12,))],
)
def test_base_api_mla(dtype, layout, shape, act):
    """D > 256: the MLA base-API kernels read every layout's memory as packed tokens [T, N, D] and,
    with equal lengths, take batch b at rows b * length (a BNSD tensor is thus read as if it were
    BSND); fp16 keeps its softmax in half precision (golden.mla_half_attention)."""
    q, k, v = grid(shape, dtype), grid(shape, dtype), randn(shape, dtype)
    n = 2
    out = run_layout(q, k, v, layout, n, act_q=act, act_kv=act)
    d = shape[-1] // n if layout == "SH" else shape[-1]
    tq, tk, tv = (x.reshape(-1, n, d) for x in (q, k, v))
    batches = len(act) if layout == "SH" else shape[0]
    length = (act or (shape[2] if layout == "BNSD" else shape[1],))[0]
    blocks = golden.mla_blocks(
        [length] * batches, [length] * batches, d, sh_lengths=(act, act) if layout == "SH" else None
    )
    assert {row for q0, rows, *_ in blocks for row in range(q0, q0 + rows)} == set(range(batches * length))
    expected = golden.mla_attention(tq, tk, tv, blocks, scale=0.125)
    precision.assert_meets(out.reshape(-1, n, d), expected, np.dtype(dtype).name)


def test_base_api_rounds_the_bf16_output_to_even():
    zeros, v = tie_values(8, 2, 64)
    out = run_packed(zeros, zeros, v, "SH", act_q=(4, 4), act_kv=(4, 4), mode=20)
    assert np.all(out.astype(np.float32) == 1.0), "CAST_RINT: the tie goes to the even neighbour"
    assert np.all(out == golden.to_bf16(1 + 2.0**-8, "even"))


# -- Ascend910_95 (TilingV2): TND by TilingV2's rules, SH refused ---------------------------------
@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize(
    "dtype,mode,pre,nxt", [(np.float16, 0, BIG, 0), (np.float16, 3, BIG, 0), (BF16, 4, 6, 3), (np.float16, 1, BIG, 0)]
)
def test_tnd_on_ascend910_95(chip, dtype, mode, pre, nxt):
    """fp16, D 96, mode 1 and a batch with more queries than keys under mode 3: all A2-only refusals."""
    q_len, kv_len = [12, 0, 50, 30], [20, 6, 40, 9]
    q, k, v = grid((92, 2, 96), dtype), grid((75, 2, 96), dtype), randn((75, 2, 96), dtype)
    mask = {0: None, 1: RNG.random((4, 50, 40)) < 0.3}.get(mode, compressed_mask())
    out = run_packed(
        q, k, v, "TND", act_q=cumulative(q_len), act_kv=cumulative(kv_len), mode=mode, pre=pre, nxt=nxt, mask=mask
    )
    expected = np.zeros(out.shape)
    q0 = k0 = 0
    for b, (aq, ak) in enumerate(zip(q_len, kv_len)):
        expected[q0 : q0 + aq] = golden.packed_attention(
            q[q0 : q0 + aq],
            k[k0 : k0 + ak],
            v[k0 : k0 + ak],
            [aq],
            [ak],
            scale=0.125,
            sparse_mode=mode,
            pre=pre,
            nxt=nxt,
            mask=mask[[b]] if mode == 1 else None,
            high_precision=True,
        )
        q0, k0 = q0 + aq, k0 + ak
    precision.assert_meets(out, expected, np.dtype(dtype).name)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_sh_is_refused_on_ascend910_95(chip):
    q = grid((16, 2, 32), np.float16)
    with pytest.raises(ae.AclnnError) as err:
        run_packed(q, q, q, "SH")
    assert err.value.status == 561103 and "Invalid input layout:SH" in err.value.message


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_one_row_query_reads_a_2d_mask_per_batch_on_ascend910_95(chip):
    """TilingV2 takes a one-row query's 2-D mask as [B, S2] (A2/A3: [S1m, S2m], row 0 for every batch)."""
    q, k, v = grid((2, 2, 1, 32), np.float16), grid((2, 2, 40, 32), np.float16), randn((2, 2, 40, 32), np.float16)
    mask = RNG.random((2, 40)) < 0.5
    out = ae.empty((2, 2, 1, 32), DataType.ACL_FLOAT16)
    ae.run(
        "PromptFlashAttentionV2",
        ae.to_device(q),
        ae.to_device(k),
        ae.to_device(v),
        None,
        ae.to_device(mask),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        2,
        0.125,
        BIG,
        0,
        "BNSD",
        0,
        1,
        out,
    )
    expected = golden.attention(q, k, v, scale=0.125, sparse_mode=1, mask=mask[:, None, :], high_precision=True)
    precision.assert_meets(ae.numpy(out), expected, "float16")


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
def test_fp16_path_per_chip(chip):
    """A2/A3 fp16 (high performance) rounds Q K^T to fp16, so 16 * 64 * 64 = 65536 overflows, and the
    output to nearest even; Ascend910_95 keeps the scores in fp32 and rounds the output ties away."""
    q = np.full((1, 1, 2, 16), 64, np.float16)
    k = np.full((1, 1, 3, 16), 64, np.float16)
    v = randn((1, 1, 3, 16), np.float16)
    out = ae.empty((1, 1, 2, 16), DataType.ACL_FLOAT16)
    ae.run(
        "PromptFlashAttentionV2",
        *(ae.to_device(x) for x in (q, k, v)),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        1,
        1e-4,
        BIG,
        0,
        "BNSD",
        0,
        0,
        out,
    )
    result = ae.numpy(out)
    if chip == "Ascend910B":
        assert np.all(np.isnan(result))
    else:
        expected = golden.attention(q, k, v, scale=1e-4, high_precision=True)
        precision.assert_meets(result, expected, "float16")


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
def test_fp16_output_tie_per_chip(chip):
    """Q = 0: every key weighs exactly the same; V rows 1 and 1 + 2**-10 average to a tie of fp16."""
    zeros = np.zeros((1, 1, 4, 16), np.float16)
    v = np.ones((1, 1, 4, 16), np.float32)
    v[:, :, 1::2] += 2.0**-10
    out = ae.empty((1, 1, 4, 16), DataType.ACL_FLOAT16)
    ae.run(
        "PromptFlashAttentionV2",
        ae.to_device(zeros),
        ae.to_device(zeros),
        ae.to_device(v.astype(np.float16)),
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        1,
        0.125,
        BIG,
        0,
        "BNSD",
        0,
        0,
        out,
    )
    tie_to = 1.0 if chip == "Ascend910B" else 1.0 + 2.0**-10  # nearest even / CAST_ROUND
    assert np.all(ae.numpy(out).astype(np.float32) == tie_to)
