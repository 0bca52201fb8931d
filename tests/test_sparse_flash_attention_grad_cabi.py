"""aclnnSparseFlashAttentionGrad through the C ABI: every validation rule's status code.

The op has no hand-written op_api in CANN 8.5: nulls and dtypes are the generated aclnn's
(161001 / 161002 / 561003), everything the tiling rejects is 561002 (reference indexer-sparse
§0.1, §2.A). tests/c/sparse_flash_attention_grad_rules.cpp prints one "<rule> <code>" per case.
"""

import pytest

import cabi
from aclnn_emu import status

PROGRAM = "sparse_flash_attention_grad_rules.cpp"
NULL, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID
TILING, NO_KERNEL = status.ACLNN_ERR_INNER_TILING_ERROR, status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR

EXPECTED = {
    **{
        f"null.{name}": NULL
        for name in (
            "query",
            "key",
            "value",
            "sparseIndices",
            "dOut",
            "out",
            "softmaxMax",
            "softmaxSum",
            "dQueryOut",
            "dKeyOut",
            "dValueOut",
        )
    },
    "dtype.query_fp32": INVALID,
    "dtype.out_mixed": INVALID,
    "dtype.sparseIndices_int64": INVALID,
    "dtype.softmaxMax_fp16": INVALID,
    "dtype.dValueOut_mixed": INVALID,
    "format.key_nz": INVALID,
    "format.key_nchw_ok": 0,
    # Inferred rules: a portability warning by default (see test_inferred_rules_fail_under_strict).
    "optional.actual_seq_int64": 0,
    "optional.query_rope_fp16": 0,
    "tiling.selected_block_count": TILING,
    "tiling.sparse_mode_1": TILING,
    "tiling.sparse_mode_low_word_ok": 0,
    "tiling.head_dim_qk": TILING,
    "tiling.head_dim_v": TILING,
    "tiling.layout": TILING,
    "tiling.layout_null_ok": 0,
    "tiling.layout_rank": TILING,
    "tiling.rope_dim": TILING,
    "tiling.rope_one_side_ok": 0,
    "tiling.tnd_actual_seq_q_null": TILING,
    "tiling.n2_zero": TILING,
    "tiling.n2_two": TILING,
    "tiling.n1_not_power_of_two": TILING,
    "tiling.n1_over_128": TILING,
    "tiling.g_zero": TILING,
    "tiling.tnd_zero": TILING,
    "tiling.tnd_softmaxMax_shape": TILING,
    "tiling.tnd_softmaxSum_rank": TILING,
    "tiling.tnd_out_shape": TILING,
    "tiling.tnd_out_head_dim": TILING,
    "tiling.q_post_base": TILING,
    "tiling.bsnd_softmax_shape_unchecked_ok": 0,
    "empty.all_outputs_ok": 0,
    "run.bsnd_ok": 0,
    "run.tnd_rope_ok": 0,
    # Emulator's choice, not a CANN fact: tiling lets block size 0 through and the NPU kernel
    # divides by it (undefined); aclnn-emu reports it as an AI Core exception.
    "run.block_size_zero": status.ACL_ERROR_RT_AICORE_EXCEPTION,
    "phase2.workspace_small": INVALID,
    "phase2.executor_null": NULL,
}


@pytest.fixture(scope="module")
def program():
    return cabi.build(PROGRAM)


def _codes(program, *args, **env):
    result = cabi.run(program, *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return cabi.rule_codes(result.stdout), result.stderr


# Ascend910_95: sparse_flash_attention_grad_def.cpp registers ascend910b and ascend910_93 only, so
# after the op_api null checks and the all-outputs-empty return every call has no kernel (561003).
UNREGISTERED = {
    rule: code if rule.startswith("null.") or rule in ("empty.all_outputs_ok", "phase2.executor_null") else NO_KERNEL
    for rule, code in EXPECTED.items()
}
BY_FAMILY = {"Ascend910B": EXPECTED, "Ascend910_93": EXPECTED, "Ascend910_95": UNREGISTERED}


def test_every_rule_returns_the_source_code(program, family):
    codes, stderr = _codes(program, ACLNN_EMU_SOC=family)
    assert codes == BY_FAMILY[family]
    registered = family != "Ascend910_95"
    assert ("ACLNN_EMU_STRICT=1 returns 561003" in stderr) == registered  # the portability warnings
    assert ("sparseBlockSize 0 is outside 1..128" in stderr) == registered  # the sanitizer's reason


def test_inferred_rules_fail_under_strict(program):
    codes, _ = _codes(program, ACLNN_EMU_STRICT="1")
    assert codes["optional.actual_seq_int64"] == NO_KERNEL
    assert codes["optional.query_rope_fp16"] == NO_KERNEL
    assert {k: v for k, v in codes.items() if not k.startswith("optional.")} == {
        k: v for k, v in EXPECTED.items() if not k.startswith("optional.")
    }


@pytest.mark.parametrize("soc, code", [("Ascend910B", 0), ("Ascend910_93", 0), ("Ascend910_95", NO_KERNEL)])
def test_registered_chips_only(program, soc, code):
    codes, _ = _codes(program, "soc", ACLNN_EMU_SOC=soc)
    assert codes == {"soc.bsnd": code}


def test_numerics_through_the_c_abi(tmp_path):
    """A C++ program runs the op on a TND case with rope, block size 16, mode 3 and duplicates."""
    import ml_dtypes
    import numpy as np

    from aclnn_emu import dtypes
    from golden import sparse_flash_attention_grad as golden

    case, attrs = golden.make_case(
        np.random.default_rng(7),
        dtype=ml_dtypes.bfloat16,
        layout="TND",
        q_lens=[16, 24],
        kv_lens=[300, 260],
        n1=8,
        d=128,
        dr=64,
        block_size=16,
        sparse_mode=3,
        nsel=12,
        duplicates=True,
    )
    outputs = {
        "dQueryOut": ("dq", "query"),
        "dKeyOut": ("dk", "key"),
        "dValueOut": ("dv", "value"),
        "dQueryRopeOut": ("dq_rope", "queryRope"),
        "dKeyRopeOut": ("dk_rope", "keyRope"),
    }
    lines = []
    for name, array in [*case.items(), *((o, case[src]) for o, (_, src) in outputs.items())]:
        lines.append(f"{name} {int(dtypes.from_numpy(array.dtype))} {array.ndim} {' '.join(map(str, array.shape))}")
        if name not in outputs:
            array.tofile(tmp_path / f"{name}.bin")
    lines.append(f"attrs {attrs['scale']!r} {attrs['block_size']} {attrs['layout']} {attrs['sparse_mode']}")
    (tmp_path / "tensors.txt").write_text("\n".join(lines) + "\n")

    result = cabi.compile_and_run("sparse_flash_attention_grad_run.cpp", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    got = {
        key: np.fromfile(tmp_path / f"{name}.bin", ml_dtypes.bfloat16).reshape(case[src].shape)
        for name, (key, src) in outputs.items()
    }
    assert golden.precision_failures(got, case, attrs, "bf16") == []
