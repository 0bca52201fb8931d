"""FlashAttentionScore on packed variable-length batches (layout TND), forward and backward.

query [T1, N1, D], key [T2, N2, D], value [T2, N2, Dv]; batch b holds the query tokens
[cu_q[b-1], cu_q[b]) and the key tokens [cu_kv[b-1], cu_kv[b]) (cumulative actualSeqQLen /
actualSeqKvLen). Each batch is one dense attention of S1b = its query length and S2b = its key
length, run by the blockwise kernels on [1, S, N, D] views (flash_attention_var_len_score.h walks
the same batches with per-batch lengths): the sparse modes' bands and the prefix are per batch, with
the batch's S1b and S2b (ComputeAttenMaskOffset, layout TND):
  2        j - i > 0                      3   j - i > S2b - S1b
  4        the right-down band of the pre/next tokens, per batch
  6        j - i > S2b - S1b and j >= prefix[b]
  7        j - i > S2b - S1b + next for the last batch with tokens (bandIndex), else as 3
  8        j - i > S2b - max(S1b - next, 0) for the first batch with tokens, else as 2
  0, 1, 5  a user mask (5 only on the Ascend910_95 backward of batches of the same lengths, with the
           blocks its BSND kernels skip by prefixN masked too: prefix_skipped): [S1max, S2max] or
           [1, 1, S1max, S2max], batch b reading its top-left [S1b, S2b] (attenMaskS1S2); [T1, T2], batch b reading its own tokens' block (attenMaskTT);
           [B, 1|N1, S1max, S2max] from the packed offset of batch b (Σ_{c<b} S1c·S2c, times N1, plus
           h·S1b·S2b per head; attenMaskBS1S2 / BN2GS1S2), its rows S2b apart on Atlas A2/A3; on
           Ascend910_95 (`mask_row_stride`) every row the mask's last dimension apart, and 2-D masks
           [T1, T2] included read from element 0 (strided_mask_index); mode 0 with the per-batch
           pre/next band as in the dense kernel.
A dropMask holds N1·S1b·S2b bits per batch, batch after batch, each batch's bits in [N1, S1b, S2b]
order (the tiling sizes it Σ_b N1·S1b·S2b; the order within is inferred, DROP_ORDER). A keep mask the
Ascend910_95 kernels generate (dropmask.h ComputeDropOffset) draws batch b from element
N1·Σ_{c<b} S1c·align16(S2c) of the Philox stream, each batch's rows S2b rounded up to 16.
softmaxMax/Sum are [T1, N1, 8]: by default each batch's rows are stored head-major ([N1, S1b, 8]
after the rows of the batches before it, what the kernels write and read); with the layout
"same_as_input" token-major ([T1, N1, 8] as the shape says; tndSoftmaxOut / softmaxInLayout).
A pse is read per batch as kernels/flash_attention/varlen_pse.py lays it out; the generated ALiBi of
sparse mode 8 drops the start indices after batch 0.
The MLA rope split (queryRope [T1, N1, Dr], keyRope [T2, N2, Dr]) adds Qr Krᵀ to the scores: the
kernels extend the contraction over D + Dr, so the halves are joined along D and the joined
gradients split again.
"""

from dataclasses import replace

import numpy as np

from aclnn_emu.kernels.casts import FP32
from aclnn_emu.kernels.flash_attention.dropout import BYTES_PER_COUNTER
from aclnn_emu.kernels.flash_attention.flash_attention_score import flash_attention_score
from aclnn_emu.kernels.flash_attention.flash_attention_score_grad import flash_attention_score_grad, sink_gradient
from aclnn_emu.kernels.flash_attention.params import SOFTMAX_LANES, FaParams
from aclnn_emu.kernels.flash_attention.sparse_modes import UNBOUNDED

SAME_AS_INPUT = "same_as_input"  # the softmax layout that follows the TND input
DROP_ORDER = "the bit order of a TND dropMask: batch after batch, each [N1, S1b, S2b]"


def batches(cu_q, cu_kv):
    """(query tokens, key tokens) slices per batch from the cumulative lengths."""
    q0 = np.concatenate([[0], np.asarray(cu_q, np.int64)[:-1]])
    k0 = np.concatenate([[0], np.asarray(cu_kv, np.int64)[:-1]])
    return [(slice(int(a), int(b)), slice(int(c), int(d))) for a, b, c, d in zip(q0, cu_q, k0, cu_kv)]


