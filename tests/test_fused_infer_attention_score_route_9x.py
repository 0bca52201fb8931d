"""FusedInferAttentionScore on Atlas A2/A3 under CANN 9.x: RouteToFia was rewritten in 9.0.0
(op_host/arch32/ at 9.0.0, arch22/ at 9.1.0, fused_infer_attention_score_tiling_v3.cpp RouteToFia,
IsLegacyTemplatePreferred, CheckSpecConditions). aclnn-emu keeps 8.5's routes (versions.UNEMULATED)
and warns where the release's routing differs; the result stays 8.5's route's, byte for byte."""

from types import SimpleNamespace

import numpy as np
import pytest

from aclnn_emu.dtypes import DataType
from aclnn_emu.ops.flash_attention.fused_infer import route_9x
from same_bits_cases import _in_release
from test_fused_infer_attention_score import BF16, run_fia

RNG = np.random.default_rng(20261129)
A2_A3 = pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
RELEASES_9X = ["9.0.0", "9.1.0"]


def _bsh(d, n=4, n2=2, s1=16, s2=32, dtype=np.float16):
    q = RNG.standard_normal((1, s1, n * d)).astype(dtype)
    k = RNG.standard_normal((1, s2, n2 * d)).astype(dtype)
    v = RNG.standard_normal((1, s2, n2 * d)).astype(dtype)
    return dict(query=q, key=[k], value=[v], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2, scaleValue=d**-0.5)


def _tnd_mha_bf16():
    """TND, MHA, BF16, innerPrecise 0, D 128: 8.5's CheckSpecConditions wants an fp16 MHA query with
    innerPrecise 1, so CheckGqaConstrain sends it to FIA-V3; 9.x's takes it for the split-fuse kernels."""
    q = RNG.standard_normal((48, 4, 128)).astype(BF16)
    k = RNG.standard_normal((80, 4, 128)).astype(BF16)
    return dict(
        query=q, key=[k], value=[k], out_shape=q.shape, numHeads=4, numKeyValueHeads=4, scaleValue=128**-0.5,
        inputLayout="TND", innerPrecise=0, actualSeqLengthsOptional=(20, 48), actualSeqLengthsKvOptional=(30, 80),
    )  # fmt: skip


CASES = {
    # 8.5: BSH D 96 is a legacy GQA call outside CheckGqaDSupport -> PFA; 9.x: FIA-V3
    "bsh-d96-gqa": (lambda: _bsh(96), "FIA-V3"),
    # 8.5 and 9.x: FIA-V3 (CheckGqaDSupport's D 128)
    "bsh-d128-gqa": (lambda: _bsh(128), None),
    # 8.5: not FIA (D 256); 9.x: IsLegacyTemplatePreferred (MHA decode, D 256, no prefix)
    "bsh-d256-mha-decode": (lambda: _bsh(256, n=2, n2=2, s1=1), None),
    # 8.5: not FIA; 9.x: FIA-V3 (a D 256 prefill is not the legacy decode)
    "bsh-d256-mha-prefill": (lambda: _bsh(256, n=2, n2=2, s1=8), "FIA-V3"),
    "tnd-mha-bf16": (_tnd_mha_bf16, "split-fuse"),
}


@A2_A3
@pytest.mark.parametrize("case", CASES)
def test_a_call_9x_routes_otherwise_runs_85s_route_with_a_warning(chip, case, capfd):
    build, route_9 = CASES[case]
    named = build()
    want, _ = run_fia(**named)
    assert "routes this call" not in capfd.readouterr().err  # 8.5.0, the default release: no warning
    for release in RELEASES_9X:
        out, _ = _in_release(release, lambda: run_fia(**named))
        err = capfd.readouterr().err
        assert np.array_equal(out.view(np.uint16), want.view(np.uint16)), release
        if route_9 is None:
            assert "routes this call" not in err, err
        else:
            assert f"CANN {release} routes this call to its {route_9} tiling and kernels" in err, err


def _tensor(shape):
    return SimpleNamespace(shape=shape, ndim=len(shape), dtype=DataType.ACL_FLOAT16)


