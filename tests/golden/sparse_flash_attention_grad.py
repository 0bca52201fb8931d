"""Float64 reference for SparseFlashAttentionGrad, written from the reference notes (§2.B).

Plain loops over batches and query rows; shares no code with aclnn_emu. ``rounding`` (a name,
"fp16" or "bf16") reproduces the NPU's two intermediate casts (P and dS rounded half away from
zero before the matmuls that consume them); the outputs stay unrounded float64. ``rounding=None``
is the exact gradient of the forward.
"""

import math

import numpy as np

import precision

CHUNK_POSITIONS = 512
_FORMAT = {"fp16": (11, -14, 65504.0), "bf16": (8, -126, 3.3895313892515355e38)}


def round_half_away(x, name):
    """Round float64 values to fp16/bf16 precision, ties away from zero (result stays float64)."""
    bits, emin, largest = _FORMAT[name]
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    _, e = np.frexp(np.where(mag > 0, mag, 1.0))
    quantum = np.ldexp(1.0, np.maximum(e - 1, emin) - (bits - 1))
    r = np.floor(mag / quantum + 0.5) * quantum
    r = np.where(r > largest, np.inf, r)
    return np.where(np.isfinite(x), np.copysign(r, x), x)


def batches(layout, q_shape, k_shape, cu_q=None, cu_kv=None):
    """(row offset, Sq, key offset, Sk) per batch; rows and keys count along the flat T axis."""
    if layout == "BSND":
        b, s1, s2 = q_shape[0], q_shape[1], k_shape[1]
        return [(i * s1, s1, i * s2, s2) for i in range(b)]
    out, prev_q, prev_k = [], 0, 0
    for end_q, end_k in zip(cu_q, cu_kv):
        out.append((prev_q, end_q - prev_q, prev_k, end_k - prev_k))
        prev_q, prev_k = end_q, end_k
    return out


