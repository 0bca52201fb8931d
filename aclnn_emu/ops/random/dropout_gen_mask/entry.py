"""aclnnDropoutGenMask and aclnnDropoutGenMaskV2 (aclnn_dropout_gen_mask.h): the dropout bit mask
torch_npu's npu_fusion_attention passes to FlashAttentionScore as its dropMask. V1 draws its random
numbers as FLOAT; V2 in probDataType. checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.signature import Double, Enum, Int64, IntArrayIn, Op, TensorOut

HEADER = "aclnn_dropout_gen_mask.h"
VEC_BITS = 128  # the mask covers the element count rounded up to this many bits


def mask_bytes(shape) -> int:
    """The mask's length in bytes for an element shape (InferDSAOutShapeV2)."""
    count = 1
    for dim in shape:
        count *= dim
    return (count + VEC_BITS - 1) // VEC_BITS * VEC_BITS // 8


def _mask(a):
    return None if a.shape is None else ((mask_bytes(a.shape),), DataType.ACL_UINT8)


def _params(v2: bool) -> list:
    return [
        IntArrayIn("shape", doc="the shape of the tensor the mask drops elements of (its element count counts)"),
        Double("prob", doc="the probability of dropping an element, in [0, 1]"),
        Int64("seed", doc="the random seed (the Philox key)"),
        Int64("offset", doc="the random offset (the Philox counter's upper 64 bits)"),
        *(
            [
                Enum(
                    "probDataType",
                    "aclDataType",
                    doc="the dtype the random numbers and prob are compared in: FLOAT16, BF16 or FLOAT",
                )
            ]
            if v2
            else []
        ),
        TensorOut(
            "out",
            ctype="aclTensor *",
            dtypes=(DataType.ACL_UINT8,),
            like=_mask,
            doc="UINT8 [ceil(numel / 128) * 16]: bit i (LSB first) is 1 when element i is kept",
        ),
    ]


# torch_npu calls V2 from _npu_dropout_gen_mask (and npu_fusion_attention), V1 from npu_dropout_gen_mask;
# neither has a default for these parameters.
OP = Op("DropoutGenMaskV2", HEADER, _params(v2=True), defaults_from="torch_npu._npu_dropout_gen_mask")
V1 = Op("DropoutGenMask", HEADER, _params(v2=False), base=OP, defaults_from="torch_npu.npu_dropout_gen_mask")
