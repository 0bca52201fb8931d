"""Float64 reference of aclnnPromptFlashAttentionV2, written from the reference notes (§2B).

Independent of aclnn_emu.kernels: plain dense float64 per (batch, head), the whole score matrix at
once, small shapes only. Also holds the CANN precision-standard comparison used by the tests.

Rules modelled (reference §2B):
- S = Q K^T; fp16 input rounds S to fp16 (RNE); int8 input: S = fp16(deq1 * Q8 K8^T).
- x = S * scale; bool/int8/uint8 mask: masked -> -65504 (fp16/int8 path) or -FLT_MAX (bf16);
  fp16 mask: x += mask * -10000.
- Keys j of row i (0-based within the batch, actual lengths aq/ak) take part iff j < ak and
  mode 0 + mask: i - pre <= j <= i + next; mode 0 without mask, mode 1: always;
  mode 2: j <= i; mode 3: j - i <= ak - aq; mode 4: -(pre - ak + aq) <= j - i <= next + ak - aq;
  tokens are clamped to 214748647 first. Rows >= aq or without any key are 0.
- Online softmax per key block of ``kv_block`` columns (aligned at 0): E = exp(x - running max),
  row sum of the un-narrowed E, rescale by exp(m_old - m_new). E is narrowed before P V: fp16 (RNE)
  for fp16, bf16 ties-away for bf16; int8: E8 = clip(rint(fp16(E) * quant1)) and the block's
  contribution is fp16(deq2 * E8 V8). (The narrowing makes the result depend on the blocking; the
  1024-key block is the emulator's assumption about the hardware's tiling, not a CANN fact.)
- Output: int8 clip(rint(o * quantScale2[n, d] + quantOffset2[n, d])); fp16/bf16 outputs are returned
  unrounded, so the standard measures the emulator's final rounding (<= half an ulp) rather than
  doubling it when both sides round a value lying near a rounding boundary.

Packed layouts (SH, TND, the sparseMode 20-22 base-API path; docs + op_host tiling/op_api source):
batch b is a run of query rows and a run of key rows of the [T, N, D] tensor, attended as one
B = 1 batch with its own actual lengths; rows that belong to no batch are 0 (``packed_attention``).
The base-API kernels round bf16 P and the bf16 output to nearest even (CAST_RINT,
``bf16_even``), the A2/A3 x910 and var-len kernels ties away (``to_bf16``). The MLA base-API
kernels compute only the blocks of their walk (``mla_blocks``); the fp16 one keeps its softmax in
half precision (``mla_half_attention``).

PromptFlashAttentionV3 (docs aclnnPromptFlashAttentionV3.md; kernels
`prompt_flash_attention_s1s2_bns1_x910.h` Res1VecCompute, `vf_row_invalid.h`):
- pseShift [B|1, N, S1, S2] is added after the scale and before the mask: x = S * scale + pse; the
  int8 template adds it in half precision, x = fp16(S * scale + pse).
- innerPrecise 0/2 (and any fp16 call with pseShift) on A2/A3 runs the high-precision template
  (``x910_high_precision``): fp16 scores not rounded, -FLT_MAX mask fill, P ties away, an int8
  output quantised from fp32.
- innerPrecise 2/3, the row-invalid correction (``invalid_max``): a row whose max over its keys
  equals the kernel's fill value (every key of its band masked) is 0 before any output
  quantisation.

Ascend910_95 (arch35 kernels; TilingV2 forces innerPrecise to high precision, ``high_precision``):
fp16 scores are not rounded to fp16, masked scores are -FLT_MAX for fp16 too, and P is rounded to
nearest even for bf16 (vf_softmaxflashv3.h CAST_RINT, ``bf16_even``); outputs are CAST_ROUND.
Quantisation there goes through fp16 and keeps the dequant products in fp32: int8 scores
S = deq1 * Q8 K8^T (no fp16), E8 = rint(fp16(fp16(E) * fp16(quant1))), block contribution
deq2 * E8 V8 (no fp16); an int8 output is rint(fp16(o * quantScale2 + quantOffset2)).
"""

import numpy as np

