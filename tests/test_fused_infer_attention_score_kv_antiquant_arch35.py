"""FusedInferAttentionScoreV2+ separate key/value antiquant parameters on Ascend910_95 (IFATilingV2).

The checks: IFATilingV2::ProcessAntiQuant in split mode (incre_flash_attention_tiling_v2.cpp, after
ProcessQuant2), in its order: the scale/offset pairs, KeyAndValueAntiQuantParamConsistencyCheck on
the offsets then the scales, equal modes but the key-per-channel/value-per-token pair, then
CheckAntiQuantParam on the key's parameters (the value's too for the pair): mode range, ranks, mode 6
needs FP4, equal shapes, CheckKVAntiQuantParaShapeLegal (antiquantNum_ 1; CheckKVAntiQuantPerChannel,
per token [1, B, >= sMax] / [B, >= sMax], CheckKVAntiQuantPerHead), the scale's dtype, the offset's.
Every failure is 561002.

The kernel: BaseApi::FlashAttentionScoreAntiquantKernel (flash_attention_score_antiquant_processor.h):
per token the FLOAT parameters are cast to the query dtype to nearest even (vf_antiquant_w8.h
castTrait0), then (x + offset) * scale in the query dtype, each step to nearest even; the rows are
read at b * S' + p per token, (b * N2 + n2) * sMax + p per token + head. References: the
PromptFlashAttention golden with the arch35 roundings (test_incre_flash_attention_arch35.arch35) over
the key/value dequantised in numpy's fp16/bf16 arithmetic."""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from golden import fused_infer_attention_score as golden
from test_fused_infer_attention_score import pack_int4, run_fia
from test_fused_infer_attention_score_kv_per_token import _separate
from test_incre_flash_attention import paged_cache
from test_incre_flash_attention_arch35 import arch35, arch35_dequant, to_nz

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(20261130)
DTYPES = pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
ON_ARCH35 = pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
F32 = np.float32


def _int8(shape):
    return RNG.integers(-128, 128, shape, dtype=np.int8)


def _tokens(shape):
    """FLOAT per-token scale and offset."""
    return (RNG.random(shape) * 0.02 + 0.005).astype(F32), RNG.integers(-3, 4, shape).astype(F32)


def _run(q, k8, v8, named, lengths=None, layout="BNSD"):
    b, n = q.shape[:2]
    extra = {} if lengths is None else dict(actualSeqLengthsKvOptional=lengths)
    out, lse = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, lse_shape=(b, n, q.shape[2], 1),
        numHeads=n, numKeyValueHeads=k8.shape[1], scaleValue=0.125, inputLayout=layout, **named, **extra,
    )  # fmt: skip
    return out, lse


def _rows(x, dtype):
    """[B, N2 | 1, S] parameters as the kernel takes them: cast to dtype (numpy: nearest even)."""
    return x.astype(dtype)[..., None]


@ON_ARCH35
@DTYPES
@pytest.mark.parametrize("rank", [3, 2], ids=["1BS", "BS"])
def test_per_token(chip, dtype, rank):
    """Modes 1: the key and the value dequantised with their own parameters per position (S' 70 over a
    cache of 60); batch 1 stops at 23; softmaxLse over the dequantised key."""
    b, n, n2, s, d, width = 2, 8, 2, 60, 32, 70
    q = RNG.standard_normal((b, n, 1, d)).astype(dtype)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    (ks, ko), (vs, vo) = _tokens((b, width)), _tokens((b, width))
    lead = (lambda x: x[None]) if rank == 3 else (lambda x: x)
    out, lse = _run(q, k8, v8, _separate(lead(ks), lead(ko), lead(vs), lead(vo), 1, 1), lengths=(60, 23))
    k = arch35_dequant(k8, _rows(ks[:, None, :s], dtype), _rows(ko[:, None, :s], dtype), dtype)
    v = arch35_dequant(v8, _rows(vs[:, None, :s], dtype), _rows(vo[:, None, :s], dtype), dtype)
    want = golden.attention(q, k, v, scale=0.125, kv_block=1024, act_kv=(60, 23))  # its floor: sum |P V| / l
    message = precision.failure(
        out.astype(np.float64), arch35(q[:, :, 0], k, v, (60, 23))[:, :, None], np.dtype(dtype).name, floor=want.floor
    )
    assert message is None, message
    precision.assert_meets(lse[..., 0], want.lse, "float32", "softmaxLse")


