"""LightningIndexerGrad maths (reference §1.B/§1.C).

The backward of I[r, j] = sum_h w[r, h] * relu(q[r, h] . k[idx[r, j]]).

For one query row r with its first n index entries (see lightning_indexer_grad_plan):
  S  = q_r · K_r^T in fp32, R = relu(S)                        K_r = the gathered key rows [n, D]
  Y  = to_dtype(w_r ⊗ dy_r)                                    rounded before masking (fixpipe, RNE)
  G  = Y where R > 0 else 0                                    relu'(0) = 0
  dweights_r = CAST_ROUND(R · dy_r)                            fp32 reduction over the n entries
  dq_r       = to_dtype(G · K_r)                               fp32 accumulation, RNE
  dk[kbase + idx[r, j]] += G[:, j]^T · q_r                     fp32 scatter-add; duplicates add twice
  dk = CAST_ROUND(dk)
No scale is applied. Entries past n are never read, so -1 padding there is harmless.

Rows are processed in chunks of consecutive rows: the keys of a chunk are gathered into a
[rows, topK, D] buffer, so memory grows with the chunk, never with the sequence. Chunks are dealt
round-robin to a fixed number of partial dk sums (numpy releases the GIL in matmul and the
gathers, so the partials run on the worker threads); each scatter-adds into its own fp32 dk, and
the partials are summed in a fixed order, so results depend neither on timing nor on the worker
count.

Index entries the hardware would read outside the row's batch (or outside the key tensor) are
skipped and counted in `Findings`; rows left with no usable entry come out as zeros (the hardware
leaves them unwritten) and are counted too.
"""

import dataclasses

import numpy as np

from .. import native, parallel
from ..casts import BF16, FP32, cast_rint, cast_round
from .lightning_indexer_plan import RowPlan

CHUNK_ROWS = 4  # query rows per work item: ~3 MiB of fp32 scratch per row at topK = 2048
DK_COPIES_BYTES = 256 << 20  # budget for the private fp32 dk accumulators
# dk partial sums (numerics: a fixed number, whatever the worker count), so at most as many workers:
# each holds a copy of dk and its scratch (2 of them keep the peak RSS growth within 2x the inputs).
DK_COPIES = 2


@dataclasses.dataclass
class Findings:
    """What the hardware would have got wrong or left undefined, for the sanitizer."""

    bad_entries: int = 0
    first_bad: tuple | None = None  # (row, position, index value)
    empty_rows: int = 0
    first_empty: int | None = None

    def merge(self, other: "Findings") -> None:
        self.bad_entries += other.bad_entries
        self.first_bad = self.first_bad or other.first_bad
        self.empty_rows += other.empty_rows
        self.first_empty = self.first_empty if self.first_empty is not None else other.first_empty


class _Worker:
    """One partial's share of the rows (run on one worker at a time): private fp32 dk, private findings."""

    def __init__(self, job: "_Job"):
        self.job = job
        self.dk = np.zeros((job.key_rows, job.key.shape[1]), FP32)
        self.findings = Findings()
        self.buffers: dict = {}

    def scratch(self, name: str, shape, dtype) -> np.ndarray:
        """A contiguous array from this worker's reusable buffer `name` (grown when too small), so
        chunk after chunk the same pages are reused."""
        size = int(np.prod(shape))
        buffer = self.buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self.buffers[name] = np.empty(size, dtype)
        return buffer[:size].reshape(shape)

    def run_chunk(self, r0: int, r1: int) -> None:
        job = self.job
        n = job.plan.n[r0:r1]
        width = int(n.max(initial=0))
        flat, usable = self._usable_entries(r0, r1, n, width)
        rows_without = np.flatnonzero(~usable.any(axis=1))
        if len(rows_without):
            self.findings.merge(Findings(empty_rows=len(rows_without), first_empty=r0 + int(rows_without[0])))
        if width == 0:
            job.dq[r0:r1] = 0
            job.dweights[r0:r1] = 0
            return
        c, heads, dim = r1 - r0, job.q.shape[1], job.q.shape[2]
        # Unusable entries gather the zero row; every index is in range, so mode="clip" lets take
        # write straight into the scratch buffer (mode="raise" would buffer the whole result).
        keys = np.take(
            job.key,
            np.where(usable, flat, job.key_rows),
            axis=0,
            mode="clip",
            out=self.scratch("keys", (c, width, dim), FP32),
        )
        dy = job.dy[r0:r1, :width].astype(FP32)
        dy[~usable] = 0
        q = job.q[r0:r1].astype(FP32)  # [c, H, D]
        w = job.w[r0:r1].astype(FP32)  # [c, H]

        relu = np.matmul(q, keys.transpose(0, 2, 1), out=self.scratch("relu", (c, heads, width), FP32))
        np.maximum(relu, 0, out=relu)
        job.dweights[r0:r1] = cast_round(np.matmul(relu, dy[:, :, None])[:, :, 0], job.dtype)

        grad = np.multiply(w[:, :, None], dy[:, None, :], out=self.scratch("grad", (c, heads, width), FP32))
        narrow = self.scratch("narrow", grad.shape, job.dtype)  # Y: rounded to the dtype (RNE)
        np.copyto(narrow, grad, casting="unsafe")
        np.copyto(grad, narrow)
        positive = np.greater(relu, 0, out=relu)  # 1.0 / 0.0; R is not needed any more
        if _products_finite(w, dy, job.dtype):
            grad *= positive
        else:  # inf * 0 would make NaN
            np.copyto(grad, np.float32(0), where=positive == 0)
        job.dq[r0:r1] = cast_rint(np.matmul(grad, keys), job.dtype)
        contrib = np.matmul(grad.transpose(0, 2, 1), q, out=keys)  # [c, W, D], reuses the gather buffer
        self._scatter_add(flat, contrib, usable)

    def _usable_entries(self, r0, r1, n, width) -> tuple[np.ndarray, np.ndarray]:
        """Flat key rows of the chunk's entries, and which entries are usable: j < n, and the key
        lies inside the row's batch and inside the key tensor."""
        job = self.job
        idx = job.idx[r0:r1, :width].astype(np.int64)
        live = np.arange(width) < n[:, None]
        flat = job.plan.kbase[r0:r1, None] + idx
        usable = live & (idx >= 0) & (idx < job.plan.klen[r0:r1, None]) & (flat >= 0) & (flat < job.key_rows)
        bad = live & ~usable
        if bad.any():
            row, pos = np.argwhere(bad)[0]
            self.findings.merge(
                Findings(
                    bad_entries=int(np.count_nonzero(bad)), first_bad=(r0 + int(row), int(pos), int(idx[row, pos]))
                )
            )
        return flat, usable

    def _scatter_add(self, rows: np.ndarray, values: np.ndarray, usable: np.ndarray) -> None:
        """dk[rows[r, j]] += values[r, j] for the usable entries in (r, j) order; a key row given
        twice gets both additions."""
        native.scatter_add_rows(self.dk, rows[usable], values[usable])


