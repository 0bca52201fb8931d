"""A call rejected on the emulated chip says on which other chip it (or the rejected value) is
accepted, and that ACLNN_EMU_SOC selects the chip; a failure that does not depend on the chip says nothing of it."""

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import cabi
from aclnn_emu import config
from aclnn_emu.platform import FAMILIES, PARTS, part
from aclnn_emu.runtime.errors import take_recent

SAMPLES = cabi.C_DIR.parent.parent / "samples"


def _hint_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("aclnn-emu: aclnn")]


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93"])
def test_the_arch35_sample_on_an_a2_or_a3_chip_names_the_chip_to_pick(soc):
    result = cabi.compile_and_run(SAMPLES / "aclnnScatterPaKvCache_1.cpp", env={"ACLNN_EMU_SOC": soc}, timeout=120)
    assert result.returncode != 0 and "ERROR: 161002" in result.stdout
    assert _hint_lines(result.stderr) == [
        "aclnn-emu: aclnnScatterPaKvCacheGetWorkspaceSize returned 161002: key has dtype FLOAT and format ND; the "
        f"registered kernels of {soc} take dtype FLOAT16 / INT8 / BF16 with format ND, in a combination with the "
        "other required tensors; FLOAT is registered on Ascend910_95. The same call is accepted on Ascend910_95; "
        f"ACLNN_EMU_SOC selects the emulated chip (now {part(soc).name}, an {soc})"
    ]


@pytest.mark.parametrize(
    "sample, code, reason",
    [
        (
            "aclnnLightningIndexerGrad",
            561103,
            "LightningIndexerGrad has no kernel for Ascend910_95; it is registered "
            "for Ascend910B and Ascend910_93 only",
        ),
        (
            "aclnnSparseFlashAttentionGrad",
            561003,
            "Cannot find kernel file: SparseFlashAttentionGrad has kernels for "
            "Ascend910B and Ascend910_93 only, not Ascend910_95",
        ),
    ],
)
def test_a2_only_samples_on_arch35_name_the_chips_to_pick(sample, code, reason):
    result = cabi.compile_and_run(SAMPLES / f"{sample}.cpp", env={"ACLNN_EMU_SOC": "Ascend910_95"}, timeout=300)
    assert result.returncode != 0 and f"ERROR: {code}" in result.stdout
    assert _hint_lines(result.stderr) == [
        f"aclnn-emu: {sample}GetWorkspaceSize returned {code}: {reason}. The same call is accepted on Ascend910B and "
        "Ascend910_93; ACLNN_EMU_SOC selects the emulated chip (now Ascend910_9599, an Ascend910_95)"
    ]


@pytest.fixture
def chip(request, monkeypatch):
    monkeypatch.setattr(config, "current", dataclasses.replace(config.current, soc=part(request.param).name))
    ae.setup()
    return request.param


def _scatter(key, value, cache_dtype=None):
    kc = np.zeros((1, 8) + key.shape[1:], cache_dtype or key.dtype)
    vc = np.zeros((1, 8) + value.shape[1:], cache_dtype or value.dtype)
    slots = ae.to_device(np.arange(key.shape[0], dtype=np.int32))
    args = [ae.to_device(key), ae.to_device(kc), slots, ae.to_device(value), ae.to_device(vc)] + [None] * 7
    return ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*args)[0], take_recent()


@pytest.mark.soc("Ascend910B")
def test_a_value_registered_elsewhere_in_a_call_rejected_everywhere(aclnn_soc, capfd):
    """A FLOAT key of the wrong rank: FLOAT exists on arch35, whose tiling rejects the rank too."""
    code, message = _scatter(np.ones((2, 16), np.float32), np.ones((2, 16), np.float32))
    assert code == 161002
    assert message.endswith(
        "FLOAT is registered on Ascend910_95; ACLNN_EMU_SOC selects the emulated chip (now Ascend910B2, an Ascend910B)"
    )
    assert "accepted" not in message
    detail = message.split("aclnnScatterPaKvCacheGetWorkspaceSize: ", 1)[1]
    assert _hint_lines(capfd.readouterr().err) == [
        f"aclnn-emu: aclnnScatterPaKvCacheGetWorkspaceSize returned 161002: {detail}"
    ]


@pytest.mark.soc("Ascend910_95")
def test_a_pairing_only_a2_and_a3_register(aclnn_soc):
    code, message = _scatter(np.ones((2, 1, 16), np.float16), np.ones((2, 1, 16), ml_dtypes.bfloat16))
    assert code == 161002
    assert "FLOAT16 / INT8" in message and "registered on" not in message  # BF16 is registered here too
    assert message.endswith(
        "The same call is accepted on Ascend910B and Ascend910_93; ACLNN_EMU_SOC selects the "
        "emulated chip (now Ascend910_9599, an Ascend910_95)"
    )


