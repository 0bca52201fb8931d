"""The position term (pse) of the flash-attention family, per block of scores (reference §1B step 2-3):
FlashAttentionScore's (forward and backward), and IncreFlashAttention's pseShift (pseType 0, one query row).

pseType 1:    S = (QKᵀ + pse) * scale          pseType 0, 2, 3:  S = QKᵀ * scale + pse
pseType 0/1 read a tensor [B|1, N1, S1|1, S2], or the alibi-compressed [B|1, N1, 1024, S2] whose
rows are read Toeplitz-wise; pseType 2/3 generate -slope * |dist| (sqrt(|dist|) for 3) from fp32
slopes [N1] or [B, N1], with dist = (j + kvStartIdx) - (i + qStartIdx).
"""

import numpy as np

ALIBI_ROWS = 1024


class PseSource:
    def __init__(self, pse, pse_type, s1, s2, q_start_idx=None, kv_start_idx=None):
        self.pse, self.type, self.s1, self.s2 = pse, pse_type, s1, s2
        # SetQKVStartIdx (both tilings) writes the two into the tiling data only when both are
        # present and non-empty; otherwise both stay 0.
        both = bool(q_start_idx) and bool(kv_start_idx)
        self.shift = int(kv_start_idx[0]) - int(q_start_idx[0]) if both else 0

    @property
    def added_before_scale(self) -> bool:
        return self.pse is not None and self.type == 1

    def block(self, b: int, n: int, i0: int, i1: int, j0: int, j1: int) -> np.ndarray | None:
        """The fp32 pse values of scores [i0, i1) x [j0, j1) of head (b, n), or None."""
        if self.pse is None:
            return None
        if self.type in (2, 3):
            return self._inner(b, n, i0, i1, j0, j1)
        pse = self.pse[b if self.pse.shape[0] > 1 else 0, n]
        rows = pse.shape[0]
        if rows == 1:
            return np.broadcast_to(pse[:, j0:j1].astype(np.float32), (i1 - i0, j1 - j0))
        if rows == ALIBI_ROWS and self.s1 != ALIBI_ROWS:
            return self._alibi(pse, i0, i1, j0, j1)
        return pse[i0:i1, j0:j1].astype(np.float32)

    def _inner(self, b, n, i0, i1, j0, j1):
        slopes = self.pse if self.pse.ndim == 1 else self.pse[b]
        dist = (np.arange(j0, j1, dtype=np.float32)[None, :] + np.float32(self.shift)) - np.arange(
            i0, i1, dtype=np.float32
        )[:, None]
        dist = np.abs(dist)
        if self.type == 3:
            dist = np.sqrt(dist)
        return dist * -np.float32(slopes[n])

    def _alibi(self, compact, i0, i1, j0, j1):
        """Rows >= S1-1024 are stored as they are; a row above reads row m = i % 1024 shifted along
        its diagonal (k = S1 - 1024 + m - i + j), on and below the diagonal only."""
        first = self.s1 - ALIBI_ROWS
        i = np.arange(i0, i1)[:, None]
        j = np.arange(j0, j1)[None, :]
        stored = i >= first
        m = np.where(stored, i - first, i % ALIBI_ROWS)
        k = np.where(stored, j, first + m - i + j)
        inside = stored | (j <= i)
        values = compact[m, np.clip(k, 0, self.s2 - 1)].astype(np.float32)
        return np.where(inside, values, np.float32(0))
