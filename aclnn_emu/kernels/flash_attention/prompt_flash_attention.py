"""PromptFlashAttention forward (aclnnPromptFlashAttentionV2): blockwise online softmax.

Inputs arrive in [B, N, S, D] order in their storage dtype; the layout views, argument checks and
the decoding of scale tensors live in ``aclnn_emu.ops.flash_attention.prompt``. Per (batch, query
head, chunk of query rows) the kernel walks key blocks of ``KV_BLOCK`` columns with an online
softmax, so it never holds more than a ``Q_BLOCK x KV_BLOCK`` score block per thread.

Maths per query row i of batch b (reference §2B):
  S   = Q K^T                     fp16 in: rounded to fp16 (the cube writes half, and can overflow)
                                  int8 in: fp16(deq1 * int32(Q K^T))
  S  *= scaleValue
  mask: bool/int8/uint8 mask -> masked scores replaced by -65504 (fp16, int8) or -FLT_MAX (bf16);
        fp16 mask -> S += mask * -10000
  keys outside row i's token band or >= actualSeqLengthsKv[b] are not part of the row at all
  E   = exp(S - running max), l = sum E (fp32), rescaled by exp(m_old - m_new) between blocks
  P   = E rounded to fp16 (fp16 path), CAST_ROUND to bf16 (bf16 path),
        int8(rint(fp16(E) * quantScale1)) (int8 path)
  O   = sum_blocks P V (int8: fp16(deq2 * int32(E8 V)) per block) / l
Rows >= actualSeqLengths[b] and rows with no key in their band are 0.
With ``row_invalid`` (innerPrecise 2/3: the row-invalid correction) a row whose running max ends at
the kernel's fill value, every key of its band masked, is 0 too, before any output quantisation
(A2/A3 `AdjustSoftMaxRes` zeroes its P, arch35 `RowInvalidUpdate` its output).
The roundings above are the A2/A3 high-performance kernels'; ``Precision`` holds the other kernel
families' (the arch35 high-precision path, the base-API kernels). Packed layouts (SH, TND, the
base-API tokens) run batch by batch on row ranges (``packed_prompt_flash_attention``).
"""

import threading
from dataclasses import dataclass

import numpy as np

from aclnn_emu.kernels import native, parallel
from aclnn_emu.kernels.attention.masks import band_holds, band_key_range, band_masked
from aclnn_emu.kernels.casts import BF16, FP16
from aclnn_emu.kernels.flash_attention.pfa_mla_half import mla_half_attention
from aclnn_emu.kernels.flash_attention.pfa_msd import MsdParams
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.kernels.flash_attention.quant import quantize_
from aclnn_emu.kernels.rounding import round_half_away_, round_half_even_

SPARSE_INT_MAX = 214748647  # the op's "infinite" token count (not 2**31 - 1)
Q_BLOCK = 256
KV_BLOCK = 1024  # <= 1024 keeps the int8 E8 . V sums exact in fp32 (< 2**24)
FP16_MASK_FILL = np.float32(-65504.0)
BF16_MASK_FILL = np.float32(-np.finfo(np.float32).max)
ADDITIVE_MASK_SCALE = np.float32(-10000.0)
INT8 = np.dtype(np.int8)


def batch_bands(
    sparse_mode: int, pre_tokens: int, next_tokens: int, has_mask: bool, act_q, act_kv
) -> list[tuple[int, int]]:
    """Per batch, the (pre, next) band in top-left coordinates that sparse_mode selects.

    Key j belongs to row i when -pre <= j - i <= next. Modes 3 and 4 anchor at the bottom-right
    corner of the batch's actual (actQ x actKV) matrix.
    """
    pre, nxt = min(pre_tokens, SPARSE_INT_MAX), min(next_tokens, SPARSE_INT_MAX)
    bands = []
    for aq, ak in zip(act_q, act_kv):
        if sparse_mode == 0:
            bands.append((pre, nxt) if has_mask else (SPARSE_INT_MAX, SPARSE_INT_MAX))
        elif sparse_mode == 1:
            bands.append((SPARSE_INT_MAX, SPARSE_INT_MAX))
        elif sparse_mode == 2:
            bands.append((SPARSE_INT_MAX, 0))
        elif sparse_mode == 3:
            bands.append((SPARSE_INT_MAX, ak - aq))
        elif sparse_mode == 4:
            bands.append((pre - ak + aq, nxt + ak - aq))
        else:
            raise ValueError(f"sparse_mode {sparse_mode} has no band; expected 0-4")
    return bands


