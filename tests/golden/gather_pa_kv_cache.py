"""Independent references for GatherPaKvCache, written from the CANN 8.5 kernels with plain loops.

Sources (cannmirror/ops-transformer 8.5.0-beta.1, attention/gather_pa_kv_cache/op_kernel):
gather_pa_kv_cache_nd.h and _nz.h (Atlas A2/A3), arch35/gather_pa_kv_cache_nd.h and _nz.h
(Ascend910_95). Every function takes the caches and the outputs' previous contents as numpy
arrays and returns the new outputs; index tensors are plain integer sequences. Only calls whose
reads stay inside the tensors are covered. Shares no code with aclnn_emu.
"""

import numpy as np


def _bytes(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()


def _batches(seq_lens, batches, cumsum):
    """(first output row, token count) per batch, as the A2/A3 Norm kernel walks them."""
    out, start = [], (seq_lens[0] if cumsum else 0)
    for b in range(batches):
        count = seq_lens[b + 1] - start if cumsum else seq_lens[b]
        out.append((start, count))
        start = start + count
    return out


def a2_norm(key_cache, value_cache, tables, seq_lens, key, value, seq_offset=None, cumsum=False):
    """Block k of batch b: table[b][seq_offset[b] // bs + k] (read row-major past the row's end),
    its first n tokens (n = bs, or what is left) copied to rows start + k·bs on; each block copy
    moves n·row bytes rounded down to a multiple of 32."""
    bs = key_cache.shape[1]
    flat_table = [int(x) for x in np.asarray(tables).reshape(-1)]
    cols = np.asarray(tables).shape[1]
    outs = []
    for cache, out in ((key_cache, key), (value_cache, value)):
        row = out[0].nbytes
        src, dst = _bytes(cache), _bytes(out)
        for b, (start, count) in enumerate(_batches(seq_lens, len(tables), cumsum)):
            shift = int(seq_offset[b]) // bs if seq_offset is not None else 0
            for k in range(-(-count // bs)):
                block = flat_table[b * cols + shift + k]
                n = min(bs, count - k * bs)
                moved = n * row // 32 * 32
                first = (start + k * bs) * row
                dst[first : first + moved] = src[block * bs * row : block * bs * row + moved]
        outs.append(dst.view(out.dtype).reshape(out.shape))
    return outs


def a2_nz(key_cache, value_cache, tables, seq_lens, key, value, seq_offset=None, cumsum=False):
    """Output rows follow each other from 0. Token t of batch b comes from block
    table[b][t // bs + seq_offset[b]] (the offset in columns, not divided by bs), slot t % bs:
    each 32-byte piece c of its row from cache[block, c, t % bs]. With cumulative lengths batch 0
    starts at seq_lens[0] (the kernel reads it from its buffer before filling it)."""
    bs = key_cache.shape[2]
    cols = np.asarray(tables).shape[1]
    flat_table = [int(x) for x in np.asarray(tables).reshape(-1)]
    outs = []
    for cache, out in ((key_cache, key), (value_cache, value)):
        row = out[0].nbytes
        src, dst = _bytes(cache), _bytes(out)
        produced = 0
        for b in range(len(tables)):
            count = seq_lens[b + 1] - seq_lens[b] if cumsum else seq_lens[b]
            shift = int(seq_offset[b]) if seq_offset is not None else 0
            for t in range(max(count, 0)):
                block = flat_table[b * cols + t // bs + shift]
                for c in range(row // 32):
                    at = block * bs * row + c * bs * 32 + (t % bs) * 32
                    dst[(produced + t) * row + c * 32 : (produced + t) * row + c * 32 + 32] = src[at : at + 32]
            produced += count
        outs.append(dst.view(out.dtype).reshape(out.shape))
    return outs


def arch35(key_cache, value_cache, tables, seq_lens, key, value, seq_offset=None, cumsum=False, nz=False, cores=64):
    """Ascend910_95, Norm ([blocks, bs, H, D] caches) or PA_NZ ([blocks, H·D/last, bs, last]):
    batch i writes rows from its start (seq_lens[i] cumulative, else the running sum) on;
    a core's walk over its batches stops at the first batch starting at or past the output's
    rows; a batch reaching past them is cut; block k is table[i][k + seq_offset[i] // bs], zeros
    where that column lies outside the row."""
    bs = key_cache.shape[2] if nz else key_cache.shape[1]
    batches, width = np.asarray(tables).shape
    tokens_out = key.shape[0]
    per = -(-batches // cores)
    outs = []
    for cache, out in ((key_cache, key), (value_cache, value)):
        row = out[0].nbytes
        src, dst = _bytes(cache), _bytes(out)
        for first in range(0, batches, per):
            start = seq_lens[first] if cumsum else sum(seq_lens[:first])
            for i in range(first, min(first + per, batches)):
                count = seq_lens[i + 1] - seq_lens[i] if cumsum else seq_lens[i]
                if cumsum:
                    start = seq_lens[i]
                if start >= tokens_out:
                    break
                count = min(count, tokens_out - start)
                shift = int(seq_offset[i]) // bs if seq_offset is not None else 0  # non-negative offsets
                for t in range(max(count, 0)):
                    column = t // bs + shift
                    at = (start + t) * row
                    if column >= width:
                        dst[at : at + row] = 0
                        continue
                    block = int(tables[i][column])
                    if nz:
                        for c in range(row // 32):
                            piece = block * bs * row + c * bs * 32 + (t % bs) * 32
                            dst[at + c * 32 : at + c * 32 + 32] = src[piece : piece + 32]
                    else:
                        slot = (block * bs + t % bs) * row
                        dst[at : at + row] = src[slot : slot + row]
                if not cumsum:
                    start += seq_lens[i]
        outs.append(dst.view(out.dtype).reshape(out.shape))
    return outs
