"""PromptFlashAttentionV2 with inputLayout TND on Atlas A2/A3: the var-len checks.

Source: `prompt_flash_attention_tiling.cpp`, in `RunBigKernelTilingWithParams` order:
the TND branch of the basic-shape read (`CheckInputShapeWhenLayoutIsTND`,
`CheckActSeqWhenLayoutIsTND`), then the common sparse and token rules, which see B = S1 = S2 = 0
for TND (the branch leaves them unset), then the TND template (sparse modes 0/3/4,
`CheckVarLenPreNextToken`). actualSeqLengths/actualSeqLengthsKv are cumulative end offsets; batch
b holds rows [end[b-1], end[b]). The kernels (`PromptFlashAttentionVarLenScoreSameAB`, bf16 only)
compute scores and softmax in fp32, cast P to bf16 with CAST_ROUND before P.V and the output with
CAST_ROUND (`prompt_flash_attention_s1s2_bns1_mla.h`), as the bf16 path of the other layouts.
"""

from ..common import BF16, MAX_VAR_LEN_BATCH, tiling


D_PAIRS = ((192, 192), (192, 128), (128, 128), (64, 64))  # (query/key D, value D)


BAND_DV = (64, 128)


MODES = (0, 3, 4)


def check_shapes(a):
    """The TND branch of the basic-shape read; returns the per-batch (query, key) lengths."""
    ends_q, ends_kv = a.actualSeqLengths, a.actualSeqLengthsKv
    if len(ends_q or ()) > MAX_VAR_LEN_BATCH or len(ends_kv or ()) > MAX_VAR_LEN_BATCH:
        tiling(
            "tnd.actual_len_max",
            f"Array length of the query's actual sequence lengths({len(ends_q or ())}) and "
            f"the key/value's actual sequence lengths({len(ends_kv or ())}) must be less than or equal to 4096 "
            "when input layout is TND or NTD_TND.",
        )
    _check_shapes(a, ends_q, ends_kv)
    return _lengths(ends_q, ends_kv)


def paged_lengths(ends_q, ends_kv):
    """The length rules of CheckInputShapeWhenLayoutIsTND and CheckActSeqWhenLayoutIsTND with a
    block table (enablePA): the key lengths are each batch's own, so only their signs are checked;
    returns the per-batch (query, key) lengths."""
    _require(ends_q, ends_kv)
    return _lengths(ends_q, ends_kv, paged=True)


def _require(ends_q, ends_kv):
    for ends, what in ((ends_q, "actualSequenceLengthQ"), (ends_kv, "actualSequenceLengthKV")):
        if ends is None:
            tiling("tnd.actual_null", f"When layout is TND, {what} is required, but now is nullptr!")
    for ends, what in ((ends_q, "actualSequenceLengthQ"), (ends_kv, "actualSequenceLengthKV")):
        if not ends:
            tiling("tnd.actual_empty", f"When layout is TND, {what} is required, but the number of element in it is 0!")


def _check_shapes(a, ends_q, ends_kv):
    """CheckInputShapeWhenLayoutIsTND."""
    _require(ends_q, ends_kv)
    (t1, n1, d), (t2, n2, dk), (tv, nv, dv) = a.query.shape, a.key.shape, a.value.shape
    if t1 != ends_q[-1]:
        tiling(
            "tnd.query_t",
            f"When layout is TND, queryT({t1}) must be equal to the last element of "
            f"actualSequenceLengthQ({ends_q[-1]})",
        )
    if t2 != ends_kv[-1] or tv != ends_kv[-1]:
        tiling(
            "tnd.key_t",
            f"When layout is TND and PA not enabled, keyT({t2}) and valueT({tv}) must be equal to the "
            f"last element of actualSeqenceLengthKV({ends_kv[-1]})",
        )
    if n2 != nv:
        tiling("tnd.kv_n", f"When layout is TND, the values of keyN({n2}), valueN({nv}) must be equal")
    if n1 != a.numHeads:
        tiling(
            "tnd.query_n",
            f"When layout is TND, the values of queryN({n1}) not equal to Attr the query's heads num({a.numHeads})",
        )
    if n2 == 0:
        tiling("tnd.key_n_zero", "keyN is zero.")
    if n1 % n2:
        tiling("tnd.group", f"When layout is TND, the values of queryN({n1}) should be a multiple of keyN({n2}).")
    if d != dk or (d, dv) not in D_PAIRS:
        tiling(
            "tnd.d",
            f"When layout is TND, queryD({d}), keyD({dk}) and valueD({dv}) must be same equal "
            "192/128/64, or queryD and keyD equal 192 and valueD equal 128.",
        )
    if n1 // n2 != 1 and dv == 192:
        tiling("tnd.group_d192", f"When layout is TND, When G({n1 // n2}) not 1, valueD({dv}) should not be 192.")
    _check_sink(getattr(a, "learnableSink", None), n1, dv)
    if a.query.dtype != BF16:
        tiling("tnd.dtype", "When layout is TND, inputDataType should be bf16")


