"""The FIA-V3 route's launch: the query, keys and values gathered per batch into [B, N, S, D]
arrays (a batched tensor, one tensor per batch, or a paged cache through blockTable; a shared
prefix in front of each batch's keys; TND rows by their cumulative lengths), the kernel, and
attentionOut / softmaxLse written back in the output layout."""

import numpy as np

from aclnn_emu.kernels.flash_attention import fused_infer_attention as fia
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.opdef.generated import attr_int32
from aclnn_emu.opdef.signature import Launch

from ..common import mask_3d
from . import pages, shared_prefix
from .layouts import PACKED, key_rows, seq_len, shaped, to_bnsd

WORKSPACE = 16 * 1024 * 1024  # the AscendC system workspace (GetLibApiWorkSpaceSize)
INT_MAX = 2147483647


def _lengths(values, batch: int, default: int) -> list[int]:
    """An actual-length array as B lengths: one value for every batch, else the first B."""
    if values is None:
        return [default] * batch
    values = [int(x) for x in values]
    return values * batch if len(values) == 1 else (values + [default] * batch)[:batch]


def _packed(values) -> list[tuple[int, int]]:
    """(first row, count) per batch of cumulative TND lengths."""
    ends = [int(x) for x in values]
    return [(e0, e1 - e0) for e0, e1 in zip([0] + ends[:-1], ends)]


