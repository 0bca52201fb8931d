"""aclnnScatterPaKvCache (attention/scatter_pa_kv_cache, CANN 8.5; generated aclnn).

Reference §3: no hand-written op_api, so the generated entry point runs (§0.1) the required-null
checks (161001), the empty-output shortcut, the kernel lookup on the OpDef dtype/format combinations
(161002 / 561003), then the tiling (561002). The tiling and the kernels differ per chip:
Atlas A2/A3 use the Membase tiling (`_tiling_a2`), 910_95 the arch35 one (`_tiling_910_95`).
"""

import math

import numpy as np

from ... import status
from ...dtypes import DataType
from ...kernels.kv_cache import scatter_a2 as a2
from ...kernels.kv_cache import scatter_arch35 as a95
from ...kernels.kv_cache import scatter_blocks
from ...kernels.kv_cache.findings import OUT_OF_BOUNDS_READ
from ...kernels.kv_cache.scatter_rows import hif8_window_mean
from ..generated import before_tiling
from ..signature import IntArrayIn, Launch, Op, OpError, String, TensorIn, TensorRef
from ..gaps import Gaps
from .common import CACHE_MODES, DTYPES_910_95, TOOLS_WORKSPACE, fail, flat, launch

# scatterMode values with a template of their own (any other string is a plain scatter, as "None").
SCATTER_MODES = ("None", "Rope", "Alibi", "Omni", "Nct")

OP = Op(
    "ScatterPaKvCache",
    "aclnn_scatter_pa_kv_cache.h",
    [
        TensorIn("key", doc="new keys [tokens, heads, kHeadSize]"),
        TensorRef(
            "keyCacheRef",
            doc="paged key cache, updated in place [blocks, blockSize, heads, kHeadSize] (PA_NZ: its NZ form)",
        ),
        TensorIn("slotMapping", doc="cache slot (block * blockSize + offset) of each token; negative: skipped"),
        TensorIn("value", doc="new values [tokens, heads, vHeadSize]"),
        TensorRef("valueCacheRef", doc="paged value cache, updated in place"),
        TensorIn("compressLensOptional", optional=True, doc="Alibi/Rope/Omni modes: tokens each batch keeps"),
        TensorIn(
            "compressSeqOffsetOptional", optional=True, doc="Rope/Omni modes: where each batch's kept tokens start"
        ),
        TensorIn("seqLensOptional", optional=True, doc="compress modes: tokens per batch"),
        String("cacheModeOptional", optional=True, values=CACHE_MODES, doc="cache layout (None: Norm)"),
        String(
            "scatterModeOptional",
            optional=True,
            values=SCATTER_MODES,
            doc="how tokens land (None: None, a plain scatter)",
        ),
        IntArrayIn("stridesOptional", optional=True, doc="Nct mode: strides of key and value"),
        IntArrayIn("offsetsOptional", optional=True, doc="Nct mode: offsets of key and value"),
    ],
)

I8, F16, BF16 = DataType.ACL_INT8, DataType.ACL_FLOAT16, DataType.ACL_BF16
I32, I64 = DataType.ACL_INT32, DataType.ACL_INT64
INDEX_PARAMS = ("slotMapping", "compressLensOptional", "compressSeqOffsetOptional", "seqLensOptional")
# scatter_pa_kv_cache_def.cpp: (key, value) pairs for ascend910b / ascend910_93, each with INT32 and INT64 indices.
A2_KV = [(I8, I8), (I8, F16), (I8, BF16), (F16, F16), (F16, BF16), (BF16, F16), (BF16, BF16)]


def _combo(key, value, index) -> dict:
    return {
        "key": key,
        "keyCacheRef": key,
        "value": value,
        "valueCacheRef": value,
        **{name: index for name in INDEX_PARAMS},
    }


