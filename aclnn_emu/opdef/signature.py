"""Declarative operator signatures: the one place an aclnn operator's C prototype is written.

The C shim's wrappers, the cffi declarations, the Python entry points and the header check are
all generated from `Op` objects.
"""

import dataclasses
import sys
import types

from .. import config, platform, versions
from ..runtime.errors import AclError, note


class OpError(AclError):
    """A failed operator check: status code, message naming the argument, rule id, and the other
    chips (if any) on which the value this rule rejects is registered."""

    def __init__(self, code: int, message: str, rule: str | None = None, chips=()):
        super().__init__(code, message, rule)
        self.chips = tuple(chips)


REQUIRED = type("Required", (), {"__repr__": lambda self: "<required>", "__reduce__": lambda self: "REQUIRED"})()
"""The default of a parameter the caller must give (shown as `<required>` by help())."""


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    kind: str  # tensor | tensor_list | int_array | float_array | bool_array | scalar | int64 | enum | double | bool | string
    ctype: str  # as written in the header
    optional: bool = False
    output: bool = False
    ref: bool = False  # an input the kernel updates in place (keyCacheRef): an output for emptiness
    # What help() and aclnn_emu.ops say about it (nothing here changes what the C door accepts):
    doc: str = ""  # one line of meaning
    dtypes: tuple = ()  # allowed DataTypes, when the op checks them itself (else its kernel table says)
    values: tuple = ()  # allowed values of a string (layouts, modes)
    default: object = REQUIRED  # the Python default of a value parameter (optional pointers default to None)
    like: object = None  # an output aclnn_emu.ops allocates when left out: the name of the input whose shape
    # and dtype it takes, or fn(args) -> (shape, DataType) by the op's own shape rules
    # (None when it cannot tell)

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @property
    def python_default(self):
        """What aclnn_emu.ops passes when the caller leaves it out: an output is allocated, an optional
        value is NULL unless it declares a default (torch_npu's, say)."""
        if self.output or self.like is not None:
            return None
        if self.optional:
            return None if self.default is REQUIRED else self.default
        return self.default

    @property
    def cffi_type(self) -> str:
        """The ABI-identical C type used by the generated wrappers (opaque pointers become void*)."""
        return {"int64": "int64_t", "enum": "int", "double": "double", "bool": "_Bool", "string": "char *"}.get(
            self.kind, "void *"
        )


def TensorIn(name, optional=False, ctype="const aclTensor *", **info):
    return Param(name, "tensor", ctype, optional, **info)


def TensorOut(name, optional=False, ctype="const aclTensor *", **info):
    return Param(name, "tensor", ctype, optional, output=True, **info)


def TensorRef(name, optional=False, ctype="const aclTensor *", **info):
    """An in/out tensor declared among the inputs (the OpDef's ref tensors)."""
    return Param(name, "tensor", ctype, optional, ref=True, **info)


def TensorListIn(name, optional=False, ctype="const aclTensorList *", **info):
    return Param(name, "tensor_list", ctype, optional, **info)


def IntArrayIn(name, optional=False, ctype="const aclIntArray *", **info):
    return Param(name, "int_array", ctype, optional, **info)


def FloatArrayIn(name, optional=False, ctype="const aclFloatArray *", **info):
    return Param(name, "float_array", ctype, optional, **info)


def BoolArrayIn(name, optional=False, ctype="const aclBoolArray *", **info):
    return Param(name, "bool_array", ctype, optional, **info)


def ScalarIn(name, optional=False, ctype="const aclScalar *", **info):
    return Param(name, "scalar", ctype, optional, **info)


def Int64(name, **info):
    return Param(name, "int64", "int64_t", **info)


def Enum(name, ctype, **info):
    """A C enum passed by value (aclDataType probDataType): an int on the ABI, its header type in the prototype."""
    return Param(name, "enum", ctype, **info)


def Double(name, **info):
    return Param(name, "double", "double", **info)


def Bool(name, **info):
    return Param(name, "bool", "bool", **info)


def String(name, optional=False, **info):
    """A char *; `optional` when NULL is allowed (it then defaults to None in Python)."""
    return Param(name, "string", "char *", optional, **info)


@dataclasses.dataclass
class Launch:
    """What phase 1 prepares: the workspace to ask for and the work phase 2 puts on the stream."""

    workspace_size: int = 0
    run: object = None  # callable(workspace: np.ndarray | None) -> None

    @classmethod
    def nothing(cls) -> "Launch":
        return cls(0, None)


