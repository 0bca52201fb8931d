"""FusedInferAttentionScore's shared prefix (V2-V4) beyond one batched key on the IFA/PFA routes:
in front of each tensor of a key/value list on the A2/A3 IFA route, ignored by Ascend910_95's IFA
(antiquant) kernels, against the float64 golden (CANN's precision standard)."""

import aclnn_emu as ae
import ml_dtypes
import numpy as np
import pytest

import precision
from golden import fused_infer_attention_score as golden
from golden import incre_flash_attention as ifa_golden
from golden import prompt_flash_attention as pfa_golden
from test_fused_infer_attention_score import pack_int4, run_fia

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(20261129)
A2_A3 = pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
ON_ARCH35 = pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)


def _bsh(x):
    """[B, N, S, D] as [B, S, N * D]."""
    b, n, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)


@A2_A3
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
@pytest.mark.parametrize("lengths", [(33, 70), None], ids=["actual_kv", "whole_tensors"])
def test_prefix_in_front_of_each_list_tensor_on_the_a2_ifa_route(chip, dtype, layout, lengths):
    """IFATiling::ProcessSharedPrefix takes a tensor list (no rule refuses it); the split kernel
    (incre_flash_attention_split_Bbn2s2_Us2.h) attends every batch's query to the prefix's first
    actualSharedPrefixLen rows and then to its own tensor's keys; softmaxLse (the second pass,
    inferred.lse_pass) covers both."""
    n, n2, d, p, used = 4, 2, 32, 20, 13
    q = RNG.standard_normal((2, n, 1, d)).astype(dtype)
    keys, values = ([RNG.standard_normal((1, n2, s, d)).astype(dtype) for s in (40, 70)] for _ in range(2))
    kp, vp = (RNG.standard_normal((1, n2, p, d)).astype(dtype) for _ in range(2))
    put = _bsh if layout == "BSH" else (lambda x: x)
    out, lse = run_fia(
        version=2,
        lse_shape=(2, n, 1, 1),
        query=put(q),
        key=[put(k) for k in keys],
        value=[put(v) for v in values],
        out_shape=put(q).shape,
        keySharedPrefixOptional=put(kp),
        valueSharedPrefixOptional=put(vp),
        actualSharedPrefixLenOptional=(used,),
        actualSeqLengthsKvOptional=lengths,
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout=layout,
    )
    own = lengths or (40, 70)
    kk = golden.prefixed(kp, [k[0] for k in keys], used)
    vv = golden.prefixed(vp, [v[0] for v in values], used)
    magnitude, want_lse = np.zeros((2, n, d)), np.zeros((2, n))
    want = ifa_golden.attention(
        q[:, :, 0], kk, vv, scale=d**-0.5, lengths=[used + x for x in own], magnitude=magnitude, lse=want_lse,
        small_dtype="float16" if dtype == np.float16 else "bfloat16",
    )  # fmt: skip
    precision.assert_meets(lse[:, :, 0, 0], want_lse, np.float32, "softmaxLse")
    got = out.reshape(2, n, d) if layout == "BSH" else out[:, :, 0]
    message = precision.failure(got.astype(np.float64), want, "float16" if dtype == np.float16 else "bfloat16",
                                floor=magnitude)  # fmt: skip
    assert message is None, message


def _int8_decode(per_token: bool):
    """An INT8 decode on Ascend910_95's IFA route: per-channel antiquantScale, or per-token key and value
    parameters (separate, modes 1)."""
    n, n2, d, s = 4, 2, 64, 48
    q = RNG.standard_normal((2, n, 1, d)).astype(np.float16)
    k, v = (RNG.integers(-100, 100, (2, n2, s, d)).astype(np.int8) for _ in range(2))
    common = dict(query=q, key=[k], value=[v], out_shape=q.shape, numHeads=n, numKeyValueHeads=n2, scaleValue=0.125,
                  inputLayout="BNSD", actualSeqLengthsKvOptional=(48, 30))  # fmt: skip
    if per_token:
        scales = [RNG.uniform(0.005, 0.02, (1, 2, s)).astype(np.float32) for _ in range(2)]
        common.update(keyAntiquantScaleOptional=scales[0], valueAntiquantScaleOptional=scales[1], keyAntiquantMode=1,
                      valueAntiquantMode=1)  # fmt: skip
    else:
        common.update(antiquantScaleOptional=RNG.uniform(0.005, 0.02, (2, n2, 1, d)).astype(np.float16))
    prefix = [RNG.integers(-100, 100, (1, n2, 16, d)).astype(np.int8) for _ in range(2)]
    return common, prefix


