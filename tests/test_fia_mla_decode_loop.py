"""An MLA decode loop end to end through the C ABI (tests/c/fia_mla_decode_loop.cpp): latent keys and
rope parts scattered into two paged caches with ScatterPaKvCache, then FusedInferAttentionScoreV3
decode steps with queryRope/keyRope (the A2/A3 FIA-V3 MLA kernels, Ascend910_95's IFA MLA), each step held against dense
float64 attention over the sequence so far (scores q·cᵀ + q_rope·k_ropeᵀ, values the latents) to
CANN's bf16 standard, floors as in tests/golden/incre_flash_attention."""

import ml_dtypes
import numpy as np
import pytest

import cabi
import precision

B, N, D, DR, STEPS = 2, 32, 512, 64, 3
LENS = (37, 12)
S_TOTAL = 37 + STEPS
SCALE = 1 / np.sqrt(D + DR)


def load(directory, name, shape):
    return np.fromfile(directory / name, ml_dtypes.bfloat16).reshape(shape).astype(np.float64)


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_95"])
def test_mla_decode_steps(tmp_path, soc):
    result = cabi.compile_and_run("fia_mla_decode_loop.cpp", tmp_path, env={"ACLNN_EMU_SOC": soc})
    assert result.returncode == 0 and "done" in result.stdout, result.stdout + result.stderr
    latent = load(tmp_path, "latent.bin", (B, S_TOTAL, D))
    rope = load(tmp_path, "rope.bin", (B, S_TOTAL, DR))
    for step in range(STEPS):
        q = load(tmp_path, f"q_step{step}.bin", (B, N, D))
        qr = load(tmp_path, f"qr_step{step}.bin", (B, N, DR))
        out = load(tmp_path, f"out_step{step}.bin", (B, N, D))
        for b, n in enumerate(LENS):
            length = n + step + 1
            c, r = latent[b, :length], rope[b, :length]
            s = (q[b] @ c.T + qr[b] @ r.T) * SCALE
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            expected, floor = p @ c, p @ np.abs(c)
            message = precision.failure(out[b], expected, "bfloat16", floor=floor)
            assert message is None, f"step {step} batch {b}: {message}"
