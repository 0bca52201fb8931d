"""Which keys each query row of LightningIndexerGrad may use (reference §1.B, CANN 8.5 kernel).

Every query row r (a (b, s1) pair in BSND, a token t in TND) gets three numbers:
  kbase  the flat key row where its batch starts (b*S2 in BSND, cu_k[b-1] in TND),
  klen   how many keys its batch has (S2, or the TND length cu_k[b] - cu_k[b-1]),
  n      how many leading entries of its sparse-index row the kernel reads: topK in sparse mode 0,
         clamp(Sk - Sq + s1 + 1, 0, topK) in every other mode (bottom-right causal, CalcRealTopk).
The actual-sequence tensors of TND hold cumulative end offsets, not lengths.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class RowPlan:
    kbase: np.ndarray  # int64 [R]
    klen: np.ndarray  # int64 [R]
    n: np.ndarray  # int64 [R], 0 <= n <= topK
    orphans: int = 0  # TND rows past the last cumulative query offset (no batch; n = 0)

    @property
    def rows(self) -> int:
        return len(self.n)


def usable_count(sparse_mode: int, top_k: int, seq_q, seq_k, s1) -> np.ndarray:
    """Leading index entries a row reads: all topK in mode 0, the causal count otherwise."""
    s1 = np.asarray(s1, np.int64)
    if sparse_mode == 0:
        return np.full(s1.shape, top_k, np.int64)
    return np.clip(np.asarray(seq_k, np.int64) - np.asarray(seq_q, np.int64) + s1 + 1, 0, top_k)


def plan_bsnd(batch: int, seq_q: int, seq_k: int, top_k: int, sparse_mode: int, act_q=None, act_k=None) -> RowPlan:
    """Rows in (b, s1) order; batch b owns key rows from b*S2. Every batch has S1 query rows and
    S2 keys, unless per-batch actual lengths (not cumulative in BSND) say fewer: rows at or past
    a batch's query length then get n = 0."""
    b, s1 = np.divmod(np.arange(batch * seq_q, dtype=np.int64), max(seq_q, 1))
    len_q = np.full(b.shape, seq_q, np.int64) if act_q is None else np.asarray(act_q, np.int64)[b]
    len_k = np.full(b.shape, seq_k, np.int64) if act_k is None else np.asarray(act_k, np.int64)[b]
    n = np.where(s1 < len_q, usable_count(sparse_mode, top_k, len_q, len_k, s1), 0)
    return RowPlan(kbase=b * seq_k, klen=len_k, n=n)


def plan_tnd(cu_q: np.ndarray, cu_k: np.ndarray, tokens_q: int, top_k: int, sparse_mode: int) -> RowPlan:
    """Rows are tokens 0..T1-1; token t belongs to the first batch b with t < cu_q[b].

    cu_q and cu_k have one entry per batch. Tokens at or past cu_q[-1] belong to no batch: the
    kernel has nothing defined to do for them, so they get n = 0 and are counted as orphans.
    """
    cu_q = np.asarray(cu_q, np.int64)
    cu_k = np.asarray(cu_k, np.int64)
    t = np.arange(tokens_q, dtype=np.int64)
    if len(cu_q) == 0:
        zeros = np.zeros_like(t)
        return RowPlan(kbase=zeros, klen=zeros, n=zeros, orphans=tokens_q)
    b = np.searchsorted(cu_q, t, side="right")
    inside = b < len(cu_q)
    b = np.minimum(b, len(cu_q) - 1)
    start_q = np.concatenate(([0], cu_q[:-1]))[b]
    start_k = np.concatenate(([0], cu_k[:-1]))[b]
    len_q, len_k = cu_q[b] - start_q, cu_k[b] - start_k
    n = np.where(inside, usable_count(sparse_mode, top_k, len_q, len_k, t - start_q), 0)
    return RowPlan(kbase=start_k, klen=len_k, n=n, orphans=int(np.count_nonzero(~inside)))


def batch_lengths(cu) -> np.ndarray:
    """Per-batch lengths from cumulative end offsets (negative where the offsets decrease)."""
    cu = np.asarray(cu, np.int64)
    return np.diff(np.concatenate(([0], cu)))
