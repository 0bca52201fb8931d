"""What the fuzzer found, held to the rule every call follows: phase 1 returns the source's code, or
the call runs — correctly where the real op_api accepts it and the hardware computes it, or, where
the hardware would read or write past a tensor (undefined behaviour), with the AI Core exception
(507015) and a message naming the tensor. Never a hang, 561000 or an unhandled exception.

Each case runs in a worker process with a timeout (tests/fuzz), so a hang fails the test instead of
stopping the suite. Codes cite ops-transformer v8.5.0-beta.1.
"""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.meta import Tensor
from fuzz import baselines as base
from fuzz import driver
from fuzz.case import Case, L, Same, T

AICORE = status.ACL_ERROR_RT_AICORE_EXCEPTION
TILING = status.ACLNN_ERR_INNER_TILING_ERROR
FIND_KERNEL = status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR


@pytest.fixture(scope="module")
def pool():
    workers = driver.Pool(seed=0, workers=1, timeout=20)
    yield workers
    workers.close()


def outcome(pool, op, baseline, soc, **changes):
    """The outcome of `baseline` on `soc` with arguments replaced (a3=... replaces argument 3)."""
    args = getattr(base, baseline)(soc)
    for key, value in changes.items():
        args[int(key[1:])] = value
    ((_, got),) = list(pool.run([("case", Case(op, soc, False, args, base=baseline))]))
    assert not got.bad, got
    return got


# -- a length past what phase 1 compares ---------------------------------------------------------
@pytest.mark.parametrize("length", [(1 << 32) + 2, 1 << 62])
@pytest.mark.parametrize("baseline", ["ifa", "ifa_paged"])
@pytest.mark.parametrize("soc", base.A2_A3)
def test_ifa_length_past_uint32_is_refused_as_a_read_past_the_key(pool, soc, baseline, length):
    """IFATiling::ParseActualSeqLens and the page attention check (incre_flash_attention_tiling.cpp)
    compare static_cast<uint32_t>(actLen), so 2**32+2 and 2**62 pass the tiling; the kernel then reads
    the whole length, past the key: refused as such a read is (561003, the declared gap)."""
    got = outcome(pool, "IncreFlashAttentionV4", baseline, soc, a5=(length, 40))
    assert (got.kind, got.code) == ("rejected", FIND_KERNEL) and "actualSeqLengths[0]" in got.detail, got


@pytest.mark.parametrize("length", [(1 << 32) + 2, 1 << 62])
def test_ifa_length_past_uint32_on_arch35(pool, length):
    """The arch35 tiling (incre_flash_attention_tiling_v2 / PromptFlashAttentionTilingV2) fails it."""
    got = outcome(pool, "IncreFlashAttentionV4", "ifa", "Ascend910_95", a5=(64, length))
    assert (got.kind, got.code) == ("rejected", TILING), got


# -- shapes phase 1 indexes past ----------------------------------------------------------------
def test_sfa_0d_sparse_indices_is_a_shape_mismatch(pool):
    """SFATilingCheck::CheckTopkShape -> CompareShape (sparse_flash_attention_tiling.cpp): a
    dimension count other than the layout's fails the tiling."""
    got = outcome(pool, "SparseFlashAttention", "sfa", "Ascend910B", a3=T((), "INT32"))
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc, code", [(s, FIND_KERNEL) for s in base.A2_A3] + [("Ascend910_95", TILING)])
def test_ifa_negative_query_batch_is_refused_in_phase_1(pool, soc, code):
    """IFA's tiling ConvertContext (incre_flash_attention_tiling.cpp) resizes its key list to the
    query's batch, which throws in C++ for -1: unestablished, 561003. The arch35 tiling checks the
    batch range first (PromptFlashAttentionTilingV2): 561002."""
    args = dict(a0=T((-1, 1, 64)), a17="BSH", a21=T((-1, 1, 64)))
    got = outcome(pool, "IncreFlashAttentionV4", "ifa", soc, **args)
    assert (got.kind, got.code) == ("rejected", code), got


@pytest.mark.parametrize("soc", base.ALL)
def test_fag_key_of_another_rank(pool, soc):
    """GetInputShapeInfo (aclnn_flash_attention_score_grad.cpp) reads the key's D as GetDim(3), 0
    for a 3-D key (past gert::Shape's rank): "qD and kD should be same", ACLNN_ERR_PARAM_INVALID."""
    got = outcome(pool, "FlashAttentionScoreGradV2", "fag", soc, a1=T((1, 2, 16)))
    assert (got.kind, got.code) == ("rejected", status.ACLNN_ERR_PARAM_INVALID), got


