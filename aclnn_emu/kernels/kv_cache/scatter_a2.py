"""ScatterPaKvCache on Atlas A2/A3 (CANN 8.5 Membase kernels), bit-exact.

Buffers arrive flat, from the tensor's first element to the end of its storage, and are indexed
the way the kernels index global memory (reference §3.C):
- ND paths (Normal, Nct, key-only) and the compress modes move data in units of the *key's*
  element type, the value included; the op module hands the value buffers over reinterpreted as
  the key dtype, which reproduces the mixed-size behaviour exactly.
- PA_NZ honours both dtypes and INT64 slots.
Slots, windows, lengths and offsets are passed as the kernel reads them (the op module turns INT64
buffers into the int32 words the ND and compress kernels read).
"""

import numpy as np

from .findings import OUT_OF_BOUNDS_READ, Finding
from .layouts import NzLayout
from .scatter_rows import (
    Writes,
    balanced_cores,
    blocked_cores,
    copy_rows,
    last_writes,
    outside_finding,
    race_finding,
    rows_of,
    strided_rows,
)


def scatter_nd(
    cache: np.ndarray,
    src: np.ndarray,
    slots: np.ndarray,
    row_len: int,
    n_cores: int,
    what: str,
    src_name: str,
    stride: int | None = None,
    offset: int = 0,
) -> list[Finding]:
    """Normal / Nct / key-only: row t (H·D units) goes to cache row slot[t]; negative slots are skipped.

    Nct reads row t at unit offset t·stride + offset instead of t·row_len.
    """
    n = len(slots)
    if stride is None:
        rows = rows_of(src, row_len)
        readable = min(n, len(rows))
        rows = rows[:readable]
    else:
        rows, readable = strided_rows(src, n, row_len, stride, offset)
    token = np.arange(n, dtype=np.int64)
    if readable < n:
        token[readable:] = -1  # rows the kernel would read outside src
    writes = Writes(what, rows, src_name)
    cores = balanced_cores(n, n_cores)
    live = slots >= 0
    if live.all():
        writes.add(slots, token, cores)
    else:
        writes.add(slots[live], token[live], cores[live])
    return writes.apply(rows_of(cache, row_len))


def scatter_nz(pairs: list[tuple[np.ndarray, np.ndarray, str]], slots: np.ndarray, n_cores: int) -> list[Finding]:
    """PA_NZ for (cache, src2d, name) pairs sharing one slot mapping: caches [blocks, H·D/last,
    block_size, last]; token t's 32-byte piece c goes to cache[slot // block_size, c, slot % block_size].
    Negative slots are skipped."""
    n_blocks, _, block_size, _ = pairs[0][0].shape
    token = np.arange(len(slots), dtype=np.int64)
    live = slots >= 0
    outside = live & (slots >= n_blocks * block_size)
    token, target = token[live & ~outside], slots[live & ~outside]
    last, race = last_writes(target, blocked_cores(len(slots), n_cores)[token], n_blocks * block_size)
    findings = []
    for _, _, what in pairs:
        if outside.any():
            findings.append(outside_finding(what, slots[outside], n_blocks * block_size))
        if race is not None:
            findings.append(race_finding(what, race))
    if last is not None:
        token, target = token[last], target[last]
    order = np.argsort(target)  # the slot order both writes copy in, sorted once (distinct slots)
    token, target = token[order], target[order]
    for cache, src2d, _ in pairs:
        NzLayout(block_size, cache.shape[1]).write(cache, src2d, target, token * src2d.strides[0])
    return findings


