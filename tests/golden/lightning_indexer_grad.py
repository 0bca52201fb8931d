"""Float64 reference for LightningIndexerGrad, written from reference §1.B, one query row at a time.

Forward: I[t, s] = sum_h w[t, h] * relu(q[t, h, :] . k[s, :]) over the top-K keys s = idx[t, j].
Backward as the CANN 8.5 kernel does it: only the first n entries of an index row count (n = topK
in sparse mode 0, else clamp(Sk - Sq + s1 + 1, 0, topK)); Y = w*dy is rounded to the input dtype
before the ReLU mask; relu'(0) = 0; duplicates contribute once per occurrence; no scale.
Entries outside the batch's keys are skipped (aclnn-emu's rule for what is undefined on hardware).
"""

import numpy as np


def _row_grad(q, keys, dy, w, ids, n, seq_k, dtype):
    """dq [H, D], dweights [H], and (key rows, dk contributions) for one query row, in float64."""
    ids = ids[:n].astype(np.int64)
    keep = (ids >= 0) & (ids < seq_k)
    ids, dy = ids[keep], dy[:n][keep].astype(np.float64)
    k = keys[ids].astype(np.float64)  # [m, D]
    scores = q.astype(np.float64) @ k.T  # [H, m]
    y = (w.astype(np.float64)[:, None] * dy[None, :]).astype(dtype).astype(np.float64)
    g = np.where(scores > 0, y, 0.0)
    return g @ k, np.maximum(scores, 0.0) @ dy, ids, g.T @ q.astype(np.float64)


def _usable(sparse_mode, top_k, seq_q, seq_k, s1):
    return top_k if sparse_mode == 0 else min(max(seq_k - seq_q + s1 + 1, 0), top_k)


def reference(query, key, dy, indices, weights, *, layout="BSND", sparse_mode=3, cu_seq_q=None, cu_seq_k=None):
    """Returns dq, dk, dweights as float64 arrays shaped like query, key, weights.

    BSND: query [B,S1,H,D], key [B,S2,1,D], dy/indices [B,S1,topK], weights [B,S1,H].
    TND:  query [T1,H,D],   key [T2,1,D],   dy/indices [T1,topK],   weights [T1,H];
          cu_seq_q / cu_seq_k are cumulative end offsets per batch.
    """
    dtype = query.dtype
    dq, dk, dw = (np.zeros(a.shape, np.float64) for a in (query, key, weights))
    top_k = dy.shape[-1]
    if layout == "BSND":
        batches = [(b, query[b], key[b, :, 0], dy[b], indices[b], weights[b]) for b in range(query.shape[0])]
        outs = [(dq[b], dk[b, :, 0], dw[b]) for b in range(query.shape[0])]
    else:
        starts_q = np.concatenate(([0], cu_seq_q[:-1]))
        starts_k = np.concatenate(([0], cu_seq_k[:-1]))
        spans = list(zip(starts_q, cu_seq_q, starts_k, cu_seq_k))
        batches = [
            (b, query[a:e], key[c:f, 0], dy[a:e], indices[a:e], weights[a:e]) for b, (a, e, c, f) in enumerate(spans)
        ]
        outs = [(dq[a:e], dk[c:f, 0], dw[a:e]) for a, e, c, f in spans]
    for (_, q, k, g, ids, w), (dq_b, dk_b, dw_b) in zip(batches, outs):
        seq_q, seq_k = q.shape[0], k.shape[0]
        for s1 in range(seq_q):
            n = _usable(sparse_mode, top_k, seq_q, seq_k, s1)
            dq_b[s1], dw_b[s1], rows, contrib = _row_grad(q[s1], k, g[s1], w[s1], ids[s1], n, seq_k, dtype)
            np.add.at(dk_b, rows, contrib)
    return dq, dk, dw


def make_case(
    rng,
    dtype,
    layout,
    sparse_mode,
    *,
    batch=2,
    seq_q=8,
    seq_k=48,
    lengths_q=None,
    lengths_k=None,
    top_k=16,
    duplicates=True,
    heads=64,
    dim=128,
):
    """Random inputs shaped like the op's, with index rows as the forward emits them: the first n
    entries are keys of the row's batch (with repeats if `duplicates`), the rest are -1.

    TND takes per-batch `lengths_q` / `lengths_k`; returns a dict of arrays (cu_seq_* for TND).
    """
    if layout == "BSND":
        lengths_q, lengths_k = [seq_q] * batch, [seq_k] * batch
    rows = []
    for len_q, len_k in zip(lengths_q, lengths_k):
        for s1 in range(len_q):
            n = _usable(sparse_mode, top_k, len_q, len_k, s1)
            pool = max(1, min(len_k, n // 2)) if duplicates else len_k
            row = np.full(top_k, -1, np.int32)
            if n and len_k:
                picks = rng.integers(0, pool, n) if duplicates else rng.permutation(len_k)[:n]
                row[: len(picks)] = picks
            rows.append(row)
    total_q, total_k = sum(lengths_q), sum(lengths_k)
    normal = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    case = dict(
        query=normal(total_q, heads, dim),
        key=normal(total_k, 1, dim),
        dy=normal(total_q, top_k),
        indices=np.stack(rows) if rows else np.zeros((0, top_k), np.int32),
        weights=normal(total_q, heads) * np.float32(0.25),
    )
    case = {name: (a if a.dtype == np.int32 else a.astype(dtype)) for name, a in case.items()}
    if layout == "BSND":
        for name in case:
            per_batch = seq_k if name == "key" else seq_q
            case[name] = case[name].reshape(batch, per_batch, *case[name].shape[1:])
    else:
        case["cu_seq_q"] = np.cumsum(lengths_q).astype(np.int32)
        case["cu_seq_k"] = np.cumsum(lengths_k).astype(np.int32)
    return case
