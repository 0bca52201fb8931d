"""aclnnScatterPaKvCache (attention/scatter_pa_kv_cache, CANN 8.5; generated aclnn).

Reference §3: no hand-written op_api, so the generated entry point runs (§0.1) the required-null
checks (161001), the empty-output shortcut, the kernel lookup on the OpDef dtype/format combinations
(161002 / 561003), then the tiling (561002). The tiling and the kernels differ per chip:
Atlas A2/A3 use the Membase tiling (`_tiling_a2`), arch35 the arch35 one (`_tiling_arch35`).
CANN 9.1.0 has a hand-written op_api instead (op_api.py), and its failures behind the op_api's own
checks are 561103 (common.l0op).
"""

from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.signature import Launch
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.ops.kv_cache.common import CACHE_MODES, DTYPES_ARCH35, TOOLS_WORKSPACE, launch, prepare_by_release
from . import op_api
from .checks_arch35 import _tiling_arch35
from .entry import BF16, F16, I32, I64, I8, OP
from .launch import _run_compress, _run_nd, _run_nhsd, _run_nz


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
        "Ascend910_95": [_combo(d, d, i) for i in (I32, I64) for d in DTYPES_ARCH35],
    }
)


COMBOS["Ascend910_93"] = COMBOS["Ascend910B"]


UINT_MAX = (1 << 32) - 1


# The A2/A3 kernel list (scatter_pa_kv_cache.cpp) has no tiling key for an INT8 key in these modes.
NO_KERNEL = Gaps(
    OP,
    "no_kernel",
    {
        "int8_key": "an INT8 key in nct, siso_nct, rope, omni or (branch 9.1.0) NHSD mode on Atlas A2/A3 (the kernel "
        "list of scatter_pa_kv_cache.cpp has no case for its tiling key)"
    },
)


STRICT_MODES = "spkc.a2_template_modes"
NZ_5D = "spkc.a2_nz_5d_caches"
NZ_CACHE_RANKS = (4, 5)
UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "short_rows": "Atlas A2/A3 Alibi/Rope/Omni mode with kHeadSize * sizeof(key) under 32 bytes (every copy is a "
        "DataCopy of 0 blocks; what a zero-length DataCopy does is not established)",
        "nhsd_rank": "scatterMode NHSD on Atlas A2/A3 with a key or value of another rank than 3 (the 9.1.0 op_api "
        "allows 4-D ones, CheckInputDimNumNHSD checks neither, and CheckInputShapeNHSD reads their first three dims)",
    },
)


@OP.prepare
def prepare(a, env):
    return prepare_by_release(a, env, OP, COMBOS, "spkc.hand_written_op_api", op_api.checks, _tiling)


def _tiling(a, env):
    if a.value is None:  # only the 9.1.0 op_api lets it through; the OpDef's value is REQUIRED
        fail("null_value", "value is nullptr, a required input of the kernel (inferred: the launch fails)")
    run = _tiling_arch35(a, env) if env.soc == "Ascend910_95" else _tiling_a2(a, env)
    # Both tilings ask for ASCENDC_TOOLS_WORKSPACE as workspace.
    return Launch.nothing() if run is None else launch(OP, TOOLS_WORKSPACE, run)


# ---------------------------------------------------------------------------------------------
# Atlas A2 / A3: ScatterPaKvCacheMembaseTiling (GetShapeAttrsInfo -> DoOpTiling)
# ---------------------------------------------------------------------------------------------
def _template_a2(a, env) -> str:
    """GetTemplateType: exact strcmp on the attributes (NULL strings take the OpDef defaults). Branch 9.1.0
    (versions.RULES "spkc.a2_template_modes") refuses other strings, has an NHSD template, and makes only the
    plain and Nct modes key-only."""
    cache_mode = a.cacheModeOptional if a.cacheModeOptional is not None else "Norm"
    scatter_mode = a.scatterModeOptional if a.scatterModeOptional is not None else "None"
    strict = env.version.has(STRICT_MODES)
    if strict and cache_mode not in ("", "Norm", "PA_NZ"):
        fail("cache_mode", f"cacheMode only support None, Norm or PA_NZ, got {cache_mode!r}")
    if cache_mode == "PA_NZ":
        return "nz"
    modes = {"Rope": "rope", "Alibi": "alibi", "Omni": "omni", "Nct": "nct"}
    if strict and scatter_mode not in (*modes, "NHSD", "", "None"):
        fail("scatter_mode", f"scatterMode only support None, Rope, Alibi, Omni, Nct, got {scatter_mode!r}")
    if strict and scatter_mode == "NHSD":
        modes["NHSD"] = "nhsd"
    mode = modes.get(scatter_mode, "normal")
    if a.valueCacheRef.ndim == 0:
        if strict and mode not in ("normal", "nct"):
            fail("siso_mode", f"Siso only support templateType is TEMPLATE_NORM_NCT or TEMPLATE_NORMAL, got {mode}")
        mode = "siso_nct" if mode == "nct" else "siso"
    return mode


