"""PromptFlashAttention kernel pieces: fp16 rounding, deqScale decoding, and the forward against torch."""
import numpy as np
import pytest

from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.quant import deq_scale, quantize_
from golden import prompt_flash_attention as golden


def test_deq_scale_keeps_the_high_19_bits():
    value = np.float32(1 / 3000.1)
    bits = np.asarray([value], np.float32).view(np.uint32).astype(np.uint64)
    quant_param = (bits & np.uint64(0xFFFFE000)) | np.uint64(1 << 46)
    truncated = np.uint32(bits[0] & np.uint64(0xFFFFE000)).view(np.float32)
    assert deq_scale(quant_param) == truncated != value
    assert deq_scale(np.asarray([value], np.float32)) == truncated


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.asarray([0.5, 1.5, 2.5, -0.5, 300.0, -300.0], np.float32)
    np.testing.assert_array_equal(quantize_(x, 1.0), [0, 2, 2, 0, 127, -128])


def test_forward_against_torch_sdpa():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    q = (np.round(rng.standard_normal((2, 4, 40, 32)) * 4) / 4).astype(np.float16)
    k = (np.round(rng.standard_normal((2, 2, 50, 32)) * 4) / 4).astype(np.float16)
    v = rng.standard_normal((2, 2, 50, 32)).astype(np.float16)
    act = [40, 40]
    out = pfa.prompt_flash_attention(q, k, v, scale=0.125, bands=pfa.batch_bands(3, pfa.SPARSE_INT_MAX, 0, True,
                                     act, [50, 50]), act_q=act, act_kv=[50, 50])
    tq, tk, tv = (torch.from_numpy(x.astype(np.float64)) for x in (q, k, v))
    tk, tv = tk.repeat_interleave(2, dim=1), tv.repeat_interleave(2, dim=1)
    right_down = torch.ones(40, 50, dtype=torch.bool).tril(diagonal=10)
    expected = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=right_down, scale=0.125)
    exact = expected.numpy()
    # Narrowing E to fp16 before P V is the hardware's own error; hold the emulator to twice the error
    # of the float64 golden that models it (the flash-attention test criterion) plus an output ulp.
    modelled = golden.attention(q, k, v, scale=0.125, sparse_mode=3)
    bound = 2 * np.abs(modelled - exact).max() + 2.0 ** -11 * np.abs(exact).max()
    assert np.abs(out.astype(np.float64) - exact).max() <= bound
