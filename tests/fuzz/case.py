"""One fuzz call: its description (plain data a reproducer prints as Python), and running it in
this process through `aclnn_emu.raw` as a C program would: tensors created over device memory
with guard bytes on both sides, phase 1, then phase 2 and a stream synchronisation after a
success, then every guard byte and every input byte compared with what was there before.
"""

import dataclasses
import math

import numpy as np

import aclnn_emu as ae
from aclnn_emu import config, dtypes, status, versions
from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.meta import Executor, Tensor, TensorList, contiguous_strides, view_extent
from aclnn_emu.opdef.registry import by_name
from aclnn_emu.runtime import api as rt
from aclnn_emu.runtime import devices, handles, sanitizer
from aclnn_emu.runtime.errors import AclError, take_recent

GUARD = 64  # bytes of a known pattern before and after every tensor's memory
PATTERN = 0xA5
BODY_CAP = 32 << 20  # a description reaching further gets a small buffer: the description lies
MASK64 = (1 << 64) - 1
UNHANDLED = " failed on the stream: "  # the stream worker's message for an exception no check caught


@dataclasses.dataclass
class T:
    """A tensor argument: the aclCreateTensor description and what its memory holds. `fill` is
    None (random values of the dtype, seeded by the argument's position) or explicit values,
    repeated over the storage."""

    shape: tuple
    dtype: str = "FLOAT16"
    fill: tuple | None = None
    strides: tuple | None = None
    offset: int = 0
    format: str = "ND"
    storage: tuple | None = None

    def __repr__(self) -> str:
        extra = "".join(
            f", {name}={value!r}"
            for name, value in (
                ("fill", self.fill),
                ("strides", self.strides),
                ("offset", self.offset),
                ("format", self.format),
                ("storage", self.storage),
            )
            if value != {"offset": 0, "format": "ND"}.get(name)
        )
        return f"T({self.shape!r}, {self.dtype!r}{extra})"


@dataclasses.dataclass
class L:
    """An aclTensorList; an item may be None (a NULL entry)."""

    items: list

    def __repr__(self) -> str:
        return f"L({self.items!r})"


@dataclasses.dataclass
class Same:
    """The very tensor of argument `index` (aliasing: an output that is an input)."""

    index: int

    def __repr__(self) -> str:
        return f"Same({self.index})"


@dataclasses.dataclass
class Case:
    op: str  # the entry point's name (aclnn<op>GetWorkspaceSize)
    soc: str
    strict: bool
    args: list
    mutations: tuple = ()  # what was changed from the baseline, for the report
    base: str = ""  # the fuzz.baselines function the arguments started from
    release: str = ""  # a CANN release that declares the entry point; "" the default (or the first that has it)


def reproducer(case: Case) -> str:
    """A short Python program, run from the repository's root, that makes the call again: the
    baseline's arguments and the ones that differ from them."""
    from . import baselines

    start = getattr(baselines, case.base)(case.soc) if case.base else [None] * len(case.args)
    changes = "".join(f"args[{i}] = {a!r}\n" for i, (a, b) in enumerate(zip(case.args, start)) if a != b)
    return (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from fuzz import baselines\n"
        "from fuzz.case import Case, L, Same, T, run\n"
        + (f"args = baselines.{case.base}({case.soc!r})\n" if case.base else f"args = [None] * {len(case.args)}\n")
        + changes
        + f"print(run(Case({case.op!r}, {case.soc!r}, {case.strict!r}, args"
        + (f", release={case.release!r}" if case.release else "")
        + ")))\n"
    )


# -- running -----------------------------------------------------------------------------------
def _dtype(name: str) -> DataType:
    return DataType[f"ACL_{name}"]


def _format(name: str) -> Format:
    return Format[name if name.startswith("ACL_") else f"ACL_FORMAT_{name}"]


def _values(spec: T, dt: DataType, count: int, seed: int) -> bytes:
    """The storage's bytes: the explicit fill repeated, or seeded random values of the dtype."""
    itemsize = dtypes.SIZE.get(dt, 1)
    rng = np.random.default_rng(seed)
    np_dtype = dtypes.NUMPY.get(dt)
    if np_dtype is None:
        return rng.integers(0, 256, count * itemsize, dtype=np.uint8).tobytes()
    kind = np.dtype(np_dtype).kind
    if spec.fill is not None:
        if kind in "fc" or any(isinstance(v, float) for v in spec.fill):
            flat = np.array(spec.fill, np.float64)
            if kind not in "fc":  # what a C cast of these would leave: no NaN, nothing past the range
                flat = np.nan_to_num(flat).clip(-(2.0**63), 2.0**63 - 1024)
        else:  # two's complement, as C stores any integer it is given
            flat = np.array([int(v) & MASK64 for v in spec.fill], np.uint64).view(np.int64)
        with np.errstate(all="ignore"):
            return np.resize(flat, count).astype(np_dtype).tobytes()
    if kind in "iub":
        values = rng.integers(0, 2 if kind == "b" else 8, count)
    else:
        values = rng.standard_normal(count) * 0.5
    with np.errstate(all="ignore"):
        return values.astype(np_dtype).tobytes()


