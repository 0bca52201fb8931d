"""The dropout mask npu_fusion_attention and its grad hand FlashAttentionScore, made as torch_npu makes
it (FlashAttentionKernelNpuOpApi.cpp `dropout_gen_mask`, `dropout_gen_mask_impl`): for 0 < keep_prob
< 1 the seed and offset come from the generator (`philox_engine_inputs(10)`) and aclnnDropoutGenMaskV2
fills ceil(numels / 128) * 16 bytes with prob = 1 - keep_prob (in float) in the query's dtype; for
keep_prob 0, zeros with 32 bytes more; for keep_prob 1 no mask.

The generator stands in for torch_npu's NPU generator: its seed is torch's (`torch.manual_seed`
sets it), its offset starts at 0 for each seed and advances by the increment rounded up to 4, as
NPUGeneratorImpl::philox_engine_inputs does.
"""

import threading

import numpy as np
import torch

from aclnn_emu.dtypes import DataType
from . import aclnn

EPSILON = 1e-9  # get_dropout_status
LENGTH_BIAS = 32
VEC_BITS = 128
PROB_DTYPES = {
    torch.float16: DataType.ACL_FLOAT16,
    torch.bfloat16: DataType.ACL_BF16,
    torch.float32: DataType.ACL_FLOAT,
}


class _Generator:
    def __init__(self):
        self.lock = threading.Lock()
        self.seed, self.offset = None, 0

    def philox_engine_inputs(self, increment: int) -> tuple[int, int]:
        with self.lock:
            seed = torch.initial_seed()
            if seed != self.seed:
                self.seed, self.offset = seed, 0
            offset = self.offset
            self.offset += (increment + 3) // 4 * 4
            return _int64(seed), _int64(offset)


def _int64(value: int) -> int:
    """static_cast<int64_t> of a uint64_t."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


GENERATOR = _Generator()


def status(keep_prob: float) -> str:
    if abs(keep_prob) < EPSILON:
        return "all"
    if abs(keep_prob - 1.0) < EPSILON:
        return "none"
    return "normal"


def mask_length(numels: int) -> int:
    return (numels + VEC_BITS - 1) // VEC_BITS * VEC_BITS // 8


def gen_mask(query: torch.Tensor, keep_prob: float, seed: int, offset: int, numels: int) -> torch.Tensor:
    """aclnnDropoutGenMaskV2 as dropout_gen_mask_impl calls it."""
    mask = torch.empty(mask_length(numels), dtype=torch.uint8)
    prob = float(np.float32(1.0) - np.float32(keep_prob))
    aclnn.call("DropoutGenMaskV2", (numels,), prob, seed, offset, int(PROB_DTYPES.get(query.dtype, -1)), mask)
    return mask


def forward_mask(query, keep_prob: float, seed: int, offset: int, numels: int):
    """(mask or None, seed, offset) as the forward makes them: a new seed and offset when it draws."""
    which = status(keep_prob)
    if which == "normal":
        seed, offset = GENERATOR.philox_engine_inputs(10)
        if aclnn.soc() != aclnn.ARCH35:
            return gen_mask(query, keep_prob, seed, offset, numels), seed, offset
        return None, seed, offset
    if which == "all":
        return torch.zeros(mask_length(numels) + LENGTH_BIAS, dtype=torch.uint8), seed, offset
    return None, seed, offset


def backward_mask(query, keep_prob: float, seed: int, offset: int, numels: int):
    """The grad's mask: the forward's, made again from its seed and offset."""
    which = status(keep_prob)
    if which == "normal" and aclnn.soc() != aclnn.ARCH35:
        return gen_mask(query, keep_prob, seed, offset, numels)
    if which == "all":
        return torch.zeros(mask_length(numels) + LENGTH_BIAS, dtype=torch.uint8)
    return None
