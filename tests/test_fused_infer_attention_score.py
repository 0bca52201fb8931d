"""aclnnFusedInferAttentionScore V1-V4 through the Python API: each route's numerics against the
float64 golden (CANN's precision standard), softmaxLse, the sink, MLA rope, paged caches in both
layouts, and the routing per chip."""

import re

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
import precision
from aclnn_emu import DataType
from aclnn_emu.meta import TensorList
from aclnn_emu.opdef.registry import by_name
from aclnn_emu.runtime import sanitizer
from golden import fused_infer_attention_score as golden
from golden import incre_flash_attention as ifa_golden
from golden import prompt_flash_attention as pfa_golden
import test_prompt_flash_attention_v3 as pfa_v3
from test_incre_flash_attention_arch35 import arch35, int8_case

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(20261128)


def dev(x, dtype=None):
    return None if x is None else ae.to_device(np.ascontiguousarray(x), dtype=dtype)


def run_fia(version=4, *, query, key, value, out_shape, out_dtype=None, lse_shape=None, **named):
    """Both phases of aclnnFusedInferAttentionScore{version}; ``named``: the other parameters by
    their V2-V4 names (arrays go to the device; lists of arrays become tensor lists). Returns
    (attentionOut, softmaxLse or None) as host arrays."""
    op = by_name(f"FusedInferAttentionScore{'' if version == 1 else f'V{version}'}")
    out = ae.empty(out_shape, out_dtype or ae.dtypes.from_numpy(query.dtype))
    lse = ae.empty(lse_shape, DataType.ACL_FLOAT) if lse_shape else None
    values = dict(
        query=dev(query),
        key=TensorList([dev(k) for k in key]),
        value=TensorList([dev(v) for v in value]),
        attentionOut=out,
        softmaxLse=lse,
        softmaxLseFlag=lse_shape is not None,
    )
    for name, x in named.items():
        if isinstance(x, np.ndarray):
            x = dev(x, DataType.ACL_INT32 if name == "blockTableOptional" else None)
        values[name] = x
    args = []
    for p in op.params:
        name = p.name if p.name in values else p.name + "Optional"  # V1 drops the suffix
        args.append(values[name] if name in values else p.python_default)
    ae.run(op.name, *args)
    return ae.numpy(out), None if lse is None else ae.numpy(lse)


def pack_int4(x):
    """INT4 values [-8, 7] as INT32 words: element 2i in the low nibble of byte i, eight per
    little-endian word (the order the emulator assumes, inferred.int4_nibbles)."""
    nib = (x.astype(np.uint8) & 0x0F).reshape(*x.shape[:-1], -1, 2)
    return (nib[..., 0] | (nib[..., 1] << 4)).astype(np.uint8).view(np.int32)


def _meets(actual, want, dtype):
    message = precision.failure(np.asarray(actual, np.float64), want.out, np.dtype(dtype).name, floor=want.floor)
    assert message is None, message


def _lse_meets(actual, want):
    assert np.array_equal(np.isinf(actual), np.isinf(want)), "softmaxLse infinities differ"
    finite = np.isfinite(want)
    precision.assert_meets(actual[finite], want[finite], np.float32, "softmaxLse")


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
def test_prefill_gqa_causal(dtype, layout):
    """A2/A3 RouteToFia: D 128, GQA 8/2, sparse mode 3 (right-down causal), ragged lengths, lse."""
    b, n, n2, s1, s2, d = 2, 8, 2, 96, 160, 128
    q = RNG.standard_normal((b, n, s1, d)).astype(dtype)
    k, v = (RNG.standard_normal((b, n2, s2, d)).astype(dtype) for _ in range(2))
    act_q, act_kv = [96, 70], [160, 130]
    to = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    to["BSH"] = lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    out, lse = run_fia(
        query=to[layout](q),
        key=[to[layout](k)],
        value=[to[layout](v)],
        out_shape=to[layout](q).shape,
        lse_shape=(b, n, s1, 1),
        attenMaskOptional=mask,
        actualSeqLengthsOptional=tuple(act_q),
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout=layout,
        sparseMode=3,
    )
    want = golden.attention(
        q, k, v, scale=d**-0.5, kv_block=512, sparse_mode=3, act_q=act_q, act_kv=act_kv, has_mask=True
    )
    back = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    back["BSH"] = lambda x: x.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    _meets(back[layout](out), want, dtype)
    _lse_meets(lse[..., 0], want.lse)


def _paged(k, block_size, layout, rng):
    """[B, N2, S, D] keys as a paged cache ([blocks, bs, N2*D], [blocks, N2, bs, D] or NZ) and its table."""
    b, n2, s, d = k.shape
    per = -(-s // block_size)
    ids = rng.permutation(b * per + 3)[: b * per].reshape(b, per)
    cache = np.zeros((b * per + 3, n2, block_size, d), k.dtype)
    padded = np.zeros((b, n2, per * block_size, d), k.dtype)
    padded[:, :, :s] = k
    for bi in range(b):
        for j in range(per):
            cache[ids[bi, j]] = padded[bi, :, j * block_size : (j + 1) * block_size]
    if layout == "BnBsH":
        cache = cache.transpose(0, 2, 1, 3).reshape(cache.shape[0], block_size, n2 * d)
    if layout == "NZ":  # [blocks, N2, D / D0, bs, D0], D0 the elements of 32 bytes
        d0 = 32 // k.dtype.itemsize
        cache = cache.reshape(cache.shape[0], n2, block_size, d // d0, d0).transpose(0, 1, 3, 2, 4).copy()
    return cache, ids.astype(np.int32)


@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD", "NZ"])
def test_decode_over_a_paged_cache(cache_layout):
    """S = 1 GQA decode (legacy IFA shape, RouteToFia) over a paged cache in the three layouts (the
    NZ one read through its offset calculator, fia_block_cube_nonquant_gqa.h GM_KV_PA_NZ, in the ND
    caches' key blocks); a batch without keys is 0 and keeps the legacy-IFA lse init -3.4e38
    (InitOutputSingleCore)."""
    b, n, n2, d, bs = 3, 16, 2, 128, 128
    act_kv = [700, 129, 0]
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    k, v = (RNG.standard_normal((b, n2, 700, d)).astype(np.float16) for _ in range(2))
    rng = np.random.default_rng(5)
    key_cache, table = _paged(k, bs, cache_layout, rng)
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(5))
    out, lse = run_fia(
        query=q,
        key=[key_cache],
        value=[value_cache],
        out_shape=q.shape,
        lse_shape=(b, n, 1, 1),
        blockTableOptional=table,
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout="BNSD",
        blockSize=bs,
    )
    want = golden.attention(q, k, v, scale=d**-0.5, kv_block=2048, act_kv=act_kv, lse_unseen=-3.4e38)
    _meets(out, want, np.float16)
    assert (lse[2] == np.float32(-3.4e38)).all()
    _lse_meets(lse[..., 0], want.lse)


def test_sink_through_v4():
    b, n, s, d = 1, 4, 32, 64
    q = RNG.standard_normal((b, n, s, d)).astype(BF16)
    k, v = (RNG.standard_normal((b, 1, 90, d)).astype(BF16) for _ in range(2))
    sink = (RNG.standard_normal(n) * 2).astype(BF16)
    out, lse = run_fia(
        query=q,
        key=[k],
        value=[v],
        out_shape=q.shape,
        lse_shape=(b, n, s, 1),
        learnableSinkOptional=sink,
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=0.125,
        inputLayout="BNSD",
    )
    want = golden.attention(q, k, v, scale=0.125, kv_block=512, sink=sink.astype(np.float32))
    _meets(out, want, BF16)
    _lse_meets(lse[..., 0], want.lse)


@pytest.mark.parametrize("cache_layout", ["BnBsH", "NZ"])
def test_mla_rope_decode(cache_layout):
    """MLA: D 512 + rope 64, one KV head, G 32, BSND, paged (BnBsH, or NZ for the cache and its
    rope alike), bf16."""
    b, n, d, bs, s2 = 2, 32, 512, 128, 300
    q = RNG.standard_normal((b, n, 1, d)).astype(BF16)
    q_rope = RNG.standard_normal((b, n, 1, 64)).astype(BF16)
    k = RNG.standard_normal((b, 1, s2, d)).astype(BF16)
    k_rope = RNG.standard_normal((b, 1, s2, 64)).astype(BF16)
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(3))
    rope_cache, _ = _paged(k_rope, bs, cache_layout, np.random.default_rng(3))
    bsnd = lambda x: x.transpose(0, 2, 1, 3)  # noqa: E731
    out, _ = run_fia(
        version=3,
        query=bsnd(q),
        key=[key_cache],
        value=[key_cache],
        out_shape=(b, 1, n, d),
        queryRopeOptional=bsnd(q_rope),
        keyRopeOptional=rope_cache,
        blockTableOptional=table,
        actualSeqLengthsKvOptional=(s2, 200),
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=576**-0.5,
        inputLayout="BSND",
        blockSize=bs,
    )
    want = golden.attention(q, k, k, scale=576**-0.5, kv_block=512, act_kv=[s2, 200], rope=(q_rope, k_rope))
    _meets(bsnd(out), want, BF16)