def selection(ids, s1, sq, sk, bs, causal):
    """Batch-local key positions of one row and which are masked (mode 3, diagonal block only).

    Entries outside the batch's blocks are undefined on the NPU; like aclnn-emu, they are skipped
    (but still count for the 512-position chunk they sit in).
    """
    last_block = math.ceil(sk / bs)
    used = []
    for i in ids:
        if i == -1:
            break
        used.append(int(i))
    valid_end = s1 + sk - sq
    masked_entry = {}  # chunk -> entry index of the last straddling block in it
    for j, i in enumerate(used):
        if causal and i * bs <= valid_end < (i + 1) * bs:
            masked_entry[j // (CHUNK_POSITIONS // bs)] = j
    positions, masked = [], []
    for j, i in enumerate(used):
        if not 0 <= i < last_block:
            continue
        length = sk - i * bs if i == last_block - 1 else bs
        for o in range(length):
            positions.append(i * bs + o)
            masked.append(masked_entry.get(j // (CHUNK_POSITIONS // bs)) == j and i * bs + o > valid_end)
    return np.array(positions, dtype=np.int64), np.array(masked, dtype=bool)


def _rows(layout, q, cu_q, cu_kv, k):
    """(flat row, s1, Sq, key offset, Sk) for every query row that a batch covers."""
    for row0, sq, k0, sk in batches(layout, q.shape, k.shape, cu_q, cu_kv):
        for s1 in range(sq):
            yield row0 + s1, s1, sq, k0, sk


def _flat(x, lead):
    return (
        None
        if x is None
        else np.asarray(x, np.float64).reshape(lead, *x.shape[-2:])
        if x.ndim == 4
        else np.asarray(x, np.float64)
    )


def _keys(layout, k, k_rope):
    kk = np.asarray(k, np.float64).reshape(-1, k.shape[-1])
    if k_rope is not None:
        kk = np.concatenate([kk, np.asarray(k_rope, np.float64).reshape(-1, k_rope.shape[-1])], 1)
    return kk


def forward(
    q, k, v, indices, *, scale, block_size, sparse_mode, layout, q_rope=None, k_rope=None, cu_q=None, cu_kv=None
):
    """out [like q with Dv], softmax_max and softmax_sum [T1, G] (of the scaled logits)."""
    t1 = q.shape[0] * (q.shape[1] if layout == "BSND" else 1)
    qq = _flat(q, t1)
    if q_rope is not None:
        qq = np.concatenate([qq, _flat(q_rope, t1)], -1)
    kk, vv = _keys(layout, k, k_rope), np.asarray(v, np.float64).reshape(-1, v.shape[-1])
    idx = np.asarray(indices).reshape(t1, -1)
    g = qq.shape[1]
    out = np.zeros((t1, g, vv.shape[1]))
    smax, ssum = np.zeros((t1, g)), np.ones((t1, g))
    for r, s1, sq, k0, sk in _rows(layout, q, cu_q, cu_kv, k):
        pos, masked = selection(idx[r], s1, sq, sk, block_size, sparse_mode == 3)
        if len(pos) == 0:
            continue
        s = scale * qq[r] @ kk[k0 + pos].T
        s[:, masked] = -np.inf
        smax[r] = s.max(axis=1)
        e = np.exp(s - smax[r][:, None])
        ssum[r] = e.sum(axis=1)
        out[r] = (e / ssum[r][:, None]) @ vv[k0 + pos]
    return out, smax, ssum


def _maths(
    q,
    k,
    v,
    indices,
    dout,
    out,
    softmax_max,
    softmax_sum,
    *,
    scale,
    block_size,
    sparse_mode,
    layout,
    q_rope=None,
    k_rope=None,
    cu_q=None,
    cu_kv=None,
):
    """The flat float64 operands qq = [q | q_rope] [T1, G, D+Dr], kk = [k | k_rope] [T2, D+Dr],
    dOut [T1, G, Dv], and per query row with selected keys (row, key rows, P, dS): the
    probabilities and score gradients [G, L] of its keys, unrounded."""
    t1 = q.shape[0] * (q.shape[1] if layout == "BSND" else 1)
    qq = _flat(q, t1)
    if q_rope is not None:
        qq = np.concatenate([qq, _flat(q_rope, t1)], -1)
    kk, vv = _keys(layout, k, k_rope), np.asarray(v, np.float64).reshape(-1, v.shape[-1])
    do, o = _flat(dout, t1), _flat(out, t1)
    m = np.asarray(softmax_max, np.float64).reshape(t1, -1)
    l = np.asarray(softmax_sum, np.float64).reshape(t1, -1)
    idx = np.asarray(indices).reshape(t1, -1)

    def rows():
        for r, s1, sq, k0, sk in _rows(layout, q, cu_q, cu_kv, k):
            pos, masked = selection(idx[r], s1, sq, sk, block_size, sparse_mode == 3)
            if len(pos) == 0:
                continue
            s = scale * qq[r] @ kk[k0 + pos].T
            p = np.exp(s - m[r][:, None]) / l[r][:, None]
            p[:, masked] = 0.0
            dl = (do[r] * o[r]).sum(axis=1)
            yield r, k0 + pos, p, p * (do[r] @ vv[k0 + pos].T - dl[:, None])

    return qq, kk, do, rows()


def _outputs(dq, dk, dv, d, rope):
    """dq|dq_rope and dk|dk_rope split at the head dim d."""
    return dict(
        dq=dq[..., :d], dk=dk[:, :d], dv=dv, dq_rope=dq[..., d:] if rope else None, dk_rope=dk[:, d:] if rope else None
    )


def backward(q, k, v, indices, dout, out, softmax_max, softmax_sum, *, scale, rounding=None, **spec):
    """dq, dk, dv, dq_rope, dk_rope (float64, flat: [T1, G, .] and [T2, .]); ``spec``: the other
    keywords of ``_maths``."""
    qq, kk, do, rows = _maths(q, k, v, indices, dout, out, softmax_max, softmax_sum, scale=scale, **spec)
    rnd = (lambda x: round_half_away(x, rounding)) if rounding else (lambda x: x)
    dq, dk, dv = np.zeros(qq.shape), np.zeros(kk.shape), np.zeros((kk.shape[0], do.shape[-1]))
    for r, keys, p, ds in rows:
        p_h, ds_h = rnd(p), rnd(ds)
        dq[r] = scale * ds_h @ kk[keys]
        np.add.at(dk, keys, scale * ds_h.T @ qq[r])
        np.add.at(dv, keys, p_h.T @ do[r])
    return _outputs(dq, dk, dv, q.shape[-1], spec.get("q_rope") is not None)


def largest_terms(q, k, v, indices, dout, out, softmax_max, softmax_sum, *, scale, rounding, **spec):
    """Per element of ``backward``'s outputs, the largest magnitude among the terms its sum adds:
    scale * dSh * Kc for dq, scale * dSh * Qc for dk, Ph * dOut for dv (the copies of a key
    selected twice in a row, rounded alike, count as one term)."""
    qq, kk, do, rows = _maths(q, k, v, indices, dout, out, softmax_max, softmax_sum, scale=scale, **spec)
    dq, dk, dv = np.zeros(qq.shape), np.zeros(kk.shape), np.zeros((kk.shape[0], do.shape[-1]))
    for r, keys, p, ds in rows:
        unique, copy_of = np.unique(keys, return_inverse=True)
        p_h, ds_h = (_per_key(round_half_away(x, rounding), copy_of, len(unique)) for x in (p, ds))
        dq[r] = np.abs(scale * ds_h[:, :, None] * kk[unique]).max(axis=1)
        np.maximum.at(dk, unique, np.abs(scale * ds_h[:, :, None] * qq[r][:, None, :]).max(axis=0))
        np.maximum.at(dv, unique, np.abs(p_h[:, :, None] * do[r][:, None, :]).max(axis=0))
    return _outputs(dq, dk, dv, q.shape[-1], spec.get("q_rope") is not None)


def _per_key(x, copy_of, keys):
    """[G, L] values of a row's selected copies summed per distinct key: [G, keys]."""
    summed = np.zeros((x.shape[0], keys))
    np.add.at(summed, (slice(None), copy_of), x)
    return summed


# --- random test cases -------------------------------------------------------------------------


def _row_ids(rng, s1, sq, sk, bs, causal, nsel, duplicates, top_k):
    """One row of sparse indices as a forward pass could emit them, -1 padded to top_k.

    bs == 1: distinct keys in score (random) order. bs > 1: ascending blocks ending with the
    block the NPU kernel treats as the row's last (diagonal block in mode 3, tail block in mode 0).
    """
    blocks = math.ceil(sk / bs)
    limit = min(blocks, (s1 + sk - sq) // bs + 1) if causal and bs > 1 else blocks
    ids = np.full(top_k, -1, dtype=np.int32)
    if limit <= 0 or nsel == 0:
        return ids
    if bs == 1:
        chosen = rng.permutation(limit)[:nsel]
    else:
        chosen = np.r_[np.sort(rng.permutation(limit - 1)[: nsel - 1]), limit - 1]
    if duplicates and len(chosen) > 1:
        repeat = rng.choice(chosen[:-1], size=max(1, len(chosen) // 4))
        chosen = np.sort(np.r_[chosen, repeat]) if bs > 1 else rng.permutation(np.r_[chosen, repeat])
    chosen = chosen[:top_k]
    ids[: len(chosen)] = chosen
    return ids


def make_case(
    rng,
    *,
    dtype,
    layout,
    q_lens,
    kv_lens,
    n1=4,
    d=128,
    dr=0,
    block_size=1,
    sparse_mode=0,
    nsel=24,
    duplicates=False,
    top_k=2048,
    scale=None,
):
    """Random inputs in ``dtype`` (np.float16 / ml_dtypes.bfloat16) with a consistent forward.

    BSND uses the first entries of q_lens/kv_lens as S1/S2 for len(q_lens) batches; TND uses
    them as per-batch lengths (the op takes their cumulative sums).
    """
    b = len(q_lens)
    if layout == "BSND":
        q_lens, kv_lens = [q_lens[0]] * b, [kv_lens[0]] * b
    t1, t2 = sum(q_lens), sum(kv_lens)
    lead_q = (b, q_lens[0]) if layout == "BSND" else (t1,)
    lead_k = (b, kv_lens[0]) if layout == "BSND" else (t2,)
    cast = lambda shape: rng.standard_normal(shape).astype(dtype)
    c = dict(
        query=cast(lead_q + (n1, d)),
        key=cast(lead_k + (1, d)),
        value=cast(lead_k + (1, d)),
        dOut=cast(lead_q + (n1, d)),
    )
    if dr:
        c["queryRope"], c["keyRope"] = cast(lead_q + (n1, dr)), cast(lead_k + (1, dr))
    rows = []
    for sq, sk in zip(q_lens, kv_lens):
        for s1 in range(sq):
            count = int(rng.integers(nsel // 2, nsel + 1)) if s1 % 4 != 3 else 0
            rows.append(_row_ids(rng, s1, sq, sk, block_size, sparse_mode == 3, count, duplicates, top_k))
    c["sparseIndices"] = (
        np.stack(rows).reshape(lead_q + (1, top_k)) if rows else np.zeros(lead_q + (1, top_k), np.int32)
    )
    cu_q, cu_kv = np.cumsum(q_lens).astype(np.int32), np.cumsum(kv_lens).astype(np.int32)
    attrs = dict(
        scale=scale if scale is not None else 1.0 / math.sqrt(d + dr),
        block_size=block_size,
        sparse_mode=sparse_mode,
        layout=layout,
    )
    if layout == "TND":
        c["actualSeqLengthsQuery"], c["actualSeqLengthsKv"] = cu_q, cu_kv
    f64 = {k: np.asarray(v, np.float64) for k, v in c.items() if k != "sparseIndices"}
    out, smax, ssum = forward(
        f64["query"],
        f64["key"],
        f64["value"],
        c["sparseIndices"],
        q_rope=f64.get("queryRope"),
        k_rope=f64.get("keyRope"),
        cu_q=cu_q,
        cu_kv=cu_kv,
        **attrs,
    )
    c["out"] = out.reshape(lead_q + (n1, d)).astype(dtype)
    stats_shape = (1, t1, n1) if layout == "TND" else (b, 1, q_lens[0], n1)
    c["softmaxMax"] = smax.reshape(stats_shape).astype(np.float32)
    c["softmaxSum"] = ssum.reshape(stats_shape).astype(np.float32)
    return c, attrs


def golden_of(case, attrs, of=backward, **options):
    """``backward`` (or ``largest_terms``) applied to a ``make_case`` case (option: rounding)."""
    f = lambda name: None if name not in case else np.asarray(case[name], np.float64)
    return of(
        f("query"),
        f("key"),
        f("value"),
        case["sparseIndices"],
        f("dOut"),
        f("out"),
        case["softmaxMax"],
        case["softmaxSum"],
        q_rope=f("queryRope"),
        k_rope=f("keyRope"),
        cu_q=case.get("actualSeqLengthsQuery"),
        cu_kv=case.get("actualSeqLengthsKv"),
        **options,
        **attrs,
    )


DTYPE = {"fp16": "float16", "bf16": "bfloat16"}
OUTPUTS = ("dq", "dk", "dv", "dq_rope", "dk_rope")


def precision_failures(actual, case, attrs, name):
    """What keeps ``actual`` (output name -> array) from matching the NPU's maths; [] when it does.

    1. CANN's standard against the float64 hardware golden, each element also accepted within the
       bound of its sum's largest term (``largest_terms``, the ``floor`` of tests/precision.py).
       The NPU rounds P and dS to fp16/bf16 from fp32 values, and wherever one lies within fp32
       error of a rounding midpoint, any fp32 implementation (the NPU's included) may round it
       the other way: one ulp of that intermediate moves every element it feeds by up to 2^-10
       (fp16) of its term there, which for an element that cancels below that term is beyond 1e-3
       of the element itself. The hardware golden cannot tell those elements apart finer than
       that. Judged by relative error alone, how many of them fail is luck, not fidelity: fp32
       evaluations of the same maths that differ only in the order of their dot products'
       additions miss from 0 to 0.26% of the fp16 elements here, above the 0.1% budget in one
       output out of eight, and the count of one such evaluation is no yardstick for another's
       (nor is a BLAS matmul's order fixed: OpenBLAS picks it per shape and CPU). Judged against
       their largest terms they miss at most 0.03% (fp16) and 0.06% (bf16), while a kernel that
       drops or moves a rounding step misses 0.3% or more.
    2. The intermediate casts are reproduced: ``actual`` sits much closer to the rounded hardware
       golden than the exact gradient does (fp32 evaluations: at most 3% of that distance; a
       kernel that drops or moves a cast: 70% or more).
    """
    hw = golden_of(case, attrs, rounding=name)
    exact = golden_of(case, attrs)
    terms = golden_of(case, attrs, of=largest_terms, rounding=name)
    failures = []
    for key in OUTPUTS:
        if actual.get(key) is None:
            continue
        x = np.asarray(actual[key], np.float64)
        h, e = hw[key].reshape(x.shape), exact[key].reshape(x.shape)
        failure = precision.failure(x, h, DTYPE[name], floor=terms[key].reshape(x.shape))
        if failure is not None:
            failures.append(f"{key}: {failure}")
        rounded = round_half_away(h, name)
        if np.abs(x - rounded).mean() > 0.05 * np.abs(rounded - e).mean():
            failures.append(
                f"{key}: mean error to the rounded hardware golden "
                f"{np.abs(x - rounded).mean():.3g} vs exact-vs-hardware {np.abs(rounded - e).mean():.3g}"
            )
    return failures
