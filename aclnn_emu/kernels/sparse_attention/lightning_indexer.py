"""LightningIndexer: per query row, the top-k keys by index score, as the CANN 8.5 kernel selects them.

For query row r (G = N1 query heads, one key head) and key position j < valid[r]:

    S[g, j]   = fp32( q[r, g] . k[j] )            (cube, fp32 accumulate)
    R[g, j]   = relu(S[g, j])                     (fixpipe reluPre)
    score[j]  = sum_g fp32(w[r, g]) * R[g, j]     (vector unit, its summation order, see _head_sum)

``valid[r]`` is the batch's key count (sparse mode 0) or the bottom-right causal count
``Sk - Sq + s1 + 1`` (mode 3); a row with none gets only padding. The kernel keeps the best 2048
(score, index) pairs of a row in descending score order and writes the first ``sparse_count``:
positions past the valid keys are padding, index -1 and value -inf. Values are the fp32 scores
narrowed with CAST_ROUND.

Tie order (AscendC Sort32 puts the lower index first on equal scores; MrgSort is taken to prefer
its lower-numbered queue, inferred): a batch with at most 4 query rows keeps ties in ascending key
index; a longer batch merges each new 512-key block in front of the list so far, so among equal
scores a later 512-key block wins, and inside a block the lower index. The 8.5 kernel also merges
the partial lists of AI cores that split one row's keys, in core order; that depends on the core
split and is not reproduced (rows whose keys one core handles, and every tie inside a core's
range, follow the rule above).

Work goes in steps of rows of one batch against chunks of its keys, so memory is O(rows x chunk),
never S1 x S2; steps run on the kernel worker threads and write disjoint output rows.
"""

import dataclasses

import numpy as np

from aclnn_emu.kernels.casts import FP32, cast_round
from aclnn_emu.kernels.parallel import checkpoint, map_ordered
from aclnn_emu.kernels.sparse_attention.key_rows import KeyRows

KEEP = 2048  # entries the kernel keeps per row (BASE_TOPK)
SORT_BLOCK = 512  # keys per vector-unit sort (s2BaseSize)
SMALL_BATCH = 4  # batches with at most this many query rows keep ties in index order
HEAD_SLOTS = 16  # heads summed per vector pass (groupInner)
KEY_CHUNK = 2048  # keys per step
ELEMENT_BUDGET = 1 << 19  # fp32 elements of one step's [rows, G, keys] score block
PAD = np.uint64(np.iinfo(np.uint64).max)
_BLOCK_BITS = 9  # log2(SORT_BLOCK)
_BLOCK_LIMIT = (1 << 22) - 1


@dataclasses.dataclass(frozen=True)
class Rows:
    """Per query row: its batch, the number of leading key positions it may select, whether it
    is computed at all (TND rows past the last offset are not), and its batch's query length."""

    batch: np.ndarray  # int64 [R]
    valid: np.ndarray  # int64 [R]
    computed: np.ndarray  # bool [R]
    seq_q: np.ndarray  # int64 [R]


def lightning_indexer(
    query, key, weights, rows: Rows, keys: KeyRows, sparse_count: int, indices_out: np.ndarray, values_out=None
) -> None:
    """Fill ``indices_out`` [R, sparse_count] int32 (and ``values_out`` [R, sparse_count] in the
    query dtype, if given) for every computed row; other rows are left as they are.

    query [R, G, D] fp16/bf16, key [T2, D], weights [R, G]; ``keys`` maps batch positions to rows
    of ``key``.
    """
    steps = _steps(rows, query.shape[1])
    map_ordered(
        lambda step: _step(query, key, weights, rows, keys, sparse_count, indices_out, values_out, *step), steps
    )