@ON_ARCH35
@pytest.mark.parametrize("per_token", [False, True], ids=["per_channel", "per_token"])
def test_arch35_ifa_route_ignores_the_prefix(chip, per_token, capfd):
    """ConvertContextToParamsIFA (arch35/fused_infer_attention_score_tiling_v2.cpp) hands IFATilingV2
    no prefix and UpdateTilingKeyEnableKVPrefix sets enableKVPrefix false, so the antiquant kernels
    (flash_attention_score_antiquant_kernel.h) never read it: the output is that of the call without
    it, bit for bit (per-token parameters included: their positions stay the cache's), with a warning."""
    common, (kp, vp) = _int8_decode(per_token)
    capfd.readouterr()
    out, _ = run_fia(version=2, keySharedPrefixOptional=kp, valueSharedPrefixOptional=vp,
                     actualSharedPrefixLenOptional=(9,), **common)  # fmt: skip
    assert "the shared prefix is ignored" in capfd.readouterr().err
    plain, _ = run_fia(version=2, **common)
    assert np.array_equal(out.view(np.uint16), plain.view(np.uint16))
    assert np.abs(plain.astype(np.float32)).max() > 0


@A2_A3
@pytest.mark.parametrize("listed", [False, True], ids=["batched", "list"])
def test_int4_prefix_on_the_a2_ifa_route(chip, listed):
    """V2 re-types an INT32 prefix pair as INT4 (PrefixTensorPreProcess) as it does the key/value
    lists (TensorPreProcess); the IFA antiquant kernels dequantise the prefix's rows per channel as
    the cache's, in front of each batch's keys."""
    n2, d, used = 2, 32, 11
    cache4, prefix4 = ([RNG.integers(-8, 8, shape).astype(np.int8) for _ in range(2)]
                       for shape in ((2, n2, 50, d), (1, n2, 16, d)))  # fmt: skip
    q = RNG.standard_normal((2, 4, 1, d)).astype(np.float16)
    scale = (RNG.random((2, n2, 1, d)) * 0.2 + 0.05).astype(np.float16)
    split = (lambda x: [x[b : b + 1] for b in range(2)]) if listed else (lambda x: [x])
    out, _ = run_fia(
        version=2,
        query=q,
        key=split(pack_int4(cache4[0])),
        value=split(pack_int4(cache4[1])),
        out_shape=q.shape,
        antiquantScaleOptional=scale,
        keySharedPrefixOptional=pack_int4(prefix4[0]),
        valueSharedPrefixOptional=pack_int4(prefix4[1]),
        actualSharedPrefixLenOptional=(used,),
        actualSeqLengthsKvOptional=(50, 23),
        numHeads=4,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout="BNSD",
    )
    s = scale.astype(np.float64).reshape(2, n2, d)
    magnitude = np.zeros((2, 4, d))
    want = ifa_golden.attention(
        q[:, :, 0],
        golden.prefixed(prefix4[0], list(cache4[0]), used),
        golden.prefixed(prefix4[1], list(cache4[1]), used),
        scale=0.125,
        lengths=[used + 50, used + 23],
        antiquant=(s[0], np.zeros((n2, d)), s[1], np.zeros((n2, d))),
        magnitude=magnitude,
    )
    message = precision.failure(out[:, :, 0].astype(np.float64), want, "float16", floor=magnitude)
    assert message is None, message


def _split_fuse_call(kv_heads: int, precise: int) -> dict:
    """A TND fp16 call, D 128, that IsUsingFAI takes (fused_infer_attention_score_tiling.cpp): MHA with
    innerPrecise 1 and no mask, or GQA with innerPrecise 0; batches of 40 and 24 rows."""
    n, d = 4, 128
    q = RNG.standard_normal((64, n, d)).astype(np.float16)
    k, v = (RNG.standard_normal((64, kv_heads, d)).astype(np.float16) for _ in range(2))
    return dict(query=q, key=[k], value=[v], out_shape=q.shape, numHeads=n, numKeyValueHeads=kv_heads,
                innerPrecise=precise, scaleValue=d**-0.5, inputLayout="TND", actualSeqLengthsOptional=(40, 64),
                actualSeqLengthsKvOptional=(40, 64))  # fmt: skip