def test_lse_flag_false_ignores_softmax_lse():
    """softmaxLseFlag false: the wrappers pass a [0] placeholder; a NULL softmaxLse is fine (V1)."""
    q = RNG.standard_normal((1, 2, 1, 128)).astype(np.float16)
    k, v = (RNG.standard_normal((1, 2, 64, 128)).astype(np.float16) for _ in range(2))
    out, _ = run_fia(
        version=1, query=q, key=[k], value=[v], out_shape=q.shape, numHeads=2, scaleValue=128**-0.5, inputLayout="BNSD"
    )
    want = golden.attention(q, k, v, scale=128**-0.5, kv_block=8192)
    _meets(out, want, np.float16)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
def test_decode_d16_routes(chip):
    """D 16 is no FIA-V3 head size: A2/A3 take the IFA route (S = 1), Ascend910_95 the PFA regbase
    route; both agree with the IFA golden."""
    q = RNG.standard_normal((1, 2, 1, 16)).astype(np.float16)
    k, v = (RNG.standard_normal((1, 2, 40, 16)).astype(np.float16) for _ in range(2))
    out, _ = run_fia(query=q, key=[k], value=[v], out_shape=q.shape, numHeads=2, scaleValue=0.25, inputLayout="BNSD")
    want = ifa_golden.attention(q[:, :, 0], [k[0]], [v[0]], scale=0.25, lengths=[40])
    message = precision.failure(out[:, :, 0].astype(np.float64), want, "float16")
    assert message is None, message


def test_tnd_varlen_prefill_with_lse():
    """TND (NTD-free) varlen prefill on the FIA-V3 route: cumulative lengths, causal (sparse 3),
    key blocks of 512, softmaxLse [T, N, 1]."""
    n, n2, d = 4, 2, 64
    q_lens, kv_lens = [50, 30], [70, 30]
    t1, t2 = sum(q_lens), sum(kv_lens)
    q = RNG.standard_normal((t1, n, d)).astype(np.float16)
    k, v = (RNG.standard_normal((t2, n2, d)).astype(np.float16) for _ in range(2))
    out, lse = run_fia(
        query=q,
        key=[k],
        value=[v],
        out_shape=q.shape,
        lse_shape=(t1, n, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        actualSeqLengthsOptional=tuple(np.cumsum(q_lens).tolist()),
        actualSeqLengthsKvOptional=tuple(np.cumsum(kv_lens).tolist()),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout="TND",
        sparseMode=3,
    )
    q0, k0 = 0, 0
    for aq, ak in zip(q_lens, kv_lens):
        qb = q[q0 : q0 + aq].transpose(1, 0, 2)[None]
        kb, vb = (x[k0 : k0 + ak].transpose(1, 0, 2)[None] for x in (k, v))
        want = golden.attention(qb, kb, vb, scale=0.125, kv_block=512, sparse_mode=3, has_mask=True)
        _meets(out[q0 : q0 + aq].transpose(1, 0, 2)[None], want, np.float16)
        _lse_meets(lse[q0 : q0 + aq, :, 0].T[None], want.lse)
        q0, k0 = q0 + aq, k0 + ak


def test_tensor_list_keys_and_bnsd_bsnd_output():
    """One key/value tensor per batch (different S, no actualSeqLengthsKv: each its own), BNSD in,
    BSND out (BNSD_BSND)."""
    n, d, s1 = 2, 128, 20
    q = RNG.standard_normal((2, n, s1, d)).astype(BF16)
    ks = [RNG.standard_normal((1, n, s, d)).astype(BF16) for s in (33, 57)]
    vs = [RNG.standard_normal((1, n, s, d)).astype(BF16) for s in (33, 57)]
    out, _ = run_fia(
        query=q, key=ks, value=vs, out_shape=(2, s1, n, d), numHeads=n, scaleValue=d**-0.5, inputLayout="BNSD_BSND"
    )
    for b in range(2):
        want = golden.attention(q[b : b + 1], ks[b], vs[b], scale=d**-0.5, kv_block=512)
        _meets(out[b : b + 1].transpose(0, 2, 1, 3), want, BF16)


def test_mla_dense_nbsd_output():
    """MLA over dense keys (BNSD in, NBSD out: attentionOut [N, B, S, D]), two query rows."""
    b, n, d, s2 = 1, 8, 512, 90
    q = RNG.standard_normal((b, n, 2, d)).astype(BF16)
    q_rope = RNG.standard_normal((b, n, 2, 64)).astype(BF16)
    k = RNG.standard_normal((b, 1, s2, d)).astype(BF16)
    k_rope = RNG.standard_normal((b, 1, s2, 64)).astype(BF16)
    out, _ = run_fia(
        version=3,
        query=q,
        key=[k],
        value=[k],
        out_shape=(n, b, 2, d),
        queryRopeOptional=q_rope,
        keyRopeOptional=k_rope,
        numHeads=n,
        numKeyValueHeads=1,
        scaleValue=576**-0.5,
        inputLayout="BNSD_NBSD",
    )
    want = golden.attention(q, k, k, scale=576**-0.5, kv_block=512, rope=(q_rope, k_rope))
    _meets(out.transpose(1, 0, 2, 3), want, BF16)


def test_shared_prefix_on_the_fia_v3_route():
    """A shared prefix (V2) in front of each batch's keys: BNSD_NBSD is no legacy GQA layout, so
    RouteToFia takes it with the prefix (CheckGqaConstrain); CheckSystemPrefixShape wants the key
    and value prefixes of one shape, so D is the same for both."""
    n, s1, s2, p = 2, 24, 40, 16
    q = RNG.standard_normal((2, n, s1, 128)).astype(np.float16)
    k, v = (RNG.standard_normal((2, n, s2, 128)).astype(np.float16) for _ in range(2))
    kp, vp = (RNG.standard_normal((1, n, p, 128)).astype(np.float16) for _ in range(2))
    out, _ = run_fia(
        version=2,
        query=q,
        key=[k],
        value=[v],
        out_shape=(n, 2, s1, 128),
        keySharedPrefixOptional=kp,
        valueSharedPrefixOptional=vp,
        actualSharedPrefixLenOptional=(12,),
        numHeads=n,
        scaleValue=128**-0.5,
        inputLayout="BNSD_NBSD",
    )
    kk = np.concatenate([np.repeat(kp[:, :, :12], 2, axis=0), k], axis=2)
    vv = np.concatenate([np.repeat(vp[:, :, :12], 2, axis=0), v], axis=2)
    want = golden.attention(q, kk, vv, scale=128**-0.5, kv_block=512)
    _meets(out.transpose(1, 0, 2, 3), want, np.float16)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_arch35_prefill_takes_the_pfa_regbase_kernels(chip, dtype):
    """Ascend910_95: TilingFusedInferAttentionScoreV2 hands a non-antiquant call to
    PromptFlashAttentionTilingV2, so the numerics are the arch35 PFA kernels' (fp32 scores,
    bf16 P ties to even): held against the PFA golden's high-precision rules; softmaxLse is
    log(sum exp) + max of the fp32 scores."""
    b, n, n2, s, d = 1, 4, 2, 80, 128
    q = RNG.standard_normal((b, n, s, d)).astype(dtype)
    k, v = (RNG.standard_normal((b, n2, s, d)).astype(dtype) for _ in range(2))
    out, lse = run_fia(
        query=q,
        key=[k],
        value=[v],
        out_shape=q.shape,
        lse_shape=(b, n, s, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout="BNSD",
        sparseMode=3,
    )
    want = pfa_golden.attention(q, k, v, scale=d**-0.5, sparse_mode=3, high_precision=True)
    # cancelling sums judged against their terms' magnitude (sum |P V| / l, the FIA golden's floor)
    fia_want = golden.attention(q, k, v, scale=d**-0.5, kv_block=512, sparse_mode=3, has_mask=True)
    message = precision.failure(out.astype(np.float64), want, np.dtype(dtype).name, floor=fia_want.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], fia_want.lse)  # log(sum exp) + max of the fp32 scores


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout,cache_layout", [("BNSD", "BnNBsD"), ("BSH", "BnBsH"), ("BSND", "BnBsH")])
def test_arch35_paged_prefill_takes_the_pfa_kernels(chip, dtype, layout, cache_layout):
    """Ascend910_95: a paged prefill goes to PromptFlashAttentionTilingV2, whose kernels fill each
    dense S2 tile from the blocks it spans (pa_copy_right_cube_in_norm.h): the PFA numerics over the
    gathered keys, causal (sparse mode 3) with ragged key lengths, a block id past each batch's
    keys never read."""
    b, n, n2, s1, d, bs = 2, 4, 2, 72, 128, 128
    act_kv = [300, 140]
    q = RNG.standard_normal((b, n, s1, d)).astype(dtype)
    k, v = (RNG.standard_normal((b, n2, 300, d)).astype(dtype) for _ in range(2))
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(8))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(8))
    table[1, 2] = -1  # past batch 1's 140 keys
    to = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    to["BSH"] = lambda x: x.transpose(0, 2, 1, 3).reshape(b, s1, -1)
    out, lse = run_fia(
        query=to[layout](q),
        key=[key_cache],
        value=[value_cache],
        out_shape=to[layout](q).shape,
        lse_shape=(b, n, s1, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        blockTableOptional=table,
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout=layout,
        sparseMode=3,
        blockSize=bs,
    )
    back = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    back["BSH"] = lambda x: x.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    kw = dict(scale=d**-0.5, sparse_mode=3, act_kv=act_kv)
    want = pfa_golden.attention(q, k, v, high_precision=True, **kw)
    fia_want = golden.attention(q, k, v, kv_block=512, has_mask=True, **kw)
    message = precision.failure(back[layout](out).astype(np.float64), want, np.dtype(dtype).name, floor=fia_want.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], fia_want.lse)
    assert not sanitizer.reports()


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD", "NZ"])
def test_arch35_tnd_paged_prefill(chip, dtype, cache_layout):
    """Ascend910_95, prefix-cache prefill with packed batches: a TND query (cumulative lengths) over
    a paged cache whose key lengths are each batch's own (not cumulative, and decreasing here),
    causal (sparse mode 3: each batch's new rows against its cached prefix), softmaxLse per token."""
    n, n2, d, bs = 4, 2, 128, 128
    q_lens, act_kv = [40, 24], [300, 152]
    t = sum(q_lens)
    q = RNG.standard_normal((t, n, d)).astype(dtype)
    k, v = (RNG.standard_normal((2, n2, 300, d)).astype(dtype) for _ in range(2))
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(11))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(11))
    table[1, 2] = -1  # past batch 1's 152 keys: never read
    ends = tuple(np.cumsum(q_lens).tolist())
    out, lse = run_fia(
        query=q,
        key=[key_cache],
        value=[value_cache],
        out_shape=q.shape,
        lse_shape=(t, n, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        blockTableOptional=table,
        actualSeqLengthsOptional=ends,
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout="TND",
        sparseMode=3,
        blockSize=bs,
    )
    for b, (r0, r1) in enumerate(zip((0,) + ends[:-1], ends)):
        qb = q[r0:r1].transpose(1, 0, 2)[None]
        kb, vb = k[b : b + 1, :, : act_kv[b]], v[b : b + 1, :, : act_kv[b]]
        kw = dict(scale=d**-0.5, sparse_mode=3)
        want = pfa_golden.attention(qb, kb, vb, high_precision=True, **kw)
        fia_want = golden.attention(qb, kb, vb, kv_block=512, has_mask=True, **kw)
        got = out[r0:r1].transpose(1, 0, 2)[None].astype(np.float64)
        message = precision.failure(got, want, np.dtype(dtype).name, floor=fia_want.floor)
        assert message is None, message
        _lse_meets(lse[r0:r1, :, 0].T[None], fia_want.lse)
    assert not sanitizer.reports()


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize(
    "layout,cache_layout", [("BNSD", "BnNBsD"), ("BNSD", "BnBsH"), ("BSH", "BnBsH"), ("BSND", "BnBsH")]
)
def test_a2_paged_prefill_on_the_pfa_route(chip, dtype, layout, cache_layout):
    """Atlas A2/A3: a paged prefill with D 32 (no FIA-V3 head size) goes to the PFA tiling, whose
    CheckPATypeAndShape makes S2 max blocks x blockSize: the PFA kernels' numerics over the
    gathered keys, causal (sparse mode 3), a block id past each batch's keys never read."""
    b, n, n2, s1, d, bs = 2, 4, 2, 16, 32, 128
    act_kv = [300, 140]
    q = pfa_v3.grid((b, n, s1, d), dtype)
    k = pfa_v3.grid((b, n2, 300, d), dtype)
    v = RNG.standard_normal((b, n2, 300, d)).astype(dtype)
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(13))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(13))
    table[1, 2] = -1  # past batch 1's 140 keys
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    out, lse = run_fia(
        query=to(q),
        key=[key_cache],
        value=[value_cache],
        out_shape=to(q).shape,
        lse_shape=(b, n, s1, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        blockTableOptional=table,
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout=layout,
        sparseMode=3,
        blockSize=bs,
    )
    kw = dict(scale=0.125, sparse_mode=3, act_kv=act_kv)
    want = pfa_golden.attention(q, k, v, **kw, **pfa_v3.kind(chip, dtype, 1, False))
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    fia_want = golden.attention(q, k, v, kv_block=512, has_mask=True, **kw)
    message = precision.failure(back.astype(np.float64), want, np.dtype(dtype).name, floor=fia_want.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], fia_want.lse)
    assert not sanitizer.reports()


