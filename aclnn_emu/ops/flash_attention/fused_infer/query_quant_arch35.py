"""FusedInferAttentionScore V4's query quantisation on Ascend910_95, where TilingFusedInferAttentionScoreV2
hands a query of the key's dtype to PromptFlashAttentionTilingV2 (prompt_flash_attention_tiling_v2.cpp).

`SetAttributeInfo` decides the quantisation from the dtypes and modes alone: an INT8 query is per
tensor (deqScale1/quantScale1/deqScale2; its kernel is never handed dequantScaleQuery); an FP8 E4M3 or
HiFloat8 query is per block when queryQuantMode, keyAntiquantMode and valueAntiquantMode are all 7
(PER_BLOCK), MLA full quant when query, key and value are FP8 E4M3 with queryRope and keyRope, per
tensor otherwise (which `CheckPerTensorQuantParams` refuses for any query but INT8); an fp16/bf16
query is not quantised and its kernels do not read dequantScaleQuery either.

The per-block rules, in the tiling's order (all 561002; SetAttributeInfo's (query, key,
attentionOut) dtype rule cannot fail after the OpDef lookup, which pairs an 8-bit float query with
fp16/bf16 outputs only): after the shared checks (replayed by running PromptFlashAttentionV3's
checks on the call seen in its output dtype), `CheckPerblockQuantParams`
(no page attention, no tensor list, FLOAT scales, no TND, head sizes <= 128, 4-D scales of
[B, N, ceil(S1 / 128), 1] and [B, N2, ceil(S2 / 256), 1]) and `CheckPerblockCrossover` (no actual
lengths, innerPrecise 0/1, no softmaxLse, no left padding, no rope, mask or pseShift). The kernels'
maths are in kernels/flash_attention/perblock_quant.py.
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.casts import BF16, FP16, hif8_to_float32
from aclnn_emu.kernels.flash_attention import perblock_quant
from aclnn_emu.kernels.rounding import round_half_away_
from aclnn_emu.opdef.generated import attr_uint32
from aclnn_emu.opdef.signature import Launch

from .failure import tiling
from .layouts import query_axes, shaped, split, to_bnsd

PER_BLOCK = 7  # AntiquantTypeEnum::PER_BLOCK
FP8 = (DataType.ACL_FLOAT8_E4M3FN, DataType.ACL_HIFLOAT8)
HEAD_SIZE_LIMIT = 128
SCALE_RANK = 4


def mla_full_quant(a) -> bool:
    """enableIFAMLAFullQuant: FP8 E4M3 query, key and value with queryRope and keyRope."""
    fp8 = all(t.dtype == DataType.ACL_FLOAT8_E4M3FN for t in (a.query, a.key.items[0], a.value.items[0]))
    return fp8 and a.queryRopeOptional is not None and a.keyRopeOptional is not None


def per_block(a) -> bool:
    """enablePerblockQuant (an FP8 E4M3 query with rope is the MLA full-quant path instead)."""
    modes = (a.queryQuantMode, a.keyAntiquantMode, a.valueAntiquantMode)
    return a.query.dtype in FP8 and modes == (PER_BLOCK,) * 3 and not mla_full_quant(a)


def per_tensor_8bit_float(a) -> bool:
    """An 8-bit float query outside per block and MLA full quant: the tiling's per-tensor case."""
    return a.query.dtype in FP8 and not per_block(a) and not mla_full_quant(a)


def refuse_per_tensor(a) -> None:
    """CheckPerTensorQuantParams: per tensor takes an INT8 query only."""
    raise tiling(
        "perblock.per_tensor_int8",
        f"inputParamsType must be INT8 in per-tensor quant scenario, now is {a.query.dtype.short} "
        "(an 8-bit float query is per block only with queryQuantMode, keyAntiquantMode and "
        f"valueAntiquantMode {PER_BLOCK})",
    )


class Retyped:
    """An 8-bit float tensor seen with another dtype, for the checks that read only shapes."""

    def __init__(self, t, dtype):
        self.t, self.dtype, self.format = t, dtype, t.format
        self.shape, self.ndim, self.numel, self.is_empty = t.shape, t.ndim, t.numel, t.is_empty

    def read(self, what: str = "tensor"):
        raise AssertionError("a retyped tensor is for the checks only")


class Widened(Retyped):
    """An 8-bit float tensor seen with another dtype by the checks, read as its fp32 values by a
    kernel that takes them so (MLA full quant, through the PFA launch)."""

    def read(self, what: str = "tensor"):
        return _values(self.t, what)


def _axes(t, base, heads):
    return query_axes(t.shape, base, heads)


