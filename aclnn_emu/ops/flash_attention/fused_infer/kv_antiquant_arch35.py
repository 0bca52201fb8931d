"""FIA's separate key/value antiquant parameters on Ascend910_95's IFA route (IFATilingV2).

`IFATilingV2::ProcessAntiQuant` (incre_flash_attention_tiling_v2.cpp) runs inside ProcessOptionalTensors,
after ProcessQuant2, so `Split.split_check` is called at that point of the IncreFlashAttentionV4 arch35
tiling replay (incre/antiquant_arch35). In its order: the key/value pairs of scales and offsets, then
`KeyAndValueAntiQuantParamConsistencyCheck` on the offsets and on the scales (shapes; not for the
key-per-channel/value-per-token pair), equal modes but for that pair, then `CheckAntiQuantParam` on
the key's parameters (and the value's for the pair): the mode, the ranks, mode 6 only with FP4,
equal shapes, `CheckKVAntiQuantParaShapeLegal` for the scale and the offset (antiquantNum_ 1 in split
mode), the scale's dtype. Every failure is 561002. Their dtype rules that the kernel key
(opdef_table) already decides cannot fail here and are left out: key and value parameters of one
dtype outside the pair, an offset of its scale's dtype, modes 4/5 with an INT8 cache (an INT4 one is
refused before, `not_implemented.int4`).

The kernel (BaseApi::FlashAttentionScoreAntiquantKernel, flash_attention_score_antiquant_processor.h)
reads, for batch b, KV head n2 and cache position p (kv left padding included): per channel the
channel n2 * D + d (per tensor element 0, per tensor + head element n2: CopyAntiqParam); per token the row b * S' + p (S' the parameters' last axis, antiquantParaSeqSize_);
per token + head (b * N2 + n2) * sMax + p (taskParam.seqSize is the kernel's s2Size, sMax: not S').
Per-token FLOAT parameters are cast to the query dtype before the dequantisation
(kernels/flash_attention/antiquant_arch35.token_params). A 5-D (NZ) paged cache changes none of
this: LoadAntiquantParamsPerToken casts the rows' parameters to the query dtype in place (castTraitFp32,
nearest even) and AntiquantVFImplW8PerTokenNz / AntiquantVFImplW8Nz add and multiply row by row and
channel by channel in the query dtype as the ND functions do; only the copy of the cache differs.
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.kernels.flash_attention.antiquant_arch35 import token_params
from aclnn_emu.opdef.failures import fail

from ..incre.antiquant_arch35 import check_per_channel

PER_CHANNEL, PER_TOKEN, PER_TENSOR_HEAD, PER_TOKEN_HEAD, PER_TOKEN_PA, PER_TOKEN_HEAD_PA, PER_TOKEN_GROUP = range(7)
CHANNEL_TOKEN = (PER_CHANNEL, PER_TOKEN)
EMULATED = {(m, m) for m in range(PER_TOKEN_GROUP)} | {CHANNEL_TOKEN}
_FLOAT_MODES = (PER_TOKEN, PER_TOKEN_HEAD, PER_TOKEN_PA, PER_TOKEN_HEAD_PA)


class Split:
    """Stands in for IncreFlashAttentionV4's antiquantScale: `split_check` replays ProcessAntiQuant's split
    mode at its place in the tiling, `split_done` (after the tiling's last check) calls ``refuse`` for
    what the emulator does not run, `split_sides` gives the kernel each side's parameters."""

    def __init__(self, a, refuse):
        self.a, self.refuse = a, refuse
        self.dtype, self.format = a.query.dtype, Format.ACL_FORMAT_ND
        self.shape, self.ndim, self.numel, self.is_empty = (2,), 1, 2, False
        self.unsupported = False

    def split_check(self, batch: int, kv_heads: int, d: int, seq_size: int, pfa: bool, paged: bool) -> None:
        a = self.a
        ks, ko = a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional
        vs, vo = a.valueAntiquantScaleOptional, a.valueAntiquantOffsetOptional
        for present, missing, message in (
            (ks, vs, "ValueAntiquantScaleTensor is null, but keyAntiquantScaleTensor exists."),
            (vs, ks, "KeyAntiquantScaleTensor is null, but valueAntiquantScaleTensor exists."),
            (ko, vo, "ValueAntiquantOffsetTensor is null, but keyAntiquantOffsetTensor exists."),
            (vo, ko, "KeyAntiquantOffsetTensor is null, but valueAntiquantOffsetTensor exists."),
        ):
            if present is not None and missing is None:
                fail("antiquant_pair", message)
        if ks is None and ko is not None:
            fail("antiquant_pair", "KeyAntiquantScaleTensor is null, but keyAntiquantOffsetTensor exists.")
        modes = (a.keyAntiquantMode, a.valueAntiquantMode)
        pair = modes == CHANNEL_TOKEN  # kPerChnVPerTokFlag_ (an INT8 cache here)
        for key_t, value_t, name in ((ko, vo, "AntiquantOffset"), (ks, vs, "AntiquantScale")):
            if key_t is not None and value_t is not None and not pair:
                _consistent(key_t, value_t, name, modes)
        if modes[0] != modes[1] and not pair:
            fail(
                "antiquant_modes",
                "KeyAntiquantMode and valueAntiquantMode should be the same when keyAntiquantMode"
                f"({modes[0]}) isn't 0 and ValueAntiquantMode({modes[1]}) isn't 1.",
            )
        facts = _Facts(batch, kv_heads, d, seq_size, pfa, paged, a.query.dtype, a.key.items[0].dtype, modes[0])
        _param(facts, modes[0], ks, ko)
        if pair:
            _param(facts, modes[1], vs, vo)
        # a shared prefix never reaches these kernels (shared_prefix.ignored): the per-token positions stay
        self.unsupported = modes not in EMULATED

    def split_paged(self, total_blocks: int, block_size: int, kv_heads: int) -> None:
        """CheckKVAntiQuantShapePA at the end of ProcessBlockTable (modes 4, 5: the key's scale only):
        [blocks, blockSize] per token, [blocks, N2, blockSize] per token + head."""
        mode, scale = self.a.keyAntiquantMode, self.a.keyAntiquantScaleOptional
        if mode not in (PER_TOKEN_PA, PER_TOKEN_HEAD_PA):
            return
        want = (total_blocks, kv_heads, block_size) if mode == PER_TOKEN_HEAD_PA else (total_blocks, block_size)
        for axis, (got, expected) in enumerate(zip(scale.shape, want)):
            if got != expected:
                fail(
                    "antiquant_pa_shape",
                    f"The dimension {axis} of antiquant parameter should be {expected} instead of the current {got}.",
                )

    def split_done(self) -> None:
        """The tiling's checks all passed: refuse what the emulator does not run."""
        if self.unsupported:
            self.refuse()

    def split_sides(self, batch: int, kv_heads: int, d: int, seq_size: int, dtype):
        """((scale, offset) of the key, of the value), each a function (b, first position, count) ->
        arrays in ``dtype`` broadcasting against that batch's [N2, count, D] rows (offset None: none)."""
        a = self.a
        table = a.blockTableOptional
        pages = None if table is None else (np.asarray(table.read("blockTable")), a.blockSize)
        return tuple(
            _side(mode, getattr(a, f"{name}AntiquantScaleOptional"), getattr(a, f"{name}AntiquantOffsetOptional"),
                  name, batch, kv_heads, d, seq_size, dtype, pages)
            for name, mode in (("key", a.keyAntiquantMode), ("value", a.valueAntiquantMode))
        )  # fmt: skip


class _Facts:
    def __init__(self, batch, kv_heads, d, seq_size, pfa, paged, q_dtype, kv_dtype, mode):
        self.batch, self.kv_heads, self.d, self.seq_size = batch, kv_heads, d, seq_size
        self.pfa, self.paged, self.q_dtype, self.kv_dtype, self.mode = pfa, paged, q_dtype, kv_dtype, mode


def _consistent(key_t, value_t, name, modes):
    """KeyAndValueAntiQuantParamConsistencyCheck outside the key-per-channel/value-per-token pair."""
    if tuple(key_t.shape) != tuple(value_t.shape):
        fail(
            "antiquant_consistency",
            f"Key{name} and value{name} should have the same shape when keyAntiquantMode({modes[0]}) isn't 0 "
            f"and valueAntiquantMode({modes[1]}) isn't 1.",
        )


def _param(f, mode, scale, offset):
    """CheckAntiQuantParam(mode, scale, offset) on Ascend910_95."""
    if mode not in range(7):
        fail("antiquant_mode", f"AntiquantMode value:{mode} is invalid, it should be 0, 1, 2, 3, 4, 5 or 6.")
    if offset is not None and scale.ndim != offset.ndim:
        fail(
            "antiquant_rank_differ",
            f"Antiquant is enabled, but antiquant params have different layouts[scale: {scale.ndim}, "
            f"offset: {offset.ndim}].",
        )
    if mode == PER_TOKEN_GROUP:
        fail(
            "antiquant_group_dtype",
            "When antiquantMode of key/value is PER_TOKEN_GROUP(6), input key/value type should be fp4_e2m1 or "
            f"fp4_e1m2, but now is {f.kv_dtype.short}.",
        )
    if offset is not None and tuple(offset.shape) != tuple(scale.shape):
        fail("antiquant_shape_differ", "antiquantScaleTensor and antiquantOffsetTensor should have the same shape")
    for t in (scale, offset):
        if t is not None:
            _shape_legal(f, mode, tuple(t.shape))
    if mode in (PER_CHANNEL, PER_TENSOR_HEAD) and scale.dtype != f.q_dtype:
        fail(
            "antiquant_scale_dtype",
            f"Datatype({scale.dtype.short}) of antiquant scale is illegal, it should be same with input "
            f"qtype({f.q_dtype.short}) when per-tensor mode or per-channel mode or per-tensor-head mode.",
        )
    if mode in _FLOAT_MODES and scale.dtype != DataType.ACL_FLOAT:
        fail(
            "antiquant_scale_dtype",
            "Per-token/per-token-head/per-token-pa/per-token-head-pa mode is enabled, datatype of antiquant "
            f"scale({scale.dtype.short}) should be float32.",
        )


def _shape_legal(f, mode, shape):
    """CheckKVAntiQuantParaShapeLegal in split mode (antiquantNum_ 1)."""
    b, s = f.batch, f.seq_size
    if mode == PER_CHANNEL:
        _per_channel(f, shape)
    elif mode == PER_TOKEN:
        if len(shape) not in (2, 3):
            fail(
                "antiquant_per_token_rank",
                f"The dimension[{len(shape)}] of antiquant is illegal, it should be 2 or 3 when split mode of "
                "per_token mode, or should be 3 when not split mode of per_token mode.",
            )
        lead = (1, b) if len(shape) == 3 else (b,)
        if shape[:-1] != lead or shape[-1] < s:
            fail(
                "antiquant_per_token",
                f"The shape of antiquant parameter{list(shape)} is not expected. Expect{list(lead) + [s]} when "
                f"per_token mode. And antiquant seq size {shape[-1]} should be equal to or greater than {s}.",
            )
    elif mode in (PER_TOKEN_HEAD, PER_TENSOR_HEAD):
        _per_head(f, shape)
    elif mode in (PER_TOKEN_PA, PER_TOKEN_HEAD_PA):
        rank = 2 if mode == PER_TOKEN_PA else 3
        if len(shape) != rank:
            fail(
                "antiquant_pa_rank",
                f"The dimension of antiquant should be {rank} instead of the current {len(shape)}, when antiquant "
                f"mode is {mode}.",
            )
        if not f.paged:
            fail(
                "antiquant_pa_unpaged",
                "KeyAntiquantMode/valueAntiquantMode 4 or 5 use page attention to manage scale/offset, must to "
                "enble page attention.",
            )


def _per_channel(f, shape):
    """Mode 0: [1] per tensor (rank 1, the PFA mode also [H]), else CheckKVAntiQuantPerChannel: with a
    query S of 1 [1, N, 1, D], [1, 1, N, D], [1, N, D], [1, H]; with S > 1 (split) also [N, 1, D], [N, D],
    [H], and not [1, 1, N, D]."""
    n, d = f.kv_heads, f.d
    if len(shape) == 1 and shape == (1,):
        return
    if len(shape) == 1 and not f.pfa:
        fail(
            "antiquant_per_tensor",
            f"The shape of antiquant parameter[{shape[0]}] is not expected. Expect[1] when per-tensor mode.",
        )
    if len(shape) == 1 and shape != (n * d,):
        fail(
            "antiquant_per_tensor",
            f"The shape of antiquant parameter[{shape[0]}] is not expected.Expect[1] when per-tensor mode or "
            f"expect[{n * d}] when per-channel mode.",
        )
    if len(shape) > 1:
        check_per_channel(shape, 1, n, d, f.pfa, split=True)


def _per_head(f, shape):
    """CheckKVAntiQuantPerHead by the key's mode (antiquantMode_): [B, N, >= sMax] per token + head, [N]
    per tensor + head."""
    b, n, s = f.batch, f.kv_heads, f.seq_size
    if f.mode == PER_TOKEN_HEAD:
        if len(shape) != 3:
            fail(
                "antiquant_per_token_head",
                f"The dimension of antiquant should be 3 instead of the current {len(shape)}, when per_token_head "
                "mode.",
            )
        for axis, want, what in ((0, b, "1st"), (1, n, "2nd")):
            if shape[axis] != want:
                fail(
                    "antiquant_per_token_head",
                    f"The {what} dimension of antiquant should be {want} instead of the current {shape[axis]}.",
                )
        if shape[2] < s:
            fail(
                "antiquant_per_token_head",
                f"The 3rd dimension of antiquant should be greater than or equal to {s} instead of the current "
                f"{shape[2]}.",
            )
        return
    if len(shape) != 1:
        fail(
            "antiquant_per_tensor_head",
            f"The dimension of antiquant should be 1 instead of the current {len(shape)}, when per_tensor_head mode.",
        )
    if shape != (n,):
        fail(
            "antiquant_per_tensor_head",
            f"The shape of antiquant parameter[{shape[0]}] is not expected. Expect[{n}] When per_tensor_head mode.",
        )


def _side(mode, scale_t, offset_t, name, batch, kv_heads, d, seq_size, dtype, pages):
    """One side's (scale, offset) function as the kernel addresses its parameters; ``pages`` the
    (block table, block size) of a paged cache."""

    def values(t, what):
        return None if t is None else np.asarray(t.read(f"{name}{what}")).reshape(-1)

    scale, offset = values(scale_t, "AntiquantScale"), values(offset_t, "AntiquantOffset")
    if mode in (PER_TOKEN_PA, PER_TOKEN_HEAD_PA):
        heads = kv_heads if mode == PER_TOKEN_HEAD_PA else 1
        return _paged_rows(*(None if x is None else token_params(x, dtype) for x in (scale, offset)), heads, *pages)
    if mode in (PER_CHANNEL, PER_TENSOR_HEAD):
        shape = (1, 1, 1) if scale.size == 1 else (kv_heads, 1, d if mode == PER_CHANNEL else 1)
        scale, offset = (None if x is None else x.astype(dtype).reshape(shape) for x in (scale, offset))
        return lambda b, first, count: (scale, offset)
    if mode == PER_TOKEN:  # row b * S' + p, one row for every KV head
        width = scale_t.shape[-1]
        shape = (batch, 1, width)
    else:  # per token + head: (b * N2 + n2) * sMax + p
        width = seq_size
        shape = (batch, kv_heads, width)
    size = int(np.prod(shape))
    scale, offset = (None if x is None else token_params(x[:size], dtype).reshape(shape) for x in (scale, offset))

    def rows(b, first, count):
        cut = (b, slice(None), slice(first, first + count), None)
        return scale[cut], None if offset is None else offset[cut]

    return rows


def _paged_rows(scale, offset, heads, table, block_size):
    """Modes 4/5 (CopyAntiquantParamsPageAttention): position p of batch b at element
    (table[b, p // blockSize] · heads + n2) · blockSize + p % blockSize of the flat parameters ([blocks,
    blockSize] or [blocks, N2, blockSize]); a position outside them reads 0 here."""

    def rows(b, first, count):
        pos = np.arange(first, first + count)
        ids = table[b, pos // block_size].astype(np.int64)
        flat = (ids[None, :] * heads + np.arange(heads)[:, None]) * block_size + pos % block_size
        return tuple(None if x is None else _gather(x, flat)[..., None] for x in (scale, offset))

    return rows


def _gather(x, flat):
    inside = (flat >= 0) & (flat < x.size)
    return np.where(inside, x[np.where(inside, flat, 0)], np.zeros((), x.dtype))