@dataclass(frozen=True)
class Mask:
    """attenMask as [Bm, S1m, S2m] (Bm 1 or B), read at [b?][i][j] for i < S1, j < S2."""

    values: np.ndarray

    @property
    def additive(self) -> bool:
        return self.values.dtype == FP16


@dataclass(frozen=True)
class Precision:
    """The roundings of a kernel family; the default is the A2/A3 high-performance x910 kernels.

    high_precision: the arch35 kernels (Ascend910_95, where TilingV2 forces innerPrecise 0): fp16
      scores stay fp32, masked scores become -FLT_MAX (not for int8) and fp16 outputs ties away
      (CAST_ROUND, `prompt_flash_attention_vector2.h` DataCopyTransposeOut, int8 input included).
    bf16_p_even: bf16 P rounded to nearest even (CAST_RINT) instead of ties away.
    bf16_out_even: a bf16 output rounded to nearest even (CAST_RINT) instead of ties away.
    arch35_quant: the arch35 quantisation (`quant`): int8 scores fp32(Q8 K8^T) * deq1 and block
      outputs fp32(E8 V8) * deq2 in fp32 (no fp16 rounding; `vf_softmaxflashv3.h`, vector2
      AscendDequant), P8 = int8(fp16(fp16(E) * fp16(quant1))), and an int8 output through fp16.
    half_softmax: an fp16 input runs the fp16 MLA base-API kernel's half-precision softmax
      (``pfa_mla_half``).
    fp16_p_away: fp16 P rounded ties away (CAST_ROUND): the A2/A3 x910 high-precision template
      (innerPrecise 0/2, or an fp16 pseShift) casts its fp32 softmax to half in `SoftmaxResCopyOut`.
    fp16_out_even: a high-precision fp16 output rounded to nearest even (the base-API high-precision
      kernels' CAST_NONE) instead of ties away.
    invalid_at_fp32_min: the row-invalid correction compares the running max with -FLT_MAX
      (arch35 `vf_row_invalid.h`), not with the mask fill (A2/A3 `negativeScalar`, -65504 for the
      fp16 high-performance and int8 templates).
    mask_fill: the score a masked position takes, when the family has its own (None: by dtype).
    """

    high_precision: bool = False
    bf16_p_even: bool = False
    bf16_out_even: bool = False
    arch35_quant: bool = False
    half_softmax: bool = False
    fp16_p_away: bool = False
    fp16_out_even: bool = False
    invalid_at_fp32_min: bool = False
    mask_fill: float | None = None


HIGH_PERFORMANCE = Precision()
BASE_API = Precision(bf16_p_even=True, bf16_out_even=True)  # base_common.h OnlineSoftmaxStage1, no_mask l.869
BASE_API_MLA = Precision(bf16_p_even=True, bf16_out_even=True, half_softmax=True)  # base_mla(_high_precision).h
# an fp16 query with innerPrecise 0: base_api_high_precision_no_mask.h (tiling key + 2000000000) and, D > 256,
# base_mla_high_precision.h, both with half types: fp32 scores and softmax, P and output CAST_NONE (nearest even)
BASE_API_HIGH_PRECISION = Precision(high_precision=True, bf16_p_even=True, bf16_out_even=True, fp16_out_even=True)
ARCH35 = Precision(
    high_precision=True, bf16_p_even=True, arch35_quant=True, invalid_at_fp32_min=True
)  # vf_softmaxflashv3.h, vector2.h
# prompt_flash_attention_s1s2_bns1_x910(_base).h with OptimizationMode::HighPrecision: fp32 scores,
# -FLT_MAX mask fill, P and output CAST_ROUND (an fp16 query only; tiling key + 600)
X910_HIGH_PRECISION = Precision(high_precision=True, fp16_p_away=True)


@dataclass(frozen=True)
class RowStats:
    """What a caller wants of each row's softmax besides O.

    sink: fp32 per query head [N]; exp(sink - m) joins the row sum l once the row's keys are done
      (the max m does not see it).
    lse: an fp32 [B, N, S1] array to receive log(l) + m for the rows that saw a key; the caller
      fills it first with the value of the rows that see none.
    masked_lse_inf: per batch, whether a row whose max stayed at the mask fill (every key masked)
      gets lse +inf instead of log(l) + m.
    """

    sink: np.ndarray | None = None
    lse: np.ndarray | None = None
    masked_lse_inf: tuple[bool, ...] = ()


