"""Independent references for ScatterPaKvCache, written from the reference notes with plain loops.

Reference: the CANN 8.5 source notes (`ops-indexer-sparse-attention-kvcache`) §3.C (Atlas A2/A3) and §3.D
(arch35). Each function takes numpy arrays, returns the updated cache as a new array, and skips
writes that would land outside the cache (the emulator's choice for what the hardware leaves
undefined). Duplicate slots: the later write wins (also the emulator's choice: on the NPU a race
between AI cores). Shares no code with aclnn_emu.
"""

import numpy as np


def random_data(rng, shape, dtype):
    """Test data: every bit pattern of integer types, standard normal values for float types."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def int32_words(index: np.ndarray, count: int) -> np.ndarray:
    """What the A2 ND and compress kernels read from an index buffer: its first `count` int32 words."""
    return np.ascontiguousarray(index).reshape(-1).view(np.int32)[:count].astype(np.int64)


def vllm_normal(cache: np.ndarray, key: np.ndarray, slots) -> np.ndarray:
    """vLLM's test loop: cache[slot // block_size, slot % block_size] = key[i]; negative slots skipped."""
    out = cache.copy()
    block_size = cache.shape[1]
    for i, slot in enumerate(slots):
        if slot >= 0:
            out[slot // block_size, slot % block_size] = key[i].reshape(out.shape[2:])
    return out


def _flat_row_copy(out_flat, dst_row, src_flat, src_start, length):
    """out_flat[dst_row*length : +length] = src_flat[src_start : +length] when both ranges exist."""
    dst = dst_row * length
    if dst < 0 or dst + length > len(out_flat) or src_start < 0 or src_start + length > len(src_flat):
        return
    out_flat[dst : dst + length] = src_flat[src_start : src_start + length]


def a2_nd(cache, src, slots, row_len, stride=None, offset=0):
    """Normal / Nct / key-only (§3.C): flat cache [blocks·block_size, H·D]; row t read at t·H·D, or
    t·stride + offset for Nct; negative slots skipped."""
    out = cache.copy().reshape(-1)
    src = src.reshape(-1)
    for t, slot in enumerate(slots):
        if slot < 0:
            continue
        start = t * row_len if stride is None else t * stride + offset
        _flat_row_copy(out, slot, src, start, row_len)
    return out.reshape(cache.shape)


def a2_nz(cache, key, slots):
    """PA_NZ (§3.C): flat index blk·bs·H·D + c·bs·last + off·last + e."""
    n_blocks, pieces, block_size, last = cache.shape
    out = cache.copy().reshape(-1)
    flat = key.reshape(len(key), -1)
    for t, slot in enumerate(slots):
        if slot < 0 or slot >= n_blocks * block_size:
            continue
        blk, off = slot // block_size, slot % block_size
        for c in range(pieces):
            for e in range(last):
                out[blk * block_size * pieces * last + c * block_size * last + off * last + e] = flat[t, c * last + e]
    return out.reshape(cache.shape)


def a2_alibi(cache, src, slots, wins, seq_lens, heads, head_size):
    """Alibi (§3.C): task i = b·H + h; cs = inclusive prefix sum of seq_lens;
    cache row (slot + j) = src[cs[b] - w + j, h] for j < w (value uses Dk as well)."""
    out = cache.copy().reshape(-1)
    src = src.reshape(-1)
    cs = np.cumsum(seq_lens)
    for i in range(len(seq_lens) * heads):
        b, h = i // heads, i % heads
        for j in range(wins[i]):
            token = cs[b] - wins[i] + j
            _flat_row_copy(out, slots[i] + j, src, (token * heads + h) * head_size, head_size)
    return out.reshape(cache.shape)


def _gather(flat, rows, head_size):
    """The listed rows of head_size elements, or None if one lies outside the buffer."""
    if any(r < 0 or (r + 1) * head_size > len(flat) for r in rows):
        return None
    return np.array([flat[r * head_size : (r + 1) * head_size] for r in rows]).reshape(len(rows), head_size)


def fp32_mean(rows, divisor, dtype):
    """Σ fp32(x) in token order, / fp32(divisor), rounded to nearest even into dtype."""
    total = np.zeros(rows.shape[1], np.float32)
    for row in rows:
        total = (total + row.astype(np.float32)).astype(np.float32)
    return (total / np.float32(divisor)).astype(dtype)


def a2_rope(cache, src, slots, wins, seq_lens, offsets, heads, head_size, omni=False):
    """Rope / Omni (§3.C): cs = exclusive prefix sum; o = -1 or w = 0 -> no compression;
    A: rows [0, o); B (Rope only): mean of rows [o, o+w) at slot + o; C: rows [o+w, L) at
    slot + o + 1 (Rope) or slot + o (Omni)."""
    out = cache.copy().reshape(-1)
    flat = src.reshape(-1)
    cs = np.concatenate(([0], np.cumsum(seq_lens)[:-1]))
    for i in range(len(seq_lens) * heads):
        b, h = i // heads, i % heads
        s, w, length, o = slots[i], wins[i], seq_lens[b], offsets[i]
        if o == -1 or w == 0:
            o, w = length, 0
        window = _gather(flat, [(cs[b] + j) * heads + h for j in range(o, o + w)], head_size)
        if not omni and w > 0 and window is not None and 0 <= s + o < len(out) // head_size:
            out[(s + o) * head_size : (s + o + 1) * head_size] = fp32_mean(window, w, src.dtype)
        for j in range(o):
            _flat_row_copy(out, s + j, flat, ((cs[b] + j) * heads + h) * head_size, head_size)
        if w > 0:
            first = s + o + (0 if omni else 1)
            for j in range(length - o - w):
                _flat_row_copy(out, first + j, flat, ((cs[b] + o + w + j) * heads + h) * head_size, head_size)
    return out.reshape(cache.shape)


# Atlas A2/A3 compress modes with rows that are not whole 32-byte blocks (scatter_pa_kv_cache_compress_*.h):
# each DataCopy moves rowBytes // 32 blocks per token, reading token i of a copy at start + i·H·blk bytes
# and writing it at cacheStart + i·blk bytes. Constants from scatter_pa_kv_cache_common.h.
UB_BYTES, COPY_BUFFER_BYTES, HALF_FLOATS = 192 * 1024, 180 * 1024 // 2, 15 * 1024


def _block_copy(out, src, src_elem, dst_elem, n, heads, size, blk):
    """One DataCopy pair of n tokens, byte by byte, on uint8 buffers; nothing if a read leaves src."""
    if n <= 0 or src_elem * size + (n - 1) * heads * blk + blk > len(src) or src_elem < 0:
        return
    for i in range(n):
        for b in range(blk):
            d = dst_elem * size + i * blk + b
            if 0 <= d < len(out):
                out[d] = src[src_elem * size + i * heads * blk + b]


def a2_blocks_alibi(cache, src, slots, wins, seq_lens, heads, head_size):
    """Alibi: the window copied in (w·rowBytes // ubSize + 1) loads of w // loads tokens, then the rest."""
    size = src.dtype.itemsize
    blk = head_size * size // 32 * 32
    out, flat = cache.copy().reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8)
    ub = UB_BYTES - -(-heads * len(seq_lens) * 4 // 32) * 32 - -(-heads * 4 // 32) * 32
    cs = np.cumsum(seq_lens)
    for i in range(len(seq_lens) * heads):
        b, h, w = i // heads, i % heads, int(wins[i])
        loads = w * head_size * size // ub + 1
        per = w // loads
        for j in range(loads):
            _block_copy(
                out,
                flat,
                head_size * (heads * (cs[b] - w + per * j) + h),
                head_size * (slots[i] + per * j),
                per,
                heads,
                size,
                blk,
            )
        rest = w - loads * per
        _block_copy(
            out,
            flat,
            head_size * (heads * (cs[b] - rest) + h),
            head_size * (slots[i] + per * loads),
            rest,
            heads,
            size,
            blk,
        )
    return out.view(cache.dtype).reshape(cache.shape)


def _blocks_mean(flat, first_elem, w, heads, head_size, dtype):
    """ComputeAvg: loads of 15360 // D tokens into alternating halves of a zeroed UB buffer, fp32 sums
    of D elements at k·D of the loaded half, / w, rounded to even; the first blk bytes of the result."""
    dtype = np.dtype(dtype)
    size = dtype.itemsize
    blk = head_size * size // 32 * 32
    per = HALF_FLOATS // head_size
    ub = np.zeros(2 * HALF_FLOATS * size, np.uint8)
    total = np.zeros(head_size, np.float32)
    start = first_elem
    for j in range(-(-w // per)):
        n = min(per, w - j * per)
        half = (j % 2) * HALF_FLOATS * size
        for i in range(n):
            at = start * size + i * heads * blk
            if at + blk > len(flat):
                return None
            ub[half + i * blk : half + (i + 1) * blk] = flat[at : at + blk]
        start += heads * per * head_size
        loaded = ub[half : half + HALF_FLOATS * size].view(dtype).astype(np.float32)
        for k in range(n):
            total = (total + loaded[k * head_size : (k + 1) * head_size]).astype(np.float32)
    return (total / np.float32(w)).astype(dtype).view(np.uint8)[:blk]


def a2_blocks_rope(cache, src, slots, wins, seq_lens, offsets, heads, head_size, omni=False):
    """Rope / Omni: the mean (Rope), rows [0, o) and the rows after the window, each run copied in
    loads of copyFp16Num // D tokens and a last load of the rest."""
    size = src.dtype.itemsize
    blk = head_size * size // 32 * 32
    per_copy = COPY_BUFFER_BYTES // size
    out, flat = cache.copy().reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8)
    cs = np.concatenate(([0], np.cumsum(seq_lens)[:-1]))
    for i in range(len(seq_lens) * heads):
        b, h = i // heads, i % heads
        s, w, length, o = int(slots[i]), int(wins[i]), int(seq_lens[b]), int(offsets[i])
        if o == -1 or w == 0:
            o, w = length, 0
        if w and not omni:
            mean = _blocks_mean(flat, head_size * (heads * (cs[b] + o) + h), w, heads, head_size, src.dtype)
            at = (s + o) * head_size * size
            if mean is not None and 0 <= at and at + blk <= len(out):
                out[at : at + blk] = mean
        runs = [(o, cs[b], s)] + ([(length - o - w, cs[b] + o + w, s + o + (0 if omni else 1))] if w else [])
        for count, token, dst in runs:
            loads = count * head_size // per_copy
            per = per_copy // head_size if loads else 0
            for j in range(loads):
                _block_copy(
                    out,
                    flat,
                    head_size * (heads * (token + per * j) + h),
                    head_size * (dst + per * j),
                    per,
                    heads,
                    size,
                    blk,
                )
            _block_copy(
                out,
                flat,
                head_size * (heads * (token + per * loads) + h),
                head_size * (dst + per * loads),
                count - per * loads,
                heads,
                size,
                blk,
            )
    return out.view(cache.dtype).reshape(cache.shape)


def arch35_normal(cache, key, slots):
    """arch35 Normal (§3.D): kc_flat[slot·H·D : +H·D] = key[t]; no negative-slot skip (such writes
    fall outside the cache and are dropped here)."""
    out = cache.copy().reshape(-1)
    row_len = key[0].size
    for t, slot in enumerate(slots.reshape(-1)[: len(key)]):
        _flat_row_copy(out, slot, key.reshape(-1), t * row_len, row_len)
    return out.reshape(cache.shape)


def arch35_alibi(cache, key, slots, wins, seq_lens):
    """arch35 Alibi (§3.D): key [B, S, H, D]; kc[slot[b,h] + j] = key[b, L - w + j, h] for j < w,
    skipping negative source tokens and slots beyond the cache."""
    out = cache.copy().reshape(-1)
    batch, seq, heads, head_size = key.shape
    n_slots = cache.shape[0] * cache.shape[1]
    slots, wins = slots.reshape(-1), wins.reshape(-1)
    for b in range(batch):
        for h in range(heads):
            i = b * heads + h
            for j in range(min(wins[i], seq)):
                token = seq_lens[b] - wins[i] + j
                if token < 0 or slots[i] + j >= n_slots:
                    continue
                _flat_row_copy(
                    out, slots[i] + j, key.reshape(-1), ((b * seq + token) * heads + h) * head_size, head_size
                )
    return out.reshape(cache.shape)


def integer_mean(rows, divisor, dtype):
    """arch35 integer mean: 32-bit wrapping sum, division truncating toward zero, low bits kept."""
    bits = 32
    signed = np.dtype(dtype).kind == "i"
    result = []
    for e in range(rows.shape[1]):
        total = 0
        for row in rows:
            total = (total + int(row[e])) % (1 << bits)
        if signed and total >= 1 << (bits - 1):
            total -= 1 << bits
        quotient = abs(total) // divisor * (1 if total >= 0 else -1)
        width = np.dtype(dtype).itemsize * 8
        low = quotient % (1 << width)
        if signed and low >= 1 << (width - 1):
            low -= 1 << width
        result.append(low)
    return np.array(result, dtype=dtype)


def arch35_rope(cache, key, slots, wins, seq_lens, offsets, mean_fn=None):
    """arch35 Rope (§3.D): step 1 tokens [0, o) -> slot + j; step 2 mean of tokens [o, min(o+w, S))
    -> slot + o; step 3 tokens [0, L - w - o) (sic) -> slot + o + 1 + j; slots beyond the cache skipped.
    `mean_fn(window, divisor, dtype)` overrides the mean (HiFloat8 codes)."""
    out = cache.copy().reshape(-1)
    batch, seq, heads, head_size = key.shape
    n_slots = cache.shape[0] * cache.shape[1]
    slots, wins, offsets = slots.reshape(-1), wins.reshape(-1), offsets.reshape(-1)
    flat = key.reshape(-1)

    def put(dst, b, token, h):
        if 0 <= dst < n_slots:
            _flat_row_copy(out, dst, flat, ((b * seq + token) * heads + h) * head_size, head_size)

    for b in range(batch):
        for h in range(heads):
            i = b * heads + h
            s, o, w = slots[i], offsets[i], wins[i]
            for j in range(min(o, seq)):
                put(s + j, b, j, h)
            end = min(o + w, seq)
            window = _gather(flat, [(b * seq + j) * heads + h for j in range(o, end)], head_size)
            if end > o and 0 <= s + o < n_slots and window is not None:
                mean = mean_fn or (integer_mean if key.dtype.kind in "iu" else fp32_mean)
                out[(s + o) * head_size : (s + o + 1) * head_size] = mean(window, end - o, key.dtype)
            for j in range(min(seq_lens[b] - w - o, seq)):
                put(s + o + 1 + j, b, j, h)
    return out.reshape(cache.shape)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact equality (NaN payloads and signed zeros included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


def nhsd(cache, src, slots):
    """Branch 9.1.0's NHSD scatter, one token and head at a time: cache [blocks, heads, block_size, D] viewed flat in
    rows of D; head h of token t goes to row (slot / block_size)·heads·block_size + h·block_size + slot % block_size,
    with C's truncating division and remainder. Rows outside the cache are left alone."""
    out = cache.copy()
    blocks, heads, block_size, d = cache.shape
    rows = out.reshape(-1, d)
    for t, slot in enumerate(int(s) for s in slots):
        block = abs(slot) // block_size * (1 if slot >= 0 else -1)
        offset = slot - block * block_size
        for h in range(heads):
            row = block * heads * block_size + h * block_size + offset
            if 0 <= row < len(rows):
                rows[row] = src[t, h]
    return out
