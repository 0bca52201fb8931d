"""Round-to-nearest-even onto the fp16 grid, in place on fp32 buffers (the PFA fp16 path).

The fp16 high-performance path of PromptFlashAttention keeps QK^T and the softmax in fp16; the
emulator keeps those values in fp32 buffers (so BLAS can multiply them) but rounds them to fp16
values. ``astype(float16)`` and back costs two slow passes; here the rounding is done by the FPU:
for |x| in the binade [2**e, 2**(e+1)), adding sigma = 1.5 * 2**(e+13) lands in a binade whose
fp32 spacing is 2**(e-10), exactly the fp16 spacing of x, so the addition itself rounds x to fp16
(ties to even, because sigma is an even multiple of that spacing); subtracting sigma is exact.
Clamping e at -14 puts fp16 subnormals on their fixed 2**-24 grid.
"""
import numpy as np

_EXPONENT = np.uint32(0x7F800000)
_SIGMA_SCALE = np.float32(1.5 * 2.0 ** 13)
FP16_MIN_NORMAL = np.float32(2.0 ** -14)
FP16_OVERFLOW = np.float32(65520.0)   # the first magnitude that rounds to infinity


class Fp16Rounder:
    """Reusable scratch for rounding fp32 blocks of up to ``capacity`` elements to fp16 values."""

    def __init__(self, capacity: int):
        self._scratch = np.empty(capacity, np.float32)
        # np.maximum against an array runs ~3x faster than against a scalar.
        self._floor = np.full(capacity, FP16_MIN_NORMAL, np.float32)

    def round_(self, x: np.ndarray, may_overflow: bool = True) -> np.ndarray:
        """Round the C-contiguous fp32 array ``x`` in place; |x| >= 65520 becomes +-inf.

        ``may_overflow=False`` skips the overflow scan when the caller has bounded |x| < 65504.
        """
        flat = x.reshape(-1)
        sigma = self._scratch[:flat.size]
        big = None
        if may_overflow:
            np.abs(flat, out=sigma)
            if sigma.max(initial=0) >= FP16_OVERFLOW:
                big = np.flatnonzero(sigma >= FP16_OVERFLOW)
        np.bitwise_and(flat.view(np.uint32), _EXPONENT, out=sigma.view(np.uint32))
        np.maximum(sigma, self._floor[:flat.size], out=sigma)
        sigma *= _SIGMA_SCALE
        flat += sigma
        flat -= sigma
        if big is not None:
            flat[big] = np.copysign(np.float32(np.inf), flat[big])
        return x