# -- mismatched shapes accepted by phase 1 ----------------------------------------------------------
@pytest.mark.parametrize("soc, code", [(s, FIND_KERNEL) for s in base.A2_A3] + [("Ascend910_95", 561103)])
def test_pfa_value_of_another_length(pool, soc, code):
    """The A2/A3 tiling compares the key's and value's ranks and head dims only: the kernel's reads of
    a value of other rows are unestablished (561003). The arch35 tiling compares the shapes (561103
    behind the L2 API)."""
    got = outcome(pool, "PromptFlashAttentionV2", "pfa", soc, a2=T((1, 2, 9, 16)))
    assert (got.kind, got.code) == ("rejected", code), got


@pytest.mark.parametrize("soc", base.ALL)
def test_fas_value_of_another_length(pool, soc):
    got = outcome(pool, "FlashAttentionScoreV2", "fas", soc, a2=T((1, 2, 9, 16)))
    assert got.kind in ("rejected", "ran"), got


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("position, name", [(11, "attentionIn"), (3, "dy")])
def test_fag_attention_in_or_dy_of_another_head_size(pool, soc, position, name):
    """CheckAttentionInShape and IsSameShapeButValueDLeEqD (FAG tilings) let their last dimension
    differ from query's; the kernels read value's head dim per row: unestablished, 561003."""
    got = outcome(pool, "FlashAttentionScoreGradV2", "fag", soc, **{f"a{position}": T((1, 2, 8, 8))})
    assert (got.kind, got.code) == ("rejected", FIND_KERNEL) and name in got.detail, got


@pytest.mark.parametrize("soc", base.ALL)
def test_fag_empty_attention_in(pool, soc):
    got = outcome(pool, "FlashAttentionScoreGradV2", "fag", soc, a11=T((0,)))
    assert got.kind == "rejected", got


# -- negative dimensions from aclCreateTensor ---------------------------------------------------------
NEGATIVE = [
    ("SparseFlashAttentionGrad", "sfag", base.A2_A3, 19, T((1, -4, 2, 512), "BF16")),
    ("LightningIndexerGrad", "lig", base.A2_A3, 13, T((1, -2, 64, 128), "BF16")),
    ("LightningIndexer", "li", base.A2_A3, 13, T((1, -4, 1, 8), "INT32")),
    ("SparseFlashAttention", "sfa", ("Ascend910B",), 18, T((1, -4, 2, 512))),
    ("FlashAttentionScoreV2", "fas", base.ALL, 22, T((1, 2, -8, 16))),
    ("FlashAttentionScoreGradV2", "fag", base.ALL, 24, T((1, 2, -8, 16))),
    ("IncreFlashAttentionV4", "ifa", base.ALL, 21, T((2, 4, -1, 16))),
]


