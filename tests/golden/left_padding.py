"""Left padding (queryPaddingSize / kvPaddingSize) from the operator docs and the PFA kernels'
offsets: batch b attends its act_q[b] query rows ending q_pad rows before S1 to its act_kv[b] key
rows ending kv_pad rows before S2 (a negative size counts as 0); the mask and pse are read at
(those query rows, those key rows); every other output row is 0. A side whose length and padding
exceed S reads from row 0 (the A2/A3 PFA kernels) or, with ``overflow_empty`` (the Ascend910_95
and FIA-V3 kernels), leaves the batch's output 0.

`attend(q, k, v, mask, pse)` is the unpadded reference for one batch ([1, N, rows, D] inputs,
mask [1, rows, keys] or None, pse [1, N, rows, keys] or None); its [1, N, rows, Dv] result is
placed at the batch's query rows.
"""

import numpy as np


def first_row(size, length, pad):
    return max(0, size - length - max(pad, 0))


def fits(size, length, pad):
    return pad is None or size - length - max(pad, 0) >= 0


def attention(q, k, v, act_q, act_kv, q_pad, kv_pad, attend, mask=None, pse=None, overflow_empty=False, fill=0.0):
    """q/k/v [B, N, S, D] as float arrays of the kernel dtype; mask [1|B, S1, S2]; pse [1|B, N, S1, S2].
    ``attend`` may return per-row results ([1, N, rows], e.g. an lse): rows no batch reaches hold ``fill``."""
    b, n, s1, _ = q.shape
    s2 = k.shape[2]
    parts = {}
    for bi in range(b):
        aq, ak = act_q[bi], act_kv[bi]
        i0 = first_row(s1, aq, q_pad) if q_pad is not None else 0
        j0 = first_row(s2, ak, kv_pad) if kv_pad is not None else 0
        rows, keys = slice(i0, i0 + aq), slice(j0, j0 + ak)
        m = None if mask is None else mask[bi if mask.shape[0] > 1 else 0][None, rows, keys]
        p = None if pse is None else pse[bi if pse.shape[0] > 1 else 0][None, :, rows, keys]
        if overflow_empty and not (fits(s1, aq, q_pad) and fits(s2, ak, kv_pad)):
            continue
        if aq and ak:
            parts[bi, i0] = attend(q[bi : bi + 1, :, rows], k[bi : bi + 1, :, keys], v[bi : bi + 1, :, keys], m, p)[0]
    tail = next(iter(parts.values())).shape[2:] if parts else (v.shape[3],)
    out = np.full((b, n, s1) + tail, fill)
    for (bi, i0), part in parts.items():
        out[bi, :, i0 : i0 + part.shape[1]] = part
    return out