@pytest.mark.soc("Ascend910B", "Ascend910_95")
def test_a_failure_on_every_chip_says_nothing_of_chips(aclnn_soc, capfd):
    code, message = _scatter(np.ones((2, 16), np.float16), np.ones((2, 16), np.float16))
    assert code in (161002, 561002) and "ACLNN_EMU_SOC" not in message and "registered on" not in message
    assert _hint_lines(capfd.readouterr().err) == []


def test_an_op_that_never_asks_for_the_chip_is_not_tried_elsewhere(capfd):
    ae.setup()
    q = ae.to_device(np.ones((1, 2, 8, 16), np.float16))
    code = ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(q, q, q, *[None] * 9, 3, 1.0, 0, 0, "BNSD", 0, 0, q)[0]
    assert code != 0 and "ACLNN_EMU_SOC" not in take_recent()
    assert _hint_lines(capfd.readouterr().err) == []


def test_every_per_chip_table_names_the_emulated_chips():
    from aclnn_emu.ops.kv_cache.gather import checks as gather
    from aclnn_emu.ops.kv_cache.scatter import checks as scatter
    from aclnn_emu.ops.sparse_attention.lightning_indexer_grad import checks as lightning_indexer_grad
    from aclnn_emu.ops.sparse_attention.sparse_flash_attention_grad import checks as sparse_flash_attention_grad

    assert set(FAMILIES) == set(scatter.COMBOS) == set(gather.COMBOS)
    assert {p.family for p in PARTS.values()} == set(FAMILIES) and set(FAMILIES) < set(config.SOCS)
    for only in (lightning_indexer_grad.SOCS, sparse_flash_attention_grad.SOCS):
        assert set(only) < set(FAMILIES)


@pytest.mark.parametrize("part", ["Ascend910B4", "Ascend910_9381"])
def test_a_part_name_chip_names_the_family_that_accepts_the_call(part, monkeypatch, capfd):
    """FlashAttentionScoreGradV2 with dropout and no dropMask: 161001 on A2/A3 parts, run on arch35
    (its kernel generates the keep-mask); the hint names the part in use and its family."""
    ae.setup()  # aclInit reads the settings again: the part is set after it
    monkeypatch.setattr(config, "current", dataclasses.replace(config.current, soc=part))
    x = ae.to_device(np.ones((1, 1, 16, 16), np.float16))
    stats = ae.to_device(np.ones((1, 1, 16, 8), np.float32))
    outs = [ae.empty((1, 1, 16, 16), ae.DataType.ACL_FLOAT16) for _ in range(3)]
    code = ae.raw.aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
        x,
        x,
        x,
        x,
        None,
        None,
        None,
        None,
        stats,
        stats,
        None,
        x,
        None,
        None,
        None,
        0.25,
        0.5,
        65536,
        65536,
        1,
        "BNSD",
        0,
        0,
        1,
        *outs,
        None,
    )[0]
    family = part[: len("Ascend910_93")] if part.startswith("Ascend910_9") else "Ascend910B"
    assert code == 161001
    assert take_recent().endswith(
        f"The same call is accepted on Ascend910_95; ACLNN_EMU_SOC selects the emulated chip (now {part}, an {family})"
    )
    assert len(_hint_lines(capfd.readouterr().err)) == 1


@pytest.mark.soc("Ascend910B")
def test_python_says_a_chip_dependent_refusal_once_in_the_exception(aclnn_soc, capfd):
    """ae.ops and ae.run raise the message (stderr would repeat it); ae.raw returns a bare status, as C
    does, so stderr says it."""
    key, cache = np.ones((2, 1, 32), np.float32), np.zeros((1, 4, 1, 32), np.float32)
    slots = np.array([0, 1], np.int32)
    with pytest.raises(ae.ParamInvalid, match="The same call is accepted on Ascend910_95"):
        ae.ops.ScatterPaKvCache(key, cache, slots, key, cache.copy(), cacheModeOptional="Norm")
    device = [ae.to_device(x) for x in (key, cache, slots, cache)]
    with pytest.raises(ae.ParamInvalid, match="The same call is accepted on Ascend910_95"):
        ae.run("ScatterPaKvCache", device[0], device[1], device[2], device[0], device[3], *[None] * 7)
    assert _hint_lines(capfd.readouterr().err) == []
    code, _, _ = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(
        device[0], device[1], device[2], device[0], device[3], *[None] * 7
    )
    assert code == 161002 and "Ascend910_95" in ae.recent_error_message()
    assert len(_hint_lines(capfd.readouterr().err)) == 1