def batch_params(params: FaParams, b: int, band_index: int, restart_alibi: bool | None = None) -> FaParams:
    """The dense kernels' parameters for batch b: its sparse mode as a dense one (7 and 8 become a
    right-down band of their batch's bound, or the causal mode of the others), its prefix. Mode 8's
    bound S2b - max(S1b - next, 0) is mode 4's next + S2b - S1b wherever it masks anything.
    `restart_alibi`: whether the generated ALiBi drops the start indices after batch 0 (innerAlibiFlag;
    by default where the sparse mode is 8)."""
    mode, nxt, pre = params.sparse_mode, params.next_tokens, params.pre_tokens
    if mode == 7:
        mode, pre = (4, UNBOUNDED) if b == band_index else (3, pre)
    elif mode == 8:
        mode, pre = (4, UNBOUNDED) if b == band_index else (2, pre)
    # only the prefix mode reads prefixOptional (torch_npu passes an empty one) (the tiling checks its length there); other modes
    # ignore it, however long it is
    prefix = None if not params.prefix or params.sparse_mode != 6 else (params.prefix[b],)
    q_start, kv_start = params.q_start_idx, params.kv_start_idx
    if restart_alibi is None:
        restart_alibi = params.sparse_mode == 8
    if restart_alibi and b:  # the generated ALiBi distance starts over after batch 0
        q_start = kv_start = None
    return replace(
        params,
        layout="BSND",
        sparse_mode=mode,
        pre_tokens=pre,
        next_tokens=nxt,
        prefix=prefix,
        q_start_idx=q_start,
        kv_start_idx=kv_start,
    )


def band_index(mode: int, cu_q, cu_kv) -> int:
    """The batch of modes 7 (the last with query tokens, else the last) and 8 (the first with query
    tokens, else the first): the tiling's bandIndex (lastValidIndex / firstValidIndex)."""
    valid = [b for b, (rows, _) in enumerate(batches(cu_q, cu_kv)) if rows.stop > rows.start]
    if mode == 7:
        return valid[-1] if valid else len(cu_q) - 1
    return valid[0] if valid else 0


def softmax_views(buffer, heads: int, cu_q, layout: str):
    """Per batch, a [1, N1, S1b, 8] view of a softmaxMax/Sum buffer [T1, N1, 8] in `layout`."""
    views = []
    flat = buffer.reshape(-1)
    for rows, _ in batches(cu_q, cu_q):
        if layout == SAME_AS_INPUT:
            views.append(buffer[rows].transpose(1, 0, 2)[None])
        else:
            size = heads * SOFTMAX_LANES
            block = flat[rows.start * size : rows.stop * size]
            views.append(block.reshape(1, heads, rows.stop - rows.start, SOFTMAX_LANES))
    return views


def _batch_mask(atten_mask, mode: int, rows: slice, keys: slice, longest: tuple, pairs_before: int, strided: bool):
    """The batch's mask: compressed templates are not indexed; a [S1max, S2max] user mask (or
    [1, 1, S1max, S2max]) gives its top-left block (the tiling's first choice), a [T1, T2] one the batch's
    own tokens; [B, 1, S1max, S2max] and [B, N1, S1max, S2max] start after the Σ S1·S2 (times N1)
    elements of the batches before it, each head S1b·S2b further, each row S2b further (the Atlas A2/A3
    kernels). `strided`: the Ascend910_95 read (strided_mask_index)."""
    if atten_mask is None or mode not in (0, 1, 5):
        return atten_mask
    s1, s2 = rows.stop - rows.start, keys.stop - keys.start
    if strided:
        return atten_mask.reshape(-1)[strided_mask_index(atten_mask.shape, s1, s2, pairs_before)][None]
    if atten_mask.ndim == 2 and atten_mask.shape != longest:
        return atten_mask[rows, keys]
    if atten_mask.ndim == 4 and atten_mask.shape[:2] != (1, 1):
        heads = atten_mask.shape[1]
        index = heads * pairs_before + np.arange(heads)[:, None, None] * (s1 * s2) + np.arange(s1)[:, None] * s2
        return atten_mask.reshape(-1)[index + np.arange(s2)][None]
    return atten_mask[..., :s1, :s2]


