"""ScatterPaKvCache on Ascend910_95 (CANN 8.5 arch35 kernels), bit-exact (reference §3.D).

All four data tensors share one dtype and INT64 indices are honoured. Buffers arrive flat in
their storage dtype. Tasks are split over the cores in `ceil(n / cores)` blocks.
- Normal (3-D key): cache row slot[t] (H·D elements) = key row t. No negative-slot skip.
- Alibi / Rope (4-D key [B, S, H, D]): one task per (b, h); cache rows of D elements; the kernels
  skip writes to slots >= blocks·block_size themselves.
"""

import numpy as np

from .findings import OUT_OF_RANGE, Finding
from .scatter_rows import Writes, blocked_cores, rows_of

INT32_LIMIT = 1 << 31


def scatter_normal(
    cache: np.ndarray,
    src: np.ndarray,
    slots: np.ndarray,
    row_len: int,
    n_cores: int,
    what: str,
    src_name: str,
    int32_offsets: bool,
) -> list[Finding]:
    """Normal: every slot is written, negative ones included (they fall outside the cache).

    `int32_offsets`: the fully-loaded kernel multiplies INT32 slots by H·D in int32, so a product
    of 2**31 or more wraps (to a negative offset) instead of reaching the slot.
    """
    n = len(slots)
    if row_len == 0:  # zero-sized rows: nothing moves
        return []
    rows = rows_of(src, row_len)[:n]
    token = np.arange(n, dtype=np.int64)
    findings = []
    if int32_offsets and row_len:
        wraps = slots * row_len >= INT32_LIMIT
        if wraps.any():
            findings.append(
                (
                    OUT_OF_RANGE,
                    f"{what}: slots {slots[wraps][:8].tolist()} times H*D = {row_len} "
                    "overflow the kernel's int32 offset arithmetic and would be written "
                    "before the cache; aclnn-emu skips them (use INT64 slot_mapping)",
                )
            )
            token = token[~wraps]
    writes = Writes(what, rows, src_name)
    writes.findings += findings
    writes.add(slots[token], np.where(token < len(rows), token, -1), blocked_cores(n, n_cores)[token])
    return writes.apply(rows_of(cache, row_len))


def scatter_alibi(
    cache: np.ndarray,
    src: np.ndarray,
    slots,
    wins,
    seq_lens,
    shape: tuple,
    head_size: int,
    n_slots: int,
    n_cores: int,
    what: str,
    src_name: str,
) -> list[Finding]:
    """Alibi: task (b, h) copies tokens L - w + k (k < min(w, S), skipping negative ones) to slot + k."""
    batch, seq, heads = shape
    cores = blocked_cores(batch * heads, n_cores)
    writes = Writes(what, rows_of(src, head_size), src_name)
    for i in range(batch * heads):
        b, h = divmod(i, heads)
        w, length = int(wins[i]), int(seq_lens[b])
        k = np.arange(max(0, min(w, seq)), dtype=np.int64)
        k = k[length - w + k >= 0]
        target = int(slots[i]) + k
        keep = writes.within(target, n_slots)
        writes.add(target[keep], (b * seq + length - w + k[keep]) * heads + h, cores[i])
    return writes.apply(rows_of(cache, head_size))


def scatter_rope(
    cache: np.ndarray,
    src: np.ndarray,
    slots,
    wins,
    seq_lens,
    offsets,
    shape: tuple,
    head_size: int,
    n_slots: int,
    n_cores: int,
    what: str,
    src_name: str,
    mean=None,
) -> list[Finding]:
    """Rope, task (b, h) with o = offset, w = window, L = seq_len, as the arch35 kernel does it:
    1. tokens [0, min(o, S)) to slot + [0, o);
    2. the mean of tokens [o, min(o + w, S)) to slot + o (skipped when that range is empty);
    3. tokens [0, L - w - o) -- from the start of the sequence, not after the window -- to
       slot + o + 1 + [0, L - w - o), capped at S tokens.
    `mean` computes the window mean (scatter_rows.window_mean unless given: HiFloat8 data).
    """
    batch, seq, heads = shape
    cores = blocked_cores(batch * heads, n_cores)
    writes = Writes(what, rows_of(src, head_size), src_name, mean)
    for i in range(batch * heads):
        b, h = divmod(i, heads)
        first, o, w, length = int(slots[i]), int(offsets[i]), int(wins[i]), int(seq_lens[b])

        def copy(count: int, dst_start: int) -> None:
            k = np.arange(max(0, min(count, seq)), dtype=np.int64)
            target = dst_start + k
            keep = writes.within(target, n_slots)
            writes.add(target[keep], (b * seq + k[keep]) * heads + h, cores[i])

        copy(o, first)
        end = min(o + w, seq)
        if end - o > 0 and writes.within(np.array([first + o]), n_slots)[0]:
            writes.add_mean(first + o, (b * seq + np.arange(o, end, dtype=np.int64)) * heads + h, end - o, cores[i])
        if length - w - o > 0:
            copy(length - w - o, first + o + 1)
    return writes.apply(rows_of(cache, head_size))
