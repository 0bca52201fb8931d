"""FusedInferAttentionScore with an INT8 key/value beside an fp16 query and query S > 1 on Atlas
A2/A3: no FIA-V3 route (RouteToFia wants the query's dtype), no IFA one (S > 1, no NZ key, not
TND), so TilingProcess4PFA hands it to the PFA tiling, whose CheckIOType turns on its KV antiquant
(op_host/prompt_flash_attention_tiling.cpp). Its kernels (prompt_flash_attention_s1s2_bns1_x910.h
Bmm1Antiquant / Bmm2Antiquant) dequantise the tiles to fp16 with AscendAntiQuant,
fp16(fp16(x + offset) * scale), then run as for an fp16 key/value: the float64 reference is
tests/golden/prompt_flash_attention.py (`antiquant_kv`, then `attention`)."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from aclnn_emu.runtime import sanitizer
from golden import fused_infer_attention_score as golden
from golden import prompt_flash_attention as pfa_golden
from test_fused_infer_attention_score import _lse_meets, run_fia
import test_prompt_flash_attention_v3 as pfa_v3

F16 = np.float16
BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(20261130)
A2_CHIPS = pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
PARAM_SHAPES = {"BNSD": lambda n2, d: (2, n2, 1, d), "BSND": lambda n2, d: (2, n2, d), "BSH": lambda n2, d: (2, n2 * d)}


def _int8(shape):
    return RNG.integers(-128, 128, shape, dtype=np.int8)


def _params(layout, n2, d, per_channel, with_offset):
    """(scale, offset or None) as FIA takes them, and their [2, N2, 1, D] float64 views."""
    shape = PARAM_SHAPES[layout](n2, d) if per_channel else (2,)
    scale = (RNG.random(shape) * 0.02 + 0.005).astype(F16)
    offset = (RNG.standard_normal(shape) * 4).astype(F16) if with_offset else None

    def view(x):
        x = np.asarray(x, np.float64)
        return x.reshape(2, n2, 1, d) if per_channel else np.broadcast_to(x.reshape(2, 1, 1, 1), (2, n2, 1, d))

    return scale, offset, view(scale), None if offset is None else view(offset)


@A2_CHIPS
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
@pytest.mark.parametrize("with_offset", [True, False], ids=["offset", "no_offset"])
@pytest.mark.parametrize("inner_precise", [0, 1])
def test_int8_kv_beside_fp16_query_runs_the_pfa_antiquant_kernels(
    chip, layout, per_channel, with_offset, inner_precise
):
    """GQA (8 heads on 2), S1 40 > 16 with causal sparse mode 3 and batch 1 shorter: the key and
    the value dequantised with their own rows of the combined parameters."""
    b, n, n2, s1, s2, d = 2, 8, 2, 40, 96, 64
    q = RNG.standard_normal((b, n, s1, d)).astype(F16)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    scale, offset, sv, ov = _params(layout, n2, d, per_channel, with_offset)
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    named = dict(antiquantScaleOptional=scale)
    if offset is not None:
        named["antiquantOffsetOptional"] = offset
    act_kv = [96, 70]
    out, _ = run_fia(
        query=to(q), key=[to(k8)], value=[to(v8)], out_shape=to(q).shape,
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1), actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n, numKeyValueHeads=n2, scaleValue=d**-0.5, inputLayout=layout, sparseMode=3,
        innerPrecise=inner_precise, **named,
    )  # fmt: skip
    k = pfa_golden.antiquant_kv(k8, sv[0], None if ov is None else ov[0])
    v = pfa_golden.antiquant_kv(v8, sv[1], None if ov is None else ov[1])
    want = pfa_golden.attention(
        q, k, v, scale=d**-0.5, sparse_mode=3, act_kv=act_kv, **pfa_v3.kind(chip, F16, inner_precise, False)
    )
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    # sum |P V| / l per element: the scale below which a cancelling output is judged absolutely
    floor = golden.attention(q, k, v, kv_block=512, has_mask=True, scale=d**-0.5, sparse_mode=3, act_kv=act_kv).floor
    message = precision.failure(back.astype(np.float64), want, "float16", floor=floor)
    assert message is None, message
    assert not sanitizer.reports()


def _float_memory(halves, shape):
    """A FLOAT tensor of ``shape`` whose memory starts with the fp16 elements ``halves`` (2 per
    float); the floats past them hold NaN, which the kernels must not read."""
    words = np.full(int(np.prod(shape)), np.nan, np.float32)
    packed = np.frombuffer(np.ascontiguousarray(halves, "<f2").tobytes(), "<f4")
    words[: packed.size] = packed
    return words.reshape(shape)


@A2_CHIPS
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
def test_float_params_are_read_as_fp16_elements(chip, layout, per_channel):
    """FLOAT antiquantScale/Offset beside an fp16 query: the OpDef registers them, no tiling rule
    reads their dtype, and InitKvAntiquant's half pointer makes the kernels read the first numel fp16
    elements of their memory: per tensor the two halves of float 0 (key, value), per channel the
    first N2 x D floats as key row then value row."""
    b, n, n2, s1, s2, d = 1, 4, 2, 20, 48, 32
    q = RNG.standard_normal((b, n, s1, d)).astype(F16)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    shape = PARAM_SHAPES[layout](n2, d) if per_channel else (2,)
    count = int(np.prod(shape))
    scale = _float_memory((RNG.random(count) * 0.02 + 0.005).astype(F16), shape)
    offset = _float_memory((RNG.standard_normal(count) * 4).astype(F16), shape)
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    out, _ = run_fia(
        query=to(q), key=[to(k8)], value=[to(v8)], out_shape=to(q).shape, numHeads=n, numKeyValueHeads=n2,
        scaleValue=d**-0.5, inputLayout=layout, innerPrecise=1, antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset,
    )  # fmt: skip
    view = (lambda x: x.reshape(2, n2, 1, d)) if per_channel else (lambda x: x.reshape(2, 1, 1, 1))
    sv, ov = (view(pfa_golden.float_params_read_as_fp16(x)) for x in (scale, offset))
    k, v = pfa_golden.antiquant_kv(k8, sv[0], ov[0]), pfa_golden.antiquant_kv(v8, sv[1], ov[1])
    want = pfa_golden.attention(q, k, v, scale=d**-0.5, **pfa_v3.kind(chip, F16, 1, False))
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    floor = golden.attention(q, k, v, kv_block=512, has_mask=False, scale=d**-0.5).floor
    message = precision.failure(back.astype(np.float64), want, "float16", floor=floor)
    assert message is None, message
    assert not sanitizer.reports()


@A2_CHIPS
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_softmax_lse_beside_an_int8_key_value(chip, layout):
    """softmaxLse on this route comes, as beside an fp16 key/value, from a second pass of the FIA-V3
    maths (inferred.lse_pass), here over the dequantised key and value: log(sum exp) + max of the
    fp32 scores per row, [B, N, S1, 1]."""
    b, n, n2, s1, s2, d = 2, 4, 2, 24, 64, 32
    q = RNG.standard_normal((b, n, s1, d)).astype(F16)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    scale, offset, sv, ov = _params(layout, n2, d, True, True)
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    act_kv = [64, 41]
    out, lse = run_fia(
        query=to(q), key=[to(k8)], value=[to(v8)], out_shape=to(q).shape, lse_shape=(b, n, s1, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1), actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n, numKeyValueHeads=n2, scaleValue=0.125, inputLayout=layout, sparseMode=3,
        antiquantScaleOptional=scale, antiquantOffsetOptional=offset,
    )  # fmt: skip
    k, v = pfa_golden.antiquant_kv(k8, sv[0], ov[0]), pfa_golden.antiquant_kv(v8, sv[1], ov[1])
    want = golden.attention(q, k, v, kv_block=512, has_mask=True, scale=0.125, sparse_mode=3, act_kv=act_kv)
    _lse_meets(lse[..., 0], want.lse)


@A2_CHIPS
def test_softmax_lse_beside_an_int8_key_value_and_a_shared_prefix(chip):
    """The prefix kernels (QFP16_KVINT8_..._PREFIX_...) walk the prefix's first actualSharedPrefixLen
    rows before each batch's keys, dequantising both with the same parameters, and write softmaxLse
    after the last key tile as without a prefix: the second pass over the dequantised prefix and
    keys."""
    b, n, n2, s1, s2, d, ps, used = 2, 4, 2, 20, 40, 32, 32, 24
    q = RNG.standard_normal((b, n, s1, d)).astype(F16)
    k8, v8 = _int8((b, n2, s2, d)), _int8((b, n2, s2, d))
    pk8, pv8 = _int8((1, n2, ps, d)), _int8((1, n2, ps, d))
    scale, offset, sv, ov = _params("BNSD", n2, d, True, True)
    act_kv = [40, 27]
    out, lse = run_fia(
        2, query=q, key=[k8], value=[v8], out_shape=q.shape, lse_shape=(b, n, s1, 1), keySharedPrefixOptional=pk8,
        valueSharedPrefixOptional=pv8, actualSharedPrefixLenOptional=(used,), actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n, numKeyValueHeads=n2, scaleValue=0.125, inputLayout="BNSD", antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset,
    )  # fmt: skip
    joined = lambda prefix, x: np.concatenate([np.broadcast_to(prefix[:, :, :used], (b, n2, used, d)), x], 2)  # noqa: E731
    k = pfa_golden.antiquant_kv(joined(pk8, k8), sv[0], ov[0])
    v = pfa_golden.antiquant_kv(joined(pv8, v8), sv[1], ov[1])
    full_kv = [used + x for x in act_kv]
    want = pfa_golden.attention(q, k, v, scale=0.125, act_kv=full_kv, **pfa_v3.kind(chip, F16, 1, False))
    ref = golden.attention(q, k, v, kv_block=512, scale=0.125, act_kv=full_kv)
    message = precision.failure(out.astype(np.float64), want, "float16", floor=ref.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], ref.lse)


def _paged_dense(cache, table, act_kv, block, n2, d):
    """The [blocks, blockSize, N2 x D] cache as the dense BNSD key/value each batch reads: row p of
    batch b from block table[b][p / blockSize], row p % blockSize; zeros past its length."""
    b, s2 = table.shape[0], table.shape[1] * block
    x = np.zeros((b, s2, n2 * d), cache.dtype)
    for i in range(b):
        for p in range(act_kv[i]):
            x[i, p] = cache[table[i, p // block], p % block]
    return x.reshape(b, s2, n2, d).transpose(0, 2, 1, 3)


@A2_CHIPS
@pytest.mark.parametrize("layout", ["BSH", "BSND"])
@pytest.mark.parametrize("with_offset", [True, False], ids=["offset", "no_offset"])
def test_paged_int8_kv_runs_the_pa_antiquant_kernels(chip, layout, with_offset):
    """A block table beside an INT8 cache, S1 24 > 16: the PA antiquant kernels (MM_PA_ANTIQUANT)
    dequantise each tile of blocks with the key's and the value's own per-channel parameters
    ([1, H2] BSH, [1, N2, D] BSND), under sparse mode 3 with innerPrecise 1, as the tiling requires;
    softmaxLse from the second pass over the same dequantised rows."""
    b, n, n2, s1, d, block = 2, 4, 2, 24, 32, 128
    table = np.array([[3, 0], [4, 1]], np.int32)
    act_kv = [200, 90]
    q = RNG.standard_normal((b, n, s1, d)).astype(F16)
    kc, vc = _int8((5, block, n2 * d)), _int8((5, block, n2 * d))
    ks, vs = ((RNG.random((n2, d)) * 0.02 + 0.005).astype(F16) for _ in range(2))
    ko, vo = ((RNG.standard_normal((n2, d)) * 4).astype(F16) if with_offset else None for _ in range(2))
    shape = (1, n2 * d) if layout == "BSH" else (1, n2, d)
    named = dict(keyAntiquantScaleOptional=ks.reshape(shape), valueAntiquantScaleOptional=vs.reshape(shape))
    if with_offset:
        named.update(keyAntiquantOffsetOptional=ko.reshape(shape), valueAntiquantOffsetOptional=vo.reshape(shape))
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    out, lse = run_fia(
        query=to(q), key=[kc], value=[vc], out_shape=to(q).shape, lse_shape=(b, n, s1, 1), blockTableOptional=table,
        blockSize=block, actualSeqLengthsKvOptional=tuple(act_kv), attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        numHeads=n, numKeyValueHeads=n2, scaleValue=d**-0.5, inputLayout=layout, sparseMode=3, innerPrecise=1, **named,
    )  # fmt: skip
    view = lambda x: None if x is None else x.astype(np.float64).reshape(n2, 1, d)  # noqa: E731
    k = pfa_golden.antiquant_kv(_paged_dense(kc, table, act_kv, block, n2, d), view(ks), view(ko))
    v = pfa_golden.antiquant_kv(_paged_dense(vc, table, act_kv, block, n2, d), view(vs), view(vo))
    want = pfa_golden.attention(
        q, k, v, scale=d**-0.5, sparse_mode=3, act_kv=act_kv, **pfa_v3.kind(chip, F16, 1, False)
    )
    back = out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    ref = golden.attention(q, k, v, kv_block=512, has_mask=True, scale=d**-0.5, sparse_mode=3, act_kv=act_kv)
    message = precision.failure(back.astype(np.float64), want, "float16", floor=ref.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], ref.lse)
    assert not sanitizer.reports()


def _one_key_output(x8, scale, offset, modes):
    """With one key every query row's output is the value row: P = fp16(exp(0)) = 1, l = 1."""
    y = ties.round_to(x8.astype(np.float64) + offset, F16, modes["add"])
    return {"attentionOut": ties.round_to(y * scale, F16, modes["mul"])}


