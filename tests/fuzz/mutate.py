"""Cases from (seed, index): a baseline of a random entry point on a random chip family (a third in
strict mode) with up to three random changes. The same pair always gives the same case, so a worker
and its parent agree without sending the case, and a finding is reproduced from two numbers.

The changes know parameter kinds only (from the entry point's declaration), never an operator: an
entry point with a baseline is fuzzed with all of them.
"""

import copy
import dataclasses
import math

import numpy as np

from aclnn_emu import versions
from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.meta import contiguous_strides
from aclnn_emu.opdef.registry import by_name

from .baselines import ALL, BASELINES
from .case import Case, L, Same, T

HUGE = (1 << 31, (1 << 31) - 1, (1 << 32) + 2, 1 << 40, 1 << 62, (1 << 63) - 1)
INTS = (0, -1, 1, 2, 3, 7, 15, 16, 17, 64, 127, 128, 129, 2048, 2049, -(1 << 31), -(1 << 63), *HUGE)
DOUBLES = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, -1.0, 1e-30, 65504.0, 1e5)
STRINGS = (
    *("BSH", "BSND", "BNSD", "SBH", "TND", "NTD", "BNSD_BSND", "BSH_BNSD", "BSND_BNSD", "NTD_TND"),
    *("PA_BSND", "PA_BBND", "PA_NZ", "PA_ND", "Norm", "Rope", "Omni", "PA_BLK_BSND", "PA_BLK_NZ"),
    *("", "bsh", "BNSD ", "NSD", "B", "X" * 300, None),
)
DTYPES = tuple(d.name.removeprefix("ACL_") for d in DataType)
FORMATS = tuple(f.name for f in Format)
NZ = ("FRACTAL_NZ", "ACL_FORMAT_FRACTAL_NZ_C0_16", "ACL_FORMAT_FRACTAL_NZ_C0_32")
EXTREME_VALUES = ((math.nan,), (math.inf,), (-math.inf,), (65504.0, -65504.0), (1e38,), (0.0,), (math.nan, 1.0))


def _tensors(args) -> list:
    """(get, set) pairs for every tensor in the call, list items included."""
    found = []
    for i, arg in enumerate(args):
        if isinstance(arg, T):
            found.append((args, i))
        elif isinstance(arg, L):
            found += [(arg.items, j) for j, item in enumerate(arg.items) if isinstance(item, T)]
    return found


def _pick(rng, values):
    return values[int(rng.integers(len(values)))]


# -- changes: each takes (rng, op, args) and returns what it did, or None when it does not apply --
def dim(rng, op, args):
    holder, i = _pick(rng, _tensors(args) or [(None, None)])
    if holder is None:
        return None
    t = holder[i]
    shape = list(t.shape)
    choice = rng.integers(4)
    if choice == 0 and shape:  # one dimension
        k = int(rng.integers(len(shape)))
        shape[k] = _pick(rng, (0, -1, -2, 1, shape[k] + 1, shape[k] - 1, *HUGE))
    elif choice == 1 and shape:
        shape.pop(int(rng.integers(len(shape))))
    elif choice == 2:
        shape.insert(int(rng.integers(len(shape) + 1)), _pick(rng, (1, 2, 0)))
    else:
        shape = []
    holder[i] = dataclasses.replace(t, shape=tuple(shape), strides=None, storage=None)
    return f"shape {t.shape} -> {tuple(shape)}"


def dtype(rng, op, args):
    holder, i = _pick(rng, _tensors(args) or [(None, None)])
    if holder is None:
        return None
    name = _pick(rng, DTYPES)
    holder[i] = dataclasses.replace(holder[i], dtype=name)
    return f"dtype -> {name}"


def every_dtype(rng, op, args):
    """Every tensor of one dtype changed at once (a combination no kernel list names)."""
    name, old = _pick(rng, DTYPES), _pick(rng, ("FLOAT16", "BF16", "FLOAT", "INT8", "INT32"))
    for holder, i in _tensors(args):
        if holder[i].dtype == old:
            holder[i] = dataclasses.replace(holder[i], dtype=name)
    return f"every {old} -> {name}"


