"""ScatterPaKvCache compress modes on Atlas A2/A3 when a head row is not a whole number of 32-byte
blocks (kHeadSize · sizeof(key) % 32 != 0), byte-exact.

The Alibi, Rope and Omni kernels (scatter_pa_kv_cache_compress_*.h) move rows with DataCopy, never
DataCopyPad, in units of whole blocks: numBlocks = kHeadSize · sizeof(T) / 32 (integer division).
One copy of n tokens is DataCopy(ub, src[start], {n, numBlocks, (H - 1) · numBlocks, 0}) then
DataCopy(cache[cacheStart], ub, {n, numBlocks, 0, 0}), so with blk = numBlocks · 32 bytes:
- token i of the copy is read from byte start·sizeof(T) + i·H·blk, blk bytes of it;
- it lands at byte cacheStart·sizeof(T) + i·blk: the copy fills n·blk bytes from the first row
  on, back to back, and the bytes after them are left as they were.
Aligned rows make this the plain row copy (blk is the row); here the cache rows and the token
rows drift apart. Where a copy starts (the kernels' chunking of long runs) therefore matters and
is reproduced: Alibi splits a window by what fits in UB, Rope/Omni in runs of copyFp16Num elements.

Rope's window mean reads the tokens the same way into a UB buffer and sums fp32 rows of kHeadSize
elements at k · kHeadSize, so it mixes the packed blocks, and the UB left from earlier loads of the
same buffer half; then it divides by w, casts back with CAST_RINT and writes numBlocks blocks.
"""

import numpy as np

from ..casts import cast_rint
from .findings import DIVIDE_BY_ZERO, OUT_OF_BOUNDS_READ, OUT_OF_RANGE, WRITE_RACE, Finding, listed
from .scatter_a2 import alibi_tasks, bad_task
from .scatter_rows import balanced_cores

BLOCK = 32
MAX_UB_SIZE = 192 * 1024  # scatter_pa_kv_cache_common.h
TOTAL_BUFFER_SIZE = 180 * 1024
BUFFER_NUM = 2
MAX_FLOAT_NUM, PER_FLOAT_NUM = 30 * 1024, 15 * 1024


class Geometry:
    """A head row as the kernels move it: `unit` its element type, D elements, H heads."""

    def __init__(self, unit, head_size: int, heads: int):
        self.unit = np.dtype(unit)
        self.d, self.heads = head_size, heads
        self.row = head_size * self.unit.itemsize
        self.blk = self.row // BLOCK * BLOCK

    def read(self, src: np.ndarray, row: int, n: int) -> np.ndarray | None:
        """The bytes one copy of n tokens reads from head row `row` on, [n, blk]; None if outside src."""
        first = row * self.row
        last = first + (n - 1) * self.heads * self.blk + self.blk
        if n <= 0 or first < 0 or last > len(src):
            return None if n > 0 else np.empty((0, self.blk), np.uint8)
        return np.lib.stride_tricks.as_strided(src[first:], (n, self.blk), (self.heads * self.blk, 1))


class Copies:
    """One cache's writes in the kernels' task order: (first byte, bytes, core), with findings."""

    def __init__(self, cache: np.ndarray, src: np.ndarray, geo: Geometry, what: str, src_name: str):
        self.cache, self.src, self.geo = cache.view(np.uint8), src.view(np.uint8), geo
        self.what, self.src_name = what, src_name
        self.spans: list[tuple[int, int, int]] = []
        self.findings: list[Finding] = []
        self.bad_reads: list[int] = []
        self.outside: list[int] = []

    def copy(self, src_row: int, dst_row: int, n: int, core: int) -> None:
        """DataCopy of n tokens from head row src_row (token rows H apart) to cache row dst_row."""
        if n <= 0:
            return
        data = self.geo.read(self.src, src_row, n)
        if data is None:
            self.bad_reads.append(src_row)
            return
        self._write(dst_row * self.geo.row, data.reshape(-1), core, dst_row)

    def mean(self, src_row: int, w: int, dst_row: int, core: int) -> None:
        """Rope's ComputeAvg of the w tokens from head row src_row, written at cache row dst_row."""
        geo = self.geo
        per_loop = PER_FLOAT_NUM // geo.d  # addNumPerLoop (uint16)
        if per_loop == 0:
            self.findings.append(
                (
                    DIVIDE_BY_ZERO,
                    f"{self.what}: kHeadSize {geo.d} > {PER_FLOAT_NUM} makes the Rope "
                    "kernel's tokens per load 0 and divide the window by it; aclnn-emu "
                    "skips this mean",
                )
            )
            return
        loops, tail = divmod(w, per_loop)
        ub = np.zeros(MAX_FLOAT_NUM * geo.unit.itemsize, np.uint8)  # tokenLocal_ after Duplicate(0)
        total = np.zeros(geo.d, np.float32)
        row = src_row
        for j in range(loops + (tail > 0)):
            n = per_loop if j < loops else tail
            data = geo.read(self.src, row, n)
            if data is None:
                self.bad_reads.append(row)
                return
            half = (j % BUFFER_NUM) * PER_FLOAT_NUM * geo.unit.itemsize
            ub[half : half + n * geo.blk] = data.reshape(-1)
            row += geo.heads * per_loop
            values = ub[half : half + PER_FLOAT_NUM * geo.unit.itemsize].view(geo.unit).astype(np.float32)
            summed = np.vstack((total, values[: n * geo.d].reshape(n, geo.d)))
            total = np.add.accumulate(summed, axis=0, dtype=np.float32)[-1]
        result = cast_rint(total / np.float32(w), geo.unit).view(np.uint8)[: geo.blk]
        self._write(dst_row * geo.row, result, core, dst_row)

    def _write(self, first: int, data: np.ndarray, core: int, dst_row: int) -> None:
        end = first + len(data)
        if first < 0 or end > len(self.cache):
            self.outside.append(dst_row)
            lo, hi = max(first, 0), min(end, len(self.cache))
            if lo >= hi:
                return
            data, first, end = data[lo - first : hi - first], lo, hi
        self.cache[first:end] = data
        self.spans.append((first, end, core))

    def finish(self) -> list[Finding]:
        findings = self.findings
        if self.bad_reads:
            findings.append(
                (
                    OUT_OF_BOUNDS_READ,
                    f"{self.src_name}: {len(self.bad_reads)} copies read outside the "
                    f"tensor (first from head row {self.bad_reads[0]}); those copies are "
                    "skipped",
                )
            )
        if self.outside:
            findings.append(
                (
                    OUT_OF_RANGE,
                    f"{self.what}: writes from rows {listed(self.outside)} reach outside the "
                    "cache; the hardware would write outside the tensor, aclnn-emu keeps only "
                    "the bytes inside it",
                )
            )
        rows = _crossing_rows(self.spans, self.geo.row)
        if rows:
            findings.append(
                (
                    WRITE_RACE,
                    f"{self.what}: rows {listed(rows)} are written by tasks on different AI "
                    "cores; the hardware result is whichever core writes last (aclnn-emu keeps "
                    "the last write in task order)",
                )
            )
        return findings