@A2_CHIPS
def test_value_dequant_rounds_each_step_to_nearest_even(chip):
    """Ties of both steps of the value's dequantisation: x in [64, 128) (fp16 ulp 1/16) plus an
    offset on the 1/32 grid, then times a per-channel scale of two significant bits."""
    b, n, s1, d = 1, 2, 4, 64
    x8 = RNG.integers(64, 128, (b, n, 1, d), dtype=np.int8)
    offset = (RNG.integers(0, 16, (1, n, 1, d)) / 32).astype(F16)
    scale = RNG.choice([0.75, 1.5, -1.25, 0.625], (1, n, 1, d)).astype(F16)
    params = dict(
        antiquantScaleOptional=np.concatenate([np.ones_like(scale), scale]),
        antiquantOffsetOptional=np.concatenate([np.zeros_like(offset), offset]),
    )
    out, _ = run_fia(
        query=np.zeros((b, n, s1, d), F16), key=[np.zeros_like(x8)], value=[x8], out_shape=(b, n, s1, d),
        numHeads=n, numKeyValueHeads=n, inputLayout="BNSD", **params,
    )  # fmt: skip
    golden = lambda modes: _one_key_output(x8, scale.astype(np.float64), offset.astype(np.float64), modes)  # noqa: E731
    want = ties.assert_sensitive(golden, {"add": "even", "mul": "even"}, "value dequant", finals=("mul",))
    ties.assert_bits(out, np.broadcast_to(want["attentionOut"], out.shape), "attentionOut")


