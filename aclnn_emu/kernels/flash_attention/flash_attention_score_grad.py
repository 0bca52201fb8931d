"""FlashAttentionScoreGrad (V2): the attention backward, blockwise in fp32 (reference §1B).

Per head (b, n1) and per block of query rows i and keys j, with kv head n2 = n1 // G:
  S   = (Q Kᵀ) * scale (+ pse; pseType 1 adds pse before the scale), masked scores := -FLT_MAX;
        the scale multiplies the fp32 matmul result, Q is not pre-scaled (as the kernels)
  P   = exp(S - softmaxMax) / softmaxSum        from the forward's buffers, never renormalised
  Pd  = P * keepBit / keepProb                  keepProb as float32; Pd rounded to the input dtype
  dV += Pdᵀ dY
  dP  = (dY Vᵀ) * keepBit / keepProb
  dS  = P * (dP - rowsum(dY * attentionIn))     un-dropped P; dS rounded to the input dtype
  dQ  = scale * dS K          dK += dSᵀ Q  (scaled by `scale` at the end)
Every matmul runs on matmul.c's packed panels, each sum in its one fixed order, so the gradients have
the same bits on every machine, ISA level and worker count; each block's product is added to its
running sum as a whole, as a cube result is. A block is one compiled call (native.attention_grad_block);
with a sink, whose terms need the block's P and dP, the same steps run one by one.
With a learnable sink (fp32 [N1]; the forward's statistics include it, so P and dS need nothing
new) each block also yields Σ_ij (dP * keep)_ij P_ij Psink_i with Psink = exp(sink - max) / sum,
summed in fp32 in that order as the SameAB template's vector step does (`SubGrapB`,
flash_attention_score_grad_s1s2_bn2gs1s2_sab.h); dsink[n1] is minus their total (sink_gradient).
Roundings are CAST_ROUND (half away from zero). dK and dV are summed over the G query heads of a kv
head in fp32 and only then scaled and cast. No block is larger than ROW_BLOCK x KEY_BLOCK, so memory
grows linearly with S; heads run on one thread per core.
"""

import functools
import threading

import numpy as np

from aclnn_emu.kernels import native
from aclnn_emu.kernels.attention.layouts import to_bnsd
from aclnn_emu.kernels.casts import FP32
from aclnn_emu.kernels.flash_attention.dropout import dropout_for
from aclnn_emu.kernels.flash_attention.params import SOFTMAX_LANES, FaParams
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.kernels.rounding import CAST_ROUND, store_half_away
from aclnn_emu.kernels.flash_attention.sparse_modes import NEG_FLT_MAX, SparsePlan
from aclnn_emu.kernels.parallel import OrderedCommit, checkpoint, run_all

ROW_BLOCK = 256
KEY_BLOCK = 512  # 256 x 512 fp32 blocks stay in L2 for the elementwise passes
UNIT_ROWS = 512  # query rows whose dK/dV contribution is one partial sum (numerics: fixed)


def flash_attention_score_grad(
    query,
    key,
    value,
    dy,
    attention_in,
    softmax_max,
    softmax_sum,
    params: FaParams,
    pse=None,
    drop_mask=None,
    atten_mask=None,
    sink=None,
):
    """(dq, dk, dv) in the layouts of query, key and value, with the query's dtype; with `sink`
    (fp32 [N1]) also the sink terms, fp32 [B, N1, row blocks], for sink_gradient."""
    job = _Job(query, key, value, dy, attention_in, softmax_max, softmax_sum, params, pse, drop_mask, atten_mask, sink)
    grads = job.run()
    return grads if sink is None else (*grads, job.sink_terms)


def sink_gradient(terms) -> np.ndarray:
    """dsink [N1] from the sink terms of one or more calls ([B, N1, row blocks] each, in batch
    order): per head the terms are added one by one in fp32 in (batch, row block) order, then
    negated (the post step's -ReduceSum over the per-block workspace, ..._grad_post.h)."""
    heads = np.concatenate([t.transpose(1, 0, 2).reshape(t.shape[1], -1) for t in terms], axis=1)
    total = np.zeros(heads.shape[0], FP32)
    for column in heads.T:
        total += column
    return -total


