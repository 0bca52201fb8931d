"""FusedInferAttentionScore's own A2/A3 kernels: the FIA-V3 non-quant GQA and MLA families.

RouteToFia sends FLOAT16/BF16 calls whose query and key share a dtype here
(attention/common/op_kernel/arch32/fia_kernel_nonquant{,_mla}.h, fia_block_vec_nonquant{,_mla}.h;
docs/design/fused_infer_attention_score.md §3). The walk is the shared blockwise online softmax of
``prompt_flash_attention`` with this family's roundings (``FIA_V3``): scores, softmax and the
P·V sums in fp32; masked scores -1e12; P = CAST_ROUND(E) to the key dtype; fp16 out CAST_ROUND,
bf16 out CAST_RINT. On top of it: the learnable sink (l += exp(sink - m) after the last key
block), softmaxLse = log(l) + m, and the MLA rope (queryRope · keyRopeᵀ is one more slice of the
same Q·Kᵀ). Key blocks are ``kv_block`` wide, as the tiling cuts them (CalcInnerSize).
Not modelled: the flash-decode split of S2 across cores (its split points depend on the part's
core count) and the MLA kernel's AMLA exponent rescale (rescaled in fp32 here).
"""

from dataclasses import dataclass

import numpy as np

from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa

MASK_FILL = -1e12  # BOOL_ATTEN_MASK_SCALAR_VALUE, fia_block_vec_nonquant.h
FIA_V3 = pfa.Precision(high_precision=True, bf16_out_even=True, fp16_p_away=True, mask_fill=MASK_FILL)
# The lse of rows the kernel never reaches (InitOutputSingleCore): -3.4e38 for the shape the
# parser calls legacy IFA (S = 1 in BSH/BSND/BNSD without rope), +inf (3e99 in fp32) otherwise.
LSE_UNSEEN = np.float32(np.inf)
LSE_UNSEEN_LEGACY_IFA = np.float32(-3.4e38)
SPARSE_BAND_MODES = (2, 3, 4)  # the compressed-mask modes, whose key block is at most 1024


@dataclass(frozen=True)
class Tiling:
    """What the tiling hands the kernel that shapes its rounding: the key block (s2BaseSize)."""

    kv_block: int


def gqa_tiling(s1: int, group: int, packed: bool, has_mask: bool, sparse_mode: int, block_size: int, s2: int) -> Tiling:
    """FiaTilingNonQuant::CalcInnerSize (fia_tiling_nonquant.cpp): S1 <= 16 takes 8192 / 4096 / 2048
    for G < 5 / < 10 / more, S1 > 16 and TND/NTD 512; a compressed mask caps it at 1024; a page size
    that does not divide it floors it to whole pages; never more than S2 (at least 1)."""
    if packed:
        size = 512
    elif s1 <= 16:
        size = (8192, 4096, 2048)[min(group // 5, 2)]
    else:
        size = 512
    if has_mask and sparse_mode in SPARSE_BAND_MODES:
        size = min(size, 1024)
    return Tiling(_paged(size, block_size, s2))


def mla_tiling(block_size: int, s2: int) -> Tiling:
    """FiaTilingNonQuantMla::CalcInnerSize without the flash-decode halving: 512, floored to whole
    pages, never more than S2."""
    return Tiling(_paged(512, block_size, s2))


def _paged(size: int, block_size: int, s2: int) -> int:
    if block_size and size > block_size and size % block_size:
        size = size // block_size * block_size
    return max(1, min(size, s2))


@dataclass(frozen=True)
class Rope:
    """The MLA rope parts: query [B, N, S1, Dr], key [B, Nkv, S2, Dr]."""

    query: np.ndarray
    key: np.ndarray


def fused_infer_attention(
    q,
    k,
    v,
    *,
    scale: float,
    bands,
    act_q,
    act_kv,
    tiling: Tiling,
    mask: pfa.Mask | None = None,
    rope: Rope | None = None,
    sink: np.ndarray | None = None,
    lse: bool = False,
    lse_unseen=LSE_UNSEEN,
    masked_lse_inf=(),
    zero_masked_rows: bool = False,
    pse=None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(attentionOut [B, N, S1, Dv] in q's dtype, softmaxLse [B, N, S1] fp32 or None).

    q [B, N, S1, D], k [B, Nkv, S2, D], v [B, Nkv, S2, Dv] fp16 or bf16 in [B, N, S, D] order;
    ``bands``/``act_q``/``act_kv`` as for ``prompt_flash_attention``; ``sink`` fp32 per query
    head; ``masked_lse_inf`` per batch whether a fully masked row's lse is +inf
    (IsExistInvalidRows); ``zero_masked_rows`` innerPrecise's row-invalid correction.
    """
    if rope is not None:
        q = np.concatenate([q, rope.query.astype(q.dtype, copy=False)], axis=-1)
        k = np.concatenate([k, rope.key.astype(k.dtype, copy=False)], axis=-1)
    lse_out = np.full(q.shape[:3], lse_unseen, np.float32) if lse else None
    stats = pfa.RowStats(
        sink=None if sink is None else np.asarray(sink, np.float32),
        lse=lse_out,
        masked_lse_inf=tuple(bool(x) for x in masked_lse_inf),
    )
    out = pfa.prompt_flash_attention(
        q,
        k,
        v,
        scale=scale,
        bands=bands,
        act_q=act_q,
        act_kv=act_kv,
        mask=mask,
        precision=FIA_V3,
        kv_block=tiling.kv_block,
        pse=pse,
        row_invalid=zero_masked_rows,
        stats=stats,
    )
    return out, lse_out


INT4_PER_INT32 = 8


def unpack_int4(words: np.ndarray) -> np.ndarray:
    """INT32 words holding eight INT4 values each as int8 values in [-8, 7], the last axis x 8.
    Element 2i of a byte sits in its low 4 bits (little-endian words): CANN's INT4 packing as
    the 8.5 source leaves it (TensorPreProcess only re-types the tensor), an assumption here."""
    data = np.ascontiguousarray(words).view(np.uint8)
    shape = (*words.shape[:-1], words.shape[-1] * INT4_PER_INT32)  # (explicit: an empty key has no -1)
    nibbles = np.stack([data & 0x0F, data >> 4], axis=-1).reshape(shape).astype(np.int8)
    return np.where(nibbles > 7, nibbles - 16, nibbles).astype(np.int8)