def _steps(rows: Rows, heads: int) -> list:
    """(first row, end row) runs of computed rows of one batch, each within the element budget."""
    per_step = max(1, ELEMENT_BUDGET // (max(heads, 1) * KEY_CHUNK))
    steps, r, total = [], 0, len(rows.batch)
    while r < total:
        if not rows.computed[r]:
            r += 1
            continue
        end = r + 1
        while end < total and end - r < per_step and rows.computed[end] and rows.batch[end] == rows.batch[r]:
            end += 1
        steps.append((r, end))
        r = end
    return steps


def _step(query, key, weights, rows: Rows, keys: KeyRows, sparse_count, indices_out, values_out, r0, r1):
    batch, valid = int(rows.batch[r0]), rows.valid[r0:r1]
    small = rows.seq_q[r0] <= SMALL_BATCH
    keep = min(sparse_count, KEEP)
    best = np.full((r1 - r0, keep), PAD, np.uint64)
    q = query[r0:r1].astype(FP32).reshape(-1, query.shape[2])
    w = weights[r0:r1].astype(FP32)
    length = int(valid.max(initial=0))
    for c0 in range(0, length, KEY_CHUNK):
        checkpoint()
        c1 = min(c0 + KEY_CHUNK, length)
        k = key[keys.span(batch, c1)][c0:] if keys.table is None else key[keys.rows(batch, np.arange(c0, c1))]
        s = np.matmul(q, k.astype(FP32).T).reshape(r1 - r0, -1, c1 - c0)
        score = head_sum(s, w)
        order = _order_keys(score, np.arange(c0, c1, dtype=np.int64), small)
        order[np.arange(c0, c1)[None, :] >= valid[:, None]] = PAD
        best = _keep_best(np.concatenate([best, order], axis=1), keep)
    best.sort(axis=1)
    idx, score = _decode(best, small)
    cols = min(sparse_count, keep)
    indices_out[r0:r1, :cols] = idx[:, :cols]
    indices_out[r0:r1, cols:] = -1
    if values_out is not None:
        values = np.full((r1 - r0, sparse_count), -np.inf, FP32)
        values[:, :cols] = score[:, :cols]
        values_out[r0:r1] = cast_round(values, values_out.dtype)


def head_sum(s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum_g w[r, g] * relu(s[r, g, j]) in the vector unit's order (s [R, G, L] is overwritten).

    Heads go in passes of 16: slot i accumulates heads i, 16+i, 32+i, ... one pass after the
    other (DoScale), then the slots are halved pairwise down to one (DoReduce: the slots past the
    largest power of two first, then halves).
    """
    np.maximum(s, 0, out=s)
    s *= w[:, :, None]
    heads = s.shape[1]
    slots = min(HEAD_SLOTS, heads)
    for g0 in range(HEAD_SLOTS, heads, HEAD_SLOTS):
        n = min(HEAD_SLOTS, heads - g0)
        s[:, :n] += s[:, g0 : g0 + n]
    if slots == 1:
        return s[:, 0] + FP32.type(0)
    half = slots if slots <= 2 else 1 << (slots.bit_length() - 1)
    if slots > half:
        s[:, : slots - half] += s[:, half:slots]
    while half > 2:
        half //= 2
        s[:, :half] += s[:, half : 2 * half]
    return s[:, 0] + s[:, 1]


def _order_keys(score: np.ndarray, positions: np.ndarray, small: bool) -> np.ndarray:
    """uint64 keys whose ascending order is the kernel's output order: descending score, then the
    tie rule (see the module docstring)."""
    bits = (score + FP32.type(0)).view(np.uint32)  # + 0 turns -0.0 into 0.0: they tie
    ascending = np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))
    tie = (
        positions
        if small
        else (((_BLOCK_LIMIT - (positions >> _BLOCK_BITS)) << _BLOCK_BITS) | (positions & (SORT_BLOCK - 1)))
    )
    return ((~ascending).astype(np.uint64) << np.uint64(32)) | tie.astype(np.uint64)[None, :]


def _keep_best(keys: np.ndarray, keep: int) -> np.ndarray:
    if keys.shape[1] <= keep:
        return keys
    return np.partition(keys, keep - 1, axis=1)[:, :keep]


def _decode(keys: np.ndarray, small: bool):
    """(indices int32, scores fp32) of sorted keys; padding gives -1 and -inf."""
    pad = keys == PAD
    tie = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64)
    idx = tie if small else (((_BLOCK_LIMIT - (tie >> _BLOCK_BITS)) << _BLOCK_BITS) | (tie & (SORT_BLOCK - 1)))
    ascending = ~((keys >> np.uint64(32)).astype(np.uint32))
    bits = np.where(ascending & np.uint32(0x80000000), ascending & np.uint32(0x7FFFFFFF), ~ascending)
    score = bits.view(np.float32).copy()
    score[pad] = -np.inf
    return np.where(pad, -1, idx).astype(np.int32), score
