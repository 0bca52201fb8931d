"""Float64 reference of the A2/A3 PFA MSD kernels (FusedInferAttentionScore's separate key/value
antiquant with query S <= 16): attention over the dequantised key and value, written from the V4
document's 伪量化 formulas and the tiling's parameter layouts, independent of how the kernels split
their products into int8 pieces (which approximate each product within about 2**-15 of its row's
largest term).

Per channel (modes 0) the parameters hold one value per KV head and channel ([N2, D], [N2, 1, D]
or [H2]); per token (modes 1) one per batch and key row ([B2, S2]):
  key   = (k8 + offsetK) * scaleK      value = (v8 + offsetV) * scaleV
"""

import numpy as np


def dequantised(x8, scale, offset, per_token: bool) -> np.ndarray:
    """An INT8 key/value [B, N2, S2, D] as float64, with its parameters as given to the operator."""
    x = np.asarray(x8, np.float64)
    b, n2, s2, d = x.shape
    if per_token:
        view = lambda p: np.asarray(p, np.float64).reshape(b, 1, s2, 1)  # noqa: E731
    else:
        view = lambda p: np.asarray(p, np.float64).reshape(1, n2, 1, d)  # noqa: E731
    if offset is not None:
        x = x + view(offset)
    return x * view(scale)
