"""An INT8 key/value beside a FLOAT16/BF16 query on the Atlas A2/A3 PFA route (query S > 1 with no
FIA-V3 head size): the PFA tiling's KV antiquant (op_host/prompt_flash_attention_tiling.cpp).

Its rules, every failure 561002, in the source's order:
- TilingProcess4PFA (fused_infer_attention_score_tiling.cpp): D a multiple of 32 when the query,
  the key or the output is INT8, then of 16 for every dtype;
- RunBigKernelTilingWithParams, CheckIOType: no TND query beside an INT8 key; enableKvAntiquant for
  an fp16 query, enableMsd when keyAntiquantScale or valueAntiquantScale is given, a BF16 query
  without them refused;
- later in RunBigKernelTilingWithParams: with enableKvAntiquant, CheckAntiquantParamsShape on the
  combined antiquantScale/Offset (per tensor [2], per channel [2, N2, 1, D] BNSD/NSD, [2, N2, D]
  BSND, [2, H2] BSH/SH), an empty key/value refused beside an INT8 one (the empty-tensor path);
  with an fp16 query, an INT8 key and S > 16 the MSD flag is dropped again (the combined
  parameters then serve, the separate ones unread); enableMsd with S > 16 refused (InferTilingMod
  follows).

The kernels (prompt_flash_attention_s1s2_bns1_x910.h Bmm1Antiquant / Bmm2Antiquant) dequantise
each key/value tile into a workspace in the query dtype with AscendAntiQuant<int8, half>:
(x + offset) * scale, both steps vector operations rounding to nearest even (antiquant_arch35's
`dequantize`), key parameters at row 0 and value ones at row 1 ([2] per tensor; per channel the
flat N2 x D row, KV head n / G); then the fp16 PFA kernels run on the tiles. The OpDef also
registers FLOAT antiquantScale/Offset beside an fp16 query and no rule checks their dtype;
InitKvAntiquant points a query-dtype pointer at them, so the kernels read the first numel fp16
elements of their memory (per tensor: the two halves of the first float, little-endian; per channel:
the first N2 x D floats, halved, as key row then value row). The MSD kernels (separate key/value
parameters, S <= 16) take their own rules and kernels (`kv_antiquant_msd.py`).
"""

from types import SimpleNamespace

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.antiquant_arch35 import dequantize
from aclnn_emu.opdef.generated import shape_dim

from . import antiquant_params_pfa, paged_antiquant_arch32
from .failure import tiling
from .layouts import query_s

MSD_MAX_S = 16  # CVDIFF_SMALL_QS_THRESHOLDS: the largest query S of the MSD kernels
D_ALIGN_INT8 = 32
D_ALIGN = 16


def applies(a) -> bool:
    """An INT8 key beside a float query (an INT32-packed INT4 one has no kernel here, delegate's NO_KERNEL)."""
    float_query = a.query.dtype in (DataType.ACL_FLOAT16, DataType.ACL_BF16)
    return float_query and a.key.items[0].dtype == DataType.ACL_INT8 and not a.int4


def float_params(a) -> bool:
    """Beside a block table, FLOAT key/value parameters, which the kernel key registers and the PA
    kernels read as fp16 elements of the same memory: not emulated (combined ones run: Dequantised)."""
    if a.blockTableOptional is None:
        return False
    params = [*paged_antiquant_arch32.params(a, 0), *paged_antiquant_arch32.params(a, 1)]
    return any(t is not None and t.dtype == DataType.ACL_FLOAT for t in params)


def _has_kv_scales(a) -> bool:
    """hasKeyAntiquantScale || hasValueAntiquantScale (ConvertContextToParamsPFA)."""
    return a.keyAntiquantScaleOptional is not None or a.valueAntiquantScaleOptional is not None


def msd(a) -> bool:
    """enableMsd as RunBigKernelTilingWithParams leaves it: key/value scales, unless an fp16 query
    beside an INT8 key with S > 16 takes the combined parameters' kernels instead."""
    if not _has_kv_scales(a):
        return False
    combined = a.query.dtype == DataType.ACL_FLOAT16 and a.key.items[0].dtype == DataType.ACL_INT8
    return not (combined and query_s(a) > MSD_MAX_S)


def kv_antiquant(a) -> bool:
    """enableKvAntiquant as RunBigKernelTilingWithParams leaves it."""
    return applies(a) and a.query.dtype == DataType.ACL_FLOAT16 and not msd(a)


def check_d(a, qd: int) -> None:
    """TilingProcess4PFA's head-size rules (after the softmaxLse shape checks): 32-aligned beside
    INT8, then 16-aligned for every dtype. FIA's op_api pads no D (PromptFlashAttentionV3's does), so
    an unaligned one fails here."""
    int8 = DataType.ACL_INT8 in (a.query.dtype, a.key.items[0].dtype, a.attentionOut.dtype)
    if int8 and qd % D_ALIGN_INT8:
        raise tiling("pfa.d_align_int8", "D should be 32 elements aligned when int8 is involved!!")
    if qd % D_ALIGN:
        raise tiling("pfa.d_align", "D should be 16 elements aligned when with FP16/BF16 dtype!")


