"""aclnnLightningIndexerGrad through the C ABI: every validation rule's status code (reference
§1.A), the empty-query path, and numerics of a compiled program against the float64 golden."""

import ml_dtypes
import numpy as np
import pytest

import cabi
from precision import assert_meets
from golden.lightning_indexer_grad import reference

NULLPTR, INVALID, INNER, AICORE = 161001, 161002, 561103, 507015
MIB = 1 << 20


def workspace_bytes(dk_elements, cores=24):
    """Tiling: 16 MiB library reserve, fp32 dk, per-core buffers of the part's AI cores (24 on the
    parts the family names mean), 16 MiB reserve, each step aligned up to 512 bytes."""
    up = lambda x: (x + 512) // 512 * 512
    size = up(16 * MIB + 4 * dk_elements)
    for per_core in (1 * MIB, 1 * MIB, MIB // 2, 2 * MIB):  # key gather, relu in, relu grad, scatter add
        size = up(size + cores * per_core)
    return size + 16 * MIB


RULES = {
    **{
        f"null.{name}": NULLPTR
        for name in ("query", "key", "dy", "spareIndices", "weights", "dQuery", "dKey", "dWeights")
    },
    "null.before_empty": NULLPTR,
    "dtype.before_empty": 0,
    "dtype.before_null_out": NULLPTR,
    "empty.query": 0,
    "empty.query.workspace": 0,
    "empty.query.run": 0,
    "empty.query.sync": 0,
    "empty.query.untouched": 1,
    "layout.null": INNER,
    "layout.value": INNER,
    "query.rank.bsnd": INNER,
    "query.rank.tnd": INNER,
    "dtype.query": INNER,
    "dtype.key": INNER,
    "dtype.dy": INNER,
    "dtype.weights": INNER,
    "dtype.spareIndices": INNER,
    "dtype.actucalSeqLengthsQuery": INNER,
    "dtype.actucalSeqLengthsKey": INNER,
    "key.rank": INNER,
    "tnd.actual_seq_query": INNER,
    "tiling.n1": INNER,
    "tiling.d": INNER,
    "tiling.n2": INNER,
    "format.query": 0,
    "out.dtype.dQuery": 0,
    "out.shape.dQuery": 0,
    "out.shape.dKey.numel": INNER,
    "unchecked.sparse_mode": 0,
    "unchecked.dy_shape": 0,
    **{
        f"{base}{step}": 0
        for base in ("baseline.bsnd", "baseline.bsnd.fp16", "baseline.tnd")
        for step in ("", ".run", ".sync")
    },
    "baseline.bsnd.workspace": workspace_bytes(16 * 128),
    "baseline.bsnd.fp16.workspace": workspace_bytes(16 * 128),
    "baseline.tnd.workspace": workspace_bytes(16 * 128),
    "tnd.actual_seq_key": 0,
    "tnd.actual_seq_key.workspace": workspace_bytes(16 * 128),
    # Emulator's choice, not a CANN fact: TND without actualSeqLengthsKey makes the NPU kernel read
    # through a null pointer (undefined); aclnn-emu fails the task with an AI Core exception.
    "tnd.actual_seq_key.run": 0,
    "tnd.actual_seq_key.sync": AICORE,
}
INFERRED = ("format.query", "out.dtype.dQuery", "out.shape.dQuery")  # the program's labels
INFERRED_RULES = ("inferred.format", "inferred.out_dtype", "inferred.out_shape")  # their rule ids
# Ascend910_95: lightning_indexer_grad_def.cpp registers ascend910b and ascend910_93 only, so every
# call that gets past the op_api null and empty checks has no kernel (561103); a failed phase 1
# leaves the workspace size 0 and runs nothing.
NO_KERNEL = {
    rule: (
        code if rule.startswith(("null.", "empty.", "dtype.before_")) else 0 if rule.endswith(".workspace") else INNER
    )
    for rule, code in RULES.items()
    if rule.startswith("empty.") or not rule.endswith((".run", ".sync"))
}
BY_FAMILY = {"Ascend910B": RULES, "Ascend910_93": RULES, "Ascend910_95": NO_KERNEL}


# 9.0.0 and 9.1.0 (ACLNN_EMU_CANN_VERSION; the tables above are 8.5.0's): ValidateParams checks the inputs'
# nulls and dtypes first (ops-transformer v9.0.0 and branch 9.1.0
# attention/lightning_indexer_grad/op_host/op_api/aclnn_lightning_indexer_grad.cpp ValidateParams, CheckDataType).
VALIDATED_FIRST = {
    name: INVALID
    for name in ("dtype.query", "dtype.key", "dtype.dy", "dtype.weights", "dtype.before_empty", "dtype.before_null_out")
}


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "9.0.0", "9.1.0"])
def test_every_rule_per_release(family, version):
    env = {"ACLNN_EMU_SOC": family, "ACLNN_EMU_CANN_VERSION": version}
    result = cabi.compile_and_run("lightning_indexer_grad_rules.cpp", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    changes = VALIDATED_FIRST if version.startswith("9.") else {}
    assert cabi.rule_codes(result.stdout) == {**BY_FAMILY[family], **changes}


def test_every_rule_returns_its_code(family):
    result = cabi.compile_and_run("lightning_indexer_grad_rules.cpp", env={"ACLNN_EMU_SOC": family})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == BY_FAMILY[family]
    for rule in INFERRED_RULES:
        assert (f"(rule {rule})" in result.stderr) == (family != "Ascend910_95")


@pytest.mark.parametrize("part, cores", [("Ascend910B4", 20), ("Ascend910_9362", 20), ("Ascend910_9381", 24)])
def test_workspace_follows_the_parts_cube_cores(part, cores):
    """platform.py: cube_core_cnt of the part's platform config sizes the per-core buffers."""
    result = cabi.compile_and_run("lightning_indexer_grad_rules.cpp", env={"ACLNN_EMU_SOC": part})
    assert cabi.rule_codes(result.stdout)["baseline.bsnd.workspace"] == workspace_bytes(16 * 128, cores)


def test_inferred_rules_fail_under_strict():
    result = cabi.compile_and_run("lightning_indexer_grad_rules.cpp", env={"ACLNN_EMU_STRICT": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == {**RULES, **{rule: INNER for rule in INFERRED}}


def test_no_kernel_for_arch35():
    result = cabi.compile_and_run("lightning_indexer_grad_rules.cpp", "soc", env={"ACLNN_EMU_SOC": "Ascend910_95"})
    assert cabi.rule_codes(result.stdout) == {"soc.bsnd": INNER}


def pattern(count, mult, mod, offset):
    """The compiled program's input values: multiples of 1/8, exact in fp16 and bf16."""
    return ((np.arange(count) * mult % mod) - offset) / 8.0


@pytest.mark.parametrize("dtype_name", ["fp16", "bf16"])
def test_compiled_program_matches_golden(tmp_path, dtype_name):
    result = cabi.compile_and_run("lightning_indexer_grad_numerics.cpp", dtype_name, tmp_path)
    assert result.returncode == 0 and "sanitizer" not in result.stderr, result.stdout + result.stderr
    dtype = np.dtype(np.float16 if dtype_name == "fp16" else ml_dtypes.bfloat16)
    b, s1, s2, top_k = 2, 5, 24, 16
    q = pattern(b * s1 * 64 * 128, 37, 23, 11).reshape(b, s1, 64, 128).astype(dtype)
    k = pattern(b * s2 * 128, 29, 19, 9).reshape(b, s2, 1, 128).astype(dtype)
    dy = pattern(b * s1 * top_k, 13, 17, 8).reshape(b, s1, top_k).astype(dtype)
    w = pattern(b * s1 * 64, 7, 11, 5).reshape(b, s1, 64).astype(dtype)
    rows = np.arange(b * s1)[:, None]
    idx = ((rows * 5 + np.arange(top_k) * 3) % s2).reshape(b, s1, top_k).astype(np.int32)  # repeats in rows
    golden = reference(q, k, dy, idx, w, layout="BSND", sparse_mode=3)
    for name, like, expected in zip(("dq", "dk", "dw"), (q, k, w), golden):
        actual = np.fromfile(tmp_path / f"{name}.bin", dtype).reshape(like.shape)
        assert_meets(actual, expected, dtype, name)
