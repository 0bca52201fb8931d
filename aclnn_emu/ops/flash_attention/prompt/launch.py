"""aclnnPromptFlashAttentionV2: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.attention.layouts import to_bnsd
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.kernels.flash_attention.quant import deq_scale
from ..common import I8, from_bnsd, mask_3d, output_quant
from . import precise
from .base_api import report_unwritten


# -- launch ---------------------------------------------------------------------------------------
def _launch(
    a,
    act_q,
    act_kv,
    bands,
    mask_t,
    rows=None,
    precision=pfa.HIGH_PERFORMANCE,
    tokens=False,
    ifa_mask=False,
    kv_blocks=None,
    inner_precise=precise.DEFAULT,
    read_pse=None,
    kv_block=pfa.KV_BLOCK,
):
    """The kernel call; ``rows`` = (query, key) row segments of the batches of a packed layout;
    ``tokens``: every tensor's memory is read (and the output written) as packed [T, N, D] tokens;
    ``ifa_mask``: a 2-D mask is [B, S2] (one row per batch); ``kv_blocks``: the key block of each
    packed batch; ``inner_precise`` what the tiling made of innerPrecise and pseShift; ``read_pse`` a
    reader of the pse other than the shared path's (the base-API mask). ``a.left_padding`` (a
    left_padding.LeftPadding; FusedInferAttentionScore's route hands the PFA tiling its padding
    sizes, PromptFlashAttention's own entry points have none) offsets each batch's rows; only the
    kernels of the unpacked layouts read it (the base-API and var-len ones never do)."""
    q_t, k_t, v_t, out_t = a.query, a.key, a.value, a.attentionOut
    precision, shared_pse, row_invalid = precise.kernel_inputs(a, inner_precise, precision)
    read_pse = read_pse or shared_pse
    layout, heads = a.inputLayout, a.numHeads
    kv_heads = (k_t.shape[1] if layout == "TND" else a.numKeyValueHeads) or heads
    scale = a.scaleValue
    int8_t = (a.deqScale1, a.quantScale1, a.deqScale2) if q_t.dtype == I8 else None
    quant2 = (a.quantScale2, a.quantOffset2) if out_t.dtype == I8 else None
    padding = getattr(a, "left_padding", None) if rows is None else None
    sink_t = getattr(a, "learnableSink", None)  # FusedInferAttentionScore's, on the TND kernels
    rope_t = getattr(a, "rope", None)  # FusedInferAttentionScore's (queryRope, keyRope) on Ascend910_95
    full_quant = getattr(a, "full_quant", None)  # its MLA full-quant kernels: q, k, v read as fp32 values
    msd_t = getattr(a, "msd", None)  # FusedInferAttentionScore's MSD kernels (A2/A3): int8 k, v and their parameters
    lse_t = getattr(a, "softmax_lse", None)  # the softmaxLse those kernels write (they alone take it here)
    if msd_t is not None:  # their softmax, sums and output run in fp32 whatever innerPrecise says
        precision = pfa.X910_HIGH_PRECISION
    alibi = getattr(a, "alibi", None)  # its V5 alibi (pseType 2/3) on Ascend950: the bias in place of a pseShift

    def run(workspace):
        q, k, v = (
            _bnsd(t.read(n), layout, h, tokens)
            for t, n, h in ((q_t, "query", heads), (k_t, "key", kv_heads), (v_t, "value", kv_heads))
        )
        if rope_t is not None:  # one product over each head's D and its rope's (CheckRope's kernels)
            q_rope, k_rope = (
                _bnsd(t.read(n), layout, h, tokens) for t, n, h in zip(rope_t, ROPE_NAMES, (heads, kv_heads))
            )
            if full_quant is not None:  # BF16 ropes beside the 8-bit values' fp32, both exact
                q_rope, k_rope = q_rope.astype(np.float32), k_rope.astype(np.float32)
            q, k = np.concatenate([q, q_rope], axis=-1), np.concatenate([k, k_rope], axis=-1)
        mask = None if mask_t is None else mask_3d(mask_t.read("attenMask"), ifa_mask)
        pse = alibi.source() if alibi is not None else None if read_pse is None else read_pse()
        shift = None if padding is None else padding.shift(q.shape[2], k.shape[2], act_q, act_kv)
        lengths = (act_q, act_kv) if shift is None else (shift.act_q, shift.act_kv)
        if shift is not None:
            q, k, v = shift.query(q), shift.keys(k), shift.keys(v)
            mask = None if mask is None else shift.scores_input(mask)
            pse = None if pse is None else PseSource(shift.scores_input(pse.pse), pse.type, pse.s1, pse.s2)
        int8 = None
        if int8_t is not None:
            deq1, quant1, deq2 = (t.read(n) for t, n in zip(int8_t, ("deqScale1", "quantScale1", "deqScale2")))
            whole = not precision.arch35_quant  # the arch35 kernels keep all 32 bits
            int8 = pfa.Int8Scales(
                deq_scale(deq1, truncate=whole), np.float32(quant1.reshape(-1)[0]), deq_scale(deq2, truncate=whole)
            )
        out_quant = None if quant2 is None else output_quant(*quant2, heads)
        sink = None if sink_t is None else sink_t.read("learnableSink").astype(np.float32)
        common = dict(
            scale=scale,
            bands=bands,
            mask=None if mask is None else pfa.Mask(mask),
            int8=int8,
            out_quant=out_quant,
            precision=precision,
            row_invalid=row_invalid,
            pse=pse,
            stats=None if sink is None else pfa.RowStats(sink=sink),
        )
        lse = None
        if lse_t is not None:  # [B, N, S1]; rows never computed keep the initialisation's +inf
            lse = np.full(q.shape[:3], np.inf, np.float32)
            common["stats"] = pfa.RowStats(sink=sink, lse=lse, masked_lse_inf=(row_invalid,) * q.shape[0])
        if msd_t is not None:
            common["msd"] = msd_t.read()
        if full_quant is not None:
            o = full_quant.attention(q, k, v, scale=scale, bands=bands, act_q=lengths[0], act_kv=lengths[1], rows=rows)
        elif rows is None:
            o = pfa.prompt_flash_attention(q, k, v, act_q=lengths[0], act_kv=lengths[1], kv_block=kv_block, **common)
        else:
            blocks = kv_blocks or [kv_block] * len(rows[0])
            o = pfa.packed_prompt_flash_attention(q, k, v, q_rows=rows[0], kv_rows=rows[1], kv_blocks=blocks, **common)
        if tokens:
            report_unwritten(rows[0], o.shape[2])
        if shift is not None:
            o = shift.back(o)
        out_t.write(from_bnsd(o, "TND" if tokens else layout).reshape(out_t.shape))
        if lse is not None:
            lse_t.write(lse.reshape(lse_t.shape))

    return run


ROPE_NAMES = ("queryRope", "keyRope")


def _bnsd(x, layout, heads, tokens=False):
    if tokens:
        d = x.shape[-1] // heads if layout in ("SH", "BSH") else x.shape[-1]
        return to_bnsd(x.reshape(-1, heads, d), "TND")
    if layout == "NSD":
        return x[None]
    return to_bnsd(x, "BNSD" if layout == "BNSD_BSND" else layout, heads)
