"""Ascend910_95's MLA full-quant attention (PromptFlashAttentionTilingV2 `enableIFAMLAFullQuant`: FP8
E4M3 query, key and value with BF16 queryRope and keyRope, query D 512), the base-API
`FlashAttentionScoreKernelInferMlaFullquant` (`common/op_kernel/arch35`), on the key walk of
perblock_quant.

Per (batch b, query head n, the one KV head), query row i (the kernel merges the G heads' rows, as
the emulator stacks them; the maths are per row), keys in the config's blocks of 128 (S2Aligned128) from key 0:
  raw = Q Kᵀ + Qr Krᵀ: the FP8 product and the BF16 rope product accumulate in one fp32 L0C
        (IterateBmm1MLAFullQuant), so the rope part meets the dequant scales too
  x   = fp32(raw * fp32(fp32(dq[b, i, n] * scaleValue) * dk))    (ProcessVec1*: per token and head)
        keys outside row i's band take -FLT_MAX (the mask fill), so E = 0 there
  m, E, l as the per-block kernels; P = FP8 E4M3 ties to even (CAST_RINT, saturated) of
  fp32(E * 448), divided from block 1 by pScale = fp32(exp(block max - m) + floatEps)
  acc as the per-block kernels with one value scale dv, each block's P V times pScale first;
  out = fp32(acc / l) * fp32(1 / 448)                              (FlashUpdateLastNew, LastDivNew)
The caller casts ``out`` to BF16 ties away (Bmm2DataCopyOut CAST_ROUND).
"""

from collections.abc import Callable

import numpy as np

from aclnn_emu.kernels import native, parallel
from aclnn_emu.kernels.attention.masks import band_masked
from aclnn_emu.kernels.flash_attention.perblock_quant import Walk, narrow_p_e4m3, walk_keys
from aclnn_emu.kernels.flash_attention.prompt_flash_attention import BF16_MASK_FILL

KV_BLOCK = 128  # S2Aligned128


def mla_full_quant_attention(
    q, k, v, dq, dk, dv, *, scale: float, bands, act_q, act_kv, rows=None, lse=None
) -> np.ndarray:
    """q [B, N, S1, D + 64] and k [B, 1, S2, D + 64]: the 8-bit values and the rope joined, float32;
    v [B, 1, S2, Dv] float32; dq [B, N, S1] float32; dk, dv float32 scalars; ``bands`` (pre, next) per
    batch (prompt_flash_attention.batch_bands); rows past act_q[b] and keys past act_kv[b] are not
    walked. ``rows``: a packed layout's (query, key) (first row, count) per batch over B = 1, each
    batch's band anchored at its own first row and key. ``lse``: an fp32 [B, N, S1] array to receive
    log(l) + m of each walked row, +inf where m stayed -FLT_MAX (ComputeLseOutputVF). Returns the
    fp32 output [B, N, S1, Dv] before its cast (rows without keys 0)."""
    b, n, s1 = q.shape[:3]
    out = np.zeros((b, n, s1, v.shape[3]), np.float32)
    dk32, dv32, scale32 = np.float32(dk), np.float32(dv), np.float32(scale)
    spans = batch_spans(b, act_q, act_kv, rows)

    def _heads(span, h0, h1):
        """Heads [h0, h1) of a batch as one stack of rows (h, i), as the kernel merges them: the KV
        head packed once; each row's maths its own."""
        bi, q0, count, k0, s2 = spans[span]
        pre, nxt = bands[span]
        heads = h1 - h0
        row_scale = ((dq[bi, h0:h1, q0 : q0 + count] * scale32) * dk32).reshape(-1, 1)

        def scores(raw, c0, c1):
            x = raw * row_scale
            outside = band_masked(0, count, c0, c1, pre, nxt)
            if outside is not None:
                np.copyto(x, BF16_MASK_FILL, where=np.tile(outside, (heads, 1)))
            return x, x.max(axis=1, keepdims=True)

        walk = Walk(KV_BLOCK, scores, narrow_p_e4m3, lambda c: dv32, rescaled_p=True)
        keys, values = kept.get(span, k[bi, 0, k0 : k0 + s2], v[bi, 0, k0 : k0 + s2])
        queries = np.ascontiguousarray(q[bi, h0:h1, q0 : q0 + count].reshape(heads * count, -1))
        o, running_max, row_sum = walk_keys(queries, keys, values, s2, walk)
        out[bi, h0:h1, q0 : q0 + count] = o.reshape(heads, count, -1)
        if lse is not None:
            lse[bi, h0:h1, q0 : q0 + count] = np.where(
                running_max == BF16_MASK_FILL, np.float32(np.inf), np.log(row_sum) + running_max
            ).reshape(heads, count)

    kept = native.KeptPanels()
    run_head_stacks(spans, n, _heads)
    return out


def batch_spans(b: int, act_q, act_kv, rows=None) -> list[tuple[int, int, int, int, int]]:
    """(tensor batch, first query row, rows, first key, keys) per batch: a batch's own rows and
    keys from 0, or a packed layout's ``rows`` ((query, key) (first row, count) per batch) over B = 1."""
    if rows is None:
        return [(bi, 0, int(act_q[bi]), 0, int(act_kv[bi])) for bi in range(b)]
    return [(0, q0, aq, k0, ak) for (q0, aq), (k0, ak) in zip(*rows)]


def run_head_stacks(spans, n: int, heads: Callable[[int, int, int], None]) -> None:
    """``heads(span, h0, h1)`` over the N query heads of every span with rows and keys, in chunks of
    heads enough for every worker (inf/NaN scores run on, as on the hardware)."""

    def task(args):
        with np.errstate(over="ignore", invalid="ignore"):
            heads(*args)

    live = [span for span, (_, _, count, _, s2) in enumerate(spans) if count and s2]
    chunk = -(-n // max(1, -(-2 * parallel.workers() // max(1, len(live)))))
    parallel.map_ordered(task, [(span, h0, min(h0 + chunk, n)) for span in live for h0 in range(0, n, chunk)])