def scatter_nhsd(
    cache: np.ndarray,
    src: np.ndarray,
    slots: np.ndarray,
    heads: int,
    head_size: int,
    block_size: int,
    n_cores: int,
    what: str,
) -> list[Finding]:
    """NHSD (branch 9.1.0): caches [blocks, heads, block_size, head_size]; head h of token t goes to row
    (slot // block_size)·heads·block_size + h·block_size + slot % block_size of head_size units, with C's division
    (toward zero), so a negative slot lands before its block: no slot is skipped. Rows outside the cache are
    reported and skipped; tokens are split over the cores in blocks (DoNHSDOpTiling)."""
    n = len(slots)
    quotient = np.where(slots < 0, -(-slots // block_size), slots // block_size)
    base = quotient * heads * block_size + (slots - quotient * block_size)
    target = (base[:, None] + np.arange(heads, dtype=np.int64) * block_size).reshape(-1)
    token_rows = np.arange(n * heads, dtype=np.int64)
    cores = np.repeat(blocked_cores(n, n_cores), heads)
    rows = rows_of(cache, head_size)
    limit = len(rows)
    outside = (target < 0) | (target >= limit)
    findings = [outside_finding(what, np.repeat(slots, heads)[outside], limit)] if outside.any() else []
    target, token_rows, cores = target[~outside], token_rows[~outside], cores[~outside]
    last, race = last_writes(target, cores, limit)
    if race is not None:
        findings.append(race_finding(what, race))
    if last is not None:
        target, token_rows = target[last], token_rows[last]
    copy_rows(rows, target, rows_of(src, head_size), token_rows)
    return findings


def scatter_alibi(
    cache: np.ndarray,
    src: np.ndarray,
    slots,
    wins,
    seq_lens,
    heads: int,
    head_size: int,
    n_cores: int,
    what: str,
    src_name: str,
) -> list[Finding]:
    """Alibi: task i = b·H + h copies the last w = wins[i] tokens of batch b, head h, to cache rows
    slot[i] .. slot[i]+w-1 (rows of head_size units; no negative-slot skip, no clamp of w)."""
    cores = balanced_cores(len(seq_lens) * heads, n_cores)
    writes = Writes(what, rows_of(src, head_size), src_name)
    for i, h, w, end in alibi_tasks(wins, seq_lens, heads, writes.findings, what):
        j = np.arange(w, dtype=np.int64)
        writes.add(int(slots[i]) + j, (end - w + j) * heads + h, cores[i])
    return writes.apply(rows_of(cache, head_size))


def alibi_tasks(wins, seq_lens, heads: int, findings: list, what: str):
    """Alibi's tasks i = b·H + h as (i, h, w, end of batch b: the inclusive prefix sum of seq_lens);
    a negative window is reported and its task skipped."""
    ends = np.cumsum(np.asarray(seq_lens, dtype=np.int64))
    for i in range(len(seq_lens) * heads):
        w = int(wins[i])
        if w < 0:
            findings.append(bad_task(what, i, f"compress_lens {w}"))
            continue
        yield i, i % heads, w, int(ends[i // heads])


def bad_task(what: str, task: int, detail: str) -> Finding:
    return (
        OUT_OF_BOUNDS_READ,
        f"{what}: task {task} has {detail}; the kernel's unsigned arithmetic then copies "
        "far outside the input, aclnn-emu skips this task",
    )


def rope_plans(slots, wins, seq_lens, offsets, heads: int) -> list[tuple]:
    """Per task i = b·H + h: (first cache row, rows before the window, window length, rows after it).

    The kernel's ParamSet: an offset of -1 or a window of 0 means "no compression" (offset := L);
    an offset equal to L also clears the window. Rope writes the window's mean at first + o and the
    tail after it; Omni drops the window and writes the tail at first + o.
    """
    starts = np.concatenate(([0], np.cumsum(np.asarray(seq_lens, dtype=np.int64))[:-1]))  # exclusive prefix
    plans = []
    for i in range(len(seq_lens) * heads):
        b = i // heads
        length, w, o = int(seq_lens[b]), int(wins[i]), int(offsets[i])
        if o == -1 or w == 0:
            o = length
        if o == length:
            w = 0
        tail = length - o - w if w != 0 else 0
        plans.append((int(slots[i]), int(starts[b]), o, w, tail))
    return plans


def scatter_rope(
    cache: np.ndarray,
    src: np.ndarray,
    plans: list[tuple],
    heads: int,
    head_size: int,
    first_task: int,
    n_tasks: int,
    n_cores: int,
    omni: bool,
    what: str,
    src_name: str,
) -> list[Finding]:
    """Rope / Omni for one cache (key tasks are 0..BH-1, value tasks BH..2BH-1 on the cores).

    Per task (order as in the kernel): Rope's window mean at first + o (fp32 sum in token order,
    fp32 divide by w, CAST_RINT), then rows [0, o) to first + [0, o), then the tail rows
    [o + w, L) to first + o + 1 (Rope) or first + o (Omni).
    """
    cores = balanced_cores(n_tasks, n_cores)
    writes = Writes(what, rows_of(src, head_size), src_name)
    for i, (first, batch_start, o, w, tail) in enumerate(plans):
        h = i % heads
        core = cores[first_task + i]
        if o < 0 or w < 0 or tail < 0:
            writes.findings.append(
                bad_task(what, i, f"compress_seq_offset {o} and compress_lens {w} outside its sequence")
            )
            continue
        if w and not omni:
            writes.add_mean(first + o, (batch_start + o + np.arange(w)) * heads + h, w, core)
        writes.add(first + np.arange(o), (batch_start + np.arange(o)) * heads + h, core)
        gap = 0 if omni else 1
        writes.add(first + o + gap + np.arange(tail), (batch_start + o + w + np.arange(tail)) * heads + h, core)
    return writes.apply(rows_of(cache, head_size))
