"""`aclnn_emu.ops.<Op>`: one Python function per operator, generated from its declarative signature
(opdef/signature.py), so an operator registered in opdef.registry has one without any code here.

    out = ae.ops.PromptFlashAttentionV2(query=q, key=k, value=v, numHeads=8, inputLayout="BNSD")
    ex = ae.ops.PromptFlashAttentionV2.prepare(q, k, v, numHeads=8, inputLayout="BNSD")   # phase 1
    ex.workspace_size; ex.run(stream=s); s.synchronize(); out = ex.result()             # phase 2

Arguments take the header's names, by position or keyword; optional pointers default to None. A
tensor is a numpy array (ml_dtypes bf16/fp8 too), a CPU torch.Tensor (both copied to new device
memory) or an aclnn_emu.Tensor (used as is); a tensor list is a list or tuple of them (or an
aclTensorList). An output left out is allocated from the shape the
operator's own rules give (the `like` of its declaration). The result is the outputs (the in-place
ref tensors included): one value, or a named tuple; each as the caller gave it (a host array given
for an output or a ref tensor is updated in place), and an allocated one as numpy when numpy came
in, torch when torch did, an aclnn_emu.Tensor (the caller frees it) when only device tensors did.
A non-zero status raises the AclnnError subclass of its code (ParamInvalid, TilingError, ...).
"""

import collections
import functools
import keyword

from . import api, host
from .errors import AclnnError, typed
from .meta import Executor, Handled, Tensor, TensorList
from .opdef import arguments, calls
from .opdef.signature import REQUIRED
from .runtime import api as rt
from .runtime import devices, handles
from .runtime.errors import take_recent

DEVICE = "device"


def _stream_handle(stream) -> int:
    """None is the current context's default stream (what a NULL aclrtStream means)."""
    if stream is None:
        return 0
    return int(getattr(stream, "handle", stream))


def _ensure_device() -> None:
    """aclInit and aclrtSetDevice(0) unless this thread already has a context (aclnn_emu.Device)."""
    if devices.current_context(required=False) is None:
        api.setup()


class Prepared:
    """Phase 1 done (aclnnXxxGetWorkspaceSize): `.workspace_size`, `.run()` for phase 2, `.result()`.

    The device copies of host arrays, an allocated workspace and allocated outputs live until
    `.result()` (or, for a repeatable executor, until `.close()`; a `with` block closes it). Closing
    first waits for a run still on its stream, so no kernel reads memory freed under it."""

    def __init__(self, op, given, args, handle, size, kind, temporaries, repeatable):
        self.op, self.workspace_size, self.repeatable = op, size, repeatable
        self._given, self._args, self._handle, self._kind = given, args, handle, kind
        self._temporaries, self._workspace, self._stream, self._pending = temporaries, 0, None, False
        self._executor = handles.lookup(handle, Executor)
        self._launches = self._executor.launch.run is not None

    @property
    def executor(self) -> int:
        """The aclOpExecutor handle (for aclnn_emu.raw)."""
        return self._handle

    def run(self, workspace=None, stream=None) -> "Prepared":
        """Phase 2 (aclnnXxx): puts the operator on `stream` (an aclnn_emu.Stream or handle; None: the
        default stream) and returns at once; results are ready once the stream is synchronised.
        `workspace` is a device address or Tensor of at least workspace_size bytes; None allocates it."""
        if workspace is None:
            if self.workspace_size and not self._workspace:
                with typed():
                    self._workspace = rt.malloc(self.workspace_size)
            address = self._workspace
        else:
            address = workspace.addr if isinstance(workspace, Tensor) else int(workspace)
        self._stream = _stream_handle(stream)
        code = calls.run(self.op.name, address, self.workspace_size, self._handle, self._stream)
        if code:
            message = take_recent()
            if not self.repeatable:
                self.close()
            raise AclnnError(code, message)
        self._pending = self._launches
        return self

    def _wait(self) -> None:
        if self._pending:
            self._pending = False
            with typed():
                rt.synchronize_stream(self._stream)

    def result(self):
        """Wait for the stream the call ran on, then the outputs (see aclnn_emu.functions)."""
        if self._stream is None:
            raise RuntimeError(f"{self.op.phase2}: result() before run()")
        try:
            self._wait()
            values = [self._output(i) for i in _outputs(self.op)]
        finally:
            if not self.repeatable:
                self.close()
        return _pack(self.op, values)

    def _output(self, index: int):
        given, device = self._given[index], self._args[index]
        if device is None or isinstance(given, Tensor):
            return device
        if given is not None:  # the caller's host array: updated in place when it can be
            array = api.numpy(device)
            try:
                host.write_back(given, array)
                return given
            except (ValueError, RuntimeError):  # read-only or not resizable: a new array instead
                return host.from_numpy(array, host.kind(given))
        if self._kind == DEVICE:  # allocated for a device-only call: the caller's to free
            return device
        return host.from_numpy(api.numpy(device), self._kind)

    def close(self) -> None:
        """Release what the call allocated (and a repeatable executor: aclDestroyAclOpExecutor)."""
        try:
            self._wait()
        finally:
            self._release()

    def _release(self) -> None:
        for temporary in self._temporaries:
            _release(temporary)
        self._temporaries = []
        if self._workspace:
            rt.free(self._workspace)
            self._workspace = 0
        if self.repeatable and handles.lookup(self._handle, Executor) is self._executor:
            self._executor.destroy()

    def __enter__(self) -> "Prepared":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@functools.cache