def fia_v3(a, env, route, axes, qd, vd, write_out: bool = True, left=None, sink: bool = True):
    """The FIA-V3 kernels' launch; with ``write_out`` false only softmaxLse is written (the IFA/PFA
    routes, whose attentionOut another launch writes); ``left`` a left_padding.LeftPadding; ``sink``
    false leaves learnableSink out (the routes whose kernels ignore it)."""
    base, out_layout, heads, kv_heads = route.base, route.out_layout, route.heads, route.kv_heads
    packed = base in PACKED
    legacy_ifa = route.legacy_ifa
    kv_rows = None
    if packed:
        q_rows = _packed(a.actualSeqLengthsOptional)
        batch = len(q_rows)
        act_q = [n for _, n in q_rows]
        if not route.paged:  # a paged cache's key lengths are each batch's own (GetKvActSeqMode: BY_BATCH)
            kv_rows = _packed(a.actualSeqLengthsKvOptional)[:batch]
    else:
        batch, q_rows = axes.b, None
        act_q = [axes.s] * batch if legacy_ifa else _lengths(a.actualSeqLengthsOptional, batch, axes.s)
    keys = _KeyGather(a, route, base, batch, kv_heads, qd, vd)
    if kv_rows is not None:
        act_kv = [n for _, n in kv_rows]
    elif keys.listed and a.actualSeqLengthsKvOptional is None:  # each batch's own tensor
        act_kv = [seq_len(t.shape, base) for t in a.key.items[:batch]]
    else:
        act_kv = _lengths(a.actualSeqLengthsKvOptional, batch, keys.s2)
    prefix = shared_prefix.rows(a) if a.keySharedPrefixOptional is not None else 0
    sparse = route.sparse
    has_mask = a.attenMaskOptional is not None and not a.attenMaskOptional.is_empty
    pre, nxt = (INT_MAX, INT_MAX) if legacy_ifa else (a.preTokens, a.nextTokens)
    if sparse == 0 and (not has_mask or left is not None):  # with padding the attenMask alone decides
        pre, nxt = INT_MAX, INT_MAX
    pre, nxt = {1: (INT_MAX, INT_MAX), 2: (INT_MAX, 0), 3: (INT_MAX, nxt)}.get(sparse, (pre, nxt))
    full_kv = [prefix + n for n in act_kv]
    bands = pfa.batch_bands(sparse, pre, nxt, has_mask, act_q, full_kv)
    row_invalid = attr_int32(a.innerPrecise) in (2, 3)
    masked_lse_inf = [
        (n < 0) if sparse == 3 else (p < 0 or n < 0 or (sparse in (0, 1) and has_mask and row_invalid))
        for p, n in bands
    ]
    group = heads // kv_heads
    s2 = prefix + keys.s2
    if route.rope and vd == 512:
        tiling = fia.mla_tiling(a.blockSize, s2)
    else:
        tiling = fia.gqa_tiling(
            max(act_q, default=1) if packed else axes.s, group, packed, has_mask, sparse, a.blockSize, s2
        )
    mask_t = a.attenMaskOptional if has_mask and sparse in (0, 1) else None
    sink_t, lse_t, out_t = a.learnableSinkOptional if sink else None, a.softmaxLse, a.attentionOut
    pse_t = None if a.pseShiftOptional is None or a.pseShiftOptional.is_empty else a.pseShiftOptional

    def run(workspace):
        q = to_bnsd(a.query.read("query"), base, heads)
        q_rope = a.queryRopeOptional
        q_rope = None if q_rope is None else to_bnsd(q_rope.read("queryRope"), base, heads)
        if packed:
            q, q_rope = (None if x is None else _rows_of(x, q_rows) for x in (q, q_rope))
        k, v, k_rope = keys.read(act_kv, prefix, kv_rows)
        mask = None
        if mask_t is not None:
            values = mask_3d(mask_t.read("attenMask"), ifa=mask_t.ndim == 2 and legacy_ifa)
            mask = pfa.Mask(values)
        sink = None if sink_t is None else sink_t.read("learnableSink").astype(np.float32)
        shift = None if left is None else left.shift(q.shape[2], k.shape[2], act_q, full_kv)
        lengths = (act_q, full_kv) if shift is None else (shift.act_q, shift.act_kv)
        if shift is not None:  # no TND, rope or shared prefix with padding (the tilings' rules)
            q, k, v = shift.query(q), shift.keys(k), shift.keys(v)
            mask = None if mask is None else pfa.Mask(shift.scores_input(mask.values))
        pse = None
        if pse_t is not None:  # [B|1, N, S1p, S2p], added to the scaled fp32 scores before the mask
            values = pse_t.read("pseShift")
            pse = PseSource(values if shift is None else shift.scores_input(values), 0, *values.shape[2:])
        rope = None if k_rope is None else fia.Rope(q_rope, k_rope)
        o, lse = fia.fused_infer_attention(
            q,
            k,
            v,
            scale=a.scaleValue,
            bands=bands,
            act_q=lengths[0],
            act_kv=lengths[1],
            tiling=tiling,
            mask=mask,
            rope=rope,
            sink=sink,
            lse=a.lse_wanted,
            lse_unseen=fia.LSE_UNSEEN_LEGACY_IFA if legacy_ifa else fia.LSE_UNSEEN,
            masked_lse_inf=masked_lse_inf,
            zero_masked_rows=row_invalid and has_mask and sparse in (0, 1),
            pse=pse,
        )
        if shift is not None:
            o, lse = shift.back(o), None if lse is None else shift.back(lse)
        if write_out:
            write_attention_out(out_t, o, out_layout, axes, heads, vd, q_rows)
        if a.lse_wanted:
            _write_lse(lse_t, lse, packed, axes, q_rows)

    return Launch(WORKSPACE, run)


def _rows_of(x, rows):
    """A packed [1, N, T, D] view as [B, N, max rows, D], batch b's rows first."""
    width = max((n for _, n in rows), default=0)
    out = np.zeros((len(rows), x.shape[1], width, x.shape[3]), x.dtype)
    for b, (r0, n) in enumerate(rows):
        out[b, :, :n] = x[0, :, r0 : r0 + n]
    return out


