"""The fp16 MLA base-API kernel's attention (`prompt_flash_attention_base_mla.h`,
`PromptFlashAttentionBaseMLA`, PromptFlashAttentionV2 sparseMode 20-22 with D > 256): its online
softmax runs in half precision. Per key block of ``block`` columns (aligned at the batch's first
key), with gm the running max (fp16), l the row sum and O the output accumulator (fp32):
  S   = fp16(Q Kᵀ)                     the cube's fp32 result stored as half
  S   = fp16(S * fp16(scale))          Muls in half with the scale cast to half (`tor`)
  hm  = max(rowmax(S), gm)             fp16; dm = fp16(gm - hm) (first block: hm = rowmax(S))
  S   = fp16(S - hm); E = exp(fp32(S)) (fp32); P = fp16(E) (RNE)
  l   = l * exp(fp32(dm)) + rowsum(E)  fp32 (first block: rowsum(E))
  O   = O * exp(fp32(dm)) + P V        fp32, P V from the cube (first block: P V)
Output: fp16(O) / fp16(l), divided in half. Half operations round the exact result to nearest even.
All query rows of a batch share its key blocks, so they run together, one block at a time.
"""
import numpy as np

from aclnn_emu.kernels import native

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def _half(x) -> np.ndarray:
    """Round (exact float64 or float32) values to fp16, nearest even."""
    return np.asarray(x).astype(F16)


def mla_half_attention(q, k, v, *, scale: float, block: int) -> np.ndarray:
    """q [N, S1, D], k [Nkv, S2, D], v [Nkv, S2, Dv] fp16 (S2 > 0) -> the output [N, S1, Dv] fp16."""
    n, s1, _ = q.shape
    nkv, s2, dv = v.shape
    group = n // nkv
    queries = native.widen(q).reshape(nkv, group * s1, -1)          # the G heads of a kv head stacked
    tor = np.float64(_half(np.float32(scale)))
    with np.errstate(over="ignore", invalid="ignore"):
        for c0 in range(0, s2, block):
            c1 = min(c0 + block, s2)
            scores = _half(queries @ native.widen(k[:, c0:c1]).transpose(0, 2, 1))
            scores = _half(scores.astype(F64) * tor)
            block_max = scores.max(axis=2, keepdims=True)
            if c0 == 0:
                running = block_max
            else:
                new = np.maximum(block_max, running)
                shrink = np.exp(_half(running.astype(F64) - new).astype(F32))
                running = new
            e = np.exp(_half(scores.astype(F64) - running).astype(F32))
            pv = _half(e).astype(F32) @ native.widen(v[:, c0:c1])
            if c0 == 0:
                row_sum, acc = e.sum(axis=2, keepdims=True, dtype=F32), pv
            else:
                row_sum = row_sum * shrink + e.sum(axis=2, keepdims=True, dtype=F32)
                acc = acc * shrink + pv
        out = _half(_half(acc).astype(F64) / _half(row_sum).astype(F64))
    return out.reshape(n, s1, dv)