def _packed_prefill(q, key, value, q_lens, act_kv, heads, kv_heads, sparse_mode=3, **named):
    """A TND prefill (cumulative query ends, a 2048 x 2048 causal mask) over ``key`` / ``value`` with
    key lengths ``act_kv``."""
    t, d = q.shape[0], q.shape[2]
    return run_fia(
        query=q,
        key=[key],
        value=[value],
        out_shape=q.shape,
        lse_shape=(t, heads, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        actualSeqLengthsOptional=tuple(np.cumsum(q_lens).tolist()),
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=heads,
        numKeyValueHeads=kv_heads,
        scaleValue=d**-0.5,
        inputLayout="TND",
        sparseMode=sparse_mode,
        **named,
    )


def _check_packed(q, k, v, q_lens, act_kv, out, lse, dtype):
    """Each batch's rows against the float64 golden of its own keys (sparse mode 3), softmaxLse too."""
    d = q.shape[2]
    ends = np.cumsum([0, *q_lens])
    for b, (r0, r1) in enumerate(zip(ends[:-1], ends[1:])):
        qb = q[r0:r1].transpose(1, 0, 2)[None]
        kb, vb = k[b : b + 1, :, : act_kv[b]], v[b : b + 1, :, : act_kv[b]]
        want = golden.attention(qb, kb, vb, scale=d**-0.5, kv_block=512, sparse_mode=3, has_mask=True)
        _meets(out[r0:r1].transpose(1, 0, 2)[None], want, dtype)
        _lse_meets(lse[r0:r1, :, 0].T[None], want.lse)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD", "NZ"])
def test_a2_tnd_paged_prefill_on_the_pfa_route(chip, cache_layout):
    """Atlas A2/A3, prefix-cache prefill with packed batches off the FIA-V3 kernels (bf16 D 192, MHA:
    no CheckGqaDSupport pair): the PFA tiling's TND page-attention rules and the base-API var-len
    kernels, which fill each key tile of the dense walk from its blocks
    (pfa_service_matmul_kv_nd.h CopyKToL1ForPA, an NZ cache through its PA_NZ copy). Key lengths are each batch's own (decreasing here),
    a block id past batch 1's keys is never read; the output is the dense packed call's, byte for byte."""
    n, d, bs = 4, 192, 128
    q_lens, act_kv = [40, 24], [300, 152]
    q = RNG.standard_normal((sum(q_lens), n, d)).astype(BF16)
    k, v = (RNG.standard_normal((2, n, 300, d)).astype(BF16) for _ in range(2))
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(17))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(17))
    table[1, 2] = -1  # past batch 1's 152 keys
    paged = dict(blockTableOptional=table, blockSize=bs)
    out, lse = _packed_prefill(q, key_cache, value_cache, q_lens, act_kv, n, n, **paged)
    _check_packed(q, k, v, q_lens, act_kv, out, lse, BF16)
    assert not sanitizer.reports()
    dense_k, dense_v = (np.concatenate([x[b, :, :m].transpose(1, 0, 2) for b, m in enumerate(act_kv)]) for x in (k, v))
    ends_kv = np.cumsum(act_kv).tolist()
    dense_out, _ = _packed_prefill(q, dense_k, dense_v, q_lens, ends_kv, n, n)
    assert np.array_equal(out.view(np.uint16), dense_out.view(np.uint16))


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD"])
def test_a2_tnd_paged_key_192_value_128_takes_the_fia_v3_route(chip, cache_layout, capfd):
    """RouteToFia (fused_infer_attention_score_tiling_v3.cpp): GetQkvD reads a paged value's D by the
    cache's rank (GetPaValueD), 192 against 128 makes the call no legacy GQA (isNotLegacyGQA), so
    CheckGqaConstrain passes and the FIA-V3 kernels run it (CheckFeatureHeadDim's 192/128 pair), not
    the PFA tiling's TND page attention: no second softmaxLse pass, each batch's own keys."""
    n, n2, bs = 4, 2, 128
    q_lens, act_kv = [40, 24], [300, 152]
    q = RNG.standard_normal((sum(q_lens), n, 192)).astype(np.float16)
    k = RNG.standard_normal((2, n2, 300, 192)).astype(np.float16)
    v = RNG.standard_normal((2, n2, 300, 128)).astype(np.float16)
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(5))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(5))
    out, lse = run_fia(
        query=q, key=[key_cache], value=[value_cache], out_shape=(q.shape[0], n, 128), lse_shape=(q.shape[0], n, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1), actualSeqLengthsOptional=tuple(np.cumsum(q_lens)),
        actualSeqLengthsKvOptional=tuple(act_kv), numHeads=n, numKeyValueHeads=n2, scaleValue=192**-0.5,
        inputLayout="TND", sparseMode=3, blockTableOptional=table, blockSize=bs,
    )  # fmt: skip
    assert "lse_pass" not in capfd.readouterr().err
    ends = np.cumsum([0, *q_lens])
    for b, (r0, r1) in enumerate(zip(ends[:-1], ends[1:])):
        kb, vb = k[b : b + 1, :, : act_kv[b]], v[b : b + 1, :, : act_kv[b]]
        want = golden.attention(
            q[r0:r1].transpose(1, 0, 2)[None], kb, vb, scale=192**-0.5, kv_block=512, sparse_mode=3, has_mask=True
        )
        _meets(out[r0:r1].transpose(1, 0, 2)[None], want, np.float16)
        _lse_meets(lse[r0:r1, :, 0].T[None], want.lse)


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2_tnd_paged_cumulative_key_lengths_differ(chip):
    """The same call with cumulative key ends (as a dense TND key takes them) reads other keys: the
    per-batch reading above can fail."""
    n, d, bs = 4, 192, 128
    q_lens, act_kv = [40, 24], [150, 152]
    q = RNG.standard_normal((sum(q_lens), n, d)).astype(BF16)
    k, v = (RNG.standard_normal((2, n, 302, d)).astype(BF16) for _ in range(2))
    caches = [_paged(x, bs, "BnNBsD", np.random.default_rng(2)) for x in (k, v)]
    paged = dict(blockTableOptional=caches[0][1], blockSize=bs)
    own, _ = _packed_prefill(q, caches[0][0], caches[1][0], q_lens, act_kv, n, n, **paged)
    summed, _ = _packed_prefill(q, caches[0][0], caches[1][0], q_lens, [150, 302], n, n, **paged)
    assert not np.array_equal(own[40:], summed[40:])


