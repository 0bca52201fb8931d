"""FusedInferAttentionScoreV2+ separate key/value antiquant parameters on the A2/A3 IFA route
(S = 1, D 32: no FIA-V3 head size): IFATiling::ProcessAntiQuant (incre_flash_attention_tiling.cpp)
checks them right after ProcessQuant, in this order (every failure 561002):
CheckKeyAndValueAntiquantScaleOffset, CheckKeyAndValueAntiquantOffset, CheckKvAntiquant4SplitMode,
ProcessAntiQuantMode (CheckAntiQuantParamKeyType / ValueType, CheckKVAntiQuantMode, then
CheckAntiQuantParam on the key's parameters: incre_flash_attention_tiling_check.cpp, with
CheckKVAntiQuantParaShapeLegal / CheckKVAntiQuantPerToken / CheckKVAntiQuantPerChannel in
incre_flash_attention_tiling.cpp). Per-channel, per-token and key-per-channel/value-per-token calls
that pass run, and so do modes 2-5 (per tensor + head, per token + head, per token (+ head) in the
cache's blocks, whose shapes ProcessBlockTable checks: CheckKVAntiQuantParamsInPagedAttention)."""

import numpy as np
import pytest

import aclnn_emu as ae

F16, F32 = np.float16, np.float32
Q = np.zeros((2, 8, 1, 32), F16)
K8 = np.ones((2, 2, 80, 32), np.int8)
CH = np.ones((1, 2, 1, 32), F16)  # per channel
TOK = np.ones((1, 2, 80), F32)  # per token
# a paged cache [blocks, blockSize, H] of 4 blocks of 32 tokens, 2 per batch
PAGED = dict(
    key=np.ones((4, 32, 64), np.int8), blockTableOptional=np.array([[0, 1], [2, 3]], np.int32), blockSize=32,
    actualSeqLengthsKvOptional=(64, 40), inputLayout="BSH", query=np.zeros((2, 1, 256), F16),
)  # fmt: skip


def _modes(scale, mode):
    """Key and value in ``mode`` with ``scale`` for both."""
    return dict(
        keyAntiquantScaleOptional=scale, valueAntiquantScaleOptional=scale, keyAntiquantMode=mode,
        valueAntiquantMode=mode,
    )  # fmt: skip


def _token(scale):
    return _modes(scale, 1)