def _tiling_a2(a, env):
    """GetShapeAttrsInfo (template, dtypes, CheckInputDimNum, CheckInputDim, Nct attributes), then DoOpTiling."""
    mode = _template_a2(a, env)
    # GetInputDtype / GetIndexDtype cannot fail here: the kernel lookup already pinned key == key
    # cache, value == value cache, both in {FP16, BF16, INT8}, and an INT32/INT64 slot mapping.
    if mode == "nhsd":
        return _tiling_nhsd(a, env)
    _check_dim_num_a2(a, env, mode)
    heads, head_k, head_v, batches = _check_dims_a2(a, env, mode)
    nct = _nct_attrs(a) if mode in ("nct", "siso_nct") else None
    key, cores = a.key, env.part.aiv_cores
    if mode == "nz":
        for name, size, tensor in (("kHeadSize", head_k, key), ("vHeadSize", head_v, a.value)):
            if size * tensor.np_dtype.itemsize % 32:
                fail("nz_align", f"{name} {size} * sizeof({tensor.dtype.short}) should be aligned to 32 bytes")
        return _run_nz(a, cores)
    if key.dtype == I8 and mode in ("nct", "siso_nct", "rope", "omni"):
        NO_KERNEL.refuse("int8_key", f"{mode} mode")
    if batches and head_k * key.np_dtype.itemsize < 32:
        UNESTABLISHED.refuse("short_rows", f"{mode}: {head_k * key.np_dtype.itemsize} bytes")
    _warn_a2(a, env, mode, head_k, head_v, nct)
    if batches:
        return _run_compress(a, mode, heads, head_k, batches, cores)
    return _run_nd(a, heads * head_k, None if head_v is None else heads * head_v, nct, cores)