PAGED_TND_RULES = {  # prompt_flash_attention_tiling.cpp CheckPASparseMode (before the TND template's own rules)
    "sparse_mode": (dict(sparse_mode=1), "When Layout is TND/NTD_TND and PA enabled, sparseMode only support 0"),
    "mask": (
        dict(sparse_mode=0),
        "When Layout is TND/NTD_TND and PA enabled, sparseMode = 0, not support attentionMask",
    ),
}


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("case", PAGED_TND_RULES)
def test_a2_tnd_paged_sparse_rules(chip, case):
    """The A2/A3 PFA tiling's page-attention sparse rules for a TND query, with their messages (561002)."""
    named, message = PAGED_TND_RULES[case]
    q = np.zeros((64, 4, 192), BF16)
    cache, table = _paged(np.zeros((2, 4, 300, 192), BF16), 128, "BnNBsD", np.random.default_rng(1))
    with pytest.raises(ae.errors.TilingError, match=re.escape(message)) as failure:
        _packed_prefill(q, cache, cache, [40, 24], [300, 152], 4, 4, blockTableOptional=table, blockSize=128, **named)
    assert failure.value.status == 561002


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD"])
def test_a2_nsd_paged_prefill_on_the_pfa_route(chip, dtype, cache_layout):
    """Atlas A2/A3: an NSD query (one batch, no FIA-V3 layout) over a paged cache: the PFA tiling's
    CheckPATypeAndShape (3- or 4-D cache), the PFA kernels over the gathered keys, causal."""
    n, n2, s1, d, bs, s2 = 4, 2, 16, 32, 128, 300
    q = pfa_v3.grid((1, n, s1, d), dtype)
    k = pfa_v3.grid((1, n2, s2, d), dtype)
    v = RNG.standard_normal((1, n2, s2, d)).astype(dtype)
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(19))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(19))
    out, lse = run_fia(
        query=q[0],
        key=[key_cache],
        value=[value_cache],
        out_shape=q[0].shape,
        lse_shape=(1, n, s1, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        blockTableOptional=table,
        actualSeqLengthsKvOptional=(s2,),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout="NSD",
        sparseMode=3,
        blockSize=bs,
    )
    kw = dict(scale=0.125, sparse_mode=3)
    want = pfa_golden.attention(q, k, v, **kw, **pfa_v3.kind(chip, dtype, 1, False))
    fia_want = golden.attention(q, k, v, kv_block=512, has_mask=True, **kw)
    message = precision.failure(out[None].astype(np.float64), want, np.dtype(dtype).name, floor=fia_want.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], fia_want.lse)
    assert not sanitizer.reports()


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("d,bs", [(256, 128), (96, 16), (128, 128)])
def test_split_fuse_paged_prefill(chip, dtype, d, bs):
    """Atlas A2/A3 split-fuse route (IsUsingFAI: TND GQA, innerPrecise 0, a [blocks, blockSize, H]
    cache, blockSize a multiple of 16): head sizes up to 256, the key lengths each batch's own
    (flash_attention_regular.h PAGED_CACHE_FLAG), causal; the FIA-V3 maths (inferred.split_fuse)."""
    n, n2 = 4, 2
    q_lens, act_kv = [40, 24], [300, 152]
    q = RNG.standard_normal((sum(q_lens), n, d)).astype(dtype)
    k, v = (RNG.standard_normal((2, n2, 300, d)).astype(dtype) for _ in range(2))
    key_cache, table = _paged(k, bs, "BnBsH", np.random.default_rng(23))
    value_cache, _ = _paged(v, bs, "BnBsH", np.random.default_rng(23))
    paged = dict(blockTableOptional=table, blockSize=bs, innerPrecise=0)
    out, lse = _packed_prefill(q, key_cache, value_cache, q_lens, act_kv, n, n2, **paged)
    _check_packed(q, k, v, q_lens, act_kv, out, lse, dtype)
    assert not sanitizer.reports()


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
def test_split_fuse_block_table_of_rank_3_steps_by_its_dimension_1(chip):
    """The split-fuse route takes blockTable's dimension 1 as the blocks per batch whatever its rank
    (fused_infer_attention_score_tiling.cpp ConvertContextToParamsFAI, no rank check), and the kernels
    step the flat table by it (flash_attention_regular.h blockBOffset): a [2, 1, 38] table gives batch
    b the blocks flat[b : b + its count], overlapping rows; each batch meets the golden of those keys."""
    n, n2, d, bs = 4, 2, 96, 16
    q_lens, act_kv = [40, 24], [300, 152]
    q = RNG.standard_normal((sum(q_lens), n, d)).astype(np.float16)
    k, v = (RNG.standard_normal((2, n2, 300, d)).astype(np.float16) for _ in range(2))
    caches = [_paged(x, bs, "BnBsH", np.random.default_rng(31)) for x in (k, v)]
    flat = caches[0][1].reshape(-1)
    table = flat.reshape(2, 1, -1)
    paged = dict(blockTableOptional=table, blockSize=bs, innerPrecise=0)
    out, lse = _packed_prefill(q, caches[0][0], caches[1][0], q_lens, act_kv, n, n2, **paged)

    def read(cache):  # each batch's keys as the kernels gather them, [2, N2, 304, D]
        blocks = cache.reshape(cache.shape[0], bs, n2, d).transpose(0, 2, 1, 3)
        per = -(-max(act_kv) // bs)
        rows = [blocks[flat[b : b + per]].transpose(1, 0, 2, 3).reshape(n2, per * bs, d) for b in range(2)]
        return np.stack(rows)

    _check_packed(q, read(caches[0][0]), read(caches[1][0]), q_lens, act_kv, out, lse, np.float16)
    assert not sanitizer.reports()


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD"])
def test_fia_v3_tnd_paged_prefill(chip, dtype, cache_layout):
    """Atlas A2/A3 FIA-V3 route (TND D 128 GQA, blockSize 64: not CheckSpecConditions' 128): with a
    block table the parser's key layout is the cache's, so the key lengths are each batch's own
    (CheckFeatureActualSeqLensKvData without the cumulative rule; the kernels' GetKvActSeqMode is
    BY_BATCH), decreasing here."""
    n, n2, d, bs = 4, 2, 128, 64
    q_lens, act_kv = [40, 24], [300, 152]
    q = RNG.standard_normal((sum(q_lens), n, d)).astype(dtype)
    k, v = (RNG.standard_normal((2, n2, 300, d)).astype(dtype) for _ in range(2))
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(29))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(29))
    paged = dict(blockTableOptional=table, blockSize=bs, innerPrecise=0)
    out, lse = _packed_prefill(q, key_cache, value_cache, q_lens, act_kv, n, n2, **paged)
    _check_packed(q, k, v, q_lens, act_kv, out, lse, dtype)
    assert not sanitizer.reports()


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
def test_arch35_nz_paged_prefill(chip, layout):
    """Ascend910_95: a 5-D (NZ) paged cache, [blocks, N2, D / 16, blockSize, 16] for fp16, which the
    arch35 copy-in (CopyInL1.h GmCopyInToL1PA, KVLAYOUT::NZ) reads row by row into the same S2
    tiles as an ND cache: the PFA numerics over the gathered keys."""
    b, n, n2, s1, d, bs = 2, 4, 4, 32, 64, 128
    act_kv = [256, 130]
    q = RNG.standard_normal((b, n, s1, d)).astype(np.float16)
    k, v = (RNG.standard_normal((b, n2, 256, d)).astype(np.float16) for _ in range(2))
    key_cache, table = _paged(k, bs, "NZ", np.random.default_rng(12))
    value_cache, _ = _paged(v, bs, "NZ", np.random.default_rng(12))
    to = (lambda x: x) if layout == "BNSD" else (lambda x: x.transpose(0, 2, 1, 3).reshape(b, s1, -1))
    out, _ = run_fia(
        query=to(q),
        key=[key_cache],
        value=[value_cache],
        out_shape=to(q).shape,
        blockTableOptional=table,
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout=layout,
        blockSize=bs,
    )
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    want = pfa_golden.attention(q, k, v, scale=0.125, act_kv=act_kv, high_precision=True)
    floor = golden.attention(q, k, v, scale=0.125, kv_block=512, act_kv=act_kv).floor
    message = precision.failure(back.astype(np.float64), want, "float16", floor=floor)
    assert message is None, message


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("cache_layout", ["BnBsH", "BnNBsD"])
def test_arch35_paged_decode_takes_the_pfa_kernels(chip, cache_layout):
    """Ascend910_95: S = 1 over a paged cache is the tiling's IFA mode, where blockSize need only
    be a multiple of 32 bytes (16 fp16 tokens): 48-token blocks, a batch without keys."""
    b, n, n2, d, bs = 3, 8, 2, 64, 48
    act_kv = [200, 49, 0]
    q = RNG.standard_normal((b, n, 1, d)).astype(np.float16)
    k, v = (RNG.standard_normal((b, n2, 200, d)).astype(np.float16) for _ in range(2))
    key_cache, table = _paged(k, bs, cache_layout, np.random.default_rng(9))
    value_cache, _ = _paged(v, bs, cache_layout, np.random.default_rng(9))
    out, _ = run_fia(
        query=q,
        key=[key_cache],
        value=[value_cache],
        out_shape=q.shape,
        blockTableOptional=table,
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout="BNSD",
        blockSize=bs,
    )
    want = arch35(q[:2, :, 0], k[:2], v[:2], act_kv[:2])
    # cancelling sums judged against their terms' magnitude (the FIA golden's floor)
    floor = golden.attention(q[:2], k[:2], v[:2], scale=0.125, kv_block=512, act_kv=act_kv[:2]).floor[:, :, 0]
    message = precision.failure(out[:2, :, 0].astype(np.float64), want, "float16", floor=floor)
    assert message is None, message
    assert not out[2].any()


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_paged_block_outside_the_cache_is_reported(chip):
    """A block id inside a batch's keys but outside the cache: the hardware reads whatever memory
    lies there; here its tokens are zeros and the sanitizer names the id."""
    b, n, d, bs = 1, 2, 64, 128
    q = RNG.standard_normal((b, n, 4, d)).astype(np.float16)
    k, v = (RNG.standard_normal((b, n, 256, d)).astype(np.float16) for _ in range(2))
    key_cache, table = _paged(k, bs, "BnNBsD", np.random.default_rng(4))
    value_cache, _ = _paged(v, bs, "BnNBsD", np.random.default_rng(4))
    table[0, 1] = 99
    out, _ = run_fia(
        query=q,
        key=[key_cache],
        value=[value_cache],
        out_shape=q.shape,
        blockTableOptional=table,
        actualSeqLengthsKvOptional=(256,),
        numHeads=n,
        scaleValue=0.125,
        inputLayout="BNSD",
        blockSize=bs,
    )
    assert any("holds ids [99]" in message for kind, message in sanitizer.reports() if kind == "out-of-bounds")
    k0, v0 = k.copy(), v.copy()
    k0[:, :, bs:], v0[:, :, bs:] = 0, 0
    want = pfa_golden.attention(q, k0, v0, scale=0.125, nxt=pfa_golden.BIG, high_precision=True)
    floor = golden.attention(q, k0, v0, scale=0.125, kv_block=512).floor
    message = precision.failure(out.astype(np.float64), want, "float16", floor=floor)
    assert message is None, message


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_int8_antiquant_decode_a2(dtype):
    """An INT8 key/value with an fp16/bf16 query is no RouteToFia call (query dtype != key dtype):
    S = 1 takes the IFA route (antiquantScale/Offset per channel [2, N2, 1, D])."""
    q = RNG.standard_normal((2, 4, 1, 32)).astype(dtype)
    k8, v8 = (RNG.integers(-128, 128, (2, 2, 50, 32), dtype=np.int8) for _ in range(2))
    scale = (RNG.random((2, 2, 1, 32)) * 0.02 + 0.005).astype(dtype)
    offset = RNG.integers(-3, 4, (2, 2, 1, 32)).astype(dtype)
    out, _ = run_fia(
        query=q,
        key=[k8],
        value=[v8],
        out_shape=q.shape,
        antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset,
        numHeads=4,
        numKeyValueHeads=2,
        scaleValue=0.125,
        inputLayout="BNSD",
    )
    s, o = scale.astype(np.float64).reshape(2, 2, 32), offset.astype(np.float64).reshape(2, 2, 32)
    magnitude = np.zeros((2, 4, 32))
    want = ifa_golden.attention(
        q[:, :, 0],
        list(k8),
        list(v8),
        scale=0.125,
        lengths=[50, 50],
        antiquant=(s[0], o[0], s[1], o[1]),
        small_dtype=np.dtype(dtype).name,
        magnitude=magnitude,
    )
    message = precision.failure(out[:, :, 0].astype(np.float64), want, np.dtype(dtype).name, floor=magnitude)
    assert message is None, message


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("rope", [False, True], ids=["", "rope_ignored"])
def test_int8_antiquant_decode_arch35(chip, rope, capfd):
    """Ascend910_95: query dtype != key dtype sends the call to IFATilingV2 (the arch35 antiquant
    kernel): the key/value dequantised in the query's dtype, then the arch35 maths. IFATilingV2 reads
    no rope (fused_infer_attention_score_tiling_v2.cpp ConvertContextToParamsIFA leaves it out,
    UpdateTilingKeyHasRope sets hasRope 0): with queryRope/keyRope the output is the same, bit for bit."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 60, 32), per_channel=True)
    q = np.random.default_rng(31).standard_normal((2, 8, 1, 32)).astype(np.float16)  # not order-dependent
    call = dict(
        query=q, key=[k8], value=[v8], out_shape=q.shape, antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset, actualSeqLengthsKvOptional=(60, 23), numHeads=8, numKeyValueHeads=2,
        scaleValue=0.125, inputLayout="BNSD",
    )  # fmt: skip
    out, _ = run_fia(**call)
    precision.assert_meets(out[:, :, 0], arch35(q[:, :, 0], k, v, (60, 23)), "float16")
    if rope:
        ropes = dict(queryRopeOptional=RNG.standard_normal((2, 8, 1, 64)).astype(np.float16),
                     keyRopeOptional=RNG.integers(-128, 128, (2, 2, 60, 64), dtype=np.int8))  # fmt: skip
        with_rope, _ = run_fia(3, **call, **ropes)
        assert "queryRope/keyRope are ignored" in capfd.readouterr().err
        assert np.array_equal(with_rope.view(np.uint16), out.view(np.uint16))


def test_python_face_allocates_the_outputs_and_raises_typed_errors():
    """ae.ops.FusedInferAttentionScoreV4 with numpy in: attentionOut and (softmaxLseFlag) softmaxLse
    allocated by their rules and returned as numpy; a tiling failure raises TilingError (561002)."""
    q = RNG.standard_normal((1, 4, 16, 128)).astype(np.float16)
    k = RNG.standard_normal((1, 2, 40, 128)).astype(np.float16)
    common = dict(numHeads=4, scaleValue=128**-0.5, inputLayout="BNSD")
    result = ae.ops.FusedInferAttentionScoreV4(q, [k], [k], numKeyValueHeads=2, softmaxLseFlag=True, **common)
    want = golden.attention(q, k, k, scale=128**-0.5, kv_block=512)
    _meets(result.attentionOut, want, np.float16)
    _lse_meets(result.softmaxLse[..., 0], want.lse)
    with pytest.raises(ae.errors.TilingError) as failure:
        ae.ops.FusedInferAttentionScoreV4(q, [k], [k], numKeyValueHeads=3, **common)
    assert failure.value.status == 561002


@pytest.mark.parametrize("with_offset", [True, False], ids=["offset", "no_offset"])
def test_separate_key_value_antiquant_v2(with_offset):
    """V2's key and value antiquant parameters, per channel (modes 0) [1, N2, 1, D] each, on the IFA
    route: the key dequantised with the key's, the value with the value's."""
    q = RNG.standard_normal((2, 4, 1, 32)).astype(np.float16)
    k8, v8 = (RNG.integers(-128, 128, (2, 2, 50, 32), dtype=np.int8) for _ in range(2))
    ks, vs = ((RNG.random((1, 2, 1, 32)) * 0.02 + 0.005).astype(np.float16) for _ in range(2))
    ko, vo = (RNG.integers(-3, 4, (1, 2, 1, 32)).astype(np.float16) for _ in range(2))
    offsets = dict(keyAntiquantOffsetOptional=ko, valueAntiquantOffsetOptional=vo) if with_offset else {}
    out, _ = run_fia(
        version=2,
        query=q,
        key=[k8],
        value=[v8],
        out_shape=q.shape,
        keyAntiquantScaleOptional=ks,
        valueAntiquantScaleOptional=vs,
        numHeads=4,
        numKeyValueHeads=2,
        scaleValue=0.125,
        inputLayout="BNSD",
        **offsets,
    )
    f64 = lambda x: x.astype(np.float64).reshape(2, 32)  # noqa: E731
    zero = np.zeros((2, 32))
    antiquant = (f64(ks), f64(ko) if with_offset else zero, f64(vs), f64(vo) if with_offset else zero)
    magnitude = np.zeros((2, 4, 32))
    want = ifa_golden.attention(
        q[:, :, 0], list(k8), list(v8), scale=0.125, lengths=[50, 50], antiquant=antiquant, magnitude=magnitude
    )
    message = precision.failure(out[:, :, 0].astype(np.float64), want, "float16", floor=magnitude)
    assert message is None, message


def test_int4_key_value_decode_v2():
    """V2 reads an INT32 key/value list as INT4 (last dim x 8, TensorPreProcess): S = 1 with an
    fp16 query takes the IFA route, the values dequantised per channel; a portability warning says
    the nibble order is assumed."""
    values4 = [RNG.integers(-8, 8, (2, 2, 50, 32)).astype(np.int8) for _ in range(2)]
    packed = pack_int4
    q = RNG.standard_normal((2, 4, 1, 32)).astype(np.float16)
    scale = (RNG.random((2, 2, 1, 32)) * 0.2 + 0.05).astype(np.float16)
    out, _ = run_fia(
        version=2,
        query=q,
        key=[packed(values4[0])],
        value=[packed(values4[1])],
        out_shape=q.shape,
        antiquantScaleOptional=scale,
        numHeads=4,
        numKeyValueHeads=2,
        scaleValue=0.125,
        inputLayout="BNSD",
    )
    s = scale.astype(np.float64).reshape(2, 2, 32)
    magnitude = np.zeros((2, 4, 32))
    want = ifa_golden.attention(
        q[:, :, 0],
        list(values4[0]),
        list(values4[1]),
        scale=0.125,
        lengths=[50, 50],
        antiquant=(s[0], np.zeros((2, 32)), s[1], np.zeros((2, 32))),
        magnitude=magnitude,
    )
    message = precision.failure(out[:, :, 0].astype(np.float64), want, "float16", floor=magnitude)
    assert message is None, message


@pytest.mark.parametrize("s1", [1, 24], ids=["decode_ifa", "prefill_pfa"])
def test_shared_prefix_on_the_ifa_and_pfa_routes(s1):
    """A legacy GQA shape with a shared prefix is no RouteToFia call (CheckGqaFeatureSupport): S = 1
    takes the IFA route, S > 1 the PFA route; each batch attends to the prefix's first
    actualSharedPrefixLen rows, then to its own keys."""
    n, n2, d, s2, p, used = 4, 2, 128, 40, 20, 13
    q = RNG.standard_normal((2, n, s1, d)).astype(np.float16)
    k, v = (RNG.standard_normal((2, n2, s2, d)).astype(np.float16) for _ in range(2))
    kp, vp = (RNG.standard_normal((1, n2, p, d)).astype(np.float16) for _ in range(2))
    out, _ = run_fia(
        version=2,
        query=q,
        key=[k],
        value=[v],
        out_shape=q.shape,
        keySharedPrefixOptional=kp,
        valueSharedPrefixOptional=vp,
        actualSharedPrefixLenOptional=(used,),
        actualSeqLengthsKvOptional=(40, 25),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout="BNSD",
        preTokens=2147483647,
        nextTokens=2147483647,
    )
    kk, vv = (np.concatenate([np.repeat(x[:, :, :used], 2, axis=0), y], axis=2) for x, y in ((kp, k), (vp, v)))
    lengths = [used + 40, used + 25]
    if s1 == 1:
        magnitude = np.zeros((2, n, d))
        want = ifa_golden.attention(q[:, :, 0], list(kk), list(vv), scale=d**-0.5, lengths=lengths, magnitude=magnitude)
        message = precision.failure(out[:, :, 0].astype(np.float64), want, "float16", floor=magnitude)
    else:
        want = pfa_golden.attention(q, kk, vv, scale=d**-0.5, act_kv=lengths, nxt=pfa_golden.BIG)
        floor = golden.attention(q, kk, vv, scale=d**-0.5, kv_block=1024, act_kv=lengths).floor
        message = precision.failure(out.astype(np.float64), want, "float16", floor=floor)
    assert message is None, message


@pytest.mark.parametrize("s1", [1, 24], ids=["ifa_route", "pfa_route"])
def test_lse_on_the_ifa_and_pfa_routes(s1):
    """D 32 is no FIA-V3 head size: the IFA (S = 1) or PFA route writes attentionOut, a second pass
    softmaxLse = log(sum exp) + max of the fp32 scores (a portability warning says so)."""
    q = RNG.standard_normal((2, 4, s1, 32)).astype(np.float16)
    k, v = (RNG.standard_normal((2, 2, 70, 32)).astype(np.float16) for _ in range(2))
    out, lse = run_fia(
        query=q,
        key=[k],
        value=[v],
        out_shape=q.shape,
        lse_shape=(2, 4, s1, 1),
        numHeads=4,
        numKeyValueHeads=2,
        scaleValue=32**-0.5,
        inputLayout="BNSD",
    )
    want = golden.attention(q, k, v, scale=32**-0.5, kv_block=8192)
    _lse_meets(lse[..., 0], want.lse)
    assert np.isfinite(out.astype(np.float32)).all() and np.abs(out.astype(np.float32)).max() > 0


# The message of the rule that fails, in
# fused_infer_attention_score_tiling.cpp TilingProcess4PFA's order: CheckDequantParams (antiquantMode,
# then dequantScaleQuery with S > 16 as GetQueryS reads it, then without queryRope), ConvertAttrsPFA.
PFA_QUERY_QUANT = {  # (query S, layout, dequantScaleQuery given, other parameters, message)
    "antiquant_mode_first": (32, "BNSD", True, dict(antiquantMode=1), "antiquantMode 1"),
    "s_over_16": (32, "BNSD", True, {}, "query S 32 > 16"),
    "s_of_bsnd": (32, "BSND", True, {}, "query S 32 > 16"),
    "no_rope": (16, "BNSD", True, {}, "needs queryRope"),
    "query_quant_mode": (16, "BNSD", False, dict(queryQuantMode=1), "do not support query dequantisation"),
}


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("case", PFA_QUERY_QUANT)
def test_query_quantisation_on_the_a2_pfa_route(chip, case):
    """D 32 with S > 1 goes to the PFA tiling, which takes no query dequantisation (561002)."""
    s, layout, with_dequant, params, message = PFA_QUERY_QUANT[case]
    shape = (2, 8, s, 32) if layout == "BNSD" else (2, s, 8, 32)
    q = RNG.standard_normal(shape).astype(np.float16)
    k = RNG.standard_normal((2, 2, 40, 32) if layout == "BNSD" else (2, 40, 2, 32)).astype(np.float16)
    dequant = np.ones((2, 8, s), np.float32) if with_dequant else None
    with pytest.raises(ae.errors.TilingError, match=message) as failure:
        ae.ops.FusedInferAttentionScoreV4(
            q, [k], [k], numHeads=8, numKeyValueHeads=2, inputLayout=layout, dequantScaleQueryOptional=dequant, **params
        )
    assert failure.value.status == 561002


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_pse_shift_on_the_pfa_route(chip, dtype):
    """D 32 is no FIA-V3 head size: S 16 goes to the PFA tiling on either chip family, which takes
    FIA's pseShift (ConvertContextToParamsPFA; PromptFlashAttentionTilingV2), added after the scale
    as in PromptFlashAttentionV3 (an fp16 pse forces the A2/A3 high-precision template)."""
    b, n, s1, s2, d = 2, 4, 16, 40, 32
    q, k = pfa_v3.grid((b, n, s1, d), dtype), pfa_v3.grid((b, n, s2, d), dtype)
    v = RNG.standard_normal((b, n, s2, d)).astype(dtype)
    pse = pfa_v3.grid((1, n, s1, s2), dtype, spread=2)
    out, _ = run_fia(
        query=q, key=[k], value=[v], out_shape=q.shape, pseShiftOptional=pse, numHeads=n, scaleValue=0.125,
        inputLayout="BNSD", innerPrecise=1,
    )  # fmt: skip
    want = pfa_golden.attention(q, k, v, scale=0.125, sparse_mode=1, pse=pse, **pfa_v3.kind(chip, dtype, 1, True))
    precision.assert_meets(out, want, np.dtype(dtype).name)


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
@pytest.mark.parametrize("inner_precise", [0, 1, 2, 3])
def test_inner_precise_on_the_pfa_route(chip, inner_precise):
    """FIA hands innerPrecise to the PFA tiling: rows 3 and 17, every key masked, are 0 with the
    row-invalid correction (2, 3) and the average of V without it."""
    b, n, s1, s2, d = 1, 2, 24, 48, 32
    q, k = pfa_v3.grid((b, n, s1, d), np.float16), pfa_v3.grid((b, n, s2, d), np.float16)
    v = RNG.standard_normal((b, n, s2, d)).astype(np.float16)
    mask = RNG.random((s1, s2)) < 0.25
    mask[[3, 17]] = True
    out, _ = run_fia(
        query=q, key=[k], value=[v], out_shape=q.shape, attenMaskOptional=mask, numHeads=n, scaleValue=0.125,
        inputLayout="BNSD", sparseMode=1, innerPrecise=inner_precise,
    )  # fmt: skip
    fill = -pfa_v3.FLT_MAX if chip == "Ascend910_95" or inner_precise % 2 == 0 else -65504.0
    corrected = bool(inner_precise & 2)
    want = pfa_golden.attention(
        q, k, v, scale=0.125, sparse_mode=1, mask=mask[None], invalid_max=fill if corrected else None,
        **pfa_v3.kind(chip, np.float16, inner_precise, False),
    )  # fmt: skip
    precision.assert_meets(out, want, "float16")
    assert (np.asarray(out, np.float64)[0, :, [3, 17]] == 0).all() == corrected


def _fia_v3_case(qd=128, vd=128, layout="BNSD", **named):
    """A prefill the A2/A3 tiling sends to the FIA-V3 kernels: B 2, N 8 / 2, S1 64, S2 80."""
    q = np.zeros((2, 8, 64, qd), np.float16)
    k, v = np.zeros((2, 2, 80, qd), np.float16), np.zeros((2, 2, 80, vd), np.float16)
    out = (8, 2, 64, vd) if layout.endswith("NBSD") else (2, 8, 64, vd)
    return dict(query=q, key=[k], value=[v], out_shape=out, numHeads=8, numKeyValueHeads=2, inputLayout=layout, **named)


def _tnd_case(**named):
    """TND with two query runs (30 and 34 rows) over 80 key rows; innerPrecise 2 keeps the GQA call
    off the split-fuse route (CheckSpecConditions / IsUsingFAI want innerPrecise 0)."""
    q, k = np.zeros((64, 8, 128), np.float16), np.zeros((80, 2, 128), np.float16)
    return dict(query=q, key=[k], value=[k], out_shape=q.shape, numHeads=8, numKeyValueHeads=2, inputLayout="TND",
                actualSeqLengthsOptional=(30, 64), innerPrecise=2, **named)  # fmt: skip


MASK = np.zeros((64, 80), np.bool_)
PREFIX = np.zeros((1, 2, 16, 128), np.float16)
# case -> (call, the message of the CheckMultiParaConsistency rule, …_tiling_check_consistency.cpp)
FIA_V3_CONSISTENCY = {
    "kv_lengths_size": (_tnd_case(actualSeqLengthsKvOptional=(40, 60, 80)), "actualSeqLengthsKv holds 3 values"),
    "query_rope": (
        _fia_v3_case(
            queryRopeOptional=np.zeros((2, 8, 32, 64), np.float16), keyRopeOptional=np.zeros((2, 2, 80, 64), np.float16)
        ),
        "queryRope",
    ),  # fmt: skip
    "pse_shape": (_fia_v3_case(192, pseShiftOptional=np.zeros((2, 8, 32, 80), np.float16)), "does not cover"),
    "mask_rank": (_fia_v3_case(attenMaskOptional=np.zeros((80,), np.bool_)), "attenMask has 1 dims"),
    "mask_shape": (_fia_v3_case(attenMaskOptional=np.zeros((2, 32, 80), np.bool_)), "does not fit sparseMode 0"),
    "mask_causal_size": (
        _fia_v3_case(attenMaskOptional=np.zeros((1024, 1024), np.bool_), sparseMode=3),
        "does not fit sparseMode 3",
    ),
    "tokens_negative": (_fia_v3_case(attenMaskOptional=MASK, preTokens=-1, nextTokens=-1), "are both negative"),
    "tokens_window": (_fia_v3_case(attenMaskOptional=MASK, preTokens=-10, nextTokens=5), "is below preTokens"),
    "prefix_shapes": (
        _fia_v3_case(
            192, keySharedPrefixOptional=np.zeros((1, 2, 16, 192), np.float16), valueSharedPrefixOptional=PREFIX
        ),
        "valueSharedPrefix [1, 2, 16, 128]",
    ),  # fmt: skip
    "prefix_batch": (
        _fia_v3_case(
            layout="BNSD_NBSD",
            keySharedPrefixOptional=np.zeros((2, 2, 16, 128), np.float16),
            valueSharedPrefixOptional=np.zeros((2, 2, 16, 128), np.float16),
        ),
        "batch is 2",
    ),  # fmt: skip
    "prefix_len_shape": (
        _fia_v3_case(
            layout="BNSD_NBSD",
            keySharedPrefixOptional=PREFIX,
            valueSharedPrefixOptional=PREFIX,
            actualSharedPrefixLenOptional=(12, 12),
        ),
        "it must be [1]",
    ),  # fmt: skip
}


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("case", FIA_V3_CONSISTENCY)
def test_fia_v3_consistency_rules(chip, case):
    """FiaTilingCheck::CheckMultiParaConsistency and FiaInfoParser::GetSystemPrefix on the FIA-V3
    route: each failure is the tiling's 561002, with the rule's message."""
    call, message = FIA_V3_CONSISTENCY[case]
    with pytest.raises(ae.errors.TilingError, match=re.escape(message)) as failure:
        run_fia(version=4, **call)
    assert failure.value.status == 561002


def _tnd_sink_call(sink):
    """TND bf16 with quantScale2: off RouteToFia (CheckGqaFeatureSupport refuses quantScale2) and
    IsUsingFAI (a sink), so A2/A3 take the PFA route; batches of 40 and 24 query/key rows."""
    t, n, n2, d = 64, 4, 2, 128
    q = RNG.standard_normal((t, n, d)).astype(BF16)
    k, v = (RNG.standard_normal((t, n2, d)).astype(BF16) for _ in range(2))
    out, lse = run_fia(
        query=q,
        key=[k],
        value=[v],
        out_shape=q.shape,
        lse_shape=(t, n, 1),
        quantScale2Optional=np.ones(1, np.float32),
        learnableSinkOptional=sink,
        actualSeqLengthsOptional=(40, 64),
        actualSeqLengthsKvOptional=(40, 64),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=d**-0.5,
        inputLayout="TND",
    )
    return (q, k, v), out, lse


def test_sink_on_the_a2_pfa_tnd_route():
    """A2/A3 PFA route, TND: the base-API var-len kernels take the sink
    (prompt_flash_attention_s1s2_bns1_mla_baseapi.h: after the last key block the row sum gains
    exp(sink - max), the max does not see it); softmaxLse (the second pass) includes it."""
    sink = (RNG.standard_normal(4) * 2 + 1).astype(BF16)
    (q, k, v), out, lse = _tnd_sink_call(sink)
    for r0, r1 in ((0, 40), (40, 64)):
        bnsd = [x[r0:r1].transpose(1, 0, 2)[None] for x in (q, k, v)]
        want = golden.attention(*bnsd, scale=128**-0.5, kv_block=128, sink=sink.astype(np.float32))
        _meets(out[r0:r1].transpose(1, 0, 2)[None], want, BF16)
        _lse_meets(lse[r0:r1, :, 0].T[None], want.lse)


def test_sink_on_the_a2_pfa_tnd_route_moves_the_output():
    """The same call without the sink differs (the sink test above can fail)."""
    _, with_sink, _ = _tnd_sink_call(np.full(4, 4, BF16))
    _, without, _ = _tnd_sink_call(None)
    assert np.abs(with_sink.astype(np.float32) - without.astype(np.float32)).max() > 0.1


def _ignored_sink_case(s1, d):
    n = 4
    q = RNG.standard_normal((1, n, s1, d)).astype(np.float16)
    k, v = (RNG.standard_normal((1, 2, 48, d)).astype(np.float16) for _ in range(2))
    common = dict(query=q, key=[k], value=[v], out_shape=q.shape, lse_shape=(1, n, s1, 1), numHeads=n,
                  numKeyValueHeads=2, scaleValue=0.125, inputLayout="BNSD")  # fmt: skip
    return common, np.full(n, 5, BF16)


@pytest.mark.parametrize(
    "chip,s1,d,where",
    [
        ("Ascend910B", 1, 32, "the IFA kernels"),
        ("Ascend910_93", 16, 32, "the PFA kernels outside TND"),
        ("Ascend910_95", 16, 128, "Ascend910_95's kernels"),
        ("Ascend910_95", 1, 64, "Ascend910_95's kernels"),
    ],
    indirect=["chip"],
)
def test_sink_is_ignored_where_the_kernels_do_not_take_it(chip, s1, d, where, capfd):
    """The A2/A3 IFA kernels (fused_infer_attention_score.cpp passes them no learnableSink), the
    A2/A3 PFA kernels outside TND (prompt_flash_attention_arch32.h hands it to the TND base-API
    kernels only) and both Ascend910_95 families (fused_infer_attention_score_apt.cpp passes it to
    neither; the 8.5 arch35 tilings never read it): the call succeeds, attentionOut and softmaxLse
    are those without the sink, bit for bit, and a warning says the sink was ignored."""
    common, sink = _ignored_sink_case(s1, d)
    capfd.readouterr()
    out, lse = run_fia(learnableSinkOptional=sink, **common)
    assert f"learnableSink is ignored: {where}" in capfd.readouterr().err
    plain, plain_lse = run_fia(**common)
    assert np.array_equal(out.view(np.uint16), plain.view(np.uint16))
    assert np.array_equal(lse.view(np.uint32), plain_lse.view(np.uint32))


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize(
    "layout,cache_layout", [("BNSD", None), ("BSH", None), ("BSND", None), ("BNSD", "BnNBsD"), ("BSH", "BnBsH")]
)
def test_arch35_rope_takes_the_pfa_rope_kernels(chip, dtype, layout, cache_layout):
    """Ascend910_95, D 128 + rope 64 (PromptFlashAttentionTilingV2 CheckRope: PFARope): the kernels
    take [q, qr] against [k, kr] as one head of D 192 (config DAligned192_DVAligned128), so the
    numerics are the arch35 PFA ones over the joined heads; causal, ragged key lengths, dense or
    paged (the keyRope cache gathered like the key's); softmaxLse includes the rope scores."""
    b, n, n2, s1, s2, d, bs = 2, 4, 2, 40, 200, 128, 128
    act_kv = [200, 90]
    q = RNG.standard_normal((b, n, s1, d)).astype(dtype)
    qr = RNG.standard_normal((b, n, s1, 64)).astype(dtype)
    k, v = (RNG.standard_normal((b, n2, s2, d)).astype(dtype) for _ in range(2))
    kr = RNG.standard_normal((b, n2, s2, 64)).astype(dtype)
    to = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    to["BSH"] = lambda x: x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)
    keys, paged = dict(key=[to[layout](k)], value=[to[layout](v)], keyRopeOptional=to[layout](kr)), {}
    if cache_layout is not None:
        caches = [_paged(x, bs, cache_layout, np.random.default_rng(5)) for x in (k, v, kr)]
        keys = dict(key=[caches[0][0]], value=[caches[1][0]], keyRopeOptional=caches[2][0])
        paged = dict(blockTableOptional=caches[0][1], blockSize=bs)
    out, lse = run_fia(
        version=3,
        query=to[layout](q),
        queryRopeOptional=to[layout](qr),
        out_shape=to[layout](q).shape,
        lse_shape=(b, n, s1, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        actualSeqLengthsKvOptional=tuple(act_kv),
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=192**-0.5,
        inputLayout=layout,
        sparseMode=3,
        **keys,
        **paged,
    )
    back = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(0, 2, 1, 3)}
    back["BSH"] = lambda x: x.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    kw = dict(scale=192**-0.5, sparse_mode=3, act_kv=act_kv)
    joined_q, joined_k = np.concatenate([q, qr], axis=-1), np.concatenate([k, kr], axis=-1)
    want = pfa_golden.attention(joined_q, joined_k, v, high_precision=True, **kw)
    fia_want = golden.attention(q, k, v, kv_block=512, has_mask=True, rope=(qr, kr), **kw)
    message = precision.failure(back[layout](out).astype(np.float64), want, np.dtype(dtype).name, floor=fia_want.floor)
    assert message is None, message
    _lse_meets(lse[..., 0], fia_want.lse)
    without_rope = golden.attention(q, k, v, kv_block=512, has_mask=True, **kw)
    assert precision.failure(back[layout](out).astype(np.float64), without_rope.out, np.dtype(dtype).name) is not None


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("given", [False, True], ids=["own_lengths", "actual_lengths"])
def test_key_value_list_on_the_pfa_route(chip, layout, given):
    """A key/value tensor list on the PFA route (D 32, S 16): CheckKvPFA (A2/A3) / CheckTensorList
    (Ascend910_95) take one [1, ...] tensor per batch; S2 is the longest, each batch's key length
    its tensor's S unless actualSeqLengthsKv gives one (ParseActualSeqLengths)."""
    b, n, n2, s1, d = 2, 4, 2, 16, 32
    sizes, act_kv = (40, 70), ((31, 70) if given else (40, 70))
    q = pfa_v3.grid((b, n, s1, d), np.float16)
    ks = [pfa_v3.grid((1, n2, s, d), np.float16) for s in sizes]
    vs = [RNG.standard_normal((1, n2, s, d)).astype(np.float16) for s in sizes]
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    out, _ = run_fia(
        query=to(q),
        key=[to(k) for k in ks],
        value=[to(v) for v in vs],
        out_shape=to(q).shape,
        actualSeqLengthsKvOptional=act_kv if given else None,
        numHeads=n,
        numKeyValueHeads=n2,
        scaleValue=0.125,
        inputLayout=layout,
    )
    k, v = (np.concatenate([np.pad(x, ((0, 0), (0, 0), (0, 70 - x.shape[2]), (0, 0))) for x in xs]) for xs in (ks, vs))
    want = pfa_golden.attention(
        q, k, v, scale=0.125, act_kv=list(act_kv), nxt=pfa_golden.BIG, **pfa_v3.kind(chip, np.float16, 1, False)
    )
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    precision.assert_meets(back, want, "float16")