@pytest.mark.parametrize(
    "op, baseline, soc, position, tensor",
    [(op, b, soc, i, t) for op, b, chips, i, t in NEGATIVE for soc in chips],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_negative_dimension_is_refused_or_faults_the_kernel(pool, op, baseline, soc, position, tensor):
    """aclCreateTensor (opbase common_types.cpp, aclTensor's constructor) checks no dimension; an
    op whose checks let the shape through hands it to a kernel, whose addressing it corrupts."""
    got = outcome(pool, op, baseline, soc, **{f"a{position}": tensor})
    assert got.kind == "rejected" or (got.kind, got.code) == ("ran-failed", AICORE), got
    if got.kind == "ran-failed":
        assert "negative dimension" in got.detail


# -- views past their storage, and negative cumulative lengths --------------------------------------------
@pytest.mark.parametrize("soc", base.A2_A3)
def test_scatter_nz_cache_past_its_storage(pool, soc):
    """The NZ kernel writes the cache block by block from its first element: past the storage, the
    AI Core exception naming keyCacheRef."""
    got = outcome(pool, "ScatterPaKvCache", "scatter_nz", soc, a1=T((3, 2, 16, 16), offset=1536, storage=(1536,)))
    assert (got.kind, got.code) == ("ran-failed", AICORE) and "keyCacheRef" in got.detail, got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_scatter_nz_key_past_its_storage_reads_zeros_with_a_report(pool, soc):
    got = outcome(pool, "ScatterPaKvCache", "scatter_nz", soc, a0=T((8, 2, 16), offset=200, storage=(256,)))
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("offset", [1, 1 << 40])
def test_gather_seq_lens_past_their_storage(pool, soc, offset):
    """The kernels read seqLens contiguously from its first element: values past its storage read as
    0, with a sanitizer report (out-of-bounds-read), or the tiling refuses the call first."""
    lens = T((2,), "INT32", fill=(20, 9), strides=(-1 if offset == 1 else 1,), offset=offset, storage=(2,))
    got = outcome(pool, "GatherPaKvCache", "gather", soc, a3=lens)
    assert got.kind in ("rejected", "ran"), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_li_tnd_negative_cumulative_key_length(pool, soc):
    """No LightningIndexer check reads the cumulative key lengths' values: batch 1's keys then start
    40 rows before the key tensor, which the kernel reads: the AI Core exception."""
    got = outcome(pool, "LightningIndexer", "li_tnd", soc, a4=T((2,), "INT32", fill=(-40, 70)))
    assert (got.kind, got.code) == ("ran-failed", AICORE) and "key rows" in got.detail, got


# -- non-contiguous inputs: made contiguous by the op_api and computed -----------------------------
RNG = np.random.default_rng(29)


def _strided(array, how):
    """A device view with the values of `array`: its last two axes stored transposed, or its
    third axis stored backwards."""
    shape = array.shape
    if how == "transposed":
        stored = np.ascontiguousarray(np.swapaxes(array, -1, -2))
        s, d = shape[-2], shape[-1]
        strides, offset = (shape[1] * s * d, s * d, 1, s), 0
    else:
        stored = np.ascontiguousarray(array[:, :, ::-1])
        s, d = shape[2], shape[3]
        strides, offset = (shape[1] * s * d, s * d, -d, 1), (s - 1) * d
    holder = ae.to_device(stored)
    view = Tensor(shape, holder.dtype, strides, offset, storage_shape=(stored.size,), addr=holder.addr)
    return view, holder


def _attention(op, q, k, v, how=None, which=()):
    tensors, views, owned = [], [], []
    for name, x in (("q", q), ("k", k), ("v", v)):
        if name in which:
            view, holder = _strided(x, how)
            tensors.append(view)
            views.append(view)
            owned.append(holder)
        else:
            tensors.append(ae.to_device(x))
            owned.append(tensors[-1])
    out = ae.empty(q.shape, DataType.ACL_FLOAT16)
    b, n, s, _ = q.shape
    lanes = [ae.empty((b, n, s, 8), DataType.ACL_FLOAT) for _ in range(2)]
    owned += [out, *lanes]
    if op == "PromptFlashAttentionV2":
        ae.run(op, *tensors, *[None] * 9, n, 0.25, 2147483647, 0, "BNSD", 0, 0, out)
    else:
        ae.run(op, *tensors, *[None] * 7, 0.25, 1.0, 65536, 65536, n, "BNSD", 0, 0, 1, *lanes, None, out)
    result = ae.numpy(out)
    for view in views:
        view.destroy()
    for t in owned:
        ae.free(t)
    return result


@pytest.mark.parametrize("op", ["PromptFlashAttentionV2", "FlashAttentionScoreV2"])
@pytest.mark.parametrize("how", ["transposed", "backwards"])
@pytest.mark.parametrize("which", [("q",), ("k",), ("q", "k", "v")])
def test_a_strided_input_gives_the_contiguous_result(aclnn_soc, op, how, which):
    """aclnn_flash_attention_score.cpp / aclnn_prompt_flash_attention_inner.cpp pass every input
    through l0op::Contiguous before the kernel: a strided view computes as its values do."""
    q, k, v = (RNG.standard_normal((1, 2, 32, 16)).astype(np.float16) for _ in range(3))
    expected = _attention(op, q, k, v)
    got = _attention(op, q, k, v, how, which)
    assert got.tobytes() == expected.tobytes()


# -- found by later runs ------------------------------------------------------------------------
@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("position", [1, 2])
def test_fag_key_or_value_of_three_dims_in_bnsd(pool, soc, position):
    """The tilings read D as GetDim(3), 0 for a 3-D key or value: a status code, never 561000."""
    got = outcome(pool, "FlashAttentionScoreGradV2", "fag", soc, **{f"a{position}": T((1, 2, 8))})
    assert got.kind == "rejected" and got.code != status.ACLNN_ERR_INNER, got


@pytest.mark.parametrize("soc", base.ALL)
def test_fas_value_of_other_heads(pool, soc):
    got = outcome(pool, "FlashAttentionScoreV2", "fas", soc, a2=T((1, 1, 8, 16)))
    assert (got.kind, got.code) == ("rejected", FIND_KERNEL), got


@pytest.mark.parametrize("soc", base.ALL)
def test_gather_seq_lens_of_2_to_the_31_values(pool, soc):
    """The kernels read as many lengths as blockTables has rows, not as many as seqLens describes."""
    got = outcome(pool, "GatherPaKvCache", "gather", soc, a3=T((1 << 31,), "INT32", fill=(20, 9)))
    assert got.kind in ("rejected", "ran"), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_lig_weights_gradient_into_a_larger_output(pool, soc):
    """dWeights larger than the B x S1 x N the kernel writes: it keeps the rest."""
    got = outcome(pool, "LightningIndexerGrad", "lig", soc, a4=T((1, 2, 64, 128), "BF16"), a15=Same(0))
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.ALL)
def test_gather_a_block_table_of_2_to_the_31_columns(pool, soc):
    """The kernels would read billions of table entries past its storage: refused, or the AI Core
    exception naming blockTables, never a hang."""
    got = outcome(pool, "GatherPaKvCache", "gather", soc, a2=T((2, (1 << 31) - 1), "INT32", fill=(0, 1, 3, 2)))
    assert got.kind == "rejected" or (got.kind, got.code) == ("ran-failed", AICORE), got