def check_io(a) -> None:
    """CheckIOType's KV antiquant rules."""
    if not applies(a):
        return
    if (a.inputLayout or "BSH") == "TND" and a.value.items[0].dtype == DataType.ACL_INT8:
        raise tiling("pfa.tnd_kv_antiquant", "When Layout is TND, not support KV Antiquant!")
    if a.query.dtype == DataType.ACL_BF16 and not _has_kv_scales(a):
        raise tiling(
            "pfa.bf16_kv_scales",
            "The key's dequant scale and the value's dequant scale should not be null, when data type of query is "
            "bf16 and data type of key/value is int8",
        )


def check_after_shapes(a, key_empty: bool) -> None:
    """The rules the tiling reaches after the shape checks PromptFlashAttentionV3 replays: the
    empty-tensor path's INT8 rule, CheckAntiquantParamsShape (with a block table then
    CheckPAAntiquantSupportScenarios), then MSD's S limit."""
    int8 = DataType.ACL_INT8 in (a.query.dtype, a.key.items[0].dtype, a.value.items[0].dtype)
    if key_empty and int8:
        raise tiling("pfa.empty_int8", "when input or output is empty tensor, input datatype should not be int8.")
    if kv_antiquant(a):
        _check_params(a)
        if a.blockTableOptional is not None:
            paged_antiquant_arch32.check_scenarios(a)
    if msd(a) and query_s(a) > MSD_MAX_S:
        s = query_s(a)
        raise tiling("pfa.msd_s", f"S of query({s}) is larger than 16, when the key/value's dequant scale is enabled.")


def _check_params(a) -> None:
    """CheckAntiquantParamsShape: [2] per tensor (an offset's first axis alike), else per channel,
    the combined parameters with the first axis 2, beside a block table the key's and the value's
    own (paged_antiquant_arch32)."""
    scale, offset = a.antiquantScaleOptional, a.antiquantOffsetOptional
    if scale is not None and scale.ndim == 1:
        if scale.shape[0] != 2:
            raise tiling(
                "pfa.per_tensor_scale",
                f"antiquant scale dim[0] = {scale.shape[0]}, but it should be 2 under Per-Tensor mode!",
            )
        if offset is not None and shape_dim(offset.shape, 0) != 2:
            raise tiling(
                "pfa.per_tensor_offset",
                f"antiquant offset dim[0] = {shape_dim(offset.shape, 0)}, but it should be 2 under Per-Tensor mode!",
            )
        return
    if a.blockTableOptional is not None:
        paged_antiquant_arch32.check_params(a)
    else:
        antiquant_params_pfa.check(a, scale, offset, 2, "pfa.")


class Dequantised:
    """An INT8 key (``row`` 0) or value (row 1) seen as the query-dtype tensor the kernels' antiquant
    step writes to their workspace; read when the kernel runs."""

    def __init__(self, a, t, row: int):
        self.t, self.row, self.a = t, row, a
        self.dtype, self.format = a.query.dtype, t.format
        self.shape, self.ndim, self.numel, self.is_empty = t.shape, t.ndim, t.numel, t.is_empty

    def _param(self, t, what: str, per_channel: bool):
        if t is None:
            return None
        x = np.asarray(t.read(f"antiquant {what}"))
        if t.dtype == DataType.ACL_FLOAT:  # read through a `(__gm__ T*)` pointer: its first numel fp16 elements
            x = x.reshape(-1).view(np.float16)[: x.size]
        x = x.astype(np.float16)
        if self.a.blockTableOptional is not None:  # the side's own [1, ...] row over the [blocks, blockSize, H2] cache
            return x.reshape(-1)
        if not per_channel:
            return x.reshape(-1)[self.row]
        row = x.reshape(2, -1)[self.row]  # the flat N2 x D row the kernel indexes by KV head
        layout = antiquant_params_pfa.tiling_layout(self.a)
        if layout in ("BNSD", "NSD"):
            return row.reshape(-1, 1, antiquant_params_pfa.channel_shape(self.a)[-1])
        if layout == "BSND":
            return row.reshape(-1, antiquant_params_pfa.channel_shape(self.a)[-1])
        return row

    def read(self, what: str = "tensor"):
        scale_t, offset_t = self.a.antiquantScaleOptional, self.a.antiquantOffsetOptional
        if self.a.blockTableOptional is not None:  # the PA kernels read the key's or the value's own parameters
            scale_t, offset_t = paged_antiquant_arch32.params(self.a, self.row)
        per_channel = scale_t.ndim != 1
        scale = self._param(scale_t, "scale", per_channel)
        offset = self._param(offset_t, "offset", per_channel)
        return dequantize(self.t.read(what), scale, offset, np.float16)


class DequantisedCall:
    """The call with its INT8 key/value lists and shared prefix read as the kernels dequantise them
    (the prefix tiles with the key's and the value's parameters alike), for the softmaxLse pass;
    every other argument as it is."""

    def __init__(self, a):
        self._a = a
        self.key, self.value = (
            SimpleNamespace(items=[Dequantised(a, t, row) for t in lst.items])
            for row, lst in ((0, a.key), (1, a.value))
        )
        self.keySharedPrefixOptional, self.valueSharedPrefixOptional = (
            None if t is None else Dequantised(a, t, row)
            for row, t in enumerate((a.keySharedPrefixOptional, a.valueSharedPrefixOptional))
        )

    def __getattr__(self, name):
        return getattr(self._a, name)
