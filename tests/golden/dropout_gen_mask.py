"""Independent reference for aclnnDropoutGenMaskV2's A2/A3 mask, written from the vendor's system test
(ops-math random/dsa_gen_bit_mask/tests/st/aclnnDropoutGenMaskV2/executor_aclnnDropoutGenMaskV2.py):
TensorFlow's StatelessRandomUniformV2 (Philox, key [seed], counter [0, offset]) in probDataType,
element kept when uniform >= prob, bits LSB first. Plain Python integers, one element at a time."""

import ml_dtypes
import numpy as np

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox10(counter: list[int], key: list[int]) -> list[int]:
    c, k = list(counter), list(key)
    for _ in range(10):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK32, (p0 >> 32) ^ c[3] ^ k[1], p0 & MASK32]
        k = [(k[0] + W0) & MASK32, (k[1] + W1) & MASK32]
    return c


def word(seed: int, offset: int, i: int) -> int:
    """The 32-bit Philox word element i draws: counter (0, 0, offset) advanced by i // 4, word i % 4."""
    seed, offset = seed % (1 << 64), offset % (1 << 64)
    n = i // 4
    counter = [n & MASK32, n >> 32, offset & MASK32, offset >> 32]
    return philox10(counter, [seed & MASK32, seed >> 32])[i % 4]


def uniform(seed: int, offset: int, i: int, dtype: str) -> float:
    w = word(seed, offset, i)
    if dtype == "float32":
        return float(np.uint32((w & 0x7FFFFF) | 0x3F800000).view(np.float32)) - 1.0
    if dtype == "float16":
        return float(np.uint16((w & 0x3FF) | 0x3C00).view(np.float16)) - 1.0
    return float(np.uint16((w & 0x7F) | 0x3F80).view(ml_dtypes.bfloat16)) - 1.0


def mask(seed: int, offset: int, prob: float, dtype: str, nbytes: int) -> bytes:
    p = float(np.float32(prob).astype({"float32": np.float32, "float16": np.float16,
                                       "bfloat16": ml_dtypes.bfloat16}[dtype]))  # fmt: skip
    out = bytearray(nbytes)
    for i in range(nbytes * 8):
        if uniform(seed, offset, i, dtype) >= p:
            out[i // 8] |= 1 << (i % 8)
    return bytes(out)