class Env:
    """What a prepare function may ask about the call's surroundings.

    The part is the emulated one unless a part or family name is given; a quiet Env (a trial on
    another chip) says nothing.
    """

    def __init__(self, op_name: str, soc: str | None = None, quiet: bool = False):
        self.op_name = op_name
        self.version = versions.RELEASES[config.current.cann_version]  # the rules of this CANN release
        self._part = platform.part(config.current.soc if soc is None else soc, self.version.ascend950)
        self.strict = config.current.strict
        self.quiet = quiet
        self.asked_soc = False
        self._said = set()

    @property
    def soc(self) -> str:
        """The chip family (its rules and kernels); asking marks the outcome as possibly chip-dependent."""
        self.asked_soc = True
        return self._part.family

    @property
    def part(self) -> platform.Part:
        """The emulated part: its name and the platform values its tilings read."""
        self.asked_soc = True
        return self._part

    def warn(self, message: str) -> None:
        """A behaviour the user should know about; printed once per call, readable via aclGetRecentErrMsg."""
        if self.quiet or message in self._said:
            return
        self._said.add(message)
        text = f"aclnn-emu warning: aclnn{self.op_name}: {message}"
        print(text, file=sys.stderr, flush=True)
        note(text)

    def inferred(self, code: int, rule: str, message: str) -> None:
        """A rule the reference could only infer: warn by default, fail with `code` under ACLNN_EMU_STRICT=1."""
        if self.strict:
            raise OpError(code, f"{message} (inferred rule {rule}; ACLNN_EMU_STRICT=1)", rule=rule)
        self.warn(
            f"portability: {message}; the CANN source does not establish this, so ACLNN_EMU_STRICT=1 "
            f"returns {code} here instead (rule {rule})"
        )


class Op:
    """One entry point of a header. Several entry points of one operator (V1, V2, ...) share its
    checks and launch: each declares `base=` the Op whose prepare it runs, after the checks of its
    own op_api registered with `check`."""

    def __init__(
        self,
        name: str,
        header: str,
        params: list[Param],
        base: "Op | None" = None,
        defaults_from: str | None = None,
        since: str | None = None,
    ):
        self.name = name
        # The first CANN release whose header declares it (versions.ORDER); None: every release. The library
        # exports it always; under an earlier release phase 1 refuses it (calls.py).
        self.since = since
        self.header = header
        self.params = list(params)
        self.base = base
        # The torch_npu function whose Python defaults the value parameters' defaults are, when it has
        # one for this operator (help() says so); aclnn_emu.ops then behaves as torch_npu does.
        self.defaults_from = defaults_from
        self.checks = []  # this entry point's own checks, run before the base's prepare
        self._prepare = None
        # Phase-1 functions CANN exports beside the header's pair though no header declares them
        # (C name -> prepare), over the same parameters: see `undeclared`.
        self.undeclared_phase1 = {}
        self.combos = None  # the registered kernels' (dtype, format) combinations, if declared

    def kernels(self, combos):
        """Declare the OpDef's kernel combinations (a list, or a dict per chip): the kernel lookup
        checks them and help() lists each tensor's dtypes and formats from them. Returns `combos`."""
        self.combos = combos
        return combos

    def prepare(self, fn):
        """Decorator registering `fn(args, env) -> Launch`."""
        self._prepare = fn
        return fn

    def check(self, fn):
        """Decorator registering `fn(args, env)`, a check of this entry point's own op_api."""
        self.checks.append(fn)
        return fn

    def undeclared(self, suffix: str):
        """Decorator registering `fn(args, env) -> Launch` as phase 1 of aclnn<name><suffix>, a
        function the library exports with this entry point's parameters (workspaceSize and executor
        last) though no header declares it; it runs after this entry point's own checks."""

        def register(fn):
            self.undeclared_phase1[f"aclnn{self.name}{suffix}"] = fn
            return fn

        return register

    def phase1_fn(self, phase1: str):
        """What the phase-1 function called `phase1` (the header's or an undeclared one) runs."""
        return self.prepare_fn if phase1 == self.phase1 else self._with_checks(self.undeclared_phase1[phase1])

    @property
    def prepare_fn(self):
        """What phase 1 runs: this entry point's own checks, then its (or its base's) prepare."""
        return self._with_checks(self._prepare or (self.base.prepare_fn if self.base else None))

    def _with_checks(self, fn):
        if fn is None or not self.checks:
            return fn

        def prepare(args, env):
            for check in self.checks:
                check(args, env)
            return fn(args, env)

        return prepare

    @property
    def phase1(self) -> str:
        return f"aclnn{self.name}GetWorkspaceSize"

    @property
    def phase2(self) -> str:
        return f"aclnn{self.name}"

    @property
    def tensors(self) -> list[Param]:
        return [p for p in self.params if p.is_tensor]

    def bind(self, values) -> types.SimpleNamespace:
        return types.SimpleNamespace(**{p.name: v for p, v in zip(self.params, values)})

    def c_prototypes(self) -> list[str]:
        """The two prototypes exactly as the header must declare them (C++ types)."""
        args = ", ".join(f"{p.ctype}{'' if p.ctype.endswith('*') else ' '}{p.name}" for p in self.params)
        return [
            f"aclnnStatus {self.phase1}({args}, uint64_t *workspaceSize, aclOpExecutor **executor);",
            f"aclnnStatus {self.phase2}(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, "
            f"aclrtStream stream);",
        ]

    def cffi_params(self) -> list[tuple[str, str]]:
        return [(p.cffi_type, p.name) for p in self.params] + [("uint64_t *", "workspaceSize"), ("void **", "executor")]
