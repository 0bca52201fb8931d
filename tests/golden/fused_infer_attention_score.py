"""Float64 reference of FusedInferAttentionScore's FIA-V3 non-quant kernels (Atlas A2/A3), written
from docs/design/fused_infer_attention_score.md §3 (attention/common/op_kernel/arch32/
fia_block_vec_nonquant.h).

Independent of aclnn_emu.kernels: plain float64 per (batch, query head), the whole score row at
once, then walked in key blocks for the roundings that depend on the running max.

Rules modelled:
- Query head n reads KV head n // (N / Nkv). MLA: Q·Kᵀ + Q_rope·K_ropeᵀ.
- x = (q . k) * scale; keys outside the row's band (``allowed_keys``, the sparse modes) or masked
  by attenMask become -1e12; rows past act_q and rows without any key in their band are 0.
- Online softmax over key blocks [c, c + kv_block) aligned at 0 (only blocks holding a key of the
  row's band count): E = exp(x - running max); l sums the un-narrowed E; P = E rounded ties away
  to the key dtype; O = sum P V, rescaled by exp(m_old - m_new).
- sink (per query head): l += exp(sink - m) after the last block; m does not see it.
- lse = log(l) + m; a row whose max stayed -1e12 gets +inf when ``masked_lse_inf``; rows never
  reached keep ``lse_unseen``.
- Output O / l returned unrounded (the standard then measures the emulator's final rounding).
- `floor`: per element sum |P_j V_jd| / l, the scale below which a cancelling sum is judged
  absolutely (a P_j whose fp32 exponential lands on the other side of a midpoint than the float64
  one moves the sum by an ulp of that term), as in golden.incre_flash_attention.
"""

from dataclasses import dataclass

import numpy as np

from golden.incre_flash_attention import fp16_away
from golden.prompt_flash_attention import BIG, allowed_keys, to_bf16_away

MASK_FILL = -1e12


@dataclass
class Golden:
    out: np.ndarray  # [B, N, S1, Dv]
    lse: np.ndarray  # [B, N, S1]
    floor: np.ndarray  # [B, N, S1, Dv]


def p_round(x, dtype):
    """P's CAST_ROUND to the key dtype."""
    return fp16_away(x) if np.dtype(dtype) == np.float16 else to_bf16_away(x)


def attention(
    q,
    k,
    v,
    *,
    scale,
    kv_block,
    sparse_mode=0,
    pre=BIG,
    nxt=BIG,
    act_q=None,
    act_kv=None,
    mask=None,
    has_mask=None,
    rope=None,
    sink=None,
    masked_lse_inf=False,
    lse_unseen=np.inf,
    pse=None,
):
    """``Golden`` (out, lse, floor) as float64 for q [B, N, S1, D], k [B, Nkv, S2, D],
    v [B, Nkv, S2, Dv]; mask [B|1, S1, S2] (nonzero = masked); ``has_mask`` whether a mask was
    given (a compressed mask of sparse modes 2-4 selects keys by band only; default: mask given);
    rope = (q_rope, k_rope); pse [B|1, N, >= S1, >= S2] added to the scaled scores."""
    b_size, n, s1, _ = q.shape
    nkv, s2, dv = k.shape[1], k.shape[2], v.shape[3]
    group = n // nkv
    act_q = [s1] * b_size if act_q is None else act_q
    act_kv = [s2] * b_size if act_kv is None else act_kv
    out = np.zeros((b_size, n, s1, dv))
    floor = np.zeros_like(out)
    lse = np.full((b_size, n, s1), lse_unseen, np.float64)
    for b in range(b_size):
        has = mask is not None if has_mask is None else has_mask
        ok = allowed_keys(sparse_mode, pre, nxt, has, act_q[b], act_kv[b], s1, s2)
        masked = np.zeros((s1, s2), bool) if mask is None else mask[b if mask.shape[0] > 1 else 0] != 0
        for h in range(n):
            kv = h // group
            x = q[b, h].astype(np.float64) @ k[b, kv].astype(np.float64).T
            if rope is not None:
                x += rope[0][b, h].astype(np.float64) @ rope[1][b, kv].astype(np.float64).T
            x = x * scale
            if pse is not None:
                x = x + pse[b if pse.shape[0] > 1 else 0, h, :s1, :s2].astype(np.float64)
            x[masked | ~ok] = MASK_FILL
            for i in range(act_q[b]):
                keys = np.flatnonzero(ok[i])
                if not len(keys):
                    continue
                row_sink = None if sink is None else float(sink[h])
                vv = v[b, kv].astype(np.float64)
                o, size, l_sum, m = _row(x[i], vv, keys[0], keys[-1] + 1, kv_block, k.dtype, row_sink)
                out[b, h, i], floor[b, h, i] = o / l_sum, size / l_sum
                lse[b, h, i] = np.inf if masked_lse_inf and m == MASK_FILL else np.log(l_sum) + m
    return Golden(out, lse, floor)