def prefix_skipped(s1: int, s2: int, prefix: int, block_rows: int, block_cols: int = 128):
    """Sparse mode 5 on the Ascend910_95 backward's BSND kernels (every batch of the same lengths): True in
    the [S1, S2] blocks of `block_rows` x `block_cols` they skip (CheckIsValidBlock: a block starting at
    column j0 runs when j0 < min(max(S2 - S1 + the end of its rows, prefixN[b]), S2)); skipping a block
    leaves its scores out of every gradient, as masking them does."""
    rows_end = (np.arange(s1) // block_rows + 1) * block_rows
    end = np.minimum(np.maximum(s2 - s1 + rows_end, prefix), s2)
    return (np.arange(s2) // block_cols * block_cols)[None, :] >= end[:, None]


def strided_mask_index(shape: tuple, s1: int, s2: int, pairs_before: int):
    """Ascend910_95 (attenmask.h ComputeOffsetForNoCompress): the flat indices [heads, S1b, S2b] a batch
    reads of a mask of `shape`, after `pairs_before` = Σ_{c<b} S1c·S2c. A 4-D [B, 1|N1, X, Y] mask
    (attenMaskBS1S2 / BN2GS1S2) starts at that packed offset (times N1, plus h·S1b·S2b per head); any
    other (2-D, [1, 1, X, Y]: attenMaskS1S2, and the forward's [T1, T2], whose type 99 no kernel reads)
    at element 0; rows lie Y, the last dimension, apart."""
    packed = len(shape) == 4 and tuple(shape[:2]) != (1, 1)
    heads = shape[1] if packed else 1
    first = heads * pairs_before + np.arange(heads)[:, None, None] * (s1 * s2) if packed else np.zeros((1, 1, 1), int)
    return first + np.arange(s1)[:, None] * shape[-1] + np.arange(s2)


def strided_mask_reads(shape: tuple, q_lens, kv_lens) -> int:
    """How many elements of a mask of `shape` the Ascend910_95 kernels read (one past the last index
    of a batch with tokens), for the tilings' size checks."""
    end, pairs = 0, 0
    for s1, s2 in zip(q_lens, kv_lens):
        if s1 and s2:
            end = max(end, int(strided_mask_index(shape, s1, s2, pairs).max()) + 1)
        pairs += s1 * s2
    return end


def _longest(cu_q, cu_kv) -> tuple:
    spans = batches(cu_q, cu_kv)
    # no batches (empty length arrays): no rows, no keys, nothing computed
    return max((q.stop - q.start for q, _ in spans), default=0), max((k.stop - k.start for _, k in spans), default=0)


def _batch_drop_mask(drop_mask, heads: int, start: int, rows: int, keys: int):
    """The packed keep bits [N1, S1b, S2b] of a batch whose bits start at bit `start`."""
    if drop_mask is None:
        return None
    count = heads * rows * keys
    data = np.asarray(drop_mask, np.uint8).reshape(-1)[start // 8 : -(-(start + count) // 8)]
    bits = np.unpackbits(data, bitorder="little")[start % 8 : start % 8 + count]
    return np.packbits(bits, bitorder="little")


def _batch_calls(params, cu_q, cu_kv, heads, atten_mask, drop_mask, strided, restart_alibi=None, prefix_rows=0):
    """(query rows, key rows, batch parameters, mask, packed keep bits) of each batch with both
    queries and keys, in batch order; its index too, for the softmax views. `prefix_rows`: the row
    block of the BSND kernels that skip blocks by prefixN in sparse mode 5 (prefix_skipped), or 0."""
    band, longest, bit, aligned = band_index(params.sparse_mode, cu_q, cu_kv), _longest(cu_q, cu_kv), 0, 0
    for b, (rows, keys) in enumerate(batches(cu_q, cu_kv)):
        s1, s2 = rows.stop - rows.start, keys.stop - keys.start
        if s1 and s2:  # rows without keys stay 0
            mask = _batch_mask(atten_mask, params.sparse_mode, rows, keys, longest, bit // heads, strided)
            if prefix_rows and mask is not None and params.sparse_mode == 5:
                mask = (mask != 0) | prefix_skipped(s1, s2, params.prefix[b], prefix_rows)
            drop = _batch_drop_mask(drop_mask, heads, bit, s1, s2)
            p = batch_params(params, b, band, restart_alibi)
            if p.generated_dropout is not None:
                seed, offset = p.generated_dropout
                p = replace(p, generated_dropout=(seed, offset + heads * aligned))
            yield b, rows, keys, p, mask, drop
        bit += heads * s1 * s2
        aligned += s1 * -(-s2 // BYTES_PER_COUNTER) * BYTES_PER_COUNTER


def _joined(x, rope):
    return x if rope is None else np.concatenate([x, rope], axis=-1)


def var_len_score(
    query,
    key,
    value,
    params: FaParams,
    cu_q,
    cu_kv,
    *,
    atten_mask=None,
    drop_mask=None,
    sink=None,
    rope=None,
    softmax_layout="",
    pse=None,
    mask_row_stride=False,
):
    """(softmax_max, softmax_sum, attention_out) of a TND call: [T1, N1, 8] fp32 twice in
    `softmax_layout` and [T1, N1, Dv] in the query's dtype. `rope` is (queryRope, keyRope) or None;
    `pse` each batch's pse (varlen_pse.PackedPse.batches) or None; `mask_row_stride` whether a
    [B, 1|N1, …] mask's rows lie its last dimension apart (Ascend910_95) rather than S2b."""
    q, k = _joined(query, None if rope is None else rope[0]), _joined(key, None if rope is None else rope[1])
    heads = query.shape[1]
    stats = [np.zeros((query.shape[0], heads, SOFTMAX_LANES), FP32) for _ in range(2)]
    out = np.zeros((query.shape[0], heads, value.shape[-1]), query.dtype)
    views = list(zip(*(softmax_views(x, heads, cu_q, softmax_layout) for x in stats)))
    for b, rows, keys, p, mask, drop in _batch_calls(
        params, cu_q, cu_kv, heads, atten_mask, drop_mask, mask_row_stride
    ):
        outputs = (*views[b], out[rows][None])
        shift = None if pse is None else pse[b]
        flash_attention_score(q[rows][None], k[keys][None], value[keys][None], p, shift, drop, mask, outputs, sink)
    return stats[0], stats[1], out


def var_len_score_grad(
    query,
    key,
    value,
    dy,
    attention_in,
    softmax_max,
    softmax_sum,
    params: FaParams,
    cu_q,
    cu_kv,
    *,
    atten_mask=None,
    drop_mask=None,
    sink=None,
    rope=None,
    softmax_layout="",
    pse=None,
    mask_row_stride=False,
    restart_alibi=None,
    prefix_rows=0,
):
    """{"dq", "dk", "dv"} (+ "dq_rope", "dk_rope" with rope, "dsink" with a sink) of a TND call; `pse`
    and `mask_row_stride` as var_len_score's; `restart_alibi` as batch_params' (the backward kernels
    decide it by their own sparse mode, which on Atlas A2/A3 is the attribute, mask or not); `prefix_rows`
    as _batch_calls'."""
    q, k = _joined(query, None if rope is None else rope[0]), _joined(key, None if rope is None else rope[1])
    heads = query.shape[1]
    dq, dk, dv = np.zeros(q.shape, q.dtype), np.zeros(k.shape, q.dtype), np.zeros(value.shape, q.dtype)
    views = list(zip(*(softmax_views(x, heads, cu_q, softmax_layout) for x in (softmax_max, softmax_sum))))
    terms = []
    for b, rows, keys, p, mask, drop in _batch_calls(
        params, cu_q, cu_kv, heads, atten_mask, drop_mask, mask_row_stride, restart_alibi, prefix_rows
    ):
        smax, ssum = views[b]
        got = flash_attention_score_grad(
            q[None, rows],
            k[None, keys],
            value[None, keys],
            dy[None, rows],
            attention_in[None, rows],
            smax,
            ssum,
            p,
            None if pse is None else pse[b],
            drop,
            mask,
            sink,
        )
        dq[rows], dk[keys], dv[keys] = (x[0] for x in got[:3])
        if sink is not None:
            terms.append(got[3])
    grads = {"dq": dq[..., : query.shape[-1]], "dk": dk[..., : key.shape[-1]], "dv": dv}
    if rope is not None:
        grads["dq_rope"], grads["dk_rope"] = dq[..., query.shape[-1] :], dk[..., key.shape[-1] :]
    if sink is not None:
        empty = np.zeros((1, heads, 1), FP32)
        grads["dsink"] = sink_gradient(terms or [empty])
    return grads
