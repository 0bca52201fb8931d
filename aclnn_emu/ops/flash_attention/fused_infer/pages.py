"""A paged key/value cache read as the kernels address it: batch b's token t lies in block
blockTable[b][t // blockSize], row t % blockSize, of a [blocks, blockSize, Nkv*D] (BnBsH),
[blocks, Nkv, blockSize, D] (BnNBsD) or NZ [blocks, Nkv, D / D0, blockSize, D0] cache (D0 the
elements of 32 bytes: row t's channels d0 + D0 * d1 at [block, n, d1, t % blockSize, d0])."""

import math

import numpy as np

from aclnn_emu.kernels.kv_cache.layouts import copy_pieces
from aclnn_emu.runtime import sanitizer


def _token_rows(cache: np.ndarray, kv_heads: int, d: int, block: int):
    """(view, pieces, piece axis): the cache as a [blocks, Nkv, blockSize, ...] view of each token's
    head rows, cut into `pieces` contiguous pieces `piece axis` apart (one piece outside NZ). A cache
    whose shape does not hold such rows fails here (ValueError)."""
    if cache.ndim == 3:  # [blocks, blockSize, Nkv*D]
        view, pieces, axis = cache.reshape(cache.shape[0], cache.shape[1], kv_heads, d).transpose(0, 2, 1, 3), 1, None
    elif cache.ndim == 5:  # [blocks, Nkv, D/D0, blockSize, D0]: a row's D0-element pieces a block's rows apart
        view, pieces, axis = cache.transpose(0, 1, 3, 2, 4), cache.shape[2], 2
    else:  # [blocks, Nkv, blockSize, D]
        view, pieces, axis = cache, 1, None
    if view.ndim < 4 or view.shape[1:3] != (kv_heads, block) or math.prod(view.shape[3:]) != d:
        raise ValueError(f"a paged cache {list(cache.shape)} holds no [Nkv {kv_heads}, blockSize {block}, D {d}] rows")
    return view, pieces, axis


def gather(cache, table, lengths, kv_heads: int, d: int, block: int, what: str, out=None, first_row: int = 0):
    """Batch b's first lengths[b] tokens at out[b, :, first_row:][:, :lengths[b]] of a [B, Nkv, W, D]
    array (by default a new zeroed one, W the longest length), moved by the compiled piece copier;
    block ids outside the cache, or entries past the table, leave zeros and are reported. The kernels
    address blockTable as flat int32 storage whose rows are its dimension 1 long
    (maxNumBlocksPerBatch), whatever its rank: table[b] of a 2-D table as wide as the lengths need."""
    cache = np.ascontiguousarray(cache)  # the offsets below are from its first element
    view, pieces, axis = _token_rows(cache, kv_heads, d, block)
    lengths = [max(int(n), 0) for n in lengths]
    if out is None:
        out = np.zeros((len(lengths), kv_heads, max(lengths, default=0), d), cache.dtype)
    flat = table.reshape(-1).astype(np.int64)
    stride = table.shape[1]
    head = np.arange(kv_heads)[:, None]
    row_bytes = d * cache.itemsize
    whole = pieces == 1  # a token's head row is contiguous: a whole block's rows of a head are one pair
    blocks, rows = _Pairs(), _Pairs()  # byte offsets, batch by batch, heads in order
    for b, length in enumerate(lengths):
        count, start = -(-length // block), b * stride
        read = flat[start : start + count]
        if len(read) < count:
            sanitizer.report(
                "out-of-bounds",
                f"{what}: batch {b} reads blockTable entries {start}..{start + count - 1} past its "
                f"{flat.size}; their tokens read as zeros here",
            )
        outside = (read < 0) | (read >= view.shape[0])
        if outside.any():
            sanitizer.report(
                "out-of-bounds",
                f"{what}: blockTable[{b}] holds ids {read[outside][:8].tolist()} outside the cache of "
                f"{view.shape[0]} blocks; their tokens read as zeros here",
            )
        tokens = min(length, len(read) * block)
        full = tokens // block if whole else 0
        k = np.arange(full)[~outside[:full]]
        blocks.add(head * view.strides[1] + read[k] * view.strides[0], (b, head, first_row + k * block), out)
        t = np.arange(full * block, tokens)
        t = t[~outside[t // block]]
        rows.add(
            head * view.strides[1] + read[t // block] * view.strides[0] + (t % block) * view.strides[2],
            (b, head, first_row + t),
            out,
        )
    if view.strides[2] == row_bytes:  # [blocks, Nkv, blockSize, D]: a block's rows lie side by side
        blocks.copy(out, cache, pieces=1, piece_bytes=block * row_bytes, dst_stride=0, src_stride=0)
    else:
        blocks.copy(out, cache, pieces=block, piece_bytes=row_bytes, dst_stride=row_bytes, src_stride=view.strides[2])
    piece_bytes = row_bytes // pieces if pieces else 0
    rows.copy(
        out,
        cache,
        pieces=pieces,
        piece_bytes=piece_bytes,
        dst_stride=piece_bytes,
        src_stride=cache.strides[axis] if axis is not None else piece_bytes,
    )
    return out


class _Pairs:
    """Source and destination byte offsets of piece-copier pairs, gathered in order."""

    def __init__(self):
        self.src, self.dst = [], []

    def add(self, src, at, out) -> None:
        """Pairs from `src` offsets into out[at] (b, heads [Nkv, 1], rows [n]), heads outermost."""
        b, heads, rows = at
        self.src.append(np.broadcast_to(src, (heads.shape[0], len(rows))).reshape(-1))
        self.dst.append((b * out.strides[0] + heads * out.strides[1] + rows * out.strides[2]).reshape(-1))

    def copy(self, out, cache, **geometry) -> None:
        if self.src:
            copy_pieces(out, cache, np.concatenate(self.dst), np.concatenate(self.src), **geometry)


def batch_rows(cache: np.ndarray, table: np.ndarray, lengths, kv_heads: int, d: int, block: int, what: str):
    """[Nkv, length, D] per batch (gather's rows, each batch's own)."""
    out = gather(cache, table, lengths, kv_heads, d, block, what)
    return [out[b, :, : max(int(n), 0)] for b, n in enumerate(lengths)]
