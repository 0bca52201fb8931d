"""Both phases of an entry point from host arrays given by parameter name, for the edge-class tests:
arrays become device tensors (lists of arrays tensor lists), the outputs come back as host arrays."""

import numpy as np

import aclnn_emu as ae
from aclnn_emu.dtypes import DataType
from aclnn_emu.meta import TensorList
from aclnn_emu.opdef.registry import by_name


def _device(x):
    if isinstance(x, np.ndarray):
        return ae.to_device(np.ascontiguousarray(x), dtype=DataType.ACL_INT32 if x.dtype == np.int32 else None)
    if isinstance(x, list) and x and isinstance(x[0], np.ndarray):
        return TensorList([ae.to_device(np.ascontiguousarray(item)) for item in x])
    return x


def outputs(entry: str, **named) -> dict:
    """Run `entry` with the parameters named (the others NULL, 0 or false) on the chip in use; the
    output and in-place tensors come back by name, as host arrays."""
    op = by_name(entry)
    given = {name: _device(x) for name, x in named.items()}
    unset = {"int64": 0, "double": 0.0, "bool": False}
    args = [given[p.name] if p.name in given else unset.get(p.kind) for p in op.params]
    try:
        ae.run(entry, *args)
        return {p.name: ae.numpy(given[p.name]) for p in op.params if (p.output or p.ref) and p.name in given}
    finally:
        for x in given.values():
            for t in getattr(x, "items", [x]):
                if hasattr(t, "addr"):
                    ae.free(t)
