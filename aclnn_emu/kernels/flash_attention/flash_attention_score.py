"""FlashAttentionScore (V2): the attention forward, blockwise online softmax in fp32 (the exact
counterpart of flash_attention_score_grad; source: op_kernel/arch32/flash_attention_score_s1s2_bn2gs1.h).

Per head (b, n1), block of query rows i and block of keys j, with kv head n2 = n1 // G:
  S  = Q Kᵀ * scale (+ pse; pseType 1 adds pse before the scale); masked scores := -FLT_MAX
  m' = max(m, rowmax S);  l = l * exp(m - m') + Σ exp(S - m');  P = exp(S - m')
  P  = P * keepBit / keepProb, then CAST_ROUND to the input dtype (fp16/bf16) for the P·V matmul
  O  = O * exp(m - m') + P V          (fp32)
and finally attentionOut = CAST_ROUND(O / l), softmaxMax = m and softmaxSum = l replicated over
the 8 lanes of [B, N1, S1, 8] the backward reads. The sum is of the un-dropped, un-rounded
exponentials. A row whose every score is masked keeps m = -FLT_MAX: in the invalid-line mode its
P is zeroed and l set to FLT_MAX (output 0), otherwise each of its keys gets P = 1 (the output is
the mean of V, l the key count) — over all S2 keys, which is what the backward assumes.
A learnable sink (fp32 [N1], V3) starts each row's running statistics at m = sink[n1], l = 1 instead
of m = -inf, l = 0 (the kernels' Duplicate of sumUb/maxUb before the first key block, hasSink in
op_kernel/arch32/flash_attention_score_*.h): one extra logit per row with no value row.
Pse, masks and the dropout bits are the backward's own (pse.py, sparse_modes.py, dropout.py). No
block is larger than ROW_BLOCK x KEY_BLOCK, so memory grows linearly with S; row blocks run on
one thread per core.
"""

import threading

import numpy as np

from aclnn_emu.kernels import native
from aclnn_emu.kernels.attention.layouts import to_bnsd
from aclnn_emu.kernels.casts import FP32
from aclnn_emu.kernels.flash_attention.dropout import dropout_for
from aclnn_emu.kernels.flash_attention.params import SOFTMAX_LANES, FaParams
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.kernels.flash_attention.sparse_modes import NEG_FLT_MAX, SparsePlan
from aclnn_emu.kernels.parallel import checkpoint, map_ordered, workers
from aclnn_emu.kernels.rounding import CAST_ROUND, saturate_, store_half_away

FLT_MAX = np.float32(np.finfo(np.float32).max)
ROW_BLOCK = 512  # numerics, not only speed: a band's key range is taken per row block
KEY_BLOCK = 512


def flash_attention_score(
    query, key, value, params: FaParams, pse=None, drop_mask=None, atten_mask=None, outputs=None, sink=None
):
    """(softmax_max, softmax_sum, attention_out): [B, N1, S1, 8] fp32 twice, and the output in the
    query's layout and dtype with the value's head dim. `outputs` may hold those three arrays (any
    strides) to write into instead of new ones; `sink` is the fp32 [N1] learnable sink or None."""
    return _Job(query, key, value, params, pse, drop_mask, atten_mask, outputs, sink).run()