BIG = 214748647
FLT_MAX = float(np.finfo(np.float32).max)


def to_fp16(x):
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def antiquant_kv(x8, scale, offset=None):
    """An INT8 key/value as the A2/A3 PFA antiquant step leaves it in fp16 (AscendAntiQuant<int8,
    half>): fp16(fp16(x + offset) * scale), each step to nearest even; ``scale``/``offset`` float64
    values broadcasting against ``x8``."""
    y = np.asarray(x8, np.float64)
    if offset is not None:
        y = to_fp16(y + offset)
    return to_fp16(y * scale).astype(np.float16)


def float_params_read_as_fp16(x):
    """FLOAT antiquantScale/Offset as the A2/A3 PFA antiquant kernels read them (InitKvAntiquant
    points a half pointer at their memory): the first x.size fp16 elements of the little-endian
    bytes, as float64."""
    raw = np.ascontiguousarray(x, "<f4").tobytes()
    return np.frombuffer(raw, "<f2", count=np.size(x)).astype(np.float64)


def to_fp16_away(x):
    """Round float64 values to fp16 (11 significant bits, subnormals on the 2**-24 grid), ties away
    from zero; overflow to inf past 65520."""
    x = np.asarray(x, np.float64)
    quantum = np.ldexp(1.0, np.maximum(np.frexp(x)[1] - 11, -24))
    rounded = np.sign(x) * np.floor(np.abs(x) / quantum + 0.5) * quantum
    return np.where(np.abs(rounded) >= 65520.0, np.copysign(np.inf, x), rounded)


def to_bf16_away(x):
    """Round float64 values to bf16 (8 significant bits), ties away from zero."""
    mantissa, exponent = np.frexp(np.asarray(x, np.float64))
    scaled = mantissa * 256.0
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    return np.ldexp(rounded, exponent - 8)


def to_bf16(x, ties="away"):
    """Round float64 values to bf16 (8 significant bits), ties away from zero or to even."""
    if ties == "away":
        return to_bf16_away(x)
    mantissa, exponent = np.frexp(np.asarray(x, np.float64))
    return np.ldexp(np.round(mantissa * 256.0), exponent - 8)  # np.round: half to even


def packed_attention(q, k, v, q_lengths, kv_lengths, kv_starts=None, **kwargs):
    """Expected output [T1, N, Dv] of a packed layout: q [T1, N, D], k/v [T2, Nkv, D|Dv].

    Batch b is query rows starting at sum(q_lengths[:b]) and kv_lengths[b] key rows starting at
    kv_starts[b] (default: sum(kv_lengths[:b])); ``kwargs`` go to ``attention`` per batch.
    """
    q_starts = np.concatenate(([0], np.cumsum(q_lengths)[:-1])).astype(int)
    if kv_starts is None:
        kv_starts = np.concatenate(([0], np.cumsum(kv_lengths)[:-1])).astype(int)
    out = np.zeros(q.shape[:2] + (v.shape[2],))
    for q0, aq, k0, ak in zip(q_starts, q_lengths, kv_starts, kv_lengths):
        bnsd = [x[None].transpose(0, 2, 1, 3) for x in (q[q0 : q0 + aq], k[k0 : k0 + ak], v[k0 : k0 + ak])]
        out[q0 : q0 + aq] = attention(*bnsd, **kwargs)[0].transpose(1, 0, 2)
    return out