def _call(**named):
    """A BNSD call of S 20 (INT8 key/value, D 64, per-tensor parameters unless replaced)."""
    call = dict(
        query=np.zeros((1, 4, 20, 64), F16), key=[np.ones((1, 2, 32, 64), np.int8)],
        value=[np.ones((1, 2, 32, 64), np.int8)], numHeads=4, numKeyValueHeads=2, inputLayout="BNSD",
        antiquantScaleOptional=np.ones(2, F16),
    )  # fmt: skip
    call.update(named)
    call = {k: v for k, v in call.items() if v is not None}
    return ae.ops.FusedInferAttentionScoreV4(**call)


ONES = np.ones((1, 2, 1, 64), F16)
Q8 = np.zeros((1, 4, 8, 64), F16)  # S 8: the MSD kernels' query


def _per_channel(shape, dtype, offsets=False):
    """Key and value scales (and offsets) of one shape and dtype, modes 0."""
    named = dict(keyAntiquantScaleOptional=np.ones(shape, dtype), valueAntiquantScaleOptional=np.ones(shape, dtype))
    if offsets:
        named.update(
            keyAntiquantOffsetOptional=np.zeros(shape, dtype), valueAntiquantOffsetOptional=np.zeros(shape, dtype)
        )
    return named


def _per_token(shape):
    """FLOAT key and value scales of one shape, modes 1."""
    return dict(keyAntiquantMode=1, valueAntiquantMode=1, **_per_channel(shape, np.float32))


