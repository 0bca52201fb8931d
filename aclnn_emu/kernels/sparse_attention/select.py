"""Which keys each query row of SparseFlashAttentionGrad attends to.

A row's sparse indices name key *blocks* of ``block_size`` positions within its batch. The row uses
the entries before the first -1; block ``i`` covers positions ``[i*bs, i*bs + len)`` where ``len``
is ``bs`` except for the sequence's tail block, which is cut at the key length. In sparse mode 3
the NPU masks (logit -> -FLT_MAX) only inside the block that straddles the bottom-right diagonal,
and only its last occurrence within each 512-position chunk of the row's block list (the chunk the
kernel gathers at once); blocks wholly past the diagonal are not masked.

Inputs the NPU kernel does not handle (out-of-range indices, TND rows outside the sequence table)
or handles only under assumptions it does not check (for block sizes above 1: ascending indices
whose last entry is the tail/diagonal block) are passed to ``report(kind, message)``; the emulator
then computes the plain maths (out-of-range entries dropped) instead of the hardware's garbage.
"""

from dataclasses import dataclass

import numpy as np

CHUNK_POSITIONS = 512  # the NPU kernel gathers 512 // block_size selected blocks at a time


@dataclass(frozen=True)
class RowSpans:
    """Per query row: where its batch lives. Arrays of length T1 (int64, valid: bool)."""

    s1: np.ndarray  # position of the row inside its batch
    sq: np.ndarray  # query length of the batch
    sk: np.ndarray  # key length of the batch
    kbase: np.ndarray  # global key row where the batch starts
    valid: np.ndarray  # False for rows no batch covers (TND table shorter than T1)


