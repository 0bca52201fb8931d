"""Per-batch lengths and paged tables at their edges, for the operators beyond PromptFlashAttention,
IncreFlashAttention and LightningIndexer's dense keys (those are in test_edges.py):

- per-batch lengths: a key, value or cache row past a batch's length is never read (NaN and inf
  there change no output byte), and query rows past a batch's length get what the source writes;
- paged tables: a length that ends inside its last block reads that block up to it (the same bytes as
  the keys laid out densely, with NaN past the length in the block), and a block id past the cache in
  the last block used is reported by the sanitizer, never an exception.

Codes and behaviours cite ops-transformer v8.5.0-beta.1.
"""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu.runtime import sanitizer
from edges_calls import outputs
from fuzz import baselines as base
from golden.lightning_indexer_grad import make_case as lig_case
from golden.sparse_flash_attention_grad import make_case as sfag_case
from test_lightning_indexer import run_op as li_run
from test_lightning_indexer_grad import run_op as lig_run
from test_sparse_flash_attention_grad import run_op as sfag_run
from test_sparse_flash_attention import make_case as sfa_case
from test_sparse_flash_attention import run_op as sfa_run

RNG = np.random.default_rng(2033)
F16 = np.float16
BIG = 2147483647


def _normal(*shape, dtype=F16):
    return RNG.standard_normal(shape).astype(dtype)


def _poisoned(x, rows_past: dict, axis: int):
    """x with NaN in every row of batch b from rows_past[b] on, along `axis` (batch first)."""
    y = x.copy()
    for b, n in rows_past.items():
        index = [b] + [slice(None)] * (y.ndim - 1)
        index[axis] = slice(n, None)
        y[tuple(index)] = np.nan
    return y


def _reports():
    return [kind for kind, _ in sanitizer.reports()]


def _reported_outside() -> bool:
    """The sanitizer reported a read through an index past its tensor (out-of-bounds*, index-out-of-range)."""
    return any(kind.startswith(("out-of-bounds", "index-out-of-range")) for kind in _reports())


# -- FusedInferAttentionScore ------------------------------------------------------------------------
def _fia(q, k, v, lens_q, lens_kv, **extra):
    return outputs(
        "FusedInferAttentionScoreV4", query=q, key=[k], value=[v], actualSeqLengthsOptional=lens_q,
        actualSeqLengthsKvOptional=lens_kv, numHeads=4, scaleValue=0.125, preTokens=BIG, nextTokens=BIG,
        numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=np.full(q.shape, 7, F16),
        softmaxLse=np.full((q.shape[0], 4, q.shape[2] if q.ndim == 4 else 1, 1), 5, np.float32), **extra,
    )  # fmt: skip


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("lens_q, lens_kv", [((16, 9), (40, 11)), ((1, 16), (1, 40)), ((16, 16), (40, 40))])
def test_fia_bnsd_keys_past_each_length_are_unread_and_rows_past_the_query_lengths_zero(chip, lens_q, lens_kv):
    """FIA-V3 kernels (fia_kernel_nonquant.h) start by initialising the outputs: attentionOut 0 and, on
    A2/A3, softmaxLse +inf; rows past a batch's actualSeqLengths are never computed."""
    q, k, v = _normal(2, 4, 16, 64), _normal(2, 2, 40, 64), _normal(2, 2, 40, 64)
    clean = _fia(q, k, v, lens_q, lens_kv, inputLayout="BNSD")
    cut = dict(enumerate(lens_kv))
    dirty = _fia(q, _poisoned(k, cut, 2), _poisoned(v, cut, 2), lens_q, lens_kv, inputLayout="BNSD")
    for name, got in clean.items():
        assert got.tobytes() == dirty[name].tobytes(), name
    out, lse = clean["attentionOut"], clean["softmaxLse"]
    for b, n in enumerate(lens_q):
        assert not out[b, :, n:].any() and np.isfinite(out[b, :, :n].astype(np.float32)).all()
        if chip != "Ascend910_95":  # there softmaxLse comes from the inferred second pass (rule lse_pass)
            assert np.isposinf(lse[b, :, n:]).all() and np.isfinite(lse[b, :, :n]).all()


