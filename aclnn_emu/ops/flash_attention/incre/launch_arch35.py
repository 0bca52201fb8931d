"""aclnnIncreFlashAttentionV4 on Ascend910_95: the arch35 launch, batch by batch through the PFA arch35 kernel."""

from dataclasses import dataclass, replace
from types import SimpleNamespace
import numpy as np
from aclnn_emu.kernels.attention.layouts import to_bnsd
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.left_padding import LeftPadding
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.kernels.flash_attention.quant import quantize_
from aclnn_emu.runtime import sanitizer
from ..common import from_bnsd, mask_3d, output_quant
from .entry import I8, OP
from .sparse_arch35 import NO_COMPRESS, Window
from .launch import _paged, kernel_view, key_view_by_kv_heads


TOKENS_MAX = 2147483647  # PFAConvertContext tokenDefault


def _run(a, view, p, caches=None, mask=None, blocks=None):
    """Batch by batch through the PFA arch35 kernel (pfa.ARCH35): each batch's keys are its
    tokens [start, start + length) of the dense tensor (start = the kv left padding) or of its
    blocks; the mask and pseShift are read from column start on (attenmask.h and
    CalPseShiftCoreOffset add kvLeftPaddingSize; pse.h's PseComputeOffset returns that offset for
    inference). ``caches`` (keys, values callables as `_caches` makes them) and
    ``mask`` ([B, 1, S2m]) replace the ones read from the arguments (the INT8-key path);
    ``blocks`` (`MaskBlocks`) computes the batch s1 block by s1 block over each block's own keys.
    FusedInferAttentionScore's softmaxLse (flash_attention_score_antiquant_block_vec.h
    SoftmaxLseCopyOut, vf_flashupdate_new.h ComputeLseOutputVF): log(l) + m per row, +inf (3e99)
    where the max stayed at -FLT_MAX (every key masked) and for rows the kernel does not reach
    (InitLseOutputSingleCore; a batch without keys sets needInit)."""
    q = to_bnsd(_query(a, p), p.layout.split("_")[0], p.heads)
    keys, values = caches or _caches(a, view, p)
    starts, lengths = _windows(a, p)
    firsts, act_q = _query_rows(p)
    if mask is None and p.has_mask:
        mask = mask_3d(a.attenMask.read("attenMask"), p.s1 == 1)
    pse = a.pseShift.read("pseShift") if p.has_pse else None
    out_t = a.attentionOut
    out_quant = output_quant(a.quantScale2, a.quantOffset2, p.heads) if out_t.dtype == I8 else None
    out = np.zeros(q.shape[:3] + (p.value_d,), out_t.np_dtype)
    lse_t = getattr(a, "softmaxLse", None)  # FusedInferAttentionScore's output; IncreFlashAttentionV4 has none
    lse = None if lse_t is None else np.full(q.shape[:3], np.inf, np.float32)
    for b in range(p.b):
        stats = None if lse is None else pfa.RowStats(lse=lse[b : b + 1], masked_lse_inf=(True,))
        start, length = starts[b], lengths[b]
        k, v = keys(b, start, length), values(b, start, length)
        first, rows = firsts[b], act_q[b]  # the query's rows (FusedInferAttentionScore); the others stay 0
        batch_mask = (
            None
            if mask is None
            else pfa.Mask(mask[b if mask.shape[0] > 1 else 0, None, first:, start : start + length])
        )
        batch_pse = None
        if pse is not None:
            pse_rows = pse[b if pse.shape[0] > 1 else 0][None][..., first if pse.shape[2] > 1 else 0 :, start:]
            batch_pse = PseSource(pse_rows, 0, *pse_rows.shape[2:])
        if stats is not None:
            stats = replace(stats, lse=stats.lse[:, :, first : first + rows])
        q_rows, out_rows = q[b : b + 1, :, first : first + rows], out[b : b + 1, :, first : first + rows]
        if blocks is not None:
            _blockwise(a, q_rows, k, v, batch_mask, batch_pse, out_quant, blocks, out_rows, stats)
            continue
        bands = pfa.batch_bands(0, TOKENS_MAX, TOKENS_MAX, p.has_mask, [rows], [length])
        out_rows[...] = pfa.prompt_flash_attention(
            q_rows,
            k[None],
            v[None],
            scale=a.scaleValue,
            bands=bands,
            act_q=[rows],
            act_kv=[length],
            mask=batch_mask,
            out_quant=out_quant,
            precision=pfa.ARCH35,
            pse=batch_pse,
            stats=stats,
        )
    if lse_t is not None:
        lse_t.write(lse.reshape(lse_t.shape))
    flat = from_bnsd(out, p.layout).reshape(-1)
    if flat.size != out_t.numel:  # MLA (query D 192, value D 128) with an output of the query's D
        sanitizer.report(
            "out-of-bounds",
            f"aclnnIncreFlashAttentionV4: the kernel writes {flat.size} elements (value "
            f"D {p.value_d}) into attentionOut {list(out_t.shape)}; the rest keeps its contents here",
        )
        view = np.array(out_t.read("attentionOut")).reshape(-1)
        count = min(view.size, flat.size)
        view[:count] = flat[:count]
        flat = view
    out_t.write(flat.reshape(out_t.shape))