# an SH query (S 8, H 256) per token: the MSD kernels' rules pass, the emulator does not run them
SH_KV = np.ones((8, 128), np.int8)
MSD_SH = dict(query=np.zeros((8, 256), F16), key=[SH_KV], value=[SH_KV], inputLayout="SH", **_per_token((1, 8)))


# case -> (keyword arguments, status, message)
def _int4_paged(h2: int) -> dict:
    """A paged INT4 (INT32) cache of cache H `h2` words (8 INT4 values each) beside a BSH query."""
    cache = [np.ones((2, 128, h2), np.int32)]
    return dict(query=np.zeros((1, 20, 256), F16), key=cache, value=cache, inputLayout="BSH",
                blockTableOptional=np.array([[0, 1]], np.int32), blockSize=128, actualSeqLengthsKvOptional=(200,))  # fmt: skip


RULES = {
    # TilingProcess4PFA
    "d_align_int8": (
        dict(
            query=np.zeros((1, 4, 20, 48), F16),
            key=[np.ones((1, 2, 32, 48), np.int8)],
            value=[np.ones((1, 2, 32, 48), np.int8)],
        ),
        561002,
        "32 elements aligned",
    ),  # fmt: skip
    # then D a multiple of 16 for every dtype (an fp16 key here: FIA's op_api pads no D)
    "d_align": (
        dict(
            query=np.zeros((1, 4, 20, 40), F16),
            key=[np.ones((1, 2, 32, 40), F16)],
            value=[np.ones((1, 2, 32, 40), F16)],
        ),
        561002,
        "16 elements aligned",
    ),  # fmt: skip
    # CheckIOType
    "bf16_without_kv_scales": (
        dict(query=np.zeros((1, 4, 20, 64), BF16), antiquantScaleOptional=np.ones(2, BF16)),
        561002,
        "should not be null, when data type of query is bf16",
    ),  # fmt: skip
    # CheckAntiquantParamsShape
    "scale_null": (dict(antiquantScaleOptional=None), 561002, "antiquant scale is nullptr"),
    "per_tensor_scale": (dict(antiquantScaleOptional=np.ones(3, F16)), 561002, "should be 2 under Per-Tensor"),
    "per_tensor_offset": (
        dict(antiquantOffsetOptional=np.zeros(1, F16)),
        561002,
        "offset dim[0] = 1, but it should be 2",
    ),
    "channel_rank": (dict(antiquantScaleOptional=np.ones((2, 2, 64), F16)), 561002, "should be 4 if layout is BNSD"),
    "channel_shape": (dict(antiquantScaleOptional=np.ones((2, 4, 1, 64), F16)), 561002, "dim [2, 4, 1, 64] is wrong"),
    "offset_shape": (
        dict(antiquantScaleOptional=np.ones((2, 2, 1, 64), F16), antiquantOffsetOptional=np.ones((2, 2, 2, 64), F16)),
        561002,
        "offset dim [2, 2, 2, 64] is wrong",
    ),  # fmt: skip
    # separate key/value scales with S <= 16 past the MSD kernels' tiling rules, where the emulator
    # does not run them: a 2-D (SH) query
    "msd_sh": (MSD_SH, 561003, "separate key/value antiquant"),  # fmt: skip
    # RunBigKernelTilingWithParams's MSD shape rules per mode, then the parameters' dtypes
    "msd_token_rank": (dict(query=Q8, **_per_token((1, 1, 32))), 561002, "is not 2 in perToken mode"),
    "msd_token_shape": (
        dict(query=Q8, **_per_token((1, 31))),
        561002,
        "shape of the key's dequant scale(1, 31) is not same with BS(1, 32) in perToken mode",
    ),
    "msd_token_offset_shape": (
        dict(
            query=Q8,
            **_per_token((1, 32)),
            keyAntiquantOffsetOptional=np.zeros((1, 32), np.float32),
            valueAntiquantOffsetOptional=np.zeros((2, 32), np.float32),
        ),
        561002,
        "shape of the value's dequant offset(2, 32) is not same with BS(1, 32)",
    ),  # fmt: skip
    "msd_channel_rank": (
        dict(query=Q8.astype(BF16), antiquantScaleOptional=None, **_per_channel((2, 1, 1, 64), BF16, offsets=True)),
        561002,
        "is not 1 or 2 or 3 in perChannel mode",
    ),
    "msd_channel_offset_rank": (
        dict(
            query=Q8.astype(BF16),
            antiquantScaleOptional=None,
            **_per_channel((2, 64), BF16),
            keyAntiquantOffsetOptional=np.zeros((2, 1, 64), BF16),
            valueAntiquantOffsetOptional=np.zeros((2, 64), BF16),
        ),
        561002,
        "is not same in perChannel mode",
    ),  # fmt: skip
    "msd_channel_shape": (
        dict(query=Q8.astype(BF16), antiquantScaleOptional=None, **_per_channel((2, 32), BF16)),
        561002,
        "shape of the key's dequant scale(2, 32) is not same with (2, 64) in perChannel mode",
    ),
    "msd_channel_h": (
        dict(query=Q8.astype(BF16), antiquantScaleOptional=None, **_per_channel((64,), BF16)),
        561002,
        "shape of the key's dequant scale(64,) is not same with (128,) in perChannel mode",
    ),
    "msd_channel_dtype": (
        dict(query=Q8, **_per_channel((2, 64), np.float32)),
        561002,
        "is not bf16 in per-channel mode",
    ),
    "msd_token_dtype": (
        dict(query=Q8, keyAntiquantMode=1, valueAntiquantMode=1, **_per_channel((1, 32), F16)),
        561002,
        "is not float32 in pertoken mode",
    ),
    # the MSD kernels' first rules, after the tiling's split (RunBigKernelTilingWithParams)
    "msd_modes": (
        dict(
            query=np.zeros((1, 4, 8, 64), F16),
            keyAntiquantScaleOptional=ONES,
            valueAntiquantScaleOptional=ONES,
            keyAntiquantMode=1,
            valueAntiquantMode=0,
        ),
        561002,
        "quant mode only support per-token and per-channel",
    ),  # fmt: skip
    "msd_padding": (
        dict(
            query=np.zeros((1, 4, 8, 64), F16),
            keyAntiquantScaleOptional=ONES,
            valueAntiquantScaleOptional=ONES,
            kvPaddingSizeOptional=np.zeros(1, np.int64),
            actualSeqLengthsKvOptional=(32,),
        ),
        561002,
        "LeftPadding is not supported when the key/value's dequant scale",
    ),  # fmt: skip
    "msd_kv_int8": (
        dict(
            query=np.zeros((1, 4, 8, 32), F16),
            key=[np.ones((1, 2, 32, 32), F16)],
            value=[np.ones((1, 2, 32, 32), F16)],
            antiquantScaleOptional=None,
            keyAntiquantScaleOptional=ONES[..., :32],
            valueAntiquantScaleOptional=ONES[..., :32],
        ),
        561002,
        "datatype of value(FLOAT16) is not bf16",
    ),  # fmt: skip
    "msd_offsets": (
        dict(
            query=np.zeros((1, 4, 8, 64), F16),
            keyAntiquantScaleOptional=ONES,
            valueAntiquantScaleOptional=ONES,
            keyAntiquantOffsetOptional=ONES,
        ),
        561002,
        "the key's dequant offset is not null",
    ),  # fmt: skip
    # softmaxLse beside the MSD kernels where the emulator does not run them
    "msd_sh_lse": (
        dict(MSD_SH, softmaxLseFlag=True, softmaxLse=np.zeros((1, 4, 8, 1), np.float32)),
        561003,
        "softmaxLse with an INT8/INT4",
    ),  # fmt: skip
    # enableMsd with S > 16 (after InferTilingMod): a BF16 query beside an INT8 key, or key/value
    # scales beside an fp16 key (D 32: no FIA-V3 head size, so not RouteToFia's)
    "msd_s_bf16": (
        dict(
            query=np.zeros((1, 4, 20, 64), BF16),
            antiquantScaleOptional=None,
            keyAntiquantScaleOptional=ONES.astype(BF16),
            valueAntiquantScaleOptional=ONES.astype(BF16),
        ),
        561002,
        "S of query(20) is larger than 16",
    ),  # fmt: skip
    "msd_s_fp16_key": (
        dict(
            query=np.zeros((1, 4, 20, 32), F16),
            key=[np.ones((1, 2, 32, 32), F16)],
            value=[np.ones((1, 2, 32, 32), F16)],
            antiquantScaleOptional=None,
            keyAntiquantScaleOptional=ONES[..., :32],
            valueAntiquantScaleOptional=ONES[..., :32],
        ),
        561002,
        "S of query(20) is larger than 16",
    ),  # fmt: skip
    # an INT32 key/value read as INT4: the MSD kernels' INT4 rule (after their modes), else no kernel
    # (prompt_flash_attention_arch32.h builds none for an INT4 key), softmaxLse or not
    "msd_int4": (
        dict(
            query=np.zeros((1, 4, 8, 64), F16),
            key=[np.ones((1, 2, 32, 8), np.int32)],
            value=[np.ones((1, 2, 32, 8), np.int32)],
            antiquantScaleOptional=None,
            keyAntiquantScaleOptional=ONES,
            valueAntiquantScaleOptional=ONES,
        ),
        561002,
        "int4 is not supported when the key/value's dequant scale",
    ),  # fmt: skip
    "int4": (
        dict(key=[np.ones((1, 2, 32, 8), np.int32)], value=[np.ones((1, 2, 32, 8), np.int32)]),
        561003,
        "INT4 (INT32) key/value on the Atlas A2/A3 PFA route",
    ),
    # with a block table the page-attention rules first, on the unpacked cache [blocks, blockSize, H2]
    "int4_paged": (_int4_paged(16), 561003, "INT4 (INT32) key/value on the Atlas A2/A3 PFA route"),
    "int4_paged_cache_shape": (_int4_paged(8), 561002, "key [2, 128, 64] should be"),
    "int4_lse": (
        dict(
            key=[np.ones((1, 2, 32, 8), np.int32)],
            value=[np.ones((1, 2, 32, 8), np.int32)],
            softmaxLseFlag=True,
            softmaxLse=np.zeros((1, 4, 20, 1), np.float32),
        ),
        561003,
        "INT4 (INT32) key/value on the Atlas A2/A3 PFA route",
    ),  # fmt: skip
    # with an fp16 query and S > 16 the combined parameters serve beside separate ones
    "separate_over_16_wants_combined": (
        dict(antiquantScaleOptional=None, keyAntiquantScaleOptional=ONES, valueAntiquantScaleOptional=ONES),
        561002,
        "antiquant scale is nullptr",
    ),
}


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("case", RULES)
def test_rules(chip, case):
    named, code, message = RULES[case]
    with pytest.raises(ae.errors.AclnnError) as failure:
        _call(**named)
    assert failure.value.status == code and message in str(failure.value), str(failure.value)


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_separate_scales_over_16_rows_run_on_the_combined_ones(chip):
    """RunBigKernelTilingWithParams drops the MSD flag for an fp16 query, an INT8 key and S > 16:
    the kernels dequantise with antiquantScale; the separate scales are not read."""
    plain = _call(antiquantScaleOptional=np.full(2, 0.5, F16)).attentionOut
    both = _call(
        antiquantScaleOptional=np.full(2, 0.5, F16),
        keyAntiquantScaleOptional=ONES * 3,
        valueAntiquantScaleOptional=ONES * 3,
    ).attentionOut
    np.testing.assert_array_equal(plain, both)
    assert np.all(plain.astype(np.float64) == 0.5)  # the value ones times 0.5