def _pages(cache, table_row, length):
    """The dense [1, length, H] keys a BSH cache [blocks, block, H] holds through one table row."""
    return np.concatenate([cache[i] for i in table_row])[:length][None]


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("length", [129, 200, 255, 256])
def test_fia_paged_length_ending_inside_the_last_block_reads_it_up_to_the_length(chip, length):
    q = _normal(1, 1, 64)
    kc, vc = _normal(4, 128, 32), _normal(4, 128, 32)
    table = np.array([[3, 1]], np.int32)
    kc_dirty, vc_dirty = kc.copy(), vc.copy()
    flat = length - 128  # rows of block 1 (the last one used) past the length
    kc_dirty[1, flat:], vc_dirty[1, flat:] = np.nan, np.inf
    paged = _fia(q, kc_dirty, vc_dirty, None, (length,), inputLayout="BSH", blockTableOptional=table, blockSize=128)
    dense = _fia(q, _pages(kc, table[0], length), _pages(vc, table[0], length), None, (length,), inputLayout="BSH")
    assert paged["attentionOut"].tobytes() == dense["attentionOut"].tobytes()
    assert not _reports()


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("bad", [-1, 4, 1 << 20])
def test_fia_paged_bad_block_id_in_the_last_used_block_is_reported(chip, bad):
    q = _normal(1, 1, 64)
    kc, vc = _normal(4, 128, 32), _normal(4, 128, 32)
    table = np.array([[0, bad]], np.int32)
    got = _fia(q, kc, vc, None, (200,), inputLayout="BSH", blockTableOptional=table, blockSize=128)
    assert _reported_outside()
    assert np.isfinite(got["attentionOut"].astype(np.float32)).all()


# -- FlashAttentionVarLenScore / FlashAttentionUnpaddingScoreGrad (TND) ---------------------------------
def _varlen(q, k, v, entry="FlashAttentionVarLenScoreV2"):
    t = q.shape[0]
    return outputs(
        entry, query=q, key=k, value=v, actualSeqQLenOptional=(5, 12), actualSeqKvLenOptional=(7, 16),
        scaleValue=0.25, keepProb=1.0, preTokens=65536, nextTokens=65536, headNum=2, inputLayout="TND", pseType=1,
        softmaxMaxOut=np.full((t, 2, 8), 5, np.float32), softmaxSumOut=np.full((t, 2, 8), 5, np.float32),
        attentionOutOut=np.full(q.shape, 7, F16),
    )  # fmt: skip


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("entry", list(base.FAS_VARLEN))
def test_varlen_keys_past_the_last_cumulative_length_are_unread(chip, entry):
    """Keys 16 and 17 of T2 = 18 lie past actualSeqKvLen's last entry: the TND kernels address the
    batches [cu[b-1], cu[b]) only. (What lands in query rows past T1's last entry is not asserted:
    the source does not write them.)"""
    q, k, v = _normal(14, 2, 16), _normal(18, 2, 16), _normal(18, 2, 16)
    clean = _varlen(q, k, v, entry)
    k2, v2 = k.copy(), v.copy()
    k2[16:], v2[16:] = np.nan, np.inf
    dirty = _varlen(q, k2, v2, entry)
    assert clean["attentionOutOut"][:12].tobytes() == dirty["attentionOutOut"][:12].tobytes()
    assert np.isfinite(clean["attentionOutOut"][:12].astype(np.float32)).all()


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("entry", list(base.FAG_UNPADDING))
def test_unpadding_grad_keys_past_the_last_cumulative_length_are_unread(chip, entry):
    q, k, v, dy = _normal(12, 2, 16), _normal(18, 2, 16), _normal(18, 2, 16), _normal(12, 2, 16)
    fwd = _varlen(q, k[:16], v[:16])

    def grads(k, v):
        return outputs(
            entry, query=q, keyIn=k, value=v, dy=dy, attentionInOptional=fwd["attentionOutOut"],
            softmaxMaxOptional=fwd["softmaxMaxOut"], softmaxSumOptional=fwd["softmaxSumOut"], scaleValue=0.25,
            keepProb=1.0, preTokens=65536, nextTokens=65536, headNum=2, inputLayout="TND", pseType=1,
            actualSeqQLenOptional=(5, 12), actualSeqKvLenOptional=(7, 16), softmaxInLayout="",
            dqOut=np.full(q.shape, 7, F16), dkOut=np.full(k.shape, 7, F16), dvOut=np.full(v.shape, 7, F16),
        )  # fmt: skip

    clean = grads(k, v)
    k2, v2 = k.copy(), v.copy()
    k2[16:], v2[16:] = np.nan, np.inf
    dirty = grads(k2, v2)
    assert clean["dqOut"].tobytes() == dirty["dqOut"].tobytes()
    for name in ("dkOut", "dvOut"):
        assert clean[name][:16].tobytes() == dirty[name][:16].tobytes(), name
        assert np.isfinite(clean[name][:16].astype(np.float32)).all()