COMBOS = OP.kernels(
    {
        "Ascend910B": [_combo(k, v, i) for i in (I32, I64) for k, v in A2_KV],
        "Ascend910_95": [_combo(d, d, i) for i in (I32, I64) for d in DTYPES_910_95],
    }
)
COMBOS["Ascend910_93"] = COMBOS["Ascend910B"]
UINT_MAX = (1 << 32) - 1
# The A2/A3 kernel list (scatter_pa_kv_cache.cpp) has no tiling key for an INT8 key in these modes.
NO_KERNEL = Gaps(
    OP,
    "no_kernel",
    {
        "int8_key": "an INT8 key in nct, siso_nct, rope or omni mode on Atlas A2/A3 (the kernel list of "
        "scatter_pa_kv_cache.cpp has no case for its tiling key)"
    },
)
UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "short_rows": "Atlas A2/A3 Alibi/Rope/Omni mode with kHeadSize * sizeof(key) under 32 bytes (every copy is a "
        "DataCopy of 0 blocks; what a zero-length DataCopy does is not established)"
    },
)


@OP.prepare
def prepare(a, env):
    if not before_tiling(a, OP, COMBOS, env.soc):
        return Launch.nothing()
    run = _tiling_910_95(a, env) if env.soc == "Ascend910_95" else _tiling_a2(a, env)
    # Both tilings ask for ASCENDC_TOOLS_WORKSPACE as workspace.
    return Launch.nothing() if run is None else launch(OP, TOOLS_WORKSPACE, run)


def _dim(shape, i):
    """gert::Shape::GetDim: a dimension past the rank reads as an invalid value (never equal to a real one)."""
    return shape[i] if i < len(shape) else None


# ---------------------------------------------------------------------------------------------
# Atlas A2 / A3: ScatterPaKvCacheMembaseTiling (GetShapeAttrsInfo -> DoOpTiling)
# ---------------------------------------------------------------------------------------------
def _template_a2(a) -> str:
    """GetTemplateType: exact strcmp on the attributes (NULL strings take the OpDef defaults)."""
    cache_mode = a.cacheModeOptional if a.cacheModeOptional is not None else "Norm"
    scatter_mode = a.scatterModeOptional if a.scatterModeOptional is not None else "None"
    if cache_mode == "PA_NZ":
        mode = "nz"
    else:
        mode = {"Rope": "rope", "Alibi": "alibi", "Omni": "omni", "Nct": "nct"}.get(scatter_mode, "normal")
    if a.valueCacheRef.ndim == 0:
        mode = "siso_nct" if mode == "nct" else "siso"
    return mode


def _tiling_a2(a, env):
    """GetShapeAttrsInfo (template, dtypes, CheckInputDimNum, CheckInputDim, Nct attributes), then DoOpTiling."""
    mode = _template_a2(a)
    # GetInputDtype / GetIndexDtype cannot fail here: the kernel lookup already pinned key == key
    # cache, value == value cache, both in {FP16, BF16, INT8}, and an INT32/INT64 slot mapping.
    _check_dim_num_a2(a, mode)
    heads, head_k, head_v, batches = _check_dims_a2(a, mode)
    nct = _nct_attrs(a) if mode in ("nct", "siso_nct") else None
    key, cores = a.key, env.part.aiv_cores
    if mode == "nz":
        for name, size, tensor in (("kHeadSize", head_k, key), ("vHeadSize", head_v, a.value)):
            if size * tensor.np_dtype.itemsize % 32:
                fail(f"{name} {size} * sizeof({tensor.dtype.short}) should be aligned to 32 bytes", "nz_align")
        return _run_nz(a, cores)
    if key.dtype == I8 and mode in ("nct", "siso_nct", "rope", "omni"):
        NO_KERNEL.refuse("int8_key", f"{mode} mode")
    if batches and head_k * key.np_dtype.itemsize < 32:
        UNESTABLISHED.refuse("short_rows", f"{mode}: {head_k * key.np_dtype.itemsize} bytes")
    _warn_a2(a, env, mode, head_k, head_v, nct)
    if batches:
        return _run_compress(a, mode, heads, head_k, batches, cores)
    return _run_nd(a, heads * head_k, None if head_v is None else heads * head_v, nct, cores)