def format(rng, op, args):
    holder, i = _pick(rng, _tensors(args) or [(None, None)])
    if holder is None:
        return None
    t = holder[i]
    name = _pick(rng, NZ) if rng.random() < 0.5 else _pick(rng, FORMATS)
    storage = None
    if name in NZ and len(t.shape) >= 2 and rng.random() < 0.5:  # an NZ storage shape beside the ND view
        *outer, rows, cols = t.shape
        storage = (*outer, -(-cols // 16), -(-rows // 16), 16, 16)
    holder[i] = dataclasses.replace(t, format=name, storage=storage)
    return f"format -> {name}" + (f", storage {storage}" if storage else "")


def view(rng, op, args):
    """Strides and storage offsets: transposed, negative, broadcast, shifted, or reaching past storage."""
    holder, i = _pick(rng, _tensors(args) or [(None, None)])
    if holder is None or not holder[i].shape or min(holder[i].shape) < 0:
        return None
    t = holder[i]
    shape = list(t.shape)
    strides = list(contiguous_strides(shape))
    storage, offset = math.prod(shape), 0
    choice = int(rng.integers(5))
    if choice == 0 and len(shape) >= 2:  # a transposed view of a contiguous tensor of the same elements
        a, b = sorted(rng.choice(len(shape), 2, replace=False))
        swapped = list(shape)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        inner = list(contiguous_strides(swapped))
        inner[a], inner[b] = inner[b], inner[a]
        strides, what = inner, f"transposed dims {a},{b}"
    elif choice == 1:  # one dimension walked backwards from the far end
        k = int(rng.integers(len(shape)))
        offset = strides[k] * (shape[k] - 1)
        strides[k] = -strides[k]
        what = f"negative stride on dim {k}"
    elif choice == 2:  # broadcast: stride 0
        k = int(rng.integers(len(shape)))
        strides[k] = 0
        what = f"stride 0 on dim {k}"
    elif choice == 3:  # padded rows and a storage offset
        strides = [s * 2 for s in strides]
        offset = int(_pick(rng, (1, 3, 16)))
        storage = storage * 2 + offset
        what = f"doubled strides, offset {offset}"
    else:  # a view that reaches past the storage it declares
        offset = int(_pick(rng, (1, storage, storage + 5, -1, 1 << 40)))
        what = f"offset {offset} past the storage"
    holder[i] = dataclasses.replace(t, strides=tuple(strides), offset=offset, storage=(storage,))
    return what


def null(rng, op, args):
    found = [i for i, p in enumerate(op.params) if p.kind in ("tensor", "tensor_list") and args[i] is not None]
    if not found:
        return None
    i = _pick(rng, found)
    args[i] = None
    return f"{op.params[i].name} -> NULL"


def number(rng, op, args):
    found = [i for i, p in enumerate(op.params) if p.kind in ("int64", "double", "bool", "string")]
    if not found:
        return None
    i = _pick(rng, found)
    kind, old = op.params[i].kind, args[i]
    if kind == "int64":
        args[i] = int(_pick(rng, (*INTS, old + 1, old - 1, -old)) if old is not None else _pick(rng, INTS))
        args[i] = max(min(args[i], (1 << 63) - 1), -(1 << 63))
    elif kind == "double":
        args[i] = float(_pick(rng, DOUBLES))
    elif kind == "bool":
        args[i] = not old
    else:
        args[i] = _pick(rng, STRINGS)
    return f"{op.params[i].name} {old!r} -> {args[i]!r}"


def int_array(rng, op, args):
    found = [i for i, p in enumerate(op.params) if p.kind == "int_array"]
    if not found:
        return None
    i = _pick(rng, found)
    old = list(args[i] or ())
    choice = int(rng.integers(5))
    if choice == 0:
        new = None
    elif choice == 1:
        new = ()
    elif choice == 2:
        new = (*old, _pick(rng, INTS))
    elif choice == 3 and old:
        new = tuple(old[:-1])
    else:
        new = list(old or [1])
        new[int(rng.integers(len(new)))] = _pick(rng, INTS)
        new = tuple(new)
    args[i] = new
    return f"{op.params[i].name} {tuple(old)} -> {new}"


def contents(rng, op, args):
    """Index-like contents (block tables, slot mappings, lengths, indices) out of range."""
    found = [(h, i) for h, i in _tensors(args) if h[i].dtype in ("INT32", "INT64", "UINT8", "INT8", "BOOL")]
    if not found:
        return None
    holder, i = _pick(rng, found)
    t = holder[i]
    count = max(math.prod(t.storage or t.shape), 1) if min((*t.shape, 1)) >= 0 else 1
    fill = list(np.resize(np.array(t.fill or (0,), dtype=object), min(count, 4096)))
    value = _pick(rng, INTS)
    where = _pick(rng, (0, len(fill) - 1, int(rng.integers(len(fill))), None))
    if where is None:
        fill = [value] * len(fill)
    else:
        fill[where] = value
    # an earlier `extreme` may have left floats (inf, nan) in an integer tensor's fill: keep them
    holder[i] = dataclasses.replace(t, fill=tuple(v if isinstance(v, float) else int(v) for v in fill))
    return f"contents[{'all' if where is None else where}] -> {value}"


def extreme(rng, op, args):
    found = [(h, i) for h, i in _tensors(args) if h[i].dtype in ("FLOAT16", "BF16", "FLOAT")]
    if not found:
        return None
    holder, i = _pick(rng, found)
    fill = _pick(rng, EXTREME_VALUES)
    holder[i] = dataclasses.replace(holder[i], fill=fill)
    return f"values {fill}"


def tensor_list(rng, op, args):
    found = [i for i, a in enumerate(args) if isinstance(a, L)]
    if not found:
        return None
    items = args[_pick(rng, found)].items
    choice = int(rng.integers(4))
    if choice == 0:
        items.clear()
    elif choice == 1 and items:
        items.append(copy.deepcopy(items[0]))
    elif choice == 2:
        items.insert(int(rng.integers(len(items) + 1)), None)
    else:
        items.extend(copy.deepcopy(items[:1]) * int(rng.integers(2, 5)))
    return f"tensor list of {len(items)}"


def alias(rng, op, args):
    outs = [i for i, p in enumerate(op.params) if (p.output or p.ref) and isinstance(args[i], T)]
    ins = [i for i, p in enumerate(op.params) if not p.output and isinstance(args[i], T)]
    if not outs or not ins:
        return None
    out, source = _pick(rng, outs), _pick(rng, ins + outs)
    if source == out:
        return None
    if source > out:
        args[source] = Same(out)
    else:
        args[out] = Same(source)
    return f"{op.params[out].name} and {op.params[source].name} are one tensor"


def swap(rng, op, args):
    """A tensor takes another tensor's description: a shape or dtype of a neighbour."""
    found = _tensors(args)
    if len(found) < 2:
        return None
    (h1, i1), (h2, i2) = (found[k] for k in rng.choice(len(found), 2, replace=False))
    h1[i1] = dataclasses.replace(h1[i1], shape=h2[i2].shape, strides=None, storage=None, offset=0)
    return "shape of one tensor given to another"


CHANGES = (dim, dtype, every_dtype, format, view, null, number, int_array, contents, extreme, tensor_list, alias, swap)


def _start(seed: int, index: int):
    rng = np.random.default_rng([seed, index])
    name = _pick(rng, sorted(BASELINES))
    baseline, chips = _pick(rng, BASELINES[name])
    soc = _pick(rng, chips) if rng.random() < 0.85 else _pick(rng, ALL)
    return rng, name, soc, baseline


def baseline_of(seed: int, index: int) -> list:
    """The arguments case `index` started from, before any change."""
    _, _, soc, baseline = _start(seed, index)
    return baseline(soc)


def generate(seed: int, index: int) -> Case:
    rng, name, soc, baseline = _start(seed, index)
    args = baseline(soc)
    op = by_name(name)
    done = []
    for _ in range(int(rng.choice(4, p=(0.04, 0.5, 0.3, 0.16)))):
        change = _pick(rng, CHANGES)
        what = change(rng, op, args)
        if what:
            done.append(f"{change.__name__}: {what}")
    strict = bool(rng.random() < 1 / 3)
    return Case(name, soc, strict, args, tuple(done), baseline.__name__, _release(rng, op))


def _release(rng, op) -> str:
    """A quarter of the calls run under a 9.x release that declares the entry point (drawn last, so
    a seed's cases are otherwise what they were before releases were drawn)."""
    later = [r for r in versions.since("9.0.0") if versions.declares(versions.RELEASES[r], op.since)]
    return _pick(rng, later) if rng.random() < 0.25 else ""