# -- LightningIndexerGrad and SparseFlashAttentionGrad (TND) -----------------------------------------
def _past_the_end(case, names, rows=3):
    """`case` with `rows` NaN key rows appended past the last cumulative key length."""
    grown = dict(case)
    for name in names:
        x = case[name]
        grown[name] = np.concatenate([x, np.full((rows, *x.shape[1:]), np.nan, x.dtype)])
    return grown


@pytest.mark.parametrize("chip", base.A2_A3, indirect=True)
@pytest.mark.parametrize("lengths_k", [[40, 9, 30], [16, 1, 16]])
def test_lig_tnd_keys_past_the_last_length_are_unread_and_their_dk_rows_zero(chip, lengths_k):
    """dK is accumulated in an fp32 workspace of dkSize = T2 x N2 x D (TND, lightning_indexer_grad_tiling.cpp),
    zeroed by the pre kernel and cast whole by the post kernel: rows no index reaches come out 0."""
    case = lig_case(RNG, ml_dtypes.bfloat16, "TND", 3, lengths_q=[5, 1, 7], lengths_k=lengths_k, top_k=16)
    clean = lig_run(case, "TND", 3)
    dirty = lig_run(_past_the_end(case, ["key"]), "TND", 3)
    t2 = sum(lengths_k)
    assert clean[0].tobytes() == dirty[0].tobytes() and clean[2].tobytes() == dirty[2].tobytes()
    assert clean[1].tobytes() == dirty[1][:t2].tobytes() and not dirty[1][t2:].any()
    assert clean[3] == dirty[3] == []


@pytest.mark.parametrize("chip", base.A2_A3, indirect=True)
@pytest.mark.parametrize("kv_lens", [[20, 33], [1, 40]])
def test_sfag_tnd_keys_past_the_last_length_are_unread_and_their_gradients_zero(chip, kv_lens):
    """dK and dV go through fp32 workspaces of the whole key (dkWorkspaceLen from allNumKey,
    sparse_flash_attention_grad_tiling_bs1_basic.cpp), cast whole: rows past the last length are 0."""
    case, attrs = sfag_case(RNG, dtype=ml_dtypes.bfloat16, layout="TND", q_lens=[3, 5], kv_lens=kv_lens, dr=64, nsel=8)
    clean = sfag_run(case, attrs)
    dirty = sfag_run(_past_the_end(case, ["key", "value", "keyRope"]), attrs)
    t2 = sum(kv_lens)
    for name, got in clean.items():
        if got is None:
            continue
        grown = dirty[name]
        assert got.tobytes() == grown[: len(got)].tobytes(), name
        assert name.startswith("dq") or not grown[t2:].any(), name


# -- SparseFlashAttention -------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("lens", [(48, 29), (1, 48), (17, 16)])
def test_sfa_bsnd_keys_past_each_length_are_unread_even_when_indexed(chip, lens):
    """sparseIndices point at blocks past actualSeqLengthsKv: the kernel skips positions at or past
    the batch's length (SFA selection), so NaN there changes nothing."""
    case = sfa_case(RNG, F16, lens_q=[4, 4], lens_k=[48, 48], heads=2, block_size=1, count=48, junk=False)
    case["cu_seq_kv"] = list(lens)
    case["indices"] = np.ascontiguousarray(case["indices"][..., ::-1])  # keys past the length scanned first
    clean = sfa_run(case, scale=0.1, block_size=1, mode=0)
    cut = dict(enumerate(lens))
    dirty = dict(case, **{n: _poisoned(case[n], cut, 1) for n in ("key", "key_rope", "value")})
    for a, b in zip(clean, sfa_run(dirty, scale=0.1, block_size=1, mode=0)):
        assert a.tobytes() == b.tobytes()
    assert np.isfinite(clean[0].astype(np.float32)).all()


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("length", [33, 40, 47, 48])
def test_sfa_paged_length_ending_inside_the_last_block_reads_it_up_to_the_length(chip, length):
    case = sfa_case(RNG, F16, lens_q=[4], lens_k=[48], heads=2, block_size=16, count=3, junk=False)
    case["cu_seq_kv"] = [length]
    contiguous = sfa_run(case, scale=0.05, block_size=16, mode=0, lse=False)
    table = np.array([[2, 0, 3]], np.int32)
    paged = dict(case, table=table)
    for name in ("key", "key_rope", "value"):
        x = case[name][0]
        cache = np.full((4, 16, *x.shape[1:]), np.nan, x.dtype)
        for j, block in enumerate(table[0]):
            cache[block, : max(0, min(16, length - 16 * j))] = x[16 * j : min(16 * (j + 1), length)]
        paged[name] = cache
    got = sfa_run(paged, scale=0.05, block_size=16, mode=0, layout_kv="PA_BSND", lse=False)
    assert got[0].tobytes() == contiguous[0].tobytes()
    assert not _reports()


