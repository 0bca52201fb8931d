"""A whole attention training step through the C ABI (tests/c/flash_attention_train_step.cpp):
FlashAttentionScoreV2, the loss gradient, FlashAttentionScoreGradV2 and an SGD update, against a
float64 reference of the same step (the goldens' forward and backward, no emulator code)."""

import numpy as np

import cabi
import precision
from golden import flash_attention_score as golden
from golden import flash_attention_score_grad as grad_golden

SCALE, LR = 0.25, 0.5
ATTRS = dict(
    scale=SCALE,
    head_num=2,
    layout="BNSD",
    pse_type=0,
    sparse_mode=2,
    atten_mask=np.triu(np.ones((2048, 2048), np.uint8), 1),
    pre_tokens=2147483647,
    next_tokens=0,
)


def test_training_step_matches_float64():
    result = cabi.compile_and_run("flash_attention_train_step.cpp")
    assert result.returncode == 0, result.stdout + result.stderr
    printed = {}
    for line in result.stdout.splitlines():
        name, *numbers = line.split()
        printed[name] = np.array(numbers, np.float64)
    q = printed["q"].reshape(1, 2, 24, 16)
    k, v = (printed[n].reshape(1, 1, 24, 16) for n in ("k", "v"))
    target, pse = printed["target"].reshape(q.shape), printed["pse"].reshape(1, 2, 1, 24)
    out, smax, ssum, _ = golden.forward(q, k, v, dtype_name="float32", pse=pse, **ATTRS)
    dy = out - target
    loss = 0.5 * float((dy**2).sum())
    assert abs(printed["loss"][0] - loss) <= 1e-4 * loss
    assert precision.failure(printed["out"].reshape(q.shape), out, "float32") is None
    grads = grad_golden.backward(q, k, v, dy, out, smax, ssum, dtype_name="float32", pse=pse, **ATTRS)
    for name, x, g in zip(("q_new", "k_new", "v_new"), (q, k, v), grads):
        want = x - LR * g
        failure = precision.failure(
            printed[name].reshape(want.shape), want, "float32", floor=float(np.abs(g).mean()) * LR
        )
        assert failure is None, f"{name}: {failure}"
        assert not np.allclose(want, x), "the step must move the parameters"
