"""aclnnFlashAttentionScoreGradV4 through the C ABI, once per chip family under each CANN release.

Source: attention/flash_attention_score_grad/op_api/aclnn_flash_attention_score_grad.cpp at v9.0.0 and branch 9.1.0,
aclnnFlashAttentionScoreGradV4GetWorkspaceSize and FlashAttentionScoreGradV4GetWorkspace: the nulls (161001), the
all-empty shortcut, headNum (161002), [9.1.0: the output shapes, 161002], InvalidTensorDimCheck, GetInputShapeInfo,
[9.1.0: CheckSinkOptionalInput and the softmaxInLayout check], PreFlashAttentionScoreGrad (InputDtypeCheck, 161002),
then the L0 op with every input; its failures return 161001 (the ViewCopy of a nullptr result). v9.0.0 hands the L0
op no sink (`dsink`, a nullptr) and defaultSoftmaxInLayout ""."""

import pytest

import cabi

NULLPTR, INVALID, NOT_EMULATED = 161001, 161002, 561003
SOURCE = "flash_attention_score_grad_v4_rules.cpp"
NULLS = ("query", "keyIn", "value", "dy", "attentionIn", "dqOut", "dkOut", "dvOut", "workspaceSize", "executor")
COMMON = {
    **{rule: 0 for rule in ("ok.bnsd", "ok.bsh", "ok.tnd", "ok.all_out_empty")},
    # the tilings read outDtype for an FP8/HiFloat8 query only (arch35 ProcessQuantInfo; arch22 never)
    "ok.out_dtype_ignored": 0,
    # keepProb < 1 without a dropMask: Atlas A2/A3 need one (as V2); Ascend950 draws the mask from seed and offset
    # (arch35 ProcessDropoutInfo reads V4's seed/offset attributes)
    "dropout.seed_offset": NULLPTR,
    **{f"null.{name}": NULLPTR for name in NULLS},
    "head_num.zero": INVALID,
    # no InputOutputDtypeAndShapeCheck in V4 (9.1.0 runs it in the other entry points): the ViewCopy casts
    "dtype.dq_unlike_query": 0,
    # InputDtypeCheck, before the dequant scales reach the L0 op
    "dtype.key_mixed": INVALID,
    "dtype.key_mixed_before_dscale": INVALID,
    # GetInputShapeInfo CheckDimT on Atlas A2/A3 (versions.RULES fag.tnd_lengths_in_op_api)
    "tnd.without_lengths": INVALID,
    # not emulated (score_grad/v4.py PATHS)
    "gap.dscale": NOT_EMULATED,
    "gap.rope": NOT_EMULATED,
    "gap.dense_lengths": NOT_EMULATED,
}
BY_RELEASE = {
    "9.0.0": {
        # no output shape check: the ViewCopy of dq fails
        "shape.dq_unlike_query": NULLPTR,
        # the L0 op gets no sink: a dsinkOut would receive an output the infershape gives no shape (v4.py
        # UNESTABLISHED); without dsinkOut the sink is ignored
        "sink.with_dsink": NOT_EMULATED,
        "sink.without_dsink": 0,
        "sink.fp32_query": NOT_EMULATED,
        # softmaxInLayout is not read: the L0 op gets "" and the statistics are read token by token
        "softmax_in.dense_same_as_input": 0,
        "softmax_in.tnd_unknown": 0,
        "softmax_in.tnd_same_as_input": 0,
        # arch22 CheckSoftmaxMaxShape with "": [T1, N1, 8]
        "softmax_in.tnd_same_as_input_head_major": NULLPTR,
    },
    "9.1.0": {
        # OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE_FAGV4(dqOut, query)
        "shape.dq_unlike_query": INVALID,
        # CheckSinkOptionalInput: dsinkOut required (161001), an fp16/bf16 query (161002); the sink then runs
        "sink.with_dsink": 0,
        "sink.without_dsink": NULLPTR,
        "sink.fp32_query": INVALID,
        # the softmaxInLayout check: '' for dense layouts, same_as_input or '' for TND
        "softmax_in.dense_same_as_input": INVALID,
        "softmax_in.tnd_unknown": INVALID,
        # no transpose in V4: the arch22 tiling wants [N1, T1, 8] with same_as_input (CheckSoftmaxMaxShape)
        "softmax_in.tnd_same_as_input": NULLPTR,
        "softmax_in.tnd_same_as_input_head_major": NOT_EMULATED,
    },
}
ASCEND950 = {
    "dropout.seed_offset": 0,
    # GetInputShapeInfo's CheckDimT is StrideLimited(): the arch35 tiling finds no lengths
    "tnd.without_lengths": NULLPTR,
    # 9.0.0: the arch35 tiling no longer checks the statistics' shape (fag.arch35_tnd_softmax_unchecked);
    # 9.1.0: V5 does not transpose on Ascend950 either, and CheckSoftmaxMaxSumTndShape wants [T1, N1, 8]
    "softmax_in.tnd_same_as_input_head_major": {"9.0.0": NOT_EMULATED, "9.1.0": NULLPTR},
    "softmax_in.tnd_same_as_input": {"9.0.0": 0, "9.1.0": 0},
}


def expected(family, version):
    codes = {**COMMON, **BY_RELEASE[version]}
    if family == "Ascend910_95":
        codes.update({rule: code[version] if isinstance(code, dict) else code for rule, code in ASCEND950.items()})
    return codes


@pytest.mark.parametrize("version", ["9.0.0", "9.1.0"])
def test_every_rule_returns_the_source_code(family, version):
    assert cabi.release_codes(SOURCE, family, version) == expected(family, version)


@pytest.mark.parametrize("version", ["8.5.0-beta.1", "8.5.0"])
def test_absent_before_9(family, version):
    """The 8.5 headers declare no V4: phase 1 refuses it under an 8.5 release (calls.py _declared), after the C
    boundary's own null checks of the workspaceSize and executor pointers."""
    codes = cabi.release_codes(SOURCE, family, version)
    assert codes == {
        rule: NULLPTR if rule in ("null.workspaceSize", "null.executor") else NOT_EMULATED
        for rule in expected(family, "9.0.0")
    }
