"""IncreFlashAttention forward (aclnnIncreFlashAttentionV4): one query token per head, decode.

The query arrives as [B, N, D] (S = 1); keys and values stay where they are, in a `DenseKv`
([N2, S, D] views per batch, one tensor per batch for the tensor-list form) or a `PagedKv` (a
block-paged cache read through its block table). Per batch and group of KV heads the kernel walks
the batch's tokens in chunks of ``KV_CHUNK``; the compiled loops (native.decode_scores /
decode_values) read every cache row once, through element offsets, and the online softmax runs on
the [heads x G, chunk] score block. Maths per query head n of batch b (the arch32 kernels,
incre_flash_attention_preload.h):
  S   = fp32(Q K^T)                 the cube accumulates in fp32 and writes fp32 (no fp16 rounding)
  S  *= scaleValue; S += fp32(pseShift[b?, n, 0, j])
  attenMask[b, j] != 0  ->  S = -1e12 (BOOL_ATTEN_MASK_SCALAR_VALUE, finite: an all-masked row
                            still averages its values)
  keys j >= actualSeqLengths[b] are not part of the row
  E   = exp(S - running max); l = sum E (fp32); P = CAST_ROUND(E) to the KV dtype (fp16 / bf16)
  O   = sum P V / l;  fp16 out: CAST_ROUND (ties away), bf16 out: CAST_RINT
  int8 out: per-tensor quantScale2 -> AscendQuant (quant.quantize_); per-channel [N, D] ->
            fp16(CAST_ROUND(O * scale + offset)) then CAST_ROUND to int8
int8 keys/values (antiquant) are dequantised as (x + offset) * scale in fp32 before the products
(the hardware's MSD path splits the query into int8 parts instead; see
docs/divergences/incre_flash_attention.md). Per-token parameters (a scale and offset per cache row,
FIA's key/valueAntiquantMode 1, 3-5) enter as the MSD kernels apply them around the int8 products
(incre_flash_attention_split_Bbn2s2_Us2.h DealAntiqBmm1ResBaseBlockPerToken /
DealAntiqBmm2ResBaseBlockPerToken): S_j = (q . x_j +
sum(q) * offset_j) * scale_j, and O = sum_j (P_j * scale_j) (v_j + offset_j), all fp32. The chunks of 2048 tokens are an assumption: the hardware's
split of S decides where the running max moves, which shapes the rounding of P.
A batch without tokens (length 0, or a kv padding that leaves no room) writes zeros.
softmaxLse (FusedInferAttentionScore's IFA route, SoftmaxLseCopyOut / the flash-decode combine):
log(l) + m of the fp32 row, with m the running max of the scaled scores; a fully masked row gives
log(l) - 1e12. The per-channel MSD kernels leave the key offset's constant q . (scale x offset) out
of the scores and add it back to the lse (ComputeLogSumExpAndCopyToGm): the same value as the
dequantised scores' lse here.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from aclnn_emu.kernels import native, parallel
from aclnn_emu.kernels.casts import BF16, FP16
from aclnn_emu.kernels.flash_attention.quant import quantize_
from aclnn_emu.kernels.rounding import round_half_away_

MASK_FILL = np.float32(-1e12)
LSE_NO_TOKENS = np.float32(-3.4e38)  # the lse of a batch without tokens (InitAllZeroOutput)
KV_CHUNK = 2048


@dataclass(frozen=True)
class Antiquant:
    """Per-tensor (scalars) or per-channel ([N2, D]) fp32 scale and offset of the int8 key and value;
    with ``key_per_token`` / ``value_per_token`` that side's are [B, N2 | 1, S] per cache position
    (per KV head, or one for all heads)."""

    key_scale: np.ndarray
    key_offset: np.ndarray
    value_scale: np.ndarray
    value_offset: np.ndarray
    key_per_token: bool = False
    value_per_token: bool = False


@dataclass(frozen=True)
class OutputQuant:
    """quantScale2/quantOffset2 in fp32: [1, 1] per tensor, [N, D] per channel."""

    scale: np.ndarray
    offset: np.ndarray

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


class _TokenParams(NamedTuple):
    """A chunk's per-token (scale, offset) of the key and of the value, None where per channel."""

    key: tuple[np.ndarray, np.ndarray] | None
    value: tuple[np.ndarray, np.ndarray] | None