def check_params(a, listed: bool) -> None:
    """CheckPerblockQuantParams, in its order."""
    base = split(a.inputLayout or "BSH")[0]
    if a.blockTableOptional is not None:
        raise tiling("perblock.paged", "PA is not supported in per-block quant scenario!")
    if listed:
        raise tiling("perblock.tensor_list", "tensorlist is not supported in per-block quant scenario!")
    scales = {
        "dequantScaleQuery": a.dequantScaleQueryOptional,
        "keyAntiquantScale": a.keyAntiquantScaleOptional,
        "valueAntiquantScale": a.valueAntiquantScaleOptional,
    }
    missing = [name for name, t in scales.items() if t is None]
    if missing:  # the tiling reads the three shapes before its nullptr check (undefined there)
        raise tiling("perblock.scale_missing", f"{', '.join(missing)} is nullptr in per-block quant scenario.")
    if any(t.dtype != DataType.ACL_FLOAT for t in scales.values()):
        kinds = ", ".join(f"{name}'s type is {t.dtype.short}" for name, t in scales.items())
        raise tiling(
            "perblock.scale_dtype", f"dequantscale type must be DT_FLOAT in per-block quant scenario, now {kinds}."
        )
    if base == "TND":
        raise tiling("perblock.tnd", "In per-block quant scenario, the layout TND is not supported.")
    heads, kv_heads = attr_uint32(a.numHeads), attr_uint32(a.numKeyValueHeads) or attr_uint32(a.numHeads)
    q = _axes(a.query, base, heads)
    k, v = (_axes(t.items[0], base, kv_heads) for t in (a.key, a.value))
    if max(q.d, k.d, v.d) > HEAD_SIZE_LIMIT:
        raise tiling(
            "perblock.head_size",
            "query d size, key d size and value d size must be less than or equal to 128 in per-block quant "
            f"scenario, now query d = {q.d}, key d = {k.d}, value d = {v.d}.",
        )
    ranks = [t.ndim for t in scales.values()]
    if any(r != SCALE_RANK for r in ranks):
        raise tiling("perblock.scale_rank", f"dequantscale's dim must be 4 in per-block quant scenario, now {ranks}.")
    rows = perblock_quant.Q_SCALE_ROWS, perblock_quant.KV_BLOCK, perblock_quant.KV_BLOCK
    for (name, t), axes, block in zip(scales.items(), (q, k, v), rows):
        want = (axes.b, axes.n, -(-axes.s // block), 1)
        if tuple(t.shape) != want:
            raise tiling(
                f"perblock.{name}_shape",
                f"{name}Shape must be {list(want)} in per-block quant scenario, now is {list(t.shape)}.",
            )


def check_crossover(a) -> None:
    """CheckPerblockCrossover, in its order."""
    refused = (
        # GetMaxWorkspaceSize: lengths without data leave enableActSeqLen(KV) false
        ("actual_seq", bool(a.actualSeqLengthsOptional) and not a.max_workspace, "ActSeqLen is not supported"),
        ("actual_seq_kv", bool(a.actualSeqLengthsKvOptional) and not a.max_workspace, "ActSeqLenKV is not supported"),
        ("inner_precise", a.innerPrecise in (2, 3), f"innerPrecise must be 0 or 1, now is {a.innerPrecise}"),
        ("lse", a.lse_wanted, "LSE is not supported"),
        (
            "padding",
            a.queryPaddingSizeOptional is not None or a.kvPaddingSizeOptional is not None,
            "leftpadding is not supported",
        ),
        ("rope", a.queryRopeOptional is not None and a.keyRopeOptional is not None, "PFARope is not supported"),
        ("mask", _present(a.attenMaskOptional), "mask is not supported"),
        ("pse", _present(a.pseShiftOptional), "PseShift is not supported"),
    )
    for rule, hit, what in refused:
        if hit:
            raise tiling(f"perblock.{rule}", f"{what} in per-block quant scenario!")


def _present(t) -> bool:
    return t is not None and not t.is_empty


def _values(t, what: str) -> np.ndarray:
    """An 8-bit float tensor's values as fp32 (exact)."""
    x = t.read(what)
    return hif8_to_float32(x) if t.dtype == DataType.ACL_HIFLOAT8 else x.astype(np.float32)


def launch(a, workspace_size: int) -> Launch:
    """The per-block kernels over the call's dense BSH/BSND/BNSD tensors."""
    base, out_layout = split(a.inputLayout or "BSH")
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    narrow = perblock_quant.narrow_p_hif8 if a.query.dtype == DataType.ACL_HIFLOAT8 else perblock_quant.narrow_p_e4m3
    out_dtype = FP16 if a.attentionOut.dtype == DataType.ACL_FLOAT16 else BF16

    def run(workspace):
        q = to_bnsd(_values(a.query, "query"), base, heads)
        k = to_bnsd(_values(a.key.items[0], "key"), base, kv_heads)
        v = to_bnsd(_values(a.value.items[0], "value"), base, kv_heads)
        dq, dk, dv = (
            t.read(name)[..., 0].astype(np.float32)
            for t, name in (
                (a.dequantScaleQueryOptional, "dequantScaleQuery"),
                (a.keyAntiquantScaleOptional, "keyAntiquantScale"),
                (a.valueAntiquantScaleOptional, "valueAntiquantScale"),
            )
        )
        o = perblock_quant.perblock_attention(q, k, v, dq, dk, dv, a.scaleValue, narrow)
        round_half_away_(o, out_dtype)
        axes = query_axes(a.query.shape, base, heads)
        full = np.zeros(shaped(axes, out_layout, v.shape[3]), out_dtype)
        to_bnsd(full, out_layout, heads)[...] = o
        a.attentionOut.write(full.reshape(a.attentionOut.shape))

    return Launch(workspace_size, run)
