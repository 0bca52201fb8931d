"""Float64 reference for LightningIndexer, written from the doc's formula and the CANN 8.5 kernel,
one query row at a time.

score[j] = sum_h w[h] * relu(q[h] . k[j]) for the row's usable keys j < n, where n = Sk (sparse
mode 0) or Sk - Sq + s1 + 1 (mode 3, bottom-right causal); rows at or past a batch's actual query
length, and rows with n <= 0, get only padding. The output lists the first sparse_count keys by
descending score; ties go to the lower key index in batches of at most 4 query rows, and to the
later 512-key block (then the lower index) in longer ones; padding is index -1, value -inf.
"""

import numpy as np


def order(scores: np.ndarray, small_batch: bool) -> list:
    """Key positions in output order."""
    tie = (lambda j: (j,)) if small_batch else (lambda j: (-(j // 512), j))
    return sorted(range(len(scores)), key=lambda j: (-scores[j], *tie(j)))


def row_scores(q, keys, w) -> np.ndarray:
    """Index scores of one query row [H, D] against keys [n, D] with weights [H], in float64."""
    s = q.astype(np.float64) @ keys.astype(np.float64).T
    return (np.maximum(s, 0.0) * w.astype(np.float64)[:, None]).sum(axis=0)


def reference(
    query,
    key,
    weights,
    *,
    sparse_count,
    sparse_mode,
    layout="BSND",
    cu_seq_q=None,
    cu_seq_k=None,
    act_q=None,
    act_k=None,
    block_table=None,
):
    """(indices int32 [rows, sparse_count], scores float64 [rows, sparse_count]) over flat query rows.

    BSND: query [B,S1,H,D], key [B,S2,1,D] (or with block_table: [blocks, block_size, 1, D]),
    weights [B,S1,H]; act_q / act_k are per-batch lengths. TND: query [T1,H,D], key [T2,1,D],
    weights [T1,H]; cu_seq_q / cu_seq_k are cumulative end offsets.
    """
    heads, dim = query.shape[-2], query.shape[-1]
    if layout == "BSND":
        batch, s1 = query.shape[:2]
        q_spans = [(b * s1, b * s1 + (s1 if act_q is None else int(act_q[b])), s1) for b in range(batch)]
        s2 = key.shape[1] if block_table is None else block_table.shape[1] * key.shape[1]
        k_lens = [s2 if act_k is None else int(act_k[b]) for b in range(batch)]
    else:
        ends = np.asarray(cu_seq_q, np.int64)
        starts = np.concatenate(([0], ends[:-1]))
        q_spans = [(int(a), int(e), int(e - a)) for a, e in zip(starts, ends)]
        k_ends = np.asarray(cu_seq_k, np.int64)
        k_lens = list(np.diff(np.concatenate(([0], k_ends))))
    q = query.reshape(-1, heads, dim)
    w = weights.reshape(-1, heads)
    flat_key = key.reshape(-1, dim)
    rows = q.shape[0]
    indices = np.full((rows, sparse_count), -1, np.int32)
    scores = np.full((rows, sparse_count), -np.inf)
    for b, (start, end, _) in enumerate(q_spans):
        len_q, len_k = end - start, k_lens[b]
        keys = _batch_keys(flat_key, key, b, len_k, layout, block_table, cu_seq_k)
        for s1 in range(len_q):
            n = len_k if sparse_mode == 0 else min(max(len_k - len_q + s1 + 1, 0), len_k)
            sc = row_scores(q[start + s1], keys[:n], w[start + s1])
            chosen = order(sc, len_q <= 4)[:sparse_count]
            indices[start + s1, : len(chosen)] = chosen
            scores[start + s1, : len(chosen)] = sc[chosen]
    return indices, scores


def _batch_keys(flat_key, key, b, length, layout, block_table, cu_seq_k):
    if block_table is not None:
        block = key.shape[1]
        pos = np.arange(length)
        return flat_key[block_table[b][pos // block] * block + pos % block]
    if layout == "BSND":
        return key[b, :length, 0]
    start = 0 if b == 0 else int(cu_seq_k[b - 1])
    return flat_key[start : start + length]
