"""Float64 reference for FlashAttentionVarLenScore / FlashAttentionUnpaddingScoreGrad (layout TND),
the learnable sink and the MLA rope split, written from the docs and the kernels' per-batch mask
offsets (ComputeAttenMaskOffset for LAYOUT_TND, flash_attention_score_s1s2_bn2gs1.h; bandIndex from
the tiling). Whole S1b x S2b matrices per batch and head, numpy only, no code shared with the kernel.

A sink s[n] is one more logit per row with no value: softmax over [scores, s[n]], output Σ_j P_ij V_j,
and dL/ds[n] = -Σ_(b,i) P_sink,i Σ_j P_ij dP_ij.
"""

import numpy as np

from golden.flash_attention_score_grad import _largest_products, round_half_away

FLT_MAX = float(np.finfo(np.float32).max)


def spans(cu):
    start = 0
    for end in cu:
        yield start, int(end)
        start = int(end)


def user_block(mask, rows, keys, longest, pairs_before=0, head=0, row_stride=False):
    """A user mask's block for a batch and head: [S1max, S2max] masks (or [1, 1, S1max, S2max]) are read
    top-left, [T1, T2] ones at the batch's tokens, [B, 1|N1, S1max, S2max] ones packed: batch b's
    [S1b, S2b] per head after the S1·S2 elements (per head) of the batches before it, its rows S2b
    apart. With `row_stride` (the Ascend910_95 kernels) rows lie the mask's last dimension apart, and
    every mask but a packed 4-D one, [T1, T2] too, is read from its first element."""
    m = np.asarray(mask)
    s1, s2 = rows.stop - rows.start, keys.stop - keys.start
    if row_stride and not (m.ndim == 4 and m.shape[:2] != (1, 1)):
        flat, step = m.reshape(-1), m.shape[-1]
        return np.array([flat[i * step : i * step + s2] for i in range(s1)]).reshape(s1, s2)
    if m.ndim == 4 and m.shape[:2] != (1, 1):
        heads = m.shape[1]
        first = heads * pairs_before + (head if heads > 1 else 0) * s1 * s2
        step = m.shape[-1] if row_stride else s2
        flat = m.reshape(-1)
        return np.array([flat[first + i * step : first + i * step + s2] for i in range(s1)]).reshape(s1, s2)
    if m.ndim == 4:
        m = m[0, 0]
    if m.shape != longest:
        return m[rows, keys]
    return m[:s1, :s2]


def masked_set(mode, mask, b, band, s1, s2, pre, nxt, prefix):
    """Boolean [S1b, S2b]: masked scores of batch b (band: the batch of modes 7 and 8; mask: the
    batch's user block for modes 0 and 1, or the compressed template)."""
    i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
    if mask is None:
        return np.zeros((s1, s2), bool)
    if mode in (0, 1):
        user = np.asarray(mask) != 0
        return user | (j - i > nxt) | (i - j > pre) if mode == 0 else user
    bound = {
        2: 0,
        3: s2 - s1,
        6: s2 - s1,
        7: s2 - s1 + (nxt if b == band else 0),
        8: s2 - max(s1 - nxt, 0) if b == band else 0,
    }
    if mode == 4:
        return (j - i > s2 - max(s1 - nxt, 0)) | (i - j > s1 - max(s2 - pre, 0))
    out = j - i > bound[mode]
    return out & (j >= prefix[b]) if mode == 6 else out


def band_of(mode, cu_q, cu_kv):
    """bandIndex: the last (mode 7) or first (mode 8) batch with query tokens."""
    with_queries = [b for b, (s, e) in enumerate(spans(cu_q)) if e > s]
    if not with_queries:
        return len(cu_q) - 1 if mode == 7 else 0
    return with_queries[-1] if mode == 7 else with_queries[0]


def _heads(query, key, rope):
    q, k = np.asarray(query, np.float64), np.asarray(key, np.float64)
    if rope is not None:
        q = np.concatenate([q, np.asarray(rope[0], np.float64)], axis=-1)
        k = np.concatenate([k, np.asarray(rope[1], np.float64)], axis=-1)
    return q, k