def _outputs(op) -> tuple:
    return tuple(i for i, p in enumerate(op.params) if p.output or p.ref)


@functools.cache
def _result_type(op):
    names = [op.params[i].name for i in _outputs(op)]
    return collections.namedtuple(f"{op.name}Result", names)


def _pack(op, values):
    return values[0] if len(values) == 1 else _result_type(op)(*values)


@functools.cache
def _tensor_params(op) -> tuple:
    return tuple((i, p) for i, p in enumerate(op.params) if p.kind in ("tensor", "tensor_list"))


def _copy_inputs(op, values: list, temporaries: list):
    """Host arrays in tensor parameters -> new device tensors, a list or tuple in a tensor-list
    parameter -> a new aclTensorList of its items so converted; returns the call's kind."""
    kind = DEVICE
    for i, param in _tensor_params(op):
        value = values[i]
        if param.kind == "tensor_list":
            if isinstance(value, (list, tuple)):
                items = [_device_tensor(op, f"{param.name}[{j}]", item, temporaries) for j, item in enumerate(value)]
                values[i] = TensorList(items)
                temporaries.append(values[i])
                kind = _kind(kind, value)
            continue
        values[i] = _device_tensor(op, param.name, value, temporaries)
        kind = _kind(kind, [value])
    return kind


def _kind(kind: str, values) -> str:
    """The call's kind after these values: torch once any host value is torch, else numpy once any is host."""
    for value in values:
        found = None if value is None or isinstance(value, Tensor) else host.kind(value)
        if found is not None:
            kind = host.TORCH if host.TORCH in (kind, found) else host.NUMPY
    return kind


def _device_tensor(op, name: str, value, temporaries: list):
    """A host array copied to a new device tensor (kept in `temporaries`); a device tensor or None as is."""
    if value is None or isinstance(value, Tensor):
        return value
    if host.kind(value) is None:
        raise TypeError(
            f"aclnn_emu.ops.{op.name}: argument {name} must be a numpy array, a CPU "
            f"torch.Tensor, an aclnn_emu.Tensor or None, got {type(value).__name__}"
        )
    try:
        tensor = api.to_device(host.to_numpy(value))
    except ValueError as exc:  # a dtype with no aclDataType, a tensor on another device
        raise ValueError(f"aclnn_emu.ops.{op.name}: argument {name}: {exc}") from None
    temporaries.append(tensor)
    return tensor


def _release(temporary) -> None:
    """A device tensor this call made (memory and handle), or its tensor list (the handle only:
    the list's tensors are the caller's or released on their own)."""
    if isinstance(temporary, TensorList):
        Handled.destroy(temporary)
    else:
        api.free(temporary)


