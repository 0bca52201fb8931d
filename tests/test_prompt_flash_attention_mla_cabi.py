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
SENTINEL = 7.0                  # attentionOut before the call


def grid(shape, dtype):
    return (np.round(RNG.standard_normal(shape) * 4) / 4).astype(dtype)


def run_mla(tmp_path, dtype, layout, q, k, v, heads, act_q, act_kv):
    for name, x in (("q", q), ("k", k), ("v", v), ("out", np.full(q.shape, SENTINEL, dtype))):
        x.tofile(tmp_path / f"{name}.bin")
    lists = [",".join(map(str, x)) if x is not None else "-" for x in (q.shape, k.shape, act_q, act_kv)]
    result = cabi.compile_and_run("prompt_flash_attention_mla.cpp", "fp16" if dtype == np.float16 else "bf16",
                                  layout, tmp_path, heads, *lists)
    assert result.returncode == 0, result.stdout + result.stderr
    return np.fromfile(tmp_path / "out.bin", dtype).reshape(q.shape), result.stderr


def expected_tokens(q, k, v, blocks, dtype):
    """[T, N, D] float64: each block's rows attend their keys; rows of no block are 0."""
    out = np.zeros(q.shape)
    for q0, rows, k0, keys in blocks:
        bnsd = [x[None].transpose(0, 2, 1, 3) for x in (q[q0:q0 + rows], k[k0:k0 + keys], v[k0:k0 + keys])]
        out[q0:q0 + rows] = golden.attention(*bnsd, scale=0.125, sparse_mode=1,
                                             bf16_even=dtype == BF16)[0].transpose(1, 0, 2)
    return out


def unwritten(shape, blocks):
    rows = np.ones(shape[0], bool)
    for q0, n, _, _ in blocks:
        rows[q0:q0 + n] = False
    return rows


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_sh_unequal_lengths(tmp_path, dtype):
    """Batch 0 (20 rows: one 32-row block counted for it) runs with the longest lengths: 32 rows
    against 50 keys; batch 1 starts at token 60 and key 50 (48-row blocks), batch 2 at 120 and 59."""
    act_q, act_kv = (20, 60, 7), (50, 9, 30)
    d, n = 288, 2
    q, k, v = grid((130, n, d), dtype), grid((90, n, d), dtype), grid((90, n, d), dtype)
    out, stderr = run_mla(tmp_path, dtype, "SH", q.reshape(130, -1), k.reshape(90, -1), v.reshape(90, -1), n,
                          act_q, act_kv)
    blocks = golden.mla_blocks(act_q, act_kv, d, sh_lengths=(act_q, act_kv))
    assert [b[:2] for b in blocks] == [(0, 32), (60, 48), (108, 12), (120, 7)]
    tokens = out.reshape(q.shape)
    precision.assert_meets(tokens, expected_tokens(q, k, v, blocks, dtype), np.dtype(dtype).name)
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
    precision.assert_meets(tokens, expected_tokens(tq, tk, tv, blocks, dtype), np.dtype(dtype).name)
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
    precision.assert_meets(out.reshape(tq.shape), expected_tokens(tq, tk, tv, blocks, np.float16), "float16")
