"""The dropout keep mask both directions of FlashAttentionScore read, 1 = keep, kept values scaled
by 1/keepProb with keepProb as float32 (reference §1B, dropmask.h).

`DropMask`: the dropMask tensor, bits over [B, N1, S1, S2] in row-major order, LSB first (bit idx at
byte idx >> 3, bit idx & 7).

`PhiloxDropMask`: the mask the Ascend910_95 (arch35) kernels generate themselves when keepProb < 1
and no dropMask is given. Read from `ops-transformer` 8.5.0-beta.1
`attention/common/op_kernel/arch35/dropmask.h` (`ComputeDropOffset`, `GenIndexVec`, `GenMaskVF`,
`GenDropMask`):
- Philox-4x32 with 7 rounds (multipliers 0xD2511F53 / 0xCD9E8D57, key bumps 0x9E3779B9 /
  0xBB67AE85), key = (seed low 32 bits, seed high 32 bits);
- one counter yields 16 random bytes for 16 consecutive elements of a row; rows are laid out with
  S2 rounded up to 16, so element (row r, column j) of the [B*N1*S1, S2] grid uses counter
  (r * ceil(S2 / 16) + j // 16 + ceil(offset / 16), 0, 0, 0) (128-bit, carries propagate);
- byte j % 16 of the four output words taken in order, each little-endian, and the element is
  kept when that byte <= keepProbUint8 = int(keepProb * 255).
Two steps are inferred, not read (INTERLEAVE_ORDER): that the kernel's two Interleave rounds put each
counter's words in the order (w0, w1, w2, w3), and that the predicate store puts byte k's decision at
bit k of the mask (LSB first, as a given dropMask is read); both depend on the intrinsics' lane
semantics, which the source does not spell out.
"""

import numpy as np

ROUNDS = 7
MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
KEY_BUMPS = (0x9E3779B9, 0xBB67AE85)
BYTES_PER_COUNTER = 16
LOW = np.uint64(0xFFFFFFFF)
INTERLEAVE_ORDER = "the lane order of the arch35 Interleave and predicate-store intrinsics (dropmask.h GenMaskVF)"


def philox_words(counter, key: tuple[int, int], rounds: int = ROUNDS) -> np.ndarray:
    """[n, 4] Philox4x32 outputs of the counters given as four uint64 arrays of 32-bit words."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counter)
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = c0 * MULTIPLIERS[0], c2 * MULTIPLIERS[1]  # 32 x 32 -> 64 bits, exact in uint64
        c0, c1, c2, c3 = (
            (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
            p1 & LOW,
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
            p0 & LOW,
        )
        k0, k1 = (k0 + KEY_BUMPS[0]) & 0xFFFFFFFF, (k1 + KEY_BUMPS[1]) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def _generated(seed: int, offset: int, keep_prob: float, first_row: int, rows: int, s2: int) -> np.ndarray:
    """Kept elements (bool [rows, s2]) of rows first_row.. of the generated mask's [rows, S2] grid."""
    per_row = -(-s2 // BYTES_PER_COUNTER)
    counters = (
        np.arange(first_row, first_row + rows, dtype=np.uint64)[:, None] * np.uint64(per_row)
        + np.arange(per_row, dtype=np.uint64)[None, :]
        + np.uint64(-(-(offset & 0xFFFFFFFFFFFFFFFF) // BYTES_PER_COUNTER))  # the attribute read as uint64
    ).reshape(-1)
    zero = np.zeros_like(counters)
    words = philox_words(
        (counters & LOW, counters >> np.uint64(32), zero, zero),
        (int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF),
    )
    random = words.astype("<u4").view(np.uint8).reshape(rows, per_row * BYTES_PER_COUNTER)[:, :s2]
    threshold = np.uint8(int(np.float32(keep_prob) * np.float32(255)) & 0xFF)
    return random <= threshold


def keep_mask(seed: int, offset: int, rows: int, s2: int, keep_prob: float) -> np.ndarray:
    """The generated mask's kept elements (bool [rows, s2]) of a [rows = B*N1*S1, S2] score grid."""
    return _generated(seed, offset, keep_prob, 0, rows, s2)


def packed_keep_mask(seed: int, offset: int, rows: int, s2: int, keep_prob: float) -> np.ndarray:
    """keep_mask as the dropMask tensor format: bits LSB-first, flat over [rows, s2], 1 = keep."""
    return np.packbits(keep_mask(seed, offset, rows, s2, keep_prob).reshape(-1), bitorder="little")


class DropMask:
    def __init__(self, drop_mask, keep_prob, heads, s1, s2):
        self.bytes = drop_mask.reshape(-1).view(np.uint8)
        self.factor = np.float32(1) / np.float32(keep_prob)
        self.heads, self.s1, self.s2 = heads, s1, s2

    def rows(self, b, n, i0, i1):
        """Keep bits (uint8 0/1) of rows [i0, i1) of head (b, n), all S2 columns."""
        start = ((b * self.heads + n) * self.s1 + i0) * self.s2
        count = (i1 - i0) * self.s2
        bits = np.unpackbits(self.bytes[start >> 3 : (start + count + 7) >> 3], bitorder="little")
        return bits[start & 7 : (start & 7) + count].reshape(i1 - i0, self.s2)


class PhiloxDropMask:
    def __init__(self, seed, offset, keep_prob, heads, s1, s2):
        self.seed, self.offset, self.keep_prob = int(seed), int(offset), keep_prob
        self.factor = np.float32(1) / np.float32(keep_prob)
        self.heads, self.s1, self.s2 = heads, s1, s2

    def rows(self, b, n, i0, i1):
        """Keep bits (uint8 0/1) of rows [i0, i1) of head (b, n), all S2 columns."""
        first = (b * self.heads + n) * self.s1 + i0
        return _generated(self.seed, self.offset, self.keep_prob, first, i1 - i0, self.s2).astype(np.uint8)


def dropout_for(params, drop_mask, heads, s1, s2):
    """The keep mask a FlashAttentionScore call applies, or None: the dropMask tensor; or, when the
    call generates its own (params.generated_dropout = (seed, offset)), the Philox mask."""
    if np.float32(params.keep_prob) >= 1:
        return None
    if params.generated_dropout is not None:
        return PhiloxDropMask(*params.generated_dropout, params.keep_prob, heads, s1, s2)
    return None if drop_mask is None else DropMask(drop_mask, params.keep_prob, heads, s1, s2)
