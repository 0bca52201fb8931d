"""FusedInferAttentionScore with an INT8 key/value, an attenMask and query S > 1 on Ascend910_95: the
speculative-decode (MTP) path of an int8 KV cache.

TilingFusedInferAttentionScoreV2 sends the call to IFATilingV2, which hands FIA's sparseMode,
preTokens and nextTokens to its antiquant kernel (ProcessAttenMaskSparsePFA, SetAttenMaskCompressMode,
IFATilingDataconvert). The kernel (BaseApi::FlashAttentionScoreAntiquantKernel over
infer_flash_attention_kvcache.h / infer_flash_attention_sparse.h / attenmask.h) walks each batch's
rows [max(-next, 0), min(S1, S2 + pre)) in blocks of 16 (no G·S merge with a mask); the block at off
takes the keys [max(off - pre, 0) aligned down to the s2 base (1024 for D 32), min(off + rows + next,
S2)). Modes 0/1 mask within it by the user's mask only; modes 2-4 read the 2048 x 2048 template at
the band's offsets, i.e. mask by the band (per batch: mode 3 next = S2 - S1, mode 4 pre - S2 + S1 and
next + S2 - S1). Rows no block reaches stay 0, their softmaxLse +inf.

References: float64 attention (tests/golden/fused_infer_attention_score.py) over the key and value
dequantised as the arch35 kernels do (test_incre_flash_attention_arch35.arch35_dequant); the block
windows of the token cases are written out below from the source, not taken from the emulator.
No quantity is rounded anew here: the dequantisation and softmax are the roundings the IFA arch35
tests already tie."""

import numpy as np
import pytest

import aclnn_emu as ae

import precision
from golden import fused_infer_attention_score as golden
from test_fused_infer_attention_score import BF16, _lse_meets, run_fia
from test_incre_flash_attention import paged_cache
from test_incre_flash_attention_arch35 import int8_case, to_nz

ARCH35 = pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
RNG = np.random.default_rng(20261129)
KV_BLOCK = 1024  # SetfaRunBaseSize's s2 base for D 32 without pse
TEMPLATE = np.triu(np.ones((2048, 2048), bool), 1)  # the documented compressed mask (modes 2-4)


def _layout(x, layout):
    """[B, N, S, D] in ``layout``."""
    if layout == "BNSD":
        return x
    x = x.transpose(0, 2, 1, 3)
    return x if layout == "BSND" else x.reshape(x.shape[0], x.shape[1], -1)


def _from_layout(x, layout, heads):
    if layout == "BNSD":
        return x
    if layout == "BSH":
        x = x.reshape(x.shape[0], x.shape[1], heads, -1)
    return x.transpose(0, 2, 1, 3)


def _run(q, k8, v8, scale, offset, layout="BNSD", lengths=None, **named):
    """(attentionOut [B, N, S, D], softmaxLse [B, N, S]) of a V4 call with per-channel parameters."""
    b, n, s, _ = q.shape
    if lengths is not None:
        named["actualSeqLengthsKvOptional"] = lengths
    out, lse = run_fia(
        query=_layout(q, layout), key=[_layout(k8, layout)], value=[_layout(v8, layout)],
        out_shape=_layout(q, layout).shape, lse_shape=(b, n, s, 1), numHeads=n, numKeyValueHeads=k8.shape[1],
        scaleValue=0.125, inputLayout=layout, antiquantScaleOptional=scale, antiquantOffsetOptional=offset, **named,
    )  # fmt: skip
    return _from_layout(out, layout, n), lse[..., 0]


def _meets(out, lse, want, dtype):
    """attentionOut to CANN's standard, judged by absolute error below the golden's floor (sum |P V| / l:
    the output's own cancellation scale), and softmaxLse."""
    message = precision.failure(out.astype(np.float64), want.out, dtype, floor=want.floor)
    assert message is None, f"attentionOut: {message}"
    _lse_meets(lse, want.lse)


@ARCH35
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
def test_speculative_decode_causal(chip, dtype, layout):
    """Sparse mode 3 with the 2048 x 2048 mask, 4 draft tokens: row i of batch b sees keys up to
    S2_b - 4 + i; batch 1 has 33 of its 60 keys."""
    k8, v8, scale, offset, k, v = int8_case(dtype, (2, 2, 60, 32), per_channel=True)
    q = RNG.standard_normal((2, 8, 4, 32)).astype(dtype)
    lengths = (60, 33)
    out, lse = _run(q, k8, v8, scale, offset, layout, lengths, sparseMode=3, attenMaskOptional=TEMPLATE)
    want = golden.attention(q, k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=3, act_kv=lengths, has_mask=True)
    _meets(out, lse, want, dtype)


