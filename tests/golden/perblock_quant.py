"""Float64 reference of FusedInferAttentionScore's per-block full quant on Ascend910_95 (FP8 E4M3 or
HiFloat8 query, key and value; queryQuantMode = keyAntiquantMode = valueAntiquantMode = 7), written
from docs/design/fused_infer_attention_score.md §"Query quantisation on Ascend910_95" (the arch35
base-API kernels, `flash_attention_score_block_vec_base.h`, `vf_flashupdate_new.h`).

Independent of aclnn_emu.kernels. Rules modelled, per (batch, query head n, KV head n // G):
- x = (q . k) * scale * dq[i // 128] * dk[j // 256] (the 8-bit values taken exactly);
- keys in blocks of 256 from key 0; online softmax: E = exp(x - running max), l sums E before any
  narrowing, P = E narrowed to the input type (FP8 E4M3 ties to even, HiFloat8 ties away);
- O = sum over blocks of dv[c] * (P V), rescaled by exp(m_old - m_new); out = O / l, unrounded.
- `floor`: per element sum_j |P_j V_jd| dv / l, the scale below which a cancelling sum is judged
  absolutely (as in golden.fused_infer_attention_score).
"""

from dataclasses import dataclass

import numpy as np

from golden import hifloat8

Q_ROWS, KV_BLOCK = 128, 256


def _e4m3_grid() -> np.ndarray:
    """The non-negative finite FLOAT8_E4M3FN values by code 0x00-0x7E (exponent bias 7, 3 mantissa
    bits, subnormals for exponent field 0; 0x7F is NaN)."""
    codes = np.arange(0x7F)
    e, m = codes >> 3, codes & 7
    return np.where(e == 0, m * 2.0**-9, (1 + m / 8) * 2.0 ** (e - 7))


E4M3_GRID = _e4m3_grid()


def e4m3_even(x) -> np.ndarray:
    """|x| <= 448 rounded to FLOAT8_E4M3FN values, ties to the even code (float64)."""
    a = np.abs(np.asarray(x, np.float64))
    hi = np.minimum(np.searchsorted(E4M3_GRID, a), len(E4M3_GRID) - 1)
    lo = np.maximum(hi - 1, 0)
    below, above = a - E4M3_GRID[lo], E4M3_GRID[hi] - a
    pick = np.where(below < above, lo, np.where(above < below, hi, np.where(hi % 2 == 0, hi, lo)))
    return np.copysign(E4M3_GRID[pick], x)


def hif8_away(x) -> np.ndarray:
    """x rounded to HiFloat8 values, ties away (the format paper's CAST_ROUND, bit by bit)."""
    flat = [hifloat8.decode(hifloat8.reference_round(float(v))) for v in np.ravel(x)]
    return np.reshape(np.array(flat, np.float64), np.shape(x))


@dataclass
class Golden:
    out: np.ndarray  # [B, N, S1, Dv]
    floor: np.ndarray  # [B, N, S1, Dv]


def attention(q, k, v, dq, dk, dv, *, scale, narrow_p) -> Golden:
    """q [B, N, S1, D], k [B, N2, S2, D], v [B, N2, S2, Dv] as float64 values; dq [B, N, ceil(S1/128)],
    dk/dv [B, N2, ceil(S2/256)]; ``narrow_p``: e4m3_even or hif8_away."""
    b_size, n, s1, _ = q.shape
    n2, s2, d_v = k.shape[1], k.shape[2], v.shape[3]
    out = np.zeros((b_size, n, s1, d_v))
    floor = np.zeros_like(out)
    for b in range(b_size):
        for h in range(n):
            kv = h // (n // n2)
            row_scale = np.repeat(dq[b, h], Q_ROWS)[:s1, None]
            key_scale = np.repeat(dk[b, kv], KV_BLOCK)[None, :s2]
            x = (q[b, h] @ k[b, kv].T) * scale * row_scale * key_scale
            m = np.full((s1, 1), -np.inf)
            l_sum = np.zeros((s1, 1))
            acc, size = np.zeros((s1, d_v)), np.zeros((s1, d_v))
            for c, c0 in enumerate(range(0, s2, KV_BLOCK)):
                block = x[:, c0 : c0 + KV_BLOCK]
                m_new = np.maximum(m, block.max(axis=1, keepdims=True))
                alpha = np.exp(m - m_new)
                e = np.exp(block - m_new)
                l_sum = l_sum * alpha + e.sum(axis=1, keepdims=True)
                p = narrow_p(e)
                vv = v[b, kv, c0 : c0 + KV_BLOCK] * dv[b, kv, c]
                acc = acc * alpha + p @ vv
                size = size * alpha + p @ np.abs(vv)
                m = m_new
            out[b, h], floor[b, h] = acc / l_sum, size / l_sum
    return Golden(out, floor)
