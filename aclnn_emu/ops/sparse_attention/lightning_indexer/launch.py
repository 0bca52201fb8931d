"""aclnnLightningIndexer: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu import status
from aclnn_emu.kernels.sparse_attention import lightning_indexer as kernel
from aclnn_emu.kernels.sparse_attention.key_rows import KeyRows
from aclnn_emu.kernels.sparse_attention.lightning_indexer_plan import plan_bsnd, plan_tnd
from aclnn_emu.runtime import sanitizer
from aclnn_emu.opdef.outputs import writable
from aclnn_emu.opdef.signature import OpError
from aclnn_emu.ops.sparse_attention.paged import block_table, check_table_extent
from .entry import MAX_HEADS, OP


def _int32s(tensor, what) -> np.ndarray:
    return tensor.read(what).reshape(-1).astype(np.int64)


def _rows(a, p) -> tuple[kernel.Rows, KeyRows]:
    """Each query row's batch and usable key count (kernel.Rows), and where its keys are."""
    big = np.iinfo(np.int64).max
    seq_q, seq_k = a.actualSeqLengthsQueryOptional, a.actualSeqLengthsKeyOptional
    if p["lq"] == "TND":
        cu_q = _int32s(seq_q, "actualSeqLengthsQuery")
        cu_k = _int32s(seq_k, "actualSeqLengthsKey")
        plan = plan_tnd(cu_q, cu_k if p["lk"] == "TND" else np.cumsum(cu_k), a.query.shape[0], big, p["mode"])
        batch = np.minimum(np.searchsorted(cu_q, np.arange(a.query.shape[0]), side="right"), len(cu_q) - 1)
        len_q = np.diff(np.concatenate(([0], cu_q)))[batch]
        computed = np.arange(a.query.shape[0]) < cu_q[-1]
        kbase = np.concatenate(([0], cu_k[:-1])) if p["lk"] == "TND" else np.zeros(len(cu_k), np.int64)
    else:
        b, s1 = a.query.shape[:2]
        act_q = _int32s(seq_q, "actualSeqLengthsQuery") if seq_q is not None else None
        act_k = _int32s(seq_k, "actualSeqLengthsKey") if seq_k is not None else None
        plan = plan_bsnd(b, s1, p["s2"], big, p["mode"], act_q, act_k)
        batch = np.arange(b * s1) // max(s1, 1)
        len_q = (np.full(b, s1) if act_q is None else act_q)[batch]
        computed = np.ones(b * s1, bool)
        kbase = np.arange(b, dtype=np.int64) * p["s2"]
    if p["lk"] == "PA_BSND":
        keys = KeyRows(kbase, block_table(a.blockTableOptional, a.key.shape[0], OP.name), p["block"])
    else:
        keys = KeyRows(kbase)
    valid = np.minimum(plan.n, plan.klen)
    return kernel.Rows(batch.astype(np.int64), valid, computed, len_q.astype(np.int64)), keys


def _run(a, p) -> None:
    rows, keys = _rows(a, p)
    heads, dim = p["n1"], a.query.shape[-1]
    if heads > MAX_HEADS:
        sanitizer.report(
            "workspace-overflow",
            f"aclnnLightningIndexer: {heads} query heads; the CANN 8.5 kernel's "
            f"workspace holds {MAX_HEADS} (the doc's limit), so the NPU result is undefined",
        )
    total = len(rows.batch)
    query = a.query.read("query").reshape(total, heads, dim)
    key = a.key.read("key").reshape(-1, dim)
    weights = a.weights.read("weights").reshape(total, heads)
    _check_key_extent(rows, keys, key.shape[0])
    indices = writable(a.sparseIndicesOut, (total, p["count"]), np.int32, OP.name)
    values = writable(a.sparseValuesOut, (total, p["count"]), a.query.np_dtype, OP.name) if a.returnValues else None
    if not rows.computed.all():
        sanitizer.report(
            "unwritten-output",
            f"aclnnLightningIndexer: query rows {int(np.argmin(rows.computed))}.."
            f"{total - 1} lie past the last actualSeqLengthsQuery offset; the NPU leaves them unwritten",
        )
    kernel.lightning_indexer(
        query, key, weights, rows, keys, p["count"], indices[0], None if values is None else values[0]
    )
    for target in (indices, values):
        if target is not None and target[1] is not None:
            target[1]()


def _check_key_extent(rows, keys, key_rows) -> None:
    """Rows whose keys would be read outside the key tensor: TND/BSND lengths larger than the shape,
    or a negative cumulative key length, from which a batch's keys start before the key's first row."""
    if not rows.computed.any():
        return
    if keys.table is not None:  # the kernel loops over the whole actual length (GetS1S2ActualSeqLen)
        check_table_extent(OP.name, keys.table, keys.block_size, rows.batch[rows.computed], rows.valid[rows.computed])
        return
    starts = keys.kbase[rows.batch][rows.computed]
    ends = starts + np.maximum(rows.valid[rows.computed], 0)
    if (ends > key_rows).any() or ((starts < 0) & (ends > starts)).any():
        raise OpError(
            status.ACL_ERROR_RT_AICORE_EXCEPTION,
            "aclnnLightningIndexer: actual sequence lengths reach "
            f"outside the {key_rows} key rows (rows {int(starts.min())} to {int(ends.max())}); the NPU reads out of "
            "bounds",
            rule="kernel.key_extent",
        )