def _key_tie_case(rows: int):
    """Per-channel key parameters and two INT8 keys such that row r, whose query is 1 on channels
    (2r, 2r + 1), scores both keys alike before rounding: rows < rows / 2 put a tie of x + offset on
    channel 2r (offset on the 1/32 grid, x + offset in [64, 128), ulp 1/16; channel 2r + 1 takes the
    negated offset, exactly), the others a tie of x * 65/64 (x = 2 mod 4 in [64, 128); offset 0)."""
    d = 2 * rows
    scale, offset = np.ones(d), np.zeros(d)
    k0, k1 = np.zeros(d, np.int8), np.zeros(d, np.int8)
    for r in range(rows):
        i, j = 2 * r, 2 * r + 1
        while True:
            if r < rows // 2:
                x0i, x0j, x1i = RNG.integers(64, 126), RNG.integers(-60, 1), RNG.integers(30, 61)
                offset[i] = RNG.integers(0, 32) * 2 / 32 + 1 / 32
                offset[j] = -offset[i]
                scale[i] = scale[j] = 1 + 2**-10  # so that rounding x + offset or not shows after the product
            else:
                x0i, x0j, x1i = 4 * RNG.integers(16, 32) + 2, 2 * RNG.integers(-31, 1), 2 * RNG.integers(0, 32)
                scale[i] = scale[j] = 65 / 64
            x1j = x0i + x0j - x1i
            if abs(x1j) <= 60:
                break
        k0[i], k0[j], k1[i], k1[j] = x0i, x0j, x1i, x1j
    return scale, offset, k0, k1