@pytest.mark.parametrize("soc", base.ALL)
def test_ifa_paged_value_cache_of_another_rank_than_the_key(pool, soc):
    """The A2/A3 tiling takes the paged layout from the key and checks no value rank: the value is
    addressed as the key is. The arch35 tiling compares their ranks (561002)."""
    got = outcome(pool, "IncreFlashAttentionV4", "ifa_paged", soc, a2=L([T((4, 1, 2, 128, 32))]))
    assert got.kind == "ran" if soc != "Ascend910_95" else (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("lengths", [(0, 77), (200, 0)])
def test_ifa_arch35_paged_batch_of_no_tokens(pool, lengths):
    got = outcome(pool, "IncreFlashAttentionV4", "ifa_paged", "Ascend910_95", a5=lengths)
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_pfa_bsh_query_hidden_not_a_multiple_of_the_heads(pool, soc):
    got = outcome(pool, "PromptFlashAttentionV2", "pfa_lengths_bsh", soc, a0=T((2, 16, 33)))
    assert (got.kind, got.code) == ("rejected", FIND_KERNEL), got


@pytest.mark.parametrize("position", [1, 4])
def test_scatter_a_cache_described_past_its_memory_writes_neighbours_with_a_report(pool, position):
    """A cache of 2**31 x 16 elements over a few bytes: the kernel's writes leave the allocation and land
    in the neighbouring memory, which the sanitizer reports (docs/divergences/memory_bounds.md)."""
    got = outcome(pool, "ScatterPaKvCache", "scatter", "Ascend910_93", **{f"a{position}": T((2, 4, 2, 1 << 31))})
    assert got.kind in ("reported", "ran", "rejected", "ran-failed"), got


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("entry, baseline, position", [
    ("FlashAttentionVarLenScoreV3", "fas_varlenv3", 9),
    ("FlashAttentionUnpaddingScoreGradV4", "fag_unpaddingv4", 12),
])  # fmt: skip
def test_varlen_prefix_array_shorter_than_the_batches_outside_the_prefix_mode(pool, soc, entry, baseline, position):
    """Only sparse mode 6 reads prefixOptional: with mode 0 a one-entry array for two batches runs."""
    got = outcome(pool, entry, baseline, soc, **{f"a{position}": (2048,)})
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.ALL)
def test_varlen_with_both_length_arrays_empty(pool, soc):
    got = outcome(pool, "FlashAttentionVarLenScoreV5", "fas_varlenv5", soc, a11=(), a12=())
    assert got.kind in ("rejected", "ran"), got


@pytest.mark.parametrize("soc", base.ALL)
def test_unpadding_grad_value_of_other_rows(pool, soc):
    """dvOut shaped like the value, so that the value's own rows decide: unestablished (561003)."""
    got = outcome(pool, "FlashAttentionUnpaddingScoreGrad", "fag_unpadding", soc, a2=T((12, 2, 16)), a25=Same(23))
    assert (got.kind, got.code) == ("rejected", FIND_KERNEL), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_ifa_paged_head_dim_of_zero(pool, soc):
    """A BSH query of H 2 for 4 heads (D = 0) over a 0-d key cache: nothing to compute, nothing written."""
    got = outcome(pool, "IncreFlashAttentionV3", "ifa_v3_paged", soc, a0=T((2, 2)), a1=L([T(())]))
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.ALL)
def test_fas_bsh_key_hidden_not_a_multiple_of_d(pool, soc):
    got = outcome(pool, "FlashAttentionScoreV2", "fas_causal_bsh", soc, a1=T((2, 16, 33), "BF16"))
    assert got.kind == "rejected" and got.code != status.ACLNN_ERR_INNER, got


