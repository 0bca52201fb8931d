"""The framework part of a *generated* aclnn entry point (reference indexer-sparse §0.1).

Ops without a hand-written op_api (SparseFlashAttentionGrad, ScatterPaKvCache) get this order:
required nulls -> 161001, all outputs empty -> success, kernel key lookup on (dtype, format) of
every input and output -> 161002 (required I/O off the list) or 561003 (only an optional one),
then the op's tiling (561002).
"""
from .. import status
from ..formats import ND_LIKE
from .signature import OpError


def check_required_not_null(a, op) -> None:
    """Required inputs first, then required outputs, each in prototype order."""
    for outputs in (False, True):
        for p in op.tensors:
            if p.output == outputs and not p.optional and getattr(a, p.name) is None:
                raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{p.name} must not be nullptr",
                              rule=f"null.{p.name}")


def all_outputs_empty(a, op) -> bool:
    """True when every output (and every in-place ref tensor) has 0 elements: nothing to launch."""
    outs = [getattr(a, p.name) for p in op.tensors if p.output or p.ref]
    return all(t is None or t.is_empty for t in outs)


def _fits(tensor, dtype) -> bool:
    return tensor.dtype == dtype and tensor.format in ND_LIKE


def check_kernel_key(a, op, combos: list[dict]) -> None:
    """Find a registered (dtype, ND format) combination for the call's tensors.

    `combos` lists the OpDef combinations, each mapping parameter name -> DataType. Absent
    optional tensors do not take part in the key.
    """
    present = {p.name: getattr(a, p.name) for p in op.tensors if getattr(a, p.name) is not None}
    if any(all(name not in combo or _fits(t, combo[name]) for name, t in present.items()) for combo in combos):
        return
    for p in op.tensors:
        t = present.get(p.name)
        if p.optional or t is None:
            continue
        allowed = sorted({c[p.name] for c in combos if p.name in c}, key=int)
        if not any(_fits(t, dt) for dt in allowed) or not any(
                all(_fits(present[q], c[q]) for q in present if q in c and not _optional(op, q)) for c in combos):
            raise OpError(status.ACLNN_ERR_PARAM_INVALID,
                          f"{p.name} has dtype {t.dtype.short} and format {t.format.short}; the registered "
                          f"kernels take dtype {' / '.join(d.short for d in allowed)} with format ND "
                          f"(in a combination with the other required tensors)", rule=f"dtype.{p.name}")
    off = [n for n, t in present.items() if _optional(op, n)]
    raise OpError(status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                  "Cannot find kernel file: no registered kernel takes optional input(s) "
                  + ", ".join(f"{n} ({present[n].dtype.short}, {present[n].format.short})" for n in off)
                  + " together with the required tensors", rule="kernel.optional")


def _optional(op, name) -> bool:
    return next(p.optional for p in op.params if p.name == name)
