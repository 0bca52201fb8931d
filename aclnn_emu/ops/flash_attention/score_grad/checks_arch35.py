"""aclnnFlashAttentionScoreGradV2 on Ascend910_95: the arch35 tiling's checks, in the source's order."""

import numpy as np
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.dropout import INTERLEAVE_ORDER
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.generated import attr_int32
from .common import (
    INT32_MAX,
    UNESTABLISHED,
    V2_OFFSET,
    V2_SEED,
    _Shape,
    _check_atten_mask_info,
    _check_atten_mask_shape,
    _check_drop_mask,
    _check_prefix,
    _check_pse,
    _check_softmax_shapes,
    _names,
    _present,
)
from ..common import QUANT8
from .entry import ARCH35


def _check_shape_attrs_arch35(a, s: _Shape, env):
    """ARCH35: ..._regbase.cpp GetShapeAttrsInfo and ProcessOptionalInput, in their order. Every
    failure is 161001, as on A2/A3; what differs is what they accept (docs/divergences)."""
    # kernel selection: the ascend910_95 OpDef registers FLOAT softmax buffers and attentionIn of the query's dtype
    # (FLOAT16 or BF16 with an 8-bit query)
    smax, ssum, out = a.softmaxMaxOptional, a.softmaxSumOptional, a.attentionInOptional
    outs = (DataType.ACL_FLOAT16, DataType.ACL_BF16) if a.query.dtype in QUANT8 else (a.query.dtype,)
    if smax.dtype != DataType.ACL_FLOAT or ssum.dtype != DataType.ACL_FLOAT or out.dtype not in outs:
        fail(
            "dtype.softmax_attention_in",
            f"softmaxMax/softmaxSum/attentionIn dtypes {smax.dtype.name}/{ssum.dtype.name}/"
            f"{out.dtype.name} have no FAG kernel; expected FLOAT/FLOAT/{_names(outs)}",
        )
    if s.layout == "TND":
        fail(
            "tiling.tnd",
            "actualSeqQlenTensor or actualSeqKvlenTensor is nullptr: inputLayout TND needs "
            "actual sequence lengths, which aclnnFlashAttentionScoreGradV2 cannot pass",
        )
    keep = float(np.float32(a.keepProb))
    _check_drop_mask_arch35(a, s, keep, env)
    mode = attr_int32(a.sparseMode) & 0xFFFFFFFF
    if mode > 6:  # CheckSparseModeValue
        fail(
            "tiling.sparse_mode",
            f"Not support sparse mode {mode} (got {a.sparseMode}); expected 0-6 with layout {s.layout}",
        )
    _check_atten_mask_info(a, s)
    tokens = _arch35_tokens(a, s, mode)
    if a.pseType < 0 or a.pseType >= 4:
        fail("tiling.pse_type", f"FAG pseType {a.pseType} is invalid; expected 0-3")
    if _present(a.pseShiftOptional) is not None:
        _check_pse(a, s, tokens)
    if mode == 6:
        _check_prefix(a, s)
    _check_atten_mask_shape(a, s, mode, arch35=True)
    if 0 in (s.b, s.n1, s.s1, s.d):
        fail("tiling.zero", f"input shape error, got 0 in bnsd: b={s.b} n1={s.n1} s1={s.s1} d={s.d}")
    _check_softmax_shapes(a, s)
    if a.attentionInOptional.ndim != a.query.ndim:
        fail(
            "tiling.attention_in_rank",
            f"The dimnum of attentionIn {a.attentionInOptional.ndim} should be equal to query {a.query.ndim}",
        )
    _refuse_unestablished_arch35(a, keep)
    return mode


def _arch35_tokens(a, s, mode):
    """ARCH35 ProcessTokensInfo: the tokens as int64, corrected per mode, reset without a mask, and the
    pad-scene check of modes 0 and 4. Returns the corrected (preTokens, nextTokens)."""
    pre, nxt = a.preTokens, a.nextTokens
    if mode in (2, 3):
        pre, nxt = INT32_MAX, 0
    if mode in (3, 4):
        pre, nxt = pre + s.s1 - s.s2, nxt - s.s1 + s.s2
    if mode == 1 or _present(a.attenMaskOptional) is None:
        pre, nxt = INT32_MAX, INT32_MAX
    if mode in (0, 4) and (-pre > s.s2 or -nxt > s.s1 or _wrap64(pre + nxt) < 0):
        fail(
            "tiling.pad_tokens",
            f"pre_token and next_token is invalid in the pad scene, got s1 {s.s1}, s2 {s.s2}, "
            f"pre_token {pre}, next_token {nxt}",
        )
    return pre, nxt


def _wrap64(value: int) -> int:
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _refuse_unestablished_arch35(a, keep):
    """Calls the ARCH35 tiling accepts but whose kernel behaviour the source does not settle."""
    if a.query.dtype in QUANT8:
        UNESTABLISHED.refuse("quant_query", f"query dtype {a.query.dtype.name}")
    if keep <= 0:
        UNESTABLISHED.refuse("keep_prob", f"keepProb {keep:g}")
    for name, tensor, like in (
        ("dy", a.dy, a.query),
        ("attentionInOptional", a.attentionInOptional, a.query),
        ("value", a.value, a.keyIn),
    ):
        if tuple(tensor.shape[:-1]) != tuple(like.shape[:-1]) or tensor.shape[-1] > like.shape[-1]:
            UNESTABLISHED.refuse("grad_shape", f"{name} shape {list(tensor.shape)} against {list(like.shape)}")


def _check_drop_mask_arch35(a, s, keep, env):
    """ARCH35 ProcessDropoutInfo (arch35 tiling): a dropMask with keepProb 1 is an error; with
    keepProb < 1 and no dropMask the kernel generates the keep-mask itself (dropMaskOuter false)."""
    drop = _present(a.dropMaskOptional)
    if drop is None:
        if keep < 1:
            env.warn(
                f"portability: keepProb {keep:g} with no dropMask: on {ARCH35} the kernel generates the keep-mask "
                f"(Philox-4x32-7 of dropmask.h, seed {V2_SEED}, offset {V2_OFFSET}, as the V2 interface passes "
                f"them); the emulator follows dropmask.h but infers {INTERLEAVE_ORDER}, so the mask may differ "
                "bit for bit from the device's (its keep rate does not)"
            )
        return
    if keep >= 1:
        fail(
            "tiling.drop_keep_prob",
            "DropMask parameter is invalid, please check keepProb value: a dropMask is given but "
            f"keepProb is {keep:g} (the {ARCH35} tiling, ProcessDropoutInfo)",
        )
    _check_drop_mask(a, s, keep)
