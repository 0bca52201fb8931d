"""Float64 reference for LightningIndexerGrad, written from reference §1.B, one query row at a time.

Forward: I[t, s] = sum_h w[t, h] * relu(q[t, h, :] . k[s, :]) over the top-K keys s = idx[t, j].
Backward as the CANN 8.5 kernel does it: only the first n entries of an index row count (n = topK
in sparse mode 0, else clamp(Sk - Sq + s1 + 1, 0, topK)); Y = w*dy is rounded to the input dtype
before the ReLU mask; relu'(0) = 0; duplicates contribute once per occurrence; no scale.
Entries outside the batch's keys are skipped (aclnn-emu's rule for what is undefined on hardware).
Also the precision check of CANN's standard ("double thousandth" and friends).
"""
import ml_dtypes
import numpy as np

RTOL = {np.dtype(np.float16): 1e-3, np.dtype(ml_dtypes.bfloat16): 4e-3, np.dtype(np.float32): 1e-4}
SMALL, ATOL = 1e-3, 1e-5      # |golden| <= SMALL is judged by absolute error (msprobe convention)


def _row_grad(q, keys, dy, w, ids, n, seq_k, dtype):
    """dq [H, D], dweights [H], and (key rows, dk contributions) for one query row, in float64."""
    ids = ids[:n].astype(np.int64)
    keep = (ids >= 0) & (ids < seq_k)
    ids, dy = ids[keep], dy[:n][keep].astype(np.float64)
    k = keys[ids].astype(np.float64)                       # [m, D]
    scores = q.astype(np.float64) @ k.T                    # [H, m]
    y = (w.astype(np.float64)[:, None] * dy[None, :]).astype(dtype).astype(np.float64)
    g = np.where(scores > 0, y, 0.0)
    return g @ k, np.maximum(scores, 0.0) @ dy, ids, g.T @ q.astype(np.float64)


def _usable(sparse_mode, top_k, seq_q, seq_k, s1):
    return top_k if sparse_mode == 0 else min(max(seq_k - seq_q + s1 + 1, 0), top_k)


def reference(query, key, dy, indices, weights, *, layout="BSND", sparse_mode=3,
              cu_seq_q=None, cu_seq_k=None):
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
        batches = [(b, query[a:e], key[c:f, 0], dy[a:e], indices[a:e], weights[a:e])
                   for b, (a, e, c, f) in enumerate(spans)]
        outs = [(dq[a:e], dk[c:f, 0], dw[a:e]) for a, e, c, f in spans]
    for (_, q, k, g, ids, w), (dq_b, dk_b, dw_b) in zip(batches, outs):
        seq_q, seq_k = q.shape[0], k.shape[0]
        for s1 in range(seq_q):
            n = _usable(sparse_mode, top_k, seq_q, seq_k, s1)
            dq_b[s1], dw_b[s1], rows, contrib = _row_grad(q[s1], k, g[s1], w[s1], ids[s1], n, seq_k, dtype)
            np.add.at(dk_b, rows, contrib)
    return dq, dk, dw


def precision_ratio(actual, golden, dtype) -> float:
    """Share of elements within CANN's tolerance for `dtype` (relative error; absolute near zero)."""
    actual = np.asarray(actual, np.float64).ravel()
    golden = np.asarray(golden, np.float64).ravel()
    if golden.size == 0:
        return 1.0
    err = np.abs(actual - golden)
    small = np.abs(golden) <= SMALL
    ok = np.where(small, err <= ATOL, err <= RTOL[np.dtype(dtype)] * np.abs(golden))
    return float(np.count_nonzero(ok)) / golden.size


def assert_precision(actual, golden, dtype, what=""):
    """CANN's standard: at least 99.9 % of elements within the dtype's tolerance."""
    ratio = precision_ratio(actual, golden, dtype)
    assert ratio >= 0.999, f"{what}: only {ratio:.4%} of elements within the {np.dtype(dtype).name} tolerance"
