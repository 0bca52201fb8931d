"""aclnnIncreFlashAttentionV4 on the paths the 8.5 source takes past its doc, against the float64
golden: a query S in [2, 16] (ops/flash_attention/incre/speculative.py), a batched key whose head
count differs from numKeyValueHeads, a rank-5 quantScale2, and the 5-D key's tiling failures
(ops/flash_attention/incre/kv_nz.py). The addressing each test applies to the golden's inputs is the
kernels' (incre_flash_attention_preload.h: tensorACoreOffset, tensorBCorePreOffset,
attenMaskCoreOffset), written out here, not taken from aclnn_emu.
"""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import DataType
from aclnn_emu.meta import TensorList
from golden import incre_flash_attention as golden
from test_incre_flash_attention import dev, expect, meets, run_ifa, values

BF16 = np.dtype(ml_dtypes.bfloat16)
SENTINEL = 7.0


def call(
    query,
    key,
    value,
    *,
    layout,
    heads,
    kv_heads=0,
    actual=None,
    mask=None,
    pse=None,
    aq=None,
    table=None,
    block_size=0,
    out_shape=None,
    out_dtype=None,
):
    """Both phases on raw tensors; attentionOut starts as SENTINEL everywhere. Returns it."""
    out_dtype = np.dtype(out_dtype or query.dtype)
    out = dev(np.full(out_shape or query.shape, SENTINEL, out_dtype))
    ae.run(
        "IncreFlashAttentionV4",
        dev(query),
        TensorList([dev(key)]),
        TensorList([dev(value)]),
        dev(pse),
        dev(mask),
        None if actual is None else tuple(actual),
        None,
        None,
        None,
        None,
        None,
        dev(aq),
        None,
        dev(table, DataType.ACL_INT32),
        None,
        heads,
        0.125,
        layout,
        kv_heads,
        block_size,
        1,
        out,
    )
    return ae.numpy(out)


def decode_rows(query, batch, heads, d):
    """The query rows the S = 1 kernels read: row (b, n) at (b N + n) D of the flat query."""
    return query.reshape(-1)[: batch * heads * d].reshape(batch, heads, d)


# -- query S in [2, 16] ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["fp16", "bf16"])
def test_speculative_query_runs_the_decode_kernels(dtype, capfd):
    """BNSD, S = 3: row (b, n) of the flat query against batch b's keys; every batch reads the mask
    from its first element (attenMaskSize stays 0); attentionOut past B N D keeps its contents."""
    b, n, n2, s, d, s2 = 2, 4, 2, 3, 32, 20
    query = values((b, n, s, d), dtype)
    k, v = values((b, n2, s2, d), dtype), values((b, n2, s2, d), dtype)
    mask = (np.random.default_rng(3).random((b, 1, s, s2)) < 0.3).astype(np.uint8)
    out = call(query, k, v, layout="BNSD", heads=n, kv_heads=n2, actual=(20, 9), mask=mask)
    assert "ignore S" in capfd.readouterr().err
    first_row = np.broadcast_to(mask.reshape(-1)[:s2], (b, s2))
    expected = expect(
        decode_rows(query, b, n, d),
        list(k),
        list(v),
        scale=0.125,
        lengths=[20, 9],
        mask=first_row,
        small_dtype=np.dtype(dtype).name,
    )
    flat = out.reshape(-1)
    meets(flat[: b * n * d].reshape(b, n, d), expected, dtype)
    assert np.all(flat[b * n * d :] == SENTINEL)


def test_speculative_query_bsh_paged_with_pse():
    """BSH, S = 2, page attention over a (blocknum, blocksize, H) cache, pseShift [B, N, 1, S2]."""
    b, n, n2, s, d, bs = 2, 4, 1, 2, 16, 16
    query = values((b, s, n * d), np.float16)
    cache_k, cache_v = values((5, bs, n2 * d), np.float16), values((5, bs, n2 * d), np.float16)
    table = np.array([[3, 0, 4], [1, 2, -1]], np.int32)
    pse = values((b, n, 1, 48), np.float16)
    out = call(
        query,
        cache_k,
        cache_v,
        layout="BSH",
        heads=n,
        kv_heads=n2,
        actual=(40, 30),
        pse=pse,
        table=table,
        block_size=bs,
    )
    keys = [golden.dense_rows(cache_k, table[i], bs, 48, n2, False) for i in range(b)]
    vals = [golden.dense_rows(cache_v, table[i], bs, 48, n2, False) for i in range(b)]
    expected = expect(decode_rows(query, b, n, d), keys, vals, scale=0.125, lengths=[40, 30], pse=pse[:, :, 0])
    flat = out.reshape(-1)
    meets(flat[: b * n * d].reshape(b, n, d), expected, np.float16)
    assert np.all(flat[b * n * d :] == SENTINEL)


