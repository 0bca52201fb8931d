"""The serving loop end to end through the C ABI (tests/c/serving_loop.cpp), once per paged-cache
layout and attention API: PromptFlashAttentionV2 prefill, ScatterPaKvCache, then IncreFlashAttentionV4
decode steps that each scatter their new token first; or FusedInferAttentionScoreV4 for both
attention steps (prefill BSND with a causal mask, decode S = 1 over the paged cache), then on Atlas A2/A3
a chunked prefill: a packed TND query over the paged cache, causal from each batch's cached prefix.
Every output is held against dense float64 attention over the full sequence so far, to CANN's fp16
standard (floors as in tests/golden/incre_flash_attention)."""

import numpy as np
import pytest

import cabi
import precision

B, N, N2, D, STEPS = 3, 4, 2, 64, 4
LENS, CHUNK = (5, 23, 12), (3, 6, 2)
S_PROMPT, S_TOTAL = 23, 23 + STEPS + max(CHUNK)
SCALE = 1 / np.sqrt(D)


def load(directory, name, shape):
    return np.fromfile(directory / name, np.float16).reshape(shape).astype(np.float64)


def dense(q, k, v, causal):
    """q [Sq, N, D], k/v [Sk, N2, D] -> attention [Sq, N, D] and the floor sum_j p_j |v_j|; ``causal``:
    query row i sees the keys up to Sk - Sq + i (the right-down causal window)."""
    group = N // N2
    out, floor = np.zeros(q.shape), np.zeros(q.shape)
    for n in range(N):
        s = q[:, n] @ k[:, n // group].T * SCALE
        if causal:
            s = np.where(np.triu(np.ones(s.shape, bool), 1 + s.shape[1] - s.shape[0]), -np.inf, s)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        out[:, n], floor[:, n] = p @ v[:, n // group], p @ np.abs(v[:, n // group])
    return out, floor


@pytest.mark.parametrize("api", ["pfa_ifa", "fia"])
@pytest.mark.parametrize("layout", ["blocks_h", "blocks_n_d"])
def test_prefill_scatter_decode(layout, api, tmp_path):
    result = cabi.compile_and_run("serving_loop.cpp", layout, tmp_path, api)
    assert result.returncode == 0 and "done" in result.stdout, result.stdout + result.stderr
    k = load(tmp_path, "k.bin", (B, S_TOTAL, N2, D))
    v = load(tmp_path, "v.bin", (B, S_TOTAL, N2, D))
    q = load(tmp_path, "q_prefill.bin", (B, S_PROMPT, N, D))
    out = load(tmp_path, "out_prefill.bin", (B, S_PROMPT, N, D))
    for b, n in enumerate(LENS):
        expected, floor = dense(q[b, :n], k[b, :n], v[b, :n], causal=True)
        message = precision.failure(out[b, :n], expected, "float16", floor=floor)
        assert message is None, f"prefill batch {b}: {message}"
    for step in range(STEPS):
        q = load(tmp_path, f"q_step{step}.bin", (B, N, D))
        out = load(tmp_path, f"out_step{step}.bin", (B, N, D))
        for b, n in enumerate(LENS):
            length = n + step + 1  # the prompt, the tokens decoded so far and this step's own
            expected, floor = dense(q[b][None], k[b, :length], v[b, :length], causal=False)
            message = precision.failure(out[b], expected[0], "float16", floor=floor[0])
            assert message is None, f"step {step} batch {b}: {message}"
    if api == "fia" and "chunk" in result.stdout:
        q = load(tmp_path, "q_chunk.bin", (sum(CHUNK), N, D))
        out = load(tmp_path, "out_chunk.bin", (sum(CHUNK), N, D))
        for b, (r0, n) in enumerate(zip(np.cumsum((0,) + CHUNK), CHUNK)):
            length = LENS[b] + STEPS + n
            expected, floor = dense(q[r0 : r0 + n], k[b, :length], v[b, :length], causal=True)
            message = precision.failure(out[r0 : r0 + n], expected, "float16", floor=floor)
            assert message is None, f"chunked prefill batch {b}: {message}"
    on_a2 = not result.stdout.split("soc ", 1)[1].startswith("Ascend910_95")
    assert ("chunk" in result.stdout) == (api == "fia" and on_a2)