@ON_ARCH35
@DTYPES
def test_per_token_head_reads_rows_of_smax(chip, dtype):
    """Modes 3, [B, N2, S'] with S' 66 above sMax 60: the kernel reads row (b, n2) from (b N2 + n2) sMax
    (taskParam.seqSize is s2Size), so past the first row it reads the previous rows' tail."""
    b, n, n2, s, d, width = 2, 4, 2, 60, 32, 66
    q = RNG.standard_normal((b, n, 1, d)).astype(dtype)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    (ks, ko), (vs, vo) = _tokens((b, n2, width)), _tokens((b, n2, width))
    out, _ = _run(q, k8, v8, _separate(ks, ko, vs, vo, 3, 3))

    def read(x):  # the kernel's addressing, sMax apart
        return x.reshape(-1)[: b * n2 * s].reshape(b, n2, s)

    k = arch35_dequant(k8, _rows(read(ks), dtype), _rows(read(ko), dtype), dtype)
    v = arch35_dequant(v8, _rows(read(vs), dtype), _rows(read(vo), dtype), dtype)
    precision.assert_meets(out[:, :, 0], arch35(q[:, :, 0], k, v, (s, s)), np.dtype(dtype).name)


@ON_ARCH35
def test_key_per_channel_value_per_token(chip):
    """Modes 0 and 1: the key's [1, N2, 1, D] parameters in the query's dtype, the value's FLOAT per token."""
    b, n, n2, s, d = 2, 4, 2, 40, 32
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    ks = (RNG.random((1, n2, 1, d)) * 0.02 + 0.005).astype(np.float16)
    ko = RNG.integers(-3, 4, (1, n2, 1, d)).astype(np.float16)
    vs, vo = _tokens((1, b, s))
    out, _ = _run(q, k8, v8, _separate(ks, ko, vs, vo, 0, 1))
    k = arch35_dequant(k8, ks, ko, np.float16)
    v = arch35_dequant(v8, _rows(vs[0][:, None], np.float16), _rows(vo[0][:, None], np.float16), np.float16)
    precision.assert_meets(out[:, :, 0], arch35(q[:, :, 0], k, v, (s, s)), "float16")


@ON_ARCH35
@pytest.mark.parametrize("s1", [1, 8])
def test_per_channel_split_shapes(chip, s1):
    """Modes 0 with separate [N2, D] (query S 8: CheckKVAntiQuantPerChannel's split branch) or
    [1, N2, 1, D] parameters (S 1)."""
    b, n, n2, s, d = 2, 4, 2, 40, 32
    q = RNG.standard_normal((b, n, s1, d)).astype(np.float16)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    shape = (n2, d) if s1 > 1 else (1, n2, 1, d)
    ks, vs = ((RNG.random(shape) * 0.02 + 0.005).astype(np.float16) for _ in range(2))
    ko, vo = (RNG.integers(-3, 4, shape).astype(np.float16) for _ in range(2))
    out, _ = _run(q, k8, v8, _separate(ks, ko, vs, vo, 0, 0))
    k, v = (
        arch35_dequant(x, p.reshape(n2, 1, d), o.reshape(n2, 1, d), np.float16)
        for x, p, o in ((k8, ks, ko), (v8, vs, vo))
    )
    want = pfa_arch35(q, k, v)
    precision.assert_meets(out, want, "float16")


