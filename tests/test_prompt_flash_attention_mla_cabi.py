"""aclnnPromptFlashAttentionV2 sparseMode 20 with D > 256 (the MLA base-API kernels) and unequal
actual lengths, through the C ABI, against the float64 golden of the kernels' block walk.

The kernel starts batch 0 with the longest lengths, so it computes batch 0's rows against the
longest key run, places batch b >= 1 after those, and stops when the tiling's block count (taken
from the actual lengths) runs out; rows it never reaches are copied from uninitialised workspace
(the emulator writes zeros and reports them).
"""

import ml_dtypes
import numpy as np
import pytest

import cabi
import precision
from golden import prompt_flash_attention as golden

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(20261124)
SENTINEL = 7.0  # attentionOut before the call


def grid(shape, dtype):
    return (np.round(RNG.standard_normal(shape) * 4) / 4).astype(dtype)


def run_mla(tmp_path, dtype, layout, q, k, v, heads, act_q, act_kv):
    for name, x in (("q", q), ("k", k), ("v", v), ("out", np.full(q.shape, SENTINEL, dtype))):
        x.tofile(tmp_path / f"{name}.bin")
    lists = [",".join(map(str, x)) if x is not None else "-" for x in (q.shape, k.shape, act_q, act_kv)]
    result = cabi.compile_and_run(
        "prompt_flash_attention_mla.cpp", "fp16" if dtype == np.float16 else "bf16", layout, tmp_path, heads, *lists
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return np.fromfile(tmp_path / "out.bin", dtype).reshape(q.shape), result.stderr


def unwritten(shape, blocks):
    rows = np.ones(shape[0], bool)
    for q0, n, *_ in blocks:
        rows[q0 : q0 + n] = False
    return rows


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_sh_unequal_lengths(tmp_path, dtype):
    """Batch 0 (20 rows: one 32-row block counted for it) runs with the longest lengths: 32 rows
    against 50 keys; batch 1 starts at token 60 and key 50 (48-row blocks), batch 2 at 120 and 59."""
    act_q, act_kv = (20, 60, 7), (50, 9, 30)
    d, n = 288, 2
    q, k, v = grid((130, n, d), dtype), grid((90, n, d), dtype), grid((90, n, d), dtype)
    out, stderr = run_mla(
        tmp_path, dtype, "SH", q.reshape(130, -1), k.reshape(90, -1), v.reshape(90, -1), n, act_q, act_kv
    )
    blocks = golden.mla_blocks(act_q, act_kv, d, sh_lengths=(act_q, act_kv))
    assert [b[:2] for b in blocks] == [(0, 32), (60, 48), (108, 12), (120, 7)]
    tokens = out.reshape(q.shape)
    precision.assert_meets(tokens, golden.mla_attention(q, k, v, blocks, scale=0.125), np.dtype(dtype).name)
    assert np.all(tokens[unwritten(q.shape, blocks)] == 0)
    assert "uninitialized-read" in stderr and "31 of 130 output token rows" in stderr


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_bsnd_stops_when_the_tiling_count_runs_out(tmp_path, dtype):
    """BSND, D 320: every batch runs with S = 40 rows; the tiling counted one 16-row block for
    batch 0 (12 rows), so batch 0 gets rows 0-15 only; batches 1 and 2 get all 40."""
    act_q, act_kv = (12, 40, 25), (30, 5, 40)
    q, k, v = grid((3, 40, 2, 320), dtype), grid((3, 40, 2, 320), dtype), grid((3, 40, 2, 320), dtype)
    out, _ = run_mla(tmp_path, dtype, "BSND", q, k, v, 2, act_q, act_kv)
    tq, tk, tv = (x.reshape(-1, 2, 320) for x in (q, k, v))
    blocks = golden.mla_blocks(act_q, act_kv, 320)
    assert [b[:2] for b in blocks] == [(0, 16), (40, 40), (80, 40)]
    tokens = out.reshape(tq.shape)
    precision.assert_meets(tokens, golden.mla_attention(tq, tk, tv, blocks, scale=0.125), np.dtype(dtype).name)
    assert np.all(tokens[16:40] == 0)


def test_bnsd_is_read_as_tokens(tmp_path):
    """BNSD memory read as [T, N, D] tokens, batch 1 (the longest) with a zero key length for
    batch 0: the walk takes the longest lengths for batch 0, so it still computes."""
    act_q, act_kv = (10, 30), (0, 24)
    q, k, v = grid((2, 2, 32, 288), np.float16), grid((2, 2, 32, 288), np.float16), grid((2, 2, 32, 288), np.float16)
    out, _ = run_mla(tmp_path, np.float16, "BNSD", q, k, v, 2, act_q, act_kv)
    tq, tk, tv = (x.reshape(-1, 2, 288) for x in (q, k, v))
    blocks = golden.mla_blocks(act_q, act_kv, 288)
    assert [b[:2] for b in blocks] == [(0, 16), (30, 30)]
    precision.assert_meets(out.reshape(tq.shape), golden.mla_attention(tq, tk, tv, blocks, scale=0.125), "float16")


def test_fp16_divides_in_half(tmp_path):
    """Zero queries: every P is 1 and l = 3, so the fp16 kernel's output is fp16(fp16(O) / 3) with
    O the fp32 sum of the three values, not fp16(O / 3)."""
    n, d = 2, 288
    q = np.zeros((3, n * d), np.float16)
    v = (1 + RNG.integers(0, 1024, (3, n * d)) / 1024).astype(np.float16)
    out, _ = run_mla(tmp_path, np.float16, "SH", q, q, v, n, None, None)
    o = v.astype(np.float32).sum(axis=0)
    in_half = (o.astype(np.float16).astype(np.float64) / 3).astype(np.float16)
    assert np.any(in_half != (o / 3).astype(np.float16)), "the values must tell the two divisions apart"
    assert np.array_equal(out, np.broadcast_to(in_half, out.shape))


def test_a_later_sh_batch_without_keys_is_skipped_with_a_portability_warning(tmp_path):
    """Batch 1 has 8 query rows and no key: the kernel skips it, but sizes its blocks from PP_NN[-1]."""
    n, d = 2, 288
    q, k = grid((16, n * d), np.float16), grid((8, n * d), np.float16)
    out, stderr = run_mla(tmp_path, np.float16, "SH", q, k, k, n, (8, 8), (8, 0))
    assert "portability" in stderr and "PP_NN[-1]" in stderr
    blocks = golden.mla_blocks((8, 8), (8, 0), d, sh_lengths=((8, 8), (8, 0)))
    assert [b[:2] for b in blocks] == [(0, 8)]
    tokens = out.reshape(16, n, d)
    precision.assert_meets(
        tokens,
        golden.mla_attention(q.reshape(16, n, d), k.reshape(8, n, d), k.reshape(8, n, d), blocks, scale=0.125),
        "float16",
    )