def _allocate_outputs(op, args: list, kind: str, temporaries: list) -> None:
    """Outputs left out, by each one's `like`: an input's shape and dtype, or the op's own rule."""
    bound = None
    for i, param in _allocatable(op):
        if args[i] is not None:
            continue
        if isinstance(param.like, str):
            template = args[_index(op)[param.like]]
            if template is None:  # an optional output whose input is absent
                continue
            shape, dtype = template.shape, template.dtype
        else:
            bound = bound or op.bind(args)
            rule = param.like(bound)
            if rule is None:  # the rule cannot tell: left NULL, the op's checks say why
                continue
            shape, dtype = rule
        args[i] = api.empty(shape, dtype)
        if kind != DEVICE:
            temporaries.append(args[i])


@functools.cache
def _allocatable(op) -> tuple:
    return tuple((i, p) for i, p in enumerate(op.params) if p.output and p.like is not None)


@functools.cache
def _index(op) -> dict:
    return {p.name: i for i, p in enumerate(op.params)}


def prepare(op, values, repeatable: bool = False, phase1: str | None = None) -> Prepared:
    """Phase 1 with Python values in the signature's order (`phase1`: an undeclared phase 1 of the op)."""
    _ensure_device()
    given = list(values)
    args, temporaries = list(values), []
    try:
        kind = _copy_inputs(op, args, temporaries)
        args = arguments.python(op, args)
        _allocate_outputs(op, args, kind, temporaries)
        code, size, handle = calls.get_workspace_size(op, args, raises=True, phase1=phase1)
        if code:
            raise AclnnError(code, take_recent())
    except BaseException:
        for temporary in temporaries:
            _release(temporary)
        raise
    if repeatable:
        handles.lookup(handle, Executor).repeatable = True  # aclSetAclOpExecutorRepeatable
    return Prepared(op, given, args, handle, size, kind, temporaries, repeatable)


def call(op, values, stream=None):
    """Both phases, then the outputs once the stream has run them."""
    return prepare(op, values).run(stream=stream).result()


# -- generated functions ---------------------------------------------------------------------------
def _missing(op, values):
    missing = [p.name for p, v in zip(op.params, values) if v is REQUIRED]
    if missing:
        raise TypeError(f"aclnn_emu.ops.{op.name}() missing required argument(s): {', '.join(missing)}")


@functools.cache
def function(op):
    """The Python function of `op`: its parameters, defaults and help text from the signature."""
    names = [p.name for p in op.params]
    bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n) or n in ("stream", "repeatable")]
    if bad:
        raise AttributeError(f"{op.name}: parameter name(s) {bad} cannot be Python parameters")
    defaults, parts, seen_default = {}, [], False
    for p in op.params:
        default = p.python_default
        if default is REQUIRED and not seen_default:
            parts.append(p.name)
            continue
        seen_default = True  # after the first default, required ones show <required>
        defaults[p.name] = default
        parts.append(f"{p.name}=_d[{p.name!r}]")
    values = f"({', '.join(names)},)"
    check = any(p.python_default is REQUIRED for p in op.params if p.name in defaults)
    body = "    _missing(_op, v)\n" if check else ""
    source = (
        f"def {op.name}({', '.join(parts)}, *, stream=None):\n    v = {values}\n{body}"
        f"    return _call(_op, v, stream)\n"
        f"def prepare({', '.join(parts)}, *, repeatable=False):\n    v = {values}\n{body}"
        f"    return _prepare(_op, v, repeatable)\n"
    )
    undeclared = {_snake(name.removeprefix(f"aclnn{op.name}")): name for name in op.undeclared_phase1}
    for attr, name in undeclared.items():
        source += (
            f"def {attr}({', '.join(parts)}):\n    v = {values}\n{body}    return _prepare(_op, v, False, {name!r})\n"
        )
    scope = {"_d": defaults, "_op": op, "_call": call, "_prepare": prepare, "_missing": _missing}
    exec(compile(source, f"<aclnn_emu.ops.{op.name}>", "exec"), scope)
    fn, prep = scope[op.name], scope["prepare"]
    fn.__module__ = prep.__module__ = "aclnn_emu.ops"
    fn.__qualname__, prep.__qualname__ = op.name, f"{op.name}.prepare"
    fn.__doc__ = describe(op)
    prep.__doc__ = (
        f"Phase 1 of aclnn_emu.ops.{op.name} ({op.phase1}): the same arguments, and "
        "`repeatable=True` for aclSetAclOpExecutorRepeatable. Returns an aclnn_emu.functions.Prepared: "
        ".workspace_size, .run(workspace=None, stream=None), .result(), .close()."
    )
    fn.prepare, fn.op = prep, op
    for attr, name in undeclared.items():
        extra = scope[attr]
        extra.__module__, extra.__qualname__ = "aclnn_emu.ops", f"{op.name}.{attr}"
        extra.__doc__ = (
            f"{name}, which the library exports though no header declares it: the same arguments as "
            f"aclnn_emu.ops.{op.name}, phase 1 only. Returns an aclnn_emu.functions.Prepared (.workspace_size, "
            ".close())."
        )
        setattr(fn, attr, extra)
    return fn