@ON_ARCH35
def test_per_tensor_head(chip):
    """Modes 2: one scale and offset per KV head [N2] in the query's dtype (CopyAntiqParam's isPerHead)."""
    b, n, n2, s, d = 2, 4, 2, 40, 32
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    k8, v8 = _int8((b, n2, s, d)), _int8((b, n2, s, d))
    ks, vs = ((RNG.random(n2) * 0.02 + 0.005).astype(np.float16) for _ in range(2))
    ko, vo = (RNG.integers(-3, 4, n2).astype(np.float16) for _ in range(2))
    out, _ = _run(q, k8, v8, _separate(ks, ko, vs, vo, 2, 2))
    k, v = (
        arch35_dequant(x, p[:, None, None], o[:, None, None], np.float16) for x, p, o in ((k8, ks, ko), (v8, vs, vo))
    )
    precision.assert_meets(out[:, :, 0], arch35(q[:, :, 0], k, v, (s, s)), "float16")


def pfa_arch35(q, k, v):
    from golden import prompt_flash_attention as pfa_golden

    return pfa_golden.attention(q, k, v, scale=0.125, pre=pfa_golden.BIG, nxt=pfa_golden.BIG, high_precision=True)


def _assert_dequantised_ties(rows, x, offset, scale, dtype):
    """rows [B, D] hold, bit for bit, dtype(dtype(x) + dtype(offset)) * dtype(scale) with every step to
    nearest even, and the ties make each step's mode matter."""

    def golden(modes):
        s = ties.round_to(scale, dtype, modes["cast"])
        o = ties.round_to(offset, dtype, modes["cast"])
        y = ties.round_to(x + o, dtype, modes["add"])
        return {"out": ties.round_to(y * s, dtype, modes["mul"])}

    want = ties.assert_sensitive(golden, {"cast": "even", "add": "even", "mul": "even"}, "dequantised value")
    ties.assert_bits(rows, np.repeat(want["out"][:, None], rows.shape[1], axis=1), "attentionOut")


@ON_ARCH35
@DTYPES
def test_dequantisation_ties(chip, dtype):
    """One key per batch scoring 0 (P = 1), so O is the dequantised value: batch 0's FLOAT value scale
    is a midpoint of the dtype (its cast; times 3), batch 1's x + offset (127 + 1922 in fp16, 127 + 130
    in bf16; times 3 * 2**-11 / 3 * 2**-8), batch 2's x * scale (3 (1 + 3 * 2**-10) in fp16, 3 (1 + 3 *
    2**-7) in bf16)."""
    fp16 = np.dtype(dtype) == np.float16
    ulp = 2.0**-10 if fp16 else 2.0**-7
    x = np.array([3, 127, 3], np.int8)
    offset = np.array([0, 1922 if fp16 else 130, 0], np.float64)
    scale = np.array([1 + ulp / 2, 3 * 2.0 ** (-11 if fp16 else -8), 1 + 3 * ulp], np.float64)
    b, d = 3, 32
    q = np.zeros((b, 1, 1, d), dtype)
    k8 = np.zeros((b, 1, 1, d), np.int8)
    v8 = np.broadcast_to(x[:, None, None, None], (b, 1, 1, d)).copy()
    ones, zeros = np.ones((b, 1), F32), np.zeros((b, 1), F32)
    named = _separate(ones, zeros, scale.astype(F32)[:, None], offset.astype(F32)[:, None], 1, 1)
    out, _ = run_fia(
        version=2, query=q, key=[k8], value=[v8], out_shape=q.shape, numHeads=1, scaleValue=1.0,
        inputLayout="BNSD", **named,
    )  # fmt: skip

    _assert_dequantised_ties(out[:, 0, 0], x, offset, scale, dtype)


