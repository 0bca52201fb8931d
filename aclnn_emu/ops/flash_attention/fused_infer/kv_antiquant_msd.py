"""The MSD kernels' tiling rules on the Atlas A2/A3 PFA route: separate keyAntiquantScale /
valueAntiquantScale with query S <= 16 (`kv_antiquant_pfa.msd`). RunBigKernelTilingWithParams
(op_host/prompt_flash_attention_tiling.cpp) checks them after the tiling's split, every failure
561002, in this order:
- key and value modes alike, 0 (per channel) or 1 (per token);
- no tensor list, no left padding, an fp16/BF16 query, an INT8 key and value of one dtype, a BF16 or
  INT8 output unless the query is fp16;
- both scales given, the offsets for both or neither;
- per token: every parameter [B2, S2] (the key's batch and S);
- per channel: the scales both [N2, D], both [N2, 1, D] or both [H2] (H2 = N2 x D), an offset of
  the same rank and shape;
- per channel every parameter BF16, per token FLOAT.
The kernels that follow (prompt_flash_attention_s1s2_bns1_x910.h, msdMode MSD_ON) run in
`kernels/flash_attention/pfa_msd.py`: the key and value reach them as INT8 (`Int8View`), the
parameters as fp32 (`Reader`: per channel flattened to [N2, D], whichever of the three shapes).
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.pfa_msd import MsdParams
from aclnn_emu.opdef.generated import attr_uint32, shape_dim

from ..common import BASE_API_MODES
from .failure import tiling
from .layouts import split
from .query_quant_arch35 import Retyped

_PER_TOKEN, _PER_CHANNEL = 1, 0
_PARAM_DTYPE = {
    _PER_CHANNEL: (DataType.ACL_BF16, "bf16 in per-channel mode"),
    _PER_TOKEN: (DataType.ACL_FLOAT, "float32 in pertoken mode"),
}


def runs(a) -> bool:
    """Whether the emulator runs the MSD kernels past their rules: not for a 2-D (SH) query, the
    base-API sparse modes 20-22 or a shared prefix, whose kernel walks it does not model."""
    return a.query.ndim > 2 and a.sparseMode not in BASE_API_MODES and a.keySharedPrefixOptional is None


def sums_inferred(a) -> bool:
    """Whether the kernels' row sums or fused multiply-adds serve (`pfa_msd`): per token with
    offsets, per channel with a key offset beside softmaxLse."""
    ks, ko, vs, vo = _params(a)
    if a.keyAntiquantMode == _PER_TOKEN:
        return ko is not None or vo is not None
    return ko is not None and a.lse_wanted


def _params(a):
    """(key scale, key offset, value scale, value offset), None where not given."""
    return (
        a.keyAntiquantScaleOptional,
        a.keyAntiquantOffsetOptional,
        a.valueAntiquantScaleOptional,
        a.valueAntiquantOffsetOptional,
    )


def check(a, listed: bool) -> None:
    """RunBigKernelTilingWithParams's MSD rules (``listed``: key/value as a tensor list)."""
    k_mode, v_mode = a.keyAntiquantMode, a.valueAntiquantMode
    if k_mode != v_mode or k_mode not in (_PER_CHANNEL, _PER_TOKEN):
        raise tiling(
            "pfa.msd_modes",
            f"the key's quant mode({k_mode}) or the value's quant mode({v_mode}) is not correct, the key/value's "
            "quant mode only support per-token and per-channel when the key/value's dequant scale is enabled",
        )
    if a.int4:
        raise tiling("pfa.msd_int4", "int4 is not supported when the key/value's dequant scale is enabled")
    if listed:
        raise tiling("pfa.msd_tensor_list", "tensorlist is not supported when the key/value's dequant scale is enabled")
    if a.queryPaddingSizeOptional is not None or a.kvPaddingSizeOptional is not None:
        raise tiling("pfa.msd_padding", "LeftPadding is not supported when the key/value's dequant scale is enabled")
    if a.query.dtype not in (DataType.ACL_FLOAT16, DataType.ACL_BF16):
        raise tiling("pfa.msd_query", "inputDataType is not bf16 or fp16")
    key, value = a.key.items[0].dtype, a.value.items[0].dtype
    if key != value:
        raise tiling("pfa.msd_kv_dtypes", f"DataType of key({key.short}) not equal datatype of value({value.short})")
    if key != DataType.ACL_INT8:
        raise tiling("pfa.msd_kv_int8", f"DataType of key({key.short}) or datatype of value({value.short}) is not bf16")
    out = a.attentionOut.dtype
    if out not in (DataType.ACL_BF16, DataType.ACL_INT8) and a.query.dtype != DataType.ACL_FLOAT16:
        raise tiling("pfa.msd_out", f"DataType of output({out.short}) is not bf16 or int8 or fp16")
    ks, ko, vs, vo = _params(a)
    if ks is None or vs is None:
        raise tiling(
            "pfa.msd_scales", "Shape of the key's dequant scale or the shape of the value's dequant scale is null"
        )
    if (ko is None) != (vo is None):
        side = "null, when shape of the value's dequant offset is not null"
        if ko is not None:
            side = "not null, when shape of the value's dequant offset is null"
        raise tiling("pfa.msd_offsets", f"Shape of the key's dequant offset is {side}")
    if k_mode == _PER_TOKEN:
        _check_per_token(a)
    else:
        _check_per_channel(a)
    want, text = _PARAM_DTYPE[k_mode]
    if any(t is not None and t.dtype != want for t in _params(a)):
        names = ", ".join((t.dtype if t is not None else a.query.dtype).short for t in _params(a))
        raise tiling(
            "pfa.msd_param_dtype", f"The data type of the key's/value's dequant scale/offset ({names}) is not {text}"
        )


