"""Float64 reference for SparseFlashAttention, written from the doc's formula and the CANN 8.5 kernel,
one query row at a time.

Row r scans P = min(K * bs, threshold) positions (threshold = Sk in mode 0, Sk - Sq + s1 + 1 in
mode 3); position p stands for key idx[p // bs] * bs + p % bs of the row's batch, used when it lies
in [0, threshold). Over the used keys: S = scale * [q | q_rope] . [k | k_rope]; softmax computed
online over 512-position chunks, with each chunk's probabilities rounded to the input dtype before
they multiply v (the kernel's CAST_ROUND; round-to-nearest-even here, which differs only at exact
ties); softmaxMax = max S, softmaxSum = sum exp(S - max). A row with no used key is all zero with
max -2e38 and sum 0.
"""

import numpy as np

CHUNK = 512


def row(q, q_rope, keys, keys_rope, values, ids, *, scale, block_size, threshold, dtype):
    """(out [G, Dv], max [G], sum [G]) of one query row; keys are the batch's [Sk, D] rows."""
    length = max(0, min(len(ids) * block_size, threshold))
    p = np.arange(length)
    pos = ids[p // block_size].astype(np.int64) * block_size + p % block_size
    used = (pos >= 0) & (pos < threshold)
    heads = q.shape[0]
    if not used.any():
        return np.zeros((heads, values.shape[1])), np.full(heads, -2e38), np.zeros(heads)
    qc = np.concatenate([q, q_rope], axis=1).astype(np.float64)
    sel = pos[used]
    kc = np.concatenate([keys[sel], keys_rope[sel]], axis=1).astype(np.float64)
    s = scale * (qc @ kc.T)
    chunk = p[used] // CHUNK
    m = np.full(heads, -np.inf)
    o = np.zeros((heads, values.shape[1]))
    total = np.zeros(heads)
    for c in np.unique(chunk):
        cols = chunk == c
        m_new = np.maximum(m, s[:, cols].max(axis=1))
        factor = np.exp(m - m_new)
        prob = np.exp(s[:, cols] - m_new[:, None])
        total = total * factor + prob.sum(axis=1)
        o = o * factor[:, None] + prob.astype(dtype).astype(np.float64) @ values[sel[cols]].astype(np.float64)
        m = m_new
    return o / total[:, None], m, total


def reference(
    query,
    query_rope,
    key,
    key_rope,
    value,
    indices,
    *,
    scale,
    block_size,
    sparse_mode,
    layout="BSND",
    cu_seq_q=None,
    cu_seq_kv=None,
):
    """(out, softmax_max, softmax_sum) in float64: out shaped like query with value's head dim,
    the statistics [rows, G] (BSND [B, 1, S1, G] and TND [1, T1, G] in element order)."""
    heads = query.shape[-2]
    if layout == "BSND":
        batch, s1, s2 = query.shape[0], query.shape[1], key.shape[1]
        spans = [(b * s1, (b + 1) * s1, b * s2, (b + 1) * s2) for b in range(batch)]
    else:
        q_end, k_end = np.asarray(cu_seq_q), np.asarray(cu_seq_kv)
        spans = list(zip(np.r_[0, q_end[:-1]], q_end, np.r_[0, k_end[:-1]], k_end))
    q = query.reshape(-1, heads, query.shape[-1])
    qr = query_rope.reshape(-1, heads, query_rope.shape[-1])
    k, kr, v = (t.reshape(-1, t.shape[-1]) for t in (key, key_rope, value))
    ids = indices.reshape(q.shape[0], -1)
    out = np.zeros((q.shape[0], heads, v.shape[1]))
    smax, ssum = np.zeros((q.shape[0], heads)), np.zeros((q.shape[0], heads))
    for a, e, c, f in spans:
        len_q, len_k = int(e - a), int(f - c)
        for s1 in range(len_q):
            threshold = len_k if sparse_mode == 0 else len_k - len_q + s1 + 1
            r = int(a) + s1
            out[r], smax[r], ssum[r] = row(
                q[r],
                qr[r],
                k[c:f],
                kr[c:f],
                v[c:f],
                ids[r],
                scale=scale,
                block_size=block_size,
                threshold=threshold,
                dtype=query.dtype,
            )
    return out.reshape(*query.shape[:-1], v.shape[1]), smax, ssum
