"""aclnn-emu: a host-side emulator of CANN's AscendCL runtime and aclnn operator API.

Without its dependencies (numpy, ml_dtypes, cffi) the package still imports, so that the
`aclnn-emu` command (`aclnn-emu doctor`) can say what is missing; the API then raises
ModuleNotFoundError, naming the missing module, at its first use."""

import sys

__version__ = "0.2.0.dev0"  # the release version: pyproject.toml reads it, CHANGELOG.md names it
DEPENDENCIES = ("numpy", "ml_dtypes", "cffi")

try:
    from . import ops
    from .api import (
        bool_array,
        empty,
        float_array,
        free,
        int_array,
        numpy,
        raw,
        recent_error_message,
        run,
        scalar,
        setup,
        synchronize,
        tensor_list,
        to_device,
    )
    from .device import Device, Event, Stream
    from .dtypes import DataType
    from .errors import *  # noqa: F401,F403  (AclnnError and its subclasses by status code)
    from .errors import __all__ as _errors
    from .formats import Format
    from .graphs import Graph, busy, capture
    from .meta import Array, Scalar, Tensor, TensorList
    from .runtime.sanitizer import reports as sanitizer_reports
except ModuleNotFoundError as missing:
    if missing.name not in DEPENDENCIES:
        raise
    _missing, _errors = missing, []

    def __getattr__(name):  # the API's names only: submodules (`from . import config`) still import
        if name not in __all__:
            raise AttributeError(f"module 'aclnn_emu' has no attribute {name!r}")
        raise ModuleNotFoundError(
            f"aclnn_emu needs {_missing.name}, which {sys.executable} cannot import: "
            "`aclnn-emu doctor` says how to repair the install",
            name=_missing.name,
        ) from _missing


__all__ = [
    "Array",
    "DataType",
    "Device",
    "Event",
    "Format",
    "Graph",
    "Scalar",
    "busy",
    "capture",
    "Stream",
    "Tensor",
    "TensorList",
    "bool_array",
    "empty",
    "float_array",
    "free",
    "int_array",
    "numpy",
    "ops",
    "raw",
    "recent_error_message",
    "run",
    "scalar",
    "setup",
    "sanitizer_reports",
    "synchronize",
    "tensor_list",
    "to_device",
] + _errors
