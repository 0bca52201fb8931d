"""aclnnDropoutGenMask / V2 through the C ABI, once per chip family: each CheckParams rule's code
(ops-math random/dsa_gen_bit_mask/op_host/op_api/aclnn_dropout_gen_mask.cpp: CheckNotNull ->
ACLNN_ERR_PARAM_NULLPTR; CheckDtypeValid, CheckProbability, CheckShape -> ACLNN_ERR_PARAM_INVALID;
CreateDropout's nullptr for an unsupported probDataType -> ACLNN_ERR_INNER_NULLPTR from the
CHECK_RET after ComputeMaskV2), and a generated mask's bytes against tests/golden/dropout_gen_mask.py."""

import cabi
from golden import dropout_gen_mask as golden

OK, NULL, INVALID, INNER_NULLPTR, KERNEL = 0, 161001, 161002, 561103, 561003
COMMON = {
    "null.shape": NULL,
    "null.out": NULL,
    "dtype.out": INVALID,
    "prob.above_one": INVALID,
    "prob.negative": INVALID,
    "shape.out_size": INVALID,
    "ok.prob_zero_int32_dtype": OK,
    "ok.empty_out": OK,
}
EXPECTED = {
    "Ascend910B": {**COMMON, "prob_dtype.int32": INNER_NULLPTR, "ok.v1": OK, "ok.bf16": OK},
    "Ascend910_93": {**COMMON, "prob_dtype.int32": INNER_NULLPTR, "ok.v1": OK, "ok.bf16": OK},
    # ComputeMaskV2's StatelessDropoutGenMask branch: a declared gap (unestablished.stateless_arch35)
    "Ascend910_95": {**COMMON, "prob_dtype.int32": KERNEL, "ok.v1": KERNEL, "ok.bf16": KERNEL},
}


def test_codes_per_chip_family(family):
    result = cabi.compile_and_run("dropout_gen_mask_codes.cpp", env={"ACLNN_EMU_SOC": family})
    assert result.returncode == 0, result.stderr
    assert cabi.rule_codes(result.stdout) == EXPECTED[family]
    if family != "Ascend910_95":
        line = next(line for line in result.stdout.splitlines() if line.startswith("mask "))
        assert bytes(int(b) for b in line.split()[1:]) == golden.mask(7, 12, 0.25, "bfloat16", 32)
