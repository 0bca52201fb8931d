"""The A2/A3 IFA tiling's checks of FIA's separate key/value antiquant parameters
(`incre_flash_attention_tiling.cpp` IFATiling::ProcessAntiQuant, right after ProcessQuant), in its
order. Every failure is 561002; what passes and the kernels do not emulate stays
`not_implemented.kv_antiquant` (delegate)."""

from aclnn_emu.dtypes import DataType

from .failure import tiling

PER_CHANNEL, PER_TOKEN = 0, 1
CHANNEL_TOKEN = (PER_CHANNEL, PER_TOKEN)  # the one mixed pair (PER_CHANNEL_TOKEN_MODE)
MODES = range(6)  # CheckKVAntiQuantMode: per channel, per token, per tensor+head, per token+head, their PA forms


def _modes(a) -> tuple[int, int]:
    return a.keyAntiquantMode, a.valueAntiquantMode


def check_ifa(a) -> None:
    """ProcessAntiQuant: no antiquant tensor without an INT8/INT4 key beside a float query (the
    full-quant INT8 query aside); then CheckKeyAndValueAntiquantScaleOffset,
    CheckKeyAndValueAntiquantOffset, CheckKvAntiquant4SplitMode and ProcessAntiQuantMode
    (CheckAntiQuantParamKeyType / ValueType, CheckKVAntiQuantMode). Its offset-dtype rules
    (CheckAntiquantOffsetType, the key's and value's offsets alike) cannot fail here: the kernel key
    (opdef_table) registers no other combination. CheckAntiQuantParam's shape rules per mode are
    not replayed."""
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
        return
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None
    if key.ndim == 5 and not rope and k_mode not in (PER_CHANNEL, PER_TOKEN):
        raise tiling("ifa.nz_mode", f"antiquantMode value[{k_mode}] should be 0 or 1 in GQA KV NZ")
    if k_mode not in MODES:
        raise tiling("ifa.mode", f"antiquantMode value:{k_mode} is invalid, it should be 0, 1, 2, 3, 4 or 5")