# case -> (keyword arguments, message of the failing rule; None: passes the checks, not emulated)
CASES = {
    "unenabled": (dict(key=np.ones((2, 2, 80, 32), F16), keyAntiquantScaleOptional=CH), "unenabled"),
    "value_scale_missing": (dict(keyAntiquantScaleOptional=CH), "the value's dequant scale is null"),
    "key_scale_missing": (dict(valueAntiquantScaleOptional=CH), "the key's dequant scale is null, but the value"),
    "value_offset_missing": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=CH, keyAntiquantOffsetOptional=CH),
        "value's dequant offset is null",
    ),
    "key_offset_alone": (
        dict(keyAntiquantOffsetOptional=CH, valueAntiquantOffsetOptional=CH, valueAntiquantScaleOptional=CH),
        "the key's dequant scale is null, but the value",  # the scales' pair rule comes first
    ),
    "scale_shapes": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=np.ones((1, 2, 32), F16)),
        "dequant scale should have the same shape",
    ),
    "offset_shapes": (
        dict(
            keyAntiquantScaleOptional=CH,
            valueAntiquantScaleOptional=CH,
            keyAntiquantOffsetOptional=CH,
            valueAntiquantOffsetOptional=np.ones((1, 2, 32), F16),
        ),
        "offset should have the same shape",
    ),  # fmt: skip
    "modes_differ": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=CH, keyAntiquantMode=1, valueAntiquantMode=0),
        "should be the same",
    ),
    "value_scale_dtype": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=TOK.astype(F16), valueAntiquantMode=1),
        "should be float32",
    ),
    "key_scale_dtype": (
        dict(keyAntiquantScaleOptional=CH.astype(F32), valueAntiquantScaleOptional=TOK, valueAntiquantMode=1),
        "same with input qtype",
    ),
    "mode_range": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=CH, keyAntiquantMode=6, valueAntiquantMode=6),
        "it should be 0, 1, 2, 3, 4 or 5",
    ),
    "paged_mode_without_table": (
        dict(keyAntiquantScaleOptional=TOK, valueAntiquantScaleOptional=TOK, keyAntiquantMode=4, valueAntiquantMode=4),
        "must be used in page attention scene",
    ),
    "per_token_head_shape": (_modes(TOK, 3), "dim 0 of antiquant should be 2"),
    "per_token_head_s": (_modes(np.ones((2, 2, 79), F32), 3), "The 3rd dim of antiquant should be >= 80"),
    "per_tensor_head_shape": (_modes(np.ones((1,), F16), 2), "Expect[2]"),
    "per_tensor_head_dtype": (_modes(np.ones((2,), F32), 2), "same with input qtype"),
    "paged_params_blocks": (
        dict(_modes(np.ones((3, 32), F32), 4), **PAGED),
        "Dim 0 of antiquant parameter should be 4",
    ),
    "paged_params_block_size": (
        dict(_modes(np.ones((4, 16), F32), 4), **PAGED),
        "Dim 1 of antiquant parameter should be 32",
    ),
    "paged_params_heads": (
        dict(_modes(np.ones((4, 1, 32), F32), 5), **PAGED),
        "Dim 1 of antiquant parameter should be 2",
    ),
    "paged_params_3d_not_emulated": (dict(_modes(np.ones((4, 32, 1), F32), 4), **PAGED), None),
    # CheckAntiQuantParam on the key's scale and offset (antiquantNum_ 1 in split mode).
    "param_ranks": (
        dict(
            keyAntiquantScaleOptional=TOK,
            valueAntiquantScaleOptional=TOK,
            keyAntiquantOffsetOptional=TOK[0],
            valueAntiquantOffsetOptional=TOK[0],
            keyAntiquantMode=1,
            valueAntiquantMode=1,
        ),
        "antiquant params have different layouts",
    ),  # fmt: skip
    "per_token_n": (_token(np.ones((2, 2, 80), F32)), "The 1st dim of antiquant should be 1"),
    "per_token_b": (_token(np.ones((1, 3, 80), F32)), "The batch dim of antiquant should be 2"),
    "per_token_s": (_token(np.ones((2, 79), F32)), "greater than or equal to 80"),
    "per_token_rank": (_token(np.ones((1, 1, 2, 80), F32)), "The dim of antiquant is illegal"),
    "per_token_dtype": (_token(TOK.astype(F16)), "datatype of antiquant scale should be float32"),
    "per_channel_shape": (
        dict(
            keyAntiquantScaleOptional=np.ones((1, 2, 2, 32), F16),
            valueAntiquantScaleOptional=np.ones((1, 2, 2, 32), F16),
        ),
        "is not expected",
    ),
    "per_tensor_shape": (
        dict(keyAntiquantScaleOptional=np.ones((2,), F16), valueAntiquantScaleOptional=np.ones((2,), F16)),
        "Expect[1]",
    ),
    "per_channel_rank": (
        dict(
            keyAntiquantScaleOptional=np.ones((1, 1, 2, 1, 32), F16),
            valueAntiquantScaleOptional=np.ones((1, 1, 2, 1, 32), F16),
        ),
        "does not match the dim of antiquant",
    ),
    "channel_token_key_shape": (
        dict(keyAntiquantScaleOptional=np.ones((1, 2, 31), F16), valueAntiquantScaleOptional=TOK, valueAntiquantMode=1),
        "is not expected",
    ),
    "channel_token_per_tensor_key_not_emulated": (
        dict(keyAntiquantScaleOptional=np.ones((1,), F16), valueAntiquantScaleOptional=TOK, valueAntiquantMode=1),
        None,
    ),
    "channel_token_short_value_not_emulated": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=TOK[..., :60], valueAntiquantMode=1),
        None,
    ),
}
RUNS = {
    "per_channel": dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=CH),
    "per_token": _token(TOK),
    "per_token_2d_longer": _token(np.ones((2, 96), F32)),
    "channel_token": dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=TOK, valueAntiquantMode=1),
    "per_token_head": _modes(np.ones((2, 2, 80), F32), 3),
    "per_tensor_head": _modes(np.ones((2,), F16), 2),
    "paged_params": dict(_modes(np.ones((4, 32), F32), 4), **PAGED),
    "paged_params_per_head": dict(_modes(np.ones((4, 2, 32), F32), 5), **PAGED),
}


def _call(named):
    call = dict(query=Q, key=K8, value=K8, numHeads=8, numKeyValueHeads=2, inputLayout="BNSD")
    call.update(named)
    key = call.pop("key")
    return ae.ops.FusedInferAttentionScoreV4(key=[key], value=[key], **{k: v for k, v in call.items() if k != "value"})


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("case", CASES)
def test_separate_antiquant_rules(chip, case):
    named, message = CASES[case]
    with pytest.raises(ae.errors.AclnnError) as failure:
        _call(named)
    if message is None:
        assert failure.value.status == 561003 and "separate key/value antiquant" in str(failure.value)
    else:
        assert failure.value.status == 561002 and message in str(failure.value), str(failure.value)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("case", RUNS)
def test_separate_antiquant_runs(chip, case):
    """What passes the checks and the emulated modes cover runs (numerics:
    test_fused_infer_attention_score_kv_per_token.py)."""
    out = _call(RUNS[case]).attentionOut
    assert out.shape == RUNS[case].get("query", Q).shape and np.isfinite(out.astype(np.float64)).all()


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("case", RUNS)
def test_ascend910_95_runs_them_all(chip, case):
    """Ascend910_95 sends these calls to IFATilingV2 (arch35), whose split-mode rules they pass and whose
    kernel runs them, the parameters in the cache's blocks (modes 4, 5) included (numerics:
    test_fused_infer_attention_score_kv_antiquant_arch35.py)."""
    out = _call(RUNS[case]).attentionOut
    assert np.isfinite(out.astype(np.float64)).all()