# case -> (keyword arguments, message of the failing rule; None: passes the checks, not emulated)
CH = np.ones((1, 2, 1, 32), np.float16)
TOK = np.ones((1, 2, 40), F32)
# a paged cache [blocks, blockSize, H] of 4 blocks of 128 tokens, 2 per batch
PAGED = dict(
    key=[np.ones((4, 128, 64), np.int8)], value=[np.ones((4, 128, 64), np.int8)],
    blockTableOptional=np.array([[0, 1], [2, 3]], np.int32), blockSize=128, actualSeqLengthsKvOptional=(200, 40),
    inputLayout="BSH", query=np.zeros((2, 1, 128), np.float16), out_shape=(2, 1, 128),
)  # fmt: skip
CASES = {
    "value_scale_missing": (dict(keyAntiquantScaleOptional=CH), "ValueAntiquantScaleTensor is null"),
    "key_offset_alone": (
        dict(keyAntiquantOffsetOptional=CH, valueAntiquantOffsetOptional=CH, valueAntiquantScaleOptional=CH),
        "KeyAntiquantScaleTensor is null, but valueAntiquantScaleTensor",
    ),
    "offset_shapes": (
        dict(_separate(CH, CH, CH, np.ones((1, 2, 32), np.float16), 0, 0)),
        "valueAntiquantOffset should have the same shape",
    ),
    "modes_differ": (dict(_separate(TOK, None, TOK, None, 1, 3)), "should be the same"),
    "mode_range": (dict(_separate(TOK, None, TOK, None, 7, 7)), "it should be 0, 1, 2, 3, 4, 5 or 6"),
    "group_needs_fp4": (dict(_separate(TOK, None, TOK, None, 6, 6)), "should be fp4_e2m1 or fp4_e1m2"),
    "per_token_rank": (dict(_separate(TOK[0, 0], None, TOK[0, 0], None, 1, 1)), "it should be 2 or 3"),
    "per_token_s": (dict(_separate(TOK[..., :39], None, TOK[..., :39], None, 1, 1)), "equal to or greater than 40"),
    "per_token_batch": (dict(_separate(np.ones((1, 3, 40), F32), None, np.ones((1, 3, 40), F32), None, 1, 1)), "Expect[1, 2, 40]"),
    "per_token_dtype": (dict(_separate(TOK.astype(np.float16), None, TOK.astype(np.float16), None, 1, 1)), "should be float32"),
    "per_token_head_rank": (dict(_separate(TOK[0], None, TOK[0], None, 3, 3)), "should be 3 instead of the current 2"),
    "per_token_head_heads": (dict(_separate(np.ones((2, 3, 40), F32), None, np.ones((2, 3, 40), F32), None, 3, 3)), "2nd dimension"),
    "per_channel_shape": (dict(_separate(np.ones((1, 2, 2, 32), np.float16), None, np.ones((1, 2, 2, 32), np.float16), None, 0, 0)), "is not expected"),
    "per_channel_dtype": (dict(_separate(CH.astype(F32), None, CH.astype(F32), None, 0, 0)), "same with input qtype"),
    "per_tensor_head_shape": (dict(_separate(np.ones((3,), np.float16), None, np.ones((3,), np.float16), None, 2, 2)), "Expect[2] When per_tensor_head"),
    "pa_mode_unpaged": (dict(_separate(np.ones((4, 32), F32), None, np.ones((4, 32), F32), None, 4, 4)), "must to enble page attention"),
    "pa_shape": (dict(_separate(np.ones((4, 64), F32), None, np.ones((4, 64), F32), None, 4, 4), **PAGED), "dimension 1 of antiquant parameter should be 128"),
    "pa_head_shape": (dict(_separate(np.ones((4, 3, 128), F32), None, np.ones((4, 3, 128), F32), None, 5, 5), **PAGED), "dimension 1 of antiquant parameter should be 2"),
}  # fmt: skip


@ON_ARCH35
@pytest.mark.parametrize("case", CASES)
def test_split_checks(chip, case):
    named, message = CASES[case]
    q = np.zeros((2, 4, 1, 32), np.float16)
    k8 = np.ones((2, 2, 40, 32), np.int8)
    call = dict(query=q, key=[k8], value=[k8], out_shape=q.shape, numHeads=4, numKeyValueHeads=2, inputLayout="BNSD")
    call.update(named)
    with pytest.raises(ae.errors.AclnnError) as failure:
        run_fia(version=2, **call)
    if message is None:
        assert failure.value.status == 561003 and "separate key/value antiquant" in str(failure.value)
    else:
        assert failure.value.status == 561002, failure.value
        assert message in str(failure.value)


