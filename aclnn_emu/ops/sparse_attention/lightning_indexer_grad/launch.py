"""aclnnLightningIndexerGrad: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu import status
from aclnn_emu.kernels.sparse_attention import lightning_indexer_grad as kernel
from aclnn_emu.kernels.sparse_attention.lightning_indexer_plan import batch_lengths, plan_bsnd, plan_tnd
from aclnn_emu.runtime import sanitizer
from aclnn_emu.runtime.errors import AclError
from .entry import MAX_TOPK


def _flat(tensor, count: int, fill, what: str) -> np.ndarray:
    """The first `count` elements of a tensor in memory order, as the kernel addresses them.

    Reading past the tensor is undefined on the NPU: the missing part is `fill` and reported.
    """
    values = tensor.read(what).reshape(-1)
    if values.size >= count:
        return values[:count]
    sanitizer.report(
        "out-of-bounds-read",
        f"aclnnLightningIndexerGrad: the kernel reads {count} elements of "
        f"{what} {list(tensor.shape)}, which has {values.size}; the rest is taken as {fill}",
    )
    return np.concatenate([values, np.full(count - values.size, fill, values.dtype)])


def _plan(a, seq_k: int, top_k: int):
    if a.layout == "BSND":
        batch, seq_q = a.query.shape[:2]
        return plan_bsnd(batch, seq_q, seq_k, top_k, a.sparseMode)
    if a.actucalSeqLengthsKey is None:
        raise AclError(
            status.ACL_ERROR_RT_AICORE_EXCEPTION,
            "aclnnLightningIndexerGrad: layout TND without "
            "actualSeqLengthsKey; the kernel reads the key offsets through a null pointer",
        )
    # The kernel reads the cumulative offsets as uint32.
    cu_q = a.actucalSeqLengthsQuery.read("actualSeqLengthsQuery").reshape(-1).view(np.uint32)
    cu_k = _flat(a.actucalSeqLengthsKey, cu_q.size, 0, "actualSeqLengthsKey").view(np.uint32)
    _check_offsets(cu_q, cu_k)
    return plan_tnd(cu_q, cu_k, a.query.shape[0], top_k, a.sparseMode)


def _check_offsets(cu_q, cu_k) -> None:
    """Offsets the CANN 8.5 kernel mishandles: a query batch with no tokens derails its row walk
    (later rows get the wrong batch), and decreasing offsets wrap around as uint32 lengths."""
    problems = [f"actualSeqLengthsQuery gives batch {b} no tokens" for b in np.flatnonzero(batch_lengths(cu_q) <= 0)]
    problems += [f"actualSeqLengthsKey decreases at batch {b}" for b in np.flatnonzero(batch_lengths(cu_k) < 0)]
    if problems:
        sanitizer.report(
            "unsupported-input",
            f"aclnnLightningIndexerGrad: {'; '.join(problems[:4])}; the NPU "
            "result differs from the intended one that aclnn-emu computes",
        )


def _out_view(tensor, shape, dtype):
    """The output's device memory as an array of `shape` to fill in place, or None if it is not a
    plain contiguous tensor of the input dtype."""
    view = tensor.view("output")
    if tensor.np_dtype != dtype or not view.flags.c_contiguous or view.size != int(np.prod(shape)):
        return None
    return view.reshape(shape)


def _run(a, seq_k: int, top_k: int, dk_elements: int) -> None:
    rows, heads, dim = int(np.prod(a.query.shape[:-2])), a.query.shape[-2], a.query.shape[-1]
    plan = _plan(a, seq_k, top_k)
    if top_k > MAX_TOPK:
        sanitizer.report(
            "workspace-overflow",
            f"aclnnLightningIndexerGrad: topK {top_k} (dy's last dimension) "
            f"exceeds {MAX_TOPK}; the CANN 8.5 kernel overruns its per-core workspace",
        )
    query = a.query.read("query").reshape(rows, heads, dim)
    dy = _flat(a.dy, rows * top_k, 0, "dy").reshape(rows, top_k)
    indices = _flat(a.spareIndices, rows * top_k, -1, "sparseIndices").reshape(rows, top_k)
    weights = _flat(a.weights, rows * heads, 0, "weights").reshape(rows, heads)
    key_rows = a.key.numel // dim
    key = a.key.read("key").reshape(-1)[: key_rows * dim].reshape(key_rows, dim)

    dtype = query.dtype
    outputs = (a.dQuery, a.dKey, a.dWeights)
    out = [_out_view(t, like.shape, dtype) for t, like in zip(outputs, (query, key, weights))]
    results = kernel.lightning_indexer_grad(query, key, dy, indices, weights, plan, out=out)
    for tensor, given, result, numel in zip(outputs, out, results, (None, a.key.numel, None)):
        if given is None:
            _store(tensor, result, numel)
    if dk_elements > a.dKey.numel:
        sanitizer.report(
            "out-of-bounds-write",
            f"aclnnLightningIndexerGrad: the kernel writes {dk_elements} "
            f"dk elements, but dKey {list(a.dKey.shape)} has {a.dKey.numel}",
        )
    _report(results[3], plan.orphans)


def _store(tensor, values, numel=None) -> None:
    """Write a result in element order (padded with zeros to `numel`) into an output tensor, as the
    kernel writes it from the tensor's first element: a larger tensor keeps the rest, the part past a
    smaller one is reported and dropped."""
    flat = values.reshape(-1)
    if numel is not None and flat.size < numel:
        flat = np.concatenate([flat, np.zeros(numel - flat.size, flat.dtype)])
    target = tensor.view("output")
    if target.ndim == 0:  # a 0-d output holds one element (unravel_index needs an axis)
        target = target.reshape(1)
    if flat.size > target.size:
        sanitizer.report(
            "out-of-bounds-write",
            f"aclnnLightningIndexerGrad: the kernel writes {flat.size} elements into {tensor!r}, "
            f"which holds {target.size}; the rest are dropped here",
        )
    count = min(flat.size, target.size)
    target[np.unravel_index(np.arange(count), target.shape)] = flat[:count]


def _report(findings, orphans: int) -> None:
    if findings.bad_entries:
        row, pos, value = findings.first_bad
        sanitizer.report(
            "index-out-of-range",
            f"aclnnLightningIndexerGrad: {findings.bad_entries} sparseIndices "
            f"entries point outside their batch's keys (first: row {row}, position {pos}, value "
            f"{value}); the NPU would read key rows and atomically add dk rows out of range; they "
            "are skipped",
        )
    if findings.empty_rows:
        extra = f" ({orphans} TND rows lie past the last query offset)" if orphans else ""
        sanitizer.report(
            "unwritten-output",
            f"aclnnLightningIndexerGrad: {findings.empty_rows} query rows have no "
            f"usable index (first: row {findings.first_empty}){extra}; the NPU leaves their dQuery "
            "and dWeights unwritten, aclnn-emu writes zeros",
        )
