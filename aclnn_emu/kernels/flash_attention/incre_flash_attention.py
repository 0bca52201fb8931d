"""IncreFlashAttention forward (aclnnIncreFlashAttentionV4): one query token per head, decode.

The query arrives as [B, N, D] (S = 1); keys and values come from a `KvSource`: dense per batch
([N2, S, D] views, a tensor per batch for the tensor-list form) or a paged cache read through a
block table. Per batch the kernel walks the batch's tokens in chunks of about ``KV_CHUNK``,
each as [blocks, N2, tokens, D] (a dense chunk is one block), and runs the online softmax of all
N2 x G query heads of the batch at once on batched BLAS products. Maths per query head n of batch b
(the arch32 kernels, incre_flash_attention_preload.h):
  S   = fp32(Q K^T)                 the cube accumulates in fp32 and writes fp32 (no fp16 rounding)
  S  *= scaleValue; S += fp32(pseShift[b?, n, 0, j])
  attenMask[b, j] != 0  ->  S = -1e12 (BOOL_ATTEN_MASK_SCALAR_VALUE, finite: an all-masked row
                            still averages its values)
  keys j >= actualSeqLengths[b] are not part of the row
  E   = exp(S - running max); l = sum E (fp32); P = CAST_ROUND(E) to the KV dtype (fp16 / bf16)
  O   = sum P V / l;  fp16 out: CAST_ROUND (ties away), bf16 out: CAST_RINT
  int8 out: per-tensor quantScale2 -> AscendQuant (quant.quantize_); per-channel [N, D] ->
            fp16(CAST_ROUND(O * scale + offset)) then CAST_ROUND to int8
int8 keys/values (antiquant) are dequantised as (x + offset) * scale in fp32 before the products.
A batch without tokens (length 0, or a kv padding that leaves no room) writes zeros.
"""
from dataclasses import dataclass

import numpy as np

from aclnn_emu.kernels import native, parallel
from aclnn_emu.kernels.casts import BF16, FP16
from aclnn_emu.kernels.flash_attention.quant import quantize_
from aclnn_emu.kernels.rounding import round_half_away_

MASK_FILL = np.float32(-1e12)
KV_CHUNK = 2048
INT8 = np.dtype(np.int8)


@dataclass(frozen=True)
class Antiquant:
    """Per-tensor (scalars) or per-channel ([N2, D]) fp32 scale and offset of the int8 key and value."""
    key_scale: np.ndarray
    key_offset: np.ndarray
    value_scale: np.ndarray
    value_offset: np.ndarray


@dataclass(frozen=True)
class OutputQuant:
    """quantScale2/quantOffset2 in fp32: [1, 1] per tensor, [N, D] per channel."""
    scale: np.ndarray
    offset: np.ndarray

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


class DenseKv:
    """Keys and values as one [N2, S_b, D] view per batch (a batch of the key tensor, or the
    tensor-list entry of that batch); `start[b]` is the first token (the kv left padding)."""

    def __init__(self, keys, values, start):
        self.keys, self.values, self.start = keys, values, start

    def chunks(self, b: int, length: int):
        """(key, value, valid tokens) chunks, each [1, N2, t, D] in the storage dtype."""
        k, v, s0 = self.keys[b], self.values[b], self.start[b]
        for j0 in range(0, length, KV_CHUNK):
            j1 = min(j0 + KV_CHUNK, length)
            yield k[None, :, s0 + j0:s0 + j1], v[None, :, s0 + j0:s0 + j1], j1 - j0