# -- FusedInferAttentionScore (the long run after it landed) ----------------------------------------
@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_key_of_no_rank_is_a_tiling_failure(pool, soc):
    """A 0-d key: the parser reads its S as 0 (gert::Shape past its rank) and the shape comparison of
    CheckMultiParaConsistency fails (561002), not an internal error."""
    got = outcome(pool, "FusedInferAttentionScoreV3", "fia_v3", soc, a1=L([T((), "FLOAT16")]))
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_value_rows_other_than_the_keys_are_a_tiling_failure(pool, soc):
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia", soc, a1=L([T((1, 2, 41, 64), "FLOAT16")]))
    assert (got.kind, got.code) == ("rejected", TILING), got


def test_fia_empty_output_on_the_ifa_route_launches_nothing(pool):
    """An empty attentionOut: the delegated operator launches nothing, and neither does softmaxLse's pass."""
    got = outcome(
        pool, "FusedInferAttentionScore", "fia_v1", "Ascend910B",
        a1=L([T((1, 4, 1, 1), "FLOAT16")]), a28=T((1, 4, 1, 0, 64), "FLOAT16"),
    )  # fmt: skip
    assert got.kind == "ran", got


def test_lig_0d_weights_and_dweights_write_what_fits(pool):
    """0-d weights and dWeights (the long run's case 78428 of seed 107): phase 1 accepts them (no check
    in the source); the kernel's dweights land in the one element there is, the rest reported."""
    got = outcome(pool, "LightningIndexerGrad", "lig", "Ascend910B", a4=T((), "BF16"), a15=T((), "BF16"))
    assert got.kind in ("ran", "reported", "ran-failed"), got


@pytest.mark.parametrize(
    "chip, key",
    [("Ascend910_95", (1, 2, 40, 0))] + [(soc, (0, 2, 40, 64)) for soc in base.ALL],
    ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)),
    indirect=["chip"],
)
def test_fia_empty_key_zeroes_the_output_and_leaves_softmax_lse(chip, key):
    """An empty key on the PromptFlashAttention route (seed 211, case 31259: a key of D 0 on Ascend910_95).
    The tiling's CheckEmptyTensor (prompt_flash_attention_tiling_v2.cpp; arch32 alike) comes before
    the shape checks, so phase 1 accepts it, and its kernel (PromptFlashAttentionZeroOutPut,
    arch32 PromptFlashAttentionEmptyTensor) zeroes attentionOut and writes no softmaxLse."""
    from aclnn_emu.meta import TensorList

    value = (0, 2, 40, 64) if key[0] == 0 else (1, 2, 40, 64)
    out = ae.to_device(np.full((1, 4, 16, 64), 3, np.float16))
    lse = ae.to_device(np.full((1, 4, 16, 1), 5, np.float32))
    tensors = [ae.to_device(np.ones(s, np.float16)) for s in ((1, 4, 16, 64), key, value)]
    args = base.named_args(
        "FusedInferAttentionScoreV4", query=tensors[0], key=TensorList([tensors[1]]),
        value=TensorList([tensors[2]]), numHeads=4, scaleValue=0.125, preTokens=2147483647, nextTokens=0,
        inputLayout="BNSD", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out, softmaxLse=lse,
    )  # fmt: skip
    ae.run("FusedInferAttentionScoreV4", *args)
    assert not ae.numpy(out).any() and (ae.numpy(lse) == 5).all()


