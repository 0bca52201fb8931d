"""Classes of cases a bug hides in when each is tested on one side only, for every operator they
apply to: a limit at itself and one past; two faults in one call, where the source's check order
decides the code; per-batch lengths in the non-TND layouts, with the rows past them checked; paged
tables at their edges; dtype combinations no kernel registers, every tensor changed at once; and
stream order seen through what a second stream reads (the C loops' class: test_edges_loops.py).

Calls are built as the fuzzer builds them (tests/fuzz: T for a tensor, the baselines for valid
calls); codes cite ops-transformer v8.5.0-beta.1.
"""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.meta import TensorList
from aclnn_emu.runtime import api as rt
from aclnn_emu.runtime import sanitizer
from fuzz import baselines as base
from fuzz.case import Case, T, run

NULLPTR, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID
TILING, L2_TILING = status.ACLNN_ERR_INNER_TILING_ERROR, status.ACLNN_ERR_INNER_NULLPTR


def call(op, baseline, soc, edits, phase2=False):
    """The outcome of `baseline` with `edits` (position -> value, or a function of the arguments)."""
    args = getattr(base, baseline)(soc)
    for position, value in edits.items():
        if callable(value):
            value(args)
        else:
            args[position] = value
    return run(Case(op, soc, False, args), phase2=phase2)


def _each(*positions, make):
    """An edit giving every argument at `positions` the tensor `make()` returns."""
    return lambda args: [args.__setitem__(i, make()) for i in positions]


# -- a limit at itself and one past ------------------------------------------------------------------
def _li_count(n):
    return {8: n, 13: T((1, 4, 1, n), "INT32"), 14: T((1, 4, 1, n))}


def _ifa_block(n):
    return {19: n, 0: lambda a: [a[1].items.__setitem__(0, T((4, n, 32))), a[2].items.__setitem__(0, T((4, n, 32)))]}


def _ifa_group(g):
    return {0: T((2, 2 * g, 1, 16)), 15: 2 * g, 21: T((2, 2 * g, 1, 16))}


def _sfag_heads(n):
    edits = {i: T((1, 4, n, 512), "BF16") for i in (0, 4, 5, 19)}
    edits |= {6: T((1, 1, 4, n), "FLOAT", fill=(1.0,)), 7: T((1, 1, 4, n), "FLOAT", fill=(50.0,))}
    return edits | {10: T((1, 4, n, 64), "BF16"), 22: T((1, 4, n, 64), "BF16")}


def _scatter_tokens(n):
    return {0: T((n, 2, 16)), 2: T((n,), "INT32", fill=tuple(range(n))), 3: T((n, 2, 16))}


LIMITS = [
    # (entry point, baseline, chips, edits for a value, the limit, code one past, the deciding source)
    ("LightningIndexer", "li", base.A2_A3, _li_count, 2048, TILING, "lightning_indexer_tiling.cpp sparse_count"),
    ("SparseFlashAttention", "sfa", ("Ascend910B",), lambda n: {10: n}, 128, TILING, "SFA sparseBlockSize range"),
    ("SparseFlashAttentionGrad", "sfag", base.A2_A3, _sfag_heads, 128, TILING, "SFAG tiling: N1 <= 128, N2 = 1"),
    ("IncreFlashAttentionV4", "ifa_paged", base.ALL, _ifa_block, 512, TILING, "IFA tiling: blockSize <= 512"),
    ("IncreFlashAttentionV4", "ifa", base.ALL, _ifa_group, 64, TILING, "IFA tiling: numHeads / numKvHeads <= 64"),
    (
        "IncreFlashAttentionV4",
        "ifa",
        base.A2_A3,
        lambda n: {5: (64, n)},
        64,
        TILING,
        "ParseActualSeqLens: length <= the key's S",
    ),
    (
        "PromptFlashAttentionV2",
        "pfa",
        base.ALL,
        lambda d: {0: _each(0, 1, 2, 19, make=lambda: T((1, 2, 16, d)))},
        512,
        INVALID,
        "aclnn_prompt_flash_attention: D <= 512",
    ),
    (
        "FlashAttentionScoreV2",
        "fas",
        base.ALL,
        lambda d: {0: _each(0, 1, 2, 22, make=lambda: T((1, 2, 8, d)))},
        768,
        INVALID,
        "aclnn_flash_attention_score: head dim <= 768",
    ),
    (
        "ScatterPaKvCache",
        "scatter",
        base.A2_A3,
        _scatter_tokens,
        8,
        TILING,
        "scatter_pa_kv_cache_tiling.cpp CheckInputDim: numBlocks * blockSize >= numTokens",
    ),
    (
        "GatherPaKvCache",
        "gather",
        base.A2_A3,
        lambda n: {2: T((2, n), "INT32", fill=(0, 1, 3, 2))},
        (1 << 31) - 1,
        TILING,
        "gather_pa_kv_cache_tiling.cpp: numblkTabCol = static_cast<int32_t>(blockTables dim 1) > 0",
    ),
]


