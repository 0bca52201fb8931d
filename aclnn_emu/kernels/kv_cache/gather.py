"""GatherPaKvCache: a block-paged cache back into contiguous key/value, bit-exact (CANN 8.5 kernels).

A plan is the kernel's block copies in its program order, as runs: `count` tokens from the start
of cache block `block` to output rows out_row, out_row + 1, ... (`fill`: the kernel writes zeros
there, or the block id could not be read). The planners replay each kernel's control flow on the
index tensors, with its integer types and the reads it makes outside them:
- `plan_a2_nd`: Atlas A2/A3 Norm (gather_pa_kv_cache_nd.h), reading everything from global memory;
- `plan_a2_nz`: Atlas A2/A3 PA_NZ (gather_pa_kv_cache_nz.h), through its unified-buffer copy of
  seqLens and the block table (`_LocateInfo`);
- `plan_arch35`: Ascend910_95 Norm and PA_NZ (arch35/*), batches split over the cores.
`copy` then moves one cache's tokens into one output through the shared layouts. Index tensors
arrive flat in their dtype; caches and outputs as flat byte buffers.
"""

import dataclasses

import numpy as np

from .findings import OUT_OF_BOUNDS_READ, OUT_OF_RANGE, UNINITIALIZED_READ, WRITE_RACE, Finding, all_distinct, listed
from .layouts import Layout, copy_pieces

INT32 = 1 << 32


def c_int(value: int, bits: int) -> int:
    """`value` in a signed integer of `bits` bits (C's wrap-around)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncating toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclasses.dataclass
class Runs:
    """One entry per block copy, in the kernel's order (see the module docstring)."""

    out_row: np.ndarray
    block: np.ndarray
    count: np.ndarray
    fill: np.ndarray