@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
@pytest.mark.parametrize("bad", [-1, 4, 1 << 20])
def test_sfa_paged_bad_block_id_in_the_last_used_block_is_reported(chip, bad):
    case = sfa_case(RNG, F16, lens_q=[4], lens_k=[48], heads=2, block_size=16, count=3, junk=False)
    paged = dict(case, table=np.array([[2, 0, bad]], np.int32), cu_seq_kv=[40])
    for name in ("key", "key_rope", "value"):
        paged[name] = case[name][0].reshape(3, 16, *case[name].shape[2:])[[0, 1, 2, 0]]
    got = sfa_run(paged, scale=0.05, block_size=16, mode=0, layout_kv="PA_BSND", lse=False)
    assert _reported_outside()
    assert np.isfinite(got[0].astype(np.float32)).all()


# -- LightningIndexer (paged keys) ----------------------------------------------------------------------
@pytest.mark.parametrize("chip", base.A2_A3, indirect=True)
@pytest.mark.parametrize("length", [33, 40, 47, 48])
def test_li_paged_length_ending_inside_the_last_block_picks_the_dense_keys(chip, length):
    query, weights = _normal(1, 4, 8, 128), _normal(1, 4, 8)
    key = _normal(1, length, 1, 128)
    table = np.array([[2, 0, 3]], np.int32)
    cache = np.full((4, 16, 1, 128), np.nan, F16)
    for j, block in enumerate(table[0]):
        cache[block, : max(0, min(16, length - 16 * j))] = key[0, 16 * j : min(16 * (j + 1), length)]
    dense = li_run(query, key, weights, count=24, mode=0, values=False)
    paged = li_run(query, cache, weights, count=24, mode=0, layout_key="PA_BSND", seq_k=[length], table=table,
                   values=False)  # fmt: skip
    assert paged[0].tobytes() == dense[0].tobytes()
    assert not _reports()


@pytest.mark.parametrize("chip", base.A2_A3, indirect=True)  # LightningIndexer has no Ascend910_95 kernel
@pytest.mark.parametrize("bad", [-1, 4, 1 << 20])
def test_li_paged_bad_block_id_in_the_last_used_block_is_reported(chip, bad):
    query, weights = _normal(1, 4, 8, 128), _normal(1, 4, 8)
    cache = _normal(4, 16, 1, 128)
    got = li_run(query, cache, weights, count=24, mode=0, layout_key="PA_BSND", seq_k=[40],
                 table=np.array([[2, 0, bad]], np.int32), values=False)  # fmt: skip
    assert _reported_outside()
    assert ((got[0] >= -1) & (got[0] < 40)).all()


@pytest.mark.parametrize("chip", base.A2_A3, indirect=True)
def test_li_paged_length_past_its_row_reads_the_next_rows_blocks(chip):
    """The kernel reads blockTable[b * maxBlockNumPerBatch + p / blockSize] (lightning_indexer_service_cube.h)
    for every p below the length (GetS1S2ActualSeqLen): batch 0's position 48 of a 3-block row is in
    the first block of row 1. The same indices as the keys laid out densely in that order."""
    query, weights = _normal(2, 4, 8, 128), _normal(2, 4, 8)
    cache = _normal(4, 16, 1, 128)
    table = np.array([[2, 0, 3], [1, 3, 2]], np.int32)
    flat = cache.reshape(4, 16, 128)
    dense = np.stack([np.concatenate([flat[i] for i in (2, 0, 3, 1)])[:52], np.concatenate(flat[[1, 3, 2, 0]])[:52]])
    lengths = [52, 20]
    want = li_run(query, dense[:, :, None], weights, count=24, mode=0, seq_k=lengths, values=False)
    got = li_run(query, cache, weights, count=24, mode=0, layout_key="PA_BSND", seq_k=lengths, table=table,
                 values=False)  # fmt: skip
    assert got[0].tobytes() == want[0].tobytes() and (got[0][:32] >= 48).any()