def _check_dim_num_a2(a, mode: str) -> None:
    """CheckInputDimNum: ranks, and the dims key/value and the two caches must share."""
    key, kc, value, vc = a.key, a.keyCacheRef, a.value, a.valueCacheRef
    if key.ndim != 3:
        fail(f"key should be 3-D, got {list(key.shape)}", "key_rank")
    if kc.ndim != 4:
        fail(f"keyCacheRef should be 4-D, got {list(kc.shape)}", "key_cache_rank")
    if a.slotMapping.ndim != 1:
        fail(f"slotMapping should be 1-D, got {list(a.slotMapping.shape)}", "slot_rank")
    if not mode.startswith("siso"):
        if value.ndim != 3:
            fail(f"value should be 3-D, got {list(value.shape)}", "value_rank")
        if vc.ndim != 4:
            fail(f"valueCacheRef should be 4-D, got {list(vc.shape)}", "value_cache_rank")
        if key.shape[:2] != value.shape[:2]:
            fail(f"dim0 and dim1 of key {list(key.shape)} and value {list(value.shape)} should be the same", "kv_dims")
        pair = (0, 2) if mode == "nz" else (0, 1)
        if any(kc.shape[i] != vc.shape[i] for i in pair):
            fail(
                f"dim{pair[0]} and dim{pair[1]} of keyCacheRef {list(kc.shape)} and valueCacheRef "
                f"{list(vc.shape)} should be the same",
                "cache_dims",
            )
    if mode in ("alibi", "rope", "omni"):
        for name in ("compressLensOptional", "seqLensOptional"):
            tensor = getattr(a, name)
            if tensor is None:
                fail(
                    f"{name} is nullptr in {mode} mode; CANN 8.5 dereferences it in the tiling (a host crash), "
                    "aclnn-emu rejects the call",
                    "compress_null",
                )
            if tensor.ndim != 1:
                fail(f"{name} should be 1-D, got {list(tensor.shape)}", "compress_rank")


def _check_dims_a2(a, mode: str) -> tuple:
    """CheckInputDim: sizes as uint64 in (0, UINT_MAX], cache capacity, the NZ cache layout and, in the
    compress modes, the batch count. Returns (heads, k_head_size, v_head_size or None, batches or 0)."""
    key, kc = a.key, a.keyCacheRef
    tokens, heads, head_k = key.shape
    blocks = kc.shape[0]
    block_size = kc.shape[2] if mode == "nz" else kc.shape[1]
    for name, v in (("numTokens", tokens), ("numHead", heads), ("kHeadSize", head_k), ("blockSize", block_size)):
        if not 0 < v <= UINT_MAX:
            fail(f"{name} is invalid: {v}", "dims_positive")
    if blocks * block_size < tokens:
        fail(
            f"numBlocks * blockSize ({blocks} * {block_size}) should not be smaller than numTokens ({tokens})",
            "cache_capacity",
        )
    head_v = None
    if not mode.startswith("siso"):
        head_v = a.value.shape[2]
        if not 0 < head_v <= UINT_MAX:
            fail(f"vHeadSize is invalid: {head_v}", "dims_positive")
        if mode == "nz":
            _check_nz_cache(kc, heads * head_k, key.dtype, "keyCacheRef")
            _check_nz_cache(a.valueCacheRef, heads * head_v, a.value.dtype, "valueCacheRef")
    batches = 0
    if mode in ("alibi", "rope", "omni"):
        batches = a.seqLensOptional.storage_shape[0] if a.seqLensOptional.storage_shape else 0
        if not 0 < batches <= UINT_MAX:
            fail(f"numBatchs is invalid: {batches}", "batches")
    return heads, head_k, head_v, batches


def _check_nz_cache(cache, token_size: int, dtype, name: str) -> None:
    last = 32 // cache.np_dtype.itemsize
    if cache.shape[1] != token_size // last:
        fail(
            f"dim1 of {name} is invalid: {cache.shape[1]}, expected {token_size // last} (num_head * head_size "
            f"/ {last})",
            "nz_dim1",
        )
    if cache.shape[3] != last:
        fail(f"dim3 of {name} is invalid: {cache.shape[3]}, expected {last} (32 bytes of {dtype.short})", "nz_dim3")