class _Job:
    """One backward call: [B, N, S, D] views of the operands and the dq/dk/dv outputs in layout."""

    def __init__(
        self, query, key, value, dy, attention_in, softmax_max, softmax_sum, params, pse, drop_mask, atten_mask, sink
    ):
        p = params
        self.params, self.dtype = p, query.dtype
        self.rounding = CAST_ROUND[np.dtype(self.dtype)]  # P and dS: CAST_ROUND to the input dtype
        self.q = to_bnsd(query, p.layout, p.head_num)
        b, n1, s1, d = self.q.shape
        kv_heads = key.shape[-1] // d if p.layout in ("BSH", "SBH") else None
        self.k = to_bnsd(key, p.layout, kv_heads)
        n2, s2 = self.k.shape[1], self.k.shape[2]
        self.v = to_bnsd(value, p.layout, n2)
        self.dy = to_bnsd(dy, p.layout, n1)
        self.o = to_bnsd(attention_in, p.layout, n1)
        self.shape = (b, n1, n2, s1, s2)
        self.group = n1 // n2
        self.softmax_max, self.softmax_sum = softmax_max, softmax_sum
        self.scale = np.float32(p.scale)
        self.plan = SparsePlan(p.sparse_mode, atten_mask, p.pre_tokens, p.next_tokens, p.prefix, s1, s2)
        self.pse = PseSource(pse, p.pse_type, s1, s2, p.q_start_idx, p.kv_start_idx)
        self.dropout = dropout_for(p, drop_mask, n1, s1, s2)
        self.dq = np.empty(query.shape, self.dtype)
        self.dk = np.empty(key.shape, self.dtype)
        self.dv = np.empty(value.shape, self.dtype)
        self.sink = None if sink is None else np.asarray(sink, FP32)
        self.sink_terms = np.zeros((b, n1, -(-s1 // ROW_BLOCK)), FP32)  # written per row block
        self._local = threading.local()  # per worker: the query and kv head in use, block buffers

    def run(self):
        b, n1, n2, s1, s2 = self.shape
        # Units of UNIT_ROWS query rows of one head, each summing its dK/dV contribution from zero,
        # added into their kv head's sums in unit order: no bit depends on the worker count or timing.
        units = [(bi, ni, r0) for bi in range(b) for ni in range(n1) for r0 in range(0, s1, UNIT_ROWS)]
        sums = {}
        order = OrderedCommit()
        run_all(
            order.run,
            [
                (i, functools.partial(self._unit, *unit), functools.partial(self._commit, sums, unit))
                for i, unit in enumerate(units)
            ],
        )
        dk, dv = to_bnsd(self.dk, self.params.layout, n2), to_bnsd(self.dv, self.params.layout, n2)
        with np.errstate(all="ignore"):
            for bi in range(b):
                for hi in range(n2):
                    acc_k, acc_v = sums.get((bi, hi)) or (np.zeros(dk.shape[2:], FP32), np.zeros(dv.shape[2:], FP32))
                    acc_k *= self.scale
                    store_half_away(dk[bi, hi], acc_k, self.dtype)
                    store_half_away(dv[bi, hi], acc_v, self.dtype)
        return self.dq, self.dk, self.dv

    def _commit(self, sums, unit, acc):
        key = (unit[0], unit[1] // self.group)
        if key not in sums:
            sums[key] = tuple(np.zeros(x.shape, FP32) for x in acc)
        with np.errstate(all="ignore"):
            for total, part in zip(sums[key], acc):
                total += part

    def _unit(self, b, n, r0):
        """Rows [r0, r0 + UNIT_ROWS) of query head (b, n): their dQ stored, their fp32 dK/dV sums returned."""
        with np.errstate(all="ignore"):  # inf/NaN propagate as on the device, without numpy warnings
            local = self._local
            if getattr(local, "head", None) is None or local.head.key != (b, n):
                local.head = _Head(self, b, n)
            if getattr(local, "kv", None) is None or local.kv.key != (b, n // self.group):
                local.kv = _KvHead(self, b, n // self.group)
            if not hasattr(local, "buffers"):
                size = ROW_BLOCK * min(KEY_BLOCK, max(self.shape[4], 1))
                local.buffers = [np.empty(size, FP32) for _ in range(3)]
            acc = (np.zeros((local.kv.k.k, local.kv.k.n), FP32), np.zeros((local.kv.vt.n, local.kv.vt.k), FP32))
            s1 = self.shape[3]
            for i0 in range(r0, min(r0 + UNIT_ROWS, s1), ROW_BLOCK):
                checkpoint()
                self._rows(local.head, local.kv, acc, i0, min(i0 + ROW_BLOCK, s1), local.buffers)
            return acc

    def _rows(self, head, kv, acc, i0, i1, buffers):
        b, n = head.key
        lanes_max, lanes_sum = head.softmax[0][i0:i1], head.softmax[1][i0:i1]
        fill = np.exp(NEG_FLT_MAX - lanes_max) / lanes_sum  # P of a masked score
        # Masked keys contribute nothing unless a row is fully masked (then P = 1/sum there).
        j0, j1 = (0, self.shape[4]) if fill.any() else self.plan.key_range(b, i0, i1)
        dq_rows = np.zeros((i1 - i0, kv.k.n), FP32)
        keep_bits = None if self.dropout is None else self.dropout.rows(b, n, i0, i1)
        sink = None if self.sink is None else [np.exp(self.sink[n] - lanes_max[:, 0]) / lanes_sum[:, 0], np.float32(0)]
        for c0 in range(j0, j1, KEY_BLOCK):
            c1 = min(c0 + KEY_BLOCK, j1)
            keep = None if keep_bits is None else np.multiply(keep_bits[:, c0:c1], self.dropout.factor, dtype=FP32)
            box = (i0, i1, c0, c1)
            self._block(head, kv, acc, dq_rows, box, (lanes_max, lanes_sum, fill), keep, buffers, sink)
        if sink is not None:
            self.sink_terms[b, n, i0 // ROW_BLOCK] = sink[1]
        dq_rows *= self.scale
        store_half_away(to_bnsd(self.dq, self.params.layout, self.shape[1])[b, n, i0:i1], dq_rows, self.dtype)

    def _block(self, head, kv, acc, dq_rows, box, softmax, keep, buffers, sink):
        if sink is not None:
            self._block_steps(head, kv, acc, dq_rows, box, softmax, keep, buffers, sink)
            return
        i0, i1, c0, c1 = box
        b, n = head.key
        native.attention_grad_block(
            head.q[i0:i1],
            head.dy[i0:i1],
            (kv.kt, kv.k, kv.vt, head.q_panels.rows(i0, i1), head.dy_panels.rows(i0, i1)),
            c0,
            c1,
            softmax,
            head.dsum[i0:i1],
            self.scale,
            (dq_rows, *acc),
            pse=self.pse.block(b, n, i0, i1, c0, c1),
            pse_first=self.pse.added_before_scale,
            masked=self.plan.masked(b, n, i0, i1, c0, c1),
            keep=keep,
            rounding=self.rounding,
        )

    def _block_steps(self, head, kv, acc, dq_rows, box, softmax, keep, buffers, sink):
        """_block step by step, for a learnable sink, whose terms need P and dP of the block."""
        i0, i1, c0, c1 = box
        b, n = head.key
        shape = (i1 - i0, c1 - c0)
        scores, dropped, grad = (buf[: shape[0] * shape[1]].reshape(shape) for buf in buffers)
        self._scores(head, kv, box, scores)
        probs = self._softmax(scores, softmax, c0, c1, self.plan.masked(b, n, i0, i1, c0, c1))
        if keep is None and self.rounding is None:
            dropped = probs
        else:
            native.round_product(dropped, probs, keep, self.rounding)
        native.matmul_panels(acc[1][c0:c1], dropped.T, head.dy_panels.rows(i0, i1), accumulate=True)
        native.matmul_panels(grad, head.dy[i0:i1], kv.vt, c0)
        if sink is not None:  # [Psink, running total]: this block's Σ (dP keep) P Psink joins the total
            terms = grad * probs if keep is None else (grad * keep) * probs
            terms *= sink[0][:, None]
            sink[1] += np.sum(terms, dtype=FP32)
        native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, self.rounding)
        native.matmul_panels(dq_rows, grad, kv.k.rows(c0, c1), accumulate=True)
        native.matmul_panels(acc[0][c0:c1], grad.T, head.q_panels.rows(i0, i1), accumulate=True)

    def _scores(self, head, kv, box, out):
        """S = fp32 Q Kᵀ, then the scale: the kernels multiply the matmul's fp32 result (a Muls after
        the cube, `flash_attention_score_grad_s1s2_bn2gs1s2.h` and the other arch32 templates), before
        an inner-type pse is added or after a pseType 1 one."""
        i0, i1, c0, c1 = box
        pse = self.pse.block(*head.key, i0, i1, c0, c1)
        native.matmul_panels(out, head.q[i0:i1], kv.kt, c0)
        if self.pse.added_before_scale:
            out += pse
        out *= self.scale
        if pse is not None and not self.pse.added_before_scale:
            out += pse

    @staticmethod
    def _softmax(scores, softmax, c0, c1, masked):
        """P = exp(S - max) / sum in place; masked scores take the value a -FLT_MAX score gets."""
        lanes_max, lanes_sum, fill = softmax
        native.softmax_probs_(scores, lanes_max, lanes_sum, lane0=c0)  # column j reads lane j % lanes
        if masked is not None:
            if fill.shape[1] > 1:
                fill = fill[:, np.arange(c0, c1) % SOFTMAX_LANES]
            np.copyto(scores, np.broadcast_to(fill, scores.shape), where=masked)
        return scores


class _Head:
    """fp32 copies of one query head's rows (and Q and dY packed as right-hand operands), its softmax
    buffers and rowsum(dY * attentionIn)."""

    def __init__(self, job, b, n):
        self.key = (b, n)
        self.q = native.widen(job.q[b, n])
        self.dy = native.widen(job.dy[b, n])
        self.q_panels, self.dy_panels = native.pack_panels(self.q), native.pack_panels(self.dy)
        self.dsum = np.einsum("ij,ij->i", self.dy, native.widen(job.o[b, n]))
        lanes = (np.asarray(job.softmax_max[b, n], FP32), np.asarray(job.softmax_sum[b, n], FP32))
        replicated = all((x == x[:, :1]).all() for x in lanes)
        self.softmax = tuple(np.ascontiguousarray(x[:, :1]) for x in lanes) if replicated else lanes


class _KvHead:
    """One kv head packed as the right-hand operands: Kᵀ (for S), K (for dQ) and Vᵀ (for dP)."""

    def __init__(self, job, b, n2):
        self.key = (b, n2)
        k, v = job.k[b, n2], job.v[b, n2]
        self.kt, self.k, self.vt = native.pack_panels(k.T), native.pack_panels(k), native.pack_panels(v.T)