def _ranks(a) -> str:
    return "/".join(str(t.ndim if t is not None else 0) for t in _params(a))


def _kv_batch_and_s(a) -> tuple[int, int]:
    """bKV and seqInnerSize as RunBigKernelTilingWithParams reads them off the query and key."""
    base, q, k = split(a.inputLayout or "BSH")[0], a.query, a.key.items[0].shape
    if base in ("BNSD", "NSD"):
        return (1, shape_dim(k, 1)) if q.ndim == 3 else (shape_dim(k, 0), shape_dim(k, 2))
    if q.ndim == 2:  # SH: the batch is the count of key lengths
        lengths = a.actualSeqLengthsKvOptional
        return (len(lengths) if lengths else 1), shape_dim(k, 0)
    return shape_dim(k, 0), shape_dim(k, 1)


def _query_h(a) -> int:
    """h as RunBigKernelTilingWithParams reads it off the query: N x D, or H of BSH / SH."""
    q, base = a.query.shape, split(a.inputLayout or "BSH")[0]
    if base in ("BNSD", "NSD"):
        return attr_uint32(a.numHeads) * q[2] if a.query.ndim == 3 else q[1] * q[3]
    return q[-1] if a.query.ndim <= 3 else q[2] * q[3]


def _check_per_token(a) -> None:
    if any(t is not None and t.ndim != 2 for t in _params(a)):
        raise tiling(
            "pfa.msd_token_rank",
            f"The shape dimension of the key's/value's dequant scale/offset ({_ranks(a)}) is not 2 in perToken mode",
        )
    want = _kv_batch_and_s(a)
    _check_shapes(a, want, "token", f"BS{want} in perToken mode")


def _check_per_channel(a) -> None:
    """The scales' rank picks [N2, D], [N2, 1, D] or [H2]; any other pair of ranks fails (the source's
    message there also reads the offsets' shapes, null or not)."""
    ks, ko, vs, vo = _params(a)
    heads = attr_uint32(a.numHeads)
    ratio = heads // (attr_uint32(a.numKeyValueHeads) or heads)  # headNumRatio, checked non-zero before
    n2, h2 = heads // ratio, _query_h(a) // ratio
    shapes = {2: (n2, h2 // n2), 3: (n2, 1, h2 // n2), 1: (h2,)}
    if ks.ndim != vs.ndim or ks.ndim not in shapes:
        raise tiling(
            "pfa.msd_channel_rank",
            f"The shape dimension of the key's/value's dequant scale/offset ({_ranks(a)}) is not 1 or 2 or 3 in "
            "perChannel mode",
        )
    if any(t is not None and t.ndim != ks.ndim for t in (ko, vo)):
        raise tiling(
            "pfa.msd_channel_offset_rank",
            f"The shape dimension of the key's/value's dequant scale/offset ({_ranks(a)}) is not same in perChannel "
            "mode",
        )
    want = shapes[ks.ndim]
    _check_shapes(a, want, "channel", f"{want} in perChannel mode")


def _check_shapes(a, want: tuple, kind: str, expected: str) -> None:
    """Every parameter given of shape ``want``, in the source's order: the scales, then the offsets."""
    ks, ko, vs, vo = _params(a)
    for side, t in (("key_scale", ks), ("value_scale", vs), ("key_offset", ko), ("value_offset", vo)):
        if t is not None and tuple(t.shape) != want:
            what = side.replace("_", "'s dequant ")
            raise tiling(f"pfa.msd_{kind}_{side}", f"shape of the {what}{tuple(t.shape)} is not same with {expected}")


class Int8View(Retyped):
    """An INT8 key/value shown to the PFA checks in the query's dtype (as the tiling sees the call)
    and read as its INT8 values by the MSD kernels."""

    def read(self, what: str = "tensor"):
        return self.t.read(what)


class Reader:
    """The separate parameters, read as fp32 when the kernels run: per channel [N2, D] (BF16 values,
    exact in fp32), per token [B2, S2]."""

    def __init__(self, a):
        self.mode = a.keyAntiquantMode
        self.tensors = _params(a)
        heads = attr_uint32(a.numHeads)
        self.kv_heads = attr_uint32(a.numKeyValueHeads) or heads

    def read(self) -> MsdParams:
        names = ("keyAntiquantScale", "keyAntiquantOffset", "valueAntiquantScale", "valueAntiquantOffset")
        values = [None if t is None else np.asarray(t.read(n), np.float32) for t, n in zip(self.tensors, names)]
        if self.mode == _PER_CHANNEL:
            values = [None if x is None else x.reshape(self.kv_heads, -1) for x in values]
        return MsdParams(self.mode, *values)