@ON_ARCH35
@DTYPES
@pytest.mark.parametrize("split", [False, True], ids=["antiquant_scale", "per_token"])
def test_int4(chip, dtype, split):
    """An INT32 key/value list read as INT4 (V2+ TensorPreProcess) on IFATilingV2's route: the same
    dequantisation as INT8 (vf_antiquant_w4.h: the INT4 value exact in the query dtype, + offset,
    * scale), with antiquantScale/Offset [2, N2, 1, D] or separate per-token parameters; softmaxLse too."""
    b, n, n2, s, d = 2, 4, 2, 50, 64
    q = RNG.standard_normal((b, n, 1, d)).astype(dtype)
    k4, v4 = (RNG.integers(-8, 8, (b, n2, s, d)).astype(np.int8) for _ in range(2))
    if split:
        (ks, ko), (vs, vo) = _tokens((b, s)), _tokens((b, s))
        named = _separate(ks, ko, vs, vo, 1, 1)
        k = arch35_dequant(k4, _rows(ks[:, None], dtype), _rows(ko[:, None], dtype), dtype)
        v = arch35_dequant(v4, _rows(vs[:, None], dtype), _rows(vo[:, None], dtype), dtype)
    else:
        scale = (RNG.random((2, n2, 1, d)) * 0.2 + 0.05).astype(dtype)
        offset = RNG.integers(-2, 3, (2, n2, 1, d)).astype(dtype)
        named = dict(antiquantScaleOptional=scale, antiquantOffsetOptional=offset)
        k, v = (arch35_dequant(x, scale[i][None], offset[i][None], dtype) for i, x in enumerate((k4, v4)))
    out, lse = _run(q, pack_int4(k4), pack_int4(v4), named)
    precision.assert_meets(out[:, :, 0], arch35(q[:, :, 0], k, v, (s, s)), np.dtype(dtype).name)
    want = golden.attention(q, k, v, scale=0.125, kv_block=1024).lse
    precision.assert_meets(lse[..., 0], want, "float32", "softmaxLse")


