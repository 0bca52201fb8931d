"""aclnnDropoutGenMask / V2: the status of each CheckParams rule per chip family (ops-math
random/dsa_gen_bit_mask/op_host/op_api/aclnn_dropout_gen_mask.cpp, CheckParams and ComputeMaskV2),
the fills for prob 0 and 1, and the generated bits against tests/golden/dropout_gen_mask.py."""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.dtypes import DataType
from golden import dropout_gen_mask as golden

OK, NULL, INVALID, INNER_NULLPTR, KERNEL = 0, 161001, 161002, 561103, 561003
FP16, BF16, FP32 = int(DataType.ACL_FLOAT16), int(DataType.ACL_BF16), int(DataType.ACL_FLOAT)
CHIPS = ["Ascend910B", "Ascend910_93", "Ascend910_95"]


def _status(shape, prob, out, dtype=FP16, seed=1, offset=0):
    code, _, executor = ae.raw.aclnnDropoutGenMaskV2GetWorkspaceSize(shape, prob, seed, offset, dtype, out)
    return code


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_check_params_in_source_order(chip):
    """CheckNotNull -> 161001, CheckDtypeValid / CheckProbability / CheckShape -> 161002; an unknown
    probDataType fails CreateDropout -> nullptr -> ACLNN_ERR_INNER_NULLPTR on A2/A3; Ascend910_95's
    StatelessDropoutGenMask path is a declared gap (561003)."""
    ae.setup()
    out = ae.empty((16,), DataType.ACL_UINT8)
    cases = {
        "null.shape": _status(None, 0.1, out),
        "null.out": _status((100,), 0.1, None),
        "dtype.out": _status((100,), 0.1, ae.empty((16,), DataType.ACL_INT8)),
        "dtype.out_before_prob": _status((100,), 2.0, ae.empty((16,), DataType.ACL_INT8)),
        "prob.above_one": _status((100,), 1.5, out),
        "prob.negative": _status((100,), -0.1, out),
        "shape.out_size": _status((129,), 0.1, out),
        "ok.fill_ignores_prob_dtype": _status((100,), 0.0, out, dtype=int(DataType.ACL_INT32)),
        "ok.fill_one": _status((100,), 1.0, out, dtype=int(DataType.ACL_INT32)),
        "prob_dtype.int32": _status((100,), 0.1, out, dtype=int(DataType.ACL_INT32)),
        "ok.fp16": _status((100,), 0.1, out),
    }
    arch35 = chip == "Ascend910_95"
    assert cases == {
        "null.shape": NULL,
        "null.out": NULL,
        "dtype.out": INVALID,
        "dtype.out_before_prob": INVALID,
        "prob.above_one": INVALID,
        "prob.negative": INVALID,
        "shape.out_size": INVALID,
        "ok.fill_ignores_prob_dtype": OK,
        "ok.fill_one": OK,
        "prob_dtype.int32": KERNEL if arch35 else INNER_NULLPTR,
        "ok.fp16": KERNEL if arch35 else OK,
    }


@pytest.mark.parametrize("prob, byte", [(0.0, 0xFF), (1.0, 0x00)])
def test_prob_zero_and_one_fill(prob, byte):
    mask = ae.ops.DropoutGenMaskV2(shape=(5, 60), prob=prob, seed=3, offset=4, probDataType=FP16,
                                   out=np.full(48, 0x5A, np.uint8))  # fmt: skip
    assert mask.tolist() == [byte] * 48


@pytest.mark.parametrize("dtype, name", [(FP16, "float16"), (BF16, "bfloat16"), (FP32, "float32")])
@pytest.mark.parametrize("seed, offset, prob", [(0, 0, 0.1), (67280421310721, 12, 0.35), (-5, (1 << 40) + 3, 0.9)])
def test_bits_match_the_system_test_golden(dtype, name, seed, offset, prob):
    shape = (3, 70)  # 210 elements -> 256 bits, 32 bytes
    mask = ae.ops.DropoutGenMaskV2(shape=shape, prob=prob, seed=seed, offset=offset, probDataType=dtype,
                                   out=np.zeros(32, np.uint8))  # fmt: skip
    assert bytes(mask) == golden.mask(seed, offset, prob, name, 32)


def test_v1_draws_floats():
    v1 = ae.ops.DropoutGenMask(shape=(300,), prob=0.2, seed=9, offset=4, out=np.zeros(48, np.uint8))
    assert bytes(v1) == golden.mask(9, 4, 0.2, "float32", 48)


def test_keep_share_follows_prob():
    mask = ae.ops.DropoutGenMaskV2(shape=(1 << 16,), prob=0.1, seed=7, offset=0, probDataType=FP32,
                                   out=np.zeros(1 << 13, np.uint8))  # fmt: skip
    assert abs(np.unpackbits(mask).mean() - 0.9) < 0.01
