"""A stand-in for the `torch_npu` module on a CPU: torch_npu's attention functions over aclnn-emu's
kernels, CPU tensors in and out, with autograd. Pinned to op-plugin 26.1.0 (schemas.py).

    import aclnn_emu.torch_npu
    aclnn_emu.torch_npu.install()          # sys.modules["torch_npu"] is now this module
    import torch_npu
    out = torch_npu.npu_fusion_attention(q, k, v, 8, "BSND", scale=0.125)[0]
    out = torch.ops.npu.npu_fusion_attention(q, k, v, 8, "BSND", scale=0.125)[0]   # the same op

Only the functions in __all__ exist; any other torch_npu attribute raises AttributeError naming it,
never a stand-in that only looks right. There is no `npu` device: tensors stay on the CPU.
"""

import sys

import torch

from . import autograd  # noqa: F401  (defines the ops and their formulas)
from .schemas import PINNED, SCHEMAS

__all__ = [*SCHEMAS, "install"]


def _op(name: str):
    packet = getattr(torch.ops.npu, name)

    def function(*args, **kwargs):
        return packet(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch_npu.{name} ({PINNED}): {SCHEMAS[name]}"
    return function


globals().update({name: _op(name) for name in SCHEMAS})


def install() -> None:
    """Make `import torch_npu` give this module (for a test's conftest.py)."""
    sys.modules["torch_npu"] = sys.modules[__name__]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"torch_npu.{name} is not emulated by aclnn-emu's stand-in (it has {', '.join(sorted(SCHEMAS))})"
    )
