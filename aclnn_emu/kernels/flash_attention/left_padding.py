"""Left padding (queryPaddingSize / kvPaddingSize) of the inference attention kernels.

Batch b's query rows are the ``act_q[b]`` rows that end ``queryPaddingSize`` rows before the end of
its S1 rows, its keys the ``act_kv[b]`` rows ending ``kvPaddingSize`` rows before S2 (a negative
size counts as 0; rows start at 0 when the lengths and the size exceed S): the x910 kernels
(`prompt_flash_attention_s1s2_bns1_x910_base.h` GetQueryLeftPaddingSize, GetKVLeftPaddingSize)
and the arch35 ones (`flash_attention_score_kernel_base.h`, `flash_attention_score_block_cube.h`)
offset the query, key, value and output rows by these first rows, and the attenMask and pseShift
reads by (query first row, key first row) (`LoopSOuterOffsetInit`, `CalPseShiftOffset`,
`attenmask.h`). The output's other rows are zeroed before the kernel (needInit). Where a length
and its padding exceed S, the x910 kernels read from row 0, the arch35 ones
(`infer_flash_attention_kvcache.h` InitQueryLeftPaddingSize / InitKVLeftPaddingSize) and the
FIA-V3 ones (`fia_kernel_nonquant.h`, DEAL_ZERO) take that side's length as 0 (``overflow_empty``).
Here each batch's rows are moved to the front, where the kernels' walk over rows [0, act) reads
them, and the results moved back.
"""

from dataclasses import dataclass

import numpy as np


def first_rows(size: int, lengths, padding: int) -> list[int]:
    """Per batch, the first row read: max(0, size - length - max(padding, 0))."""
    pad = max(int(padding), 0)
    return [max(0, size - int(n) - pad) for n in lengths]


def _roll(x, firsts, axes, sign):
    """Batch b of ``x`` (its leading axis broadcast to len(firsts)) rolled by sign * firsts[b][i]
    along axes[i] (axes counted within a batch)."""
    x = np.broadcast_to(x, (len(firsts),) + x.shape[1:])
    out = np.empty_like(x)
    for b, shift in enumerate(firsts):
        out[b] = np.roll(x[b], tuple(sign * s for s in shift), axis=axes)
    return out


@dataclass(frozen=True)
class Shift:
    """Each batch's first query and key rows (0 where that side has no padding), and the lengths
    the kernels run with."""

    q_first: list[int]
    kv_first: list[int]
    act_q: list[int]
    act_kv: list[int]

    def query(self, x):
        """[B, N, S1, D] with each batch's query rows first."""
        return _roll(x, [(s,) for s in self.q_first], (1,), -1)

    def keys(self, x):
        """[B, Nkv, S2, D] with each batch's key (or value) rows first."""
        return _roll(x, [(s,) for s in self.kv_first], (1,), -1)

    def scores_input(self, x):
        """A mask [1|B, S1m, S2m] or pse [1|B, N, S1p|1, S2p] read from (query row, key row) of
        each batch's first ones; a one-row pse keeps its row."""
        rows = x.shape[-2] > 1
        firsts = [(q if rows else 0, k) for q, k in zip(self.q_first, self.kv_first)]
        return _roll(x, firsts, (x.ndim - 3, x.ndim - 2), -1)

    def back(self, x):
        """An output [B, N, S1, ...] (or lse [B, N, S1]) moved back to each batch's query rows."""
        return _roll(x, [(s,) for s in self.q_first], (1,), 1)


@dataclass(frozen=True)
class LeftPadding:
    """The two padding-size tensors of a call ([1] INT64 each, or None), read when the kernel runs."""

    query: object = None
    kv: object = None
    overflow_empty: bool = False

    def shift(self, s1: int, s2: int, act_q, act_kv) -> Shift:
        q_first, act_q = self._side(self.query, s1, act_q, "queryPaddingSize")
        kv_first, act_kv = self._side(self.kv, s2, act_kv, "kvPaddingSize")
        return Shift(q_first, kv_first, act_q, act_kv)

    def _side(self, t, size, lengths, name):
        lengths = [int(n) for n in lengths]
        if t is None:
            return [0] * len(lengths), lengths
        pad = max(int(t.read(name).reshape(-1)[0]), 0)
        fits = [size - n - pad >= 0 or not self.overflow_empty for n in lengths]
        return first_rows(size, lengths, pad), [n if ok else 0 for n, ok in zip(lengths, fits)]
