"""PromptFlashAttentionV2 sparseMode 20-22 on Atlas A2/A3: the base-API path.

`prompt_flash_attention_tiling.cpp` `RunBigKernelTilingWithParams` sends these modes
(`CheckBaseAPISupportScenarios`) to the base-API kernels before any other sparse, shape or
actual-length rule, with their own checks (`CheckBaseApiRequiredInput`,
`CheckBaseApiOptionalInput`). Those kernels take no mask (`isTriuMask` and `maskType` are never
set, so 20, 21 and 22 compute the same thing): every query row of batch b sees every key of b.
Layout SH packs the batches: batch b holds actualSeqLengths[b] query rows and
actualSeqLengthsKv[b] key rows, each right after the previous batch's
(`prompt_flash_attention_base_api.h`: addrQ/addrK grow by the batch's lengths).
Binaries exist for fp16 and bf16 only (`prompt_flash_attention_arch32.h`, the BASICAPI keys).
D != Dv or D > 256 selects the MLA base-API kernels, for any of SH/BSH/BSND/BNSD (`_mla_plan`).
"""
from dataclasses import dataclass

from ... import status
from ...kernels.attention.layouts import segments
from ..signature import OpError
from .pfa_common import BASE_API_MAX_D, BF16, F16, I8, TILING_LAYOUTS, tiling

HEAD_SIZE_LAYOUTS = ("SH", "BSH", "BSND", "BNSD", "BNSD_BSND")   # SetBaseApiTilingData reads D for these only


@dataclass(frozen=True)
class Plan:
    """What the base-API kernels compute: per batch b, query rows q_rows[b] = (start, count) against
    key rows kv_rows[b] of the tensors read as packed tokens [T, N, D] (``tokens``: every layout,
    the MLA kernels) or in the SH layout."""
    act_q: list
    act_kv: list
    q_rows: list
    kv_rows: list
    tokens: bool


def check(a, shapes) -> Plan:
    """The base-API checks in the source's order; returns what the kernels compute."""
    q, k, v, out = a.query, a.key, a.value, a.attentionOut
    for t, what in ((q, "query"), (k, "key"), (v, "value"), (out, "out")):
        if t.is_empty:
            tiling("base_api.empty", f"Shape size of {what} is invalid.")
    if q.dtype == F16 and not k.dtype == v.dtype == out.dtype == F16:
        tiling("base_api.fp16_dtypes", "the base-API path takes FLOAT16 key, value and attentionOut with a "
               f"FLOAT16 query (attentionOut is {out.dtype.short})")
    if q.dtype == BF16 and not (k.dtype == v.dtype == BF16 and out.dtype in (F16, BF16)):
        tiling("base_api.bf16_dtypes", "the base-API path takes BF16 key and value and a FLOAT16/BF16 "
               f"attentionOut with a BF16 query (attentionOut is {out.dtype.short})")
    if any(t is not None for t in (a.attenMask, a.quantScale2, a.quantOffset2)):
        tiling("base_api.mask", "PFA SH layout do not support attenMask or antiquant")
    if a.inputLayout not in TILING_LAYOUTS:
        tiling("base_api.layout", f"invalid input layout:{a.inputLayout}.")
    if not 2 <= q.ndim <= 4:
        tiling("base_api.query_rank", f"queryShape dim num is error, queryShape dim num = {q.ndim}")
    d, dv = 0, 0
    if a.inputLayout in HEAD_SIZE_LAYOUTS:        # D after the op_api's padding
        d, dv = shapes.d + shapes.pad * shapes.need_pad, shapes.dv + shapes.pad_v * shapes.need_pad
    mla = d != dv or d > BASE_API_MAX_D
    if not mla and a.inputLayout != "SH":
        tiling("base_api.sh_only", "inputLayout need to be SH")
    if not mla and (a.actualSeqLengths is None or a.actualSeqLengthsKv is None):
        tiling("base_api.actual_null", "actualSequenceLengthQ and actualSequenceLengthKV can't be null")
    if q.dtype == I8:
        tiling("base_api.int8_kernel", "no base-API kernel binary for an INT8 query")
    act_q, act_kv = _lengths(a)
    if not mla:
        return _fitted(a, Plan(act_q, act_kv, segments(act_q), segments(act_kv), tokens=False))
    return _fitted(a, _mla_plan(a, shapes, act_q, act_kv))


