"""Float64 reference for aclnnFlashAttentionScoreGradV2, written from the reference notes
(ops-flash-attention-grad-and-prompt.md §1B, §3 GOLD, §4). Whole S1 x S2 matrices per head, numpy
only, no code shared with the kernel. Also a matching forward, to produce the attentionIn,
softmaxMax and softmaxSum a backward call consumes.
"""

import numpy as np

FLT_MAX = float(np.finfo(np.float32).max)
# significant bits, smallest normal exponent, largest finite value
NARROW = {"float16": (11, -14, 65504.0), "bfloat16": (8, -126, float.fromhex("0x1.fep127"))}
SUBSCRIPTS = {"BNSD": "bnsd", "BSND": "bsnd", "BSH": "bsnd", "SBH": "sbnd"}


def round_half_away(x, dtype_name):
    """x rounded to fp16/bf16 values, ties away from zero (CAST_ROUND); fp32 passes unchanged."""
    if dtype_name not in NARROW:
        return x
    digits, emin, largest = NARROW[dtype_name]
    _, exponent = np.frexp(x)
    ulp = np.ldexp(1.0, np.maximum(exponent - 1, emin) - (digits - 1))
    rounded = np.sign(x) * np.floor(np.abs(x) / ulp + 0.5) * ulp
    return np.where(np.abs(rounded) > largest, np.copysign(np.inf, x), rounded)


def heads_first(x, layout, heads):
    """float64 [B, N, S, D] of a tensor in ``layout``."""
    x = np.asarray(x, np.float64)
    if layout in ("BSH", "SBH"):
        x = x.reshape(x.shape[0], x.shape[1], heads, -1)
    return np.einsum(f"{SUBSCRIPTS[layout]}->bnsd", x)


def heads_back(x, layout):
    """Inverse of heads_first."""
    y = np.einsum(f"bnsd->{SUBSCRIPTS[layout]}", x)
    return y.reshape(y.shape[0], y.shape[1], -1) if layout in ("BSH", "SBH") else y


def masked_set(mode, mask, b, n, s1, s2, pre, nxt, prefix):
    """Boolean [S1, S2] of the scores replaced by -FLT_MAX (reference §1B sparse table)."""
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    if mask is None:
        return np.zeros((s1, s2), bool)
    if mode in (0, 1, 5):
        m = np.asarray(mask)
        if m.ndim == 4:
            m = m[b % m.shape[0], n % m.shape[1]]
        user = m != 0
        return user | (j - i > nxt) | (i - j > pre) if mode == 0 else user
    if mode == 2:
        return j > i
    if mode == 3:
        return j - i > s2 - s1
    if mode == 4:
        return (j - i > nxt + s2 - s1) | (i - j > pre - (s2 - s1))
    if mode == 6:
        return (j - i > s2 - s1) & (j >= prefix[b])
    raise ValueError(f"sparse mode {mode}")


def pse_matrix(pse, pse_type, b, n, s1, s2, q_start, kv_start):
    """float64 [S1, S2] position term of head (b, n), or 0."""
    if pse is None:
        return 0.0
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    if pse_type in (2, 3):
        slope = float(np.asarray(pse)[n] if np.ndim(pse) == 1 else np.asarray(pse)[b, n])
        shift = (kv_start[0] - q_start[0]) if q_start and kv_start else 0  # both, or neither applies
        dist = np.abs(j + shift - i).astype(np.float64)
        return -slope * (np.sqrt(dist) if pse_type == 3 else dist)
    c = np.asarray(pse, np.float64)[b % np.shape(pse)[0], n]
    if c.shape[0] == 1024 and s1 != 1024:  # alibi-compressed rows
        full = np.zeros((s1, s2))
        for row in range(s1):
            if row >= s1 - 1024:
                full[row] = c[row - (s1 - 1024)]
            else:
                m = row % 1024
                cols = np.arange(row + 1)
                full[row, : row + 1] = c[m, s2 - (row - cols) - (1024 - m)]
        return full
    return np.broadcast_to(c, (s1, s2))


def drop_factors(drop_mask, keep_prob, b, n1, s1, s2):
    """[B, N1, S1, S2] of keepBit / keepProb (keepProb read as float32), or None."""
    kp = float(np.float32(keep_prob))
    if drop_mask is None or kp >= 1:
        return None
    bits = np.unpackbits(np.asarray(drop_mask, np.uint8).ravel(), count=b * n1 * s1 * s2, bitorder="little")
    return bits.reshape(b, n1, s1, s2) / kp


def _scores(qh, kh, pse_term, pse_type, scale, masked):
    s0 = qh @ kh.T
    s = (s0 + pse_term) * scale if pse_type == 1 else s0 * scale + pse_term
    return np.where(masked, -FLT_MAX, s)


def _heads(query, key, value, layout, head_num):
    q = heads_first(query, layout, head_num)
    d = q.shape[3]
    n2 = np.shape(key)[-1] // d if layout in ("BSH", "SBH") else None
    k = heads_first(key, layout, n2)
    return q, k, heads_first(value, layout, k.shape[1])