def _check_sink(sink, n1, dv):
    """CheckLearnableSinkWhenLayoutIsTND: FusedInferAttentionScore's learnableSink (PromptFlashAttention
    itself has none) is [N], and the base-API kernels that take it need value D 64 or 128."""
    if sink is None:
        return
    if sink.ndim != 1:
        tiling("tnd.sink_rank", f"learnable_sink enable, learnable_sink dim({sink.ndim}) must be 1!")
    if sink.shape[0] != n1:
        tiling("tnd.sink_n", f"learnable_sink enable, sinkN({sink.shape[0]}) must be same equal queryN({n1})!")
    if dv not in BAND_DV:
        tiling("tnd.sink_dv", "When Layout is TND, learnable_sink only support valueD equal 64/128.")


def _lengths(ends_q, ends_kv, paged: bool = False):
    """CheckActSeqWhenLayoutIsTND, then the per-batch lengths (differences of the end offsets; with
    ``paged`` the key lengths as given, GetActualSeqLenData)."""
    if len(ends_q) != len(ends_kv):
        tiling(
            "tnd.actual_len_equal",
            f"When layout is TND, the length of actualSequenceLengthQ({len(ends_q)}) and "
            f"actualSequenceLengthKV({len(ends_kv)}) must be equal.",
        )
    for i, (eq, ekv) in enumerate(zip(ends_q, ends_kv)):
        if eq < 0 or ekv < 0:
            tiling(
                "tnd.actual_negative",
                f"When layout is TND, actualSequenceLengthQ[{i}]={eq} and actualSequenceLengthKV[{i}]={ekv} must >= 0",
            )
    for what, ends in (("query", ends_q), ("key/value", ends_kv))[: 1 if paged else 2]:
        for i in range(1, len(ends)):
            if ends[i] < ends[i - 1]:
                tiling(
                    "tnd.actual_decreasing",
                    f"When layout is TND, the {what}'s actual sequence lengths must be "
                    f"not decreasing, but it's not at {i}, actSeqLen[{i}]={ends[i]}, "
                    f"actSeqLen[{i - 1}]={ends[i - 1]}",
                )
    diffs = [[e - p for e, p in zip(ends, [0] + list(ends[:-1]))] for ends in (ends_q, ends_kv)]
    return diffs[0], list(ends_kv) if paged else diffs[1]


def check_template(a, act_q, act_kv):
    """The TND template of RunBigKernelTilingWithParams (after the shared sparse and token rules,
    which TND reaches with B = S1 = S2 = 0)."""
    mode, pre, nxt = a.sparseMode, a.preTokens, a.nextTokens
    if mode not in MODES:
        tiling("tnd.sparse_mode", f"When Layout is TND, sparseMode only support 0,3 or 4, but sparseMode = {mode}")
    if mode == 0 and a.attenMask is not None:
        tiling("tnd.mode0_mask", "When Layout is TND, sparseMode = 0 not support attentionMask.")
    if mode == 4 and a.value.shape[2] not in BAND_DV:
        tiling("tnd.band_dv", "When Layout is TND, sparseMode = 4 only support valueD equal 64/128.")
    if mode == 3:
        for b, (aq, ak) in enumerate(zip(act_q, act_kv)):
            if aq > ak:
                tiling("tnd.causal_s1_s2", f"When layout is TND and sparse = 3 ,Batch[{b}], need s1[{aq}] <= s2[{ak}].")
    if mode == 4:
        # (CheckVarLenPreNextToken's first rule, pre + next >= 0, is the shared "nexttoken line" rule again.)
        for b, (aq, ak) in enumerate(zip(act_q, act_kv)):
            if aq and ak and (pre + aq < 0 or nxt + ak < 0):
                tiling(
                    "tnd.band_tokens",
                    f"Batch[{b}], actualSeqLen[{aq}] + preTokens[{pre}] must be greater than or "
                    f"equal to 0 and actualSeqLenKv[{ak}] + nextTokens[{nxt}] must be greater than or equal to 0",
                )