# -- FusedInferAttentionScore's paged baseline (the long run after it joined) ------------------------
@pytest.mark.parametrize("soc", base.A2_A3)
@pytest.mark.parametrize("shape", [(), (2,), (1, 2, 1), (1, 4, 16, 64)])
def test_fia_block_table_of_another_rank_is_a_tiling_failure(pool, soc, shape):
    """FiaInfoParser::GetMaxBlockNumPerBatch (fused_infer_attention_score_tiling_info_parser.cpp):
    a blockTable of other than 2 dims fails the parser (561002) before any check reads its columns."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged", soc, a14=T(shape, "INT32", fill=(2, 0)))
    assert (got.kind, got.code) == ("rejected", TILING) and "blockTable has" in got.detail, got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_paged_key_of_rank_2_is_a_tiling_failure(pool, soc):
    """FiaInfoParser::GetKvLayout: a paged key of 3, 4 or 5 dims only (561002)."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged", soc, a1=L([T((512, 64), "FLOAT16")]))
    assert (got.kind, got.code) == ("rejected", TILING) and "paged key" in got.detail, got


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("shape", [(), (1, 2)])
def test_fia_paged_value_of_no_head_size_is_refused(pool, soc, shape):
    """GetPaValueD reads no D from a paged value of other than 3, 4 or 5 dims: the routing sees no GQA
    call, and the route taken refuses it (no internal error)."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged", soc, a2=L([T(shape, "FLOAT16")]))
    assert got.kind == "rejected" and got.code != status.ACLNN_ERR_INNER, got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_pfa_sh_value_hidden_not_a_multiple_of_the_kv_heads(pool, soc):
    """SH, 2 heads of D 32, numKeyValueHeads 3: Dv = 64 / 3 = 21 < D, so the op_api pads D and reshapes
    the value [16, 64] to [1, 16, 2, 21] (PreprocessQKVInput, aclnn_prompt_flash_attention_inner.cpp),
    a reshape of another element count: an L0 failure, 561103."""
    got = outcome(pool, "PromptFlashAttentionV3", "pfa_v3_base_api_mask", soc, a17=3)
    assert (got.kind, got.code) == ("rejected", status.ACLNN_ERR_INNER_NULLPTR) and "reshape" in got.detail, got


# -- the branches of FIA rope, key/value lists, TND masks and FAS V4 (the long run after they landed) --
@pytest.mark.parametrize("soc", base.ALL)
def test_fia_list_with_a_0d_tensor_is_a_tiling_failure(pool, soc):
    """CheckKvPFA / CheckTensorList read the tensors' dimensions as gert::Shape does (0 past the rank):
    a 0-d second tensor has batch 0, not 1 (561002)."""
    got = outcome(
        pool, "FusedInferAttentionScoreV4", "fia_list", soc, a1=L([T((1, 2, 40, 32), "FLOAT16"), T((), "FLOAT16")])
    )
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc", base.ALL)
@pytest.mark.parametrize("position", ["a1", "a2"], ids=["key", "value"])
def test_fia_list_tensor_of_five_dims_runs(pool, soc, position):
    """CheckTensorList (arch35/fused_infer_attention_score_tiling_v2.cpp) and CheckKvPFA's
    GetCumulativeKeyValueSInBNSD (fused_infer_attention_score_tiling.cpp) compare batch, N, S and D
    of each list tensor, never its rank: a 5-D second tensor passes, and the kernels walk its data
    address as [1, N, S, D] (test_key_value_list_tensor_of_more_dimensions checks the numbers). A 5-D
    key overruns the kernels' four-element shape array (a portability warning, checked there)."""
    change = {position: L([T((1, 2, 40, 32), "FLOAT16"), T((1, 2, 70, 32, 2), "FLOAT16")])}
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_list", soc, **change)
    assert (got.kind, got.code) == ("ran", 0), got


@pytest.mark.parametrize(
    "change", [{"a1": L([T((1, 2, 40), "FLOAT16")])}, {"a31": "PA_BLK_BSND"}], ids=["key_3d", "layout"]
)
def test_fia_rope_of_other_ranks_or_layouts_is_a_tiling_failure(pool, change):
    """Ascend910_95's GetAndCheckRopeShape on a key of another rank, or an input layout the PFA tiling
    does not know: 561002, not an internal error."""
    got = outcome(pool, "FusedInferAttentionScoreV3", "fia_rope", "Ascend910_95", **change)
    assert (got.kind, got.code) == ("rejected", TILING), got


def test_unpadding_grad_arch35_without_batches_is_no_bsnd_switch(pool):
    """No lengths at all: the arch35 backward's all-lengths-equal switch has no batch to compare."""
    got = outcome(pool, "FlashAttentionUnpaddingScoreGradV4", "fag_unpaddingv4", "Ascend910_95", a13=(), a14=())
    assert got.kind in ("ran", "rejected") and got.code != status.ACLNN_ERR_INNER, got


