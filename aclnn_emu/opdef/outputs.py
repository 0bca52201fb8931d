"""Output tensors a kernel fills: in place when it can, else through a host array stored afterwards."""

import numpy as np

from ..formats import Format
from ..runtime import sanitizer


class Placeholder:
    """The [0]-shaped ND tensor an op_api wrapper passes to its inner operator for an output the caller
    left NULL (TensorHolder, FusedInferAttentionScoreProcessSoftmaxLse): it takes part in the kernel
    key with its dtype and is never written."""

    format, shape, ndim, numel, is_empty = Format.ACL_FORMAT_ND, (0,), 1, 0, True

    def __init__(self, dtype):
        self.dtype = dtype


def writable(tensor, shape, dtype, op_name: str):
    """(array of `shape` and `dtype` for the kernel to fill, finish or None).

    A plain contiguous output of that dtype and size is filled in place (its device view). Any other
    (strided, another dtype, another size) gets a host array, prefilled with the output's current
    contents so rows the kernel leaves alone stay as they were; `finish()` then stores it in element
    order, converted to the output's dtype. Writing past the output is undefined on the NPU: what
    does not fit is dropped and reported.
    """
    view = tensor.view("output")
    count = int(np.prod(shape))
    if view.dtype == np.dtype(dtype) and view.flags.c_contiguous and view.size == count:
        return view.reshape(shape), None
    if view.size < count:
        sanitizer.report(
            "out-of-bounds-write",
            f"aclnn{op_name}: the kernel writes {count} elements to an output "
            f"of {view.size} ({list(tensor.shape)}); aclnn-emu writes what fits",
        )
    current = tensor.read("output").reshape(-1)
    fits = min(count, current.size)
    host = np.zeros(shape, dtype)
    host.reshape(-1)[:fits] = current[:fits].astype(dtype)

    def finish():
        flat = tensor.read("output").reshape(-1).copy()
        flat[:fits] = host.reshape(-1)[:fits].astype(flat.dtype)
        tensor.write(flat.reshape(tensor.shape), "output")

    return host, finish
