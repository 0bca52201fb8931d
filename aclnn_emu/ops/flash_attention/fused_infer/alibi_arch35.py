"""Ascend950's alibi on the PFA route under CANN 9.0.0: FusedInferAttentionScoreV5 with pseType 2 or 3.

Source (v9.0.0), attention/prompt_flash_attention/op_host/prompt_flash_attention_tiling_v2.cpp:
SetAttributeInfo (pseType 2/3 sets enableAlibiPse and clears enablePseShift, so the pseShift rules
skip the slopes), CheckAlibiPseShiftTypeAndShape, the per-tensor / per-block quant, system prefix
and learnable-sink rules, CheckAlibiPseCrossover, the per-batch length rule after the token checks,
and SetQKVStartIdx last; attention/common/op_kernel/arch35/pse.h ComputeInnerPseOffset and the
vf_basic_block_*.h softmax loops for the bias.

What the kernels add: after scaling the fp32 scores, -slope[n] * |d| (pseType 3: * sqrt|d|) with
d = (j + kvStartIdx) - (i + qStartIdx) for query row i and key j of the batch, slope[n] the FLOAT
slopes' entry of query head n. d is formed in fp32 from an integer start (Arange from posShift,
minus 1 per row), exact since |kvStartIdx - qStartIdx| <= 2^20; Abs, Sqrt and the product with the
negated slope are one fp32 rounding each, as kernels/flash_attention/pse.py's PseSource computes.
ComputeInnerPseOffset adds a negative nextTokensPerBatch back to the row offset, so d counts the
batch's rows from its first row whatever rows the kernel skips. SetAttributeInfo also keeps the
call off the GQA merge and the one-row (enableIFA) template.

Not emulated (561003, pse_type.V5_PATHS): TND/NTD queries (the packed kernels), a block table, a
query S of 1 (SetAttributeInfo's template choices there are not followed) and softmaxLse (the
emulator writes it from a second pass without the bias); the IFA route's alibi (pse_type).
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.opdef.gaps import Gaps

from . import padding, shared_prefix
from . import query_quant_arch35 as query_quant
from .entry import V5
from .failure import tiling as failure
from .layouts import query_s, split
from .pse_type import ALIBI, V5_PATHS
from .route import qkv_d

FP32, I8 = DataType.ACL_FLOAT, DataType.ACL_INT8
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
POS_SHIFT = 1 << 20  # POS_SHIFT_MAX / -POS_SHIFT_MIN: the kernel's float d stays exact
PACKED = ("TND", "NTD")
MLA_D = 512  # enableIFAMLA: a rope beside D 512
REFUSED = Gaps(
    V5,
    "refused",
    {
        "alibi_scalar_slopes": "a 0-d slopes tensor beside more than one query head: CheckAlibiPseShiftTypeAndShape "
        "checks no dimension of it and the kernels read slope[n] for every head n"
    },
)


def wanted(a, arch35: bool) -> bool:
    return arch35 and getattr(a, "pseType", 0) in ALIBI


def check_emulated(a) -> None:
    """What the emulator does not run, refused after the tiling's checks."""
    if split(a.inputLayout or "BSH")[0] in PACKED:
        V5_PATHS.refuse("pse_type", f"inputLayout {a.inputLayout}")
    if a.blockTableOptional is not None:
        V5_PATHS.refuse("pse_type", "with a block table")
    if query_s(a) == 1:
        V5_PATHS.refuse("pse_type", "with a query S of 1")
    if a.lse_wanted:
        V5_PATHS.refuse("pse_type", "with softmaxLse")
    slopes = a.pseShiftOptional
    if slopes.ndim == 0 and a.numHeads > 1:
        REFUSED.refuse("alibi_scalar_slopes", f"numHeads {a.numHeads}")