def _tiling_nhsd(a, env):
    """Branch 9.1.0's NHSD template: CheckInputDimNumNHSD, CheckInputShapeNHSD and DoNHSDOpTiling, in their order
    (GetInputDtypeKv's key == value dtype rule never fails: the op_api's CheckDtypeValid refused such calls); the
    kernel is built for FP16/BF16 keys only."""
    key, value, kc, vc = a.key, a.value, a.keyCacheRef, a.valueCacheRef
    if a.slotMapping.ndim != 1:
        fail("slot_rank", f"slot_mapping should be 1 dim, got {list(a.slotMapping.shape)}")
    if kc.ndim != 4:
        fail("key_cache_rank", f"key_cache should be 4 dim, got {list(kc.shape)}")
    if vc.shape[2:3] != kc.shape[2:3]:
        fail("nhsd.cache_dim2", f"dim2 of keyCache {list(kc.shape)} should be same as ValueCache {list(vc.shape)}")
    if key.ndim != 3 or value.ndim != 3:
        UNESTABLISHED.refuse("nhsd_rank", f"key {list(key.shape)}, value {list(value.shape)}")
    tokens, heads, head_k = key.shape
    head_v, blocks, block_size = value.shape[2], kc.shape[0], kc.shape[2]
    unit_k, unit_v = key.np_dtype.itemsize, value.np_dtype.itemsize
    checks = (
        (head_k * unit_k % 32 or head_v * unit_v % 32, "align", "kHeadSize and vHeadSize should be align to 32"),
        (heads != kc.shape[1], "heads", "dim1 of keyCache should be same as numHead"),
        (heads > 4095, "heads_max", "num head must less than or equal 4095"),
        (blocks * block_size < tokens, "capacity", "numBlocks * blockSize should larger than numTokens"),
        (vc.shape[2] != block_size, "cache_dim2", "dim2 of keyCache should be same as ValueCache"),
        (vc.shape[1] != kc.shape[1], "cache_dim1", "dim1 of keyCache should be same as ValueCache"),
        (value.shape[0] != tokens, "kv_dim0", "dim0 of key should be same as Value"),
        (value.shape[1] != heads, "kv_dim1", "dim1 of key should be same as Value"),
        (kc.shape[3] != head_k, "key_cache_dim3", "dim3 of keyCache should be same as kHeadSize"),
        (vc.ndim < 4 or vc.shape[3] != head_v, "value_cache_dim3", "dim3 of ValueCache should be same as vHeadSize"),
        (vc.shape[0] != blocks, "cache_dim0", "dim0 of keyCache should be same as ValueCache"),
        ((heads * head_k + heads * head_v) * unit_k > env.part.ub_bytes - 1024, "ub", "one token key size plus one "
         "token value must less than the unified buffer"),
        (block_size * max(head_k, head_v) > UINT_MAX, "uint32", "blockSize * kHeadSize (vHeadSize) must less than "
         "UINT32_MAX"),
    )  # fmt: skip
    for failed, rule, message in checks:
        if failed:
            fail(f"nhsd.{rule}", f"{message} (key {list(key.shape)}, value {list(value.shape)}, keyCache "
                 f"{list(kc.shape)}, valueCache {list(vc.shape)})")  # fmt: skip
    if key.dtype == I8:
        NO_KERNEL.refuse("int8_key", "NHSD mode")
    return _run_nhsd(a, heads, head_k, head_v, block_size, env.part.aiv_cores)


def _check_dim_num_a2(a, env, mode: str) -> None:
    """CheckInputDimNum: ranks, and the dims key/value and the two caches must share."""
    key, kc, value, vc = a.key, a.keyCacheRef, a.value, a.valueCacheRef
    ranks = NZ_CACHE_RANKS if mode == "nz" and env.version.has(NZ_5D) else (4,)
    if key.ndim != 3:
        fail("key_rank", f"key should be 3-D, got {list(key.shape)}")
    if kc.ndim not in ranks:
        fail("key_cache_rank", f"keyCacheRef should be {' or '.join(map(str, ranks))}-D, got {list(kc.shape)}")
    if a.slotMapping.ndim != 1:
        fail("slot_rank", f"slotMapping should be 1-D, got {list(a.slotMapping.shape)}")
    if not mode.startswith("siso"):
        if value.ndim != 3:
            fail("value_rank", f"value should be 3-D, got {list(value.shape)}")
        if vc.ndim not in ranks:
            fail("value_cache_rank", f"valueCacheRef should be {' or '.join(map(str, ranks))}-D, got {list(vc.shape)}")
        if key.shape[:2] != value.shape[:2]:
            fail("kv_dims", f"dim0 and dim1 of key {list(key.shape)} and value {list(value.shape)} should be the same")
        pair = (0, -2) if mode == "nz" else (0, 1)  # the NZ block size is the second-to-last dim (4-D or 5-D)
        if any(kc.shape[i] != vc.shape[i] for i in pair):
            fail(
                "cache_dims",
                f"dim{pair[0]} and dim{pair[1]} of keyCacheRef {list(kc.shape)} and valueCacheRef "
                f"{list(vc.shape)} should be the same",
            )
    if mode in ("alibi", "rope", "omni"):
        for name in ("compressLensOptional", "seqLensOptional"):
            tensor = getattr(a, name)
            if tensor is None:
                fail(
                    "compress_null",
                    f"{name} is nullptr in {mode} mode; CANN 8.5 dereferences it in the tiling (a host crash), "
                    "aclnn-emu rejects the call",
                )
            if tensor.ndim != 1:
                fail("compress_rank", f"{name} should be 1-D, got {list(tensor.shape)}")