class _Made:
    """Device memory and tensors of one call, and the bytes to compare afterwards."""

    def __init__(self):
        self.allocations = []  # (addr, nbytes, snapshot, must_stay_whole, name)
        self.tensors = []
        self.lists = []

    def tensor(self, spec: T, name: str, seed: int, output: bool):
        dt = _dtype(spec.dtype)
        storage = spec.storage if spec.storage is not None else spec.shape
        strides = spec.strides if spec.strides is not None else contiguous_strides(spec.shape)
        itemsize = dtypes.SIZE.get(dt, 1)
        sane = all(d >= 0 for d in (*spec.shape, *storage)) and len(strides) == len(spec.shape)
        low, high = 0, math.prod(storage) if sane else 0
        if sane and math.prod(spec.shape):
            lo, hi = view_extent(spec.shape, strides)
            low, high = min(low, spec.offset + lo), max(high, spec.offset + hi + 1)
        if (high - low) * itemsize > BODY_CAP:
            low, high = 0, 1
        body = (high - low) * itemsize
        nbytes = GUARD + body + GUARD
        base = rt.malloc(nbytes)
        memory = devices.memory_of(base).array(base, nbytes)
        memory[:] = PATTERN
        memory[GUARD : GUARD + body] = np.frombuffer(_values(spec, dt, high - low, seed), np.uint8)
        self.allocations.append([base, nbytes, memory.copy(), not output, name])
        try:
            tensor = Tensor(
                spec.shape,
                dt,
                spec.strides,
                spec.offset,
                _format(spec.format),
                spec.storage,
                base + GUARD - low * itemsize,
            )
        except AclError:  # aclCreateTensor returns NULL for a description it refuses
            return None
        self.tensors.append(tensor)
        return tensor

    def changed(self) -> list[str]:
        found = []
        for base, nbytes, before, whole, name in self.allocations:
            now = devices.memory_of(base).array(base, nbytes)
            if not np.array_equal(now[:GUARD], before[:GUARD]) or not np.array_equal(now[-GUARD:], before[-GUARD:]):
                found.append(f"guard bytes of {name}")
            elif whole and not np.array_equal(now, before):
                found.append(f"input bytes of {name}")
        return found

    def free(self) -> None:
        for items in self.lists:
            items.items = []  # the tensors are destroyed once, below
            items.destroy()
        for tensor in self.tensors:
            tensor.destroy()
        for base, *_ in self.allocations:
            rt.free(base)


def _build(op, args, made: _Made) -> list:
    values, aliased = [], set()
    for index, (param, arg) in enumerate(zip(op.params, args)):
        if isinstance(arg, Same):
            aliased.add(arg.index)
    for index, (param, arg) in enumerate(zip(op.params, args)):
        output = param.output or param.ref or index in aliased
        if isinstance(arg, T):
            values.append(made.tensor(arg, param.name, index, output))
        elif isinstance(arg, L):
            items = [
                None if item is None else made.tensor(item, f"{param.name}[{i}]", 1000 * index + i, output)
                for i, item in enumerate(arg.items)
            ]
            made.lists.append(TensorList(items))
            values.append(made.lists[-1])
        elif isinstance(arg, Same):
            values.append(values[arg.index] if arg.index < index else None)
        else:
            values.append(arg)
    return values


@dataclasses.dataclass
class Outcome:
    kind: str  # rejected / ran / ran-failed / reported, or a bad kind: inner-error, unhandled, changed-bytes
    code: int = 0
    detail: str = ""

    BAD = ("inner-error", "unhandled", "changed-bytes", "hang", "crash")

    @property
    def bad(self) -> bool:
        return self.kind in self.BAD

    def __str__(self) -> str:
        return f"{self.kind} {self.code}" + (f": {self.detail}" if self.detail else "")


def run(case: Case, phase2: bool = True) -> Outcome:
    """Make the call in this process (aclnn_emu set up on first use) and judge what came back.
    Without `phase2`, or for an undeclared phase 1 named by its C name, a phase-1 success is
    "accepted" and its executor is destroyed unrun."""
    stream = ae.setup()
    saved = config.current
    op = by_name(case.op)
    # an entry point of a later release runs under the first release that has it
    release = saved.cann_version if versions.declares(versions.RELEASES[saved.cann_version], op.since) else op.since
    release = case.release or release
    config.current = dataclasses.replace(saved, soc=case.soc, strict=case.strict, cann_version=release)
    made = _Made()
    try:
        values = _build(op, case.args, made)
        phase1 = case.op if case.op in op.undeclared_phase1 else op.phase1
        code, size, executor = getattr(ae.raw, phase1)(*values)
        message = take_recent()
        if code == status.ACLNN_ERR_INNER:
            outcome = Outcome("inner-error", code, message)
        elif code:
            outcome = Outcome("rejected", code, message)
        elif not phase2 or phase1 != op.phase1:  # an undeclared phase 1 (GetMaxWorkspaceSize) launches nothing
            handles.lookup(executor, Executor).destroy()
            outcome = Outcome("accepted")
        else:
            outcome = _phase2(op, size, executor, stream)
        changed = made.changed()
        if changed and not outcome.bad:
            # the documented path of a write past an allocation: the neighbouring bytes change and the
            # sanitizer reports it
            reported = any(kind.startswith("out-of-bounds") for kind, _ in sanitizer.reports())
            outcome = Outcome("reported" if reported else "changed-bytes", outcome.code, "; ".join(changed))
        return outcome
    finally:
        made.free()
        sanitizer.clear()
        take_recent()
        config.current = saved


def _phase2(op, size: int, executor: int, stream: int) -> Outcome:
    workspace = 0
    if size:
        try:
            workspace = rt.malloc(size)
        except AclError:  # more than the device holds: phase 2 then refuses the NULL workspace
            workspace = 0
    try:
        code = getattr(ae.raw, op.phase2)(workspace, size, executor, stream)
        if code:
            return Outcome("ran-failed", code, take_recent())
        try:
            rt.synchronize_stream(stream)
        except AclError as exc:
            if UNHANDLED in exc.message:
                return Outcome("unhandled", exc.code, exc.message)
            return Outcome("ran-failed", exc.code, exc.message)
        return Outcome("ran")
    finally:
        if workspace:
            rt.free(workspace)
