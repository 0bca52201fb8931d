"""FusedInferAttentionScore V4's MLA full quant on Ascend910_95: an FP8 E4M3 query, key and value
with queryRope and keyRope (PromptFlashAttentionTilingV2 `SetAttributeInfo`: enableIFAMLAFullQuant),
the DeepSeek FP8 decode path.

Its rules (prompt_flash_attention_tiling_v2.cpp `CheckMLAFullQuant`, in CheckSingleAttribute right
after CheckRope, CheckQueryAndKey and CheckIFAMLA; every failure 561002), in their order: FP8 E4M3
query, key and value with a BF16 output; BF16 ropes; queryQuantMode 3 (per token + head);
keyAntiquantMode and valueAntiquantMode 0 (per tensor); dequantScaleQuery, then the key and value
scales, present; all three FLOAT (left out: the OpDef lookup takes FLOAT scales only, 561003, and
BF16 ropes with a BF16 output only); the scale shapes; no key/value offsets; no deqScale1,
quantScale1 or deqScale2; no shared prefix. The shape rule fails only when both its halves do
(`!CheckQScaleShape4MLAFullQuant && !CheckKVScaleShape4MLAFullQuant`): dequantScaleQuery [B, S, N]
(BSH: the query's B and S, then numHeads; BSND/BNSD/TND: the query's shape without D) and key and
value scales [1]. The kernel then reads dequantScaleQuery in the query's row order and element 0 of
the key and value scales whatever their shapes (flash_attention_score_block_vec_base.h ProcessVec1,
ProcessVec2OnUb); a tensor too small for that is a read past its end, refused (561003).

FusedInferAttentionScore's kernel list (fused_infer_attention_score_template_tiling_key.h) builds the
full-quant kernel (`FlashAttentionScoreKernelInferMlaFullquant`) for config
S1Aligned64_S2Aligned128_DAligned576_DVAligned512 without pse only: a head size of 128 (PFARope, whose
UpdateTilingKeyConfig picks a D-128 config) or a pseShift (UpdateTilingKeyPseMode: PSE_OUTER_MUL_ADD)
gives a tiling key with no binary. The emulator runs the kernels for a head size of 512 (IFA MLA) over
a dense or paged BSH/BSND/BNSD/TND cache: the other operators' checks see the call in its BF16 output
type, the kernel reads the 8-bit values (kernels/flash_attention/mla_full_quant.py).
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.casts import BF16
from aclnn_emu.kernels.flash_attention.mla_full_quant import mla_full_quant_attention
from aclnn_emu.kernels.rounding import round_half_away_
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import attr_uint32

from ..prompt.checks_arch35 import PFA_ROPE
from .entry import V4
from .failure import tiling
from .layouts import split

PER_TOKEN_HEAD, PER_TENSOR = 3, 0  # AntiquantTypeEnum::PER_TOKEN_HEAD, PER_CHANNEL (the tiling's "Per-Tensor")
E4M3 = DataType.ACL_FLOAT8_E4M3FN


NO_KERNEL = Gaps(
    V4,
    "no_kernel",
    {
        "mla_full_quant": "Ascend910_95's MLA full quant (FP8 E4M3 query, key and value with queryRope and keyRope) "
        "with a head size of 128 (PFARope) or a pseShift: FusedInferAttentionScore's kernel list "
        "(fused_infer_attention_score_template_tiling_key.h) builds its kernel for config "
        "S1Aligned64_S2Aligned128_DAligned576_DVAligned512 without pse only, and the tiling key "
        "PromptFlashAttentionTilingV2 builds (UpdateTilingKeyConfig, UpdateTilingKeyPseMode) names another"
    },
)

REFUSED = Gaps(
    V4,
    "refused",
    {
        "mla_scales": "Ascend910_95's MLA full quant with a dequantScaleQuery of fewer than B x S x N elements or an "
        "empty keyAntiquantScale / valueAntiquantScale: the kernel reads one query scale per query row and element 0 "
        "of the key and value scales (flash_attention_score_block_vec_base.h ProcessVec1, ProcessVec2OnUb)"
    },
)


def _present(t) -> bool:
    return t is not None and not t.is_empty


def without_kernel(a, rope_mode) -> str | None:
    """Why the tiling key of this MLA full-quant call names no kernel (None when one is built)."""
    if rope_mode == PFA_ROPE:
        return "a head size of 128 (PFARope)"
    if _present(a.pseShiftOptional):  # an empty one leaves enablePseShift false
        return "pseShift"
    return None


def check(a) -> None:
    """CheckMLAFullQuant, in its order."""
    qkv = (a.query.dtype, a.key.items[0].dtype, a.value.items[0].dtype)
    if qkv != (E4M3,) * 3 or a.attentionOut.dtype != DataType.ACL_BF16:
        names = ", ".join(t.short for t in (*qkv, a.attentionOut.dtype))
        raise tiling(
            "mla_fq.dtype",
            f"dataType of Q, K and V must be fp8_e4m3 and of the output bf16 in MLA full quant, now {names}",
        )
    ropes = (a.queryRopeOptional.dtype, a.keyRopeOptional.dtype)
    if ropes != (DataType.ACL_BF16,) * 2:
        raise tiling(
            "mla_fq.rope_dtype",
            f"dataType of queryRope and keyRope must be bf16, now {ropes[0].short}, {ropes[1].short}",
        )
    if a.queryQuantMode != PER_TOKEN_HEAD:
        raise tiling("mla_fq.query_mode", f"queryQuantMode {a.queryQuantMode} is invalid: only Per-Token-Head (3)")
    if (a.keyAntiquantMode, a.valueAntiquantMode) != (PER_TENSOR, PER_TENSOR):
        raise tiling(
            "mla_fq.kv_mode",
            f"keyAntiquantMode {a.keyAntiquantMode} or valueAntiquantMode {a.valueAntiquantMode} is invalid: only "
            "Per-Tensor (0)",
        )
    dq, dk, dv = a.dequantScaleQueryOptional, a.keyAntiquantScaleOptional, a.valueAntiquantScaleOptional
    if dq is None:
        raise tiling("mla_fq.query_scale_null", "dequantScaleQuery should not be nullptr in MLA full quant")
    if dk is None or dv is None:
        raise tiling("mla_fq.kv_scale_null", "keyAntiquantScale or valueAntiquantScale should not be nullptr")
    if not _query_scale_fits(a) and not _kv_scales_fit(dk, dv):
        raise tiling(
            "mla_fq.scale_shape", "check dequantScaleQuery, keyAntiquantScale or valueAntiquantScale shape failed"
        )
    if a.keyAntiquantOffsetOptional is not None or a.valueAntiquantOffsetOptional is not None:
        raise tiling("mla_fq.offset", "keyAntiquantOffset and valueAntiquantOffset should be null in MLA full quant")
    if any(t is not None for t in (a.deqScale1Optional, a.quantScale1Optional, a.deqScale2Optional)):
        raise tiling(
            "mla_fq.int8_scales", "quantScale1, dequantScale1 and dequantScale2 should be null in MLA full quant"
        )
    if a.keySharedPrefixOptional is not None or a.valueSharedPrefixOptional is not None:
        raise tiling("mla_fq.prefix", "keySharedPrefix and valueSharedPrefix should be null in MLA full quant")


def _query_scale_fits(a) -> bool:
    """CheckQScaleShape4MLAFullQuant (other layout strings pass)."""
    q, dq, layout = tuple(a.query.shape), tuple(a.dequantScaleQueryOptional.shape), a.inputLayout or "BSH"
    if layout == "BSH":
        return len(dq) == len(q) and dq[:2] == q[:2] and dq[2] == attr_uint32(a.numHeads)
    if layout in ("BSND", "BNSD", "TND"):
        return len(dq) == len(q) - 1 and dq == q[: len(dq)]
    return True


def _kv_scales_fit(dk, dv) -> bool:
    """CheckKVScaleShape4MLAFullQuant: both [1]."""
    return dk.ndim == 1 and dv.ndim == 1 and dk.shape[0] == 1 and dv.shape[0] == 1


def check_reads(a, axes) -> None:
    """The kernel's reads of the scales: one dequantScaleQuery element per query row (``axes``: the
    query's), one key and one value scale; a tensor they would read past is refused."""
    rows = axes.b * axes.n * axes.s
    if a.dequantScaleQueryOptional.numel < rows or min(t.numel for t in _kv(a)) < 1:
        REFUSED.refuse("mla_scales", f"dequantScaleQuery holds {a.dequantScaleQueryOptional.numel}, {rows} read")