def _row(x, vv, j0, j1, kv_block, dtype, sink):
    """(sum P V, sum |P V|, l, m) of one row over the key blocks holding [j0, j1), aligned at 0."""
    m, l_sum, acc, size = -np.inf, 0.0, np.zeros(vv.shape[1]), np.zeros(vv.shape[1])
    for c in range(j0 - j0 % kv_block, j1, kv_block):
        c0, c1 = max(c, j0), min(c + kv_block, j1)
        block = x[c0:c1]
        m_new = max(m, block.max())
        alpha = np.exp(m - m_new)
        e = np.exp(block - m_new)
        l_sum = l_sum * alpha + e.sum()
        p = p_round(e, dtype)
        acc = acc * alpha + p @ vv[c0:c1]
        size = size * alpha + p @ np.abs(vv[c0:c1])
        m = m_new
    if sink is not None:
        l_sum += np.exp(sink - m)
    return acc, size, l_sum, m


def prefixed(prefix, batches, rows):
    """Each batch's keys (or values) [N2, S_b, D] behind the shared prefix's first ``rows`` rows
    (prefix [1, N2, Sp, D]): every batch attends to the prefix first, then to its own."""
    return [np.concatenate([prefix[0, :, :rows], x], axis=1) for x in batches]


def key_strided_prefix(prefix, layout: str, n2: int, d: int):
    """A shared prefix as Ascend910_95's PFA kernels address it whatever its own heads: its memory
    in order as [1, Sp, N2, D] (BSH/BSND) or [1, N2, Sp, D] (BNSD), Sp its own S axis (1, or 2 for
    BNSD), returned as [1, N2, Sp, D]. Elements past its end read as NaN (no call may use them)."""
    sp = prefix.shape[2 if layout == "BNSD" else 1]
    flat = prefix.astype(np.float64).reshape(-1)
    flat = np.concatenate([flat, np.full(max(0, n2 * sp * d - flat.size), np.nan)])[: n2 * sp * d]
    if layout == "BNSD":
        return flat.reshape(1, n2, sp, d)
    return flat.reshape(1, sp, n2, d).transpose(0, 2, 1, 3)


def alibi(slopes, pse_type, s1, s2, q_start=0, kv_start=0):
    """[1, N, S1, S2] float64 bias of the arch35 alibi kernels (pseType 2: -slope_n |d|, 3: -slope_n sqrt|d|)
    with d = (j + kv_start) - (i + q_start) for query row i and key j (attention/common/op_kernel/arch35/pse.h
    ComputeInnerPseOffset, vf_basic_block_*.h): add it to the scaled scores."""
    d = np.abs((np.arange(s2)[None, :] + kv_start) - (np.arange(s1)[:, None] + q_start)).astype(np.float64)
    d = np.sqrt(d) if pse_type == 3 else d
    return -np.asarray(slopes, np.float64).reshape(-1)[None, :, None, None] * d[None, None]