def _snake(name: str) -> str:
    """GetMaxWorkspaceSize -> get_max_workspace_size."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


# -- help text -------------------------------------------------------------------------------------
def _shorts(values) -> str:
    return ", ".join(getattr(v, "short", str(v)) for v in values)


def _from_kernels(op, name: str) -> str:
    """A tensor's dtypes and formats from the op's kernel table, grouped by the chips that share them."""
    tables = op.combos if isinstance(op.combos, dict) else {None: op.combos}
    groups = collections.defaultdict(list)
    for chip, combos in tables.items():
        entries = [c[name] if isinstance(c[name], tuple) else (c[name], None) for c in combos if name in c]
        if entries:
            dts = sorted({d for d, _ in entries}, key=int)
            fmts = sorted({f.short for _, f in entries if f is not None}) or ["ND"]
            groups[(tuple(dts), tuple(fmts))].append(chip)
    return "; ".join(
        f"dtypes {_shorts(dts)}, formats {', '.join(fmts)}" + (f" on {', '.join(chips)}" if len(groups) > 1 else "")
        for (dts, fmts), chips in groups.items()
    )


def _param_line(op, p) -> str:
    default = p.python_default
    need = (
        ("optional" if default is None else f"optional, default {default!r}")
        if p.optional
        else "output"
        if p.output
        else "in/out (updated in place)"
        if p.ref
        else "required"
        if default is REQUIRED
        else f"default {default!r}"
    )
    facts = [p.ctype, need]
    if p.output and p.like is not None:
        facts.append("allocated when left out")
    tensors = p.kind in ("tensor", "tensor_list")  # a list's tensors share one kernel entry
    if tensors and p.dtypes:
        facts.append(f"dtypes {_shorts(p.dtypes)}, formats ND")
    elif tensors and op.combos and _from_kernels(op, p.name):
        facts.append(_from_kernels(op, p.name))
    if p.values:
        facts.append(f"one of {', '.join(map(repr, p.values))}")
    return f"{p.name} : {'; '.join(facts)}\n    {p.doc or '(no description)'}"


def describe(op) -> str:
    outputs = [op.params[i].name for i in _outputs(op)]
    lines = [
        f"{op.phase1} + {op.phase2} ({op.header}), then the outputs once the stream has run them.",
        "",
        "Tensors: numpy arrays (ml_dtypes bf16/fp8 too), CPU torch tensors or aclnn_emu.Tensor; tensor "
        "lists: a list or tuple of them. "
        "`stream`: an aclnn_emu.Stream or handle (None: the default stream). "
        f"Returns {' and '.join(outputs)}"
        + (" as a named tuple" if len(outputs) > 1 else "")
        + ", as numpy when numpy came in, torch when torch did. A non-zero status raises the "
        "aclnn_emu.AclnnError subclass of its code. Two phases: .prepare(...).",
    ]
    if op.defaults_from:
        lines += [
            "",
            f"Defaults: {op.defaults_from}'s, so a call leaving a value out behaves as the same torch_npu "
            "call does (torch_npu's op_plugin_functions.yaml declares them).",
        ]
    lines += ["", "Parameters", "----------"]
    lines += [_param_line(op, p) for p in op.params]
    return "\n".join(lines)
