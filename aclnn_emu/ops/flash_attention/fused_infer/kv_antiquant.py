"""The A2/A3 IFA tiling's checks of FIA's separate key/value antiquant parameters
(`incre_flash_attention_tiling.cpp` IFATiling::ProcessAntiQuant, right after ProcessQuant), in its
order. Every failure is 561002; what passes and the kernels do not emulate stays
`not_implemented.kv_antiquant` (delegate)."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_uint32, shape_dim

from .failure import tiling
from .layouts import key_rows, kv_heads_of, query_axes, split

PER_CHANNEL, PER_TOKEN = 0, 1
CHANNEL_TOKEN = (PER_CHANNEL, PER_TOKEN)  # the one mixed pair, the tiling's PER_CHANNEL_TOKEN_MODE:
CHANNEL_TOKEN_MODE = 2
MODES = range(6)  # CheckKVAntiQuantMode: per channel, per token, per tensor+head, per token+head, their PA forms
PAGED_PARAMS = (4, 5)  # per token (+head) with the parameters in the paged cache's blocks
PER_HEAD = (2, 3, 5)
_MAPPED = {0: PER_CHANNEL, 1: PER_TOKEN, 2: PER_CHANNEL, 3: PER_TOKEN, 4: PER_TOKEN, 5: PER_TOKEN}


def _modes(a) -> tuple[int, int]:
    return a.keyAntiquantMode, a.valueAntiquantMode


def check_ifa(a) -> None:
    """ProcessAntiQuant: no antiquant tensor without an INT8/INT4 key beside a float query (the
    full-quant INT8 query aside); then CheckKeyAndValueAntiquantScaleOffset,
    CheckKeyAndValueAntiquantOffset, CheckKvAntiquant4SplitMode and ProcessAntiQuantMode
    (CheckAntiQuantParamKeyType / ValueType, CheckKVAntiQuantMode, then CheckAntiQuantParam on the
    key's scale and offset). Its offset-dtype rules (CheckAntiquantOffsetType, the key's and value's
    offsets alike) cannot fail here: the kernel key (opdef_table) registers no other combination."""
    key = a.key.items[0]
    antiquant = a.query.dtype != key.dtype and (key.dtype in (DataType.ACL_INT8, DataType.ACL_INT4) or a.int4)
    given = (
        a.antiquantScaleOptional, a.antiquantOffsetOptional, a.keyAntiquantScaleOptional,
        a.keyAntiquantOffsetOptional, a.valueAntiquantScaleOptional, a.valueAntiquantOffsetOptional,
        a.keyRopeAntiquantScaleOptional,
    )  # fmt: skip
    if not antiquant and any(t is not None for t in given) and a.query.dtype != DataType.ACL_INT8:
        raise tiling("ifa.antiquant_unenabled", "KV antiquant is unenabled, but antiquant scale/offset exist")
    if not antiquant:
        return
    _pairs(a)
    split = _same_shapes(a)
    if split:
        _split_modes(a, key)


def _pairs(a):
    """CheckKeyAndValueAntiquantScaleOffset."""
    ks, ko = a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional
    vs, vo = a.valueAntiquantScaleOptional, a.valueAntiquantOffsetOptional
    if ks is not None and vs is None:
        raise tiling("ifa.value_scale_missing", "the value's dequant scale is null, but the key's dequant scale exist")
    if vs is not None and ks is None:
        raise tiling("ifa.key_scale_missing", "the key's dequant scale is null, but the value's dequant scale exist")
    if ko is not None and vo is None:
        raise tiling("ifa.value_offset_missing", "value's dequant offset is null, but the key's dequant offset exist")
    if vo is not None and ko is None:
        raise tiling("ifa.key_offset_missing", "the key's dequant offset is null, but the value's dequant offset exist")
    if ks is None and ko is not None:
        raise tiling("ifa.key_offset_alone", "the key's dequant scale is null, but the key's dequant offset exist")
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None
    if rope and ks is not None and a.keyRopeAntiquantScaleOptional is None:
        raise tiling("ifa.key_rope_scale_missing", "the key_rope's dequant scale is null, but the key's one exists")


def _same_shapes(a) -> bool:
    """CheckKeyAndValueAntiquantOffset: outside the (0, 1) pair the key's and the value's offsets
    share a dtype and a shape, and so do their scales; both scales given is the split mode."""
    mixed = _modes(a) == CHANNEL_TOKEN
    ko, vo = a.keyAntiquantOffsetOptional, a.valueAntiquantOffsetOptional
    if ko is not None and vo is not None and not mixed and tuple(ko.shape) != tuple(vo.shape):
        raise tiling("ifa.offset_shapes", "the key's and the value's dequant offset should have the same shape")
    ks, vs = a.keyAntiquantScaleOptional, a.valueAntiquantScaleOptional
    if ks is None or vs is None:
        return False
    if not mixed and tuple(ks.shape) != tuple(vs.shape):
        raise tiling("ifa.scale_shapes", "the key's and the value's dequant scale should have the same shape")
    return True


def _split_modes(a, key):
    """CheckKvAntiquant4SplitMode, then ProcessAntiQuantMode."""
    k_mode, v_mode = _modes(a)
    if k_mode != v_mode and (k_mode, v_mode) != CHANNEL_TOKEN:
        raise tiling("ifa.modes_differ", "the key's quant mode and the value's quant mode should be the same")
    if (k_mode, v_mode) == CHANNEL_TOKEN:
        if a.keyAntiquantScaleOptional.dtype != a.query.dtype:
            raise tiling(
                "ifa.key_scale_dtype", "illegal datatype of antiquant scale, it should be same with input qtype"
            )
        if a.valueAntiquantScaleOptional.dtype != DataType.ACL_FLOAT:
            raise tiling(
                "ifa.value_scale_dtype", "per-token mode is enabled, datatype of antiquant scale should be float32"
            )
        _key_params(a, key, CHANNEL_TOKEN)
        return
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None
    if key.ndim == 5 and not rope and k_mode not in (PER_CHANNEL, PER_TOKEN):
        raise tiling("ifa.nz_mode", f"antiquantMode value[{k_mode}] should be 0 or 1 in GQA KV NZ")
    if k_mode not in MODES:
        raise tiling("ifa.mode", f"antiquantMode value:{k_mode} is invalid, it should be 0, 1, 2, 3, 4 or 5")
    if k_mode in PAGED_PARAMS and a.blockTableOptional is None:
        raise tiling("ifa.mode_paged", f"the key/value's quant mode {k_mode} must be used in page attention scene")
    _key_params(a, key, k_mode)


def _key_params(a, key, mode):
    """CheckAntiQuantParam on the key's scale and offset (antiquantNum_ 1 in split mode), with the
    mode as CheckKVAntiQuantMode maps it (2 per channel + head, 3-5 per token, + head, + paged
    parameters; the pair is PER_CHANNEL_TOKEN_MODE): their ranks alike, CheckKVAntiQuantParaShapeLegal
    for each (modes 4 and 5: CheckKVAntiQuantParamsInPagedAttention, which ProcessBlockTable runs
    a little later), then the scale's dtype. Not replayed: a 5-D (NZ) key's shapes
    (CheckGqaAntiQuantPerChannel)."""
    mapped = CHANNEL_TOKEN_MODE if mode == CHANNEL_TOKEN else _MAPPED[mode]
    scale, offset = a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional
    if offset is not None and scale.ndim != offset.ndim:
        raise tiling(
            "ifa.param_ranks",
            f"KV antiquant is enabled, but antiquant params have different layouts[scale: {scale.ndim}, "
            f"offset: {offset.ndim}].",
        )
    base = split(a.inputLayout)[0]
    if mode in PAGED_PARAMS:
        _paged_params(a, key, mode)
    elif key.ndim != 5 and base in ("BSH", "BSND", "BNSD") and _query_fits(a, base):
        axes = query_axes(a.query.shape, base, attr_uint32(a.numHeads))
        dims = (axes.b, key_rows(a, base), kv_heads_of(a), axes.d)
        for t in (scale, offset):
            if t is not None:
                _shape(tuple(t.shape), mapped, mode in PER_HEAD, *dims)
    if mapped == PER_CHANNEL and scale.dtype != a.query.dtype:
        raise tiling("ifa.key_scale_dtype", "illegal datatype of antiquant scale, it should be same with input qtype")
    if mapped == PER_TOKEN and scale.dtype != DataType.ACL_FLOAT:
        raise tiling("ifa.key_scale_dtype", "per-token mode is enabled, datatype of antiquant scale should be float32")


def _query_fits(a, base) -> bool:
    """The query's rank is its layout's (else the IFA tiling's earlier shape checks, replayed after
    these by IncreFlashAttentionV4's, refuse the call) and numHeads is not 0."""
    return a.query.ndim == (3 if base == "BSH" else 4) and attr_uint32(a.numHeads) > 0


def _paged_params(a, key, mode):
    """CheckKVAntiQuantParamsShapeInPagedAttention on the key's scale, then its offset: [blocks,
    N, blockSize] per token + head (mode 5), [blocks, blockSize] per token (mode 4), blocks the
    cache's first axis; only those axes are read (gert::Shape gives 0 past the rank)."""
    blocks = shape_dim(key.shape, 0)
    want = (blocks, kv_heads_of(a), a.blockSize) if mode == 5 else (blocks, a.blockSize)
    for t in (a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional):
        for axis, expected in enumerate(() if t is None else want):
            if shape_dim(t.shape, axis) != expected:
                raise tiling(
                    "ifa.paged_params",
                    f"Dim {axis} of antiquant parameter should be {expected} instead of the current "
                    f"{shape_dim(t.shape, axis)}",
                )


def _shape(shape, mode, per_head, b, s, n, d):
    """CheckKVAntiQuantParaShapeLegal: per token + head [B, N, >= S], per tensor + head [N]
    (CheckKVAntiQuantPerHead); per token [1, B, >= S] or [B, >= S] (CheckKVAntiQuantPerToken); else
    per tensor [1] or per channel [1, N, 1, D], [1, 1, N, D], [1, N, D], [1, N * D]
    (CheckKVAntiQuantPerChannel); S is the key's (a paged cache's capacity)."""
    if per_head:
        _per_head_shape(shape, mode, b, s, n)
    elif mode == PER_TOKEN:
        _per_token_shape(shape, b, s)
    else:
        _per_channel_shape(shape, n, d)


def _per_head_shape(shape, mode, b, s, n):
    if mode != PER_TOKEN:
        if shape != (n,):
            raise tiling(
                "ifa.per_tensor_head", f"The shape of antiquant parameter{list(shape)} is not expected. Expect[{n}]"
            )
        return
    if len(shape) != 3:
        raise tiling("ifa.per_token_head_rank", f"The dim of antiquant should be 3 instead of the current {len(shape)}")
    for axis, (got, want) in enumerate(zip(shape[:2], (b, n))):
        if got != want:
            raise tiling("ifa.per_token_head", f"dim {axis} of antiquant should be {want} instead of the current {got}")
    if shape[2] < s:
        raise tiling(
            "ifa.per_token_head_s", f"The 3rd dim of antiquant should be >= {s} instead of the current {shape[2]}"
        )


def _per_token_shape(shape, b, s):
    if len(shape) == 3 and shape[0] != 1:
        raise tiling("ifa.per_token_n", f"The 1st dim of antiquant should be 1 instead of the current {shape[0]}")
    if len(shape) in (2, 3) and shape[-2] != b:
        raise tiling("ifa.per_token_b", f"The batch dim of antiquant should be {b} instead of the current {shape[-2]}")
    if len(shape) in (2, 3) and shape[-1] < s:
        raise tiling(
            "ifa.per_token_s",
            f"The S dim of antiquant should be greater than or equal to {s} instead of the current {shape[-1]}",
        )
    if len(shape) not in (2, 3):
        raise tiling("ifa.per_token_rank", "The dim of antiquant is illegal, When per_token mode.")


def _per_channel_shape(shape, n, d):
    if len(shape) == 1:
        if shape != (1,):
            raise tiling("ifa.per_tensor", f"The shape of antiquant parameter[{shape[0]}] is not expected. Expect[1]")
        return
    if len(shape) not in (2, 3, 4):
        raise tiling("ifa.param_rank", f"The layout[{len(shape)}] does not match the dim of antiquant")
    if shape not in {(1, n, 1, d), (1, 1, n, d), (1, n, d), (1, n * d)}:
        raise tiling(
            "ifa.per_channel",
            f"The shape of antiquant parameter{list(shape)} is not expected. Expect [1, {n}, 1, {d}] or "
            f"[1, {n}, {d}] or [1, {n * d}] when per_channel mode.",
        )
