"""Float64 reference of FusedInferAttentionScore's MLA full quant on Atlas A2/A3 (INT8 query, key and
value, BF16 queryRope and keyRope, query D 512, one query row per batch), written from
docs/design/fused_infer_attention_score.md §"MLA full quant on Atlas A2/A3"
(arch32/incre_flash_attention_preload_mla.h with QUANT, arch32/ifa_service_matmul_full_quant.h).

Independent of aclnn_emu.kernels. Rules modelled, per (batch, query head):
- x = (q . k + qr . kr) * dq * dk * scale: the rope product joins the INT8 one before the dequant;
- keys past the batch's length are absent; keys in blocks of ``kv_block`` from key 0;
- online softmax: E = exp(x - running max m), l sums E (unquantised);
- P = E * 127 / pMax rounded to an integer (ties to even), pMax = exp(block max - m) + 2^-52;
  O = sum over blocks of pMax * (P V), rescaled by exp(m_old - m_new); out = O / l * dv / 127;
  the kernel's fp16 running sums are left out (their error is below BF16's);
- `floor`: per element the same sums over |P V|, the scale below which a cancelling sum is judged
  absolutely.
"""

import numpy as np

from golden.perblock_quant import Golden

P_SCALE, EPS = 127.0, 2.220446049250313e-16


def attention(q, q_rope, k, k_rope, v, dq, dk, dv, *, scale, act_kv, kv_block) -> Golden:
    """q [B, N, 512], q_rope [B, N, 64], k [B, S2, 512], k_rope [B, S2, 64], v [B, S2, Dv] as float64
    values; dq [B, N]; dk, dv scalars; ``act_kv`` the keys per batch. Returns [B, N, 1, Dv]."""
    b_size, n = q.shape[:2]
    out = np.zeros((b_size, n, 1, v.shape[2]))
    floor = np.zeros_like(out)
    for b in range(b_size):
        ak = act_kv[b]
        if ak == 0:
            continue
        raw = q[b] @ k[b, :ak].T + q_rope[b] @ k_rope[b, :ak].T
        x = raw * (dq[b] * dk * scale)[:, None]
        o, size = _walk(x, v[b, :ak], kv_block)
        out[b, :, 0], floor[b, :, 0] = o * dv / P_SCALE, size * abs(dv) / P_SCALE
    return Golden(out, floor)


def _walk(x, vv, kv_block):
    rows = x.shape[0]
    m = np.full((rows, 1), -np.inf)
    l_sum = np.zeros((rows, 1))
    acc, size = np.zeros((rows, vv.shape[1])), np.zeros((rows, vv.shape[1]))
    for c0 in range(0, x.shape[1], kv_block):
        block = x[:, c0 : c0 + kv_block]
        block_max = block.max(axis=1, keepdims=True)
        m_new = np.maximum(m, block_max)
        alpha = np.exp(m - m_new)
        e = np.exp(block - m_new)
        p_max = np.exp(block_max - m_new) + EPS
        p = np.rint(e * P_SCALE / p_max)
        l_sum = l_sum * alpha + e.sum(axis=1, keepdims=True)
        acc = acc * alpha + p_max * (p @ vv[c0 : c0 + kv_block])
        size = size * alpha + p_max * (p @ np.abs(vv[c0 : c0 + kv_block]))
        m = m_new
    return acc / l_sum, size / l_sum
