"""aclnnScatterPaKvCache: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import math
import numpy as np
from aclnn_emu import status
from aclnn_emu.kernels.kv_cache import scatter_a2 as a2
from aclnn_emu.kernels.kv_cache import scatter_blocks
from aclnn_emu.opdef.signature import OpError
from aclnn_emu.ops.kv_cache.common import flat, index_values
from .entry import OP


def _dim(shape, i):
    """gert::Shape::GetDim: a dimension past the rank reads as an invalid value (never equal to a real one)."""
    return shape[i] if i < len(shape) else None


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
        pairs = []
        for src, cache, name in ((a.key, a.keyCacheRef, "keyCacheRef"), (a.value, a.valueCacheRef, "valueCacheRef")):
            rows, more = index_values(OP, src, tokens * math.prod(src.shape[1:]))
            whole = _whole(cache, name)  # a 5-D cache [blocks, heads, D/last, bs, last] as the 4-D one it equals
            pairs.append((whole.reshape(cache.shape[0], -1, *cache.shape[-2:]), rows.reshape(tokens, -1), name))
            findings += more
        return findings + a2.scatter_nz(pairs, slots, cores)

    return run


def _run_nhsd(a, heads, head_k, head_v, block_size, cores):
    def run():
        slots, findings = _index_values(a.slotMapping, a.key.shape[0], int32_words=False)
        for src, cache, head_size, name in (
            (a.key, a.keyCacheRef, head_k, "keyCacheRef"),
            (a.value, a.valueCacheRef, head_v, "valueCacheRef"),
        ):
            findings += a2.scatter_nhsd(_flat(cache), _flat(src), slots, heads, head_size, block_size, cores, name)
        return findings

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
# Device data as the kernels see it
# ---------------------------------------------------------------------------------------------
def _flat(tensor, unit=None) -> np.ndarray:
    """The tensor's storage as the kernels see it (the A2 kernels move value data in the key's type)."""
    return flat(OP, tensor, unit)


def _whole(cache, name: str) -> np.ndarray:
    """A cache the NZ kernel addresses block by block from its first element: all of its view's
    elements must lie in its storage, or the kernel writes past it."""
    flat = _flat(cache)
    if len(flat) < cache.numel:
        raise OpError(
            status.ACL_ERROR_RT_AICORE_EXCEPTION,
            f"{name} {cache!r}: the kernel addresses {cache.numel} elements from its first one, its storage holds "
            f"{len(flat)} from there; its writes would land past it (AI Core exception on the device)",
            rule="kernel.cache_past_storage",
        )
    return flat[: cache.numel].reshape(cache.shape)


def _index_values(tensor, count: int, int32_words: bool) -> tuple[np.ndarray, list]:
    """The first `count` index values the kernel reads: int32 words of the buffer on the A2 ND and
    compress paths, values of the tensor's own dtype otherwise. Missing ones read as 0, reported."""
    values, findings = index_values(OP, tensor, count, np.int32 if int32_words else None)
    return values.astype(np.int64), findings