def _products_finite(w: np.ndarray, dy: np.ndarray, dtype) -> bool:
    """True when every w*dy rounded to dtype is finite, so masking by multiplication is exact."""
    limit = float(np.finfo(np.float16).max) if np.dtype(dtype) != BF16 else 3.0e38
    wmax, dymax = np.abs(w).max(initial=0), np.abs(dy).max(initial=0)
    return bool(np.isfinite(wmax) and np.isfinite(dymax) and float(wmax) * float(dymax) < limit)


@dataclasses.dataclass
class _Job:
    q: np.ndarray
    key: np.ndarray  # fp32 [K + 1, D]; the extra last row is zero
    key_rows: int
    dy: np.ndarray
    idx: np.ndarray
    w: np.ndarray
    plan: RowPlan
    dtype: np.dtype
    dq: np.ndarray
    dweights: np.ndarray


def lightning_indexer_grad(
    query,
    key,
    dy,
    indices,
    weights,
    plan: RowPlan,
    *,
    out=None,
    partials: int | None = None,
    chunk_rows: int = CHUNK_ROWS,
):
    """Gradients of the lightning indexer for rows laid out flat.

    query [R, H, D], key [K, D] (flat key rows of all batches), dy and indices [R, topK],
    weights [R, H], all fp16/bf16 except int32/int64 indices. `out` = (dq, dk, dweights) arrays of
    the input dtype to fill in place (shapes [R, H, D], [K, D], [R, H]); None entries are made new.
    Returns (dq, dk, dweights, Findings).
    """
    dtype = np.dtype(query.dtype)
    rows, key_rows = query.shape[0], key.shape[0]
    dq, dk, dweights = (
        given if given is not None else np.empty(like.shape, dtype)
        for given, like in zip(out or (None,) * 3, (query, key, weights))
    )
    key32 = np.zeros((key_rows + 1, key.shape[1]), FP32)
    key32[:key_rows] = key
    job = _Job(query, key32, key_rows, dy, indices, weights, plan, dtype, dq, dweights)

    # dk is summed in `partials` fp32 copies (bounded so they stay small), chunk c into copy
    # c % partials; each copy's chunks run in order on one worker, and the copies are added in
    # order as they finish, so the worker count changes no bit and only the copies in flight are held.
    partials = min(partials or DK_COPIES, max(1, DK_COPIES_BYTES // max(1, key32.nbytes)))
    starts = list(range(0, rows, chunk_rows))
    workers = [_Worker(job) for _ in range(max(1, min(partials, len(starts))))]

    def compute(k: int) -> None:
        with np.errstate(over="ignore", invalid="ignore"):  # inf/NaN propagate as on the NPU
            for r0 in starts[k :: len(workers)]:
                parallel.checkpoint()
                workers[k].run_chunk(r0, min(r0 + chunk_rows, rows))
        workers[k].buffers.clear()  # its scratch, before the dk copies are added up

    def commit(k: int) -> None:
        """Partial k added to partial 0 (in k order) and let go, so only those in flight are held."""
        if k:
            with np.errstate(over="ignore", invalid="ignore"):
                workers[0].dk += workers[k].dk
            workers[k].dk = None

    order = parallel.OrderedCommit()
    parallel.map_ordered(lambda k: order.run(k, lambda: compute(k), lambda _: commit(k)), range(len(workers)))

    findings = Findings()
    for worker in workers:
        findings.merge(worker.findings)
    total = workers[0].dk
    dk[...] = cast_round(total, dtype)
    return dq, dk, dweights, findings