def bsnd_rows(batch: int, s1: int, s2: int) -> RowSpans:
    """Rows of a [B, S1, ...] query: batch b owns key rows [b*S2, (b+1)*S2)."""
    rows = np.arange(batch * s1, dtype=np.int64)
    full = lambda v: np.full(rows.shape, v, dtype=np.int64)
    return RowSpans(
        s1=rows % max(s1, 1), sq=full(s1), sk=full(s2), kbase=(rows // max(s1, 1)) * s2, valid=np.ones(rows.shape, bool)
    )


def tnd_rows(t1: int, cu_q: np.ndarray, cu_kv: np.ndarray, report) -> RowSpans:
    """Rows of a [T1, ...] query split by cumulative end offsets ``cu_q`` / ``cu_kv``.

    Batch b owns query rows [cu_q[b-1], cu_q[b]) and key rows [cu_kv[b-1], cu_kv[b]) (with
    cu[-1] = 0). The kernel finds a row's batch by walking cu_q forward, so rows at or past the
    last offset read past the table: they are reported and left out (their dq is zero).
    """
    cu_q = np.asarray(cu_q, dtype=np.int64)
    cu_kv = np.asarray(cu_kv, dtype=np.int64)
    if len(cu_kv) < len(cu_q):
        report(
            "index-out-of-range",
            f"actualSeqLengthsKv has {len(cu_kv)} entries but actualSeqLengthsQuery has "
            f"{len(cu_q)}; the kernel reads past the end of actualSeqLengthsKv",
        )
        cu_q = cu_q[: len(cu_kv)]
    if (
        np.any(np.diff(cu_q) < 0)
        or np.any(np.diff(cu_kv[: len(cu_q)]) < 0)
        or (len(cu_q) and (cu_q[0] < 0 or cu_kv[0] < 0))
    ):
        report(
            "undefined-behaviour",
            "actual sequence lengths must be non-decreasing cumulative offsets (prefix sums), "
            f"got query {cu_q.tolist()[:8]} kv {cu_kv.tolist()[:8]}",
        )
    rows = np.arange(t1, dtype=np.int64)
    b = np.searchsorted(cu_q, rows, side="right")
    valid = b < len(cu_q)
    if not valid.all():
        report(
            "index-out-of-range",
            f"query rows {int(rows[~valid][0])}..{t1 - 1} lie past the last cumulative offset "
            f"{int(cu_q[-1]) if len(cu_q) else 0} of actualSeqLengthsQuery; they are skipped",
        )
    bv = np.minimum(b, max(len(cu_q) - 1, 0))
    start_q = np.where(bv > 0, cu_q[bv - 1], 0) if len(cu_q) else rows * 0
    start_k = np.where(bv > 0, cu_kv[bv - 1], 0) if len(cu_q) else rows * 0
    end_q = cu_q[bv] if len(cu_q) else rows * 0
    end_k = cu_kv[bv] if len(cu_q) else rows * 0
    return RowSpans(s1=rows - start_q, sq=end_q - start_q, sk=end_k - start_k, kbase=start_k, valid=valid)


def selected_counts(indices: np.ndarray) -> np.ndarray:
    """Entries before the first -1 of each row of ``indices`` [T1, K]."""
    stop = indices == -1
    return np.where(stop.any(axis=1), stop.argmax(axis=1), indices.shape[1])


@dataclass(frozen=True)
class Selection:
    """Key positions of one query row: global key rows and the mode-3 mask, same length."""

    positions: np.ndarray  # int64
    masked: np.ndarray  # bool: logit replaced by -FLT_MAX


def select_row(
    ids: np.ndarray, s1: int, sq: int, sk: int, kbase: int, *, block_size: int, causal: bool, num_keys: int, report
) -> Selection:
    """Expand one row's block indices (already cut at the first -1) into key positions."""
    bs = block_size
    last_block = -(-sk // bs)
    ids = ids.astype(np.int64)
    bad = (ids < 0) | (ids >= last_block)
    if bad.any():
        report(
            "index-out-of-range",
            f"sparse index {int(ids[bad][0])} of query row {s1} (batch-local) is outside "
            f"[0, {last_block}) for key length {sk} and block size {bs}; the NPU reads and "
            "writes outside the batch here, the emulator skips the entry",
        )
        keep = ~bad
        ids, order = ids[keep], np.flatnonzero(keep)
    else:
        order = np.arange(len(ids))
    lengths = np.where(ids == last_block - 1, sk - ids * bs, bs)
    if bs > 1 and len(ids):
        _check_block_layout(ids, order, lengths, s1, sq, sk, bs, causal, report)
    starts = kbase + ids * bs
    if bs == 1:
        positions = starts
    else:
        ends = np.cumsum(lengths)
        positions = np.arange(ends[-1] if len(ends) else 0, dtype=np.int64) - np.repeat(
            ends - lengths - starts, lengths
        )
    masked = np.zeros(len(positions), dtype=bool)
    if causal and bs > 1:
        _mask_diagonal_block(masked, ids, order, lengths, s1 + sk - sq, bs)
    beyond = positions >= num_keys
    if beyond.any():
        report(
            "index-out-of-range",
            f"query row {s1} selects key row {int(positions[beyond][0])} but key has only "
            f"{num_keys} rows; the emulator skips it",
        )
        positions, masked = positions[~beyond], masked[~beyond]
    return Selection(positions, masked)


def _mask_diagonal_block(masked, ids, order, lengths, valid_end, bs):
    """Mask positions past ``valid_end`` in the last straddling block of each 512-chunk."""
    if valid_end < 0:
        return
    diag = valid_end // bs
    offsets = np.cumsum(lengths) - lengths
    hits = np.flatnonzero(ids == diag)
    per_chunk = CHUNK_POSITIONS // bs
    chunks = order[hits] // per_chunk
    last_in_chunk = hits[np.r_[chunks[1:] != chunks[:-1], True]] if len(hits) else hits
    keep = valid_end - diag * bs + 1
    for h in last_in_chunk:
        masked[offsets[h] + keep : offsets[h] + lengths[h]] = True


def _check_block_layout(ids, order, lengths, s1, sq, sk, bs, causal, report):
    """Report index lists on which the NPU kernel's block bookkeeping gives other results.

    The kernel gives every block of a 512-chunk ``bs`` rows except: the tail block (and, as the
    length is never reset, every later block of the same chunk) gets the tail length, and the
    row's last selected block scatters only ``curMaxS2 % bs`` rows to dK/dV/dQ.
    """
    per_chunk = CHUNK_POSITIONS // bs
    tail = np.flatnonzero(lengths < bs)
    after = np.arange(tail[0] + 1, len(ids)) if len(tail) else tail
    same_chunk = order[after] // per_chunk == (order[tail[0]] // per_chunk if len(tail) else -1)
    if np.any(same_chunk & (lengths[after] == bs)):
        report(
            "undefined-behaviour",
            f"query row {s1}: blocks follow the short tail block {int(ids[tail[0]])} in the "
            "same 512-position chunk; the NPU kernel truncates them to the tail length",
        )
    cur_max = s1 + sk - sq + 1 if causal else sk
    last_len = cur_max % bs or bs
    used = lengths[-1]
    if causal and ids[-1] * bs <= cur_max - 1 < (ids[-1] + 1) * bs:
        used = cur_max - ids[-1] * bs  # the masked part of the diagonal block adds nothing
    if used != last_len:
        report(
            "undefined-behaviour",
            f"query row {s1}: the last selected block {int(ids[-1])} contributes {int(used)} "
            f"keys but the NPU kernel scatters {last_len} (it expects indices ascending up to "
            "the tail or diagonal block)",
        )
    if causal and bs > 64 and np.any(ids == (cur_max - 1) // bs):
        report(
            "undefined-behaviour",
            f"sparseMode 3 with sparseBlockSize {bs} > 64: the NPU mask covers at most 64 "
            "positions of the diagonal block",
        )