def forward(
    query,
    key,
    value,
    *,
    scale,
    head_num,
    layout,
    pse=None,
    pse_type=1,
    atten_mask=None,
    sparse_mode=0,
    pre_tokens=2147483647,
    next_tokens=2147483647,
    prefix=None,
    drop_mask=None,
    keep_prob=1.0,
    q_start_idx=None,
    kv_start_idx=None,
):
    """(attention_out in layout, softmax_max [B,N1,S1,8], softmax_sum [B,N1,S1,8]) in float64."""
    q, k, v = _heads(query, key, value, layout, head_num)
    b, n1, s1, _ = q.shape
    g, s2 = n1 // k.shape[1], k.shape[2]
    drop = drop_factors(drop_mask, keep_prob, b, n1, s1, s2)
    out = np.zeros((b, n1, s1, v.shape[3]))
    row_max, row_sum = np.zeros((b, n1, s1)), np.zeros((b, n1, s1))
    for bi in range(b):
        for ni in range(n1):
            masked = masked_set(sparse_mode, atten_mask, bi, ni, s1, s2, pre_tokens, next_tokens, prefix)
            pse_term = pse_matrix(pse, pse_type, bi, ni, s1, s2, q_start_idx, kv_start_idx)
            s = _scores(q[bi, ni], k[bi, ni // g], pse_term, pse_type, scale, masked)
            row_max[bi, ni] = s.max(axis=1)
            e = np.exp(s - row_max[bi, ni][:, None])
            row_sum[bi, ni] = e.sum(axis=1)
            p = e / row_sum[bi, ni][:, None]
            out[bi, ni] = (p if drop is None else p * drop[bi, ni]) @ v[bi, ni // g]
    lanes = (b, n1, s1, 8)
    return (
        heads_back(out, layout),
        np.broadcast_to(row_max[..., None], lanes),
        np.broadcast_to(row_sum[..., None], lanes),
    )


def _head_products(
    query,
    key,
    value,
    dy,
    attention_in,
    softmax_max,
    softmax_sum,
    *,
    scale,
    head_num,
    layout,
    dtype_name,
    pse=None,
    pse_type=1,
    atten_mask=None,
    sparse_mode=0,
    pre_tokens=2147483647,
    next_tokens=2147483647,
    prefix=None,
    drop_mask=None,
    keep_prob=1.0,
    q_start_idx=None,
    kv_start_idx=None,
):
    """The float64 operands [B, N, S, D] and a generator of (b, n1, n2, Pd, dS) per query head: the
    dropped and rounded probabilities and the rounded score gradients [S1, S2] the sums consume."""
    q, k, v = _heads(query, key, value, layout, head_num)
    b, n1, s1, _ = q.shape
    n2, s2 = k.shape[1], k.shape[2]
    g = n1 // n2
    do, o = heads_first(dy, layout, n1), heads_first(attention_in, layout, n1)
    drop = drop_factors(drop_mask, keep_prob, b, n1, s1, s2)
    lane = np.arange(s2) % 8

    def heads():
        for bi in range(b):
            for ni in range(n1):
                kv = ni // g
                masked = masked_set(sparse_mode, atten_mask, bi, ni, s1, s2, pre_tokens, next_tokens, prefix)
                pse_term = pse_matrix(pse, pse_type, bi, ni, s1, s2, q_start_idx, kv_start_idx)
                s = _scores(q[bi, ni], k[bi, kv], pse_term, pse_type, scale, masked)
                mx = np.asarray(softmax_max, np.float64)[bi, ni][:, lane]
                sm = np.asarray(softmax_sum, np.float64)[bi, ni][:, lane]
                p = np.exp(s - mx) / sm
                factor = 1.0 if drop is None else drop[bi, ni]
                pd = round_half_away(p * factor, dtype_name)
                dp = (do[bi, ni] @ v[bi, kv].T) * factor
                d_sum = (do[bi, ni] * o[bi, ni]).sum(axis=1, keepdims=True)
                yield bi, ni, kv, pd, round_half_away(p * (dp - d_sum), dtype_name)

    return q, k, v, do, heads()


def backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, *, scale, layout, **spec):
    """(dq, dk, dv) in float64, in the layouts of query, key and value; ``spec``: the other
    keywords of ``_head_products``."""
    q, k, v, do, heads = _head_products(
        query, key, value, dy, attention_in, softmax_max, softmax_sum, scale=scale, layout=layout, **spec
    )
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros(k.shape[:3] + v.shape[3:])
    for bi, ni, kv, pd, ds in heads:
        dv[bi, kv] += pd.T @ do[bi, ni]
        dq[bi, ni] = scale * ds @ k[bi, kv]
        dk[bi, kv] += scale * ds.T @ q[bi, ni]
    return heads_back(dq, layout), heads_back(dk, layout), heads_back(dv, layout)


def largest_terms(query, key, value, dy, attention_in, softmax_max, softmax_sum, *, scale, layout, **spec):
    """Per element of ``backward``'s outputs, the largest magnitude among the terms its sum adds
    (scale·dS·K for dq, scale·dS·Q for dk, Pd·dY for dv): the per-element floor of
    tests/precision.py. One ulp of a rounded P or dS that sits within fp32 error of a midpoint
    moves an element by up to 2^-10 (fp16) of such a term, so an element that cancels below its
    largest term cannot be resolved finer than that by any fp32 evaluation, the NPU's included."""
    q, k, v, do, heads = _head_products(
        query, key, value, dy, attention_in, softmax_max, softmax_sum, scale=scale, layout=layout, **spec
    )
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros(k.shape[:3] + v.shape[3:])
    for bi, ni, kv, pd, ds in heads:
        dq[bi, ni] = _largest_products(scale * ds, k[bi, kv])
        np.maximum(dk[bi, kv], _largest_products(scale * ds.T, q[bi, ni]), out=dk[bi, kv])
        np.maximum(dv[bi, kv], _largest_products(pd.T, do[bi, ni]), out=dv[bi, kv])
    return heads_back(dq, layout), heads_back(dk, layout), heads_back(dv, layout)


def _largest_products(a, b, rows=64):
    """max_k |a[i, k] * b[k, j]|, in row chunks so memory stays small."""
    out = np.empty((a.shape[0], b.shape[1]))
    for r in range(0, a.shape[0], rows):
        out[r : r + rows] = np.abs(a[r : r + rows, :, None] * b[None]).max(axis=1, initial=0)
    return out