NO_STATS = RowStats()


@dataclass(frozen=True)
class Int8Scales:
    """Decoded per-tensor scales of an int8 query/key/value."""

    deq1: np.float32
    quant1: np.float32
    deq2: np.float32


@dataclass(frozen=True)
class OutputQuant:
    """quantScale2/quantOffset2 as fp32 arrays of shape [N, Dv] (per channel) or [1, 1]."""

    scale: np.ndarray
    offset: np.ndarray


_local = threading.local()


def _score_block(rows: int, cols: int) -> np.ndarray:
    """This thread's score buffer (made on its first kernel call, not at import, and grown for a
    key block wider than KV_BLOCK) as [rows, cols], rows native.ROW_PAD floats longer than cols apart."""
    size = rows * (cols + native.ROW_PAD)
    if getattr(_local, "scores", np.empty(0, np.float32)).size < size:
        _local.scores = np.empty(max(size, Q_BLOCK * (KV_BLOCK + native.ROW_PAD)), np.float32)
    return _local.scores[:size].reshape(rows, cols + native.ROW_PAD)[:, :cols]


def prompt_flash_attention(
    q,
    k,
    v,
    *,
    scale: float,
    bands,
    act_q,
    act_kv,
    mask: Mask | None = None,
    int8: Int8Scales | None = None,
    out_quant: OutputQuant | None = None,
    precision: Precision = HIGH_PERFORMANCE,
    kv_block: int = KV_BLOCK,
    pse=None,
    row_invalid: bool = False,
    stats: RowStats | None = None,
    msd: MsdParams | None = None,
) -> np.ndarray:
    """Attention output [B, N, S1, Dv]: int8 with ``out_quant``, fp16 for int8 input, else q's dtype.

    q [B, N, S1, D], k [B, Nkv, S2, D], v [B, Nkv, S2, Dv] in fp16, bf16 or int8 (int8 needs
    ``int8``); ``bands`` from ``batch_bands``; act_q/act_kv hold B valid lengths; ``precision``
    the kernel family's roundings; ``kv_block`` the online softmax's key block;
    ``pse`` a pse.PseSource of pseType 0 (S * scale + pse, before the mask; PromptFlashAttentionV3's
    and IncreFlashAttention's pseShift); ``row_invalid`` the row-invalid correction (module doc);
    ``stats`` the sink and the lse output (``RowStats``); ``msd`` the MSD kernels' parameters (int8 k
    and v, both products in int8 pieces: ``pfa_msd``), whose P stays fp32.
    """
    return _Forward(
        q, k, v, scale, bands, act_q, act_kv, mask, int8, out_quant, precision, kv_block, pse, row_invalid, stats, msd
    ).run()


def packed_prompt_flash_attention(
    q,
    k,
    v,
    *,
    scale: float,
    bands,
    q_rows,
    kv_rows,
    mask: Mask | None = None,
    int8: Int8Scales | None = None,
    out_quant: OutputQuant | None = None,
    precision: Precision = HIGH_PERFORMANCE,
    kv_blocks=None,
    row_invalid: bool = False,
    pse=None,
    stats: RowStats | None = None,
) -> np.ndarray:
    """Attention over a packed layout (SH, TND): q [1, N, T1, D], k/v [1, Nkv, T2, D|Dv] views.

    Batch b is query rows ``q_rows[b] = (start, count)`` against key rows ``kv_rows[b]``, with its
    own band ``bands[b]`` anchored at the batch's own first row and key, and its own key block
    ``kv_blocks[b]`` (default KV_BLOCK); ``pse`` a PseSource over [1|B, N, S1, S2] read at the
    batch's own rows and keys; ``stats`` the sink (an lse array is not
    written here). Rows of no batch are 0.
    """
    outs = np.zeros(q.shape[:3] + (v.shape[3],), _out_dtype(q.dtype, out_quant))
    for b, ((q0, aq), (k0, ak)) in enumerate(zip(q_rows, kv_rows)):
        kv_block = KV_BLOCK if kv_blocks is None else kv_blocks[b]
        if precision.half_softmax and q.dtype == FP16 and aq and ak:  # no band, attenMask or quantisation there
            outs[0, :, q0 : q0 + aq] = mla_half_attention(
                q[0, :, q0 : q0 + aq],
                k[0, :, k0 : k0 + ak],
                v[0, :, k0 : k0 + ak],
                scale=scale,
                block=kv_block,
                mask=None if pse is None else pse.pse[b if pse.pse.shape[0] > 1 else 0],
            )
            continue
        batch_mask = mask
        if mask is not None and mask.values.shape[0] > 1:
            batch_mask = Mask(mask.values[b : b + 1])
        o = prompt_flash_attention(
            q[:, :, q0 : q0 + aq],
            k[:, :, k0 : k0 + ak],
            v[:, :, k0 : k0 + ak],
            scale=scale,
            bands=[bands[b]],
            act_q=[aq],
            act_kv=[ak],
            mask=batch_mask,
            int8=int8,
            out_quant=out_quant,
            precision=precision,
            kv_block=kv_block,
            row_invalid=row_invalid,
            stats=stats,
            pse=None
            if pse is None
            else PseSource(pse.pse[b : b + 1] if pse.pse.shape[0] > 1 else pse.pse, 0, pse.s1, pse.s2),
        )
        outs[:, :, q0 : q0 + aq] = o
    return outs