def _crossing_rows(spans, row_bytes: int) -> list[int]:
    """Cache rows where byte ranges written by different cores overlap."""
    rows, reach = [], None  # reach: (end, core) of the furthest span so far
    for first, end, core in sorted(spans):
        if reach is not None and first < reach[0] and core != reach[1]:
            rows.append(first // row_bytes)
        if reach is None or end > reach[0]:
            reach = (end, core)
    return sorted(set(rows))


def _runs(count: int, per: int, loops: int) -> list[tuple[int, int]]:
    """(first token, tokens) of `loops` copies of `per` tokens and the tail copy of the rest."""
    runs = [(k * per, per) for k in range(loops)]
    return runs + [(loops * per, count - loops * per)]


def alibi(cache, src, geo: Geometry, slots, wins, seq_lens, n_cores: int, what, src_name) -> list[Finding]:
    """Task i = b·H + h copies the last w tokens of batch b, head h, to cache rows slot[i] on, split
    in loops of what fits in the kernel's UB buffer."""
    heads, batches = geo.heads, len(seq_lens)
    ub_size = MAX_UB_SIZE - _round_up(heads * batches * 4) - _round_up(heads * 4)
    cores = balanced_cores(batches * heads, n_cores)
    copies = Copies(cache, src, geo, what, src_name)
    for i, h, w, end in alibi_tasks(wins, seq_lens, heads, copies.findings, what):
        loops = w * geo.row // ub_size + 1
        for first, n in _runs(w, w // loops, loops):
            copies.copy((end - w + first) * heads + h, int(slots[i]) + first, n, int(cores[i]))
    return copies.finish()


def rope(cache, src, geo: Geometry, plans, first_task: int, n_cores: int, omni: bool, what, src_name) -> list[Finding]:
    """Per task of `plans` (rope_plans): Rope's window mean at first + o, rows [0, o) to first + [0, o),
    the tail after the window to first + o + 1 (Rope) or first + o (Omni), each run split in copies
    of copyFp16Num elements. Key tasks are 0..BH-1 and value tasks BH..2BH-1 on the cores."""
    heads = geo.heads
    cores = balanced_cores(2 * len(plans), n_cores)
    per_copy = TOTAL_BUFFER_SIZE // geo.unit.itemsize // BUFFER_NUM  # copyFp16Num
    copies = Copies(cache, src, geo, what, src_name)
    for i, (slot, start, o, w, tail) in enumerate(plans):
        h, core = i % heads, int(cores[first_task + i])
        if o < 0 or w < 0 or tail < 0:
            copies.findings.append(
                bad_task(what, i, f"compress_seq_offset {o} and compress_lens {w} outside its sequence")
            )
            continue
        if w and not omni:
            copies.mean((start + o) * heads + h, w, slot + o, core)
        gap = 0 if omni else 1
        for count, src_token, dst in ((o, start, slot), (tail, start + o + w, slot + o + gap)):
            loops = count * geo.d // per_copy
            per = per_copy // geo.d if loops else 0
            for first, n in _runs(count, per, loops):
                copies.copy((src_token + first) * heads + h, dst + first, n, core)
    return copies.finish()


def _round_up(n: int) -> int:
    return -(-n // BLOCK) * BLOCK