def _lengths(a):
    """SetBaseApiTilingData: B = len(actualSeqLengths) (1 without it) for SH, else the query's batch
    axis; each array gives element b, or element 0 when it has one, or S1/S2 when it is absent."""
    layout, q, k = a.inputLayout, a.query.shape, a.key.shape
    given_q, given_kv = list(a.actualSeqLengths or ()), list(a.actualSeqLengthsKv or ())
    if layout == "SH":
        batch, s1, s2 = len(given_q) or 1, q[0], k[0]
    else:
        batch = q[0]
        s1, s2 = (q[2], k[2]) if layout.startswith("BNSD") else (q[1], k[1])
    for given, what in ((given_q, "actualSeqLengths"), (given_kv, "actualSeqLengthsKv")):
        if 1 < len(given) < batch:
            raise OpError(status.ACLNN_ERR_INNER_NULLPTR, f"sparseMode {a.sparseMode}: {what} has {len(given)} "
                          f"elements for {batch} batches (the CANN tiling reads past the array; the emulator "
                          "rejects it)", rule="base_api.lengths_short")
    pick = lambda given, b, default: (given[b] if len(given) > 1 else given[0]) if given else default  # noqa: E731
    return [pick(given_q, b, s1) for b in range(batch)], [pick(given_kv, b, s2) for b in range(batch)]


def _mla_plan(a, shapes, act_q, act_kv):
    """The MLA base-API kernels (`prompt_flash_attention_base_mla.h`) read every layout as packed
    tokens (strides N*D: `dataShapeType` is taken from the quantType field, 0 here) and walk the
    batches with the longest lengths for batch 0 (a shadowed variable) and the actual ones after it
    for SH, the longest ones for the other layouts. With equal lengths that is batch b at rows
    b * length; with unequal ones the rows it computes depend on its block sizes."""
    if a.inputLayout == "SH" and shapes.d != shapes.dv:
        raise OpError(status.ACLNN_ERR_INNER_NULLPTR, f"sparseMode {a.sparseMode}, SH with D {shapes.d} and Dv "
                      f"{shapes.dv}: infershape sizes the output like the query, but the MLA kernel writes Dv "
                      "columns per head (the CANN source does not check this; the emulator rejects it)",
                      rule="base_api.sh_dv")
    longest_q, longest_kv = max(act_q), max(act_kv)
    if any(n != longest_q for n in act_q) or any(n != longest_kv for n in act_kv):
        raise OpError(status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR, f"sparseMode {a.sparseMode} with D {shapes.d} "
                      f"and Dv {shapes.dv} (the MLA base-API kernels) and unequal actual lengths {act_q} / "
                      f"{act_kv} is not implemented in aclnn-emu: the kernel computes batch 0 with the longest "
                      "lengths, so the rows it covers depend on its block sizes", rule="not_implemented")
    q_rows = [(b * longest_q, longest_q) for b in range(len(act_q))]
    kv_rows = [(b * longest_kv, longest_kv) for b in range(len(act_kv))]
    return Plan(act_q, act_kv, q_rows, kv_rows, tokens=True)


def _fitted(a, plan):
    """Rows past the tensors would be read from neighbouring memory: the emulator rejects them."""
    rows_q = a.query.numel // (a.numHeads * _d(a.query, a))
    rows_kv = a.key.numel // ((a.numKeyValueHeads or a.numHeads) * _d(a.key, a, kv=True))
    ends_q = [start + n for start, n in plan.q_rows]
    ends_kv = [start + n for start, n in plan.kv_rows]
    if any(n < 0 for n in plan.act_q + plan.act_kv) or max(ends_q, default=0) > rows_q \
            or max(ends_kv, default=0) > rows_kv:
        raise OpError(status.ACLNN_ERR_INNER_NULLPTR, f"sparseMode {a.sparseMode}: actual lengths {plan.act_q} / "
                      f"{plan.act_kv} reach past the {rows_q} query / {rows_kv} key rows (the CANN tiling does not "
                      "check this; its kernel would read past the tensors, so the emulator rejects it)",
                      rule="base_api.lengths_fit")
    return plan


def _d(t, a, kv=False):
    """A tensor's D as the layout reads it (unpadded)."""
    heads = (a.numKeyValueHeads or a.numHeads) if kv else a.numHeads
    return t.shape[-1] // heads if a.inputLayout in ("SH", "BSH") else t.shape[-1]