@ARCH35
@pytest.mark.parametrize("s", [2, 8])
def test_speculative_decode_draft_lengths(chip, s):
    """Sparse mode 3 for 2 and 8 draft tokens against an fp16 cache of 50 keys."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (1, 2, 50, 32), per_channel=True, seed=4)
    q = RNG.standard_normal((1, 4, s, 32)).astype(np.float16)
    out, lse = _run(q, k8, v8, scale, offset, sparseMode=3, attenMaskOptional=TEMPLATE)
    want = golden.attention(q, k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=3, has_mask=True)
    _meets(out, lse, want, np.float16)


@ARCH35
@pytest.mark.parametrize("mode", [0, 1])
def test_explicit_mask(chip, mode):
    """Modes 0 (default tokens) and 1: the user's [B, S1, S2] mask alone, read at each row and key;
    batch 0's row 1 is fully masked (an average of its keys, softmaxLse +inf)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 40, 32), per_channel=True, seed=7)
    q = RNG.standard_normal((2, 4, 6, 32)).astype(np.float16)
    mask = RNG.random((2, 6, 40)) < 0.3
    mask[..., 34:] |= np.triu(np.ones((6, 6), bool), 1)  # the draft tokens' causal corner
    mask[0, 1] = True
    out, lse = _run(q, k8, v8, scale, offset, sparseMode=mode, attenMaskOptional=mask)
    want = golden.attention(q, k, v, scale=0.125, kv_block=KV_BLOCK, mask=mask, masked_lse_inf=True)
    assert np.isposinf(lse[0, :, 1]).all()
    _meets(out, lse, want, np.float16)


