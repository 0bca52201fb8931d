"""IncreFlashAttention V1-V3 compute what V4 computes with the arguments each passes on (the
adapters of aclnn_incre_flash_attention.cpp, _v2.cpp, _v3.cpp): the outputs agree bit for bit, on
every chip family; a pse changes V3's output and not V1's or V2's."""

import numpy as np
import pytest

import aclnn_emu as ae

RNG = np.random.default_rng(263)
CHIPS = ["Ascend910B", "Ascend910_93", "Ascend910_95"]


def inputs():
    q = RNG.standard_normal((2, 4, 1, 32)).astype(np.float16)
    k, v = (RNG.standard_normal((2, 2, 24, 32)).astype(np.float16) for _ in range(2))
    pse = (RNG.standard_normal((2, 4, 1, 24)) * 2).astype(np.float16)
    mask = RNG.random((2, 1, 1, 24)) < 0.2
    return q, k, v, pse, mask


def v4(q, k, v, pse, mask):
    return ae.ops.IncreFlashAttentionV4(
        q, [k], [v], pseShift=pse, attenMask=mask, numHeads=4, scaleValue=0.125, inputLayout="BNSD", numKeyValueHeads=2
    )


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_each_version_is_v4_with_what_it_passes_on(chip):
    q, k, v, pse, mask = inputs()
    common = dict(attenMask=mask, numHeads=4, scaleValue=0.125, inputLayout="BNSD", numKeyValueHeads=2)
    without, with_pse = v4(q, k, v, None, mask), v4(q, k, v, pse, mask)
    assert not np.array_equal(without, with_pse)
    v1 = ae.ops.IncreFlashAttention(q, [k], [v], pseShift=pse, **common)
    v2 = ae.ops.IncreFlashAttentionV2(q, [k], [v], pseShift=pse, **common)
    v3 = ae.ops.IncreFlashAttentionV3(q, [k], [v], pseShift=pse, **common)
    assert np.array_equal(v1.view(np.uint16), without.view(np.uint16))
    assert np.array_equal(v2.view(np.uint16), without.view(np.uint16))
    assert np.array_equal(v3.view(np.uint16), with_pse.view(np.uint16))
