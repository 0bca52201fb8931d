"""PromptFlashAttentionV3 sparseMode 20-22: the pseShift as the base-API kernels' mask.

`prompt_flash_attention_tiling.cpp` CheckBaseApiPse (after the layout and actual-length rules of
CheckBaseApiOptionalInput) checks it, then SetBaseApiPseInfo sets the kernels' maskType and strides:
- sparseMode 20 sets no maskType, 21 sets it (NORM) for a 4-D pse only, 22 (ALIBI) always; the
  kernels (`prompt_flash_attention_base_api.h`, `…_base_mla(_high_precision).h`) add the mask only
  when maskType is set, so a pse in mode 20, or a 2-D/3-D one in mode 21, is checked and then unused;
- the kernels read element (b, n, i, j) of the mask at b*maskStride*S + n*headStride*S + i*S + j of
  the flat pse, S being the longest query length (maxSeqLen), whatever the pse's own shape;
- the mask is added after the scale: in fp32 by the high-precision and bf16 kernels, in half by the
  fp16 high-performance ones (the shared pse add and its rounding; pfa_mla_half for D > 256).
isTriuMask is never set on this path, so the long-sequence rules do not apply, and the kernels fix
alibiCompressOffset at 0, so a compressed alibi pse passes its own shape rule and is read as above.
"""

from dataclasses import dataclass

import numpy as np

from aclnn_emu import status
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.opdef.gaps import Gaps
from ..common import BF16, F16, I8, dtype_name as name, tiling
from .entry import V3

NO_MASK, NORM, ALIBI = 20, 21, 22  # SPARSE_MODE_NONE / _NORM / _ALIBI of the A2/A3 tiling
LONG_SEQ_LEN, LONG_SEQ_ALIBI_LEN = 128, 256
UINT32 = 1 << 32

REFUSED = Gaps(
    V3,
    "refused",
    {"pse_read": "a base-API mask read past the pseShift (the kernels read it at strides the tiling sets)"},
    code=status.ACLNN_ERR_INNER_NULLPTR,
)


@dataclass(frozen=True)
class Strides:
    """What SetBaseApiPseInfo leaves the kernels: the batch and head strides, in rows of maxSeqLen."""

    batch: int
    head: int


def check(a, pse, mla: bool, batch: int, max_q: int, max_kv: int) -> Strides | None:
    """CheckBaseApiPse then SetBaseApiPseInfo; returns the strides of a mask the kernels add, or None."""
    mode = a.sparseMode
    if pse is None:
        if mode != NO_MASK:
            tiling("base_api.mask_null", "when mask is nullptr, sparseMode should be 20.")
        return None
    if mla and mode >= ALIBI:
        tiling("base_api.mla_mask", "MLA not support lookahead, alibi, swa mask")
    if mode < NORM:
        return None
    heads = a.numHeads
    _check_basic(a, pse)
    if mode == NORM:
        _shape(pse, (max_q, max_kv), "norm")
        _shape(pse, (batch, max_q, max_kv), "norm")
    else:
        _check_alibi(pse, heads, batch, max_q, max_kv)
    return _strides(pse, mode, heads, max_q, max_kv)


def _check_basic(a, pse):
    """CheckBaseApiMaskBasic (isLongSeq is never true: isTriuMask stays 0)."""
    if pse.dtype not in (F16, BF16):
        tiling("base_api.mask_dtype", f"Mask datatype invalid ({name(pse)}).")
    if pse.dtype != a.query.dtype and a.query.dtype != I8:
        tiling("base_api.mask_dtype_query", "Mask datatype not consist with query.")
    if pse.ndim < 2:
        tiling("base_api.mask_rank", "Mask dim num invalid, should be over 2.")
    if pse.ndim > 4:
        tiling("base_api.mask_rank", "Mask dim num invalid, should be less or equal than 4.")


def _check_alibi(pse, heads, batch, max_q, max_kv):
    """CheckBaseApiAlibiMask (compressHead is always false here)."""
    dims = pse.shape
    if pse.ndim == 2:
        _shape(pse, (LONG_SEQ_ALIBI_LEN, LONG_SEQ_ALIBI_LEN), "alibi dim 2")
        return
    if dims[-1] == LONG_SEQ_LEN and dims[-2] != LONG_SEQ_LEN:  # isAlibiCompress
        if pse.ndim != 3:
            tiling("base_api.mask_rank", "Alibi compress mask dim num invalid, should be 3.")
        _shape(pse, (heads, max_q, LONG_SEQ_LEN), "alibi longseq")
        return
    _shape(pse, (heads, max_q, max_kv), "alibi")
    _shape(pse, (batch, heads, max_q, max_kv), "alibi")


def _shape(pse, want, what):
    """CheckBaseApiMaskVal: applies to a pse of exactly len(want) dims; from the last dim on, the last two
    must be at least, the others equal (compared as uint32)."""
    if pse.ndim != len(want):
        return
    for i in reversed(range(pse.ndim)):
        need, have = want[i] % UINT32, pse.shape[i] % UINT32
        if i >= pse.ndim - 2 and have < need:
            tiling(
                "base_api.mask_shape",
                f"{what} mask dim {i} shape invalid, should be greater than {need}, actual is {have}",
            )
        if i < pse.ndim - 2 and have != need:
            tiling(
                "base_api.mask_shape", f"{what} mask dim {i} shape invalid, should be equal to {need}, actual is {have}"
            )


def _strides(pse, mode, heads, max_q, max_kv) -> Strides | None:
    """SetBaseApiPseInfo: SetBaseApiAlibiMaskInfo or SetBaseApiOtherMaskInfo."""
    dims = pse.shape
    if mode == ALIBI:
        if pse.ndim == 4:
            if dims[1] * dims[2] > UINT32 - 1:
                tiling("base_api.mask_shape", "Alibi mask shape value invalid.")
            return Strides(dims[1] * dims[2], max_q)
        if pse.ndim == 2 and max_q != LONG_SEQ_ALIBI_LEN:
            tiling("base_api.mask_shape", "Long seq alibi mask shape value invalid.")
        return Strides(0, max_q if pse.ndim == 3 else 0)
    if pse.ndim == 4:  # MASK_TYPE_NORM; 2-D and 3-D norm masks leave maskType unset
        return Strides(heads * max_kv % UINT32, max_q)
    return None


def reader(pse, strides: Strides | None, heads: int, max_q: int, q_rows, kv_rows):
    """A reader of the kernels' mask for each computed batch: a PseSource over [batches, N, rows, keys]
    gathered from the flat pse (None without one)."""
    if strides is None:
        return lambda: None
    rows = max((n for _, n in q_rows), default=0)
    keys = max((n for _, n in kv_rows), default=0)
    offsets = []
    for b, ((_, nq), (_, nk)) in enumerate(zip(q_rows, kv_rows)):
        i, j = np.arange(nq)[:, None], np.arange(nk)[None, :]
        offsets.append([b * strides.batch * max_q + n * strides.head * max_q + i * max_q + j for n in range(heads)])
    last = max((int(o.max()) for per_head in offsets for o in per_head if o.size), default=-1)
    if last >= pse.numel:
        REFUSED.refuse("pse_read", f"element {last} of a pseShift of {pse.numel} ({list(pse.shape)})")

    def read():
        flat = pse.read("pseShift").reshape(-1).astype(np.float32)
        gathered = np.zeros((len(offsets), heads, rows, keys), np.float32)
        for b, per_head in enumerate(offsets):
            for n, o in enumerate(per_head):
                gathered[b, n, : o.shape[0], : o.shape[1]] = flat[o]
        return PseSource(gathered, 0, rows, keys)

    return read
