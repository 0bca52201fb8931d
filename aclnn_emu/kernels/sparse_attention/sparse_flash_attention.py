"""SparseFlashAttention: attention of each query row over the keys its sparse indices select, as the
CANN 8.5 kernel computes it (forward of kernels/sparse_attention/sparse_flash_attention_grad).

Query row r (G = N1 heads, one key head) scans ``P = min(K * bs, threshold)`` positions, threshold
= Sk (mode 0) or Sk - Sq + s1 + 1 (mode 3; P <= 0 gives an all-zero row). Position p names key
``idx[r, p // bs] * bs + p % bs`` of the row's batch; the key is used only when it lies in
[0, limit), limit = threshold, so -1 padding, blocks past the sequence and (mode 3) keys past the
bottom-right diagonal are skipped wherever they stand. With the used keys, in scan order:

    S = scale * fp32([q | q_rope] . [k | k_rope])
    online softmax over chunks of 512 scan positions: m_c running max, P_c = exp(S - m_c)
    O = sum_c exp(m_c - m) * (CAST_ROUND(P_c) @ v) / l,   l = sum_c exp(m_c - m) * rowsum(P_c)
    out = O narrowed (bf16: CAST_RINT, fp16: CAST_ROUND); softmaxMax = m, softmaxSum = l

softmaxMax/Sum are what SparseFlashAttentionGrad reads back ([rows, G] = BSND [B, N2, S1, G] or
TND [N2, T1, G] with N2 = 1). A row with no used key gets out = 0, max = -2e38, sum = 0.

Steps of a few rows run on the kernel worker threads; a step gathers its rows' keys once, so
memory is O(rows x K x D), never S1 x S2.
"""

import dataclasses
from typing import Optional

import numpy as np

from aclnn_emu.kernels.casts import BF16, FP32, cast_rint, cast_round
from aclnn_emu.kernels.parallel import map_ordered
from aclnn_emu.kernels.rounding import round_half_away_
from aclnn_emu.kernels.sparse_attention.key_rows import KeyRows
from aclnn_emu.kernels.sparse_attention.select import RowSpans

CHUNK = 512  # scan positions per online-softmax step (s2BaseSize)
SLOT_BUDGET = 4096  # gathered key rows per step
SOFTMAX_MIN = FP32.type(-2e38)


@dataclasses.dataclass
class Outputs:
    out: np.ndarray  # [T1, G, Dv], query dtype
    softmax_max: Optional[np.ndarray]  # [T1, G] fp32, or None when not returned
    softmax_sum: Optional[np.ndarray]


@dataclasses.dataclass(frozen=True)
class _Inputs:
    q: np.ndarray
    q_rope: np.ndarray
    k: np.ndarray
    k_rope: np.ndarray
    v: np.ndarray
    indices: np.ndarray
    spans: RowSpans
    batch: np.ndarray
    keys: KeyRows
    scale: np.float32
    block_size: int
    causal: bool


def sparse_flash_attention(
    q,
    q_rope,
    k,
    k_rope,
    v,
    indices,
    spans: RowSpans,
    batch: np.ndarray,
    keys: KeyRows,
    *,
    scale: float,
    block_size: int,
    sparse_mode: int,
    outputs: Outputs,
) -> None:
    """Fill ``outputs`` for every row whose ``spans.valid`` is set (other rows are not touched).

    q [T1, G, D], q_rope [T1, G, Dr], k [T2, D], k_rope [T2, Dr], v [T2, Dv] (fp16/bf16),
    indices [T1, K] int32 block ids; spans: each row's position, query and key length;
    batch: each row's batch (for ``keys``).
    """
    x = _Inputs(q, q_rope, k, k_rope, v, indices, spans, batch, keys, np.float32(scale), block_size, sparse_mode == 3)
    scan = _scan_lengths(x)
    map_ordered(lambda step: _step(x, scan, outputs, *step), _steps(scan, spans.valid))


def _scan_lengths(x: _Inputs) -> np.ndarray:
    """Scan positions of each row (0 for rows outside every batch)."""
    sp = x.spans
    limit = sp.sk - sp.sq + sp.s1 + 1 if x.causal else sp.sk
    return np.where(sp.valid, np.clip(np.minimum(limit, x.indices.shape[1] * x.block_size), 0, None), 0)


