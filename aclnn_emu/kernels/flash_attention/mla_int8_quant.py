"""The Atlas A2/A3 IFA route's MLA full-quant attention (IFATiling `quantFlag_` with `ropeFlag_`: INT8
query, key and value with BF16 queryRope and keyRope, query D 512, the DeepSeek INT8 decode), the
kernel `IncreFlashAttentionAttenPreloadMla` with QUANT (arch32/incre_flash_attention_preload_mla.h)
and its cube service `IfaMatmulFullQuant` (arch32/ifa_service_matmul_full_quant.h), under the
macros ifa_public_define.h sets (QUANT_MM2_FP16, MM1_RES_ADD, MM1_DATO, SOFTMAX_NEW).

Per (batch b, query head n, the one KV head), the query row, keys in blocks of ``kv_block``
(CalcInnerSize: 512 with rope, floored to whole pages) from key 0:
  c    = int32(0x4B200000 + sum_d q k) read as fp32, plus fp32 -(2^23 + 2^21): the INT8 product
         accumulates on a bias whose bits are 2^23 + 2^21, so its fp32 reading is that plus the
         sum (exact for sums in [-2^21, 2^23 - 2^21); outside it the carry reaches the exponent);
         the BF16 rope products then accumulate on it in fp32 (one L0C, ComputeMm1)
  x    = fp32(c * fp32(fp32(dq[b, n] * dk) * scaleValue))             (DealBmm1ResBaseBlock)
  m, E = exp(x - m), l as an online softmax (SoftmaxFlashV2, fp32)
  pMax = fp32(exp(block max - m) + FLOAT_EPS)
  P    = INT8 of fp16 of fp32(E * fp32(127 / pMax)), both casts ties to even (CAST_RINT)
  O_c  = fp16(int32(P V_c) * 2^-10)                   (Fixpipe DEQF16, deqScalar 0x3A800000)
  acc  = fp16(O_0 * fp16(pMax)); after block 0 fp16(fp16(O_c * fp16(pMax)) + fp16(acc * fp16(alpha)))
         with alpha = exp(m_old - m_new) (DealQuantBmm2ResBaseBlock: the running sums in fp16)
  out  = fp32(fp32(fp32(acc) * 1024) / l) * fp32(dv * fp32(1 / 127))
The caller casts ``out`` to BF16 ties to even (Bmm2CastAndCopyOut CAST_RINT).
"""

import numpy as np

from aclnn_emu.kernels import parallel
from aclnn_emu.kernels.flash_attention.mla_full_quant import batch_spans, run_head_stacks
from aclnn_emu.kernels.flash_attention.perblock_quant import FLOAT_EPS

BIAS_BITS = 0x4B200000  # 1260388352: the int32 bias of the INT8 product, fp32 2^23 + 2^21
BIAS_VALUE = np.float32(-(2.0**23 + 2.0**21))  # the fp32 product (-2^21) x 5 that takes it off
P_SCALE = np.float32(127)  # scaleP1
P_SCALE_REC = np.float32(1 / 127.0)  # scaleP2, a float constant
MM2_DEQ = np.float32(2.0**-10)  # the Fixpipe deqScalar of P V
MM2_DEQ_REC = np.float32(1024)


def product_as_float(sums: np.ndarray) -> np.ndarray:
    """The INT8 product sums as the vector unit reads them: the int32 accumulator (bias + sum,
    wrapping) taken as fp32 bits, then the bias's value taken off in fp32."""
    acc = (np.int64(BIAS_BITS) + sums.astype(np.int64)).astype(np.uint32)
    return acc.view(np.float32) + BIAS_VALUE


def narrow_p(e: np.ndarray, p_max: np.ndarray) -> np.ndarray:
    """P as the INT8 values the second matmul takes: fp32 E times 127 / pMax, to fp16 then to INT8,
    both ties to even."""
    scaled = e * (P_SCALE / p_max)
    return np.rint(scaled.astype(np.float16).astype(np.float32))


def mla_int8_attention(q, q_rope, k, k_rope, v, dq, dk, dv, *, scale: float, act_kv, kv_block: int) -> np.ndarray:
    """q [B, N, 1, 512] and k [B, 1, S2, 512], v [B, 1, S2, Dv]: INT8 values as float32; q_rope
    [B, N, 1, 64], k_rope [B, 1, S2, 64]: the BF16 values as float32; dq [B, N] float32; dk, dv
    float32 scalars; keys past act_kv[b] are not walked. Returns the fp32 output [B, N, 1, Dv]
    before its cast (batches without keys 0)."""
    b, n = q.shape[:2]
    out = np.zeros((b, n, 1, v.shape[3]), np.float32)
    row_scales = (dq.astype(np.float32) * np.float32(dk)) * np.float32(scale)
    out_scale = np.float32(dv) * P_SCALE_REC
    spans = batch_spans(b, [1] * b, act_kv)

    def heads(span, h0, h1):
        bi, _, _, _, s2 = spans[span]
        o = _walk(
            q[bi, h0:h1, 0], q_rope[bi, h0:h1, 0], k[bi, 0, :s2], k_rope[bi, 0, :s2], v[bi, 0, :s2],
            row_scales[bi, h0:h1, None], kv_block,
        )  # fmt: skip
        out[bi, h0:h1, 0] = o * out_scale

    run_head_stacks(spans, n, heads)
    return out


def _walk(q, q_rope, k, k_rope, v, row_scale, kv_block: int) -> np.ndarray:
    """One batch's stacked query rows [rows, D] over its keys: the fp32 fp32(acc * 1024) / l."""
    running_max = row_sum = acc = None
    for c0 in range(0, k.shape[0], kv_block):
        parallel.checkpoint()
        c1 = min(c0 + kv_block, k.shape[0])
        sums = np.matmul(q, k[c0:c1].T)  # integers below 2^24: exact in fp32
        c = product_as_float(sums) + np.matmul(q_rope, k_rope[c0:c1].T)
        x = c * row_scale
        block_max = x.max(axis=1, keepdims=True)
        new_max = block_max if running_max is None else np.maximum(running_max, block_max)
        e = np.exp(x - new_max)
        p_max = np.exp(block_max - new_max) + FLOAT_EPS
        pv = np.matmul(narrow_p(e, p_max), v[c0:c1])  # integers below 2^24: exact in fp32
        o = (pv * MM2_DEQ).astype(np.float16) * p_max.astype(np.float16)
        block_sum = e.sum(axis=1, keepdims=True, dtype=np.float32)
        if running_max is None:
            row_sum, acc = block_sum, o
        else:
            alpha = np.exp(running_max - new_max)
            row_sum = row_sum * alpha + block_sum
            acc = o + acc * alpha.astype(np.float16)
        running_max = new_max
    assert acc is not None and row_sum is not None  # keys > 0: one block at least
    return (acc.astype(np.float32) * MM2_DEQ_REC) / row_sum
