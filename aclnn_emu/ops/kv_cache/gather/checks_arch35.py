"""aclnnGatherPaKvCache on Ascend910_95: the arch35 tiling's checks, in the source's order."""

from aclnn_emu.formats import ND_LIKE
from aclnn_emu.kernels.kv_cache import gather
from aclnn_emu.kernels.kv_cache.layouts import PIECE_BYTES, NdLayout, NzLayout
from aclnn_emu.opdef.failures import fail
from aclnn_emu.ops.kv_cache.common import CACHE_MODES
from .entry import NZ
from .launch import _NAMES, _bytes, _index


WORKSPACE_ARCH35 = 32  # GatherPaKvCacheTiling::GetWorkspaceSize


# ---------------------------------------------------------------------------------------------
# Ascend910_95: GatherPaKvCacheTiling (arch35), GetShapeAttrsInfo
# ---------------------------------------------------------------------------------------------
def _shape(tensor) -> tuple:
    """EnsureNotScalar(storage shape): a 0-d tensor reads as [1]."""
    return tuple(tensor.storage_shape) or (1,)


def _tiling_arch35(a, part):
    """GetAttrs, GetInputKeyCache, GetInputValueCache, GetInputBlockTables, GetInputSeqLens,
    GetInputOutputKey, GetInputOutputValue, GetInputSeqOffset, in that order."""
    mode = a.cacheMode or "Norm"  # NULL takes the OpDef default, "" the tiling's
    if mode not in CACHE_MODES:
        fail("cache_mode", f"cacheMode {mode!r} is not supported; [attr]cache_mode only supports 'Norm' and 'PA_NZ'")
    norm = mode == "Norm"
    kc, block_size = _cache_arch35(a.keyCache, "keyCache", norm)
    vc, _ = _cache_arch35(a.valueCache, "valueCache", norm)
    skip = 3 if norm else 1
    for i in range(4):
        if i != skip and vc[i] != kc[i]:
            fail(
                "value_cache_dims",
                f"valueCache dim {i} ({vc[i]}) must equal keyCache dim {i} ({kc[i]}) (keyCache {list(kc)}, "
                f"valueCache {list(vc)})",
            )
    table = _shape(a.blockTables)
    _rank_and_positive(table, 2, "blockTables")
    batches, width = table
    lens = _shape(a.seqLens)
    _rank_and_positive(lens, 1, "seqLens")
    cumsum = bool(a.isSeqLensCumsum)
    if lens[0] != batches + cumsum:
        fail(
            "seq_lens_len",
            f"seqLens has {lens[0]} values; with isSeqLensCumsum {str(cumsum).lower()} it must have "
            f"blockTables dim 0{' + 1' if cumsum else ''} = {batches + cumsum}",
        )
    key = _shape(a.keyRef)
    _rank_and_positive(key, 3 if norm else 2, "keyRef")
    hidden_k = _hidden(key, kc, "keyRef", "keyCache", norm)
    value = _shape(a.valueRef)
    if len(value) != len(key):
        fail("value_rank", f"valueRef must be {len(key)}-D in {mode} mode, got {list(value)}")
    for i in range(len(value) - 1):
        if value[i] != key[i]:
            fail(
                "value_dims",
                f"valueRef dim {i} ({value[i]}) must equal keyRef dim {i} ({key[i]}) (keyRef {list(key)}, "
                f"valueRef {list(value)})",
            )
    hidden_v = _hidden(value, vc, "valueRef", "valueCache", norm)
    offsets = a.seqOffsetOptional
    if offsets is not None:
        shape = _shape(offsets)
        if len(shape) != 1:
            fail("seq_offset_rank", f"seqOffsetOptional must be 1-D, got {list(shape)}")
        if shape[0] != batches:
            fail(
                "seq_offset_len", f"seqOffsetOptional has {shape[0]} values; it must have blockTables dim 0 = {batches}"
            )
    unit = a.keyCache.np_dtype.itemsize
    cores = part.aiv_cores

    def run():
        lens, tables, offsets = _index(a, batches, width, cumsum)
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


def _cache_arch35(tensor, name: str, norm: bool) -> tuple[tuple, int]:
    """GetInputKeyCache / GetInputValueCache up to the comparison of the two: (shape, block size)."""
    shape = _shape(tensor)
    if len(shape) != 4:
        fail(f"{name}_rank", f"{name} must be 4-D, got {list(shape)}")
    if name == "keyCache" and min(shape) <= 0:
        fail(f"{name}_dims", f"{name} dims must be positive, got {list(shape)}")
    if norm:
        if tensor.format not in ND_LIKE:
            fail(f"{name}_format", f"{name} format should be ND when cacheMode is Norm, got {tensor.format.short}")
        return shape, shape[1]
    last = PIECE_BYTES // tensor.np_dtype.itemsize
    if shape[3] != last:
        fail(
            f"{name}_nz_dim3",
            f"{name} dim 3 must be {last} ({PIECE_BYTES} bytes of {tensor.dtype.short}) in PA_NZ mode, got "
            f"{list(shape)}",
        )
    if tensor.format != NZ:
        fail(f"{name}_format", f"{name} format should be FRACTAL_NZ when cacheMode is PA_NZ, got {tensor.format.short}")
    return shape, shape[2]


def _rank_and_positive(shape, rank: int, name: str) -> None:
    if len(shape) != rank:
        fail(f"{name}_rank", f"{name} must be {rank}-D, got {list(shape)}")
    if min(shape) <= 0:
        fail(f"{name}_dims", f"{name} dims must be positive, got {list(shape)}")


def _hidden(out, cache, out_name: str, cache_name: str, norm: bool) -> int:
    """The token size (elements) of an output, checked against its cache: Norm [T, H, D] against
    [blocks, block_size, H, D]; PA_NZ [T, H*D] against [blocks, H*D/last, block_size, last]."""
    if norm:
        for i in (1, 2):
            if out[i] != cache[i + 1]:
                fail(
                    f"{out_name}_dims",
                    f"{out_name} dim {i} ({out[i]}) must equal {cache_name} dim {i + 1} ({cache[i + 1]}) "
                    f"({out_name} {list(out)}, {cache_name} {list(cache)})",
                )
        return out[1] * out[2]
    if out[1] != cache[1] * cache[3]:
        fail(
            f"{out_name}_dims",
            f"{out_name} dim 1 ({out[1]}) must equal {cache_name} dim 1 * dim 3 ({cache[1]} * {cache[3]} = "
            f"{cache[1] * cache[3]})",
        )
    return out[1]
