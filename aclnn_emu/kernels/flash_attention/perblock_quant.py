"""Ascend910_95's per-block full-quant attention (PromptFlashAttentionTilingV2 `enablePerblockQuant`:
FLOAT8_E4M3FN or HIFLOAT8 query, key and value, queryQuantMode = key/valueAntiquantMode = 7), the
base-API `FlashAttentionScoreKernelInfer` on 8-bit inputs (`common/op_kernel/arch35`).

The tiling sets sInner to 256 (GetEnableDN), the kernels take the DN path (no mask, pse or rope),
and the key blocks are the scales' blocks. Per (batch b, query head n, KV head n // G), query row i,
key block c = keys [256c, 256c + 256):
  dScale = fp32(scaleValue * fp32(dq[b, n, i // 128] * dk[b, n2, c]))    (ProcessVec1Dn)
  raw    = Q K_c^T, fp32 sums of the exact 8-bit products
  m_c    = fp32(max_j raw * dScale); m = max(m_prev, m_c); alpha = exp(m_prev - m)
  E      = exp(fp32(raw * dScale) - m)                                   (FusedExpSub)
  l      = l_prev * alpha + sum_j E                                       (E before narrowing)
  P      = E in the input type, saturated: FP8 E4M3 ties to even (CAST_RINT), HiFloat8 ties away
           (CAST_ROUND) (vf_mul_sel_softmaxflashv2_cast_nz_dn.h); no scale for P
  O_c    = P V_c, fp32 sums
  acc    = O_0; then acc * alpha * dv[0] + O_1 * dv[1] at c = 1 (the first block meets its value
           scale only here), acc * alpha + O_c * dv[c] after     (vf_flashupdate_new.h)
  out    = acc / l; a single block: O_0 * dv[0] / l                       (LastDivNew)
The caller casts ``out`` to fp16/bf16 ties away (Bmm2DataCopyOut CAST_ROUND).
"""

import numpy as np

from aclnn_emu.kernels import native, parallel
from aclnn_emu.kernels.casts import cast_rint_e4m3, cast_round_hif8, hif8_to_float32

Q_SCALE_ROWS = 128  # FP8_QUANT_BLOCK_SIZE: query rows per dequantScaleQuery entry
KV_BLOCK = 256  # FP8_QUANT_KV_BLOCK_SIZE: keys per key/value scale entry, and the key block


def narrow_p_e4m3(e: np.ndarray) -> np.ndarray:
    return cast_rint_e4m3(e).astype(np.float32)


def narrow_p_hif8(e: np.ndarray) -> np.ndarray:
    return hif8_to_float32(cast_round_hif8(e))


def perblock_attention(q, k, v, dq, dk, dv, scale: float, narrow_p) -> np.ndarray:
    """q [B, N, S1, D], k [B, N2, S2, D], v [B, N2, S2, Dv]: float32 holding the 8-bit values;
    dq [B, N, ceil(S1 / 128)], dk / dv [B, N2, ceil(S2 / 256)] float32; ``narrow_p`` maps fp32 E to
    the fp32 values of P. Returns the fp32 output [B, N, S1, Dv] before its cast."""
    b, n, s1, _ = q.shape
    n2, s2, dv_size = k.shape[1], k.shape[2], v.shape[3]
    out = np.zeros((b, n, s1, dv_size), np.float32)
    if s1 == 0 or s2 == 0:
        return out
    group = n // n2
    kept = native.KeptPanels()

    def head(task):
        with np.errstate(over="ignore", invalid="ignore"):  # inf/NaN scores run on, as on the hardware
            _head(*task)

    def _head(bi, ni):
        ki = ni // group
        keys, values = kept.get((bi, ki), k[bi, ki], v[bi, ki])
        queries = np.ascontiguousarray(q[bi, ni])
        row_dq = np.repeat(dq[bi, ni], Q_SCALE_ROWS)[:s1]
        scale32 = np.float32(scale)
        running_max = row_sum = acc = None
        for c, c0 in enumerate(range(0, s2, KV_BLOCK)):
            parallel.checkpoint()
            c1 = min(c0 + KV_BLOCK, s2)
            d_scale = (scale32 * (row_dq * dk[bi, ki, c]))[:, None]
            raw = native.matmul_panels(np.empty((s1, c1 - c0), np.float32), queries, keys, c0)
            block_max = raw.max(axis=1, keepdims=True) * d_scale
            new_max = block_max if running_max is None else np.maximum(running_max, block_max)
            e = np.exp(raw * d_scale - new_max)
            pv = native.matmul_panels(np.empty((s1, dv_size), np.float32), narrow_p(e), values.rows(c0, c1))
            block_sum = e.sum(axis=1, keepdims=True, dtype=np.float32)
            if running_max is None:
                row_sum, acc = block_sum, pv
            else:
                alpha = np.exp(running_max - new_max)
                row_sum = row_sum * alpha + block_sum
                acc = acc * alpha
                if c == 1:
                    acc = acc * dv[bi, ki, 0]
                acc = acc + pv * dv[bi, ki, c]
            running_max = new_max
        if s2 <= KV_BLOCK:
            acc = acc * dv[bi, ki, 0]
        out[bi, ni] = acc / row_sum

    parallel.map_ordered(head, [(bi, ni) for bi in range(b) for ni in range(n)])
    return out