def _nct_attrs(a) -> tuple[int, int, int]:
    """(strideK, offsetK, offsetV) as the uint32 tiling fields; strideV is read but never used."""
    strides = a.stridesOptional if a.stridesOptional is not None else (1, 1)
    offsets = a.offsetsOptional if a.offsetsOptional is not None else (0, 0)
    if len(strides) < 2 or len(offsets) < 2:
        fail(
            f"stridesOptional {list(strides)} and offsetsOptional {list(offsets)} need two entries each "
            "(CANN 8.5 reads [0] and [1] unchecked)",
            "nct_lists",
        )
    return strides[0] & UINT_MAX, offsets[0] & UINT_MAX, offsets[1] & UINT_MAX


def _warn_a2(a, env, mode, head_k, head_v, nct) -> None:
    """Where the 8.5 kernels compute something other than the doc promises (divergences file)."""
    if a.slotMapping.dtype == I64:
        env.warn(
            f"slotMapping is INT64, but the CANN 8.5 Atlas A2/A3 {mode} kernel reads slot_mapping"
            f"{' and the compress tensors' if mode in ('alibi', 'rope', 'omni') else ''} as int32, so "
            "token t uses the t-th 32-bit word (for t >= 1 a half of an int64); the result follows the "
            "hardware. Fix: pass INT32 index tensors (or use cacheMode PA_NZ, which honours INT64)"
        )
    if mode == "siso" or mode == "siso_nct":
        return
    if a.key.np_dtype.itemsize != a.value.np_dtype.itemsize or (
        mode in ("rope", "omni") and a.key.dtype != a.value.dtype
    ):
        env.warn(
            f"value is {a.value.dtype.short} but the {mode} kernel moves it as {a.key.dtype.short} (the key's "
            "element type), so sizes and offsets follow the key's dtype. Fix: use one dtype for key and "
            "value, or cacheMode PA_NZ"
        )
    if nct is not None and a.stridesOptional is not None and len(set(a.stridesOptional[:2])) > 1:
        env.warn(
            f"scatterMode Nct reads value rows with strideK = {a.stridesOptional[0]}, not strideV = "
            f"{a.stridesOptional[1]} (strideV is never used). Fix: lay out value with the key's stride"
        )
    row = head_k * a.key.np_dtype.itemsize
    if mode in ("alibi", "rope", "omni") and row % 32:
        env.warn(
            f"kHeadSize * sizeof(key) = {row} bytes is not a multiple of 32: the {mode} kernel's DataCopy moves "
            f"only the {row // 32} whole 32-byte block(s) of each token, reads the tokens of a copy "
            f"{row // 32 * 32} * numHead bytes apart and writes them back to back, so cache rows do not match "
            "key rows (the result follows the hardware). Fix: pad the head to a multiple of 32 bytes"
        )
    if mode in ("alibi", "rope", "omni") and head_v != head_k:
        env.warn(
            f"the {mode} kernel reads and writes value with the key's head size {head_k}, not "
            f"v_head_size {head_v}. Fix: pass value with v_head_size == k_head_size"
        )


def _run_nd(a, row_k, row_v, nct, cores):
    key_unit = a.key.np_dtype

    def run():
        slots, findings = _index_values(a.slotMapping, a.key.shape[0], int32_words=True)
        stride, off_k, off_v = nct if nct else (None, 0, 0)
        findings += a2.scatter_nd(
            _flat(a.keyCacheRef), _flat(a.key), slots, row_k, cores, "keyCacheRef", "key", stride, off_k
        )
        if row_v is not None:
            findings += a2.scatter_nd(
                _flat(a.valueCacheRef, key_unit),
                _flat(a.value, key_unit),
                slots,
                row_v,
                cores,
                "valueCacheRef",
                "value",
                stride,
                off_v,
            )
        return findings

    return run


