"""Row writes into a paged KV cache with the hardware's ordering, bounds and race semantics,
and the window mean of the compress modes.

Every ScatterPaKvCache scenario reduces to "copy source row i to cache row j" (plus computed rows
in the compress modes). The AI cores each own a contiguous range of tasks and run it in order, so
for a cache row written twice the later write wins when one core does both, and the outcome is a
race when two cores do. Here the later write in task order always wins; the race and every write
or read outside its tensor are returned as findings (sanitizer kind, message) for the op module to
report. Findings never stop the other writes.
"""

import numpy as np

from ..casts import cast_rint, cast_round_hif8, hif8_to_float32
from .findings import OUT_OF_BOUNDS_READ, OUT_OF_RANGE, WRITE_RACE, Finding, all_distinct, listed
from .layouts import NdLayout


def balanced_cores(n_tasks: int, n_cores: int) -> np.ndarray:
    """Core of each task under `AllocateTask`: n // used tasks each, the first n % used cores one more."""
    used = max(1, min(n_tasks, n_cores))
    per, extra = divmod(n_tasks, used)
    return np.repeat(np.arange(used, dtype=np.int64), [per + 1] * extra + [per] * (used - extra))


def blocked_cores(n_tasks: int, n_cores: int) -> np.ndarray:
    """Core of each task under a `blockFactor = ceil(n / cores)` split (NZ and arch35 tilings)."""
    factor = max(1, -(-n_tasks // max(1, n_cores)))
    return np.repeat(np.arange(-(-n_tasks // factor), dtype=np.int64), factor)[:n_tasks]


def rows_of(flat: np.ndarray, row_len: int) -> np.ndarray:
    """The whole rows of `row_len` elements at the start of a flat buffer, as a 2-D view."""
    n = len(flat) // row_len if row_len > 0 else 0
    return flat[: n * row_len].reshape(n, row_len)


def strided_rows(flat: np.ndarray, n: int, row_len: int, stride: int, offset: int) -> tuple[np.ndarray, int]:
    """Rows i = 0..n-1 at element offset i*stride + offset (the Nct layout) as a read-only view.

    Returns the view of the rows that lie inside `flat` and their count; with stride >= 0 those
    are a prefix of the n rows.
    """
    if offset < 0 or row_len <= 0 or offset + row_len > len(flat):
        readable = 0
    elif stride == 0:
        readable = n
    else:
        readable = min(n, (len(flat) - offset - row_len) // stride + 1)
    if readable == 0:
        return np.empty((0, row_len), flat.dtype), 0
    view = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=(readable, row_len), strides=(stride * flat.itemsize, flat.itemsize), writeable=False
    )
    return view, readable


class Writes:
    """Row writes into one 2-D cache view, collected in the order the hardware issues them.

    Sources are the input's rows (`add`, negative or too large row numbers are reads outside the
    input) and window means computed on the way (`add_mean`).
    """

    def __init__(self, what: str, rows: np.ndarray, src_name: str, mean=None):
        self.what, self.rows, self.src_name = what, rows, src_name
        self.mean = mean or window_mean
        self._parts: list = []
        self._means: list = []
        self._skipped: list = []
        self.limit: int | None = None
        self.findings: list[Finding] = []

    def within(self, targets: np.ndarray, limit: int) -> np.ndarray:
        """Mask of targets below `limit`; the rest are writes the kernel itself skips (reported once)."""
        self.limit = limit
        beyond = targets >= limit
        if beyond.any():
            self._skipped.append(targets[beyond])
        return ~beyond

    def add(self, dst_rows, src_rows, core, source: int = 0) -> None:
        dst_rows = np.asarray(dst_rows, dtype=np.int64).reshape(-1)
        if len(dst_rows) == 0:
            return
        src_rows = np.broadcast_to(np.asarray(src_rows, dtype=np.int64), dst_rows.shape)
        core = np.broadcast_to(np.asarray(core, dtype=np.int64), dst_rows.shape)
        self._parts.append((dst_rows, np.full(dst_rows.shape, source, np.int8), src_rows, core))

    def add_mean(self, dst_row: int, window_rows: np.ndarray, divisor: int, core) -> None:
        """Write the window_mean of the given input rows (skipped and reported if one lies outside)."""
        outside = (window_rows < 0) | (window_rows >= len(self.rows))
        if outside.any():
            self.findings.append(read_finding(self.src_name, window_rows[outside], len(self.rows)))
            return
        self.add(dst_row, len(self._means), core, source=1)
        self._means.append(self.mean(self.rows[window_rows], divisor))

    def apply(self, dst2d: np.ndarray) -> list[Finding]:
        """Perform the writes into dst2d (last one wins) and return all findings."""
        findings = self.findings
        if self._skipped:
            skipped = np.unique(np.concatenate(self._skipped))
            findings.append(
                (
                    OUT_OF_RANGE,
                    f"{self.what}: writes to slots {listed(skipped)} lie beyond the cache's "
                    f"{self.limit} slots; the kernel skips them",
                )
            )
        if not self._parts:
            return findings
        dst, src_id, src, core = (np.concatenate(col) if len(col) > 1 else col[0] for col in zip(*self._parts))
        means = np.stack(self._means) if self._means else self.rows[:0]
        lands = ~((src_id == 0) & ((src < 0) | (src >= len(self.rows))))
        if not lands.all():
            findings.append(read_finding(self.src_name, src[~lands], len(self.rows)))
        outside = lands & ((dst < 0) | (dst >= len(dst2d)))
        if outside.any():
            findings.append(outside_finding(self.what, dst[outside], len(dst2d)))
            lands &= ~outside
        picked = np.flatnonzero(lands)
        last, race = last_writes(dst[picked], core[picked], len(dst2d))
        if race is not None:
            findings.append(race_finding(self.what, race))
        if last is not None:
            picked = picked[last]
        for i, rows in enumerate((self.rows, means)):
            mine = picked[src_id[picked] == i]
            copy_rows(dst2d, dst[mine], rows, src[mine])
        return findings


def last_writes(targets: np.ndarray, cores: np.ndarray, limit: int):
    """(indices of the last write per target in program order or None if all are unique, race text
    or None), for targets in [0, limit)."""
    if len(targets) < 2 or all_distinct(targets, limit):
        return None, None
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return None, None
    crossing = same & (cores[order][1:] != cores[order][:-1])
    race = None
    if crossing.any():
        rows = np.unique(ordered[1:][crossing])
        race = f"{listed(rows)} ({len(rows)} in total)"
    is_last = np.append(~same, True)
    return np.sort(order[is_last]), race


def read_finding(name: str, rows: np.ndarray, limit: int) -> Finding:
    return (
        OUT_OF_BOUNDS_READ,
        f"{name}: {len(rows)} row read(s) fall outside the tensor's {limit} rows "
        f"(first: row {int(rows[0])}); those writes are skipped",
    )


def outside_finding(what: str, rows: np.ndarray, limit: int) -> Finding:
    return (
        OUT_OF_RANGE,
        f"{what}: {len(rows)} write(s) target slots outside the cache's {limit} "
        f"(first: slot {int(rows[0])}); the hardware would write outside the tensor, "
        "aclnn-emu skips them",
    )


def race_finding(what: str, rows_text: str) -> Finding:
    return (
        WRITE_RACE,
        f"{what}: slots {rows_text} are written by tasks on different AI cores; the hardware "
        "result is whichever core writes last (aclnn-emu keeps the last write in task order); "
        "make slot_mapping unique",
    )


def copy_rows(dst2d: np.ndarray, dst_rows: np.ndarray, src2d: np.ndarray, src_rows: np.ndarray) -> None:
    """dst2d[dst_rows[i]] = src2d[src_rows[i]] for unique dst_rows (in range, as are src_rows)."""
    if len(dst_rows) == 0 or dst2d.shape[1] == 0:
        return
    if src2d.strides[1] != src2d.itemsize:
        src2d = np.ascontiguousarray(src2d)
    NdLayout(dst2d.strides[0]).write(dst2d, src2d, dst_rows, src_rows * src2d.strides[0])


def hif8_window_mean(window: np.ndarray, divisor: int) -> np.ndarray:
    """The arch35 Rope mean of HiFloat8 codes: exact fp32 values, fp32 running sum in token order,
    one fp32 division, CAST_ROUND back to HiFloat8 (the arch35 kernel's cast for hifloat8_t)."""
    total = np.add.accumulate(hif8_to_float32(window), axis=0, dtype=np.float32)[-1]
    return cast_round_hif8(total / np.float32(divisor))


def window_mean(window: np.ndarray, divisor: int) -> np.ndarray:
    """The compress-mode mean of a [tokens, head_size] window, in the storage dtype.

    Float types: fp32 running sum in token order, one fp32 division, CAST_RINT back (fp32 stays).
    Integer types (arch35 only): 32-bit running sum with wrap-around, integer division truncating
    toward zero, and the low bits kept when packing back.
    """
    if window.dtype.kind in "iu":
        wide = np.dtype(np.int32 if window.dtype.kind == "i" else np.uint32)
        total = np.add.accumulate(window.astype(wide), axis=0, dtype=wide)[-1].astype(np.int64)
        quotient = np.abs(total) // divisor * np.sign(total)
        return quotient.astype(wide).astype(window.dtype)
    total = np.add.accumulate(window.astype(np.float32), axis=0, dtype=np.float32)[-1]
    return cast_rint(total / np.float32(divisor), window.dtype)
