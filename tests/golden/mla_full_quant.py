"""Float64 reference of FusedInferAttentionScore's MLA full quant on Ascend910_95 (FP8 E4M3 query, key
and value, BF16 queryRope and keyRope, query D 512), written from docs/design/fused_infer_attention_score.md
§"MLA full quant on Ascend910_95" (`FlashAttentionScoreKernelInferMlaFullquant`,
`flash_attention_score_block_cube.h` IterateBmm1MLAFullQuant, `vf_basic_block_*.h`, `vf_flashupdate_new.h`).

Independent of aclnn_emu.kernels. Rules modelled, per (batch, query head n, the one KV head), row i:
- x = (q . k + qr . kr) * dq[i] * scale * dk: the rope product joins the 8-bit one before the dequant;
- keys past the batch's length are absent; under sparse mode 3 key j is seen by row i when
  j - i <= act_kv - S1 (the bottom-right causal band);
- keys in blocks of 128 from key 0; online softmax: E = exp(x - running max m), l sums E;
  P = E * 448 narrowed to FP8 E4M3 ties to even, from block 1 divided first by
  pScale = exp(block max - m) + 2^-52; O = sum over blocks of dv * pScale * (P V), rescaled by
  exp(m_old - m_new); out = O / l / 448, unrounded.
- `floor`: per element the same sums over |P V|, the scale below which a cancelling sum is judged
  absolutely (as in golden.fused_infer_attention_score);
- softmaxLse: log(sum over the seen keys of exp(x)) per row (`lse`).
"""

import numpy as np

from golden.perblock_quant import Golden, e4m3_even

KV_BLOCK, P_MAX, EPS = 128, 448.0, 2.220446049250313e-16


def attention(q, q_rope, k, k_rope, v, dq, dk, dv, *, scale, act_kv=None, causal=False) -> Golden:
    """q [B, N, S1, 512], q_rope [B, N, S1, 64], k [B, 1, S2, 512], k_rope [B, 1, S2, 64],
    v [B, 1, S2, 512] as float64 values; dq [B, N, S1]; dk, dv scalars; ``act_kv`` the keys per batch."""
    d_v = v.shape[3]
    out = np.zeros(q.shape[:3] + (d_v,))
    floor = np.zeros_like(out)
    for b, h, x in _scores(q, q_rope, k, k_rope, dq, dk, scale, act_kv, causal):
        out[b, h], floor[b, h] = _walk(x, v[b, 0, : x.shape[1]] * dv)
    return Golden(out, floor)


def lse(q, q_rope, k, k_rope, dq, dk, *, scale, act_kv=None, causal=False) -> np.ndarray:
    """softmaxLse [B, N, S1] (arguments as ``attention``)."""
    out = np.zeros(q.shape[:3])
    for b, h, x in _scores(q, q_rope, k, k_rope, dq, dk, scale, act_kv, causal):
        m = x.max(axis=1, keepdims=True)
        out[b, h] = np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
    return out


def _scores(q, q_rope, k, k_rope, dq, dk, scale, act_kv, causal):
    """(batch, head, x [S1, act_kv]) with -inf at the keys a row does not see."""
    b_size, n, s1 = q.shape[:3]
    act_kv = [k.shape[2]] * b_size if act_kv is None else act_kv
    for b in range(b_size):
        ak = act_kv[b]
        keys = np.concatenate([k[b, 0, :ak], k_rope[b, 0, :ak]], axis=-1)
        seen = np.ones((s1, ak), bool)
        if causal:
            seen = np.arange(ak)[None, :] - np.arange(s1)[:, None] <= ak - s1
        for h in range(n):
            raw = np.concatenate([q[b, h], q_rope[b, h]], axis=-1) @ keys.T
            yield b, h, np.where(seen, raw * (dq[b, h] * scale * dk)[:, None], -np.inf)


def _walk(x, vv):
    rows = x.shape[0]
    m = np.full((rows, 1), -np.inf)
    l_sum = np.zeros((rows, 1))
    acc, size = np.zeros((rows, vv.shape[1])), np.zeros((rows, vv.shape[1]))
    for c0 in range(0, x.shape[1], KV_BLOCK):
        block = x[:, c0 : c0 + KV_BLOCK]
        block_max = block.max(axis=1, keepdims=True)
        live = np.isfinite(block_max)  # a row none of whose keys here it sees takes nothing from the block
        m_new = np.where(live, np.maximum(m, block_max), m)
        alpha = np.where(np.isfinite(m), np.exp(m - np.where(np.isfinite(m_new), m_new, 0)), 0.0)
        e = np.where(live, np.exp(block - np.where(live, m_new, 0)), 0.0)
        p_scale = np.where(np.isfinite(m) & live, np.exp(np.where(live, block_max - m_new, 0)) + EPS, 1.0)
        p = e4m3_even(e * P_MAX / p_scale)
        l_sum = l_sum * alpha + e.sum(axis=1, keepdims=True)
        acc = acc * alpha + p_scale * (p @ vv[c0 : c0 + KV_BLOCK])
        size = size * alpha + p_scale * (p @ np.abs(vv[c0 : c0 + KV_BLOCK]))
        m = m_new
    return acc / l_sum / P_MAX, size / l_sum / P_MAX