def _out_dtype(q_dtype, out_quant):
    if out_quant is not None:
        return INT8
    return FP16 if q_dtype == INT8 else q_dtype


class _Forward:
    def __init__(
        self,
        q,
        k,
        v,
        scale,
        bands,
        act_q,
        act_kv,
        mask,
        int8,
        out_quant,
        precision,
        kv_block,
        pse,
        row_invalid,
        stats,
        msd=None,
    ):
        self.q, self.k, self.v, self.pse, self.msd = q, k, v, pse, msd
        self.stats = NO_STATS if stats is None else stats
        self.kv_block = kv_block
        self.scale = np.float32(scale)
        self.bands, self.act_q, self.act_kv = bands, act_q, act_kv
        self.mask, self.int8, self.out_quant = mask, int8, out_quant
        high = precision.high_precision and q.dtype != INT8
        self.bf16_out_away = not precision.bf16_out_even
        self.fp16_out_away = precision.high_precision and not precision.fp16_out_even
        self.group = q.shape[1] // k.shape[1]
        self.kv_kept = native.KeptPanels()
        self.arch35_quant = precision.arch35_quant
        self.fp16_scores = (q.dtype == INT8 and not self.arch35_quant) or (q.dtype == FP16 and not high)
        self.dequant = np.float32(1) if int8 is None else int8.deq1
        self.rounding = "fp16_even" if q.dtype != BF16 else ("bf16_even" if precision.bf16_p_even else "bf16_away")
        if q.dtype == FP16 and high and precision.fp16_p_away:
            self.rounding = "fp16_away"  # CAST_ROUND of the fp32 softmax
        if msd is not None:
            self.rounding = None  # the MSD kernels split the fp32 numerators into int8 pieces
        self.mask_fill = BF16_MASK_FILL if q.dtype == BF16 or high else FP16_MASK_FILL
        if precision.mask_fill is not None:
            self.mask_fill = np.float32(precision.mask_fill)
        # the running max that marks a row with every key masked, when the correction is on
        self.invalid_max = None
        if row_invalid:
            self.invalid_max = BF16_MASK_FILL if precision.invalid_at_fp32_min else self.mask_fill
        b, n, s1, _ = q.shape
        self.out = np.zeros((b, n, s1, v.shape[3]), _out_dtype(q.dtype, out_quant))

    def run(self) -> np.ndarray:
        b, n = self.q.shape[:2]
        # Enough tasks to keep every worker busy; long heads are split into row chunks of whole
        # query blocks, so a row's blocks (and bits) do not depend on the worker count.
        splits = max(1, -(-2 * parallel.workers() // (b * n)))
        tasks = []
        for bi in range(b):
            aq = int(self.act_q[bi])
            step = Q_BLOCK * max(1, -(-aq // (splits * Q_BLOCK)))
            width = self._stacked_heads(bi, aq)
            heads = [
                range(h, min(h + width, h - h % self.group + self.group))
                for h in range(n)
                if h % self.group % width == 0
            ]
            tasks += [(bi, hs, r0, min(r0 + step, aq)) for hs in heads for r0 in range(0, aq, step)]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            parallel.run_all(self._rows, tasks)
        return self.out

    def _stacked_heads(self, b, aq) -> int:
        """How many query heads of a KV group run as one stack of rows: several when no block of
        the batch is masked (as in decode), so a short query reads its group's keys once, not once
        per head; each row's bits are the same in any stack (attention_blocks works row by row)."""
        pre, nxt = self.bands[b]
        plain = self.mask is None and self.pse is None and self.int8 is None and self.msd is None
        if self.group == 1 or not plain or not band_holds(0, aq, 0, int(self.act_kv[b]), pre, nxt):
            return 1
        heads = self.q.shape[0] * self.q.shape[1]
        return max(1, min(self.group, Q_BLOCK // max(aq, 1), heads // (2 * parallel.workers())))

    def _rows(self, b, heads, r0, r1):
        pre, nxt = self.bands[b]
        j0, j1 = band_key_range(r0, r1, pre, nxt, int(self.act_kv[b]))
        if j0 >= j1:
            return  # no row has a key: stays 0
        kv_head = heads[0] // self.group
        keys, values = self.kv_kept.get((b, kv_head, j0, j1), self.k[b, kv_head, j0:j1], self.v[b, kv_head, j0:j1])
        for i0 in range(r0, r1, Q_BLOCK):
            i1 = min(i0 + Q_BLOCK, r1)
            self._query_block(b, heads, i0, i1, keys, values, j0)

    def _query_block(self, b, heads, i0, i1, keys, values, j0):
        """Rows [i0, i1) of the query heads ``heads``, stacked (only unmasked calls stack several)."""
        pre, nxt = self.bands[b]
        n = heads[0]
        k0, k1 = band_key_range(i0, i1, pre, nxt, j0 + keys.n)
        queries = native.widen(self.q[b, heads.start : heads.stop, i0:i1].reshape(-1, self.q.shape[3]))
        rows = len(heads) * (i1 - i0)
        running_max = np.full(rows, -np.inf, np.float32)
        row_sum = np.zeros(rows, np.float32)
        alpha = np.empty(rows, np.float32)
        acc = np.empty((rows, values.n), np.float32)
        acc_set = False
        scaling = dict(pre=self.dequant, fp16=self.fp16_scores, post=self.scale)
        plain = [k0 - j0]  # bounds (from key j0) of the blocks since the last masked or int8 one
        # Key blocks start at multiples of kv_block (KV_BLOCK: assumed hardware tiling): P is
        # narrowed (int8: quantised) against the running max, so the boundaries shape the result.
        block = self.kv_block
        for start in range(k0 - k0 % block, k1, block):
            c0, c1 = max(start, k0), min(start + block, k1)
            outside = band_masked(i0, i1, c0, c1, pre, nxt)
            touched = self.mask is not None or self.pse is not None or outside is not None or self.msd is not None
            if not touched and self.int8 is None:
                plain.append(c1 - j0)
                continue
            acc_set = self._plain_blocks(queries, keys, values, plain, running_max, row_sum, acc, acc_set, scaling)
            plain = [c1 - j0]
            s = _score_block(rows, c1 - c0)
            if self.msd is None:
                native.matmul_panels(s, queries, keys, c0 - j0)
            else:
                s[...] = self.msd.scores(queries, self.k[b, n // self.group, c0:c1], b, n // self.group, c0)
            if touched:
                self._mask_(s, b, n, i0, i1, c0, c1, outside, scaling)
            # E = exp(S - running max) narrowed to P in place; running max, row sums and alpha updated
            native.softmax_block_(
                s, running_max, row_sum, alpha, rounding=self.rounding, **({} if touched else scaling)
            )
            if self.msd is None:
                pv = self._pv(s, values.rows(c0 - j0, c1 - j0))
            else:
                pv = self.msd.pv(s, self.v[b, n // self.group, c0:c1], b, c0)
            if acc_set:
                native.rescale_add_(acc, alpha, pv)
            else:
                acc[...] = pv  # acc * alpha + pv with acc = 0
                acc_set = True
        if not self._plain_blocks(queries, keys, values, plain, running_max, row_sum, acc, acc_set, scaling):
            acc[...] = 0
        dead = None if self.invalid_max is None else running_max == self.invalid_max
        for h, n in enumerate(heads):
            at = slice(h * (i1 - i0), (h + 1) * (i1 - i0))
            self._finish(
                acc[at],
                row_sum[at],
                running_max[at],
                None if dead is None else dead[at],
                self.out[b, n, i0:i1],
                n,
                b,
                i0,
            )

    def _plain_blocks(self, queries, keys, values, bounds, running_max, row_sum, acc, acc_set, scaling) -> bool:
        """The key blocks between `bounds` (no mask, band, pse or int8) in one native call; whether
        acc holds a sum now."""
        if len(bounds) > 1:
            native.attention_blocks(
                queries,
                keys,
                values,
                bounds,
                running_max,
                row_sum,
                acc,
                acc_set=acc_set,
                rounding=self.rounding,
                **scaling,
            )
            return True
        return acc_set

    def _mask_(self, s, b, n, i0, i1, c0, c1, outside, scaling) -> None:
        """Scale the block of raw QK^T, then apply pse, attenMask and the token band (`outside`)."""
        native.scale_(s, **scaling)
        if self.pse is not None:
            s += self.pse.block(b, n, i0, i1, c0, c1)
            if self.fp16_scores:  # the half-precision templates add a half pse in half (int8 on A2/A3)
                round_half_even_(s, FP16)
        if self.mask is not None:
            values = self.mask.values
            block = values[b if values.shape[0] > 1 else 0, i0:i1, c0:c1]
            if self.mask.additive:
                s += block * ADDITIVE_MASK_SCALE
            else:
                np.copyto(s, self.mask_fill, where=block if block.dtype == np.bool_ else block != 0)
        if outside is not None:
            np.copyto(s, np.float32(-np.inf), where=outside)

    def _pv(self, e, values: native.Panels):
        """One block's contribution P V, P being E already narrowed to fp16/bf16 as the hardware
        feeds it to BMM2 (int8: quantised further)."""
        if self.int8 is not None:
            if self.arch35_quant:
                quantize_(e, np.float16(self.int8.quant1), via_fp16=True)
            else:
                quantize_(e, self.int8.quant1)
        pv = native.matmul_panels(np.empty((e.shape[0], values.n), np.float32), e, values)
        if self.int8 is not None:
            native.scale_(pv, pre=self.int8.deq2, fp16=not self.arch35_quant)
        return pv

    def _finish(self, acc, row_sum, running_max, dead, out, n, b, i0):
        """out = O = acc / l for rows that saw a key (l with the sink's term); rows without any key
        are 0, ``dead`` rows (the row-invalid correction) 0 before the output quantisation; the lse
        when asked for (``RowStats``)."""
        computed = ~np.isneginf(running_max)
        if self.stats is not NO_STATS:
            row_sum = self._row_stats(row_sum, running_max, computed, n, b, i0)
        live = dead is None or not dead.any()
        plain = self.out_quant is None and self.msd is None
        if plain and out.dtype == FP16 and computed.all() and live:  # one native pass
            native.store_rows(out, acc, row_sum, "fp16_away" if self.fp16_out_away else "fp16_even")
            return
        o = acc / np.where(computed, row_sum, np.float32(1))[:, None]
        if not live:
            o[dead] = 0
        if self.msd is not None:
            o = self.msd.output(o, n // self.group)
        if self.out_quant is not None:
            quant = self.out_quant
            quantize_(
                o,
                quant.scale[n % quant.scale.shape[0]],
                quant.offset[n % quant.offset.shape[0]],
                via_fp16=self.arch35_quant,
            )
        elif out.dtype == BF16 and self.bf16_out_away:
            round_half_away_(o, BF16)  # else the bf16 store below rounds to nearest even
        elif out.dtype == FP16 and self.fp16_out_away:
            round_half_away_(o, FP16)
        o[~computed] = 0
        if out.dtype == FP16:
            native.narrow_fp16(out, o)
        else:
            out[...] = o

    def _row_stats(self, row_sum, running_max, computed, n, b, i0):
        """The sink's term added to l, the lse written; returns l."""
        stats = self.stats
        masked = computed & (running_max == self.mask_fill)
        if stats.sink is not None:
            term = np.exp(np.float32(stats.sink[n]) - np.where(computed, running_max, np.float32(0)))
            row_sum = row_sum + np.where(computed, term, np.float32(0))
        if stats.lse is not None:
            lse = np.log(row_sum) + running_max
            if stats.masked_lse_inf and stats.masked_lse_inf[b]:
                lse[masked] = np.inf
            if self.msd is not None:
                rows = native.widen(self.q[b, n, i0 : i0 + len(lse)])
                lse = self.msd.lse(lse, rows, n // self.group, self.scale)
            rows = stats.lse[b, n, i0 : i0 + len(lse)]
            rows[computed] = lse[computed]
        return row_sum