@ARCH35
@pytest.mark.parametrize("mode, pre, nxt", [(2, 0, 0), (4, 3, 1)], ids=["left_up", "band"])
def test_compressed_modes(chip, mode, pre, nxt):
    """Mode 2 (left-up causal: key j for row i when j <= i) and mode 4 (band anchored at the bottom
    right: S2_b - S1 + i - pre <= j <= S2_b - S1 + i + next), ragged key lengths."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 48, 32), per_channel=True, seed=9)
    q = RNG.standard_normal((2, 4, 5, 32)).astype(np.float16)
    lengths = (48, 20)
    out, lse = _run(
        q, k8, v8, scale, offset, lengths=lengths, sparseMode=mode, preTokens=pre, nextTokens=nxt,
        attenMaskOptional=TEMPLATE,
    )  # fmt: skip
    want = golden.attention(
        q, k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=mode, pre=pre, nxt=nxt, act_kv=lengths, has_mask=True
    )
    _meets(out, lse, want, np.float16)


def _block_reference(q, k, v, mask, pre, nxt, s2_base=KV_BLOCK):
    """Mode 0 with tokens: rows [max(-nxt, 0), min(S1, S2 + pre)) in blocks of 16 from the first
    row; each block over [max(off - pre, 0) // s2_base * s2_base, min(off + rows + nxt, S2)),
    masked by the user's mask only; rows outside stay 0 with softmaxLse +inf."""
    s1, s2 = q.shape[2], k.shape[2]
    allowed = np.zeros((s1, s2), bool)
    first, end = max(-nxt, 0), min(s1, s2 + pre)
    for off in range(first, end, 16):
        rows = min(16, end - off)
        k0 = max(off - pre, 0) // s2_base * s2_base
        allowed[off : off + rows, k0 : min(off + rows + nxt, s2)] = True
    full = golden.attention(q, k, v, scale=0.125, kv_block=s2_base, mask=mask | ~allowed[None], masked_lse_inf=True)
    walked = allowed.any(axis=1)
    full.out[:, :, ~walked] = 0
    full.floor[:, :, ~walked] = 0
    full.lse[:, :, ~walked] = np.inf
    return full


@ARCH35
def test_tokens_bound_blocks_not_elements(chip):
    """Mode 0 with preTokens 2 and nextTokens 0: the kernel cuts key blocks, not elements. 40 rows
    in blocks of 16 see the keys [0, 16), [0, 32), [0, 40) (the s2 base 1024 rounds the start to
    0) through an all-visible mask: a row sees keys beyond itself and more than 2 before it."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (1, 2, 64, 32), per_channel=True, seed=12)
    q = RNG.standard_normal((1, 4, 40, 32)).astype(np.float16)
    mask = np.zeros((1, 40, 64), bool)
    out, lse = _run(q, k8, v8, scale, offset, sparseMode=0, preTokens=2, nextTokens=0, attenMaskOptional=mask)
    _meets(out, lse, _block_reference(q, k, v, mask, 2, 0), np.float16)


@ARCH35
def test_negative_next_tokens_skip_rows(chip):
    """Mode 0 with nextTokens -2: the walk starts at row 2 (rows 0 and 1 stay 0, softmaxLse +inf),
    reading the mask at the rows' own indices; the block [2, 8) takes the keys [0, 6)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 30, 32), per_channel=True, seed=13)
    q = RNG.standard_normal((2, 4, 8, 32)).astype(np.float16)
    mask = RNG.random((2, 8, 30)) < 0.25
    mask[:, :, 0] = False  # every walked row keeps a key
    out, lse = _run(q, k8, v8, scale, offset, sparseMode=0, preTokens=10, nextTokens=-2, attenMaskOptional=mask)
    assert (out[:, :, :2] == 0).all() and np.isposinf(lse[:, :, :2]).all()
    _meets(out, lse, _block_reference(q, k, v, mask, 10, -2), np.float16)


@ARCH35
@pytest.mark.parametrize("s", [1, 3])
def test_paged_nz_cache_lse(chip, s):
    """softmaxLse over an INT8 5-D (NZ) paged cache [blocks, N2, D / 16, blockSize, 16]: the NZ layout
    is a copy flag of the antiquant kernel (paLayoutType, CopyKVPaNz), whose SoftmaxLseCopyOut writes
    the lse as for ND; with S 3 under sparse mode 3 (the 2048 x 2048 mask)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 70, 32), per_channel=True, seed=15)
    lengths = (70, 38)
    kc, vc, table = paged_cache(k8, v8, 32, True, lengths, rng=RNG)
    q = RNG.standard_normal((2, 4, s, 32)).astype(np.float16)
    masked = dict(sparseMode=3, attenMaskOptional=TEMPLATE) if s > 1 else {}
    out, lse = run_fia(
        query=q, key=[to_nz(kc)], value=[to_nz(vc)], out_shape=q.shape, lse_shape=(2, 4, s, 1), numHeads=4,
        numKeyValueHeads=2, scaleValue=0.125, inputLayout="BNSD", antiquantScaleOptional=scale,
        antiquantOffsetOptional=offset, blockTableOptional=table, blockSize=32, actualSeqLengthsKvOptional=lengths,
        **masked,
    )  # fmt: skip
    want = golden.attention(
        q, k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=3 if s > 1 else 0, act_kv=lengths, has_mask=s > 1
    )
    _meets(out, lse[..., 0], want, np.float16)


@ARCH35
@pytest.mark.parametrize("layout", ["BNSD", "BSH"])
def test_speculative_decode_query_lengths(chip, layout):
    """The query's actualSeqLengths (4 and 2 draft tokens of S 4) under sparse mode 3: batch b's rows
    end at act_q[b] (later rows 0, softmaxLse +inf) and its causal corner is S2_b - act_q[b]."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 60, 32), per_channel=True, seed=17)
    q = RNG.standard_normal((2, 4, 4, 32)).astype(np.float16)
    lengths, act_q = (60, 41), (4, 2)
    out, lse = _run(
        q, k8, v8, scale, offset, layout, lengths, sparseMode=3, attenMaskOptional=TEMPLATE,
        actualSeqLengthsOptional=act_q,
    )  # fmt: skip
    want = golden.attention(
        q, k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=3, act_q=act_q, act_kv=lengths, has_mask=True
    )
    assert (out[1, :, 2:] == 0).all() and np.isposinf(lse[1, :, 2:]).all()
    _meets(out, lse, want, np.float16)


@ARCH35
def test_query_lengths_without_mask(chip):
    """Without a mask the query's lengths still end each batch's rows (the kernel's actualS1Size)."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 40, 32), per_channel=True, seed=19)
    q = RNG.standard_normal((2, 4, 5, 32)).astype(np.float16)
    act_q = (3, 5)
    out, lse = _run(q, k8, v8, scale, offset, actualSeqLengthsOptional=act_q)
    want = golden.attention(q, k, v, scale=0.125, kv_block=KV_BLOCK, act_q=act_q)
    assert (out[0, :, 3:] == 0).all()
    _meets(out, lse, want, np.float16)


def _moved(x, firsts, sign):
    """[B, N, S, ...] with batch b's rows rolled by sign * firsts[b] (the padded rows to the front: -1)."""
    return np.stack([np.roll(x[i], sign * f, axis=1) for i, f in enumerate(firsts)])


@ARCH35
@pytest.mark.parametrize(
    "layout, mode, pad",
    [("BNSD", 3, 1), ("BSH", 3, 1), ("BNSD", 0, 3), ("BSND", None, 2)],
    ids=["causal", "causal_bsh", "mask", "no_mask"],
)
def test_speculative_decode_query_padding(chip, layout, mode, pad):
    """queryPaddingSize beside the query's lengths (IFATilingV2 CheckSupportQLeftPadding): batch b's
    rows are the act_q[b] rows ending ``pad`` rows before S1 (InitQueryLeftPaddingSize; none when they
    do not fit), read, masked and written there: sparse mode 3's band in the batch's own rows and
    keys, mode 0's mask at the padded rows (ComputeOffsetForNoCompress adds queryLeftPaddingSize);
    softmaxLse at the same rows (its offset adds it too), the other rows 0 and +inf. Golden over the
    rows moved to the front, moved back; the unpadded call's rows fail."""
    k8, v8, scale, offset, k, v = int8_case(np.float16, (2, 2, 60, 32), per_channel=True, seed=21)
    s1, lengths, act_q = 6, (60, 41), (4, 2)
    q = RNG.standard_normal((2, 4, s1, 32)).astype(np.float16)
    fits = [s1 - n - pad >= 0 for n in act_q]
    firsts = [s1 - n - pad if ok else 0 for n, ok in zip(act_q, fits)]
    rows = [n if ok else 0 for n, ok in zip(act_q, fits)]
    masking = dict(sparseMode=3, attenMaskOptional=TEMPLATE) if mode == 3 else {}
    mask = None
    if mode == 0:
        mask = RNG.random((2, s1, 60)) < 0.3
        mask[:, :, 0] = False  # every row keeps a key
        masking = dict(sparseMode=0, attenMaskOptional=mask)
    out, lse = _run(
        q, k8, v8, scale, offset, layout, lengths, actualSeqLengthsOptional=act_q,
        queryPaddingSizeOptional=np.array([pad], np.int64), **masking,
    )  # fmt: skip
    moved_mask = None if mask is None else _moved(mask[:, None], firsts, -1)[:, 0]
    want = golden.attention(
        _moved(q, firsts, -1), k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=mode or 0, act_q=rows,
        act_kv=lengths, mask=moved_mask, has_mask=mode is not None, masked_lse_inf=True,
    )  # fmt: skip
    want.out[:], want.floor[:], want.lse[:] = (_moved(x, firsts, 1) for x in (want.out, want.floor, want.lse))
    if not fits[0]:
        assert (out[0] == 0).all() and np.isposinf(lse[0]).all()
    _meets(out, lse, want, np.float16)
    unpadded = golden.attention(
        q, k, v, scale=0.125, kv_block=KV_BLOCK, sparse_mode=mode or 0, act_q=act_q, act_kv=lengths, mask=mask,
        has_mask=mode is not None, masked_lse_inf=True,
    )  # fmt: skip
    assert precision.failure(out.astype(np.float64), unpadded.out, "float16", floor=unpadded.floor) is not None


@ARCH35
def test_query_padding_with_a_paged_cache_fails(chip):
    """ProcessQPaddingSize: queryPaddingSize beside page attention (query S > 1) is a tiling failure."""
    k8, v8, scale, offset, _, _ = int8_case(np.float16, (2, 2, 64, 32), per_channel=True, seed=23)
    kc, vc, table = paged_cache(k8, v8, 32, True, (64, 40))
    q = RNG.standard_normal((2, 4, 3, 32)).astype(np.float16)
    with pytest.raises(ae.errors.AclnnError) as failure:
        run_fia(
            query=q, key=[kc], value=[vc], out_shape=q.shape, numHeads=4, numKeyValueHeads=2, scaleValue=0.125,
            inputLayout="BNSD", antiquantScaleOptional=scale, antiquantOffsetOptional=offset, blockTableOptional=table,
            blockSize=32, actualSeqLengthsKvOptional=(64, 40), actualSeqLengthsOptional=(3, 3),
            queryPaddingSizeOptional=np.array([0], np.int64),
        )  # fmt: skip
    assert failure.value.status == 561002 and "left padding is not supported" in str(failure.value)
