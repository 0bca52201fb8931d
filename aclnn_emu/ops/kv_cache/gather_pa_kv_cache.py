"""aclnnGatherPaKvCache (attention/gather_pa_kv_cache, CANN 8.5; generated aclnn).

No hand-written op_api: the generated entry point (reference §0.1) checks the required tensors
for NULL (161001), succeeds at once when both outputs are empty, looks the kernel up on the OpDef's
(dtype, format) combinations (161002 / 561003) and runs the tiling (561002). Tilings and kernels
differ per chip (docs/divergences/gather_pa_kv_cache.md):
- Atlas A2/A3 (`_tiling_a2`, Tiling4GatherPaKvCache; kernels gather_pa_kv_cache_{nd,nz}.h) check
  the cache mode string and that five sizes are positive, nothing else;
- Ascend910_95 (`_tiling_910_95`, GatherPaKvCacheTiling; arch35 kernels) checks ranks, shapes,
  formats and the cache mode, and takes FRACTAL_NZ caches for PA_NZ.
"""

import numpy as np

from ... import status
from ...dtypes import DataType
from ...formats import ND_LIKE, Format
from ...kernels.kv_cache import gather
from ...kernels.kv_cache.layouts import PIECE_BYTES, NdLayout, NzLayout
from ..generated import before_tiling, shape_dim
from ..gaps import Gaps
from ..signature import Bool, Launch, Op, OpError, String, TensorIn, TensorRef
from .common import CACHE_MODES, DTYPES_910_95, TOOLS_WORKSPACE, fail, flat, launch

OP = Op(
    "GatherPaKvCache",
    "aclnn_gather_pa_kv_cache.h",
    [
        TensorIn("keyCache", doc="paged key cache [blocks, blockSize, heads, headSize] (Norm) or its NZ form (PA_NZ)"),
        TensorIn("valueCache", doc="paged value cache, laid out like keyCache"),
        TensorIn("blockTables", doc="cache block of each batch's i-th block [batch, maxBlocks]"),
        TensorIn("seqLens", doc="tokens per batch (cumulative when isSeqLensCumsum)"),
        TensorRef("keyRef", ctype="aclTensor *", doc="gathered keys, written in place [tokens, heads, headSize]"),
        TensorRef("valueRef", ctype="aclTensor *", doc="gathered values, written in place"),
        TensorIn("seqOffsetOptional", optional=True, doc="first cached token of each batch (None: 0)"),
        String("cacheMode", optional=True, values=CACHE_MODES, doc="cache layout (None: Norm)"),
        Bool("isSeqLensCumsum", doc="seqLens holds cumulative lengths (batch + 1 entries) rather than lengths"),
    ],
)

ND, NZ = Format.ACL_FORMAT_ND, Format.ACL_FORMAT_FRACTAL_NZ
I32, I64 = DataType.ACL_INT32, DataType.ACL_INT64
INDEX_PARAMS = ("blockTables", "seqLens", "seqOffsetOptional")


INFERRED = Gaps(
    OP,
    "inferred",
    {
        "nz_token_size": "Atlas A2/A3 PA_NZ rows above the 148 KiB the kernel holds per token (the doc's limit; its "
        "copies overrun the unified buffer)"
    },
    code=status.ACL_ERROR_RT_AICORE_EXCEPTION,
)


def _combo(data, index, cache_format=ND) -> dict:
    return {
        "keyCache": (data, cache_format),
        "valueCache": (data, cache_format),
        "keyRef": data,
        "valueRef": data,
        **{name: index for name in INDEX_PARAMS},
    }


# gather_pa_kv_cache_def.cpp: one dtype for both caches and both outputs; ascend910b / ascend910_93
# register FLOAT16, BF16 and INT8 with INT32 indices, all ND; ascend910_95 its 12 dtypes with INT32
# or INT64 indices, the caches ND or FRACTAL_NZ.
COMBOS = OP.kernels(
    {
        "Ascend910B": [_combo(d, I32) for d in (DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8)],
        "Ascend910_95": [_combo(d, i, f) for f in (ND, NZ) for i in (I32, I64) for d in DTYPES_910_95],
    }
)
COMBOS["Ascend910_93"] = COMBOS["Ascend910B"]
WORKSPACE_910_95 = 32  # GatherPaKvCacheTiling::GetWorkspaceSize
NZ_TOKEN_BYTES = 148 * 1024  # the A2/A3 PA_NZ kernel's buffer for one token (UB_TMP_BUF_SIZE)


