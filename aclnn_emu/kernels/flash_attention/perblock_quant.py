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

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aclnn_emu.kernels import native, parallel
from aclnn_emu.kernels.casts import cast_rint_e4m3, cast_round_hif8, hif8_to_float32

Q_SCALE_ROWS = 128  # FP8_QUANT_BLOCK_SIZE: query rows per dequantScaleQuery entry
KV_BLOCK = 256  # FP8_QUANT_KV_BLOCK_SIZE: keys per key/value scale entry, and the key block
P_MAX = np.float32(448)  # fp8e4m3MaxValue (vf_basic_block_utils.h)
P_MAX_REC = np.float32(1 / 448)  # fp8e4m3MaxValueRec, a float constant
FLOAT_EPS = np.float32(2.220446049250313e-16)  # floatEps, added to pScale


def narrow_p_e4m3(e: np.ndarray) -> np.ndarray:
    return cast_rint_e4m3(e).astype(np.float32)


def narrow_p_hif8(e: np.ndarray) -> np.ndarray:
    return hif8_to_float32(cast_round_hif8(e))


@dataclass(frozen=True)
class Walk:
    """What the 8-bit full-quant kernels' key walk varies on: the key block, the scores of a block
    of raw products (``scores(raw, c0, c1)`` -> (x, its row max), fp32), P's narrowing, the value
    scale of key block c, and (MLA full quant) P taken against its own block's max."""

    block: int
    scores: Callable
    narrow_p: Callable
    dv: Callable
    rescaled_p: bool = False


def walk_keys(queries, keys, values, s2: int, walk: Walk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The online softmax over keys [0, s2) of one (batch, head): ``queries`` [rows, D] float32,
    ``keys``/``values`` native panels. With ``rescaled_p`` (vf_basic_block_*_update.h
    USE_MLA_FULLQUANT_V1_P, vf_flashupdate_new.h): P = E * 448 in block 0, after it
    fp32(E * 448) / pScale with pScale = fp32(exp(block max - m) + floatEps), so P's largest value is
    448 in every block; the block's P V is multiplied by pScale before its value scale, and the output by
    fp32(1 / 448). Returns the fp32 rows [rows, Dv] before the output cast, and each row's running max
    m and sum l [rows, 1] (s2 > 0)."""
    rows = queries.shape[0]
    running_max = row_sum = acc = None
    for c, c0 in enumerate(range(0, s2, walk.block)):
        parallel.checkpoint()
        c1 = min(c0 + walk.block, s2)
        raw = native.matmul_panels(np.empty((rows, c1 - c0), np.float32), queries, keys, c0)
        x, block_max = walk.scores(raw, c0, c1)
        new_max = block_max if running_max is None else np.maximum(running_max, block_max)
        e = np.exp(x - new_max)
        p, p_scale = e, None
        if walk.rescaled_p:
            p = e * P_MAX
            if running_max is not None:
                p_scale = np.exp(block_max - new_max) + FLOAT_EPS
                p = p / p_scale
        pv = native.matmul_panels(np.empty((rows, values.n), np.float32), walk.narrow_p(p), values.rows(c0, c1))
        block_sum = e.sum(axis=1, keepdims=True, dtype=np.float32)
        if running_max is None:
            row_sum, acc = block_sum, pv
        else:
            if p_scale is not None:
                pv = pv * p_scale
            alpha = np.exp(running_max - new_max)
            row_sum = row_sum * alpha + block_sum
            acc = acc * alpha
            if c == 1:
                acc = acc * walk.dv(0)
            acc = acc + pv * walk.dv(c)
        running_max = new_max
    assert acc is not None and running_max is not None and row_sum is not None  # s2 > 0: one block at least
    if s2 <= walk.block:
        acc = acc * walk.dv(0)
    out = acc / row_sum
    return (out * P_MAX_REC if walk.rescaled_p else out), running_max, row_sum


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
        row_dq = np.repeat(dq[bi, ni], Q_SCALE_ROWS)[:s1]
        scale32 = np.float32(scale)

        def scores(raw, c0, c1):  # ProcessVec1Dn: the block max of the raw products, then scaled
            d_scale = (scale32 * (row_dq * dk[bi, ki, c0 // KV_BLOCK]))[:, None]
            return raw * d_scale, raw.max(axis=1, keepdims=True) * d_scale

        walk = Walk(KV_BLOCK, scores, narrow_p, lambda c: dv[bi, ki, c])
        keys, values = kept.get((bi, ki), k[bi, ki], v[bi, ki])
        out[bi, ni] = walk_keys(np.ascontiguousarray(q[bi, ni]), keys, values, s2, walk)[0]

    parallel.map_ordered(head, [(bi, ni) for bi in range(b) for ni in range(n)])
    return out
