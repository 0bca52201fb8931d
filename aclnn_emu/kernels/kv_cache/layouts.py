"""Where a cache slot's token lives in a paged KV cache, and the copy that moves token rows.

A slot s is token s % block_size of block s // block_size. Caches are handled as flat buffers
(numpy arrays of any dtype; all offsets are in bytes from the buffer's first element):
- ND (cacheMode "Norm"): [blocks, block_size, row]; slot s is one contiguous row of `row_bytes`
  at byte s * row_bytes.
- PA_NZ: [blocks, pieces, block_size, 32 bytes]; a token's row is cut into 32-byte pieces and
  piece c of all tokens of a block lie side by side, so slot s's piece c sits at
  (s // block_size) * block_bytes + c * block_size * 32 + (s % block_size) * 32.
On the token side a row's pieces are contiguous. `write` moves token rows into slots (scatter),
`read` slots into token rows (gather); both go through the compiled piece copier, which turns
runs of consecutive slots into one memmove (ND) or piece-major loops (NZ).
"""

import numpy as np

from .. import native, parallel

PIECE_BYTES = 32  # one NZ piece: the AI core's 32-byte data block


class Layout:
    pieces: int  # pieces per token row
    piece_bytes: int
    piece_stride: int  # bytes from one piece of a slot to its next, in the cache

    def offsets(self, slots: np.ndarray) -> np.ndarray:
        """Byte offset of each slot's first piece (slots >= 0)."""
        raise NotImplementedError

    @property
    def span(self) -> int:
        """Bytes from a slot's first piece to the end of its last."""
        return (self.pieces - 1) * self.piece_stride + self.piece_bytes

    def inside(self, slots: np.ndarray, cache_bytes: int) -> np.ndarray:
        """Mask of the slots whose pieces all lie in a cache of `cache_bytes`."""
        slots = np.asarray(slots, np.int64)
        ok = slots >= 0
        ok[ok] = self.offsets(slots[ok]) + self.span <= cache_bytes
        return ok

    def write(self, cache: np.ndarray, src: np.ndarray, slots: np.ndarray, src_offsets: np.ndarray) -> None:
        """Token rows at src_offsets (bytes into src) into the given slots (distinct, inside). Rows cut
        into pieces go in slot order, so the copier writes each block piece by piece (the slots
        are distinct, so their order does not change the bytes)."""
        offsets = self.offsets(slots)
        if self.pieces > 1:
            order = np.argsort(offsets, kind="stable")
            offsets, src_offsets = offsets[order], np.asarray(src_offsets)[order]
        copy_pieces(
            cache,
            src,
            offsets,
            src_offsets,
            pieces=self.pieces,
            piece_bytes=self.piece_bytes,
            dst_stride=self.piece_stride,
            src_stride=self.piece_bytes,
        )

    def read(self, dst: np.ndarray, cache: np.ndarray, slots: np.ndarray, dst_offsets: np.ndarray) -> None:
        """The given slots (inside) into token rows at dst_offsets (bytes into dst, distinct rows)."""
        copy_pieces(
            dst,
            cache,
            dst_offsets,
            self.offsets(slots),
            pieces=self.pieces,
            piece_bytes=self.piece_bytes,
            dst_stride=self.piece_bytes,
            src_stride=self.piece_stride,
        )


class NdLayout(Layout):
    pieces, piece_stride = 1, 0

    def __init__(self, row_bytes: int):
        self.piece_bytes = row_bytes

    def offsets(self, slots):
        return np.asarray(slots, np.int64) * self.piece_bytes


class NzLayout(Layout):
    piece_bytes = PIECE_BYTES

    def __init__(self, block_size: int, pieces: int, block_bytes: int | None = None):
        """`block_bytes` defaults to a block of whole pieces; kernels that step blocks by the
        token row's own size (not a multiple of 32 bytes) pass theirs."""
        self.block_size, self.pieces = block_size, pieces
        self.piece_stride = block_size * PIECE_BYTES
        self.block_bytes = pieces * self.piece_stride if block_bytes is None else block_bytes

    def offsets(self, slots):
        slots = np.asarray(slots, np.int64)
        return slots // self.block_size * self.block_bytes + slots % self.block_size * PIECE_BYTES


def slots_of_runs(blocks: np.ndarray, counts: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """For runs of `counts[i]` tokens from the start of block `blocks[i]`: (run index, slot) of
    every token, runs in order."""
    counts = np.asarray(counts, np.int64)
    run = np.repeat(np.arange(len(counts)), counts)
    within = np.arange(len(run)) - np.repeat(np.cumsum(counts) - counts, counts)
    return run, np.asarray(blocks, np.int64)[run] * block_size + within


def copy_pieces(dst: np.ndarray, src: np.ndarray, dst_offsets: np.ndarray, src_offsets: np.ndarray, **geometry) -> None:
    """native.copy_pieces with the pairs split across the kernel workers; no two pairs may write
    the same bytes, so the order between workers does not matter."""
    n = len(dst_offsets)
    parts = max(1, min(parallel.workers(), n // 1024))  # small copies stay on one thread
    bounds = [n * w // parts for w in range(parts + 1)]
    parallel.map_ordered(
        lambda w: native.copy_pieces(
            dst, src, dst_offsets[bounds[w] : bounds[w + 1]], src_offsets[bounds[w] : bounds[w + 1]], **geometry
        ),
        range(parts),
    )
