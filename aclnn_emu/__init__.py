"""aclnn-emu: a host-side emulator of CANN's AscendCL runtime and aclnn operator API."""

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
from .meta import Array, Scalar, Tensor, TensorList
from .runtime.sanitizer import reports as sanitizer_reports

__all__ = [
    "Array",
    "DataType",
    "Device",
    "Event",
    "Format",
    "Scalar",
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
__version__ = "0.2.0.dev0"  # the release version: pyproject.toml reads it, CHANGELOG.md names it