def test_fas_v4_negative_dropout_offset_is_read_as_uint64(pool):
    """The offset attribute of the arch35 generated keep mask wraps as the kernel's uint64 (no crash)."""
    got = outcome(pool, "FlashAttentionScoreV4", "fas_v4", "Ascend910_95", a30=-(1 << 63))
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_pfa_base_api_sh_key_hidden_other_than_kv_heads_times_d(pool, soc):
    """The base-API kernels step key rows by numKeyValueHeads x D: a key of H 65 for 2 heads of D 32 is
    refused as a misread (561103, rule refused.kv_hidden)."""
    got = outcome(pool, "PromptFlashAttentionV3", "pfa_v3_base_api_mask", soc, a1=T((16, 65), "FLOAT16"))
    assert (got.kind, got.code) == ("rejected", status.ACLNN_ERR_INNER_NULLPTR), got


@pytest.mark.parametrize("shape", [(2, 1, 8), (2, -2, 6, 8)], ids=["3d", "negative_heads"])
def test_unpadding_grad_arch35_prefix_mode_mask_shape(pool, shape):
    """Sparse mode 5 on the arch35 backward's BSND path reads the mask as mode 1's: CheckAttenMaskShape
    takes a 2-D or 4-D [1|B, 1|N1, ...] mask whose last two dimensions hold S1·S2 elements (161001)."""
    got = outcome(pool, "FlashAttentionUnpaddingScoreGradV2", "fag_tnd_prefix5", "Ascend910_95", a7=T(shape, "UINT8"))
    assert (got.kind, got.code) == ("rejected", status.ACLNN_ERR_PARAM_NULLPTR), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_int4_0d_key_keeps_its_shape(pool, soc):
    """TensorPreProcess multiplies the last dimension of a rank >= 1 INT32 key by 8; a 0-d one keeps its
    shape and fails the tiling's shape rules (561002), not an internal error."""
    got = outcome(pool, "FusedInferAttentionScoreV2", "fia_int4", soc, a1=L([T((), "INT32")]))
    assert (got.kind, got.code) == ("rejected", TILING), got


def test_fia_paged_pfa_kv_heads_above_heads(pool):
    """The A2/A3 PFA tiling sets headNumRatio only for numHeads divisible by numKeyValueHeads, before
    CheckPATypeAndShape divides by it: 561002, not an internal error."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged_pfa", "Ascend910B", a34=127)
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_split_fuse_block_table_of_rank_3_runs(pool, soc):
    """The split-fuse route (IsUsingFAI) checks no blockTable rank: ConvertContextToParamsFAI
    (fused_infer_attention_score_tiling.cpp) takes its dimension 1 as the blocks per batch and the
    kernels step the flat table by it, so a [2, 1, 4] table runs (batch b reads entries b, b + 1, ...)."""
    table = T((2, 1, 4), "INT32", fill=(7, 0, 5, 1, 2, 6, 3, 4))
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_split_fuse_paged", soc, a14=table)
    assert (got.kind, got.code) == ("ran", 0), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_split_fuse_block_table_of_rank_1_is_refused(pool, soc):
    """ConvertContextToParamsFAI reads dimension 1 of a 1-D table, which it lacks: refused (561002,
    rule split_fuse.block_table_rank)."""
    table = T((8,), "INT32", fill=(7, 0, 5, 1, 2, 6, 3, 4))
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_split_fuse_paged", soc, a14=table)
    assert (got.kind, got.code) == ("rejected", TILING) and "dimension 1" in got.detail, got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_paged_pfa_tnd_nz_key_with_a_4d_value(pool, soc):
    """A TND value of D 192 leaves RouteToFia (isNotLegacyGQA) before any key rank is read; the PFA
    tiling (prompt_flash_attention_tiling.cpp) takes a 5-D key as NZ (processPageAttentionInputFlag,
    CheckPAWhenBaseApi: blockSize its dimension 3), then CheckPAKeyValueParams fails the key and value
    of different ranks (561002)."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged_pfa_tnd", soc, a1=L([T((4, 2, 2, 128, 192), "BF16")]))
    assert (got.kind, got.code) == ("rejected", TILING) and "differ in rank" in got.detail, got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_paged_pfa_tnd_key_of_rank_6(pool, soc):
    """processPageAttentionInputFlag: with a TND query only a 3-, 4- or 5-D key (561002)."""
    key = L([T((4, 2, 2, 1, 128, 192), "BF16")])
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged_pfa_tnd", soc, a1=key)
    assert (got.kind, got.code) == ("rejected", TILING) and "keyDimNum(6)" in got.detail, got


