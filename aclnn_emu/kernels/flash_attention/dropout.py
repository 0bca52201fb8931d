"""The dropout keep mask both directions of FlashAttentionScore read, 1 = keep, kept values scaled
by 1/keepProb with keepProb as float32 (reference §1B, dropmask.h).

`DropMask`: the dropMask tensor, bits over [B, N1, S1, S2] in row-major order, LSB first (bit idx at
byte idx >> 3, bit idx & 7).
`PhiloxDropMask`: the mask the Ascend910_95 kernels generate themselves when keepProb < 1 and no
dropMask is given (attention/common/op_kernel/arch35/dropmask.h, GenDropMask / GenMaskVF): a
Philox4x32 with 7 rounds keyed by the seed attribute; the counter of row i of head (b, n) starts at
ceil((((b*N1 + n)*S1 + i)*S2 + offset) / 16) and steps by one per 16 columns; the 4 output words of
a counter give columns 16k..16k+15, little-endian bytes in word order, and a column is kept when
its byte <= int(keepProb * 255). Block starts the kernel's tiling picks enter the counter; the rows
computed here equal the kernel's whenever S2 and offset are multiples of 16.
"""
import numpy as np

PHILOX_ROUNDS = 7
PHILOX_MUL = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
PHILOX_KEY_ADD = (0x9E3779B9, 0xBB67AE85)
PHILOX_GROUP = 16          # keep decisions per counter (4 words of 4 bytes)
LOW = np.uint64(0xFFFFFFFF)


class DropMask:
    def __init__(self, drop_mask, keep_prob, heads, s1, s2):
        self.bytes = drop_mask.reshape(-1).view(np.uint8)
        self.factor = np.float32(1) / np.float32(keep_prob)
        self.heads, self.s1, self.s2 = heads, s1, s2

    def rows(self, b, n, i0, i1):
        """Keep bits (uint8 0/1) of rows [i0, i1) of head (b, n), all S2 columns."""
        start = ((b * self.heads + n) * self.s1 + i0) * self.s2
        count = (i1 - i0) * self.s2
        bits = np.unpackbits(self.bytes[start >> 3:(start + count + 7) >> 3], bitorder="little")
        return bits[start & 7:(start & 7) + count].reshape(i1 - i0, self.s2)


class PhiloxDropMask:
    def __init__(self, seed, offset, keep_prob, heads, s1, s2):
        self.key = (int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF)
        self.offset = int(offset)
        self.threshold = int(np.float32(keep_prob) * np.float32(255))   # keepProbUint8 of the tiling
        self.factor = np.float32(1) / np.float32(keep_prob)
        self.heads, self.s1, self.s2 = heads, s1, s2

    def rows(self, b, n, i0, i1):
        """Keep bits (uint8 0/1) of rows [i0, i1) of head (b, n), all S2 columns."""
        groups = -(-self.s2 // PHILOX_GROUP)
        first = ((b * self.heads + n) * self.s1 + np.arange(i0, i1, dtype=np.int64)) * self.s2 + self.offset
        counters = (-(-first // PHILOX_GROUP))[:, None].astype(np.uint64) + np.arange(groups, dtype=np.uint64)
        draws = philox_bytes(counters.reshape(-1), self.key).reshape(i1 - i0, groups * PHILOX_GROUP)
        return (draws[:, :self.s2] <= self.threshold).astype(np.uint8)


def philox_bytes(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """[len(counters), 16] uint8: the 4 output words of Philox4x32 (PHILOX_ROUNDS rounds) for the
    128-bit counters (counter, 0) under `key`, little-endian bytes in word order."""
    zero = np.zeros_like(counters)
    words = philox_words((counters & LOW, counters >> np.uint64(32), zero, zero), key)
    return words.astype("<u4").view(np.uint8).reshape(len(counters), PHILOX_GROUP)


def philox_words(counter, key: tuple[int, int], rounds: int = PHILOX_ROUNDS) -> np.ndarray:
    """[n, 4] Philox4x32 outputs of the counters given as four uint64 arrays of 32-bit words."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counter)
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = c0 * PHILOX_MUL[0], c2 * PHILOX_MUL[1]       # 32 x 32 -> 64 bits, exact in uint64
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & LOW,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & LOW)
        k0, k1 = (k0 + PHILOX_KEY_ADD[0]) & 0xFFFFFFFF, (k1 + PHILOX_KEY_ADD[1]) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def keep_mask(params, drop_mask, heads, s1, s2):
    """The keep mask a FlashAttentionScore call applies, or None: the dropMask tensor; or, when the
    call generates its own (params.generated_dropout = (seed, offset)), the Philox mask."""
    if np.float32(params.keep_prob) >= 1:
        return None
    if params.generated_dropout is not None:
        return PhiloxDropMask(*params.generated_dropout, params.keep_prob, heads, s1, s2)
    return None if drop_mask is None else DropMask(drop_mask, params.keep_prob, heads, s1, s2)