def _run_nz(a, cores):
    tokens = a.key.shape[0]

    def run():
        slots, findings = _index_values(a.slotMapping, tokens, int32_words=False)
        pairs = [
            (
                _flat(cache)[: cache.numel].reshape(cache.shape),
                _flat(src)[: tokens * math.prod(src.shape[1:])].reshape(tokens, -1),
                name,
            )
            for src, cache, name in ((a.key, a.keyCacheRef, "keyCacheRef"), (a.value, a.valueCacheRef, "valueCacheRef"))
        ]
        return findings + a2.scatter_nz(pairs, slots, cores)

    return run


def _run_compress(a, mode, heads, head_size, batches, cores):
    """Whole-block rows move as rows (scatter_a2); other rows as the kernels' block copies truncate
    them (scatter_blocks)."""
    tasks = batches * heads
    key_unit = a.key.np_dtype
    geo = scatter_blocks.Geometry(key_unit, head_size, heads)
    blocks = geo.blk != geo.row

    def run():
        if mode != "alibi" and a.compressSeqOffsetOptional is None:
            raise OpError(
                status.ACL_ERROR_RT_AICORE_EXCEPTION,
                f"compressSeqOffsetOptional is nullptr; the {mode} "
                "kernel reads it from address 0 (AI Core exception on the device)",
                rule="kernel.null_read",
            )
        slots, findings = _index_values(a.slotMapping, tasks, int32_words=True)
        wins, more = _index_values(a.compressLensOptional, tasks, int32_words=True)
        lens, last = _index_values(a.seqLensOptional, batches, int32_words=True)
        findings += more + last
        caches = [
            (_flat(cache, key_unit), _flat(src, key_unit), name, name.replace("CacheRef", ""), first)
            for src, cache, name, first in (
                (a.key, a.keyCacheRef, "keyCacheRef", 0),
                (a.value, a.valueCacheRef, "valueCacheRef", tasks),
            )
        ]
        if mode == "alibi":
            for cache, src, name, src_name, _ in caches:
                findings += (
                    scatter_blocks.alibi(cache, src, geo, slots, wins, lens, cores, name, src_name)
                    if blocks
                    else a2.scatter_alibi(cache, src, slots, wins, lens, heads, head_size, cores, name, src_name)
                )
            return findings
        offsets, more = _index_values(a.compressSeqOffsetOptional, tasks, int32_words=True)
        findings += more
        plans = a2.rope_plans(slots, wins, lens, offsets, heads)
        for cache, src, name, src_name, first in caches:
            omni = mode == "omni"
            findings += (
                scatter_blocks.rope(cache, src, geo, plans, first, cores, omni, name, src_name)
                if blocks
                else a2.scatter_rope(cache, src, plans, heads, head_size, first, 2 * tasks, cores, omni, name, src_name)
            )
        return findings

    return run


# ---------------------------------------------------------------------------------------------
# Ascend 910_95: ScatterPaKvCacheTiling (arch35), dual input/output mode
# ---------------------------------------------------------------------------------------------
def _tiling_910_95(a, env):
    key, kc, value, vc, slot = (
        t.storage_shape for t in (a.key, a.keyCacheRef, a.value, a.valueCacheRef, a.slotMapping)
    )
    ignored = [
        f"{name} {given!r}"
        for name, given, default in (
            ("cacheMode", a.cacheModeOptional, "Norm"),
            ("scatterMode", a.scatterModeOptional, "None"),
            ("strides", a.stridesOptional, (1, 1)),
            ("offsets", a.offsetsOptional, (0, 0)),
        )
        if given is not None and given != default
    ]
    if ignored:
        env.warn(
            f"{', '.join(ignored)} ignored: the 910_95 tiling never reads cacheMode, scatterMode, strides or "
            "offsets; the scenario follows the key's rank and the optional tensors (caches are ND)"
        )
    # GetInputDtype / GetIndexDtype: the kernel lookup already made all four dtypes equal.
    if len(key) != len(value):
        fail(f"the dim num of key {list(key)} and value {list(value)} are not the same", "kv_rank")
    if len(key) not in (3, 4):
        fail(f"the dim num of key must be 3 or 4, got {len(key)}", "key_rank")
    if len(key) == 3:
        return _normal_910_95(a, key, kc, value, vc, slot, env.part)
    if a.compressLensOptional is None or a.seqLensOptional is None:
        fail(
            "when the dim num of key is 4, compressLensOptional and seqLensOptional must not be nullptr",
            "compress_null",
        )
    rope = a.compressSeqOffsetOptional is not None
    _check_compress_910_95(a, key, kc, value, vc, slot, rope)
    if rope:
        env.warn(
            "the 910_95 Rope kernel copies the tail as tokens [0, L - w - o) of the sequence, not the "
            "tokens [o + w, L) after the window that the doc and the A2/A3 kernel use. Fix: write the tail "
            "with a separate 3-D (Normal) call, or keep L - w - o <= 0"
        )
    return _run_compress_910_95(a, "rope" if rope else "alibi", env.part)