def _problems(
    query,
    key,
    cu_q,
    cu_kv,
    *,
    scale,
    atten_mask,
    sparse_mode,
    pre_tokens,
    next_tokens,
    prefix,
    rope,
    drop_mask=None,
    keep_prob=1.0,
    pse_terms=None,
    pse_type=1,
    mask_row_stride=False,
):
    """Per (b, n1): (query rows, key rows, kv head, scores [S1b, S2b] with -FLT_MAX where masked,
    keep factors [S1b, S2b] or 1). A dropMask holds each batch's [N1, S1b, S2b] bits in turn;
    `pse_terms(b, n, s1, s2)` gives the batch's position term (pseType 1 adds it before the scale)."""
    q, k = _heads(query, key, rope)
    n1, n2 = q.shape[1], k.shape[1]
    band = band_of(sparse_mode, cu_q, cu_kv)
    longest = (max(e - s for s, e in spans(cu_q)), max(e - s for s, e in spans(cu_kv)))
    bits = None if drop_mask is None else np.unpackbits(np.asarray(drop_mask, np.uint8), bitorder="little")
    first = 0
    for b, ((q0, q1), (k0, k1)) in enumerate(zip(spans(cu_q), spans(cu_kv))):
        rows, keys, size = slice(q0, q1), slice(k0, k1), (q1 - q0) * (k1 - k0)
        first += n1 * size
        if not size:
            continue
        pairs_before = (first - n1 * size) // n1
        for n in range(n1):
            mask = atten_mask
            if atten_mask is not None and sparse_mode in (0, 1):
                mask = user_block(atten_mask, rows, keys, longest, pairs_before, n, mask_row_stride)
            masked = masked_set(sparse_mode, mask, b, band, q1 - q0, k1 - k0, pre_tokens, next_tokens, prefix)
            kv = n // (n1 // n2)
            s = q[rows, n] @ k[keys, kv].T
            term = 0.0 if pse_terms is None else pse_terms(b, n, q1 - q0, k1 - k0)
            s = (s + term) * scale if pse_type == 1 else s * scale + term
            keep = 1.0
            if bits is not None:
                start = first - n1 * size + n * size
                keep = bits[start : start + size].reshape(q1 - q0, k1 - k0) / float(np.float32(keep_prob))
            yield rows, keys, n, kv, np.where(masked, -FLT_MAX, s), keep


def packed_pse(pse, heads, lq, lk, rows_per_head):
    """pse_terms of a packed pse: batch after batch, [N1, S1b, S2b] (rows_per_head) or [N1, S2b] (one
    row shared by every query row), as the docs' TND pse is laid out."""
    flat, starts, start = np.asarray(pse, np.float64).reshape(-1), [], 0
    for s1, s2 in zip(lq, lk):
        starts.append(start)
        start += heads * (s1 if rows_per_head else 1) * s2

    def terms(b, n, s1, s2):
        rows = s1 if rows_per_head else 1
        first = starts[b] + n * rows * s2
        return np.broadcast_to(flat[first : first + rows * s2].reshape(rows, s2), (s1, s2))

    return terms


def full_pse(full):
    """pse_terms of an uncompressed Toeplitz pse [P, N1, S, S] (what the compressed alibi stands for):
    batch b reads block b % P, top-left."""
    full = np.asarray(full, np.float64)
    return lambda b, n, s1, s2: full[b % full.shape[0], n, :s1, :s2]


def slope_pse(slopes, pse_type, shift, restart_after_first=False):
    """pse_terms of generated ALiBi: -slope·|j + shift - i| (sqrt of the distance for pseType 3), the
    distance per batch; with `restart_after_first` (sparse mode 8) batches after the first take shift 0."""
    slopes = np.asarray(slopes, np.float64)

    def terms(b, n, s1, s2):
        i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
        dist = np.abs(j + (0 if restart_after_first and b else shift) - i).astype(np.float64)
        slope = slopes[n] if slopes.ndim == 1 else slopes[b, n]
        return -slope * (np.sqrt(dist) if pse_type == 3 else dist)

    return terms


def forward(
    query, key, value, cu_q, cu_kv, *, dtype_name, sink=None, rope=None, atten_mask=None, sparse_mode=0, **attrs
):
    """(out [T1, N1, Dv], row max [T1, N1], row sum [T1, N1], floor [T1, N1, Dv]) in float64; rows of
    batches without keys are 0. P = exp(S - max) is rounded half away to the input dtype before P·V
    as the kernels do; `floor` is Σ_j P|V| / sum, the scale of an output element's terms."""
    t1, n1 = np.shape(query)[:2]
    v = np.asarray(value, np.float64)
    out, row_max, row_sum = np.zeros((t1, n1, v.shape[-1])), np.zeros((t1, n1)), np.zeros((t1, n1))
    floor = np.zeros_like(out)
    spec = dict(atten_mask=atten_mask, sparse_mode=sparse_mode, rope=rope, **attrs)
    for rows, keys, n, kv, s, keep in _problems(query, key, cu_q, cu_kv, **spec):
        extra = None if sink is None else np.full((s.shape[0], 1), float(sink[n]))
        full = s if extra is None else np.concatenate([s, extra], axis=1)
        m = full.max(axis=1)
        e = np.exp(full - m[:, None])
        row_max[rows, n], row_sum[rows, n] = m, e.sum(axis=1)
        p = round_half_away(e[:, : s.shape[1]] * keep, dtype_name)
        out[rows, n] = p @ v[keys, kv] / row_sum[rows, n][:, None]
        floor[rows, n] = np.abs(p) @ np.abs(v[keys, kv]) / row_sum[rows, n][:, None]
    return out, row_max, row_sum, floor


