"""aclnnScatterPaKvCache on Ascend910_95: the arch35 tiling's checks, in the source's order."""

import math
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.kv_cache import scatter_arch35 as arch35
from aclnn_emu.kernels.kv_cache.scatter_rows import hif8_window_mean
from aclnn_emu.opdef.failures import fail
from .entry import I32
from .launch import _dim, _flat, _index_values


# ---------------------------------------------------------------------------------------------
# Ascend910_95: ScatterPaKvCacheTiling (arch35), dual input/output mode
# ---------------------------------------------------------------------------------------------
def _tiling_arch35(a, env):
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
            f"{', '.join(ignored)} ignored: the arch35 tiling never reads cacheMode, scatterMode, strides or "
            "offsets; the scenario follows the key's rank and the optional tensors (caches are ND)"
        )
    # GetInputDtype / GetIndexDtype: the kernel lookup already made all four dtypes equal.
    if len(key) != len(value):
        fail("kv_rank", f"the dim num of key {list(key)} and value {list(value)} are not the same")
    if len(key) not in (3, 4):
        fail("key_rank", f"the dim num of key must be 3 or 4, got {len(key)}")
    if len(key) == 3:
        return _normal_arch35(a, key, kc, value, vc, slot, env.part)
    if a.compressLensOptional is None or a.seqLensOptional is None:
        fail(
            "compress_null",
            "when the dim num of key is 4, compressLensOptional and seqLensOptional must not be nullptr",
        )
    rope = a.compressSeqOffsetOptional is not None
    _check_compress_arch35(a, key, kc, value, vc, slot, rope)
    if rope:
        env.warn(
            "the arch35 Rope kernel copies the tail as tokens [0, L - w - o) of the sequence, not the "
            "tokens [o + w, L) after the window that the doc and the A2/A3 kernel use. Fix: write the tail "
            "with a separate 3-D (Normal) call, or keep L - w - o <= 0"
        )
    return _run_compress_arch35(a, "rope" if rope else "alibi", env.part)


def _check_compress_arch35(a, key, kc, value, vc, slot, rope: bool) -> None:
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
                "compress_dims",
                f"{message} (key {list(key)}, value {list(value)}, key_cache {list(kc)}, value_cache {list(vc)}, "
                f"slot_mapping {list(slot)}, compress_lens {list(cl)}, seq_lens {list(lens)})",
            )


def _normal_arch35(a, key, kc, value, vc, slot, part):
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
                "normal_dims",
                f"{message} (key {list(key)}, value {list(value)}, key_cache {list(kc)}, value_cache {list(vc)}, "
                f"slot_mapping {list(slot)})",
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
        fail("slot_rank", f"slot_mapping dim num must be 1 when the tokens do not fit in UB, got {list(slot)}")
    int32_offsets = fully_loaded and a.slotMapping.dtype == I32

    def run():
        slots, findings = _index_values(a.slotMapping, tokens, int32_words=False)
        for src, cache, name in ((a.key, a.keyCacheRef, "keyCacheRef"), (a.value, a.valueCacheRef, "valueCacheRef")):
            row = math.prod(src.storage_shape[1:])
            findings += arch35.scatter_normal(
                _flat(cache), _flat(src), slots, row, cores, name, name.replace("CacheRef", ""), int32_offsets
            )
        return findings

    return run


def _run_compress_arch35(a, mode, part):
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
                arch35.scatter_rope(*args, offsets, *rest, mean=mean)
                if mode == "rope"
                else arch35.scatter_alibi(*args, *rest)
            )
        return findings

    return run