@A2_A3
@pytest.mark.parametrize("kv_heads, precise", [(4, 1), (2, 0)], ids=["mha", "gqa"])
@pytest.mark.parametrize("fits", [True, False], ids=["prefix_fits", "prefix_unfit"])
def test_split_fuse_route_ignores_the_prefix(chip, kv_heads, precise, fits, capfd):
    """CheckSpecConditions keeps these calls off RouteToFia whatever the prefix; IsUsingFAI takes them,
    CheckFAIAvailability reads no prefix input and FAInferContext (ConvertContextToParamsFAI) has no
    field for one: the output is that of the call without it, bit for bit, with a warning. An unfit
    prefix (batch 2, two lengths) fails nothing, where the FIA-V3 route's GetSystemPrefix and
    CheckSystemPrefixShape would refuse it."""
    common = _split_fuse_call(kv_heads, precise)
    batch, lengths = (1, (9,)) if fits else (2, (9, 9))
    kp, vp = (RNG.standard_normal((batch, kv_heads, 16, 128)).astype(np.float16) for _ in range(2))
    capfd.readouterr()
    out, _ = run_fia(version=2, keySharedPrefixOptional=kp, valueSharedPrefixOptional=vp,
                     actualSharedPrefixLenOptional=lengths, **common)  # fmt: skip
    assert "the shared prefix is ignored" in capfd.readouterr().err
    plain, _ = run_fia(version=2, **common)
    assert np.array_equal(out.view(np.uint16), plain.view(np.uint16))
    assert np.abs(plain.astype(np.float32)).max() > 0


def _to(layout: str):
    """[B, N, S, D] in ``layout``."""
    return {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3), "BSH": _bsh}[layout]


@ON_ARCH35
@pytest.mark.parametrize("layout, prefix_shape", [("BNSD", (1, 4, 256, 32)), ("BNSD", (1, 1, 256, 64)),
                                                  ("BSND", (1, 256, 1, 64)), ("BSH", (1, 300, 96))])  # fmt: skip
def test_arch35_prefix_of_other_heads_read_at_the_key_strides(chip, layout, prefix_shape, capfd):
    """GetAndCheckPrefixShape (prompt_flash_attention_tiling_v2.cpp) reads N, D and H off the key, so a
    prefix of other heads passes the tiling; the kernels (flash_attention_score_block_cube.h: the
    prefix's offset calculator Init(1, n2Size, kvPrefixSize, dSize)) read its memory at the key's
    strides with its own S: rows [0, actualSharedPrefixLen) of each key head, in front of every batch.
    A length of 256 fills whole key blocks whatever the tiling's sInner, so no walk warning; [1, 1, 256,
    64] holds exactly the rows read."""
    n, n2, d, used = 4, 2, 32, 256
    q = RNG.standard_normal((2, n, 16, d)).astype(np.float16)
    k, v = (RNG.standard_normal((2, n2, 40, d)).astype(np.float16) for _ in range(2))
    kp, vp = (RNG.standard_normal(prefix_shape).astype(np.float16) for _ in range(2))
    out, _ = run_fia(
        version=2, query=_to(layout)(q), key=[_to(layout)(k)], value=[_to(layout)(v)], out_shape=_to(layout)(q).shape,
        keySharedPrefixOptional=kp, valueSharedPrefixOptional=vp, actualSharedPrefixLenOptional=(used,),
        numHeads=n, numKeyValueHeads=n2, scaleValue=d**-0.5, inputLayout=layout,
    )  # fmt: skip
    kk, vv = (
        np.concatenate([np.repeat(golden.key_strided_prefix(p, layout, n2, d)[:, :, :used], 2, axis=0), x], axis=2)
        for p, x in ((kp, k), (vp, v))
    )
    assert not np.isnan(kk).any()
    want = pfa_golden.attention(q, kk, vv, scale=d**-0.5, nxt=pfa_golden.BIG)
    floor = golden.attention(q, kk, vv, scale=d**-0.5, kv_block=1024).floor
    assert "prefix_walk" not in capfd.readouterr().err
    got = out if layout == "BNSD" else out.reshape(2, 16, n, d).transpose(0, 2, 1, 3)
    message = precision.failure(got.astype(np.float64), want, "float16", floor=floor)
    assert message is None, message


def _gqa_prefix_call(q, k, kp, layout="BNSD", **named):
    """FusedInferAttentionScoreV2 of 4 query heads over 2 kv heads (key = value = k), kp both shared
    prefixes."""
    return run_fia(
        version=2, query=q, key=[k], value=[k], out_shape=q.shape, keySharedPrefixOptional=kp,
        valueSharedPrefixOptional=kp, numHeads=4, numKeyValueHeads=2, scaleValue=0.17, inputLayout=layout, **named,
    )  # fmt: skip