@pytest.mark.parametrize(
    "layout,shape,heads,kv_heads",
    [("BNSD", (1, 64, 16, 16), 64, 2), ("BNSD", (1, 46, 11, 16), 46, 2), ("BSH", (1, 16, 64 * 16), 64, 1)],
    ids=["bnsd_16x32", "bnsd_11x23", "bsh_16x64"],
)
def test_speculative_query_split_past_the_batch_is_refused(layout, shape, heads, kv_heads):
    """SplitUnbalanced splits the rows (BNSD: G above gMax / S made even, 22 for S = 11, so G = 23
    splits though S x G = 253; BSH: S above gMax / G) and the S = 1 kernels' batch index would run
    past B."""
    key = np.zeros((1, kv_heads, 8, 16) if layout == "BNSD" else (1, 8, kv_heads * 16), np.float16)
    with pytest.raises(ae.AclnnError) as failed:
        call(np.zeros(shape, np.float16), key, key, layout=layout, heads=heads, kv_heads=kv_heads)
    assert failed.value.status == 561003 and "past B" in failed.value.message


def test_speculative_split_follows_a_paged_cache_rank():
    """Page attention sets the split's layout from the cache: a (blocknum, blocksize, H) cache splits as
    BSH_BSND (S above gMax / G: 11 <= 256 / 23), so S = 11, G = 23 runs with a BNSD query, where the
    BNSD split (G above 22) would refuse it."""
    b, n, s, d, bs = 1, 23, 11, 16, 16
    query = values((b, n, s, d), np.float16)
    cache_k, cache_v = values((2, bs, d), np.float16), values((2, bs, d), np.float16)
    table = np.array([[1, 0]], np.int32)
    out = call(query, cache_k, cache_v, layout="BNSD", heads=n, kv_heads=1, actual=(20,), table=table, block_size=bs)
    keys = [golden.dense_rows(cache_k, table[0], bs, 20, 1, False)]
    vals = [golden.dense_rows(cache_v, table[0], bs, 20, 1, False)]
    expected = expect(decode_rows(query, b, n, d), keys, vals, scale=0.125, lengths=[20])
    meets(out.reshape(-1)[: b * n * d].reshape(b, n, d), expected, np.float16)


def test_speculative_query_just_below_the_split_runs():
    """S = 11, G = 22: gMax / S = 23, made even 22, holds the group: one pass, B x N2 loop indices."""
    b, n, n2, s, d = 1, 44, 2, 11, 16
    query = values((b, n, s, d), np.float16)
    k, v = values((b, n2, 9, d), np.float16), values((b, n2, 9, d), np.float16)
    out = call(query, k, v, layout="BNSD", heads=n, kv_heads=n2)
    expected = expect(decode_rows(query, b, n, d), list(k), list(v), scale=0.125, lengths=[9])
    meets(out.reshape(-1)[: b * n * d].reshape(b, n, d), expected, np.float16)


# -- a batched key whose heads differ from numKeyValueHeads -------------------------------------------
def test_key_with_more_heads_is_read_by_num_key_value_heads():
    """BNSD key [B, 3, S, D] with numKeyValueHeads 2: the kernel reads [B, 2, S, D] from its start."""
    q = values((2, 4, 32), np.float16)
    key, value = values((2, 3, 16, 32), np.float16), values((2, 3, 16, 32), np.float16)
    out = run_ifa(q, [key], [value], kv_heads=2, actual=(16, 11))
    as_read = [x.reshape(-1)[: 2 * 2 * 16 * 32].reshape(2, 2, 16, 32) for x in (key, value)]
    meets(out, expect(q, list(as_read[0]), list(as_read[1]), scale=0.125, lengths=[16, 11]), np.float16)


def test_bsh_key_with_wider_rows_is_read_by_n_times_d():
    """BSH without numKeyValueHeads (N2 = N): H = N D + 1 passes H / N = D (integer division); the
    kernel strides rows by N D."""
    q = values((2, 2, 16), np.float16)
    key, value = values((2, 10, 33), np.float16), values((2, 10, 33), np.float16)
    out = run_ifa(q, [key], [value], layout="BSH")
    as_read = [x.reshape(-1)[: 2 * 10 * 32].reshape(2, 10, 2, 16).transpose(0, 2, 1, 3) for x in (key, value)]
    meets(out, expect(q, list(as_read[0]), list(as_read[1]), scale=0.125, lengths=[10, 10]), np.float16)


