"""aclnnGatherPaKvCache (attention/gather_pa_kv_cache, CANN 8.5; generated aclnn).

No hand-written op_api: the generated entry point (reference §0.1) checks the required tensors
for NULL (161001), succeeds at once when both outputs are empty, looks the kernel up on the OpDef's
(dtype, format) combinations (161002 / 561003) and runs the tiling (561002). Tilings and kernels
differ per chip (docs/divergences/gather_pa_kv_cache.md):
- Atlas A2/A3 (`_tiling_a2`, Tiling4GatherPaKvCache; kernels gather_pa_kv_cache_{nd,nz}.h) check
  the cache mode string and that five sizes are positive, nothing else;
- Ascend910_95 (`_tiling_arch35`, GatherPaKvCacheTiling; arch35 kernels) checks ranks, shapes,
  formats and the cache mode, and takes FRACTAL_NZ caches for PA_NZ.
CANN 9.1.0 has a hand-written op_api instead (op_api.py), and its failures behind the op_api's own
checks are 561103 (common.l0op).
"""

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.kv_cache import gather
from aclnn_emu.kernels.kv_cache.layouts import PIECE_BYTES, NdLayout, NzLayout
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.generated import shape_dim
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.signature import OpError
from aclnn_emu.ops.kv_cache.common import CACHE_MODES, DTYPES_ARCH35, TOOLS_WORKSPACE, launch, prepare_by_release
from . import op_api
from .checks_arch35 import WORKSPACE_ARCH35, _tiling_arch35
from .entry import I32, I64, ND, NZ, OP
from .launch import _NAMES, _bytes, _index


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
        "Ascend910_95": [_combo(d, i, f) for f in (ND, NZ) for i in (I32, I64) for d in DTYPES_ARCH35],
    }
)


COMBOS["Ascend910_93"] = COMBOS["Ascend910B"]


NZ_TOKEN_BYTES = 148 * 1024  # the A2/A3 PA_NZ kernel's buffer for one token (UB_TMP_BUF_SIZE)


@OP.prepare
def prepare(a, env):
    return prepare_by_release(a, env, OP, COMBOS, "gpkc.hand_written_op_api", op_api.checks, _tiling)


def _tiling(a, env):
    if env.soc == "Ascend910_95":
        return launch(OP, WORKSPACE_ARCH35, _tiling_arch35(a, env.part))
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
        fail("cache_mode", f"cacheMode {mode!r} is not supported; expected 'Norm' or 'PA_NZ'")
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
                name,
                f"{name} ({source} as int32) is invalid: {checked[name]}; it must be positive "
                f"(keyCache {list(kc)}, blockTables {list(table)}, keyRef {list(key)}, valueRef {list(value)})",
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
        lens, tables, offsets = _index(a, batches, cols, cumsum)
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