class _Job:
    """One forward call: [B, N, S, D] views of the operands and of the outputs."""

    def __init__(self, query, key, value, params, pse, drop_mask, atten_mask, outputs, sink):
        p = params
        self.sink = None if sink is None else np.asarray(sink, FP32)
        self.params, self.dtype = p, query.dtype
        self.kv_kept = native.KeptPanels()
        self.rounding = CAST_ROUND[np.dtype(self.dtype)]
        self.q = to_bnsd(query, p.layout, p.head_num)
        b, n1, s1, d = self.q.shape
        self.k = to_bnsd(key, p.layout, key.shape[-1] // d if p.layout in ("BSH", "SBH") else None)
        n2, s2 = self.k.shape[1], self.k.shape[2]
        self.v = to_bnsd(value, p.layout, n2)
        dv = self.v.shape[3]
        self.shape = (b, n1, n2, s1, s2)
        self.group = n1 // n2
        self.scale = np.float32(p.scale)
        self.plan = SparsePlan(p.sparse_mode, atten_mask, p.pre_tokens, p.next_tokens, p.prefix, s1, s2)
        self.pse = PseSource(pse, p.pse_type, s1, s2, p.q_start_idx, p.kv_start_idx)
        self.dropout = dropout_for(p, drop_mask, n1, s1, s2)
        if outputs is None:
            out_shape = list(query.shape)
            out_shape[-1] = n1 * dv if p.layout in ("BSH", "SBH") else dv
            lanes = (b, n1, s1, SOFTMAX_LANES)
            outputs = (np.empty(lanes, FP32), np.empty(lanes, FP32), np.empty(out_shape, self.dtype))
        self.softmax_max, self.softmax_sum, self.out = outputs
        self.out_heads = to_bnsd(self.out, p.layout, n1)

    def run(self):
        b, n1, n2, s1, _ = self.shape
        blocks = range(0, s1, ROW_BLOCK)
        # One item per kv head (its K and V packed once), the last few (all, when heads are few)
        # cut into single row blocks so the workers finish together. Workers claim items as they
        # go, so a core slowed by other load takes fewer.
        items = [
            [(bi, ni, i0) for ni in range(h * self.group, (h + 1) * self.group) for i0 in blocks]
            for bi in range(b)
            for h in range(n2)
        ]
        tail = len(items) if len(items) < 2 * workers() else workers()
        items = items[: len(items) - tail] + [[task] for item in items[len(items) - tail :] for task in item]
        if s1:
            map_ordered(self._work, items)
        return self.softmax_max, self.softmax_sum, self.out

    def _work(self, tasks):
        with np.errstate(all="ignore"):  # inf/NaN propagate as on the device, without numpy warnings
            b, n, _ = tasks[0]
            h = n // self.group
            k, v = self.kv_kept.get((b, h), self.k[b, h], self.v[b, h])
            buffers = _buffers(self.v.shape[3])
            for b, n, i0 in tasks:
                checkpoint()
                self._rows(b, n, i0, min(i0 + ROW_BLOCK, self.shape[3]), k, v, buffers)

    def _rows(self, b, n, i0, i1, k, v, buffers):
        q = _widen(self.q[b, n, i0:i1])
        j0, j1 = self.plan.key_range(b, i0, i1)
        row_max, row_sum, acc = self._keys(b, n, i0, i1, q, k, v, (j0, j1), buffers)
        # every score of the row masked; -inf: a row block whose band holds no key at all
        unseen = row_max <= NEG_FLT_MAX
        if unseen.any():
            if self.params.invalid_line:
                row_max[unseen] = NEG_FLT_MAX
                row_sum[unseen] = FLT_MAX
                acc[unseen] = 0
            elif (j0, j1) != (0, self.shape[4]):
                full = self._keys(b, n, i0, i1, q, k, v, (0, self.shape[4]), buffers)
                for got, whole in zip((row_max, row_sum, acc), full):
                    got[unseen] = whole[unseen]
        if self.params.saturate:  # the arch35 output cast (SatMode::SAT), on the divided values
            acc /= row_sum[:, None]
            saturate_(acc, self.dtype)
            store_half_away(self.out_heads[b, n, i0:i1], acc, self.dtype)
        else:
            store_half_away(self.out_heads[b, n, i0:i1], acc, self.dtype, row_sum)
        self.softmax_max[b, n, i0:i1] = row_max[:, None]
        self.softmax_sum[b, n, i0:i1] = row_sum[:, None]

    def _keys(self, b, n, i0, i1, q, k, v, keys, buffers):
        """The online softmax of rows [i0, i1) over keys [j0, j1): (max, sum, unnormalised O)."""
        rows = i1 - i0
        if self.sink is None:
            row_max, row_sum = np.full(rows, -np.inf, FP32), np.zeros(rows, FP32)
        else:
            row_max, row_sum = np.full(rows, self.sink[n], FP32), np.ones(rows, FP32)
        alpha = np.empty(rows, FP32)
        acc = np.zeros((rows, v.n), FP32)
        pv = buffers[2][: acc.size].reshape(acc.shape)
        keep_bits = None if self.dropout is None else self.dropout.rows(b, n, i0, i1)
        p_rounding = None if keep_bits is not None else self.rounding  # dropout rounds P once kept
        plain = [keys[0]]  # bounds of the blocks since the last one with pse, mask or dropout
        for c0 in range(keys[0], keys[1], KEY_BLOCK):
            c1 = min(c0 + KEY_BLOCK, keys[1])
            pse = self.pse.block(b, n, i0, i1, c0, c1)
            masked = self.plan.masked(b, n, i0, i1, c0, c1)
            if pse is None and masked is None and keep_bits is None:
                plain.append(c1)
                continue
            self._plain_blocks(q, k, v, plain, row_max, row_sum, acc, p_rounding)
            plain = [c1]
            size = rows * (c1 - c0)
            scores = buffers[0][:size].reshape(rows, c1 - c0)
            scaled = self._scores(q, k, c0, pse, masked, scores)
            native.softmax_block_(
                scores, row_max, row_sum, alpha, post=1 if scaled else self.scale, rounding=p_rounding
            )
            if self.params.invalid_line:
                scores[row_max == NEG_FLT_MAX] = 0
            if keep_bits is not None:
                keep = buffers[1][:size].reshape(rows, c1 - c0)
                np.multiply(keep_bits[:, c0:c1], self.dropout.factor, out=keep, dtype=FP32)
                native.round_product(scores, scores, keep, self.rounding)
            native.matmul_panels(pv, scores, v.rows(c0, c1))
            native.rescale_add_(acc, alpha, pv)
        self._plain_blocks(q, k, v, plain, row_max, row_sum, acc, p_rounding)
        return row_max, row_sum, acc

    def _plain_blocks(self, q, k, v, bounds, row_max, row_sum, acc, p_rounding):
        """The key blocks between `bounds`, which have no pse, mask or dropout, in one native call."""
        if len(bounds) > 1:
            native.attention_blocks(
                q,
                k,
                v,
                bounds,
                row_max,
                row_sum,
                acc,
                acc_set=True,
                post=self.scale,
                rounding=p_rounding,
                zero_unseen=self.params.invalid_line,
            )

    def _scores(self, q, k, c0, pse, masked, out) -> bool:
        """The block's fp32 QKᵀ in `out` (keys from c0 on), with `pse` and `masked`; True when it is
        scaled too. The cube's QKᵀ is scaled after the matmul (Muls after bmm1, s1s2_bn2gs1.h), not Q
        before it; without pse or mask the softmax loop scales it (the same multiply, one pass fewer)."""
        native.matmul_panels(out, q, k, c0)
        if pse is None and masked is None:
            return False
        if pse is not None and self.pse.added_before_scale:
            out += pse
        out *= self.scale
        if pse is not None and not self.pse.added_before_scale:
            out += pse
        if masked is not None:
            np.copyto(out, NEG_FLT_MAX, where=masked)
        return True


_local = threading.local()


def _buffers(dv: int) -> list[np.ndarray]:
    """This thread's block buffers, made on its first call and kept (no fresh pages per call):
    scores, dropout factors and one block's P V (for a value head dim up to dv)."""
    sizes = (ROW_BLOCK * KEY_BLOCK,) * 2 + (ROW_BLOCK * dv,)
    if any(len(x) < size for x, size in zip(getattr(_local, "buffers", [()] * 3), sizes)):
        _local.buffers = [np.empty(size, FP32) for size in sizes]
    return _local.buffers


def _widen(x):
    """A C-contiguous fp32 copy of a [rows, D] view."""
    return native.widen(x) if x.dtype != FP32 else np.array(x, FP32, order="C")
