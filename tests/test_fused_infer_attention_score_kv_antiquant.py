"""FusedInferAttentionScoreV2+ separate key/value antiquant parameters on the A2/A3 IFA route
(S = 1, D 32: no FIA-V3 head size): IFATiling::ProcessAntiQuant (incre_flash_attention_tiling.cpp)
checks them right after ProcessQuant, in this order (every failure 561002):
CheckKeyAndValueAntiquantScaleOffset, CheckKeyAndValueAntiquantOffset, CheckKvAntiquant4SplitMode,
ProcessAntiQuantMode (CheckAntiQuantParamKeyType / ValueType, CheckKVAntiQuantMode). Calls they pass beyond per-channel pairs are not emulated (561003)."""

import numpy as np
import pytest

import aclnn_emu as ae

F16, F32 = np.float16, np.float32
Q = np.zeros((2, 8, 1, 32), F16)
K8 = np.ones((2, 2, 80, 32), np.int8)
CH = np.ones((1, 2, 1, 32), F16)  # per channel
TOK = np.ones((1, 2, 80), F32)  # per token

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
    "per_token_passes": (
        dict(keyAntiquantScaleOptional=TOK, valueAntiquantScaleOptional=TOK, keyAntiquantMode=1, valueAntiquantMode=1),
        None,
    ),
    "channel_token_passes": (
        dict(keyAntiquantScaleOptional=CH, valueAntiquantScaleOptional=TOK, valueAntiquantMode=1),
        None,
    ),
}


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("case", CASES)
def test_separate_antiquant_rules(chip, case):
    named, message = CASES[case]
    call = dict(query=Q, key=K8, value=K8, numHeads=8, numKeyValueHeads=2, inputLayout="BNSD")
    call.update(named)
    key = call.pop("key")
    with pytest.raises(ae.errors.AclnnError) as failure:
        ae.ops.FusedInferAttentionScoreV4(key=[key], value=[key], **{k: v for k, v in call.items() if k != "value"})
    if message is None:
        assert failure.value.status == 561003 and "separate key/value antiquant" in str(failure.value)
    else:
        assert failure.value.status == 561002 and message in str(failure.value), str(failure.value)
