"""The dropout keep-mask the arch35 (Ascend910_95) attention kernels generate from (seed, offset).

Read from `ops-transformer` 8.5.0-beta.1 `attention/common/op_kernel/arch35/dropmask.h`
(`ComputeDropOffset`, `GenIndexVec`, `GenMaskVF`, `GenDropMask`):
- Philox-4x32 with 7 rounds (multipliers 0xD2511F53 / 0xCD9E8D57, key bumps 0x9E3779B9 /
  0xBB67AE85), key = (seed low 32 bits, seed high 32 bits);
- one counter yields 16 random bytes for 16 consecutive elements of a row; rows are laid out
  with S2 rounded up to 16, so element (row r, column j) of the [B, N1, S1] x S2 grid uses counter
  (r * ceil(S2 / 16) + j // 16 + ceil(offset / 16), 0, 0, 0) (128-bit, carries propagate);
- byte j % 16 of the four output words taken in order, each little-endian, and the element is
  kept when that byte <= keepProbUint8 = int(keepProb * 255).
Two steps are inferred, not read (INTERLEAVE_ORDER): that the kernel's two Interleave rounds put each
counter's words in the order (w0, w1, w2, w3), and that the predicate store puts byte k's decision at
bit k of the mask (LSB first, as a given dropMask is read); both depend on the intrinsics' lane
semantics, which the source does not spell out.
"""
import numpy as np

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
K0, K1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
ROUNDS = 7
BYTES_PER_COUNTER = 16
INTERLEAVE_ORDER = "the lane order of the arch35 Interleave and predicate-store intrinsics (dropmask.h GenMaskVF)"


def philox4x32(counter_low: np.ndarray, counter_high: int, seed: int, rounds: int = ROUNDS) -> np.ndarray:
    """Philox-4x32 of counters (counter_low + carry into counter_high, 0, 0): uint32 [n, 4]."""
    low = counter_low.astype(np.uint64)
    c0 = (low & 0xFFFFFFFF).astype(np.uint64)
    c1 = ((low >> np.uint64(32)) + np.uint64(counter_high & 0xFFFFFFFF)) & np.uint64(0xFFFFFFFF)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32((seed >> 32) & 0xFFFFFFFF)
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(rounds):
        p0, p1 = c0 * M0, c2 * M1
        h0, l0, h1, l1 = p0 >> np.uint64(32), p0 & mask, p1 >> np.uint64(32), p1 & mask
        c0, c1, c2, c3 = (h1 ^ c1 ^ np.uint64(k0)), l1, (h0 ^ c3 ^ np.uint64(k1)), l0
        k0, k1 = np.uint32(int(k0) + int(K0) & 0xFFFFFFFF), np.uint32(int(k1) + int(K1) & 0xFFFFFFFF)
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def keep_mask(seed: int, offset: int, rows: int, s2: int, keep_prob: float) -> np.ndarray:
    """The kept elements (bool [rows, s2]) of a [rows = B*N1*S1, S2] score grid."""
    per_row = -(-s2 // BYTES_PER_COUNTER)
    counters = (np.arange(rows, dtype=np.uint64)[:, None] * np.uint64(per_row)
                + np.arange(per_row, dtype=np.uint64)[None, :]
                + np.uint64(-(-offset // BYTES_PER_COUNTER)))
    words = philox4x32(counters.reshape(-1), 0, seed)              # [rows * per_row, 4]
    random = words.astype("<u4").view(np.uint8).reshape(rows, per_row * BYTES_PER_COUNTER)[:, :s2]
    threshold = np.uint8(int(np.float32(keep_prob) * np.float32(255)) & 0xFF)
    return random <= threshold


def packed_keep_mask(seed: int, offset: int, rows: int, s2: int, keep_prob: float) -> np.ndarray:
    """keep_mask as the dropMask tensor format: bits LSB-first, flat over [rows, s2], 1 = keep."""
    return np.packbits(keep_mask(seed, offset, rows, s2, keep_prob).reshape(-1), bitorder="little")