def _check_dims_a2(a, env, mode: str) -> tuple:
    """CheckInputDim: sizes as uint64 in (0, UINT_MAX], cache capacity, the NZ cache layout and, in the
    compress modes, the batch count. Returns (heads, k_head_size, v_head_size or None, batches or 0)."""
    key, kc = a.key, a.keyCacheRef
    tokens, heads, head_k = key.shape
    blocks = kc.shape[0]
    block_size = kc.shape[-2] if mode == "nz" else kc.shape[1]
    for name, v in (("numTokens", tokens), ("numHead", heads), ("kHeadSize", head_k), ("blockSize", block_size)):
        if not 0 < v <= UINT_MAX:
            fail("dims_positive", f"{name} is invalid: {v}")
    if mode == "nz" and env.version.has(NZ_5D) and block_size > 65535:
        fail("nz_block_size", f"blockSize should less than UINT16_MAX, got {block_size}")
    if blocks * block_size < tokens:
        fail(
            "cache_capacity",
            f"numBlocks * blockSize ({blocks} * {block_size}) should not be smaller than numTokens ({tokens})",
        )
    head_v = None
    if not mode.startswith("siso"):
        head_v = a.value.shape[2]
        if not 0 < head_v <= UINT_MAX:
            fail("dims_positive", f"vHeadSize is invalid: {head_v}")
        if mode == "nz":
            _check_nz_cache(kc, heads, head_k, key.dtype, "keyCacheRef")
            _check_nz_cache(a.valueCacheRef, heads, head_v, a.value.dtype, "valueCacheRef")
    batches = 0
    if mode in ("alibi", "rope", "omni"):
        batches = a.seqLensOptional.storage_shape[0] if a.seqLensOptional.storage_shape else 0
        if not 0 < batches <= UINT_MAX:
            fail("batches", f"numBatchs is invalid: {batches}")
    return heads, head_k, head_v, batches


def _check_nz_cache(cache, heads: int, head_size: int, dtype, name: str) -> None:
    """A 4-D NZ cache [blocks, heads x D / last, blockSize, last], or (9.1.0, NZ_5D) a 5-D one [blocks, heads,
    D / last, blockSize, last], which holds the same bytes in the same order."""
    last = 32 // cache.np_dtype.itemsize
    if cache.ndim == 5:
        for dim, want, what in ((1, heads, "num_head"), (2, head_size // last, f"head_size / {last}")):
            if cache.shape[dim] != want:
                fail(f"nz_dim{dim}", f"dim{dim} of {name} is invalid: {cache.shape[dim]}, expected {want} ({what})")
        if cache.shape[4] != last:
            fail(
                "nz_dim3",
                f"last dim of {name} is invalid: {cache.shape[4]}, expected {last} (32 bytes of {dtype.short})",
            )
        return
    token_size = heads * head_size
    if cache.shape[1] != token_size // last:
        fail(
            "nz_dim1",
            f"dim1 of {name} is invalid: {cache.shape[1]}, expected {token_size // last} (num_head * head_size "
            f"/ {last})",
        )
    if cache.shape[3] != last:
        fail("nz_dim3", f"dim3 of {name} is invalid: {cache.shape[3]}, expected {last} (32 bytes of {dtype.short})")


def _nct_attrs(a) -> tuple[int, int, int]:
    """(strideK, offsetK, offsetV) as the uint32 tiling fields; strideV is read but never used."""
    strides = a.stridesOptional if a.stridesOptional is not None else (1, 1)
    offsets = a.offsetsOptional if a.offsetsOptional is not None else (0, 0)
    if len(strides) < 2 or len(offsets) < 2:
        fail(
            "nct_lists",
            f"stridesOptional {list(strides)} and offsetsOptional {list(offsets)} need two entries each "
            "(CANN 8.5 reads [0] and [1] unchecked)",
        )
    return strides[0] & UINT_MAX, offsets[0] & UINT_MAX, offsets[1] & UINT_MAX


def _warn_a2(a, env, mode, head_k, head_v, nct) -> None:
    """Where the 8.5 kernels compute something other than the doc promises (divergences file)."""
    if a.cacheModeOptional not in (None, "", *CACHE_MODES):
        env.warn(
            f"cacheMode {a.cacheModeOptional!r} is neither 'Norm' nor 'PA_NZ'; the Atlas A2/A3 tiling "
            "(GetTemplateType) only compares it with 'PA_NZ', so it runs as 'Norm'. Fix: pass 'Norm' or 'PA_NZ'"
        )
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