# -- seed 219, after FIA's split-fuse, paged TND and prefix paths joined --------------------------------
@pytest.mark.parametrize("soc", base.A2_A3)
@pytest.mark.parametrize("value", [(2, 4), (8, 192), ()], ids=["2x4", "8x192", "0d"])
def test_fia_split_fuse_value_of_another_rank(pool, soc, value):
    """IsUsingFAI reads the value's dimension 2 through GetDim, 0 past its rank
    (fused_infer_attention_score_tiling.cpp): the call is no split-fuse one and the route it then
    takes fails the value's shape (561002), where the emulator indexed past the shape."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_split_fuse_paged", soc, a2=L([T(value, "FLOAT16")]))
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc", base.A2_A3)
@pytest.mark.parametrize("heads", [0, 2**32, 2**62])
def test_fia_paged_pfa_tnd_num_heads_read_as_zero(pool, soc, heads):
    """numHeads read as int32 is 0 here: CheckPAKeyValueParams's [blocks, N / G, blockSize, D] then
    fits no 4-D key (561002), where the emulator divided by it."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_paged_pfa_tnd", soc, a29=heads)
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_prefix_beside_a_0d_value(pool, soc):
    """A 0-d value beside a shared prefix on the A2/A3 IFA route: the prefix is put in front of no
    tensor without an S axis, and the IFA tiling's key/value shape check fails it (561002)."""
    got = outcome(pool, "FusedInferAttentionScoreV2", "fia_prefix_antiquant", soc, a2=L([T((), "INT8")]))
    assert (got.kind, got.code) == ("rejected", TILING) and "k v shape" in got.detail, got


def test_fia_antiquant_route_negative_query_batch(pool):
    """A query batch of -2 beside a one-tensor key list on Ascend910_95's IFA route: IFATilingV2 reads
    the batch as uint32 (batchSize_), so the list is no batched tensor and CheckKVShape's walk over
    the batches meets a missing tensor at index 1 (561002), where the emulator took max() of none."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_antiquant_mask", "Ascend910_95", a0=T((-2, 4, 4, 32)))
    assert (got.kind, got.code) == ("rejected", TILING), got


@pytest.mark.parametrize("last", [1, 2])
def test_fia_antiquant_paged_query_of_another_rank(pool, last):
    """A 5-D query beside an NZ paged INT8 cache on Ascend910_95's IFA route: with page attention
    IFATilingV2 skips CheckQKOutShape, so no rule reads the query's rank; the tiling takes its first
    four dims and the kernel their elements from the query's start. The call runs, where the
    emulator's kernel failed to unpack a 5-D array."""
    got = outcome(
        pool, "FusedInferAttentionScoreV2", "fia_kv_antiquant_paged_nz", "Ascend910_95", a0=T((1, 4, 1, 32, last))
    )
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_split_fuse_paged_length_past_the_block_table(pool, soc):
    """A paged key length of 2**31 on the split-fuse route: the kernels (flash_attention_regular.h)
    step through each batch's row of blockTable for that many keys, past the table; the emulator
    refuses it as it refuses lengths past the key (561002, split_fuse.lengths), where it tried to
    allocate the whole walk."""
    got = outcome(pool, "FusedInferAttentionScoreV4", "fia_split_fuse_paged", soc, a6=(60, 2**31))
    assert (got.kind, got.code) == ("rejected", TILING) and "address rows outside" in got.detail, got


def test_ifa_arch35_paged_bsh_query_h_off_n_d_as_its_own_output(pool):
    """A BSH query of H 65 (4 heads of D 16 from the cache) that is also attentionOut, on Ascend910_95
    over a paged cache: the tiling compares the query's H only with the output's, the same tensor, and
    takes D = H / N rounded down, so the kernel reads rows N D apart from the query's start. The call
    runs, where the emulator failed to split 65 into 4 heads."""
    got = outcome(pool, "IncreFlashAttentionV4", "ifa_paged", "Ascend910_95", a0=T((2, 1, 65)), a21=Same(0))
    assert got.kind == "ran", got


@pytest.mark.parametrize("soc", base.A2_A3)
def test_fia_empty_int4_key_on_the_ifa_route(pool, soc):
    """A one-row query (the IFA route) over an empty INT32 key read as INT4: the emulator failed to
    unpack zero words (a reshape with -1 over no element); the call runs."""
    got = outcome(pool, "FusedInferAttentionScoreV2", "fia_int4_pfa_empty", soc, a0=T((1, 4, 1, 64)))
    assert got.kind == "ran", got
