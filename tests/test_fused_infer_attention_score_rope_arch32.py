"""queryRope/keyRope on the Atlas A2/A3 PFA route: an INT8 query (with INT8 ropes, as the OpDef pairs
them) is no RouteToFia call, and with query S > 16 not an IsUsingIFA one either. The PFA tiling checks
a rope only for TND-like layouts (`CheckInputShapeWhenLayoutIsTND`) and `prompt_flash_attention_arch32.h`
hands queryRope/keyRope to the TND var-len kernels alone (`UnpackInit`), never to the
PromptFlashAttentionS1s2Bns1X910 kernels (`Init`, `InitQuant`) the INT8 query takes: the output is that
of the same call without the ropes, which this test holds bit for bit and against the float64 reference."""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
from golden import prompt_flash_attention as pfa_golden
from test_fused_infer_attention_score import RNG, run_fia

A2_A3 = ["Ascend910B", "Ascend910_93"]
B, N, N2, S1, S2, D = 2, 4, 2, 24, 40, 64
DEQ1, QUANT1, DEQ2 = 2.0**-8, 100.0, 2.0**-7  # powers of two: the kernels keep 10 mantissa bits of each


def _int8(*shape):
    return RNG.integers(-8, 9, shape, dtype=np.int8)


def _run(q, k, v, **named):
    out, _ = run_fia(
        3, query=q, key=[k], value=[v], out_shape=q.shape, out_dtype=ae.DataType.ACL_FLOAT16,
        deqScale1Optional=np.array([DEQ1], np.float32), quantScale1Optional=np.array([QUANT1], np.float32),
        deqScale2Optional=np.array([DEQ2], np.float32), numHeads=N, numKeyValueHeads=N2, scaleValue=0.125,
        inputLayout="BNSD", **named,
    )  # fmt: skip
    return out


@pytest.mark.parametrize("chip", A2_A3, indirect=True)
def test_pfa_route_reads_no_rope(chip, capfd):
    q, k, v = _int8(B, N, S1, D), _int8(B, N2, S2, D), _int8(B, N2, S2, D)
    with_rope = _run(q, k, v, queryRopeOptional=_int8(B, N, S1, 64), keyRopeOptional=_int8(B, N2, S2, 64))
    assert "queryRope/keyRope are ignored" in capfd.readouterr().err
    assert np.array_equal(with_rope.view(np.uint16), _run(q, k, v).view(np.uint16))
    want = pfa_golden.attention(q, k, v, scale=0.125, nxt=pfa_golden.BIG, deq1=DEQ1, quant1=QUANT1, deq2=DEQ2)
    message = precision.failure(with_rope.astype(np.float64), want, "float16")
    assert message is None, message


@pytest.mark.parametrize("chip", A2_A3, indirect=True)
@pytest.mark.parametrize(
    "d, rope_d, rule",
    [(64, 64, "queryRopeD(64)/keyRopeD(64) must be 64, queryD(64)"), (128, 64, "not support QKV dataType is all int8")],
)
def test_pfa_tnd_rope_meets_the_tiling(chip, d, rope_d, rule):
    """TND on the PFA route: CheckInputShapeWhenLayoutIsTND's rope rules (D 128, rope D 64), then the
    PFA tiling's other checks on the call (CheckIOType: no all-INT8 TND), all 561002; the var-len kernels
    that would read the rope are never reached through an INT8 query."""
    q, k = _int8(64, N, d), _int8(160, N2, d)
    with pytest.raises(ae.AclnnError) as err:
        run_fia(
            3, query=q, key=[k], value=[k], out_shape=q.shape, out_dtype=ae.DataType.ACL_FLOAT16,
            queryRopeOptional=_int8(64, N, rope_d), keyRopeOptional=_int8(160, N2, rope_d),
            deqScale1Optional=np.array([DEQ1], np.float32), quantScale1Optional=np.array([QUANT1], np.float32),
            deqScale2Optional=np.array([DEQ2], np.float32), numHeads=N, numKeyValueHeads=N2, scaleValue=0.125,
            inputLayout="TND", actualSeqLengthsOptional=(32, 64), actualSeqLengthsKvOptional=(80, 160),
        )  # fmt: skip
    assert err.value.code == 561002 and rule in str(err.value)