class DenseKv:
    """Keys and values as one [N2, S_b, D] view per batch (a batch of the key tensor, or the
    tensor-list entry of that batch); `start[b]` is the first token (the kv left padding)."""

    def __init__(self, keys, values, start):
        self.keys, self.values, self.start = keys, values, start

    def prepare(self, lengths) -> None:
        pass

    def bases(self, b: int, h0: int):
        """The key and value views whose first element is head h0's first row."""
        return self.keys[b][h0:], self.values[b][h0:]

    def rows(self, b: int, h0: int, j0: int, j1: int):
        """Per base, (element offsets of tokens j0..j1 of head h0, elements from one head to the next)."""
        positions = np.arange(self.start[b] + j0, self.start[b] + j1, dtype=np.int64)
        return _pair(self.bases(b, h0), lambda x, step: (positions * step[1], step[0]))


class PagedKv:
    """A block-paged cache: `key_cache`/`value_cache` as [blocks, N2, block_size, D] views (the
    (blocknum, KV_N, blocksize, D) layout as it is, (blocknum, blocksize, H) seen through a
    transposed view), token j of batch b in block table[b, j // block_size]. Block ids outside the
    cache read as zeros (from a zero block added for them) and are listed in `bad_ids`."""

    def __init__(self, key_cache, value_cache, table, block_size):
        self.key_cache, self.value_cache, self.table = key_cache, value_cache, table
        self.block_size = block_size
        self.bad_ids: list[tuple[int, int]] = []
        self.start = [0] * table.shape[0]

    def prepare(self, lengths) -> None:
        blocks = self.key_cache.shape[0]
        table = self.table.astype(np.int64)
        for b, length in enumerate(lengths):
            used = table[b, : -(-max(int(length), 0) // self.block_size)]
            bad = (used < 0) | (used >= blocks)
            self.bad_ids += [(b, int(i)) for i in used[bad]]
            used[bad] = blocks
        if self.bad_ids:
            pad = [(0, 1)] + [(0, 0)] * 3
            self.key_cache, self.value_cache = (np.pad(c, pad) for c in (self.key_cache, self.value_cache))
        self.table = table

    def bases(self, b: int, h0: int):
        return self.key_cache[:, h0:], self.value_cache[:, h0:]

    def rows(self, b: int, h0: int, j0: int, j1: int):
        positions = np.arange(j0, j1, dtype=np.int64)
        blocks = self.table[b, positions // self.block_size]
        tokens = positions % self.block_size
        return _pair(self.bases(b, h0), lambda x, step: (blocks * step[0] + tokens * step[2], step[1]))


def _pair(bases, rows_of):
    """rows_of(view, element strides) for the key and the value base; once when their strides agree."""
    keys, values = bases
    steps = [tuple(s // x.itemsize for s in x.strides) for x in bases]
    key_rows = rows_of(keys, steps[0])
    return key_rows, key_rows if steps[0] == steps[1] else rows_of(values, steps[1])


def incre_flash_attention(
    q,
    kv,
    *,
    scale: float,
    lengths,
    kv_heads: int,
    out_dtype,
    mask=None,
    pse=None,
    antiquant: Antiquant | None = None,
    out_quant: OutputQuant | None = None,
    lse: np.ndarray | None = None,
) -> np.ndarray:
    """The attention output [B, N, D] in ``out_dtype`` (int8 with ``out_quant``); ``lse`` an fp32
    [B, N] array that receives log(l) + m of each batch with tokens (the caller fills the others).

    q [B, N, D] fp16/bf16; ``kv`` a DenseKv or PagedKv; lengths[b] the tokens of batch b (< 0:
    none); mask [B, Sm] (nonzero masks) and pse (a pse.PseSource of pseType 0 over [B|1, N, 1, Sp])
    read from column kv.start[b] on.
    """
    return _Decode(q, kv, scale, lengths, kv_heads, out_dtype, mask, pse, antiquant, out_quant, lse).run()


class _Decode:
    def __init__(self, q, kv, scale, lengths, kv_heads, out_dtype, mask, pse, antiquant, out_quant, lse):
        self.q, self.kv, self.lengths, self.lse = q, kv, lengths, lse
        self.scale = np.float32(scale)
        self.kv_heads = kv_heads
        self.group = q.shape[1] // kv_heads
        self.mask, self.antiquant, self.out_quant = mask, antiquant, out_quant
        self.pse = pse
        self.rounding = "bf16_away" if q.dtype == BF16 else "fp16_away"
        self.out = np.zeros(q.shape, out_dtype)

    def run(self) -> np.ndarray:
        b = self.q.shape[0]
        self.kv.prepare(self.lengths)
        # Batches, split by kv head when there are fewer batches than workers.
        parts = max(1, min(self.kv_heads, -(-parallel.workers() // b)))
        tasks = [
            (bi, heads[0], heads[-1] + 1)
            for bi in range(b)
            for heads in parallel.split(list(range(self.kv_heads)), parts)
            if self.lengths[bi] > 0
        ]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            parallel.run_all(self._batch, tasks)
        return self.out

    def _batch(self, b, h0, h1):
        heads, g, d = h1 - h0, self.group, self.q.shape[2]
        rows = heads * g
        q = np.ascontiguousarray(self.q[b, h0 * g : h1 * g], np.float32).reshape(heads, g, d)
        key_base, value_base = self.kv.bases(b, h0)
        key_dequant, value_dequant = self._dequant(h0, h1)
        running_max = np.full(rows, -np.inf, np.float32)
        row_sum = np.zeros(rows, np.float32)
        alpha = np.empty(rows, np.float32)
        acc = np.zeros((heads, g, d), np.float32)
        first, length = self.kv.start[b], int(self.lengths[b])
        for j0 in range(0, length, KV_CHUNK):
            parallel.checkpoint()
            j1 = min(j0 + KV_CHUNK, length)
            key_rows, value_rows = self.kv.rows(b, h0, j0, j1)
            s = np.empty((heads, g, j1 - j0), np.float32)
            native.decode_scores(s, q, key_base, *key_rows, key_dequant)
            cols = slice(first + j0, first + j1)
            token = self._per_token(b, h0, h1, cols)
            if token.key is not None:
                s += q.sum(axis=2, keepdims=True) * token.key[1]
                s *= token.key[0]
            block = s.reshape(rows, j1 - j0)
            block *= self.scale
            if self.pse is not None:  # one query row per head: rows [0, 1) of each
                block += np.concatenate(
                    [self.pse.block(b, n, 0, 1, cols.start, cols.stop) for n in range(h0 * g, h1 * g)]
                )
            if self.mask is not None:
                np.copyto(block, MASK_FILL, where=self.mask[b, cols][None, :] != 0)
            # E = exp(S - running max) narrowed to P in place; running max, row sums and alpha updated
            native.softmax_block_(block, running_max, row_sum, alpha, rounding=self.rounding)
            acc *= alpha.reshape(heads, g, 1)
            if token.value is not None:
                s *= token.value[0]
                acc += (s * token.value[1]).sum(axis=2, keepdims=True)
            native.decode_values(acc, s, value_base, *value_rows, value_dequant)
        o = acc / row_sum.reshape(heads, g, 1)
        if self.lse is not None:
            self.lse[b, h0 * g : h1 * g] = np.log(row_sum) + running_max
        self._store(o.reshape(rows, d), b, h0 * g, h1 * g)

    def _dequant(self, h0, h1):
        """(scale, offset) [heads, D] fp32 of the int8 keys and of the values, or None each; a
        per-token side reads its raw rows (scale 1, offset 0), its parameters come in per chunk."""
        if self.antiquant is None:
            return None, None
        aq, d = self.antiquant, self.q.shape[2]

        def per_head(x):
            x = np.asarray(x, np.float32)
            return np.ascontiguousarray(x[h0:h1]) if x.ndim == 2 else np.full((h1 - h0, d), x, np.float32)

        def side(scale, offset, per_token):
            return (per_head(1), per_head(0)) if per_token else (per_head(scale), per_head(offset))

        return (
            side(aq.key_scale, aq.key_offset, aq.key_per_token),
            side(aq.value_scale, aq.value_offset, aq.value_per_token),
        )

    def _per_token(self, b, h0, h1, cols) -> "_TokenParams":
        """The (scale, offset) fp32 [heads | 1, 1, positions] of cache positions ``cols`` of batch b,
        KV heads h0..h1, for each per-token side."""
        aq = self.antiquant
        if aq is None:
            return _TokenParams(None, None)

        def side(scale, offset, on):
            if not on:
                return None
            heads = slice(h0, h1) if scale.shape[1] > 1 else slice(0, 1)
            return scale[b, heads, None, cols], offset[b, heads, None, cols]

        return _TokenParams(
            side(aq.key_scale, aq.key_offset, aq.key_per_token),
            side(aq.value_scale, aq.value_offset, aq.value_per_token),
        )

    def _store(self, o, b, n0, n1):
        out = self.out[b, n0:n1]
        quant = self.out_quant
        if quant is None:
            if out.dtype == FP16:
                round_half_away_(o, FP16)  # CAST_ROUND; exact in the assignment below
            out[...] = o
        elif not quant.per_channel:
            out[...] = quantize_(o, quant.scale.reshape(()), quant.offset.reshape(()))
        else:
            o *= quant.scale[n0:n1]
            o += quant.offset[n0:n1]
            round_half_away_(o, FP16)
            np.clip(np.trunc(o + np.copysign(np.float32(0.5), o)), -128, 127, out=o)
            out[...] = o