@A2_CHIPS
def test_key_dequant_rounds_each_step_to_nearest_even(chip):
    """Both steps of the key's dequantisation decide which key a row sees: with scaleValue 2^20 a
    score lower by an fp16 step (>= 2^-15 here) leaves its key's P at fp16(exp(<= -32)) = 0, so each
    row's output is 1 (key 0, value 1), 0 (key 1, value 0) or 0.5 (equal scores), exactly (the
    default high-precision template keeps the fp32 scores)."""
    rows = 32
    d = 2 * rows
    scale, offset, k0, k1 = _key_tie_case(rows)
    q = np.zeros((1, 1, rows, d), F16)
    q[0, 0, np.arange(rows), 2 * np.arange(rows)] = q[0, 0, np.arange(rows), 2 * np.arange(rows) + 1] = 1
    key = np.stack([k0, k1]).reshape(1, 1, 2, d)
    value = np.zeros((1, 1, 2, d), np.int8)
    value[0, 0, 0] = 1
    params = dict(
        antiquantScaleOptional=np.stack([scale, np.ones(d)]).astype(F16).reshape(2, 1, 1, d),
        antiquantOffsetOptional=np.stack([offset, np.zeros(d)]).astype(F16).reshape(2, 1, 1, d),
    )
    out, _ = run_fia(
        query=q, key=[key], value=[value], out_shape=q.shape, numHeads=1, scaleValue=2.0**20, inputLayout="BNSD",
        **params,
    )  # fmt: skip

    def golden_out(modes):
        def dequant(x):
            y = ties.round_to(x.astype(np.float64) + offset, F16, modes["key add"])
            return ties.round_to(y * scale, F16, modes["key mul"])

        s0, s1 = (dequant(k).reshape(rows, 2).sum(axis=1) for k in (k0, k1))
        o = np.where(s0 > s1, 1.0, np.where(s0 < s1, 0.0, 0.5))
        return {"attentionOut": np.broadcast_to(o[:, None], (rows, d))}

    want = ties.assert_sensitive(golden_out, {"key add": "even", "key mul": "even"}, "key dequant")
    ties.assert_bits(out[0, 0], want["attentionOut"], "attentionOut")
