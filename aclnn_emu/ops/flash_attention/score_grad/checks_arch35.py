"""aclnnFlashAttentionScoreGradV2 on Ascend910_95: the arch35 tiling's checks, in the source's order."""

import numpy as np
from aclnn_emu.dtypes import SIZE, DataType
from aclnn_emu.kernels.flash_attention.dropout import INTERLEAVE_ORDER
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.generated import attr_int32
from .common import (
    INT32_MAX,
    UNESTABLISHED,
    _Shape,
    _check_atten_mask_info,
    _check_atten_mask_shape,
    _check_drop_mask,
    _check_prefix,
    _check_pse,
    _check_softmax_shapes,
    _names,
    _present,
    seeds,
)
from ..common import QUANT8
from .entry import ARCH35

GRAD_SHAPES = "fag.arch35_grad_shapes"
EXACT_MASK = "fag.arch35_exact_mask"
SINK = "fag.arch35_sink"
ROPE_D64 = "fag.arch35_rope_d64"
TND_EOD = "fag.arch35_tnd_eod"


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
    if env.version.has(GRAD_SHAPES):
        check_grad_shapes_arch35(a, s, env)
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
    if env.version.has(SINK):
        check_sink_arch35(a, s.n1, env)
    loose = not env.version.has(EXACT_MASK) or _b_or_bn_template_capable(a, s)
    _check_atten_mask_shape(a, s, mode, arch35=loose)
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
            seed, offset = seeds(a)
            env.warn(
                f"portability: keepProb {keep:g} with no dropMask: on {ARCH35} the kernel generates the keep-mask "
                f"(Philox-4x32-7 of dropmask.h, seed {seed}, offset {offset}, as the entry point passes "
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


def check_grad_shapes_arch35(a, s: _Shape, env):
    """GetShapeAttrsInfo from 9.1.0 (versions.RULES "fag.arch35_grad_shapes"): dy shaped like attentionIn, then per
    layout dy's head count, dy against query and value against key before the head dim, value's D against dy's."""
    q, k, v, dy = a.query.shape, a.keyIn.shape, a.value.shape, a.dy.shape
    where = env.version.source(GRAD_SHAPES)
    if dy != a.attentionInOptional.shape:
        fail("tiling.dy_attention_in", f"The shapes of dy and attentionInOptional must be the same ({where})")
    if s.layout in ("BSH", "SBH"):
        lead, heads_ok, dy_d = 2, dy[2] % a.headNum == 0, dy[2] // a.headNum
    else:  # strcmp: any other layout is read as BSND
        n_axis = 2 if s.layout not in ("BNSD", "TND") else 1
        lead, heads_ok, dy_d = len(q) - 1, dy[n_axis] == a.headNum, dy[-1]
    if not heads_ok:
        fail("tiling.dy_heads", f"dy {list(dy)} does not hold headNum {a.headNum} heads ({where})")
    if q[:lead] != dy[:lead] or k[:lead] != v[:lead]:
        fail("tiling.dy_value_lead", f"dy {list(dy)} / value {list(v)} unlike query / keyIn but for D ({where})")
    if s.vd != dy_d:
        fail("tiling.dy_value_d", f"D axis of dy ({dy_d}) must be equal to d axis of value ({s.vd}) ({where})")


def check_sink_arch35(a, heads: int, env):
    """ProcessSinkInfo from 9.1.0 (versions.RULES "fag.arch35_sink"): a [N1] FLOAT sink, a [N1] dsinkOut, an
    fp16/bf16 query."""
    sink, dsink = _present(getattr(a, "sinkInOptional", None)), getattr(a, "dsinkOut", None)
    if sink is None:
        return
    where = env.version.source(SINK)
    for name, tensor in (("sinkInOptional", sink), ("dsinkOut", dsink)):
        if tensor is not None and tuple(tensor.shape) != (heads,):
            fail(f"tiling.{name}_shape", f"The shape of {name} must be [{heads}], got {list(tensor.shape)} ({where})")
    if sink.dtype != DataType.ACL_FLOAT:
        fail("tiling.sink_dtype", f"The dtype of sinkInOptional must be FLOAT32, got {sink.dtype.name} ({where})")
    if a.query.dtype not in (DataType.ACL_FLOAT16, DataType.ACL_BF16):
        fail("tiling.sink_query", f"a sink needs an FLOAT16 or BFLOAT16 query, got {a.query.dtype.name} ({where})")


def _align(value: int, to: int) -> int:
    return -(-value // to) * to


def _b_or_bn_template_capable(a, s: _Shape) -> bool:
    """CheckAttenMaskShape's isBCaple / isBNCaple (9.1.0): a non-FLOAT query, D = Dv, pseType 1, and S1 x S2 small
    enough for the B template (N1 x S1 x S2, 16-aligned, within 64 x 128, three quarters of it from S1 4 on) or for
    the BN one (G 1, S1 rows of the 32-byte-aligned S2 within 1536 bytes, all within 128 KiB)."""
    dtype = a.query.dtype
    if dtype == DataType.ACL_FLOAT or s.d != s.vd or a.pseType != 1:
        return False
    block = 64 * 128 if s.s1 < 4 else 64 * 128 // 4 * 3
    if s.n1 * _align(s.s1, 16) * _align(s.s2, 16) <= block:
        return True
    size = SIZE[dtype]
    s2_align = _align(s.s2 * size, 32) // size
    vec = _align(s2_align * size * (2 if dtype == DataType.ACL_BF16 else 1), 32)
    rows = s.s1 * vec
    return s.n1 == s.n2 and 0 < rows and vec <= 1536 and rows <= 64 * 128 * 4


def check_tnd_arch35(a, s: _Shape, env):
    """The TND branch of GetShapeAttrsInfo from 9.0.0: once a cumulative length decreases every later one must be 0
    (EOD); then, from 9.1.0, the dy and value shapes; then a rope head dim of 64."""
    cu_q, cu_kv = list(a.actualSeqQLenOptional), list(a.actualSeqKvLenOptional)  # of one length (check_lengths)
    eod = False
    for i in range(1, len(cu_q) if env.version.has(TND_EOD) else 0):
        eod = eod or cu_q[i] < cu_q[i - 1] or cu_kv[i] < cu_kv[i - 1]
        if eod and cu_q[i] and cu_kv[i]:
            fail(
                "tiling.tnd_eod",
                f"In EOD mode, the last several actualSeq values must all be 0: {cu_q}, {cu_kv} "
                f"({env.version.source(TND_EOD)})",
            )
    if env.version.has(GRAD_SHAPES):
        check_grad_shapes_arch35(a, s, env)
    ropes = [getattr(a, name, None) for name in ("queryRope", "keyInRope")]
    if env.version.has(ROPE_D64) and None not in ropes and {t.shape[-1] for t in ropes} != {64}:
        fail(
            "tiling.rope_d64",
            f"D of queryRopeOptional and keyRopeOptional must be equal to 64, got {[t.shape[-1] for t in ropes]} "
            f"({env.version.source(ROPE_D64)})",
        )