class _Plan:
    """Collects runs, keeping only the blocks with rows in [0, limit) (limit: the rows of the
    larger output), so that a garbage length costs no more than the outputs hold."""

    def __init__(self, limit: int):
        self.limit, self.dropped = limit, 0
        self.parts: list = []
        self.findings: list[Finding] = []

    def blocks(self, first_row: int, tokens: int, block_size: int) -> np.ndarray:
        """The indices of the blocks of a `tokens`-long sequence written from `first_row` that
        reach [0, limit); the others are counted as dropped."""
        n_blocks = -(-tokens // block_size)
        low = max(0, -first_row // block_size)
        high = min(n_blocks, -(-(self.limit - first_row) // block_size)) if self.limit > first_row else 0
        k = np.arange(low, max(low, high), dtype=np.int64)
        self.dropped += tokens - int(np.minimum(block_size, tokens - k * block_size).sum())
        return k

    def add(self, first_row: int, tokens: int, block_size: int, k, block, fill) -> None:
        count = np.minimum(block_size, tokens - k * block_size)
        self.parts.append((first_row + k * block_size, np.asarray(block, np.int64), count, np.asarray(fill, bool)))

    def done(self) -> tuple[Runs, list[Finding]]:
        if self.dropped:
            self.findings.append(
                (
                    OUT_OF_RANGE,
                    f"{self.dropped} token(s) of the batches land outside the outputs' "
                    f"{self.limit} rows; the hardware writes them outside the tensors, "
                    "aclnn-emu skips them",
                )
            )
        columns = (
            [np.concatenate(c) for c in zip(*self.parts)]
            if self.parts
            else [np.zeros(0, np.int64)] * 3 + [np.zeros(0, bool)]
        )
        return Runs(*columns), self.findings


class _Gm:
    """Element reads of an index tensor in global memory; reads outside it give 0 and are noted."""

    def __init__(self, flat: np.ndarray, name: str):
        self.flat, self.name = flat, name
        self.outside: list = []

    def __call__(self, index):
        index = np.asarray(index, np.int64)
        inside = (index >= 0) & (index < len(self.flat))
        values = np.zeros(index.shape, np.int64)
        values[inside] = self.flat[index[inside]]
        if not inside.all():
            self.outside.append(index[~inside].reshape(-1))
        return values, inside

    def one(self, index: int) -> int:
        return int(self(index)[0])

    def findings(self, use: str) -> list[Finding]:
        if not self.outside:
            return []
        bad = np.unique(np.concatenate(self.outside))
        return [
            (
                OUT_OF_BOUNDS_READ,
                f"{self.name}: the kernel reads element(s) {listed(bad)} outside the tensor's "
                f"{len(self.flat)}; aclnn-emu {use}",
            )
        ]


# ---------------------------------------------------------------------------------------------
# Atlas A2 / A3
# ---------------------------------------------------------------------------------------------
def plan_a2_nd(
    seq_lens, tables, offsets, batches: int, cols: int, block_size: int, cumsum: bool, limit: int
) -> tuple[Runs, list[Finding]]:
    """GatherPaKvCacheNd::Process: batch b's tokens start at output row `start` (seqLens[0] for
    cumulative lengths, else 0, then the end of the previous batch); block k of the batch is
    blockTables[b * cols + seqOffset[b] / block_size + k], read without a check against the
    row's width (all int32 arithmetic)."""
    lens, table = _Gm(seq_lens, "seqLens"), _Gm(tables, "blockTables")
    offset = _Gm(offsets, "seqOffsetOptional") if offsets is not None else None
    plan = _Plan(limit)
    start = lens.one(0) if cumsum else 0
    for b in range(batches):
        if cumsum:
            end = lens.one(b + 1)
            tokens = c_int(end - start, 32)
        else:
            tokens = lens.one(b)
            end = c_int(start + tokens, 32)
        if tokens > 0:
            shift = _c_div(offset.one(b), block_size) if offset is not None else 0
            k = plan.blocks(start, tokens, block_size)
            block, read = table(_int_array(b * cols + shift + k))
            plan.add(start, tokens, block_size, k, block, ~read)
        start = end
    return _finish(plan, lens, table, offset)


def plan_a2_nz(
    seq_lens, tables, offsets, batches: int, cols: int, block_size: int, cumsum: bool, limit: int
) -> tuple[Runs, list[Finding]]:
    """GatherPaKvCacheNz::Process: output rows follow each other from 0; seqLens and the block
    table are read from the kernel's unified-buffer copy (`_LocateInfo`), refilled every
    `per_chunk` batches; block k of batch b (local index l in its chunk) is the buffer's table word
    l * cols + k + seqOffset[l] (seqOffset read at the local index and not divided by block_size)."""
    ub = _LocateInfo(seq_lens, tables, batches, cols)
    offset = _Gm(offsets, "seqOffsetOptional") if offsets is not None else None
    plan = _Plan(limit)
    start = ub.length(0) if cumsum else 0  # read before the first copy into the buffer
    produced = 0
    for b in range(batches):
        local = b % ub.per_chunk
        if local == 0:
            ub.load(b)
        if cumsum:
            end = ub.length(local + 1)
            tokens = c_int(end - start, 32)
            start = end
        else:
            tokens = ub.length(local)
        if tokens > 0:
            shift = offset.one(local) if offset is not None else 0
            k = plan.blocks(produced, tokens, block_size)
            block = ub.table((local * cols + k + shift) % INT32)
            plan.add(produced, tokens, block_size, k, block, np.zeros(len(k), bool))
        produced = c_int(produced + tokens, 32)
    runs, findings = plan.done()
    return runs, findings + ub.findings() + (offset.findings("reads them as 0") if offset is not None else [])


def nz_chunk(cols: int) -> int:
    """How many batches the A2/A3 PA_NZ kernel's 40 KiB locate buffer takes at a time (its
    maxNumTokens): 0 when a block-table row does not fit, and the kernel divides by zero."""
    return (_LocateInfo.WORDS - 16) // (cols + 1)


class _LocateInfo:
    """The A2/A3 PA_NZ kernel's 40 KiB locate buffer: seqLens words from word 0, block-table words
    from `table_at`, both copied in from global memory in whole 32-byte blocks, `per_chunk`
    batches at a time. Each word remembers which tensor element it holds. A read of a word this
    launch never filled, or past the buffer, is undefined on the hardware: it gets the element the
    kernel means. A word holding another element (left by an earlier chunk, or the table's start
    read as a length) gives what the hardware gives: that element. All three are reported."""

    WORDS = 40 * 1024 // 4
    SEQ_LENS, TABLES = 1, 2

    def __init__(self, seq_lens, tables, batches: int, cols: int):
        self.gm = {self.SEQ_LENS: (seq_lens, "seqLens"), self.TABLES: (tables, "blockTables")}
        self.batches, self.cols = batches, cols
        self.per_chunk = nz_chunk(cols)
        self.table_at = -(-self.per_chunk // 8) * 8
        self.words = np.zeros(self.WORDS, np.int64)
        self.tensor = np.zeros(self.WORDS, np.int64)  # which tensor the word came from (0: none yet)
        self.element = np.zeros(self.WORDS, np.int64)  # and which of its elements
        self.first = 0
        self.seen: dict[str, list] = {kind: [] for kind in ("uninitialized", "beyond", "stale", "outside")}

    def load(self, first: int) -> None:
        """CopyLocateInfoIn(first)."""
        self.first = first
        n = min(self.batches - first, self.per_chunk)
        self._copy(0, self.SEQ_LENS, first, ((n * 4 - 1) // 32 + 1) * 8)
        self._copy(self.table_at, self.TABLES, first * self.cols, ((n * self.cols * 4 - 1) // 32 + 1) * 8)

    def _copy(self, at: int, tensor: int, start: int, count: int) -> None:
        element = start + np.arange(count)
        self.words[at : at + count], _ = _Gm(self.gm[tensor][0], "")(element)
        self.tensor[at : at + count], self.element[at : at + count] = tensor, element

    def length(self, word: int) -> int:
        return int(self._read(np.array([word]), 0, self.SEQ_LENS, self.first)[0])

    def table(self, words: np.ndarray) -> np.ndarray:
        return self._read(words, self.table_at, self.TABLES, self.first * self.cols)

    def _read(self, words, at: int, tensor: int, first_element: int) -> np.ndarray:
        gm, name = self.gm[tensor]
        cell, meant = at + words, first_element + words
        beyond = cell >= self.WORDS
        cell = np.where(beyond, 0, cell)
        values = self.words[cell].copy()
        never = ~beyond & (self.tensor[cell] == 0)
        stale = ~beyond & ~never & ((self.tensor[cell] != tensor) | (self.element[cell] != meant))
        outside = ~beyond & ~never & ~stale & ((meant < 0) | (meant >= len(gm)))
        undefined = beyond | never
        values[undefined], _ = _Gm(gm, name)(meant[undefined])
        for kind, mask in (("uninitialized", never), ("beyond", beyond), ("stale", stale), ("outside", outside)):
            if mask.any():
                self.seen[kind].append((name, meant[mask]))
        return values

    TEXTS = {
        "uninitialized": (
            UNINITIALIZED_READ,
            "reads {name} element(s) {idx} from unified-buffer words it has not "
            "copied in yet (with cumulative seqLens the start of batch 0 always "
            "is one); the hardware uses whatever the buffer holds, aclnn-emu the "
            "element itself",
        ),
        "beyond": (
            UNINITIALIZED_READ,
            "reads {name} element(s) {idx} past the end of its 40 KiB locate buffer (a "
            "seqOffset or block count too large for the chunk of batches); the hardware "
            "reads other unified-buffer data, aclnn-emu the element itself (0 past the "
            "tensor's end)",
        ),
        "stale": (
            UNINITIALIZED_READ,
            "reads {name} element(s) {idx} from unified-buffer words that hold other "
            "data (a previous chunk's words, or the block table where a length should be: "
            "the chunk's 32-byte copy stops short of them); the hardware and aclnn-emu "
            "use that data",
        ),
        "outside": (
            OUT_OF_BOUNDS_READ,
            "uses {name} element(s) {idx}, which its 32-byte copies read from beyond the "
            "end of the tensor; aclnn-emu reads them as 0",
        ),
    }

    def findings(self) -> list[Finding]:
        out = []
        for kind, reads in self.seen.items():
            for name in sorted({n for n, _ in reads}):
                idx = np.unique(np.concatenate([i for n, i in reads if n == name]))
                code, text = self.TEXTS[kind]
                out.append((code, "the Atlas A2/A3 PA_NZ kernel " + text.format(name=name, idx=listed(idx))))
        return out


# ---------------------------------------------------------------------------------------------
# Ascend910_95 (arch35)
# ---------------------------------------------------------------------------------------------
def plan_arch35(
    seq_lens,
    tables,
    offsets,
    batches: int,
    width: int,
    block_size: int,
    cumsum: bool,
    tokens_out: int,
    n_cores: int,
    nz: bool,
) -> tuple[Runs, list[Finding]]:
    """GatherPaKvCacheNd / Nz (arch35)::Process. Core c takes batches [c * per, (c + 1) * per)
    (the last core the rest) and stops at its first batch that starts at or after the output's
    `tokens_out` rows; a batch reaching past them is cut there. Block k of batch i is
    blockTables[i, k + seqOffset[i] / block_size], zeros where that column lies outside the row.
    The NZ kernel keeps row offsets in uint32 and divides an int32 seqOffset as unsigned."""
    bits = seq_lens.dtype.itemsize * 8
    plan = _Plan(tokens_out)
    per = -(-batches // n_cores)
    used = min(-(-batches // per), n_cores)
    bad = []
    for core in range(used):
        first, last = core * per, batches if core == used - 1 else (core + 1) * per
        offset = int(seq_lens[first]) if cumsum else c_int(int(seq_lens[:first].astype(np.int64).sum()), bits)
        for i in range(first, last):
            if cumsum:
                tokens, start, end = (
                    c_int(int(seq_lens[i + 1]) - int(seq_lens[i]), bits),
                    int(seq_lens[i]),
                    int(seq_lens[i + 1]),
                )
            else:
                tokens, start, end = int(seq_lens[i]), offset, offset + int(seq_lens[i])
                offset = end
            if nz:
                start, end = start % INT32, end % INT32
            if start >= tokens_out:
                break
            if tokens_out <= end:
                tokens = tokens_out - start
            shift = int(offsets[i]) if offsets is not None else 0
            shift = c_int((shift % INT32) // block_size, 32) if nz and bits == 32 else _c_div(shift, block_size)
            # CeilDivision(int32, int32), stored unsigned: a negative count wraps to a huge one
            blocks = _c_div(c_int(c_int(tokens, 32) + block_size - 1, 32), block_size)
            if blocks < 0:
                bad.append(i)
                continue
            if tokens <= 0:
                continue
            k = plan.blocks(start, tokens, block_size)
            column = k + shift
            fill = (column < 0) | (column >= width)
            block = np.zeros(len(k), np.int64)
            block[~fill] = tables[i * width + column[~fill]]
            plan.add(start, tokens, block_size, k, block, fill)
    runs, findings = plan.done()
    if bad:
        findings.append(
            (
                OUT_OF_RANGE,
                f"batches {listed(bad)} have negative lengths, for which the kernel's unsigned "
                "block count wraps around (it would copy far outside the tensors); "
                "aclnn-emu skips those batches",
            )
        )
    return runs, findings


# ---------------------------------------------------------------------------------------------
# Moving one cache's tokens into one output
# ---------------------------------------------------------------------------------------------
def copy(
    out: np.ndarray,
    cache: np.ndarray,
    layout: Layout,
    runs: Runs,
    block_size: int,
    row_bytes: int,
    out_name: str,
    cache_name: str,
    align: int | None = None,
) -> list[Finding]:
    """Token t of a run goes to output row out_row + t, from cache slot block * block_size + t.

    `out` and `cache` are flat byte buffers. A token writes the first pieces * piece_bytes bytes
    of its `row_bytes`-long output row. `align` (A2/A3 ND): each run moves count * row_bytes
    bytes rounded down to a multiple of `align`, so its last token may move only a prefix.
    Blocks outside the cache give zeros, rows outside the output are skipped (both reported);
    overlapping rows are written in the kernel's order and reported.
    """
    findings: list = []
    written = layout.pieces * layout.piece_bytes
    if written == 0 or row_bytes == 0:
        return findings
    counts = runs.count
    run = np.repeat(np.arange(len(counts)), counts)
    within = np.arange(len(run)) - np.repeat(np.cumsum(counts) - counts, counts)
    rows = runs.out_row[run] + within
    fill = runs.fill[run].copy()
    slots = np.where(fill, 0, runs.block[run] * block_size + within)
    nbytes = np.full(len(run), written, np.int64)
    if align:
        moved = counts * row_bytes // align * align
        whole, rest = (moved // row_bytes)[run], (moved % row_bytes)[run]
        nbytes = np.where(within < whole, written, np.where(within == whole, rest, 0))
        keep = nbytes > 0
        run, rows, fill, slots, nbytes = run[keep], rows[keep], fill[keep], slots[keep], nbytes[keep]
    unread = ~fill & ~layout.inside(slots, cache.nbytes)
    if unread.any():
        blocks = np.unique(runs.block[run[unread]])
        findings.append(
            (
                OUT_OF_BOUNDS_READ,
                f"{cache_name}: blocks {listed(blocks)} from blockTables lie outside the "
                f"cache ({int(unread.sum())} token(s)); the hardware reads outside the "
                "tensor, aclnn-emu writes zeros for those tokens",
            )
        )
        fill |= unread
    outside = (rows < 0) | (rows * row_bytes + nbytes > out.nbytes)
    if outside.any():
        findings.append(
            (
                OUT_OF_RANGE,
                f"{out_name}: {int(outside.sum())} token(s) land in rows "
                f"{listed(rows[outside])} outside the tensor's {out.nbytes // row_bytes} rows; "
                "the hardware writes outside the tensor, aclnn-emu skips them",
            )
        )
        rows, fill, slots, nbytes = rows[~outside], fill[~outside], slots[~outside], nbytes[~outside]
    if not all_distinct(rows, out.nbytes // row_bytes + 1):
        findings.append(
            (
                WRITE_RACE,
                f"{out_name}: rows {listed(_repeated(rows))} are written more than once "
                "(batches overlap through seqLens or seqOffset); on the hardware tasks on "
                "different AI cores race there, aclnn-emu keeps the last write in the "
                "kernel's order",
            )
        )
        for i in range(len(rows)):
            _move(out, cache, layout, rows[i : i + 1], slots[i : i + 1], fill[i : i + 1], nbytes[i : i + 1], row_bytes)
        return findings
    _move(out, cache, layout, rows, slots, fill, nbytes, row_bytes)
    return findings


def _move(out, cache, layout: Layout, rows, slots, fill, nbytes, row_bytes: int) -> None:
    """The tokens' bytes, for distinct rows: whole tokens through the layout, zeros and the
    prefixes of aligned runs as plain byte copies."""
    written = layout.pieces * layout.piece_bytes
    whole = ~fill & (nbytes == written)
    layout.read(out, cache, slots[whole], rows[whole] * row_bytes)
    for size in np.unique(nbytes[~whole]):
        mine = ~whole & (nbytes == size)
        zeros = mine & fill
        if zeros.any():
            _bytes(out, np.zeros(size, np.uint8), rows[zeros] * row_bytes, np.zeros(int(zeros.sum()), np.int64), size)
        prefix = mine & ~fill
        if prefix.any():
            _bytes(out, cache, rows[prefix] * row_bytes, layout.offsets(slots[prefix]), size)


def _bytes(dst, src, dst_offsets, src_offsets, size) -> None:
    """`size` contiguous bytes per pair."""
    copy_pieces(dst, src, dst_offsets, src_offsets, pieces=1, piece_bytes=int(size), dst_stride=0, src_stride=0)


def _repeated(values: np.ndarray) -> np.ndarray:
    unique, counts = np.unique(values, return_counts=True)
    return unique[counts > 1]


def _int_array(values) -> np.ndarray:
    """int32 wrap-around of an int64 array."""
    return np.asarray(values, np.int64).astype(np.int32).astype(np.int64)


def _finish(plan: _Plan, lens: _Gm, table: _Gm, offset) -> tuple[Runs, list[Finding]]:
    runs, findings = plan.done()
    findings += lens.findings("reads them as 0")
    findings += table.findings("writes zeros for the tokens of those blocks")
    if offset is not None:
        findings += offset.findings("reads them as 0")
    return runs, findings