def _check_compress_910_95(a, key, kc, value, vc, slot, rope: bool) -> None:
    """CheckRope / CheckAlibi on the storage shapes, in the source's order."""
    cl, lens = a.compressLensOptional.storage_shape, a.seqLensOptional.storage_shape
    if rope:
        cso = a.compressSeqOffsetOptional.storage_shape
        checks = [
            (
                key[0] == _dim(slot, 0) == _dim(cl, 0) == _dim(lens, 0),
                "the dim 0 of key, slot_mapping, compress_lens and seq_lens must be equal",
            ),
            (
                key[2] == _dim(slot, 1) == _dim(cl, 1),
                "the dim2 of key must be equal to the dim 1 of slot_mapping and of compress_lens",
            ),
            (key[3] == _dim(kc, 3), "the dim3 of key must be equal to the dim3 of key_cache"),
            (_dim(kc, 2) == 1, "the dim2 of key_cache must be equal to 1"),
            (
                len(cl) > 1 and cl[0] * cl[1] == _dim(cso, 0),
                "the dim0 of compress_seq_offset must be equal to dim0 * dim1 of compress_lens",
            ),
            (key[0] == value[0], "the dim 0 of key and value must be equal"),
            (key[1] == value[1], "the dim1 of key and value must be equal"),
            (key[2] == value[2], "the dim2 of key and value must be equal"),
            (value[3] == _dim(vc, 3), "the dim3 of value must be equal to the dim3 of value_cache"),
            (_dim(vc, 2) == 1, "the dim2 of value_cache must be equal to 1"),
        ]
    else:
        checks = [
            (key[0] == _dim(slot, 0) == _dim(lens, 0), "the dim 0 of key, slot_mapping and seq_lens must be equal"),
            (_dim(kc, 2) == 1, "the dim2 of key_cache must be equal to 1"),
            (key[2] == _dim(slot, 1), "the dim2 of key must be equal to the dim1 of slot_mapping"),
            (key[0] == value[0], "the dim 0 of key and value must be equal"),
            (key[1] == value[1], "the dim1 of key and value must be equal"),
            (_dim(vc, 2) == 1, "the dim2 of value_cache must be equal to 1"),
            (key[2] == value[2], "the dim2 of key and value must be equal"),
        ]
    for ok, message in checks:
        if not ok:
            fail(
                f"{message} (key {list(key)}, value {list(value)}, key_cache {list(kc)}, value_cache {list(vc)}, "
                f"slot_mapping {list(slot)}, compress_lens {list(cl)}, seq_lens {list(lens)})",
                "compress_dims",
            )