def _steps(scan: np.ndarray, valid: np.ndarray) -> list:
    """Runs of consecutive rows with at most SLOT_BUDGET scan positions together (a longer row alone)."""
    steps, start, end, used = [], None, -1, 0
    for r in np.flatnonzero(valid):
        n = max(int(scan[r]), 1)
        if start is not None and (used + n > SLOT_BUDGET or r != end):
            steps.append((start, end))
            start = None
        if start is None:
            start, used = int(r), 0
        used += n
        end = int(r) + 1
    if start is not None:
        steps.append((start, end))
    return steps


def _positions(x: _Inputs, r: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(key positions within the batch, used mask) of row r's first ``length`` scan positions."""
    p = np.arange(length, dtype=np.int64)
    bs = x.block_size
    pos = x.indices[r, p // bs].astype(np.int64) * bs + p % bs
    sp = x.spans
    limit = sp.sk[r] - sp.sq[r] + sp.s1[r] + 1 if x.causal else sp.sk[r]
    return pos, (pos >= 0) & (pos < limit)


def _step(x: _Inputs, scan, outputs: Outputs, r0: int, r1: int) -> None:
    width = int(scan[r0:r1].max(initial=0))
    rows = r1 - r0
    heads = x.q.shape[1]
    d, dr, dv = x.k.shape[1], x.k_rope.shape[1], x.v.shape[1]
    used = np.zeros((rows, width), bool)
    key_rows = np.zeros((rows, width), np.int64)
    for i, r in enumerate(range(r0, r1)):
        pos, ok = _positions(x, r, int(scan[r]))
        used[i, : len(pos)] = ok
        key_rows[i, : len(pos)][ok] = x.keys.rows(int(x.batch[r]), pos[ok])
    flat = key_rows.reshape(-1)
    kc = np.empty((rows * width, d + dr), FP32)
    kc[:, :d] = x.k[flat]
    kc[:, d:] = x.k_rope[flat]
    qc = np.empty((rows, heads, d + dr), FP32)
    qc[..., :d] = x.q[r0:r1]
    qc[..., d:] = x.q_rope[r0:r1]
    s = np.matmul(qc, kc.reshape(rows, width, d + dr).transpose(0, 2, 1))  # [rows, G, width]
    s *= x.scale
    s[np.broadcast_to(~used[:, None, :], s.shape)] = -np.inf
    vals = x.v[flat].reshape(rows, width, dv)
    o, m, l = _online_softmax(s, vals, x.q.dtype)
    empty = ~used.any(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        o /= l[..., None]
    o[empty] = 0
    m[empty], l[empty] = SOFTMAX_MIN, 0
    narrow = cast_rint if x.q.dtype == BF16 else cast_round
    outputs.out[r0:r1] = narrow(o, outputs.out.dtype)
    if outputs.softmax_max is not None and outputs.softmax_sum is not None:  # both or neither
        outputs.softmax_max[r0:r1] = m
        outputs.softmax_sum[r0:r1] = l


def _online_softmax(s, v, dtype):
    """(unnormalised O [rows, G, Dv], max [rows, G], sum [rows, G]) over CHUNK-wide column chunks of
    s [rows, G, width] (-inf where unused), with P narrowed to ``dtype`` before the PV product."""
    rows, heads, width = s.shape
    o = np.zeros((rows, heads, v.shape[2]), FP32)
    m = np.full((rows, heads), -np.inf, FP32)
    l = np.zeros((rows, heads), FP32)
    with np.errstate(invalid="ignore", over="ignore"):
        for c0 in range(0, width, CHUNK):
            sc = s[:, :, c0 : c0 + CHUNK]
            m_new = np.maximum(m, sc.max(axis=2))
            live = np.isfinite(m_new)
            shift = np.where(live, m_new, 0)
            p = np.exp(sc - shift[..., None])
            factor = np.where(np.isfinite(m), np.exp(m - shift), 0).astype(FP32)
            l = l * factor + p.sum(axis=2, dtype=FP32)
            round_half_away_(p, dtype)
            o *= factor[..., None]
            o += np.matmul(p, v[:, c0 : c0 + CHUNK].astype(FP32))
            m = m_new
    return o, m, l