def _call(kv=(64, 4, 128), **over):
    """A TND call as RouteToFia and CheckSpecConditions read it: fp16 MHA, innerPrecise 1, D 128;
    ``kv`` the key's and value's shape, ``over`` other parameters (a tuple: a tensor of that shape)."""
    a = dict(
        query=_tensor((32, 4, 128)), key=SimpleNamespace(items=[_tensor(kv)]), value=SimpleNamespace(items=[_tensor(kv)]),
        inputLayout="TND", numHeads=4, numKeyValueHeads=4, sparseMode=0, innerPrecise=1,
        attenMaskOptional=None, blockTableOptional=None, learnableSinkOptional=None, quantScale2Optional=None,
        queryRopeOptional=None, keyRopeOptional=None, keySharedPrefixOptional=None, valueSharedPrefixOptional=None,
    )  # fmt: skip
    a.update({k: _tensor(v) if isinstance(v, tuple) else v for k, v in over.items()})
    return SimpleNamespace(**a)


@pytest.mark.parametrize(
    "over, split_fuse",
    [
        ({}, {"9.0.0": True, "9.1.0": True}),
        # sparse mode 4 joined 0 and 3
        ({"sparseMode": 4}, {"9.0.0": True, "9.1.0": True}),
        ({"sparseMode": 1}, {"9.0.0": False, "9.1.0": False}),
        # a mask with sparse mode 0 keeps MHA off the split-fuse kernels
        ({"attenMaskOptional": (2048, 2048)}, {"9.0.0": False, "9.1.0": False}),
        # 9.1.0: a quantScale2 stays on the FIA-V3 route
        ({"quantScale2Optional": (1,)}, {"9.0.0": True, "9.1.0": False}),
        # 9.1.0: a 5-D (NZ) cache of D 96: [blocks, N2, D / 16, blockSize, 16]
        (
            {"query": (32, 4, 96), "kv": (8, 4, 6, 128, 16), "blockTableOptional": (2, 4)},
            {"9.0.0": False, "9.1.0": True},
        ),
        # ... but not of D 128 (CheckSpecCondPA5Dim leaves 64 and 128 to FIA-V3)
        ({"kv": (8, 4, 8, 128, 16), "blockTableOptional": (2, 4)}, {"9.0.0": False, "9.1.0": False}),
    ],
)
def test_9x_spec_conditions_per_release(over, split_fuse):
    """CheckSpecConditions at 9.0.0 and 9.1.0 (quantScale2 and the 5-D paged branch are 9.1.0's), and
    IsUsingFAI beside it."""
    a = _call(**over)
    for release, expected in split_fuse.items():
        assert route_9x.spec_conditions(a, release) is expected, release
        assert route_9x.routes_to_fia(a, release) is not expected, release
        # IsUsingFAI: the same rules but the quantScale2 one
        fai = expected or "quantScale2Optional" in over
        assert route_9x.spec_conditions(a, release, fai=True) is fai, release


@pytest.mark.parametrize("ends, route", [((3, 8), "IFA"), ((3, 30), "PFA"), ((), "PFA"), (None, "IFA")])
def test_9x_sends_tnd_over_an_int8_nz_cache_to_ifa_when_its_batches_are_short(ends, route):
    """IsGqaMtp (9.x) takes TND over a 5-D INT8 cache with a BF16 query of D 128 when the longest
    batch (GetTndQueryS: over the block table's B rows; without lengths T / B rounded up) has 1-16
    rows; RouteToFia and IsUsingFAI leave the call (its key is INT8), 8.5's IsUsingIFA does not take it."""
    int8 = lambda shape: SimpleNamespace(shape=shape, ndim=len(shape), dtype=DataType.ACL_INT8)  # noqa: E731
    a = _call(
        query=SimpleNamespace(shape=(8, 4, 128), ndim=3, dtype=DataType.ACL_BF16),
        key=SimpleNamespace(items=[int8((8, 1, 4, 128, 32))]),
        value=SimpleNamespace(items=[int8((8, 1, 4, 128, 32))]),
        numKeyValueHeads=1, blockTableOptional=(2, 4),
    )  # fmt: skip
    a.actualSeqLengthsOptional, a.actualSeqLengthsKvOptional = ends, None if ends is None else (100, 200)
    for release in RELEASES_9X:
        assert route_9x.route(a, release, lambda a: False) == route, release