def backward(
    query,
    key,
    value,
    dy,
    attention_in,
    row_max,
    row_sum,
    cu_q,
    cu_kv,
    *,
    dtype_name,
    sink=None,
    rope=None,
    floors=False,
    **attrs,
):
    """{"dq", "dk", "dv"} (+ "dq_rope", "dk_rope", "dsink") in float64 from the forward's row max and
    sum [T1, N1]; P and dS rounded half away to the input dtype as the kernels do. With `floors`,
    per element the largest term of its sum instead (precision's floor for cancelling sums)."""
    q, k = _heads(query, key, rope)
    v, do, o = (np.asarray(x, np.float64) for x in (value, dy, attention_in))
    scale = attrs["scale"]
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    dsink = np.zeros(np.shape(query)[1])
    for rows, keys, n, kv, s, keep in _problems(query, key, cu_q, cu_kv, rope=rope, **attrs):
        mx, sm = row_max[rows, n][:, None], row_sum[rows, n][:, None]
        p = np.exp(s - mx) / sm
        dp = (do[rows, n] @ v[keys, kv].T) * keep
        d_sum = (do[rows, n] * o[rows, n]).sum(axis=1, keepdims=True)
        ds = round_half_away(p * (dp - d_sum), dtype_name)
        pd = round_half_away(p * keep, dtype_name)
        p_sink = None if sink is None else np.exp(float(sink[n]) - mx[:, 0]) / sm[:, 0]
        if floors:
            np.maximum(dv[keys, kv], _largest_products(pd.T, do[rows, n]), out=dv[keys, kv])
            dq[rows, n] = _largest_products(scale * ds, k[keys, kv])
            np.maximum(dk[keys, kv], _largest_products(scale * ds.T, q[rows, n]), out=dk[keys, kv])
            if sink is not None:
                dsink[n] += np.abs(p_sink[:, None] * p * dp).sum()
            continue
        dv[keys, kv] += pd.T @ do[rows, n]
        dq[rows, n] = scale * ds @ k[keys, kv]
        dk[keys, kv] += scale * ds.T @ q[rows, n]
        if sink is not None:
            dsink[n] -= (p_sink * (p * dp).sum(axis=1)).sum()
    d = np.shape(query)[-1]
    grads = {"dq": dq[..., :d], "dk": dk[..., :d], "dv": dv}
    if rope is not None:
        grads["dq_rope"], grads["dk_rope"] = dq[..., d:], dk[..., d:]
    if sink is not None:
        grads["dsink"] = dsink
    return grads


def alibi_bsnd_reads(pse, s1, s2, block=128):
    """[P, N1, S1, S2] float64: what the Ascend910_95 backward's kernels with a BSND layout read of an alibi
    pse [P, N1, 1024, W] for S1 query and S2 key rows (pse.h PseAlibiComputeOffset, non-TND branch): per
    block of `block` rows from row0 and 128 columns from col0, the anchor (m, k) = (row0 - (S1 - 1024),
    col0) when row0 >= S1 - 1024, else (row0 % 1024, W - (row0 - col0) - (1024 - row0 % 1024)); then the
    block's rows W apart, flat from that anchor (a negative column reads the rows before)."""
    pse = np.asarray(pse, np.float64)
    p, heads, rows, width = pse.shape
    flat = pse.reshape(-1)
    out = np.zeros((p, heads, s1, s2))
    threshold = s1 - rows
    for b in range(p):
        for n in range(heads):
            start = (b * heads + n) * rows * width
            for row0 in range(0, s1, block):
                for col0 in range(0, s2, 128):
                    if row0 >= threshold:
                        m, k = row0 - threshold, col0
                    else:
                        m = row0 % rows
                        k = width - (row0 - col0) - (rows - m)
                    r = np.arange(min(block, s1 - row0))[:, None]
                    c = np.arange(min(128, s2 - col0))[None, :]
                    out[b, n, row0 : row0 + r.size, col0 : col0 + c.size] = flat[start + (m + r) * width + k + c]
    return out