@pytest.mark.parametrize("op", ["LightningIndexer", "SparseFlashAttention"])
@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_paged_length_past_the_tables_end_is_the_ai_core_exception(chip, op):
    """The last batch's length needs table entries past the tensor: a read out of bounds on the NPU."""
    table = np.array([[2, 0, 3], [1, 3, 2]], np.int32)
    with pytest.raises(ae.AclnnError) as failed:
        if op == "LightningIndexer":
            li_run(_normal(2, 4, 8, 128), _normal(4, 16, 1, 128), _normal(2, 4, 8), count=24, mode=0,
                   layout_key="PA_BSND", seq_k=[20, 49], table=table, values=False)  # fmt: skip
        else:
            case = sfa_case(RNG, F16, lens_q=[4, 4], lens_k=[48, 48], heads=2, block_size=16, count=3, junk=False)
            paged = dict(case, table=table, cu_seq_kv=[20, 49])
            for name in ("key", "key_rope", "value"):
                paged[name] = case[name].reshape(6, 16, *case[name].shape[2:])[:4]
            sfa_run(paged, scale=0.05, block_size=16, mode=0, layout_kv="PA_BSND", lse=False)
    assert failed.value.status == 507015 and "past its 6" in failed.value.message


# -- GatherPaKvCache and ScatterPaKvCache -------------------------------------------------------------
@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("lens", [(20, 9), (16, 16), (1, 31), (32, 0)])
def test_gather_copies_each_batch_up_to_its_length_and_nothing_past_it(chip, lens):
    """Norm mode: batch b's tokens come from its table row's blocks, a length ending inside a block
    takes that block up to it; rows of keyRef past the lengths' sum keep their bytes."""
    kc, vc = _normal(4, 16, 2, 16), _normal(4, 16, 2, 16)
    table = np.array([[0, 1], [3, 2]], np.int32)
    total = sum(lens)
    got = outputs("GatherPaKvCache", keyCache=kc, valueCache=vc, blockTables=table, seqLens=np.array(lens, np.int32),
                  keyRef=np.full((total + 3, 2, 16), 7, F16), valueRef=np.full((total + 3, 2, 16), 7, F16),
                  cacheMode="Norm")  # fmt: skip
    for cache, name in ((kc, "keyRef"), (vc, "valueRef")):
        want = np.concatenate([cache[row].reshape(-1, 2, 16)[:n] for row, n in zip(table, lens)])
        assert got[name][:total].tobytes() == want.tobytes(), name
        assert (got[name][total:] == 7).all(), name
    assert not _reports()


def _scatter(slots, key, caches):
    return outputs("ScatterPaKvCache", key=key, keyCacheRef=caches[0], slotMapping=np.array(slots, np.int32),
                   value=key, valueCacheRef=caches[1])  # fmt: skip


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
def test_scatter_the_last_slot_is_written_and_one_past_the_cache_is_not(chip):
    """Slots 0..7 of 2 blocks of 4: slot 7 is the last row of the last block. Slot 8 (one past) is
    written outside the cache by the hardware: the emulator skips it and reports it on every chip;
    a negative slot is skipped (A2/A3 kernels skip it; arch35 writes before the cache, reported)."""
    key = _normal(3, 2, 16)
    caches = [np.zeros((2, 4, 2, 16), F16) for _ in range(2)]
    got = _scatter([7, 0, 3], key, caches)["keyCacheRef"].reshape(8, 2, 16)
    assert got[7].tobytes() == key[0].tobytes() and got[0].tobytes() == key[1].tobytes()
    assert got[3].tobytes() == key[2].tobytes() and not _reports()
    past = _scatter([8, 0, 3], key, caches)["keyCacheRef"].reshape(8, 2, 16)
    assert not past[[1, 2, 4, 5, 6, 7]].any() and past[0].tobytes() == key[1].tobytes()
    assert _reports(), "a slot past the cache is reported"
    sanitizer.clear()
    negative = _scatter([-1, 0, 3], key, caches)["keyCacheRef"].reshape(8, 2, 16)
    assert not negative[[1, 2, 4, 5, 6, 7]].any() and negative[3].tobytes() == key[2].tobytes()
    assert bool(_reports()) == (chip == "Ascend910_95")