@ON_ARCH35
@pytest.mark.parametrize(
    "case,message", [("d32", "headDims must be a multiple of 64"), ("block_32", "should be 64 aligned")]
)
def test_int4_rules(chip, case, message):
    """IFATilingV2's INT4 rules: CheckPABlockSize (a multiple of 64), ProcessBaseTensors (D a multiple
    of 64); 561002."""
    d = 32 if case == "d32" else 64
    q = np.zeros((2, 4, 1, d), np.float16)
    named = dict(antiquantScaleOptional=np.ones((2, 2, 1, d), np.float16))
    key = np.zeros((2, 2, 64, d // 8), np.int32)
    if case == "block_32":
        key = np.zeros((4, 2, 32, d // 8), np.int32)
        named.update(blockTableOptional=np.array([[0, 1], [2, 3]], np.int32), blockSize=32,
                     actualSeqLengthsKvOptional=(64, 40))  # fmt: skip
    with pytest.raises(ae.errors.AclnnError) as failure:
        run_fia(version=2, query=q, key=[key], value=[key], out_shape=q.shape, numHeads=4, numKeyValueHeads=2,
                inputLayout="BNSD", **named)  # fmt: skip
    assert failure.value.status == 561002 and message in str(failure.value), str(failure.value)


@ON_ARCH35
@pytest.mark.parametrize("mode", [1, 3], ids=["per_token", "per_token_head"])
def test_paged_nz_cache(chip, mode):
    """Modes 1 ([B, sMax]) and 3 ([B, N2, sMax]) over an INT8 5-D (NZ) paged cache [blocks, N2, D / 16,
    blockSize, 16]: LoadAntiquantParamsPerToken casts the parameters to the query dtype in place
    (castTraitFp32, nearest even) and AntiquantVFImplW8PerTokenNz applies row p's to row p, as for ND;
    the rows are the batch's positions, whatever block holds them."""
    b, n, n2, d, bs = 2, 4, 2, 32, 32
    lengths = (70, 38)
    k8, v8 = _int8((b, n2, 70, d)), _int8((b, n2, 70, d))
    kc, vc, table = paged_cache(k8, v8, bs, True, lengths, rng=RNG)
    s_max = table.shape[1] * bs
    lead = (b,) if mode == 1 else (b, n2)
    (ks, ko), (vs, vo) = _tokens(lead + (s_max,)), _tokens(lead + (s_max,))
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    out, lse = run_fia(
        version=2, query=q, key=[to_nz(kc)], value=[to_nz(vc)], out_shape=q.shape, lse_shape=(b, n, 1, 1), numHeads=n,
        numKeyValueHeads=n2, scaleValue=0.125, inputLayout="BNSD", blockTableOptional=table, blockSize=bs,
        actualSeqLengthsKvOptional=lengths, **_separate(ks, ko, vs, vo, mode, mode),
    )  # fmt: skip
    rows = (lambda x: x[:, None, :70]) if mode == 1 else (lambda x: x[:, :, :70])
    k = arch35_dequant(k8, _rows(rows(ks), np.float16), _rows(rows(ko), np.float16), np.float16)
    v = arch35_dequant(v8, _rows(rows(vs), np.float16), _rows(rows(vo), np.float16), np.float16)
    want = golden.attention(q, k, v, scale=0.125, kv_block=1024, act_kv=lengths)
    precision.assert_meets(out.astype(np.float64), want.out, "float16", "attentionOut")
    precision.assert_meets(lse[..., 0], want.lse, "float32", "softmaxLse")


@ON_ARCH35
@pytest.mark.parametrize("mode", [4, 5], ids=["per_token", "per_token_head"])
@pytest.mark.parametrize("nz", [False, True], ids=["ND", "NZ"])
def test_parameters_in_the_cache_blocks(chip, mode, nz):
    """Modes 4 ([blocks, blockSize]) and 5 ([blocks, N2, blockSize]) FLOAT parameters beside the cache's
    blocks: CopyAntiquantParamsPageAttention reads position p of batch b at block table[b, p // blockSize],
    offset p % blockSize (KV head n2's row of that block per head); then as per token. The blocks are
    shuffled, and a spare block holds parameters no position reads."""
    b, n, n2, d, bs = 2, 4, 2, 32, 32
    lengths = (70, 38)
    k8, v8 = _int8((b, n2, 70, d)), _int8((b, n2, 70, d))
    kc, vc, table = paged_cache(k8, v8, bs, True, lengths, rng=RNG)
    blocks = kc.shape[0]
    shape = (blocks, bs) if mode == 4 else (blocks, n2, bs)
    (ks, ko), (vs, vo) = _tokens(shape), _tokens(shape)
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    cache = to_nz if nz else (lambda x: x)
    out, lse = run_fia(
        version=2, query=q, key=[cache(kc)], value=[cache(vc)], out_shape=q.shape, lse_shape=(b, n, 1, 1),
        numHeads=n, numKeyValueHeads=n2, scaleValue=0.125, inputLayout="BNSD", blockTableOptional=table,
        blockSize=bs, actualSeqLengthsKvOptional=lengths, **_separate(ks, ko, vs, vo, mode, mode),
    )  # fmt: skip

    def per_position(x):
        """[B, N2 | 1, 70] from the blocks the table names."""
        rows = np.zeros((b, n2 if mode == 5 else 1, 70), F32)
        for bi in range(b):
            for p in range(70):
                block = table[bi, p // bs]
                if block >= 0:
                    rows[bi, :, p] = x[block, p % bs] if mode == 4 else x[block, :, p % bs]
        return _rows(rows, np.float16)

    k = arch35_dequant(k8, per_position(ks), per_position(ko), np.float16)
    v = arch35_dequant(v8, per_position(vs), per_position(vo), np.float16)
    want = golden.attention(q, k, v, scale=0.125, kv_block=1024, act_kv=lengths)
    # outputs near zero cancel values of about 1: judged against their sums' largest terms
    message = precision.failure(out.astype(np.float64), want.out, "float16", floor=want.floor)
    assert message is None, f"attentionOut: {message}"
    precision.assert_meets(lse[..., 0], want.lse, "float32", "softmaxLse")


@ON_ARCH35
@pytest.mark.parametrize("nz", [False, True], ids=["ND", "NZ"])
def test_paged_parameter_ties(chip, nz):
    """Modes 4 beside a paged cache (ND or NZ): the same three ties as test_dequantisation_ties in
    fp16 (the FLOAT scale's cast, x + offset, x * scale), each batch's one key in a block the table
    sends in reverse order, its parameters at that block's row 0 (CopyAntiquantParamsPageAttention;
    the NZ cast castTraitFp32 rounds to nearest even too)."""
    ulp = 2.0**-10
    x = np.array([3, 127, 3], np.int8)
    offset = np.array([0, 1922, 0], np.float64)
    scale = np.array([1 + ulp / 2, 3 * 2.0**-11, 1 + 3 * ulp], np.float64)
    b, d, bs = 3, 32, 32
    q = np.zeros((b, 1, 1, d), np.float16)
    cache = np.zeros((b, 1, bs, d), np.int8)
    key = cache.copy()
    table = np.array([[2], [1], [0]], np.int32)
    for bi in range(b):
        cache[table[bi, 0], 0, 0] = x[bi]
    params = {name: np.zeros((b, bs), F32) for name in ("ks", "ko", "vs", "vo")}
    for bi in range(b):
        row = table[bi, 0]
        params["ks"][row, 0], params["vs"][row, 0], params["vo"][row, 0] = 1, scale[bi], offset[bi]
    layout = to_nz if nz else (lambda c: c)
    out, _ = run_fia(
        version=2, query=q, key=[layout(key)], value=[layout(cache)], out_shape=q.shape, numHeads=1,
        scaleValue=1.0, inputLayout="BNSD", blockTableOptional=table, blockSize=bs,
        actualSeqLengthsKvOptional=(1, 1, 1), **_separate(params["ks"], params["ko"], params["vs"], params["vo"], 4, 4),
    )  # fmt: skip

    _assert_dequantised_ties(out[:, 0, 0], x, offset, scale, np.float16)


def _combined_call(**modes):
    """A per-channel combined antiquantScale [2, N2, 1, D] (IncreFlashAttention's form) beside key/value modes."""
    rng = np.random.default_rng(7)  # the same call each time
    q = rng.standard_normal((1, 4, 1, 128)).astype(np.float16)
    k8, v8 = (rng.integers(-128, 128, (1, 2, 40, 128), dtype=np.int8) for _ in range(2))
    scale = rng.uniform(0.01, 0.05, (2, 2, 1, 128)).astype(np.float16)
    return run_fia(
        query=q, key=[k8], value=[v8], out_shape=q.shape, antiquantScaleOptional=scale, numHeads=4,
        numKeyValueHeads=2, scaleValue=128**-0.5, inputLayout="BNSD", **modes,
    )[0]  # fmt: skip


@ON_ARCH35
@pytest.mark.parametrize("modes", [(1, 1), (3, 3), (2, 4), (1, 0)])
def test_modes_without_key_value_tensors_take_the_combined_parameters(chip, modes):
    """IFATilingV2::ProcessAntiQuant without key/value scales is not in split mode: antiquantMode (0 here) picks the
    path and the two modes are read only for the key-per-channel/value-per-token flag, so the call is the combined
    one's, bit for bit."""
    want = _combined_call()
    got = _combined_call(keyAntiquantMode=modes[0], valueAntiquantMode=modes[1])
    np.testing.assert_array_equal(got, want)


@ON_ARCH35
def test_pair_without_key_value_tensors_is_refused(chip):
    """keyAntiquantMode 0, valueAntiquantMode 1, an INT8 cache and antiquantMode 0: GenAntiquantModeVal picks the
    pair's kernels (mode 2), which read key/value parameters the call does not give (refused, 561003)."""
    with pytest.raises(ae.AclnnError, match="neither key nor value antiquant tensors") as info:
        _combined_call(keyAntiquantMode=0, valueAntiquantMode=1)
    assert info.value.code == 561003


@ON_ARCH35
def test_combined_per_token_mode_is_not_emulated(chip):
    """antiquantMode 1 with the combined parameters (IFATilingV2's non-split per-token path): 561003, where it ran
    as per channel before."""
    with pytest.raises(ae.AclnnError, match="antiquantMode 1") as info:
        _combined_call(antiquantMode=1)
    assert info.value.code == 561003
