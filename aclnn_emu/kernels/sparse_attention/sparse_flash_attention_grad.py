"""SparseFlashAttentionGrad: backward of sparse (top-k block) attention, as the NPU computes it.

Per query row r (G = N1 heads, one KV head) over its selected keys (see ``..._select``):

    Qc = [q | q_rope][r]  Kc = [k | k_rope][sel]  V = v[sel]            (dtype values, fp32 maths)
    S  = scale * Qc Kc^T ; S[masked] = -FLT_MAX
    P  = exp(S - softmaxMax[r]) / softmaxSum[r]     (recomputed, no renormalisation)
    Dl = rowsum(dOut[r] * out[r]) ;  dP = dOut[r] V^T ;  dSh = CAST_ROUND(P * (dP - Dl))
    Ph = CAST_ROUND(P) to the input dtype
    dQc[r] = dSh Kc ;  dKc[sel] += dSh^T Qc ;  dV[sel] += Ph^T dOut[r]   (fp32, scatter-add)
    dq | dq_rope = CAST_ROUND(scale * dQc) ;  dk | dk_rope = CAST_ROUND(scale * dKc) ;  dv = CAST_ROUND(dV)

Work is cut into steps (a few query rows against at most ``SLOT_BUDGET`` of their selected keys),
so memory stays bounded whatever S1, top-k and the block size are. Steps run on worker threads and
add their dK/dV/dQ contributions to fp32 sums in step order (deterministic, where the NPU's atomic
adds are not); a row's dq is stored once its last step is in. Keys no row selects get zero.
"""

import functools
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from aclnn_emu.kernels import native
from aclnn_emu.kernels.casts import FP32
from aclnn_emu.kernels.parallel import OrderedCommit, run_all
from aclnn_emu.kernels.rounding import CAST_ROUND, round_half_away_
from aclnn_emu.kernels.sparse_attention.select import RowSpans, select_row, selected_counts

SLOT_BUDGET = 4096  # gathered key rows per step (its query rows together)
ELEMENT_BUDGET = 1 << 18  # elements of one [rows, G, keys] fp32 score matrix per step
NEG_FLT_MAX = np.float32(-np.finfo(np.float32).max)  # the kernel's mask value 0xFF7FFFFF


@dataclass
class Grads:
    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray
    dq_rope: Optional[np.ndarray] = None
    dk_rope: Optional[np.ndarray] = None


@dataclass(frozen=True)
class _Inputs:
    q: np.ndarray  # [T1, G, D]
    q_rope: Optional[np.ndarray]
    k: np.ndarray  # [T2, D]
    k_rope: Optional[np.ndarray]
    v: np.ndarray  # [T2, Dv]
    keys: np.ndarray  # fp32 [T2, D + Dr]: k | k_rope widened once, the rows every step gathers
    values: np.ndarray  # fp32 [T2, Dv]
    indices: np.ndarray  # [T1, K] int32
    dout: np.ndarray  # [T1, G, Dv]
    out: np.ndarray
    smax: np.ndarray  # [T1, G] float32
    ssum: np.ndarray
    spans: RowSpans
    scale: np.float32
    block_size: int
    causal: bool