@dataclass(frozen=True)
class MaskBlocks:
    """The arch35 kernels' walk with an attenMask (GetSingleCoreParam, ComputeSouterParam,
    ComputeS2LoopInfo) under the tiling's sparse ``window`` (incre/sparse_arch35): a batch's rows
    run from max(-next, 0) to min(S1, S2 + pre) in blocks of ``s1``; the block at ``off`` takes the
    keys [max(off - pre, 0) // s2 * s2, min(off + its rows + next, S2)), or none when that range is
    empty. Within it the uncompressed modes (0, 1) mask by the user's mask alone, the compressed
    ones by their band. IncreFlashAttentionV4's window is mode 0 with the tokens (0, 0).
    ``row_invalid`` (innerPrecise 2/3, RowInvalid): a row whose every key is masked (running max
    -FLT_MAX) is zero before any post-quantisation."""

    s1: int
    s2: int
    row_invalid: bool
    window: Window = Window()

    def rows(self, act_s1: int, act_s2: int) -> range:
        pre, nxt = self.window.batch(act_s1, act_s2)
        return range(max(-nxt, 0), min(act_s1, act_s2 + pre))

    def keys(self, off: int, rows: int, act_s1: int, act_s2: int) -> tuple[int, int] | None:
        pre, nxt = self.window.batch(act_s1, act_s2)
        first = min(max(off - pre, 0), act_s2)
        end = min(max(off + rows + nxt, 0), act_s2)
        start = first // self.s2 * self.s2
        return (start, end) if end > start else None

    def outside(self, off: int, rows: int, k0: int, k1: int, act_s1: int, act_s2: int) -> np.ndarray | None:
        """[rows, k1 - k0] True where a compressed mode's band masks the key; None uncompressed."""
        if self.window.compress == NO_COMPRESS:
            return None
        pre, nxt = self.window.batch(act_s1, act_s2)
        step = np.arange(k0, k1)[None, :] - np.arange(off, off + rows)[:, None]
        return (step > nxt) | (-step > pre)


def _blockwise(a, q, k, v, mask, pse, out_quant, blocks, out, stats=None):
    """One batch ([1, N, S1, D] query, [N2, S2, D] keys, its PseSource or None) block by block into
    ``out`` [1, N, S1, Dv] (and ``stats``' lse [1, N, S1]); pseShift is read at the block's own rows and keys
    (ComputePseShiftOffset takes the absolute s2 block). Rows no block reaches keep zeros (and +inf)."""
    act_s1, act_s2 = q.shape[2], k.shape[1]
    walked = blocks.rows(act_s1, act_s2)
    for off in range(walked.start, walked.stop, blocks.s1):
        rows = min(blocks.s1, walked.stop - off)
        span = blocks.keys(off, rows, act_s1, act_s2)
        if span is None:
            continue
        k0, k1 = span
        band = blocks.outside(off, rows, k0, k1, act_s1, act_s2)
        block_mask = mask.values[:, off : off + rows, k0:k1] if band is None else band[None]
        o = pfa.prompt_flash_attention(
            q[:, :, off : off + rows],
            k[None, :, k0:k1],
            v[None, :, k0:k1],
            scale=a.scaleValue,
            bands=[(pfa.SPARSE_INT_MAX, pfa.SPARSE_INT_MAX)],
            act_q=[rows],
            act_kv=[k1 - k0],
            mask=pfa.Mask(block_mask),
            out_quant=out_quant,
            precision=pfa.ARCH35,
            kv_block=blocks.s2,
            pse=None if pse is None else PseSource(pse.pse[:, :, off : off + rows, k0:k1], 0, rows, k1 - k0),
            stats=None if stats is None else replace(stats, lse=stats.lse[:, :, off : off + rows]),
        )
        if blocks.row_invalid:
            dead = (block_mask != 0).all(axis=2)[0]
            o[:, :, dead] = _zero_row(out_quant, o.shape[1], o.shape[3], o.dtype)[:, :, None]
        out[:, :, off : off + rows] = o


def _zero_row(out_quant, heads, width, dtype):
    """[1, N, Dv]: what an all-zero row becomes in the output dtype (post-quantised when int8)."""
    zero = np.zeros((heads, width), np.float32)
    if out_quant is not None:
        for n in range(heads):
            quantize_(
                zero[n],
                out_quant.scale[n % out_quant.scale.shape[0]],
                out_quant.offset[n % out_quant.offset.shape[0]],
                via_fp16=True,
            )
    return zero.astype(dtype)[None]