class PagedKv:
    """A block-paged cache: `key_cache`/`value_cache` as [blocks, N2, block_size, D] views (the
    (blocknum, KV_N, blocksize, D) layout as it is, (blocknum, blocksize, H) seen through a
    transposed view), token j of batch b in block table[b, j // block_size]. Block ids outside the
    cache read as zeros and are reported (`bad_ids`)."""

    def __init__(self, key_cache, value_cache, table, block_size):
        self.key_cache, self.value_cache, self.table = key_cache, value_cache, table
        self.block_size = block_size
        self.bad_ids: list[tuple[int, int]] = []

    def chunks(self, b: int, length: int):
        bs = self.block_size
        per_chunk = max(1, KV_CHUNK // bs)
        blocks = -(-length // bs)
        for c0 in range(0, blocks, per_chunk):
            c1 = min(c0 + per_chunk, blocks)
            ids = self.table[b, c0:c1].astype(np.int64)
            yield self._take(self.key_cache, ids, b), self._take(self.value_cache, ids, b), \
                min(length, c1 * bs) - c0 * bs

    def _take(self, cache, ids, b):
        bad = (ids < 0) | (ids >= cache.shape[0])
        if not bad.any():
            return cache[ids]
        self.bad_ids += [(b, int(i)) for i in ids[bad]]
        out = cache[np.where(bad, 0, ids)]
        out[bad] = 0
        return out


def incre_flash_attention(q, kv, *, scale: float, lengths, kv_heads: int, out_dtype,
                          mask=None, pse=None, antiquant: Antiquant | None = None,
                          out_quant: OutputQuant | None = None) -> np.ndarray:
    """The attention output [B, N, D] in ``out_dtype`` (int8 with ``out_quant``).

    q [B, N, D] fp16/bf16; ``kv`` a DenseKv or PagedKv; lengths[b] the tokens of batch b (< 0:
    none); mask [B, Sm] (nonzero masks) and pse [B|1, N, Sp] read from column kv.start[b] (dense)
    or 0 (paged) on.
    """
    return _Decode(q, kv, scale, lengths, kv_heads, out_dtype, mask, pse, antiquant, out_quant).run()


class _Decode:
    def __init__(self, q, kv, scale, lengths, kv_heads, out_dtype, mask, pse, antiquant, out_quant):
        self.q, self.kv, self.lengths = q, kv, lengths
        self.scale = np.float32(scale)
        self.kv_heads = kv_heads
        self.group = q.shape[1] // kv_heads
        self.mask, self.pse, self.antiquant, self.out_quant = mask, pse, antiquant, out_quant
        self.rounding = "bf16_away" if q.dtype == BF16 else "fp16_away"
        self.out = np.zeros(q.shape, out_dtype)

    def run(self) -> np.ndarray:
        b = self.q.shape[0]
        # Batches, split by kv head when there are fewer batches than workers.
        parts = max(1, min(self.kv_heads, -(-parallel.workers() // b)))
        tasks = [(bi, heads[0], heads[-1] + 1) for bi in range(b)
                 for heads in parallel.split(list(range(self.kv_heads)), parts) if self.lengths[bi] > 0]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            parallel.run_all(self._batch, tasks)
        return self.out

    def _batch(self, b, h0, h1):
        heads, g = h1 - h0, self.group
        q = self.q[b, h0 * g:h1 * g].astype(np.float32).reshape(heads, g, -1)
        rows = heads * g
        running_max = np.full(rows, -np.inf, np.float32)
        row_sum = np.zeros(rows, np.float32)
        alpha = np.empty(rows, np.float32)
        acc = None
        j0 = 0
        start = getattr(self.kv, "start", None)
        first = 0 if start is None else start[b]
        for keys, values, valid in self.kv.chunks(b, int(self.lengths[b])):
            parallel.checkpoint()
            keys = self._widen(keys[:, h0:h1], "key", h0, h1)            # [blocks, heads, t, D]
            values = self._widen(values[:, h0:h1], "value", h0, h1)
            blocks, _, t, _ = keys.shape
            # [blocks, heads, g, t] -> the row-major score block [heads * g, blocks * t]
            s = np.matmul(q[None], keys.transpose(0, 1, 3, 2)).transpose(1, 2, 0, 3)
            s = np.ascontiguousarray(s).reshape(rows, blocks * t)[:, :valid]
            s = np.ascontiguousarray(s)
            s *= self.scale
            cols = slice(first + j0, first + j0 + valid)
            if self.pse is not None:
                pse = self.pse[b if self.pse.shape[0] > 1 else 0, h0 * g:h1 * g, cols]
                s += pse.astype(np.float32)
            if self.mask is not None:
                np.copyto(s, MASK_FILL, where=self.mask[b, cols][None, :] != 0)
            native.softmax_block_(s, running_max, row_sum, alpha, rounding=self.rounding)
            pv = self._pv(s, values, blocks, t, valid, heads, g)
            if acc is None:
                acc = pv
            else:
                acc *= alpha.reshape(heads, g, 1)
                acc += pv
            j0 += valid
        o = acc / row_sum.reshape(heads, g, 1)
        self._store(o.reshape(rows, -1), b, h0 * g, h1 * g)

    def _widen(self, x, which, h0, h1):
        """fp32 copy of a chunk [blocks, heads, t, D]; int8 is dequantised as (x + offset) * scale."""
        out = np.empty(x.shape, np.float32)
        np.copyto(out, x)
        if self.antiquant is not None:
            aq = self.antiquant
            scale, offset = (aq.key_scale, aq.key_offset) if which == "key" else (aq.value_scale, aq.value_offset)
            if scale.ndim == 2:                               # per channel [N2, D]
                scale, offset = scale[None, h0:h1, None, :], offset[None, h0:h1, None, :]
            out += offset
            out *= scale
        return out

    @staticmethod
    def _pv(p, values, blocks, t, valid, heads, g):
        """sum_j P V for a chunk: P [heads*g, valid] against values [blocks, heads, t, D]."""
        if blocks == 1:
            return np.matmul(p.reshape(heads, g, valid), values[0, :, :valid])
        padded = np.zeros((heads, g, blocks * t), np.float32)
        padded[:, :, :valid] = p.reshape(heads, g, valid)
        per_block = padded.reshape(heads, g, blocks, t).transpose(2, 0, 1, 3)   # [blocks, heads, g, t]
        return np.matmul(per_block, values).sum(axis=0)

    def _store(self, o, b, n0, n1):
        out = self.out[b, n0:n1]
        quant = self.out_quant
        if quant is None:
            if out.dtype == FP16:
                round_half_away_(o, FP16)                     # CAST_ROUND; exact in the assignment below
            out[...] = o
        elif not quant.per_channel:
            out[...] = quantize_(o, quant.scale.reshape(()), quant.offset.reshape(()))
        else:
            o *= quant.scale[n0:n1]
            o += quant.offset[n0:n1]
            round_half_away_(o, FP16)
            np.clip(np.trunc(o + np.copysign(np.float32(0.5), o)), -128, 127, out=o)
            out[...] = o