def _kv(a):
    return a.keyAntiquantScaleOptional, a.valueAntiquantScaleOptional


class Kernel:
    """The MLA full-quant kernels of a call, for the PFA launch (``prompt/launch.py``), which hands
    them the [B, N, S, D] views with the rope joined to each head."""

    def __init__(self, a):
        self.a = a
        self.layout = split(a.inputLayout or "BSH")[0]

    def attention(self, q, k, v, *, scale, bands, act_q, act_kv, rows=None) -> np.ndarray:
        """The BF16 output [B, N, S1, Dv] (TND: B = 1 with the batches' ``rows``); softmaxLse written
        when asked for."""
        b, n, s1 = q.shape[:3]
        flat = self.a.dequantScaleQueryOptional.read("dequantScaleQuery").reshape(-1)
        if self.layout == "BNSD":  # the scales in the query's row order (TND: [T, N], B = 1)
            dq = flat[: b * n * s1].reshape(b, n, s1)
        else:
            dq = flat[: b * s1 * n].reshape(b, s1, n).transpose(0, 2, 1)
        dk, dv = (
            t.read(name).reshape(-1)[0] for t, name in zip(_kv(self.a), ("keyAntiquantScale", "valueAntiquantScale"))
        )
        lse = np.full((b, n, s1), np.inf, np.float32) if self.a.lse_wanted else None  # rows without keys: +inf
        o = mla_full_quant_attention(
            q, k, v, dq.astype(np.float32), dk, dv, scale=scale, bands=bands, act_q=act_q, act_kv=act_kv, rows=rows,
            lse=lse,
        )  # fmt: skip
        if lse is not None:
            self._write_lse(lse)
        round_half_away_(o, BF16)
        return o.astype(BF16)

    def _write_lse(self, lse) -> None:
        """softmaxLse where the kernel puts each row (infer_flash_attention_kvcache.h, IFA MLA's
        softmaxLseOffset; SoftmaxLseCopyOut): [B, N, S] order (BSND runs as BSH,
        UpdateTilingKeyLayoutType's InOutLayoutType_BSH_BSH, whose offset (nsOffset % G) · S1 + s puts
        the merged row (s, n) at (n, s)), TND's [T, N] in the query's order."""
        if self.layout == "TND":
            lse = lse[0].T
        lse_t = self.a.softmaxLse
        lse_t.write(np.ascontiguousarray(lse).reshape(lse_t.shape))