@ON_ARCH35
def test_arch35_prefix_too_short_for_the_key_strides_is_refused(chip):
    """[1, 1, 28, 32] read at the key's strides (2 heads, its own S 28, all 28 rows): the second head's rows
    run from element 28 x 32 to twice that, past its end; the emulator refuses (561003) rather than read it."""
    q = RNG.standard_normal((2, 4, 16, 32)).astype(np.float16)
    k = RNG.standard_normal((2, 2, 40, 32)).astype(np.float16)
    kp = RNG.standard_normal((1, 1, 28, 32)).astype(np.float16)
    with pytest.raises(ae.AclnnError, match="rather than read past") as err:
        _gqa_prefix_call(q, k, kp)
    assert err.value.code == 561003


@A2_A3
@pytest.mark.parametrize("layout", ["BNSD", "NSD"])
def test_a2_pfa_empty_key_zeroes_the_output_beside_a_prefix(chip, layout):
    """The A2/A3 PFA tiling (RunBigKernelTilingWithParams) takes an empty key through its empty-tensor
    path after the prefix pair's rules and before it reads the prefix's length, batch and heads: the
    kernel zeroes attentionOut and reads no prefix (an NSD query's prefix batch, read as 0, fails nothing)."""
    q = RNG.standard_normal((2, 4, 16, 32)).astype(np.float16)
    k = np.zeros((2, 2, 0, 32), np.float16)
    kp = RNG.standard_normal((1, 2, 16, 32)).astype(np.float16)
    if layout == "NSD":
        q, k, kp = q[0], k[0], kp[0]
    out, _ = _gqa_prefix_call(q, k, kp, layout)
    assert np.array_equal(out, np.zeros_like(out))


@ON_ARCH35
@pytest.mark.parametrize("length, warned", [((12,), True), ((256,), False), (None, True)], ids=["12", "256", "all_16"])
def test_arch35_prefix_length_off_the_key_blocks_warns(chip, length, warned, capfd):
    """ComputeS2LoopInfo / ComputeBmm1Tail (infer_flash_attention_kvcache.h, flash_attention_score_kernel_base.h)
    walk the prefix and the batch's keys in sInner blocks counted over the length plus the keys, the first
    ceil(length / sInner) from the prefix: a length off those blocks is not what the emulator runs, so it
    warns (inferred.prefix_walk); a [1, 2, 16, 32] prefix without a length is 16 rows long."""
    q = RNG.standard_normal((2, 4, 16, 32)).astype(np.float16)
    k = RNG.standard_normal((2, 2, 40, 32)).astype(np.float16)
    kp = RNG.standard_normal((1, 2, 16 if length != (256,) else 256, 32)).astype(np.float16)
    capfd.readouterr()
    _gqa_prefix_call(q, k, kp, actualSharedPrefixLenOptional=length)
    assert ("inferred.prefix_walk" in capfd.readouterr().err) == warned


@A2_A3
@pytest.mark.parametrize(
    "layout, length, message",
    [
        ("TND", None, "prefix batch num(0) only support 1!"),
        ("TND", 4, "actualSharedPrefixLen 4 must be in [0, 0]"),
        ("NSD", 4, "prefix batch num(0) only support 1!"),
        ("NSD", 17, "actualSharedPrefixLen 17 must be in [0, 16]"),
    ],
)
def test_a2_pfa_route_refuses_every_prefix_beside_a_tnd_or_nsd_query(chip, layout, length, message):
    """A bf16 MHA TND or NSD call with a shared prefix leaves RouteToFia (CheckGqaConstrain refuses the
    prefix; NSD is no GQA layout) and the split-fuse kernels (an fp16 MHA query only): the PFA tiling
    (RunBigKernelTilingWithParams) reads the prefix's S for NSD only and its batch for neither, so the
    length check sees S 0 for TND and the batch check a batch of 0 (561002)."""
    one = lambda *shape: np.ones(shape, BF16)  # noqa: E731
    if layout == "TND":
        q, k, p = one(64, 8, 64), one(64, 8, 64), one(16, 8, 64)
        named = dict(actualSeqLengthsOptional=(40, 64), actualSeqLengthsKvOptional=(40, 64))
    else:
        q, k, p = one(8, 20, 64), one(8, 40, 64), one(8, 16, 64)
        named = {}
    if length is not None:
        named["actualSharedPrefixLenOptional"] = (length,)
    with pytest.raises(ae.errors.AclnnError) as failure:
        run_fia(
            2, query=q, key=[k], value=[k], out_shape=q.shape, numHeads=8, numKeyValueHeads=8, scaleValue=0.125,
            inputLayout=layout, keySharedPrefixOptional=p, valueSharedPrefixOptional=p, **named,
        )  # fmt: skip
    assert failure.value.status == 561002 and message in str(failure.value), str(failure.value)
