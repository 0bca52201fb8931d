"""The fp16 MLA base-API kernel's attention (`prompt_flash_attention_base_mla.h`,
`PromptFlashAttentionBaseMLA`, PromptFlashAttentionV2 sparseMode 20-22 with D > 256): its online
softmax runs in half precision. Per key block of ``block`` columns (aligned at the batch's first
key), with gm the running max (fp16), l the row sum and O the output accumulator (fp32):
  S   = fp16(Q Kᵀ)                     the cube's fp32 result stored as half
  S   = fp16(S * fp16(scale))          Muls in half with the scale cast to half (`tor`)
  S   = fp16(S + mask)                 with a mask (V3's pseShift, sparseMode 21): Add in half
  hm  = max(rowmax(S), gm)             fp16; dm = fp16(gm - hm) (first block: hm = rowmax(S))
  S   = fp16(S - hm); E = exp(fp32(S)) (fp32); P = fp16(E) (RNE)
  l   = l * exp(fp32(dm)) + rowsum(E)  fp32 (first block: rowsum(E))
  O   = O * exp(fp32(dm)) + P V        fp32, P V from the cube (first block: P V)
Output: fp16(O) / fp16(l), divided in half. Half operations round the exact result to nearest even.
All query rows of a batch share its key blocks; heads and chunks of rows run on the workers.
"""

import numpy as np

from aclnn_emu.kernels import native, parallel

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
ROWS_PER_TASK = 128  # query rows of a head per task


def _half_(x: np.ndarray) -> np.ndarray:
    """Round an fp32 array in place to fp16 values (nearest even). An fp32 product, difference or
    quotient of fp16 values rounded on to fp16 is the correctly rounded fp16 result: the product
    is exact in fp32, a difference's fp32 rounding cannot create an fp16 tie (fp16 operands have
    too few bits), and 24 >= 2 * 11 + 2 bits make the quotient's double rounding innocuous."""
    native.round_product(x, x, None, "fp16_even")
    return x


def _half(x: np.ndarray) -> np.ndarray:
    """A small array's values rounded to fp16, as fp32."""
    return x.astype(F16).astype(F32)


def mla_half_attention(q, k, v, *, scale: float, block: int, mask=None) -> np.ndarray:
    """q [N, S1, D], k [Nkv, S2, D], v [Nkv, S2, Dv] fp16 (S2 > 0) -> the output [N, S1, Dv] fp16;
    ``mask`` None or the fp16 values [N, >= S1, >= S2] added to the scaled scores."""
    n, s1, _ = q.shape
    nkv, dv = v.shape[0], v.shape[2]
    out = np.empty((n, s1, dv), F16)
    tor = float(np.float16(np.float32(scale)))
    step = ROWS_PER_TASK  # (not from the worker count: BLAS's sums may follow a product's row count)
    tasks = [(h, r0, min(r0 + step, s1)) for h in range(n) for r0 in range(0, s1, step)]
    with np.errstate(over="ignore", invalid="ignore"):
        parallel.run_all(
            lambda h, r0, r1: _rows(
                q[h, r0:r1],
                k[h * nkv // n],
                v[h * nkv // n],
                tor,
                block,
                out[h, r0:r1],
                None if mask is None else mask[h, r0:r1],
            ),
            tasks,
        )
    return out


def _rows(q, k, v, tor, block, out, mask):
    """One head's query rows [S, D] against its keys, block by block; the result stored into out."""
    queries = native.widen(q)
    for c0 in range(0, k.shape[0], block):
        c1 = min(c0 + block, k.shape[0])
        scores = queries @ native.widen(k[c0:c1]).T
        native.scale_(scores, fp16=True)  # the cube's result stored as half
        native.scale_(scores, pre=tor, fp16=True)
        if mask is not None:
            scores += mask[:, c0:c1]
            _half_(scores)
        block_max = scores.max(axis=1, keepdims=True)
        if c0 == 0:
            running = block_max
        else:
            new = np.maximum(block_max, running)
            shrink = np.exp(_half(running - new))
            running = new
        scores -= running
        e = np.exp(_half_(scores))
        p = np.empty_like(e)
        native.round_product(p, e, None, "fp16_even")
        pv = p @ native.widen(v[c0:c1])
        if c0 == 0:
            row_sum, acc = e.sum(axis=1, keepdims=True, dtype=F32), pv
        else:
            row_sum = row_sum * shrink + e.sum(axis=1, keepdims=True, dtype=F32)
            acc = acc * shrink + pv
    out[...] = _half(_half_(acc) / _half(row_sum))
