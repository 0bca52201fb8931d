"""aclnnDropoutGenMask / V2 (ops-math random/dsa_gen_bit_mask/op_host/op_api/aclnn_dropout_gen_mask.cpp,
CANN 8.5): CheckParams (CheckNotNull, CheckDtypeValid, CheckProbability, CheckShape, in that order,
their codes from the CHECK_RETs there), an empty `out` succeeds at once, prob 0 fills the mask with
0xFF and prob 1 with 0 (FillScalar); otherwise ComputeMask / ComputeMaskV2: Atlas A2/A3 run the DSA
bit mask (kernels/random/gen_mask.py), CreateDropout refusing a probDataType other than FLOAT16, BF16
or FLOAT (its nullptr becomes ACLNN_ERR_INNER_NULLPTR). Ascend910_95 takes StatelessDropoutGenMask,
whose bits this emulator does not generate (declared gap).
"""

import sys

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.signature import Launch, OpError
from .entry import OP, V1, mask_bytes
from .launch import fill, generated

PROB_DTYPES = {DataType.ACL_FLOAT16: "float16", DataType.ACL_BF16: "bfloat16", DataType.ACL_FLOAT: "float32"}
EPSILON = sys.float_info.epsilon  # IsDoubleEqual

UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "stateless_arch35": "Ascend910_95 generates the mask with StatelessDropoutGenMask (ComputeMaskV2's "
        "else branch), whose bit layout this emulator has not read"
    },
)


def _check_params(a) -> None:
    if a.shape is None or a.out is None:
        name = "shape" if a.shape is None else "out"
        raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")
    if a.out.dtype != DataType.ACL_UINT8:
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"out dtype {a.out.dtype.name} should be in dtype support list [DT_UINT8]",
            rule="dtype.out",
        )
    if a.prob > 1 or a.prob < 0:
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"The value of prob has to be between 0 and 1, but current is {a.prob:f}",
            rule="value.prob",
        )
    need = mask_bytes(a.shape)
    if a.out.numel != need:
        raise OpError(
            status.ACLNN_ERR_PARAM_INVALID,
            f"Size of out has to be {need}, but current is {a.out.numel}",
            rule="shape.out",
        )


def _name(value: int) -> str:
    try:
        return DataType(value).name
    except ValueError:
        return f"aclDataType {value}"


@V1.check
def _v1_draws_floats(a, env) -> None:
    """ComputeMask: V1's random numbers are FLOAT (the mask's UINT8 read as DT_FLOAT)."""
    a.probDataType = DataType.ACL_FLOAT


@OP.prepare
def prepare(a, env):
    _check_params(a)
    if a.out.is_empty:
        return Launch.nothing()
    if abs(a.prob) <= EPSILON:
        return Launch(0, fill(a.out, 0xFF))
    if abs(a.prob - 1) <= EPSILON:
        return Launch(0, fill(a.out, 0))
    if env.soc == "Ascend910_95":
        UNESTABLISHED.refuse("stateless_arch35")
    dtype = PROB_DTYPES.get(a.probDataType)
    if dtype is None:
        raise OpError(
            status.ACLNN_ERR_INNER_NULLPTR,
            f"Scalar p not implemented for {_name(a.probDataType)}, should be in dtype support list [DT_FLOAT16, DT_BF16, DT_FLOAT]",
            rule="dtype.probDataType",
        )
    return Launch(0, generated(a.out, a.seed, a.offset, a.prob, dtype))