@OP.prepare
def prepare(a, env):
    if not before_tiling(a, OP, COMBOS, env.soc):
        return Launch.nothing()
    if env.soc == "Ascend910_95":
        return launch(OP, WORKSPACE_910_95, _tiling_910_95(a, env.part))
    return launch(OP, TOOLS_WORKSPACE, _tiling_a2(a, env))


# ---------------------------------------------------------------------------------------------
# Atlas A2 / A3: Tiling4GatherPaKvCache (CommonGatherPaKvCacheTiling)
# ---------------------------------------------------------------------------------------------
def _tiling_a2(a, env):
    """The mode string, then blockSize, numTokens (the batches), numblkTabCol, tokenSizeK and
    tokenSizeV, each read from a storage shape as int32 and required positive. Ranks are not
    checked: a dimension past a shape's rank reads as 0 (the unset slots of gert::Shape)."""
    mode = "Norm" if a.cacheMode is None else a.cacheMode
    if mode not in CACHE_MODES:
        fail(f"cacheMode {mode!r} is not supported; expected 'Norm' or 'PA_NZ'", "cache_mode")
    nz = mode == "PA_NZ"
    kc, key, value, table = (t.storage_shape for t in (a.keyCache, a.keyRef, a.valueRef, a.blockTables))

    if nz:
        sizes = [("blockSize", "keyCache dim 2", shape_dim(kc, 2))]
        tokens = [
            ("tokenSizeK", "keyRef dim 1", shape_dim(key, 1)),
            ("tokenSizeV", "valueRef dim 1", shape_dim(value, 1)),
        ]
    else:
        sizes = [("blockSize", "keyCache dim 1", shape_dim(kc, 1))]
        tokens = [
            ("tokenSizeK", "keyRef dim 1 * dim 2", shape_dim(key, 1) * shape_dim(key, 2)),
            ("tokenSizeV", "valueRef dim 1 * dim 2", shape_dim(value, 1) * shape_dim(value, 2)),
        ]
    sizes += [
        ("numTokens", "blockTables dim 0", shape_dim(table, 0)),
        ("numblkTabCol", "blockTables dim 1", shape_dim(table, 1)),
    ]
    checked = {}
    for name, source, size in sizes + tokens:
        checked[name] = gather.c_int(size, 32)  # static_cast<int32_t>
        if checked[name] <= 0:
            fail(
                f"{name} ({source} as int32) is invalid: {checked[name]}; it must be positive "
                f"(keyCache {list(kc)}, blockTables {list(table)}, keyRef {list(key)}, valueRef {list(value)})",
                name,
            )
    block_size, batches, cols = checked["blockSize"], checked["numTokens"], checked["numblkTabCol"]
    unit = a.keyCache.np_dtype.itemsize  # typeByte; the lookup made all four data dtypes one
    row_k, row_v = checked["tokenSizeK"] * unit, checked["tokenSizeV"] * unit
    _warn_a2(a, env, nz, (kc, key, value, table), row_k, row_v)
    cumsum = bool(a.isSeqLensCumsum)

    def run():
        if nz and gather.nz_chunk(cols) == 0:
            raise OpError(
                status.ACL_ERROR_RT_AICORE_EXCEPTION,
                f"blockTables has {cols} columns: the PA_NZ kernel "
                "fits no batch in its locate buffer and divides by zero (AI Core exception on the device)",
                rule="kernel.nz_table_width",
            )
        lens, tables, offsets = _index(a)
        outs = _bytes(a.keyRef), _bytes(a.valueRef)
        limit = max(len(outs[0]) // row_k, len(outs[1]) // row_v)
        planner = gather.plan_a2_nz if nz else gather.plan_a2_nd
        runs, findings = planner(lens, tables, offsets, batches, cols, block_size, cumsum, limit)
        for out, cache, row, names in zip(outs, (a.keyCache, a.valueCache), (row_k, row_v), _NAMES):
            layout = NzLayout(block_size, row // PIECE_BYTES, block_size * row) if nz else NdLayout(row)
            findings += gather.copy(
                out, _bytes(cache), layout, runs, block_size, row, *names, align=None if nz else PIECE_BYTES
            )
        return findings

    return run


def _warn_a2(a, env, nz, shapes, row_k, row_v) -> None:
    """What the A2/A3 kernels do differently from the doc, said before they do it."""
    kc, key, value, table = shapes
    ranks = [
        (name, shape, rank)
        for name, shape, rank in (
            ("keyCache", kc, 4),
            ("valueCache", a.valueCache.storage_shape, 4),
            ("blockTables", table, 2),
            ("seqLens", a.seqLens.storage_shape, 1),
            ("keyRef", key, 2 if nz else 3),
            ("valueRef", value, 2 if nz else 3),
        )
        if len(shape) != rank
    ]
    if ranks:
        env.warn(
            "the Atlas A2/A3 tiling checks no ranks; "
            + ", ".join(f"{n} is {list(s)}, not {r}-D" for n, s, r in ranks)
            + "; it takes its sizes from the dims the doc's layouts have there (PA_NZ: tokenSize = keyRef "
            "dim 1; Norm: dim 1 * dim 2) and the kernels address the rest of each tensor from those"
        )
    rows = [(name, row) for name, row in (("keyRef", row_k), ("valueRef", row_v)) if row % PIECE_BYTES]
    if rows and nz:
        env.warn(
            "the Atlas A2/A3 PA_NZ kernel moves whole 32-byte pieces: "
            + ", ".join(
                f"{name} rows are {row} bytes, of which it writes {row // PIECE_BYTES * PIECE_BYTES}"
                for name, row in rows
            )
            + ". Fix: make num_heads * head_size * sizeof(dtype) a multiple of 32"
        )
    elif rows:
        env.warn(
            "the Atlas A2/A3 Norm kernel moves each block's tokens in whole 32-byte units, so the last "
            "(tokens * row bytes) % 32 bytes of a block stay unwritten: "
            + ", ".join(f"{name} rows are {row} bytes" for name, row in rows)
            + ". Fix: make num_heads * head_size * sizeof(dtype) a multiple of 32"
        )
    if nz and a.seqOffsetOptional is not None:
        env.warn(
            "with PA_NZ the Atlas A2/A3 kernel starts batch b at block-table column seqOffset[b] itself, not "
            "seqOffset[b] / block_size as the doc and the Norm kernel do (and reads seqOffset at b's index "
            "within its chunk of batches)"
        )
    big = [
        f"{name} rows of {row} bytes"
        for name, row in (("keyRef", row_k), ("valueRef", row_v))
        if nz and row // PIECE_BYTES * PIECE_BYTES > NZ_TOKEN_BYTES
    ]
    if big:
        INFERRED.warn(env, "nz_token_size", " and ".join(big))


# ---------------------------------------------------------------------------------------------
# Ascend 910_95: GatherPaKvCacheTiling (arch35), GetShapeAttrsInfo
# ---------------------------------------------------------------------------------------------
def _shape(tensor) -> tuple:
    """EnsureNotScalar(storage shape): a 0-d tensor reads as [1]."""
    return tuple(tensor.storage_shape) or (1,)


def _tiling_910_95(a, part):
    """GetAttrs, GetInputKeyCache, GetInputValueCache, GetInputBlockTables, GetInputSeqLens,
    GetInputOutputKey, GetInputOutputValue, GetInputSeqOffset, in that order."""
    mode = a.cacheMode or "Norm"  # NULL takes the OpDef default, "" the tiling's
    if mode not in CACHE_MODES:
        fail(f"cacheMode {mode!r} is not supported; [attr]cache_mode only supports 'Norm' and 'PA_NZ'", "cache_mode")
    norm = mode == "Norm"
    kc, block_size = _cache_910_95(a.keyCache, "keyCache", norm)
    vc, _ = _cache_910_95(a.valueCache, "valueCache", norm)
    skip = 3 if norm else 1
    for i in range(4):
        if i != skip and vc[i] != kc[i]:
            fail(
                f"valueCache dim {i} ({vc[i]}) must equal keyCache dim {i} ({kc[i]}) (keyCache {list(kc)}, "
                f"valueCache {list(vc)})",
                "value_cache_dims",
            )
    table = _shape(a.blockTables)
    _rank_and_positive(table, 2, "blockTables")
    batches, width = table
    lens = _shape(a.seqLens)
    _rank_and_positive(lens, 1, "seqLens")
    cumsum = bool(a.isSeqLensCumsum)
    if lens[0] != batches + cumsum:
        fail(
            f"seqLens has {lens[0]} values; with isSeqLensCumsum {str(cumsum).lower()} it must have "
            f"blockTables dim 0{' + 1' if cumsum else ''} = {batches + cumsum}",
            "seq_lens_len",
        )
    key = _shape(a.keyRef)
    _rank_and_positive(key, 3 if norm else 2, "keyRef")
    hidden_k = _hidden(key, kc, "keyRef", "keyCache", norm)
    value = _shape(a.valueRef)
    if len(value) != len(key):
        fail(f"valueRef must be {len(key)}-D in {mode} mode, got {list(value)}", "value_rank")
    for i in range(len(value) - 1):
        if value[i] != key[i]:
            fail(
                f"valueRef dim {i} ({value[i]}) must equal keyRef dim {i} ({key[i]}) (keyRef {list(key)}, "
                f"valueRef {list(value)})",
                "value_dims",
            )
    hidden_v = _hidden(value, vc, "valueRef", "valueCache", norm)
    offsets = a.seqOffsetOptional
    if offsets is not None:
        shape = _shape(offsets)
        if len(shape) != 1:
            fail(f"seqOffsetOptional must be 1-D, got {list(shape)}", "seq_offset_rank")
        if shape[0] != batches:
            fail(
                f"seqOffsetOptional has {shape[0]} values; it must have blockTables dim 0 = {batches}", "seq_offset_len"
            )
    unit = a.keyCache.np_dtype.itemsize
    cores = part.aiv_cores

    def run():
        lens, tables, offsets = _index(a)
        runs, findings = gather.plan_arch35(
            lens, tables, offsets, batches, width, block_size, cumsum, key[0], cores, not norm
        )
        for out, cache, hidden, names in zip(
            (a.keyRef, a.valueRef), (a.keyCache, a.valueCache), (hidden_k, hidden_v), _NAMES
        ):
            row = hidden * unit
            layout = NdLayout(row) if norm else NzLayout(block_size, row // PIECE_BYTES)
            findings += gather.copy(_bytes(out), _bytes(cache), layout, runs, block_size, row, *names)
        return findings

    return run


def _cache_910_95(tensor, name: str, norm: bool) -> tuple[tuple, int]:
    """GetInputKeyCache / GetInputValueCache up to the comparison of the two: (shape, block size)."""
    shape = _shape(tensor)
    if len(shape) != 4:
        fail(f"{name} must be 4-D, got {list(shape)}", f"{name}_rank")
    if name == "keyCache" and min(shape) <= 0:
        fail(f"{name} dims must be positive, got {list(shape)}", f"{name}_dims")
    if norm:
        if tensor.format not in ND_LIKE:
            fail(f"{name} format should be ND when cacheMode is Norm, got {tensor.format.short}", f"{name}_format")
        return shape, shape[1]
    last = PIECE_BYTES // tensor.np_dtype.itemsize
    if shape[3] != last:
        fail(
            f"{name} dim 3 must be {last} ({PIECE_BYTES} bytes of {tensor.dtype.short}) in PA_NZ mode, got "
            f"{list(shape)}",
            f"{name}_nz_dim3",
        )
    if tensor.format != NZ:
        fail(f"{name} format should be FRACTAL_NZ when cacheMode is PA_NZ, got {tensor.format.short}", f"{name}_format")
    return shape, shape[2]


def _rank_and_positive(shape, rank: int, name: str) -> None:
    if len(shape) != rank:
        fail(f"{name} must be {rank}-D, got {list(shape)}", f"{name}_rank")
    if min(shape) <= 0:
        fail(f"{name} dims must be positive, got {list(shape)}", f"{name}_dims")


def _hidden(out, cache, out_name: str, cache_name: str, norm: bool) -> int:
    """The token size (elements) of an output, checked against its cache: Norm [T, H, D] against
    [blocks, block_size, H, D]; PA_NZ [T, H*D] against [blocks, H*D/last, block_size, last]."""
    if norm:
        for i in (1, 2):
            if out[i] != cache[i + 1]:
                fail(
                    f"{out_name} dim {i} ({out[i]}) must equal {cache_name} dim {i + 1} ({cache[i + 1]}) "
                    f"({out_name} {list(out)}, {cache_name} {list(cache)})",
                    f"{out_name}_dims",
                )
        return out[1] * out[2]
    if out[1] != cache[1] * cache[3]:
        fail(
            f"{out_name} dim 1 ({out[1]}) must equal {cache_name} dim 1 * dim 3 ({cache[1]} * {cache[3]} = "
            f"{cache[1] * cache[3]})",
            f"{out_name}_dims",
        )
    return out[1]


# ---------------------------------------------------------------------------------------------
# Device data as the kernels see it
# ---------------------------------------------------------------------------------------------
_NAMES = (("keyRef", "keyCache"), ("valueRef", "valueCache"))


def _bytes(tensor) -> np.ndarray:
    return flat(OP, tensor, np.uint8)


def _index(a) -> tuple:
    """seqLens, blockTables and seqOffset (or None) as the kernels read them, in their dtype."""
    offsets = a.seqOffsetOptional
    return flat(OP, a.seqLens), flat(OP, a.blockTables), None if offsets is None else flat(OP, offsets)