def test_key_with_fewer_heads_is_refused_where_it_is_read_past_its_end():
    q = np.zeros((2, 4, 32), np.float16)
    small = np.zeros((2, 1, 16, 32), np.float16)
    with pytest.raises(ae.AclnnError) as failed:
        run_ifa(q, [small], [small], kv_heads=2)
    assert failed.value.status == 561003 and "past the key" in failed.value.message
    # batch 1 reads nothing: the rows read end with the key's last element
    out = run_ifa(q, [small], [small], kv_heads=2, actual=(16, 0))
    assert np.all(out[1] == 0)
    # one row past the end: head 1's first token of a one-head key
    with pytest.raises(ae.AclnnError):
        run_ifa(q[:1], [small[:1]], [small[:1]], kv_heads=2, actual=(1,))


# -- quantScale2 of rank 5 -----------------------------------------------------------------------------
def test_rank5_quant_scale_reads_its_first_n_times_d_values():
    q = values((2, 4, 32), np.float16)
    k, v = values((2, 2, 12, 32), np.float16), values((2, 2, 12, 32), np.float16)
    scale = (np.random.default_rng(5).random((2, 4, 32)) * 40 + 1).astype(np.float32)
    offset = np.random.default_rng(6).standard_normal((4, 32)).astype(np.float32)
    out = run_ifa(
        q,
        [k],
        [v],
        kv_heads=2,
        quant2=scale.reshape(1, 1, 2, 4, 32),
        offset2=offset.reshape(1, 1, 1, 4, 32),
        out_dtype=DataType.ACL_INT8,
    )
    o = golden.attention(q, list(k), list(v), scale=0.125, lengths=[12, 12], out_quant=(scale[0], offset))
    diff = np.abs(out.astype(np.int64) - o)
    assert diff.max() <= 1 and (diff == 0).mean() >= 0.99


# -- a 5-D key: the tiling fails at each of its checks ------------------------------------------------
NZ_QUERY = np.zeros((2, 4, 1, 64), BF16)
NZ_CACHE = np.zeros((6, 2, 2, 32, 32), np.int8)
NZ_SCALE = np.ones((2, 2, 1, 64), BF16)
NZ_TABLE = np.arange(6, dtype=np.int32).reshape(2, 3)


@pytest.mark.parametrize(
    "query,cache,extra,message",
    [
        (NZ_QUERY, NZ_CACHE, {"pse": np.zeros((1, 4, 1, 32), BF16), "aq": NZ_SCALE}, "PseShift is not support"),
        (NZ_QUERY, NZ_CACHE.astype(BF16), {}, "only support antiquant"),
        (NZ_QUERY.astype(np.float16), NZ_CACHE, {"aq": NZ_SCALE.astype(np.float16)}, "query type should be BF16"),
        (NZ_QUERY, NZ_CACHE[:, :, :1], {"aq": NZ_SCALE}, "should be [6, 2, 2, 32, 32]"),
        (NZ_QUERY, NZ_CACHE, {"aq": NZ_SCALE}, "dequant scale desc should not be null"),
    ],
    ids=["pse", "not_int8", "query_dtype", "nz_shape", "antiquant_scale_inputs"],
)
def test_kv_nz_cache_fails_the_tiling(query, cache, extra, message):
    """ProcessPseShift, then ProcessGqaKvNz: CheckGqaIOTensor, CheckGqaAntiquantTensor (which no V4
    call passes: keyAntiquantScale/valueAntiquantScale are not inputs of the op)."""
    with pytest.raises(ae.AclnnError) as failed:
        call(
            query,
            cache,
            cache,
            layout="BNSD",
            heads=4,
            kv_heads=2,
            actual=(40, 7),
            table=NZ_TABLE,
            block_size=32,
            **extra,
        )
    assert failed.value.status == 561002 and message in failed.value.message


def test_bsh_key_with_h_zero_fails_as_on_aarch64_hosts():
    """GetInOutLayout4BSH divides by the key's H: x86 hosts die of SIGFPE, aarch64 hosts get 0 heads
    and fail the heads check (561002), which aclnn-emu reproduces."""
    empty = np.zeros((2, 16, 0), np.float16)
    with pytest.raises(ae.AclnnError) as failed:
        call(np.zeros((2, 1, 128), np.float16), empty, empty, layout="BSH", heads=4, kv_heads=2)
    assert failed.value.status == 561002 and "SIGFPE" in failed.value.message
