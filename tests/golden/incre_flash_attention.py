"""Float64 reference of aclnnIncreFlashAttentionV4 (decode, S = 1), written from the doc and the
arch32 kernel source (incre_flash_attention_preload.h).

Independent of aclnn_emu.kernels: plain float64 per (batch, query head), dense key/value rows
gathered here from a paged cache through its block table.

Rules modelled:
- The keys of batch b are its tokens [start_b, start_b + length_b) (start > 0 with kv left padding);
  a batch without tokens gives 0.
- x = (q . k) * scale + pse[b?, n, start_b + j]; attenMask[b, start_b + j] != 0 -> x = -1e12.
- int8 key/value: k = (k8 + offset) * scale, per tensor (scale[0] keys, scale[1] values) or per
  channel [2, N2, D]; or per token (FusedInferAttentionScore's key/valueAntiquantMode 1): one scale
  and offset per cache position, [B, Sp] or per KV head [B, N2, Sp] (mode 3), read at the batch's
  positions start_b + j (the MSD
  kernels apply them around the int8 products, which is the same sum in exact arithmetic).
- Online softmax per chunk of ``chunk`` tokens (aligned at the batch's first token): E = exp(x -
  running max); l sums the un-narrowed E; E is rounded ties-away to fp16 (fp16 keys/values) or
  bf16 before P V.
- `floor` (returned by `magnitude`): per element the sum of |P_j V_jd| / l, the scale below which a
  result that cancels is judged absolutely: one P_j rounded the other way (its score evaluated in
  fp32 instead of float64 lands on the other side of a midpoint) moves the sum by an ulp of that term.
- Output: fp16/bf16 returned unrounded (the standard then measures the emulator's final rounding);
  int8: per tensor rint(o * s + off), per channel away(fp16_away(o * s[n, d] + off[n, d])), both
  clipped to [-128, 127].
"""

import numpy as np

MASK_FILL = -1e12


def round_away(x, mantissa_bits):
    """Round float64 values to `mantissa_bits` significant bits, ties away from zero."""
    mantissa, exponent = np.frexp(np.asarray(x, np.float64))
    scaled = mantissa * 2.0**mantissa_bits
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    return np.ldexp(rounded, exponent - mantissa_bits)


def fp16_away(x):
    """Ties-away rounding onto the fp16 grid (normal range; subnormals on the 2**-24 grid)."""
    x = np.asarray(x, np.float64)
    normal = round_away(x, 11)
    subnormal = np.sign(x) * np.floor(np.abs(x) * 2.0**24 + 0.5) * 2.0**-24
    return np.where(np.abs(x) < 2.0**-14, subnormal, normal)


def bf16_away(x):
    return round_away(x, 8)


def dense_rows(cache, table, block_size, length, kv_heads, heads_major):
    """[N2, length, D] float64 rows of one batch of a paged cache."""
    out = []
    for j in range(length):
        block, slot = int(table[j // block_size]), j % block_size
        if heads_major:
            out.append(np.asarray(cache[block, :, slot], np.float64))
        else:
            out.append(np.asarray(cache[block, slot], np.float64).reshape(kv_heads, -1))
    d = cache.shape[-1] if heads_major else cache.shape[-1] // kv_heads
    return np.stack(out, axis=1) if out else np.zeros((kv_heads, 0, d))


def _dequant(x, scale, offset, per_token, b, s0, n_tok):
    """(x + offset) * scale over [N2, n_tok, D] rows: per token from [B, Sp] or [B, N2, Sp], else per
    channel [N2, D] or per tensor."""
    if per_token:  # [B, Sp] for every head, [B, N2, Sp] per head
        cols = (b, Ellipsis, slice(s0, s0 + n_tok), None)
        return (x + offset[cols]) * scale[cols]
    return (x + (offset[:, None, :] if offset.ndim == 2 else offset)) * (
        scale[:, None, :] if scale.ndim == 2 else scale
    )


def attention(
    q,
    keys,
    values,
    *,
    scale,
    lengths,
    starts=None,
    mask=None,
    pse=None,
    antiquant=None,
    small_dtype="float16",
    chunk=2048,
    out_quant=None,
    magnitude=None,
    per_token=(False, False),
    lse=None,
):
    """Expected output [B, N, D] as float64 (int8 outputs on the int8 grid).

    q [B, N, D]; keys/values: per batch [N2, S_b, D] arrays (any dtype); mask [B, Sm]; pse
    [B|1, N, Sp]; antiquant (key_scale, key_offset, value_scale, value_offset) scalars or [N2, D],
    or [B, Sp] / [B, N2, Sp] for the key / value side that ``per_token`` marks; out_quant (scale, offset) scalars or
    [N, D]; ``lse`` a [B, N] array that receives log(l) + m of each batch with tokens.
    """
    b_count, heads, d = q.shape
    kv_heads = keys[0].shape[0]
    group = heads // kv_heads
    starts = [0] * b_count if starts is None else starts
    narrow = fp16_away if small_dtype == "float16" else bf16_away
    out = np.zeros((b_count, heads, d))
    for b in range(b_count):
        n_tok, s0 = lengths[b], starts[b]
        if n_tok <= 0 or s0 < 0:
            continue
        k = np.asarray(keys[b][:, s0 : s0 + n_tok], np.float64)
        v = np.asarray(values[b][:, s0 : s0 + n_tok], np.float64)
        if antiquant is not None:
            ks, ko, vs, vo = (np.asarray(x, np.float64) for x in antiquant)
            k = _dequant(k, ks, ko, per_token[0], b, s0, n_tok)
            v = _dequant(v, vs, vo, per_token[1], b, s0, n_tok)
        for n in range(heads):
            x = k[n // group] @ np.asarray(q[b, n], np.float64) * scale
            if pse is not None:
                x = x + np.asarray(pse[b if pse.shape[0] > 1 else 0, n, s0 : s0 + n_tok], np.float64)
            if mask is not None:
                x = np.where(np.asarray(mask[b, s0 : s0 + n_tok]) != 0, MASK_FILL, x)
            m, l, acc, mag = -np.inf, 0.0, np.zeros(d), np.zeros(d)
            for c0 in range(0, n_tok, chunk):
                xc = x[c0 : c0 + chunk]
                m_new = max(m, xc.max())
                alpha = np.exp(m - m_new)
                e = np.exp(xc - m_new)
                l = l * alpha + e.sum()
                acc = acc * alpha + narrow(e) @ v[n // group, c0 : c0 + chunk]
                mag = mag * alpha + narrow(e) @ np.abs(v[n // group, c0 : c0 + chunk])
                m = m_new
            out[b, n] = acc / l
            if lse is not None:
                lse[b, n] = np.log(l) + m
            if magnitude is not None:
                magnitude[b, n] = mag / l
    if out_quant is None:
        return out
    scale2, offset2 = (np.asarray(x, np.float64) for x in out_quant)
    y = out * scale2 + offset2
    if scale2.size == 1 and offset2.size == 1:
        return np.clip(np.rint(y), -128, 127)
    y = fp16_away(y)
    return np.clip(np.sign(y) * np.floor(np.abs(y) + 0.5), -128, 127)
