"""aclnn-emu: a host-side emulator of CANN's AscendCL runtime and aclnn operator API."""

from . import ops
from .api import empty, free, numpy, raw, run, setup, to_device
from .device import Device, Event, Stream
from .dtypes import DataType
from .errors import *  # noqa: F401,F403  (AclnnError and its subclasses by status code)
from .errors import __all__ as _errors
from .formats import Format
from .graphs import Graph, busy, capture
from .meta import Tensor
from .runtime.sanitizer import reports as sanitizer_reports

__all__ = [
    "DataType",
    "Device",
    "Event",
    "Format",
    "Graph",
    "busy",
    "capture",
    "Stream",
    "Tensor",
    "empty",
    "free",
    "numpy",
    "ops",
    "raw",
    "run",
    "setup",
    "sanitizer_reports",
    "to_device",
] + _errors
__version__ = "0.1.0"
