"""torch_npu's path through the C ABI (tests/c/flash_attention_torch_npu_path.cpp): FlashAttentionScore and
FlashAttentionScoreGrad (V1) on BSND, then FlashAttentionVarLenScore and FlashAttentionUnpaddingScoreGrad
(V1) on packed TND, each output against the float64 goldens with CANN's precision standard."""

import numpy as np
import pytest

import cabi
import precision
from golden import flash_attention_score as dense
from golden import flash_attention_score_grad as dense_grad
from golden import flash_attention_var_len as packed

SCALE = 0.1767766952966369
N1 = 4
CU_Q, CU_KV = (30, 50, 90), (35, 70, 110)
MASK = np.triu(np.ones((2048, 2048), np.uint8), 1)


@pytest.fixture(scope="module")
def printed():
    result = cabi.compile_and_run("flash_attention_torch_npu_path.cpp")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {}
    for line in result.stdout.splitlines():
        name, *numbers = line.split()
        lines[name] = np.array(numbers, np.float64)
    return lines


def token_major(stats, cu_q):
    """softmaxMax/Sum [T1, N1, 8] as the kernels write them by default (each batch head-major) to
    [T1, N1] (lane 0), back in float32 (%.9g of -FLT_MAX reads back a little beyond it)."""
    flat, out, start = stats.reshape(-1), np.empty(stats.shape[:2], np.float32), 0
    for end in cu_q:
        out[start:end] = flat[start * N1 * 8 : end * N1 * 8].reshape(N1, end - start, 8)[..., 0].T
        start = end
    return out


def test_dense_bsnd_forward_and_backward(printed):
    q = printed["bsnd_q"].reshape(2, 40, N1, 32)
    k, v = (printed[f"bsnd_{n}"].reshape(2, 40, 2, 32) for n in ("k", "v"))
    dy = printed["bsnd_dy"].reshape(q.shape)
    attrs = dict(scale=SCALE, head_num=N1, layout="BSND")
    out, smax, ssum, floor = dense.forward(q, k, v, dtype_name="float16", **attrs)
    failure = precision.failure(printed["bsnd_out"].reshape(q.shape), out, "float16", floor=floor)
    assert failure is None, f"out: {failure}"
    for name, want in (("softmax_max", smax), ("softmax_sum", ssum)):
        assert precision.failure(printed[f"bsnd_{name}"].reshape(want.shape), want, "float32") is None, name
    got_out = printed["bsnd_out"].reshape(q.shape)
    got_max, got_sum = (printed[f"bsnd_{n}"].reshape(2, N1, 40, 8) for n in ("softmax_max", "softmax_sum"))
    spec = dict(dtype_name="float16", **attrs)
    grads = dense_grad.backward(q, k, v, dy, got_out, got_max, got_sum, **spec)
    floors = dense_grad.largest_terms(q, k, v, dy, got_out, got_max, got_sum, **spec)
    for name, want, floor in zip(("dq", "dk", "dv"), grads, floors):
        got = printed[f"bsnd_{name}"].reshape(want.shape)
        failure = precision.failure(got, want, "float16", floor=floor)
        assert failure is None, f"{name}: {failure}"


def test_packed_tnd_forward_and_backward(printed):
    q = printed["tnd_q"].reshape(90, N1, 32)
    k, v = (printed[f"tnd_{n}"].reshape(110, 2, 32) for n in ("k", "v"))
    dy = printed["tnd_dy"].reshape(q.shape)
    spec = dict(scale=SCALE, atten_mask=MASK, sparse_mode=3, pre_tokens=2147483647, next_tokens=0, prefix=None)
    out, row_max, row_sum, floor = packed.forward(q, k, v, CU_Q, CU_KV, dtype_name="float16", **spec)
    got_out = printed["tnd_out"].reshape(q.shape)
    failure = precision.failure(got_out, out, "float16", floor=floor)
    assert failure is None, f"out: {failure}"
    got_max, got_sum = (
        token_major(printed[f"tnd_{n}"].reshape(90, N1, 8), CU_Q) for n in ("softmax_max", "softmax_sum")
    )
    assert precision.failure(got_max, row_max, "float32") is None
    assert precision.failure(got_sum, row_sum, "float32") is None
    args = (q, k, v, dy, got_out, got_max, got_sum, CU_Q, CU_KV)
    grads = packed.backward(*args, dtype_name="float16", **spec)
    floors = packed.backward(*args, dtype_name="float16", floors=True, **spec)
    for name in ("dq", "dk", "dv"):
        got = printed[f"tnd_{name}"].reshape(grads[name].shape)
        failure = precision.failure(got, grads[name], "float16", floor=floors[name])
        assert failure is None, f"{name}: {failure}"
