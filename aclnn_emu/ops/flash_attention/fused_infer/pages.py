"""A paged key/value cache read as the kernels address it: batch b's token t lies in block
blockTable[b][t // blockSize], row t % blockSize, of a [blocks, blockSize, Nkv*D] (BnBsH),
[blocks, Nkv, blockSize, D] (BnNBsD) or NZ [blocks, Nkv, D / D0, blockSize, D0] cache (D0 the
elements of 32 bytes: row t's channels d0 + D0 * d1 at [block, n, d1, t % blockSize, d0])."""

import numpy as np

from aclnn_emu.runtime import sanitizer


def _as_bnbsd(cache: np.ndarray, kv_heads: int, d: int) -> np.ndarray:
    """The cache as [blocks, Nkv, blockSize, D] rows."""
    if cache.ndim == 3:
        return cache.reshape(cache.shape[0], cache.shape[1], kv_heads, d).transpose(0, 2, 1, 3)
    if cache.ndim == 5:
        blocks, n, d1, block, d0 = cache.shape
        return cache.transpose(0, 1, 3, 2, 4).reshape(blocks, n, block, d1 * d0)
    return cache


def batch_rows(cache: np.ndarray, table: np.ndarray, lengths, kv_heads: int, d: int, block: int, what: str):
    """[Nkv, length, D] per batch; block ids outside the cache, or entries past the table, read as
    zeros and are reported. The kernels address blockTable as flat int32 storage whose rows are its
    dimension 1 long (maxNumBlocksPerBatch), whatever its rank: table[b] of a 2-D table as wide as
    the lengths need."""
    cache = _as_bnbsd(cache, kv_heads, d)
    flat = table.reshape(-1).astype(np.int64)
    stride = table.shape[1]
    rows = []
    for b, length in enumerate(lengths):
        length = max(int(length), 0)
        count, start = -(-length // block), b * stride
        read = flat[start : start + count]
        if len(read) < count:
            sanitizer.report(
                "out-of-bounds",
                f"{what}: batch {b} reads blockTable entries {start}..{start + count - 1} past its "
                f"{flat.size}; their tokens read as zeros here",
            )
        outside = (read < 0) | (read >= cache.shape[0])
        if outside.any():
            sanitizer.report(
                "out-of-bounds",
                f"{what}: blockTable[{b}] holds ids {read[outside][:8].tolist()} outside the cache of "
                f"{cache.shape[0]} blocks; their tokens read as zeros here",
            )
        ids = np.concatenate([read, np.full(count - len(read), -1, np.int64)])
        bad = (ids < 0) | (ids >= cache.shape[0])
        pages = np.zeros((len(ids), kv_heads, block, d), cache.dtype)
        pages[~bad] = cache[ids[~bad]]
        rows.append(pages.transpose(1, 0, 2, 3).reshape(kv_heads, -1, d)[:, :length])
    return rows