def write_attention_out(out_t, o, layout, axes, heads, vd, q_rows):
    if q_rows is None:
        full = np.zeros(shaped(axes, layout, vd), o.dtype)
        to_bnsd(full, layout, heads)[...] = o
    else:
        full = np.zeros(shaped(axes, layout, vd), o.dtype)
        view = to_bnsd(full, layout, heads)
        for b, (r0, n) in enumerate(q_rows):
            view[0, :, r0 : r0 + n] = o[b, :, :n]
    out_t.write(full.reshape(out_t.shape))


def _write_lse(lse_t, lse, packed, axes, q_rows):
    if not packed:
        lse_t.write(lse[..., None].reshape(lse_t.shape))
        return
    full = np.full((axes.s, axes.n, 1), fia.LSE_UNSEEN, np.float32)
    for b, (r0, n) in enumerate(q_rows):
        full[r0 : r0 + n, :, 0] = lse[b, :, :n].T
    lse_t.write(full.reshape(lse_t.shape))


class _KeyGather:
    """The key/value (and keyRope) rows of each batch as [B, Nkv, S2, D] arrays."""

    def __init__(self, a, route, base, batch, kv_heads, qd, vd):
        self.a, self.base, self.batch, self.kv_heads = a, base, batch, kv_heads
        self.qd, self.vd, self.paged = qd, vd, route.paged
        self.listed = len(a.key.items) > 1
        self.block = a.blockSize
        self.s2 = key_rows(a, base)

    def read(self, act_kv, prefix, kv_rows):
        a = self.a
        rope_t = a.keyRopeOptional
        tensors = [(a.key, "key", self.qd), (a.value, "value", self.vd)]
        if rope_t is not None:
            tensors.append((rope_t, "keyRope", 64))
        if self.paged:  # one block table and one set of lengths for every paged tensor
            table = a.blockTableOptional.read("blockTable")
            lengths = [max(int(n), 0) for n in act_kv[: self.batch]]
        out = []
        for t, name, d in tensors:
            shared = None
            if prefix and name != "keyRope":
                shared = a.keySharedPrefixOptional if name == "key" else a.valueSharedPrefixOptional
            rows = None if shared is None else to_bnsd(shared.read(f"{name}SharedPrefix"), self.base, self.kv_heads)
            first = 0 if rows is None else prefix
            if self.paged:  # the pages go straight into the dense array, after the prefix
                cache = t if name == "keyRope" else t.items[0]
                values = cache.read(name)
                width = first + max(lengths, default=0)
                dense = np.zeros((self.batch, self.kv_heads, width, d), values.dtype)
                where = f"aclnnFusedInferAttentionScore {name}"
                pages.gather(values, table, lengths, self.kv_heads, d, self.block, where, dense, first)
            else:
                per_batch = self._batches(t, name, d, kv_rows)
                width = first + max((x.shape[1] for x in per_batch), default=0)
                dense = np.zeros((self.batch, self.kv_heads, width, d), per_batch[0].dtype if per_batch else np.float16)
                for b, x in enumerate(per_batch):
                    dense[b, :, first : first + x.shape[1]] = x
            if rows is not None:
                dense[:, :, :prefix] = rows[0, :, :prefix]
            out.append(dense)
        return out[0], out[1], out[2] if len(out) > 2 else None

    def _batches(self, t, name, d, kv_rows):
        """[Nkv, S_b, D] per batch of a dense key/value (a batched tensor or one per batch)."""
        if name == "keyRope":
            x = to_bnsd(t.read(name), self.base, self.kv_heads)
            return [x[b] for b in range(self.batch)] if kv_rows is None else [x[0, :, r0 : r0 + n] for r0, n in kv_rows]
        if self.listed:
            return [
                to_bnsd(x.read(f"{name}[{b}]"), self.base, self.kv_heads)[0]
                for b, x in enumerate(t.items[: self.batch])
            ]
        x = to_bnsd(t.items[0].read(name), self.base, self.kv_heads)
        if kv_rows is not None:
            return [x[0, :, r0 : r0 + n] for r0, n in kv_rows]
        return [x[b] for b in range(self.batch)]
