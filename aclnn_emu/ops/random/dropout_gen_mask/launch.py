"""aclnnDropoutGenMask / V2: the mask written into `out` (a fill for prob 0 or 1, else the DSA mask)."""

import numpy as np

from aclnn_emu.kernels.random import gen_mask


def fill(out, value: int):
    def run(workspace):
        out.write(np.full(out.shape, value, np.uint8))

    return run


def generated(out, seed: int, offset: int, prob: float, dtype: str):
    def run(workspace):
        out.write(gen_mask.gen_mask(seed, offset, prob, dtype, out.numel).reshape(out.shape))

    return run
