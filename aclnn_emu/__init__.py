"""aclnn-emu: a host-side emulator of CANN's AscendCL runtime and aclnn operator API."""
from .api import AclnnError, empty, free, numpy, raw, run, setup, to_device
from .dtypes import DataType
from .formats import Format
from .meta import Tensor
from .runtime.sanitizer import reports as sanitizer_reports

__all__ = ["AclnnError", "DataType", "Format", "Tensor", "empty", "free", "numpy", "raw", "run", "setup",
           "sanitizer_reports", "to_device"]
__version__ = "0.1.0"
