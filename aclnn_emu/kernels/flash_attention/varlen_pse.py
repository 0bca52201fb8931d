"""The position term (pse) of a packed variable-length (TND) call, per batch: what the Atlas A2/A3
kernels read of it for batch b with S1b query and S2b key tokens (common/include/kernel/pse.h,
PseComputeOffset and PseAlibiComputeOffset with layout TND; the forward's
flash_attention_score_s1s2_bn2gs1.h and the backward's flash_attention_score_grad_s1s2_bn2gs1s2.h fill
its offsets with the batches before b).

  "s1s2"    packed [N1, S1b, S2b] per batch, batch after batch: from element N1·Σ_{c<b} S1c·S2c
  "1s2"     packed [N1, S2b] per batch, one row for every query row: from element N1·Σ_{c<b} S2c
  "alibi"   [P, N1, 1024, W] (P = 1 or B, W = the longest key length): batch b reads block b % P
            Toeplitz-wise against W, row m = 1024 - W + i for query row i (rows above the stored 1024
            read row 0 along their diagonal), column j; with `alibi_anchor` = S1 as the Ascend910_95
            backward's kernels read it with a BSND layout (PseAlibiComputeOffset's non-TND branch, per
            row block of `alibi_block` rows starting at row0): row 1024 - S1 + i, column j, where row0 >=
            S1 - 1024; above, row i % 1024 and column j + W - 1024·(i // 1024 + 1), i.e. the flat element
            that many columns from the start of that row (the block's rows lie W apart from its anchor)
  "slopes"  fp32 [N1] or [B, N1] (pseType 2/3): batch b's slopes; the distance starts over in each batch

The alibi form is read by blocks anchored at each block's first row and column; for the compressed
Toeplitz matrix the docs ask for (ori_pse[:, :, -1024:, :]) every anchoring gives the same values,
which is what this reads (docs/divergences/flash_attention_var_len.md).
"""

from dataclasses import dataclass

import numpy as np

from .pse import ALIBI_ROWS

FORMS = ("s1s2", "1s2", "alibi", "slopes")


@dataclass(frozen=True)
class PackedPse:
    """How a TND call's pse is laid out: `form` (FORMS), the query heads, and for the alibi form its
    batch count P, row width W, and for a BSND read the query length S1 it is anchored at and the
    kernels' row block (0: the TND read)."""

    form: str
    heads: int
    alibi_batches: int = 1
    alibi_width: int = 0
    alibi_anchor: int = 0
    alibi_block: int = 0

    def bsnd_offsets(self, s1: int, s2: int):
        """The BSND read's [S1, S2] flat offsets from the start of a head's [1024, W] block (above the
        diagonal, which the causal modes mask and the kernels do not add, 0)."""
        width, rows = self.alibi_width, ALIBI_ROWS
        i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
        threshold = self.alibi_anchor - rows
        stored = i - i % self.alibi_block >= threshold
        row = np.where(stored, i - threshold, i % rows)
        column = np.where(stored, j, j + width - rows * (i // rows + 1))
        return np.where(j <= i, row * width + column, 0)

    def elements(self, q_lens, kv_lens) -> int:
        """How many elements the kernels read: the end of the last read of a batch with tokens."""
        ends = [end for end, s1, s2 in self._spans(q_lens, kv_lens) if s1 and s2]
        return max(ends, default=0)

    def _spans(self, q_lens, kv_lens):
        """(end of the read, S1b, S2b) per batch."""
        n, s1s2, s2s = self.heads, 0, 0
        for b, (s1, s2) in enumerate(zip(q_lens, kv_lens)):
            s1s2, s2s = s1s2 + s1 * s2, s2s + s2
            end = {
                "s1s2": n * s1s2,
                "1s2": n * s2s,
                "alibi": (b % self.alibi_batches + 1) * n * ALIBI_ROWS * self.alibi_width,
                "slopes": n * (b + 1 if self.alibi_batches > 1 else 1),
            }[self.form]
            yield end, s1, s2

    def batches(self, values, q_lens, kv_lens):
        """Per batch, the pse the dense kernels take for it: [1, N1, S1b|1, S2b] in the pse's dtype, or
        fp32 slopes [N1]."""
        flat = np.asarray(values).reshape(-1)
        s1s2 = s2s = 0
        for b, (s1, s2) in enumerate(zip(q_lens, kv_lens)):
            yield self._batch(flat, b, s1, s2, s1s2, s2s)
            s1s2, s2s = s1s2 + s1 * s2, s2s + s2

    def _batch(self, flat, b, s1, s2, s1s2, s2s):
        n = self.heads
        if self.form == "s1s2":
            start = n * s1s2
            return flat[start : start + n * s1 * s2].reshape(1, n, s1, s2)
        if self.form == "1s2":
            start = n * s2s
            return flat[start : start + n * s2].reshape(1, n, 1, s2)
        if self.form == "slopes":
            start = n * b if self.alibi_batches > 1 else 0
            return flat[start : start + n]
        return self._alibi(flat, b, s1, s2)

    def _alibi(self, flat, b, s1, s2):
        width, rows = self.alibi_width, ALIBI_ROWS
        start = (b % self.alibi_batches) * self.heads * rows * width
        if self.alibi_anchor:
            heads = start + np.arange(self.heads)[:, None, None] * (rows * width)
            values = flat[heads + self.bsnd_offsets(s1, s2)]
            return np.where(np.arange(s2)[None, :] <= np.arange(s1)[:, None], values, values.dtype.type(0))[None]
        block = flat[start:][: self.heads * rows * width].reshape(self.heads, rows, width)
        first = width - rows  # the query row stored in row 0
        i = np.arange(s1)[:, None]
        j = np.arange(s2)[None, :]
        stored = i >= first
        m = np.where(stored, i - first, 0)
        k = np.where(stored, j, j - i + first)
        # above the diagonal (masked by the causal modes this form needs) nothing is read
        inside = j <= i
        values = block[:, m, np.clip(k, 0, width - 1)]
        return np.where(inside, values, values.dtype.type(0))[None]
