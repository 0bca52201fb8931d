"""The framework part of a *generated* aclnn entry point (reference indexer-sparse §0.1).

Ops without a hand-written op_api (SparseFlashAttentionGrad, ScatterPaKvCache, GatherPaKvCache)
get this order: required nulls -> 161001, all outputs empty -> success, kernel key lookup on
(dtype, format) of every input and output -> 161002 (required I/O off the list) or 561003 (only
an optional one), then the op's tiling (561002).
"""

import numpy as np

from .. import status
from ..formats import ND_LIKE, Format
from .failures import mapped
from .signature import OpError

# The tiling's GRAPH_FAILED, as every generated entry point returns it: a decorator on the op's
# prepare, so its TilingFailures become 561002 in one place.
tiling_failed = mapped(status.ACLNN_ERR_INNER_TILING_ERROR, "", "tiling.")


def check_required_not_null(a, op) -> None:
    """Required inputs first, then required outputs, each in prototype order."""
    for outputs in (False, True):
        for p in op.tensors:
            if p.output == outputs and not p.optional and getattr(a, p.name) is None:
                raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{p.name} must not be nullptr", rule=f"null.{p.name}")


def all_outputs_empty(a, op) -> bool:
    """True when every output (and every in-place ref tensor) has 0 elements: nothing to launch."""
    outs = [getattr(a, p.name) for p in op.tensors if p.output or p.ref]
    return all(t is None or t.is_empty for t in outs)


def _spec(entry) -> tuple:
    """A combination's entry: a DataType (format ND) or a (DataType, Format) pair."""
    return entry if isinstance(entry, tuple) else (entry, Format.ACL_FORMAT_ND)


def _fits(tensor, entry) -> bool:
    dtype, fmt = _spec(entry)
    return tensor.dtype == dtype and (tensor.format in ND_LIKE if fmt == Format.ACL_FORMAT_ND else tensor.format == fmt)


def check_kernel_key(a, op, combos, soc: str | None = None) -> None:
    """Find a registered (dtype, format) combination for the call's tensors.

    `combos` lists the OpDef combinations, each mapping parameter name -> DataType (format ND) or
    (DataType, Format), or maps each chip to its list (then `soc` picks the chip's). Absent
    optional tensors do not take part in the key.
    """
    per_chip = combos if isinstance(combos, dict) else {}
    combos = per_chip[soc] if per_chip else combos
    present = {p.name: getattr(a, p.name) for p in op.tensors if getattr(a, p.name) is not None}
    if any(_matches(present, combo) for combo in combos):
        return
    required = {n: t for n, t in present.items() if not _optional(op, n)}
    usable = [c for c in combos if _matches(required, c)]
    if not usable:
        # Blame the required tensor that disagrees with the combination closest to the call.
        best = max(combos, key=lambda c: sum(n not in c or _fits(t, c[n]) for n, t in required.items()))
        name = next(n for n, t in required.items() if n in best and not _fits(t, best[n]))
        t = required[name]
        specs = [_spec(c[name]) for c in combos if name in c]
        allowed = sorted({d for d, _ in specs}, key=int)
        formats = sorted({f for _, f in specs}, key=int)
        chips = (
            []
            if any(_fits(t, c[name]) for c in combos if name in c)
            else [  # a dtype or format of its own
                chip
                for chip, table in per_chip.items()
                if chip != soc and any(name in c and _fits(t, c[name]) for c in table)
            ]
        )
        own = t.dtype.short if t.dtype not in allowed else f"format {t.format.short}"
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"{name} has dtype {t.dtype.short} and format {t.format.short}; the registered kernels "
            f"{f'of {soc} ' if per_chip else ''}take dtype {' / '.join(d.short for d in allowed)} with "
            f"format {' / '.join(f.short for f in formats)}, in a combination with the other required "
            "tensors" + (f"; {own} is registered on {' and '.join(chips)}" if chips else ""),
            rule=f"dtype.{name}",
            chips=chips,
        )
    optional = [n for n in present if _optional(op, n)]
    off = [n for n in optional if not any(_fits(present[n], c[n]) for c in usable if n in c)] or optional
    raise OpError(
        status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
        "Cannot find kernel file: no registered kernel takes optional input(s) "
        + ", ".join(f"{n} ({present[n].dtype.short}, {present[n].format.short})" for n in off)
        + " together with the required tensors",
        rule="kernel.optional",
    )


def before_tiling(a, op, combos, soc: str) -> bool:
    """The whole framework part for an op whose kernels are all in `combos` (per chip): required
    nulls, then False when all outputs are empty (nothing to launch), then the kernel lookup."""
    check_required_not_null(a, op)
    if all_outputs_empty(a, op):
        return False
    check_kernel_key(a, op, combos, soc)
    return True


def _matches(tensors: dict, combo: dict) -> bool:
    return all(name not in combo or _fits(t, combo[name]) for name, t in tensors.items())


def _optional(op, name) -> bool:
    return next(p.optional for p in op.params if p.name == name)


def check_soc(env, op_name: str, socs) -> None:
    """The OpDef registers kernels for `socs` only: any other chip finds no kernel (561003)."""
    if env.soc not in socs:
        raise OpError(
            status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
            f"Cannot find kernel file: {op_name} has kernels for {' and '.join(socs)} only, not {env.soc}",
            rule="kernel.soc",
            chips=socs,
        )


def attr_int32(value: int) -> int:
    """An int64 attribute that a tiling reads through an ``int32_t`` pointer: its low 32 bits."""
    return int(np.array(value, np.int64).astype(np.uint64).astype(np.uint32).view(np.int32))


def attr_uint32(value: int) -> int:
    """An int64 attribute that a tiling reads through a ``uint32_t`` pointer: its low 32 bits."""
    return value & 0xFFFFFFFF


def shape_dim(shape, i: int) -> int:
    """gert::Shape::GetDim: a dimension past the rank reads as 0."""
    return shape[i] if i < len(shape) else 0


def framework_checks(a, op, combos, env, socs) -> bool:
    """What every generated entry point does before its tiling, for an op whose kernels are
    registered for `socs`: required nulls (161001), then False when all outputs are empty (nothing
    to launch), then the chip (561003) and the kernel key (161002; an optional tensor alone off the
    list is 561003, an inferred rule: a portability warning unless ACLNN_EMU_STRICT=1)."""
    check_required_not_null(a, op)
    if all_outputs_empty(a, op):
        return False
    check_soc(env, op.name, socs)
    try:
        check_kernel_key(a, op, combos)
    except OpError as exc:
        if exc.code != status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR:
            raise
        env.inferred(exc.code, exc.rule, exc.message)
    return True
