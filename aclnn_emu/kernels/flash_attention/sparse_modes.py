"""Which scores FlashAttentionScore (forward and backward) masks, per block, for sparse modes 0-6.

Masked scores are replaced by -FLT_MAX before the softmax (computed or recomputed). The sets (reference §1B):
  no attenMask    nothing, whatever the mode (the tiling resets the tokens to INT32_MAX)
  0               attenMask[i, j] != 0, or j outside the left-up band [i - pre, i + next]
  1, 5            attenMask[b?, n?, i, j] != 0
  2               j - i > 0                                  (left-up causal)
  3               j - i > S2 - S1                            (right-down causal)
  4               j - i > next + (S2 - S1)  or  i - j > pre - (S2 - S1)   (right-down band)
  6               j - i > S2 - S1  and  j >= prefix[b]       (prefix, compressed)
Modes 2, 3, 4 and 6 take a compressed template mask whose content the kernel does not index, so
the canonical set is generated here instead of reading the user's tensor.
"""

import numpy as np

from aclnn_emu.kernels.attention.masks import band_key_range, band_masked

UNBOUNDED = 1 << 62  # a token bound that never cuts a row
NEG_FLT_MAX = np.float32(-np.finfo(np.float32).max)  # what a masked score becomes (0xFF7FFFFF)


class SparsePlan:
    def __init__(self, sparse_mode, atten_mask, pre_tokens, next_tokens, prefix, s1, s2):
        self.mode = sparse_mode
        self.mask = atten_mask
        self.s1, self.s2 = s1, s2
        self.prefix = prefix
        self.band: tuple[int, int] | None = self._band(
            sparse_mode, atten_mask is not None, pre_tokens, next_tokens, s1, s2
        )

    @staticmethod
    def _band(mode, has_mask, pre, next_, s1, s2):
        """(pre, next) of the left-up band the mode implies, or None when it has no band."""
        if not has_mask:
            return None
        shift = s2 - s1
        return {
            0: (pre, next_),
            2: (UNBOUNDED, 0),
            3: (UNBOUNDED, shift),
            4: (pre - shift, next_ + shift),
            6: (UNBOUNDED, shift),
        }.get(mode)

    def key_range(self, b: int, i0: int, i1: int) -> tuple[int, int]:
        """Keys [j0, j1) outside of which rows [i0, i1) are masked everywhere."""
        if self.band is None:
            return 0, self.s2
        j0, j1 = band_key_range(i0, i1, *self.band, self.s2)
        if self.mode == 6:
            j0, j1 = 0, max(j1, min(int(self.prefix[b]), self.s2))
        return j0, j1

    def masked(self, b: int, n: int, i0: int, i1: int, j0: int, j1: int) -> np.ndarray | None:
        """Boolean [i1-i0, j1-j0], True where the score is masked; None when nothing is."""
        if self.mask is None:
            return None
        band = None if self.band is None else band_masked(i0, i1, j0, j1, *self.band)
        if self.mode == 6 and band is not None:
            band &= np.arange(j0, j1)[None, :] >= self.prefix[b]
        if self.mode not in (0, 1, 5):
            return band
        user = self._user_block(b, n, i0, i1, j0, j1)
        return user if band is None else user | band

    def _user_block(self, b, n, i0, i1, j0, j1):
        mask = self.mask
        if mask.ndim == 4:
            mask = mask[b if mask.shape[0] > 1 else 0, n if mask.shape[1] > 1 else 0]
        return mask[i0:i1, j0:j1] != 0
