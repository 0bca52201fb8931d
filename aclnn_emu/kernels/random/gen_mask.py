"""The dropout bit mask of aclnnDropoutGenMask / V2 on Atlas A2/A3 (the DSAGenBitMask task of
ops-math `random/dsa_gen_bit_mask`), numpy in, numpy out.

The kernel is the chip's DSA random unit, so no kernel source says what it computes. The vendor's
own system test of the V2 entry point (`tests/st/aclnnDropoutGenMaskV2/executor_...py`) states it:
- random numbers: TensorFlow's stateless Philox uniform (StatelessRandomUniformV2, alg 1) with key
  `seed` and counter (0, offset), drawn in probDataType; element i takes 32-bit word i % 4 of the
  Philox-4x32-10 output for the 128-bit counter (0, 0, offset low, offset high) + i // 4, and makes
  a uniform number in [1, 2) - 1 from its low mantissa bits (23 for FLOAT, 10 for FLOAT16, 7 for
  BF16);
- bit i of the mask is 1 (keep) when that number, widened to float32, is >= prob (prob as a float,
  then in probDataType);
- bits are packed LSB first: element i is bit i % 8 of byte i // 8 (the test reverses each byte's
  bits before numpy's MSB-first unpackbits), the order FlashAttentionScore reads its dropMask in.
The DSA task generates every bit of the mask (the element count rounded up to 128).
"""

import ml_dtypes
import numpy as np

from aclnn_emu.kernels.flash_attention.dropout import LOW, philox_words

ROUNDS = 10  # Philox-4x32-10, as TensorFlow's PhiloxRandom
WORDS_PER_COUNTER = 4
CHUNK = 1 << 20  # counters per numpy pass, to bound memory

# probDataType -> (numpy dtype, unsigned view, mantissa mask, the bits of 1.0)
UNIFORM_FORMATS = {
    "float32": (np.float32, np.uint32, 0x7FFFFF, 0x3F800000),
    "float16": (np.float16, np.uint16, 0x3FF, 0x3C00),
    "bfloat16": (ml_dtypes.bfloat16, np.uint16, 0x7F, 0x3F80),
}


def _words(seed: int, offset: int, first: int, count: int) -> np.ndarray:
    """Philox words [first, first + count) of the stream (key seed, counter (0, 0, offset))."""
    start, stop = first // WORDS_PER_COUNTER, -(-(first + count) // WORDS_PER_COUNTER)
    counters = np.arange(start, stop, dtype=np.uint64)
    seed, offset = int(seed) & ((1 << 64) - 1), int(offset) & ((1 << 64) - 1)
    words = philox_words(
        (
            counters & LOW,
            counters >> np.uint64(32),
            np.full_like(counters, offset & 0xFFFFFFFF),
            np.full_like(counters, offset >> 32),
        ),
        (seed & 0xFFFFFFFF, seed >> 32),
        rounds=ROUNDS,
    ).reshape(-1)
    skip = first - start * WORDS_PER_COUNTER
    return words[skip : skip + count]


def uniform(seed: int, offset: int, count: int, dtype: str, first: int = 0) -> np.ndarray:
    """Uniform numbers [first, first + count) in [0, 1) of the stream, in `dtype`."""
    np_dtype, view, mantissa, one = UNIFORM_FORMATS[dtype]
    bits = (_words(seed, offset, first, count) & np.uint32(mantissa)) | np.uint32(one)
    values = bits.astype(view).view(np_dtype)
    return (values - np_dtype(1)).astype(np_dtype)


def threshold(prob: float, dtype: str) -> np.float32:
    """prob as the kernel compares it: a float, then probDataType, widened to float32."""
    return np.float32(np.float32(prob).astype(UNIFORM_FORMATS[dtype][0]))


def gen_mask(seed: int, offset: int, prob: float, dtype: str, nbytes: int) -> np.ndarray:
    """The mask's bytes (uint8 [nbytes]): bit i set when element i is kept."""
    out = np.empty(nbytes, np.uint8)
    limit = threshold(prob, dtype)
    step = CHUNK * WORDS_PER_COUNTER
    for first in range(0, nbytes * 8, step):
        count = min(step, nbytes * 8 - first)
        keep = uniform(seed, offset, count, dtype, first).astype(np.float32) >= limit
        out[first // 8 : (first + count) // 8] = np.packbits(keep, bitorder="little")
    return out