def _query_rows(p):
    """Per batch (first query row, row count): the query's actual lengths, and with queryPaddingSize
    (IFATilingV2's qPaddingSizeFlag) the rows ending that many rows before S1, none for a batch
    whose rows do not fit (InitQueryLeftPaddingSize); the query, mask, pseShift, attentionOut and
    softmaxLse offsets all add the first row (infer_flash_attention_kvcache.h, attenmask.h
    ComputeOffsetForNoCompress, infer_flash_attention_sparse.h)."""
    if p.q_padding is None:
        return [0] * p.b, list(p.act_q)
    shift = LeftPadding(p.q_padding, None, overflow_empty=True).shift(p.s1, p.s2, p.act_q, p.lengths)
    return shift.q_first, shift.act_q


def _windows(a, p):
    """Per batch (first token, token count); InitKVLeftPaddingSize: with kvPaddingSize the tokens
    end `pad` before S2, and a batch that does not fit gets none."""
    if p.padding is None:
        return [0] * p.b, list(p.lengths)
    flat = p.padding.read("kvPaddingSize").reshape(-1)
    if flat.size == 0:
        sanitizer.report(
            "out-of-bounds",
            "aclnnIncreFlashAttentionV4: kvPaddingSize is empty; the kernel reads its element 0 (read as 0 here)",
        )
    pad = int(flat[0]) if flat.size else 0
    starts, lengths = [], []
    for length in p.lengths:
        start = p.s2 - length - pad
        if start < 0:
            start, length = 0, 0
        elif start + length > p.s2:
            sanitizer.report(
                "out-of-bounds",
                f"aclnnIncreFlashAttentionV4: kvPaddingSize {pad} places the tokens "
                f"[{start}, {start + length}) past the key's S ({p.s2}); the part outside is not read here",
            )
            length = p.s2 - start
        starts.append(start)
        lengths.append(length)
    return starts, lengths


def kv_heads_view(key, p, env):
    """The [B, N2, S, D] / [B, S, N2 x D] view the kernels read a batched key through when its heads
    or H differ from numKeyValueHeads (their strides come from numKeyValueHeads and D alone), or a
    refusal where that reaches past the key (incre_flash_attention.key_view_by_kv_heads)."""

    base = p.layout.split("_")[0]
    s = key.shape[2 if base == "BNSD" else 1]
    ends = [s if p.padding is not None else n for n in p.lengths]
    return key_view_by_kv_heads(key, base, p.b, s, p.kv_heads, p.d, ends, env)


def _query(a, p):
    """The query as the tiling reads it: the dims of its layout's rank (with page attention no rule
    checks the rank: CheckQKOutShape runs without it), over the first elements of its memory; a BSH
    query's rows N D apart, D = H / N rounded down (an H that N does not divide meets no rule when
    attentionOut, the one tensor its H is compared with, is the query itself)."""
    base = p.layout.split("_")[0]
    q = a.query.read("query")
    rank = 3 if base in ("BSH", "TND", "NSD") else 4
    q = q if q.ndim <= rank else kernel_view(q, q.shape[:rank])
    return q if base != "BSH" or q.shape[2] == p.heads * p.d else kernel_view(q, (*q.shape[:2], p.heads * p.d))


def _caches(a, view, p):
    """Two callables (b, start, length) -> [N2, length, D] of the keys / values."""
    if not p.paged:
        base = p.layout.split("_")[0]
        shaped = (lambda x: x) if p.kv_shape is None else (lambda x: kernel_view(x, p.kv_shape))
        layout = base if p.kv_shape is None else ("BNSD" if base == "BNSD" else "BSH")
        k = to_bnsd(shaped(view.key.read("key")), layout, p.kv_heads)
        v = to_bnsd(shaped(view.value.read("value")), layout, p.kv_heads)
        return (lambda b, s, n: k[b, :, s : s + n]), (lambda b, s, n: v[b, :, s : s + n])

    caches = _paged(
        a,
        SimpleNamespace(
            block_size=p.block_size, kv_heads=p.kv_heads, d=p.d, value_d=p.value_d, batch=p.b, max_blocks=p.max_blocks
        ),
    )
    caches.prepare(p.lengths)
    if caches.bad_ids:
        sanitizer.report(
            "out-of-bounds",
            f"{OP.phase2}: blocktable entries {caches.bad_ids[:8]} (batch, block id) "
            "lie outside the key/value cache; their tokens read as zeros here",
        )

    def gather(cache):
        def tokens(b, start, length):
            blocks = caches.table[b, : -(-(start + length) // p.block_size)]
            if not len(blocks):  # a batch of no tokens
                return np.empty((p.kv_heads, 0, cache.shape[3]), cache.dtype)
            rows = cache[blocks].transpose(1, 0, 2, 3).reshape(p.kv_heads, len(blocks) * p.block_size, -1)
            return rows[:, start : start + length]

        return tokens

    return gather(caches.key_cache), gather(caches.value_cache)