def sparse_flash_attention_grad(
    q,
    k,
    v,
    indices,
    dout,
    out,
    softmax_max,
    softmax_sum,
    spans: RowSpans,
    *,
    q_rope=None,
    k_rope=None,
    scale: float,
    block_size: int,
    sparse_mode: int,
    report: Optional[Callable[[str, str], None]] = None,
    outputs: Optional[Grads] = None,
) -> Grads:
    """Gradients of sparse attention. Shapes (N2 = 1 folded away, G = N1):

    q [T1, G, D], q_rope [T1, G, Dr] or None, k [T2, D], k_rope [T2, Dr] or None, v [T2, Dv],
    indices [T1, K] int32 (block ids, -1 ends a row), dout/out [T1, G, Dv] in q's dtype (fp16 or
    bf16); softmax_max/sum [T1, G] float32; spans: each row's batch (``bsnd_rows``/``tnd_rows``).
    ``outputs`` may hold preallocated arrays (q's dtype) to fill; otherwise they are allocated.
    ``report(kind, message)`` receives inputs the NPU would mishandle, once per kind.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    rope = q_rope is not None and k_rope is not None
    x = _Inputs(
        q,
        q_rope if rope else None,
        k,
        k_rope if rope else None,
        v,
        _concat(k, k_rope if rope else None),
        _concat(v, None),
        indices,
        dout,
        out,
        softmax_max,
        softmax_sum,
        spans,
        np.float32(scale),
        block_size,
        sparse_mode == 3,
    )
    grads = outputs or _allocate(x)
    report = _once_per_kind(report)
    counts = np.where(spans.valid, selected_counts(indices), 0)
    steps = _plan(counts * block_size, q.shape[1])
    sums = _Sums(x, grads)
    order = OrderedCommit()
    with np.errstate(all="ignore"):
        run_all(
            order.run,
            [
                (i, functools.partial(_step, x, step, counts, report), functools.partial(sums.commit, step))
                for i, step in enumerate(steps)
            ],
        )
        _store(sums.k * x.scale, grads.dk, grads.dk_rope)
        _store(sums.v, grads.dv, None)
    return grads


@dataclass(frozen=True)
class _Step:
    """Query rows [r0, r1) against columns [c0, c1) of their padded key lists."""

    r0: int
    r1: int
    c0: int
    c1: int
    last: bool  # the rows' final step: their dq is complete after it


def _plan(lengths, heads) -> list:
    """Cut rows (with at most ``lengths`` selected keys each) into steps within the budgets.

    Long rows span several steps (one per ``SLOT_BUDGET`` keys), short rows share one.
    """
    cols = max(1, min(int(lengths.max(initial=0)), SLOT_BUDGET))
    rows = max(1, min(SLOT_BUDGET // cols, ELEMENT_BUDGET // (heads * cols or 1)))
    steps = []
    for r0 in range(0, len(lengths), rows):
        r1 = min(r0 + rows, len(lengths))
        n = max(1, -(-int(lengths[r0:r1].max()) // cols))
        steps += [_Step(r0, r1, c * cols, (c + 1) * cols, c == n - 1) for c in range(n)]
    return steps


class _Sums:
    """The fp32 sums steps add to, one step at a time in step order: dK|dKrope and dV over all keys,
    dQ|dQrope of the rows in progress (stored as soon as their last step is in)."""

    def __init__(self, x: _Inputs, grads: Grads):
        self.k = np.zeros(x.keys.shape, FP32)
        self.v = np.zeros(x.v.shape, FP32)
        self.dq: dict = {}
        self.scale, self.grads = x.scale, grads

    def commit(self, step: _Step, item):
        if item is not None:
            pos, dkc, dv, dqc = item
            native.scatter_add_rows(self.k, pos, dkc)
            native.scatter_add_rows(self.v, pos, dv)
            self.dq[step.r0] = dqc + self.dq[step.r0] if step.r0 in self.dq else dqc
        if step.last:
            rows = slice(step.r0, step.r1)
            dqc = self.dq.pop(step.r0, None)
            dq_rope = None if self.grads.dq_rope is None else self.grads.dq_rope[rows]
            if dqc is None:
                self.grads.dq[rows] = 0
                if dq_rope is not None:
                    dq_rope[...] = 0
            else:
                _store(dqc * self.scale, self.grads.dq[rows], dq_rope)


def _step(x: _Inputs, step: _Step, counts, report):
    """(key positions, dKc rows, dV rows, dQc of the rows) of one step, or None if it has no keys."""
    with np.errstate(all="ignore"):
        r0, r1 = step.r0, step.r1
        positions, masked = _selections(x, r0, r1, counts[r0:r1], report)
        pos = positions[:, step.c0 : step.c1]
        if pos.shape[1] == 0:
            return None
        mask = masked[:, None, step.c0 : step.c1]
        valid = pos >= 0
        qc = _concat(x.q[r0:r1], None if x.q_rope is None else x.q_rope[r0:r1])
        dout = _concat(x.dout[r0:r1], None)
        d_l = np.einsum("rgd,rgd->rg", dout, _concat(x.out[r0:r1], None), dtype=FP32)
        half = x.q.dtype
        kc = _gather(x.keys, pos, valid)
        v = _gather(x.values, pos, valid)
        p = np.matmul(qc, kc.transpose(0, 2, 1))  # S, then P in place
        p *= x.scale
        if mask.any():
            np.copyto(p, NEG_FLT_MAX, where=mask)
        keys = p.shape[-1]
        native.softmax_probs_(p.reshape(-1, keys), x.smax[r0:r1].reshape(-1, 1), x.ssum[r0:r1].reshape(-1, 1))
        if not valid.all():
            np.copyto(p, FP32.type(0), where=~valid[:, None, :])
        ds = np.matmul(dout, v.transpose(0, 2, 1))  # dP, then dS = CAST_ROUND(P * (dP - Dl))
        native.softmax_grad_(ds.reshape(-1, keys), p.reshape(-1, keys), d_l.reshape(-1), None, CAST_ROUND[half])
        p_h, ds_h = round_half_away_(p, half), ds
        dqc = np.matmul(ds_h, kc)
        dkc = np.matmul(ds_h.transpose(0, 2, 1), qc)
        dv = np.matmul(p_h.transpose(0, 2, 1), dout)
        if valid.all():
            return pos.reshape(-1), dkc.reshape(-1, dkc.shape[-1]), dv.reshape(-1, dv.shape[-1]), dqc
        return pos[valid], dkc[valid], dv[valid], dqc


def _selections(x: _Inputs, r0, r1, counts, report):
    """Padded [rows, L] key positions (-1 = padding) and mode-3 mask of rows [r0, r1)."""
    sp = x.spans
    rows = [
        select_row(
            x.indices[r, : counts[r - r0]],
            int(sp.s1[r]),
            int(sp.sq[r]),
            int(sp.sk[r]),
            int(sp.kbase[r]),
            block_size=x.block_size,
            causal=x.causal,
            num_keys=x.k.shape[0],
            report=report,
        )
        if counts[r - r0]
        else None
        for r in range(r0, r1)
    ]
    width = max((len(s.positions) for s in rows if s is not None), default=0)
    positions = np.full((r1 - r0, width), -1, dtype=np.int64)
    masked = np.zeros((r1 - r0, width), dtype=bool)
    for i, s in enumerate(rows):
        if s is not None:
            positions[i, : len(s.positions)] = s.positions
            masked[i, : len(s.masked)] = s.masked
    return positions, masked


def _concat(main, rope):
    """fp32 [..., D + Dr] from a tensor and its optional rope part (fp16/bf16 widened by native.c)."""
    d = main.shape[-1]
    out = np.empty(main.shape[:-1] + (d + (0 if rope is None else rope.shape[-1]),), FP32)
    rows = out.reshape(-1, out.shape[-1])
    native.widen(main.reshape(-1, d), out=rows[:, :d])
    if rope is not None:
        native.widen(rope.reshape(-1, rope.shape[-1]), out=rows[:, d:])
    return out


def _gather(table, pos, valid):
    """fp32 [rows, L, width] rows of the fp32 ``table`` at ``pos``; padding rows are zero."""
    flat = np.where(valid, pos, 0).reshape(-1)
    out = np.take(table, flat, axis=0).reshape(pos.shape + table.shape[-1:])
    if not valid.all():
        out[~valid] = 0
    return out


def _store(values, main, rope):
    """CAST_ROUND fp32 ``values`` [..., D (+Dr)] (overwritten) into ``main`` (and ``rope``)."""
    round_half_away_(values, main.dtype)  # in place; the narrowing below is then exact
    d = main.shape[-1]
    main[...] = values[..., :d]
    if rope is not None:
        rope[...] = values[..., d:]


def _allocate(x: _Inputs) -> Grads:
    dt = x.q.dtype
    t1, g = x.q.shape[:2]
    t2 = x.k.shape[0]
    return Grads(
        dq=np.empty(x.q.shape, dt),
        dk=np.empty(x.k.shape, dt),
        dv=np.empty(x.v.shape, dt),
        dq_rope=None if x.q_rope is None else np.empty((t1, g, x.q_rope.shape[-1]), dt),
        dk_rope=None if x.k_rope is None else np.empty((t2, x.k_rope.shape[-1]), dt),
    )


def _once_per_kind(report):
    """Wrap ``report`` so each kind is passed on once per call (thread-safe)."""
    seen, lock = set(), threading.Lock()

    def once(kind, message):
        with lock:
            if kind in seen:
                return
            seen.add(kind)
        if report is not None:
            report(kind, message)
        else:
            import warnings

            warnings.warn(f"{kind}: {message}", RuntimeWarning, stacklevel=2)

    return once
