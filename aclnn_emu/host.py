"""Host arrays the Python API takes where a tensor goes: numpy arrays (ml_dtypes bf16/fp8 included)
and CPU torch tensors, and the way back to the caller's kind.

PyTorch is never imported here: a torch tensor can only come from a caller that imported it.
numpy cannot hold torch's bfloat16/float8 tensors, so those cross as raw bits and are reinterpreted
as the ml_dtypes type of the same layout (bit-exact both ways).
"""

import sys

import ml_dtypes
import numpy as np

NUMPY, TORCH = "numpy", "torch"


def _torch():
    return sys.modules.get("torch")


def kind(value) -> str | None:
    """'numpy', 'torch', or None for anything that is not a host array."""
    if isinstance(value, np.ndarray):
        return NUMPY
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        return TORCH
    return None


def _bit_types(torch) -> dict:
    """torch dtypes numpy lacks -> (torch integer type of the same width, ml_dtypes type)."""
    pairs = {
        "bfloat16": (torch.int16, ml_dtypes.bfloat16),
        "float8_e4m3fn": (torch.uint8, ml_dtypes.float8_e4m3fn),
        "float8_e5m2": (torch.uint8, ml_dtypes.float8_e5m2),
        "float8_e8m0fnu": (torch.uint8, ml_dtypes.float8_e8m0fnu),
    }
    return {getattr(torch, name): pair for name, pair in pairs.items() if hasattr(torch, name)}


def to_numpy(value) -> np.ndarray:
    """A C-contiguous numpy array with the host array's values (a view where no copy is needed)."""
    if kind(value) != TORCH:
        return np.ascontiguousarray(value)
    torch = _torch()
    if value.device.type != "cpu":
        raise ValueError(
            f"a torch tensor on {value.device} cannot be copied to the emulated device; "
            "move it to the CPU first (.cpu())"
        )
    tensor = value.detach().contiguous()
    bits = _bit_types(torch).get(tensor.dtype)
    if bits is not None:
        return tensor.view(bits[0]).numpy().view(bits[1])
    return tensor.numpy()


def from_numpy(array: np.ndarray, kind_: str):
    """The array as `kind_` ('numpy' or 'torch'); a torch tensor shares the array's memory."""
    if kind_ != TORCH:
        return array
    torch = _torch()
    for torch_type, (int_type, np_type) in _bit_types(torch).items():
        if array.dtype == np_type:
            return torch.from_numpy(array.view(np.dtype(str(int_type).replace("torch.", "")))).view(torch_type)
    return torch.from_numpy(array)


def write_back(target, array: np.ndarray) -> None:
    """Copy results into the caller's own host array (an in-place output or ref tensor)."""
    if kind(target) == TORCH:
        target.copy_(from_numpy(array, TORCH).reshape(target.shape))
    else:
        np.copyto(target, array.reshape(target.shape), casting="unsafe")