def mla_blocks(act_q, act_kv, d, sh_lengths=None):
    """The query blocks the MLA base-API kernels (D > 256) compute, walked one block at a time as
    `unpad_flashattention_mla` does: (first query token, rows, first key token, keys, softmax key
    block) each; the softmax takes the keys PP_NN at a time, two PP_NN blocks at once past four.

    act_q/act_kv: the tiling's per-batch lengths; sh_lengths: the raw arrays the kernel indexes for
    SH (None for the other layouts, where every batch after 0 takes the longest lengths). The
    tiling counts blocks with its own lengths; the kernel starts batch 0 with the longest lengths
    but batch 0's block size, and lays each batch right after the previous one's lengths.
    """

    def align(x):
        return (x + 15) // 16 * 16

    def block_rows(q_len, kv_len):  # GetPPmnIbd, isMLA; indices clamped at 0 as the tiling does
        e = align(d)
        n_ubd = min(16384 // max(e, 128) // 16 * 16, align(kv_len))
        cols = 256 if n_ubd > 256 else 16 * max(n_ubd // 16, 1)
        m_ubd = min(16384 // max(e, cols) // 16 * 16, align(q_len))
        return 128 if m_ubd > 128 else 16 * max(m_ubd // 16, 1), cols

    def count(q_len, rows):
        return -(-q_len // rows) if q_len else 0

    total = sum(count(q, block_rows(q, kv)[0]) for q, kv in zip(act_q, act_kv))
    rows, cols = block_rows(act_q[0], act_kv[0])
    cur, pre, batch, q0, k0 = count(act_q[0], rows), 0, 0, 0, 0
    q_len, kv_len = max(act_q), max(act_kv)
    blocks = []
    for block in range(total):
        while block >= cur:
            batch, pre, q0, k0 = batch + 1, cur, q0 + q_len, k0 + kv_len
            if sh_lengths is not None:
                q_len, kv_len = sh_lengths[0][batch], sh_lengths[1][batch]
            rows, cols = block_rows(q_len, kv_len)
            cur += count(q_len, rows)
        if q_len == 0 or kv_len == 0:
            continue
        m = block - pre
        size = q_len - m * rows if m == count(q_len, rows) - 1 else rows
        blocks.append((q0 + m * rows, size, k0, kv_len, cols * (2 if count(kv_len, cols) > 4 else 1)))
    return blocks


def mla_attention(q, k, v, blocks, *, scale):
    """Expected output [T, N, Dv] of the MLA base-API kernels for token tensors q [T1, N, D], k/v
    [T2, Nkv, D] and the ``mla_blocks`` they compute: fp16 by ``mla_half_attention``, bf16 by
    ``attention`` (its P and output to nearest even) over the kernel's key blocks. Rows of no
    block are 0."""
    out = np.zeros(q.shape[:2] + (v.shape[2],))
    for q0, rows, k0, keys, key_block in blocks:
        qs, ks, vs = q[q0 : q0 + rows], k[k0 : k0 + keys], v[k0 : k0 + keys]
        if q.dtype == np.float16:
            out[q0 : q0 + rows] = mla_half_attention(qs, ks, vs, scale=scale, block=key_block)
        else:
            bnsd = [x[None].transpose(0, 2, 1, 3) for x in (qs, ks, vs)]
            out[q0 : q0 + rows] = attention(*bnsd, scale=scale, sparse_mode=1, bf16_even=True, kv_block=key_block)[
                0
            ].transpose(1, 0, 2)
    return out


def mla_half_attention(q, k, v, *, scale, block, mask=None):
    """Expected output [S1, N, Dv] of the fp16 MLA base-API kernel (`prompt_flash_attention_base_mla.h`)
    for q [S1, N, D], k/v [S2, Nkv, D] fp16: its half-precision online softmax over key blocks of
    ``block`` columns. Scores fp16(QKᵀ), then fp16(S · fp16(scale)); the running max in fp16,
    fp16(S − max) and fp16(old max − new max) before the exponentials; P = fp16(E); row sum and
    output accumulator unrounded; returned as fp16(O) / fp16(l), unrounded (the kernel divides in
    half: the standard measures that rounding). ``mask`` None or [N, S1, S2]: added to the scaled
    scores in half, fp16(S + mask) (V3's sparseMode 21 pseShift).
    """
    s1, n, _ = q.shape
    s2, nkv, dv = v.shape
    tor = to_fp16(np.float32(scale))
    out = np.zeros((s1, n, dv))
    for h in range(n):
        qq, kk, vv = q[:, h].astype(np.float64), k[:, h * nkv // n].astype(np.float64), v[:, h * nkv // n]
        running = None
        for c0 in range(0, s2, block):
            s = to_fp16(to_fp16(qq @ kk[c0 : c0 + block].T) * tor)
            if mask is not None:
                s = to_fp16(s + mask[h, :, c0 : c0 + block].astype(np.float64))
            new = s.max(axis=1) if running is None else np.maximum(s.max(axis=1), running)
            e = np.exp(to_fp16(s - new[:, None]))
            pv = to_fp16(e) @ vv[c0 : c0 + block].astype(np.float64)
            if running is None:
                total, acc = e.sum(axis=1), pv
            else:
                shrink = np.exp(to_fp16(running - new))
                total, acc = total * shrink + e.sum(axis=1), acc * shrink[:, None] + pv
            running = new
        out[:, h] = to_fp16(acc) / to_fp16(total)[:, None]
    return out


def allowed_keys(mode, pre, nxt, has_mask, aq, ak, s1, s2):
    """Boolean [s1, s2]: key j takes part in row i."""
    pre, nxt = min(pre, BIG), min(nxt, BIG)
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    ok = (i < aq) & (j < ak)
    if mode == 0 and has_mask:
        ok &= (j >= i - pre) & (j <= i + nxt)
    elif mode == 2:
        ok &= j <= i
    elif mode == 3:
        ok &= j - i <= ak - aq
    elif mode == 4:
        ok &= (j - i <= nxt + ak - aq) & (i - j <= pre - ak + aq)
    return ok


def attention(
    q,
    k,
    v,
    *,
    scale,
    sparse_mode=0,
    pre=BIG,
    nxt=0,
    act_q=None,
    act_kv=None,
    mask=None,
    deq1=None,
    quant1=None,
    deq2=None,
    quant2=None,
    offset2=None,
    kv_block=1024,
    high_precision=False,
    bf16_even=None,
    pse=None,
    x910_high_precision=False,
    invalid_max=None,
):
    """Expected output [B, N, S1, Dv] as float64 (int8 outputs on the int8 grid).

    q/k/v [B, N(kv), S, D] in fp16, bfloat16 or int8; mask None or [Bm, S1m, S2m];
    quant2/offset2 None or arrays broadcasting to [N, Dv] (index n, d); pse None or [B|1, N, S1, S2];
    x910_high_precision: the A2/A3 high-precision fp16 template; invalid_max: with the row-invalid correction,
    the fill value that marks a row with every key masked (None: no correction).
    """
    b, n, s1, _ = q.shape
    nkv, s2, dv = k.shape[1], k.shape[2], v.shape[3]
    p_ties = "even" if (high_precision if bf16_even is None else bf16_even) else "away"
    kind = str(q.dtype)
    act_q = [s1] * b if act_q is None else list(act_q)
    act_kv = [s2] * b if act_kv is None else list(act_kv)
    out = np.zeros((b, n, s1, dv))
    computed = np.zeros((b, n, s1), bool)
    for bi in range(b):
        ok = allowed_keys(sparse_mode, pre, nxt, mask is not None, act_q[bi], act_kv[bi], s1, s2)
        for ni in range(n):
            h = ni // (n // nkv)
            qq = q[bi, ni].astype(np.float64)
            kk = k[bi, h].astype(np.float64)
            vv = v[bi, h].astype(np.float64)
            s = qq @ kk.T
            if kind == "int8":
                s = float(deq1) * s if high_precision else to_fp16(float(deq1) * s)
            elif kind == "float16" and not (high_precision or x910_high_precision):
                s = to_fp16(s)
            x = s * scale
            if pse is not None:
                x = x + pse[bi if pse.shape[0] > 1 else 0, ni].astype(np.float64)
                if kind == "int8" and not high_precision:
                    x = to_fp16(x)
            if mask is not None:
                m = mask[bi if mask.shape[0] > 1 else 0, :s1, :s2]
                if m.dtype == np.float16:
                    x = x + m.astype(np.float64) * -10000.0
                else:
                    fill = -FLT_MAX if kind == "bfloat16" or high_precision or x910_high_precision else -65504.0
                    x = np.where(m != 0, fill, x)
            x = np.where(ok, x, -np.inf)
            dead = np.zeros(s1, bool) if invalid_max is None else x.max(axis=1) == invalid_max
            o = _blocked_rows(
                x,
                vv,
                kind,
                p_ties,
                None if quant1 is None else float(quant1),
                None if deq2 is None else float(deq2),
                kv_block,
                high_precision,
                x910_high_precision,
            )
            computed[bi, ni] = ok.any(axis=1)
            out[bi, ni] = np.where(computed[bi, ni][:, None] & ~dead[:, None], o, 0.0)
    return _output(out, kind, quant2, offset2, computed, high_precision)


def _blocked_rows(x, vv, kind, p_ties, quant1, deq2, kv_block, arch35=False, fp16_p_away=False):
    """Online softmax over key blocks [c, c + kv_block) aligned at 0, narrowing E per block."""
    rows = x.shape[0]
    m = np.full(rows, -np.inf)
    total = np.zeros(rows)
    acc = np.zeros((rows, vv.shape[1]))
    for c0 in range(0, x.shape[1], kv_block):
        xb = x[:, c0 : c0 + kv_block]
        m_new = np.maximum(m, xb.max(axis=1))
        base = np.where(np.isinf(m_new), 0.0, m_new)
        e = np.exp(xb - base[:, None])
        alpha = np.exp(m - base)
        total = total * alpha + e.sum(axis=1)
        vb = vv[c0 : c0 + kv_block]
        if kind == "int8":
            if arch35:
                e8 = np.clip(np.rint(to_fp16(to_fp16(e) * to_fp16(quant1))), -128, 127)
                part = deq2 * (e8 @ vb)
            else:
                e8 = np.clip(np.rint(to_fp16(e) * quant1), -128, 127)
                part = to_fp16(deq2 * (e8 @ vb))
        else:
            narrow = to_fp16_away if fp16_p_away else to_fp16
            part = (narrow(e) if kind == "float16" else to_bf16(e, p_ties)) @ vb
        acc = acc * alpha[:, None] + part
        m = m_new
    with np.errstate(invalid="ignore", divide="ignore"):
        return acc / total[:, None]


def _output(o, kind, quant2, offset2, computed, arch35=False):
    if quant2 is not None:
        n, dv = o.shape[1], o.shape[3]
        scale = np.broadcast_to(np.asarray(quant2, np.float64), (n, dv))[None, :, None, :]
        offset = np.broadcast_to(np.asarray(0.0 if offset2 is None else offset2, np.float64), (n, dv))[None, :, None, :]
        y = o * scale + offset
        return np.where(computed[..., None], np.clip(np.rint(to_fp16(y) if arch35 else y), -128, 127), 0.0)
    return o


def base_api_mask(pse, sparse_mode, heads, q_lengths, kv_lengths):
    """The bias the base-API kernels add after the scale in sparseMode 21/22 (docs: the pseShift is
    their mask; op_host SetBaseApiPseInfo, op_kernel base-API kernels): per batch b an [N, aq, ak]
    view of the flat pseShift, rows maxSeqLen = max(q_lengths) apart, head n at n * headStride *
    maxSeqLen and batch b at b * maskStride * maxSeqLen. Mode 21 reads a 4-D pse only (strides
    N * max(kv_lengths) and maxSeqLen; a 2-D/3-D one is not read: None); mode 22 reads a 4-D pse
    [B, N, X, Y] at strides N * X and maxSeqLen, a 3-D one at 0 and maxSeqLen, a 2-D one at 0 and 0."""
    rows = max(q_lengths)
    if sparse_mode == 21 and pse.ndim != 4:
        return None
    if pse.ndim == 4:
        batch = pse.shape[1] * pse.shape[2] if sparse_mode == 22 else heads * max(kv_lengths)
        head = rows
    else:
        batch, head = 0, rows if pse.ndim == 3 else 0
    flat = np.ascontiguousarray(pse).reshape(-1).astype(np.float64)
    item = flat.itemsize
    return [
        np.lib.stride_tricks.as_strided(
            flat[b * batch * rows :], shape=(heads, aq, ak), strides=(head * rows * item, rows * item, item)
        ).copy()
        for b, (aq, ak) in enumerate(zip(q_lengths, kv_lengths))
    ]
