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
D != Dv or D > 256 selects the MLA base-API kernels, which the emulator does not run.
"""
from ... import status
from ..signature import OpError
from .pfa_common import BASE_API_MAX_D, BF16, F16, I8, TILING_LAYOUTS, tiling

HEAD_SIZE_LAYOUTS = ("SH", "BSH", "BSND", "BNSD", "BNSD_BSND")   # SetBaseApiTilingData reads D for these only


def check(a, shapes):
    """The base-API checks in the source's order; returns the per-batch (query, key) lengths."""
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
    if d != dv or d > BASE_API_MAX_D:
        raise OpError(status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR, f"sparseMode {a.sparseMode} with D {d} and Dv {dv} "
                      "takes the MLA base-API kernels, which are not implemented in aclnn-emu",
                      rule="not_implemented")
    if a.inputLayout != "SH":
        tiling("base_api.sh_only", "inputLayout need to be SH")
    if a.actualSeqLengths is None or a.actualSeqLengthsKv is None:
        tiling("base_api.actual_null", "actualSequenceLengthQ and actualSequenceLengthKV can't be null")
    if q.dtype == I8:
        tiling("base_api.int8_kernel", "no base-API kernel binary for an INT8 query")
    return _lengths(a)


def _lengths(a):
    """B = len(actualSeqLengths); a kv array of length 1 is read for every batch (the host tiling's
    rule; the kernel reads element b of the device array, so a shorter array is read past its end)."""
    act_q, act_kv = list(a.actualSeqLengths), list(a.actualSeqLengthsKv)
    act_kv = [act_kv[b] if len(act_kv) > 1 else act_kv[0] for b in range(len(act_q))] if act_kv else [0] * len(act_q)
    rows_q, rows_kv = a.query.shape[0], a.key.shape[0]
    fitted_q = _fit(act_q, rows_q)
    fitted_kv = _fit(act_kv, rows_kv)
    if fitted_q != act_q or fitted_kv != act_kv:
        raise OpError(status.ACLNN_ERR_INNER_NULLPTR, f"sparseMode {a.sparseMode}: actual lengths {act_q} / {act_kv} "
                      f"reach past the {rows_q} query / {rows_kv} key rows (the CANN tiling does not check this; "
                      "its kernel would read past the tensors, so the emulator rejects it)",
                      rule="base_api.lengths_fit")
    return act_q, act_kv


def _fit(lengths, rows):
    fitted, used = [], 0
    for n in lengths:
        n = max(0, min(n, rows - used))
        fitted.append(n)
        used += n
    return fitted
