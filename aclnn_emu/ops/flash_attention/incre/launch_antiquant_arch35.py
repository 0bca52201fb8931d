"""The launch of IncreFlashAttentionV4 with an INT8 key/value on Ascend910_95: dequantise, then\nthe arch35 attention of launch_arch35."""

from types import SimpleNamespace
import numpy as np
from aclnn_emu.kernels.attention.layouts import to_bnsd
from aclnn_emu.kernels.flash_attention.antiquant_arch35 import dequantize
from .launch import _rows
from .launch_arch35 import _caches, _windows
from .launch_arch35 import _run as _run_arch35


def _run(a, p, listed, blocks=None):

    view = SimpleNamespace(key=a.key.items[0], value=a.value.items[0])
    keys, values = _listed_caches(a, p) if listed else _caches(a, view, p)
    dtype = a.query.np_dtype
    key_params, value_params = _params(a, p, dtype)
    caches = (_dequantised(keys, key_params, dtype), _dequantised(values, value_params, dtype))
    mask = None
    if p.has_mask and p.s1 == 1:  # row b at b x its last dim (attenMaskSize_), as the A2/A3 kernels read it
        starts, lengths = _windows(a, p)
        width = max([s + n for s, n in zip(starts, lengths)] + [0])
        mask = _rows(a.attenMask, "attenMask", p.b, width)[:, None]
    _run_arch35(a, view, p, caches=caches, mask=mask, blocks=blocks)


def _listed_caches(a, p):
    """One tensor per batch ([1, ...] in the layout)."""
    base = p.layout.split("_")[0]
    keys = [to_bnsd(t.read(f"key[{i}]"), base, p.kv_heads)[0] for i, t in enumerate(a.key.items[: p.b])]
    values = [to_bnsd(t.read(f"value[{i}]"), base, p.kv_heads)[0] for i, t in enumerate(a.value.items[: p.b])]
    return (lambda b, s, n: keys[b][:, s : s + n]), (lambda b, s, n: values[b][:, s : s + n])


def _params(a, p, dtype):
    """The key's and the value's parameters, each a function (b, first position, count) -> (scale,
    offset): scalars per tensor, [N2, 1, D] per channel; FusedInferAttentionScore's separate
    parameters by their modes (fused_infer/kv_antiquant_arch35)."""
    sides = getattr(a.antiquantScale, "split_sides", None)
    if sides is not None:
        return sides(p.b, p.kv_heads, p.d, p.s2, dtype)

    def pair(t):
        v = t.read().astype(dtype)
        if v.ndim == 1:
            return v[0], v[1]
        v = v.reshape(2, p.kv_heads, 1, p.d)
        return v[0], v[1]

    scale = pair(a.antiquantScale)
    offset = pair(a.antiquantOffset) if a.antiquantOffset is not None else (None, None)
    return tuple((lambda b, first, count, i=i: (scale[i], offset[i])) for i in range(2))


def _dequantised(tokens, params, dtype):
    return lambda b, start, length: dequantize(np.asarray(tokens(b, start, length)), *params(b, start, length), dtype)