@pytest.mark.parametrize("chip", ["Ascend910B", "Ascend910_93", "Ascend910_95"], indirect=True)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
@pytest.mark.parametrize("which", ["key", "value"])
def test_key_value_list_tensor_of_more_dimensions(chip, layout, which, capfd):
    """CheckKvPFA's GetCumulativeKeyValueSIn{BSH,BNSD,BSND} (A2/A3) and CheckTensorList (Ascend910_95)
    compare the dimensions the layout names, never the rank, and no other check reads a later list
    tensor: a second tensor with a trailing axis of 2 runs, the kernels walking its data address as
    the layout's shape with its own S (the first half of its memory). A 5-D key's shape overruns
    the kernels' four-element shape array: a portability warning (inferred.list_key_rank)."""
    b, n, n2, s1, d = 2, 4, 2, 16, 32
    sizes = (40, 70)
    q = pfa_v3.grid((b, n, s1, d), np.float16)
    ks = [pfa_v3.grid((1, n2, s, d), np.float16) for s in sizes]
    vs = [RNG.standard_normal((1, n2, s, d)).astype(np.float16) for s in sizes]
    to = lambda x: pfa_v3.to_layout(x, layout)  # noqa: E731
    wide = np.stack([to((ks if which == "key" else vs)[1])] * 2, axis=-1)
    wide[..., 1] = -wide[..., ::-1, 0]  # on the key grid too: its scores stay exact in float16
    listed = {"key": [to(k) for k in ks], "value": [to(v) for v in vs]}
    listed[which][1] = wide
    out, _ = run_fia(
        query=to(q), out_shape=to(q).shape, numHeads=n, numKeyValueHeads=n2, scaleValue=0.125, inputLayout=layout,
        **listed,
    )  # fmt: skip
    walked = wide.reshape(-1)[: n2 * sizes[1] * d].reshape(to(vs[1]).shape)
    assert not np.array_equal(walked, wide[..., 0])
    bnsd = walked if layout == "BNSD" else walked.reshape(1, sizes[1], n2, d).transpose(0, 2, 1, 3)
    (ks if which == "key" else vs)[1] = bnsd
    k, v = (np.concatenate([np.pad(x, ((0, 0), (0, 0), (0, 70 - x.shape[2]), (0, 0))) for x in xs]) for xs in (ks, vs))
    want = pfa_golden.attention(
        q, k, v, scale=0.125, act_kv=list(sizes), nxt=pfa_golden.BIG, **pfa_v3.kind(chip, np.float16, 1, False)
    )
    back = out if layout == "BNSD" else out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)
    precision.assert_meets(back, want, "float16")
    assert ("inferred.list_key_rank" in capfd.readouterr().err) == (which == "key" and wide.ndim > 4)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_arch35_tnd_rope_prefill(chip, dtype):
    """Ascend910_95, TND MLA prefill (D 128 + rope 64, value D 128, causal): PFARope over the joined
    heads, each batch's rows against its own keys (cumulative lengths)."""
    n, d = 4, 128
    q_lens = [24, 40]
    t = sum(q_lens)
    q, k, v = (RNG.standard_normal((t, n, d)).astype(dtype) for _ in range(3))
    qr, kr = (RNG.standard_normal((t, n, 64)).astype(dtype) for _ in range(2))
    ends = tuple(np.cumsum(q_lens).tolist())
    out, lse = run_fia(
        version=3,
        query=q,
        key=[k],
        value=[v],
        queryRopeOptional=qr,
        keyRopeOptional=kr,
        out_shape=q.shape,
        lse_shape=(t, n, 1),
        attenMaskOptional=np.triu(np.ones((2048, 2048), bool), 1),
        actualSeqLengthsOptional=ends,
        actualSeqLengthsKvOptional=ends,
        numHeads=n,
        scaleValue=192**-0.5,
        inputLayout="TND",
        sparseMode=3,
    )
    for r0, r1 in zip((0,) + ends[:-1], ends):
        bnsd = lambda x: x[r0:r1].transpose(1, 0, 2)[None]  # noqa: E731
        kw = dict(scale=192**-0.5, sparse_mode=3)
        joined_q, joined_k = (np.concatenate([bnsd(x), bnsd(r)], axis=-1) for x, r in ((q, qr), (k, kr)))
        want = pfa_golden.attention(joined_q, joined_k, bnsd(v), high_precision=True, **kw)
        fia_want = golden.attention(
            bnsd(q), bnsd(k), bnsd(v), kv_block=512, has_mask=True, rope=(bnsd(qr), bnsd(kr)), **kw
        )
        got = bnsd(out).astype(np.float64)
        message = precision.failure(got, want, np.dtype(dtype).name, floor=fia_want.floor)
        assert message is None, message
        _lse_meets(lse[r0:r1, :, 0].T[None], fia_want.lse)