def _normal_910_95(a, key, kc, value, vc, slot, part):
    """CheckNormal, then the UB fit that decides the fully-loaded kernel."""
    for ok, message in (
        (key[0] == _dim(slot, 0), "the dim 0 of key and slot_mapping must be equal"),
        (key[1] == _dim(kc, 2), "the dim 1 of key must be equal to the dim 2 of key_cache"),
        (key[2] == _dim(kc, 3), "the dim2 of key must be equal to the dim3 of key_cache"),
        (key[0] == value[0], "the dim 0 of key and value must be equal"),
        (
            key[1] == value[1] == _dim(vc, 2),
            "the dim 1 of key and value must be equal to the dim 2 of key_cache and value_cache",
        ),
        (value[2] == _dim(vc, 3), "the dim2 of value must be equal to the dim3 of value_cache"),
    ):
        if not ok:
            fail(
                f"{message} (key {list(key)}, value {list(value)}, key_cache {list(kc)}, value_cache {list(vc)}, "
                f"slot_mapping {list(slot)})",
                "normal_dims",
            )
    tokens = key[0]
    if tokens == 0:
        return None
    size = a.key.np_dtype.itemsize
    index_size = a.slotMapping.np_dtype.itemsize
    cores = part.aiv_cores
    factor = -(-tokens // cores)
    used = min(-(-tokens // factor), cores)
    per_core = max(factor, tokens - factor * (used - 1))
    round_up = lambda x: -(-x // (32 // size)) * (32 // size)  # noqa: E731  (RoundUp to one 32-byte block)
    need = (
        per_core * (round_up(key[1] * key[2]) + round_up(value[1] * value[2]))
        + round_up(per_core) * 2 * index_size // size
    )
    fully_loaded = need <= part.ub_bytes // size
    if not fully_loaded and len(slot) != 1:
        fail(f"slot_mapping dim num must be 1 when the tokens do not fit in UB, got {list(slot)}", "slot_rank")
    int32_offsets = fully_loaded and a.slotMapping.dtype == I32

    def run():
        slots, findings = _index_values(a.slotMapping, tokens, int32_words=False)
        for src, cache, name in ((a.key, a.keyCacheRef, "keyCacheRef"), (a.value, a.valueCacheRef, "valueCacheRef")):
            row = math.prod(src.storage_shape[1:])
            findings += a95.scatter_normal(
                _flat(cache), _flat(src), slots, row, cores, name, name.replace("CacheRef", ""), int32_offsets
            )
        return findings

    return run


def _run_compress_910_95(a, mode, part):
    batch, seq, heads = a.key.storage_shape[:3]
    tasks = batch * heads
    n_slots = a.keyCacheRef.storage_shape[0] * a.keyCacheRef.storage_shape[1]
    cores = part.aiv_cores
    mean = hif8_window_mean if a.key.dtype == DataType.ACL_HIFLOAT8 else None  # uint8 storage, float maths

    def run():
        slots, findings = _index_values(a.slotMapping, tasks, int32_words=False)
        wins, more = _index_values(a.compressLensOptional, tasks, int32_words=False)
        lens, last = _index_values(a.seqLensOptional, batch, int32_words=False)
        findings += more + last
        if mode == "rope":
            offsets, more = _index_values(a.compressSeqOffsetOptional, tasks, int32_words=False)
            findings += more
        for src, cache, name in ((a.key, a.keyCacheRef, "keyCacheRef"), (a.value, a.valueCacheRef, "valueCacheRef")):
            args = (_flat(cache), _flat(src), slots, wins, lens)
            rest = ((batch, seq, heads), src.storage_shape[3], n_slots, cores, name, name.replace("CacheRef", ""))
            findings += (
                a95.scatter_rope(*args, offsets, *rest, mean=mean)
                if mode == "rope"
                else a95.scatter_alibi(*args, *rest)
            )
        return findings

    return run


# ---------------------------------------------------------------------------------------------
# Device data as the kernels see it
# ---------------------------------------------------------------------------------------------
def _flat(tensor, unit=None) -> np.ndarray:
    """The tensor's storage as the kernels see it (the A2 kernels move value data in the key's type)."""
    return flat(OP, tensor, unit)


def _index_values(tensor, count: int, int32_words: bool) -> tuple[np.ndarray, list]:
    """The first `count` index values the kernel reads: int32 words of the buffer on the A2 ND and
    compress paths, values of the tensor's own dtype otherwise. Missing ones read as 0, reported."""
    flat = _flat(tensor, np.int32 if int32_words else None)
    values = np.zeros(count, np.int64)
    got = min(count, len(flat))
    values[:got] = flat[:got]
    findings = []
    if got < count:
        findings.append(
            (
                OUT_OF_BOUNDS_READ,
                f"{tensor!r}: the kernel reads {count} index values but the tensor "
                f"holds {got}; the missing ones read as 0 here",
            )
        )
    return values, findings