def check_slopes(a) -> None:
    """CheckAlibiPseShiftTypeAndShape, then the crossover rules, in the tiling's order."""
    dims = qkv_d(a)
    qd, vd = (dims[0], dims[2]) if dims is not None else (0, 0)
    rope = a.queryRopeOptional is not None or a.keyRopeOptional is not None
    if qd != vd:
        raise failure("alibi.d", "Not support alibi pse when query and key headdim is not equal to value headdim.")
    if rope and qd == MLA_D:
        raise failure("alibi.mla", "MLA do not support pseShift.")
    slopes = a.pseShiftOptional
    if slopes is None:
        raise failure("alibi.null", "pseShift shape is null.")
    if slopes.dtype != FP32:
        raise failure(
            "alibi.dtype",
            f"When pseType = 2/3, pse shift type must be float, but pse shift type = DT_{slopes.dtype.short}",
        )
    if slopes.ndim != 0 and slopes.ndim != 1:
        raise failure("alibi.rank", f"The dim of pseShift({slopes.ndim}) must be 1, when pseType = 2/3.")
    if slopes.ndim == 1 and slopes.shape[0] != a.numHeads:
        raise failure(
            "alibi.heads",
            f"The length of pseShift({slopes.shape[0]}) must be equal to query head number, when pseType = 2/3.",
        )
    if a.query.dtype == I8 or query_quant.per_tensor_8bit_float(a):
        raise failure("alibi.per_tensor", "AlibiPse is not supported in per-tensor quant scenario.")
    if query_quant.per_block(a):
        raise failure("alibi.per_block", "AlibiPse is not supported in per-block quant scenario!")
    if shared_prefix.present(a):
        raise failure("alibi.prefix", "When pseType = 2/3, system prefix is not supported!")
    if a.learnableSinkOptional is not None:
        raise failure("alibi.sink", "When learnable sink is used, AlibiPse is not supported!")
    if padding.padded(a):  # CheckAlibiPseCrossover
        raise failure("alibi.padding", "When pseType = 2/3, left padding is not supported!")
    if rope:
        raise failure("alibi.rope", f"When pseType = 2/3, rope is not supported, pseType = {a.pseType}")


def check_lengths(act_q, act_kv) -> None:
    """The multi-feature check's per-batch rule: each batch's query and key lengths equal."""
    for i, (sq, skv) in enumerate(zip(act_q, act_kv)):
        if sq != skv:
            raise failure(
                "alibi.lengths",
                f"When pseType = 2/3, actualSeqLengths[{i}](seq size of query)={sq} must be equal to "
                f"actualSeqLengthsKv[{i}](seq size of key)={skv}",
            )


def start_indices(a) -> tuple[int, int]:
    """SetQKVStartIdx: each given array's first value (0 without one), within int32, their difference
    within +-2^20."""
    found = []
    for name, values in (("qStartIdx", a.qStartIdxOptional), ("kvStartIdx", a.kvStartIdxOptional)):
        value = int(values[0]) if values else 0
        if not INT32_MIN <= value <= INT32_MAX:
            raise failure(
                "alibi.start_range", f"{name} should >= {INT32_MIN} and <= {INT32_MAX}, but {name} = {value}."
            )
        found.append(value)
    q_start, kv_start = found
    if not -POS_SHIFT <= kv_start - q_start <= POS_SHIFT:
        raise failure(
            "alibi.pos_shift",
            f"kvStartIdx - qStartIdx should >= {-POS_SHIFT} and <= {POS_SHIFT}, but qStartIdx = {q_start}, "
            f"kvStartIdx = {kv_start}.",
        )
    return q_start, kv_start


class Kernel:
    """The bias the PFA launch adds: a PseSource of pseType 2/3 over the FLOAT slopes, with the start
    indices SetQKVStartIdx has checked by the time it runs."""

    def __init__(self, a):
        self.a = a

    def source(self) -> PseSource:
        q_start, kv_start = start_indices(self.a)
        slopes = self.a.pseShiftOptional.read("pseShift").astype(np.float32).reshape(-1)
        return PseSource(slopes, self.a.pseType, 0, 0, [q_start], [kv_start])