@pytest.mark.parametrize(
    "op, baseline, soc, edits, limit, code",
    [(op, b, soc, e, n, c) for op, b, chips, e, n, c, _ in LIMITS for soc in chips],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_limit_is_accepted_at_itself_and_refused_one_past(op, baseline, soc, edits, limit, code):
    at = call(op, baseline, soc, edits(limit))
    assert at.kind == "accepted", at
    past = call(op, baseline, soc, edits(limit + 1))
    assert (past.kind, past.code) == ("rejected", code), past


# Limits the source does not check: the value past the limit passes phase 1 as it does on the NPU, and
# what the hardware would do with it is reported (a sanitizer finding) or warned (a portability
# warning, the code under ACLNN_EMU_STRICT=1), never computed silently.
def _lig_top_k(k):
    indices = T((1, 2, k), "INT32", fill=tuple(range(16)) + (-1,) * (k - 16))
    return {2: T((1, 2, k), "BF16"), 3: indices}


def _fag_head_dim(d):
    return {0: _each(0, 1, 2, 3, 11, 24, 25, 26, make=lambda: T((1, 2, 8, d)))}


def _run_reporting(op, baseline, soc, edits, strict=False):
    """(outcome with phase 2, the kinds of the sanitizer's reports) of one call."""
    args = getattr(base, baseline)(soc)
    for position, value in edits.items():
        value(args) if callable(value) else args.__setitem__(position, value)
    seen = []
    clear = sanitizer.clear
    sanitizer.clear = lambda: (seen.extend(kind for kind, _ in sanitizer.reports()), clear())
    try:
        got = run(Case(op, soc, strict, args))
    finally:
        sanitizer.clear = clear
    return got, seen


UNCHECKED = [
    # (entry point, baseline, chips, edits for a value, the limit, sanitizer kinds past it, or the
    #  code under strict of the warning past it, the source that checks nothing)
    (
        "LightningIndexerGrad",
        "lig",
        base.A2_A3,
        _lig_top_k,
        2048,
        ["workspace-overflow"],
        "lightning_indexer_grad_tiling.cpp GetShapeAttrsInfo: topK = dy's last dim, never compared with "
        "MAX_TOPK (the workspace is sized for 2048)",
    ),
    (
        "FlashAttentionScoreGradV2",
        "fag",
        ("Ascend910_95",),
        _fag_head_dim,
        768,
        NULLPTR,
        "arch35 GetDTemplateType: D > 768 falls back to the 768 template; no op_api check of D",
    ),
    (
        "FlashAttentionScoreGradV2",
        "fag",
        base.A2_A3,
        _fag_head_dim,
        512,
        NULLPTR,
        "the doc's D <= 512; neither aclnn_flash_attention_score_grad.cpp nor the arch32 tilings check it",
    ),
]


@pytest.mark.parametrize(
    "op, baseline, soc, edits, limit, past",
    [(op, b, soc, e, n, p) for op, b, chips, e, n, p, _ in UNCHECKED for soc in chips],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_limit_the_source_does_not_check_runs_past_it_reported_or_warned(op, baseline, soc, edits, limit, past):
    at, reports = _run_reporting(op, baseline, soc, edits(limit))
    assert (at.kind, reports) == ("ran", []), at
    beyond, reports = _run_reporting(op, baseline, soc, edits(limit + 1))
    assert beyond.kind == "ran", beyond
    if isinstance(past, list):
        assert reports == past
    else:  # a portability warning: the call runs, and under ACLNN_EMU_STRICT=1 fails with the rule's code
        strict, _ = _run_reporting(op, baseline, soc, edits(limit + 1), strict=True)
        assert (strict.kind, strict.code) == ("rejected", past), strict
        at_strict, _ = _run_reporting(op, baseline, soc, edits(limit), strict=True)
        assert at_strict.kind == "ran", at_strict


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("key_s, length", [(2, 3), (64, 65536), (64, 1 << 31), (64, (1 << 32) + 65)])
def test_ifa_a_length_past_the_keys_is_a_tiling_error_whatever_its_size(soc, key_s, length):
    """IFATiling::ParseActualSeqLens (incre_flash_attention_tiling.cpp) compares
    static_cast<uint32_t>(actLen) with the key's S: 3 over 2, 65536 and 2**31 over 64, and 2**32 + 65
    (65 as uint32) fail the tiling, 561002; the arch35 tiling (PromptFlashAttentionTilingV2's
    actual-length check) refuses them too. A length whose uint32 value fits passes (test_fuzz_findings)."""
    keys = lambda a: [a[1].items.__setitem__(0, T((2, 2, key_s, 16))), a[2].items.__setitem__(0, T((2, 2, key_s, 16)))]
    got = call("IncreFlashAttentionV4", "ifa", soc, {1: keys, 5: (length, min(key_s, 40))})
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc", base.A2_A3)
@pytest.mark.parametrize("mode", ["bad", "pa_nz", "norm"])
def test_scatter_a2_a3_runs_an_unknown_cache_mode_as_norm_and_warns(soc, mode, capfd):
    """The generated aclnnScatterPaKvCache runs no InferShape (the only place that compares cache_mode
    with "", "Norm" and "PA_NZ"); the A2/A3 tiling's GetTemplateType (scatter_pa_kv_cache_tiling.cpp)
    compares it with "PA_NZ" only, so any other string is the Norm template: the same bytes as Norm."""
    norm = _run_bytes(soc, "Norm")
    assert _run_bytes(soc, mode) == norm
    assert "is neither 'Norm' nor 'PA_NZ'" in capfd.readouterr().err


def _run_bytes(soc, mode):
    from aclnn_emu import config
    import dataclasses

    saved = config.current
    config.current = dataclasses.replace(saved, soc=soc)
    try:
        rng = np.random.default_rng(5)
        key, value = (rng.standard_normal((4, 2, 16)).astype(F16) for _ in range(2))
        caches = [np.zeros((2, 4, 2, 16), F16) for _ in range(2)]
        slots = np.array([0, 3, 5, 6], np.int32)
        got = ae.ops.ScatterPaKvCache(key, caches[0], slots, value, caches[1], cacheModeOptional=mode)
        return b"".join(np.asarray(x).tobytes() for x in got)
    finally:
        config.current = saved


# -- two faults, one call -------------------------------------------------------------------------------
FAS_D = _each(0, 1, 2, 22, make=lambda: T((1, 2, 8, 769)))
PFA_D = _each(0, 1, 2, 19, make=lambda: T((1, 2, 16, 513)))
PAIRS = [
    # (entry point, baseline, chips, both faults, the code of the one checked first, the order's source)
    ("FlashAttentionScoreV2", "fas", base.ALL, {0: FAS_D, 22: None}, NULLPTR, "CheckNotNull before AnalysisAxis"),
    (
        "FlashAttentionScoreV2",
        "fas",
        base.ALL,
        {0: FAS_D, 11: 2.0},
        INVALID,
        "the op_api's head dim before the L0 tiling",
    ),
    ("PromptFlashAttentionV2", "pfa", base.ALL, {0: PFA_D, 19: None}, NULLPTR, "null checks before AnalysisAxis"),
    ("PromptFlashAttentionV2", "pfa", base.ALL, {0: PFA_D, 2: T((1, 2, 9, 513))}, INVALID, "the op_api's D first"),
    (
        "IncreFlashAttentionV4",
        "ifa_paged",
        base.ALL,
        {0: T((2, 1, 64), "DOUBLE"), 19: 513},
        INVALID,
        "kernel key first",
    ),
    ("LightningIndexer", "li", base.A2_A3, {13: None, 8: 2049}, NULLPTR, "generated aclnn null check first"),
    ("LightningIndexer", "li", base.A2_A3, {0: T((1, 4, 8, 128), "DOUBLE"), 8: 2049}, INVALID, "dtype before tiling"),
    ("SparseFlashAttention", "sfa", ("Ascend910B",), {0: T((1, 4, 2, 512), "DOUBLE"), 10: 129}, INVALID, "dtype first"),
    ("ScatterPaKvCache", "scatter", base.ALL, {0: None, 2: T((4,), "DOUBLE")}, NULLPTR, "null before dtype"),
    ("GatherPaKvCache", "gather", base.ALL, {3: T((2,), "DOUBLE"), 7: "bad"}, INVALID, "dtype before tiling"),
    ("LightningIndexerGrad", "lig", base.A2_A3, {2: None, 4: T((1, 2, 64))}, NULLPTR, "null before dtype"),
    ("SparseFlashAttentionGrad", "sfag", base.A2_A3, {4: None, 14: "bad"}, NULLPTR, "null before tiling"),
    ("FlashAttentionScoreGradV2", "fag", base.ALL, {24: None, 19: 0}, NULLPTR, "CheckNotNull before headNum"),
    ("FlashAttentionScoreGradV2", "fag", base.ALL, {19: 0, 16: 0.0}, INVALID, "headNum before the L0 tiling"),
]


@pytest.mark.parametrize(
    "op, baseline, soc, edits, code",
    [(op, b, soc, e, c) for op, b, chips, e, c, _ in PAIRS for soc in chips],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_two_faults_give_the_code_of_the_check_the_source_runs_first(op, baseline, soc, edits, code):
    got = call(op, baseline, soc, edits)
    assert (got.kind, got.code) == ("rejected", code), got
    for position, value in edits.items():  # each fault alone is refused too, so both are faults
        alone = call(op, baseline, soc, {position: value})
        assert alone.kind == "rejected", (position, alone)


# -- per-batch lengths in BSH/BSND/BNSD, rows past them ----------------------------------------------
RNG = np.random.default_rng(2029)
F16 = np.float16


def _pfa_bsh(q, k, v, lens_q, lens_kv):
    b, s, h = q.shape
    tensors = [ae.to_device(x) for x in (q, k, v)]
    out = ae.to_device(np.full(q.shape, 7, F16))  # rows the kernel skips would keep the 7s
    ae.run("PromptFlashAttentionV2", *tensors, None, None, lens_q, lens_kv, *[None] * 5, 2, 0.25, 2147483647, 0,
           "BSH", 1, 0, out)  # fmt: skip
    result = ae.numpy(out)
    for t in tensors + [out]:
        ae.free(t)
    return result


@pytest.mark.parametrize("lens_q, lens_kv", [((16, 9), (16, 11)), ((1, 16), (5, 16)), ((16, 16), (1, 1))])
def test_pfa_bsh_rows_past_the_query_lengths_are_zero_and_keys_past_the_kv_lengths_unread(aclnn_soc, lens_q, lens_kv):
    """PFA writes zeros to query rows past actualSeqLengths (the kernel's invalid rows) and reads no
    key or value row past actualSeqLengthsKv: NaN there changes nothing."""
    q = RNG.standard_normal((2, 16, 32)).astype(F16)
    k, v = (RNG.standard_normal((2, 16, 16)).astype(F16) for _ in range(2))
    clean = _pfa_bsh(q, k, v, lens_q, lens_kv)
    k2, v2 = k.copy(), v.copy()
    for b, n in enumerate(lens_kv):
        k2[b, n:], v2[b, n:] = np.nan, np.nan
    assert _pfa_bsh(q, k2, v2, lens_q, lens_kv).tobytes() == clean.tobytes()
    for b, n in enumerate(lens_q):
        assert not clean[b, n:].any(), f"batch {b}: rows from {n} on are not zero"
        assert np.isfinite(clean[b, :n].astype(np.float32)).all()


def _ifa(q, k, v, lengths, layout="BNSD"):
    out = ae.empty(q.shape, DataType.ACL_FLOAT16)
    keys, values = TensorList([ae.to_device(k)]), TensorList([ae.to_device(v)])
    tq = ae.to_device(q)
    heads, kv_heads = q.shape[1], k.shape[1]
    ae.run("IncreFlashAttentionV4", tq, keys, values, None, None, lengths, *[None] * 9, heads, 0.25, layout,
           kv_heads, 0, 1, out)  # fmt: skip
    result = ae.numpy(out)
    for t in (tq, out, *keys.items, *values.items):
        ae.free(t)
    return result


@pytest.mark.parametrize("lengths", [(64, 40), (1, 64), (63, 17), (0, 5)])
def test_ifa_bnsd_keys_past_each_batch_length_are_unread(aclnn_soc, lengths):
    q = RNG.standard_normal((2, 4, 1, 16)).astype(F16)
    k, v = (RNG.standard_normal((2, 2, 64, 16)).astype(F16) for _ in range(2))
    clean = _ifa(q, k, v, lengths)
    k2, v2 = k.copy(), v.copy()
    for b, n in enumerate(lengths):
        k2[b, :, n:], v2[b, :, n:] = np.nan, np.inf
    assert _ifa(q, k2, v2, lengths).tobytes() == clean.tobytes()
    for b, n in enumerate(lengths):  # a batch of length 0 attends to nothing: zeros
        assert (not clean[b].any()) if n == 0 else np.isfinite(clean[b].astype(np.float32)).all()


@pytest.mark.parametrize("soc", base.A2_A3)
def test_lightning_indexer_bsnd_picks_no_key_past_each_batch_length(soc, monkeypatch):
    from aclnn_emu import config
    import dataclasses

    monkeypatch.setattr(config, "current", dataclasses.replace(config.current, soc=soc))
    q = RNG.standard_normal((2, 4, 8, 128)).astype(F16)
    k = RNG.standard_normal((2, 16, 1, 128)).astype(F16)
    w = RNG.standard_normal((2, 4, 8)).astype(F16)
    got = ae.ops.LightningIndexer(
        q, k, w, actualSeqLengthsKeyOptional=np.array([16, 5], np.int32), sparseCount=8, sparseMode=0
    )
    indices = got.sparseIndicesOut.reshape(2, 4, 8)
    assert (indices[1] < 5).all() and ((indices[1] >= 0).sum(axis=-1) == 5).all()  # 5 keys, then -1
    assert (indices[0] >= 0).all() and (indices[0] < 16).all()


# -- paged tables at their edges ---------------------------------------------------------------------
def _dense_of_pages(cache, table, length):
    """[1, N2, length, D] from a BSH cache [blocks, block, H] through one table row."""
    blocks, block, hidden = cache.shape
    rows = np.concatenate([cache[i] for i in table])[:length]
    return np.ascontiguousarray(rows.reshape(length, 2, hidden // 2).transpose(1, 0, 2))[None]


def _ifa_paged(q, kc, vc, table, lengths, block=128):
    out = ae.empty(q.shape, DataType.ACL_FLOAT16)
    keys, values = TensorList([ae.to_device(kc)]), TensorList([ae.to_device(vc)])
    tq, tt = ae.to_device(q), ae.to_device(np.asarray(table, np.int32))
    ae.run("IncreFlashAttentionV4", tq, keys, values, None, None, lengths, *[None] * 7, tt, None, 4, 0.25, "BSH", 2,
           block, 1, out)  # fmt: skip
    result = ae.numpy(out)
    for t in (tq, tt, out, *keys.items, *values.items):
        ae.free(t)
    return result


@pytest.mark.parametrize("length", [129, 200, 255, 256])
def test_ifa_a_length_ending_inside_the_last_block_reads_that_block_up_to_it(aclnn_soc, length):
    """Compared with the same keys laid out densely: the paged path reads exactly `length` tokens."""
    q = RNG.standard_normal((1, 1, 64)).astype(F16)
    kc, vc = (RNG.standard_normal((4, 128, 32)).astype(F16) for _ in range(2))
    table = [[3, 1]]
    paged = _ifa_paged(q, kc, vc, table, (length,))
    dense = _ifa(q.reshape(1, 4, 1, 16), _dense_of_pages(kc, table[0], length), _dense_of_pages(vc, table[0], length),
                 (length,))  # fmt: skip
    assert paged.tobytes() == dense.reshape(paged.shape).tobytes()


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
@pytest.mark.parametrize("bad", [-1, 4, 1 << 20])
def test_ifa_a_bad_block_id_in_the_last_used_block_is_reported(chip, bad):
    q = RNG.standard_normal((1, 1, 64)).astype(F16)
    kc, vc = (RNG.standard_normal((4, 128, 32)).astype(F16) for _ in range(2))
    out = _ifa_paged(q, kc, vc, [[0, bad]], (200,))
    assert [kind for kind, _ in sanitizer.reports()] == ["out-of-bounds"]
    assert np.isfinite(out.astype(np.float32)).all()


@pytest.mark.parametrize("chip", base.ALL, indirect=True)
def test_ifa_a_block_table_with_fewer_rows_than_the_batch_or_too_few_blocks(chip):
    """Fewer table rows than the batch: the A2/A3 tiling (IFATiling::ProcessBlockTable) does not
    compare them, so the kernel reads the missing row past the table (reported, read as -1, its
    tokens as zeros); the arch35 tiling refuses it. Lengths past what a row's blocks cover are
    refused everywhere; a table that covers them exactly runs."""
    short = call("IncreFlashAttentionV4", "ifa_paged", chip, {13: T((1, 2), "INT32", fill=(0, 1))}, phase2=True)
    if chip == "Ascend910_95":
        assert (short.kind, short.code) == ("rejected", TILING), short
    else:
        assert short.kind == "ran", short
    past = call("IncreFlashAttentionV4", "ifa_paged", chip, {5: (257, 77)})
    assert (past.kind, past.code) == ("rejected", TILING), past
    exact = call("IncreFlashAttentionV4", "ifa_paged", chip, {5: (256, 77)}, phase2=True)
    assert exact.kind == "ran", exact


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("offsets", [(-1, 0), (0, -16), (-(1 << 31), 3)])
def test_gather_a_negative_seq_offset_on_every_chip(soc, offsets):
    """A negative seqOffset is either refused or runs (reading what it reaches, reported): the same
    decision for a first and a last batch, never an exception."""
    got = call("GatherPaKvCache", "gather", soc, {6: T((2,), "INT32", fill=offsets)}, phase2=True)
    assert got.kind in ("rejected", "ran", "ran-failed") and not got.bad, got
    if got.kind == "ran-failed":
        assert got.code == status.ACL_ERROR_RT_AICORE_EXCEPTION


# -- dtype combinations no kernel registers, every tensor at once ---------------------------------------
UNREGISTERED = ("DOUBLE", "BOOL", "COMPLEX64", "UINT64")
FLOATING = ("FLOAT16", "BF16", "FLOAT")


def _has_floating(args) -> bool:
    return any(getattr(t, "dtype", None) in FLOATING for a in args for t in (a, *getattr(a, "items", ())))


@pytest.mark.parametrize(
    "op, baseline, soc",
    [
        (op, fn.__name__, soc)
        for op, entries in base.BASELINES.items()
        for fn, chips in entries[:1]
        for soc in chips
        if _has_floating(fn(soc))  # DropoutGenMask has none: its probDataType is tested on its own
    ],
)
@pytest.mark.parametrize("dtype", UNREGISTERED)
def test_every_floating_tensor_in_an_unregistered_dtype_is_refused(op, baseline, soc, dtype):
    def every(args):
        for i, a in enumerate(args):
            if getattr(a, "dtype", None) in FLOATING:
                args[i] = T(a.shape, dtype, a.fill)
            for j, item in enumerate(getattr(a, "items", ())):
                args[i].items[j] = T(item.shape, dtype)

    got = call(op, baseline, soc, {0: every})
    assert got.kind == "rejected" and got.code in (INVALID, TILING, NULLPTR, L2_TILING, 561003), got


# -- stream order through behaviour -------------------------------------------------------------------
def test_an_event_waited_on_by_a_second_stream_completes_after_the_first_streams_earlier_work():
    """Stream 1: a slow operator, then a copy of its output, then an event. Stream 2 waits for the
    event and copies that copy on: it must see the operator's result, not the bytes before it."""
    ae.setup()
    first, second = rt.create_stream(), rt.create_stream()
    event = rt.create_event()
    q, k, v = (RNG.standard_normal((1, 8, 512, 64)).astype(F16) for _ in range(3))
    tensors = [ae.to_device(x) for x in (q, k, v)]
    out = ae.to_device(np.zeros(q.shape, F16))
    nbytes = q.nbytes
    middle, last = rt.malloc(nbytes), rt.malloc(nbytes)
    try:
        rt.memset(middle, nbytes, 0, nbytes)
        rt.memset(last, nbytes, 0, nbytes)
        code, size, executor = ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(
            *tensors, *[None] * 9, 8, 0.125, 2147483647, 0, "BNSD", 0, 0, out
        )
        assert code == 0
        workspace = rt.malloc(size) if size else 0
        assert ae.raw.aclnnPromptFlashAttentionV2(workspace, size, executor, first) == 0
        rt.memcpy_async(middle, nbytes, out.addr, nbytes, 3, first)  # device to device
        rt.record_event(event, first)
        rt.stream_wait_event(second, event)
        rt.memcpy_async(last, nbytes, middle, nbytes, 3, second)
        rt.synchronize_stream(second)
        seen = np.empty(nbytes, np.uint8)
        rt.memcpy(seen.ctypes.data, nbytes, last, nbytes, 2)  # device to host
        rt.synchronize_stream(first)
        assert seen.tobytes() == ae.numpy(out).tobytes()
        assert seen.view(F16).astype(np.float32).any()
        if workspace:
            rt.free(workspace)
    finally:
        for t in tensors + [out]:
            ae.free(t)
        rt.free(middle)
        rt.free(last)
        rt.destroy_event(event)
        rt.destroy_stream(first)
        rt.destroy_stream(second)
