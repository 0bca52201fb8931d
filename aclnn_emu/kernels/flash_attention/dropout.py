"""The dropout keep mask both directions of FlashAttentionScore read: bits over [B, N1, S1, S2] in
row-major order, LSB first (bit idx at byte idx >> 3, bit idx & 7), 1 = keep; kept values are
scaled by 1/keepProb with keepProb as float32 (reference §1B, dropmask.h)."""
import numpy as np


class DropMask:
    def __init__(self, drop_mask, keep_prob, heads, s1, s2):
        self.bytes = drop_mask.reshape(-1).view(np.uint8)
        self.factor = np.float32(1) / np.float32(keep_prob)
        self.heads, self.s1, self.s2 = heads, s1, s2

    @classmethod
    def of(cls, drop_mask, keep_prob, heads, s1, s2):
        """The mask, or None when nothing is dropped (keepProb 1 or no mask)."""
        return cls(drop_mask, keep_prob, heads, s1, s2) if np.float32(keep_prob) < 1 and drop_mask is not None \
            else None

    def rows(self, b, n, i0, i1):
        """Keep bits (uint8 0/1) of rows [i0, i1) of head (b, n), all S2 columns."""
        start = ((b * self.heads + n) * self.s1 + i0) * self.s2
        count = (i1 - i0) * self.s2
        bits = np.unpackbits(self.bytes[start >> 3:(start + count + 7) >> 3], bitorder="little")
        return bits[start & 7:(start & 7) + count].reshape(i1 - i0, self.s2)
