"""PromptFlashAttentionV2 sparseMode 20-22 on Atlas A2/A3: the base-API path.

`prompt_flash_attention_tiling.cpp` `RunBigKernelTilingWithParams` sends these modes
(`CheckBaseAPISupportScenarios`) to the base-API kernels before any other sparse, shape or
actual-length rule, with their own checks (`CheckBaseApiRequiredInput`,
`CheckBaseApiOptionalInput`). Their mask is pseShift (base_api_pse): without one only sparseMode
20 runs (21 and 22 fail); besides it every query row of batch b sees every key of b.
Layout SH packs the batches: batch b holds actualSeqLengths[b] query rows and
actualSeqLengthsKv[b] key rows, each right after the previous batch's
(`prompt_flash_attention_base_api.h`: addrQ/addrK grow by the batch's lengths).
Binaries exist for fp16 and bf16 only (`prompt_flash_attention_arch32.h`, the BASICAPI keys).
D != Dv or D > 256 selects the MLA base-API kernels, for any of SH/BSH/BSND/BNSD (`_mla_plan`).
"""

import itertools
from dataclasses import dataclass, replace
import numpy as np
from aclnn_emu import status
from aclnn_emu.kernels.attention.layouts import segments
from aclnn_emu.runtime import sanitizer
from aclnn_emu.opdef.gaps import Gaps
from . import base_api_pse, precise
from .entry import OP
from ..common import BASE_API_MAX_D, BF16, F16, I8, TILING_LAYOUTS, tiling

# The base-API kernels (sparse modes 10-14 and the MLA path) read past what these calls give them; the
# 8.5 tiling does not check them, so the emulator refuses them with the code its l0op failures take.
REFUSED = Gaps(
    OP,
    "refused",
    {
        "lengths_short": "actual-lengths arrays with more than one element but fewer than the batch, in the "
        "base-API sparse modes (the tiling reads element b of each)",
        "sh_dv": "SH layout with a value head size other than the query's on the MLA base-API kernel (it writes "
        "Dv columns per head into an output sized like the query)",
        "mla_lengths_read": "SH batches past the actual-lengths arrays on the MLA base-API kernel (it reads "
        "element b of each)",
        "lengths_fit": "actual lengths reaching past the query or key rows in the base-API sparse modes",
        "kv_hidden": "an SH/BSH key or value whose H is not numKeyValueHeads x its head size in the base-API "
        "sparse modes (the kernels step each row by numKeyValueHeads x D)",
    },
    code=status.ACLNN_ERR_INNER_NULLPTR,
)


HEAD_SIZE_LAYOUTS = ("SH", "BSH", "BSND", "BNSD", "BNSD_BSND")  # SetBaseApiTilingData reads D for these only


@dataclass(frozen=True)
class Plan:
    """What the base-API kernels compute: per batch they compute, query rows q_rows[i] = (start,
    count) against key rows kv_rows[i] of the tensors read as packed tokens [T, N, D] (``tokens``:
    every layout, the MLA kernels, whose softmax takes key_blocks[i] keys at a time) or in the SH
    layout; every other output row is 0."""

    act_q: list
    act_kv: list
    q_rows: list
    kv_rows: list
    tokens: bool
    key_blocks: list | None = None
    precision: object = None  # the kernels' roundings (prompt_flash_attention.Precision)
    read_mask: object = None  # the reader of the pseShift mask (base_api_pse.reader)


def check(a, shapes, env) -> Plan:
    """The base-API checks in the source's order; returns what the kernels compute."""
    q, k, v, out = a.query, a.key, a.value, a.attentionOut
    for t, what in ((q, "query"), (k, "key"), (v, "value"), (out, "out")):
        if t.is_empty:
            tiling("base_api.empty", f"Shape size of {what} is invalid.")
    if q.dtype == F16 and not k.dtype == v.dtype == out.dtype == F16:
        tiling(
            "base_api.fp16_dtypes",
            "the base-API path takes FLOAT16 key, value and attentionOut with a "
            f"FLOAT16 query (attentionOut is {out.dtype.short})",
        )
    if q.dtype == BF16 and not (k.dtype == v.dtype == BF16 and out.dtype in (F16, BF16)):
        tiling(
            "base_api.bf16_dtypes",
            "the base-API path takes BF16 key and value and a FLOAT16/BF16 "
            f"attentionOut with a BF16 query (attentionOut is {out.dtype.short})",
        )
    if any(t is not None for t in (a.attenMask, a.quantScale2, a.quantOffset2)):
        tiling("base_api.mask", "PFA SH layout do not support attenMask or antiquant")
    if a.inputLayout not in TILING_LAYOUTS:
        tiling("base_api.layout", f"invalid input layout:{a.inputLayout}.")
    if not 2 <= q.ndim <= 4:
        tiling("base_api.query_rank", f"queryShape dim num is error, queryShape dim num = {q.ndim}")
    d, dv = 0, 0
    if a.inputLayout in HEAD_SIZE_LAYOUTS:  # D after the op_api's padding
        d, dv = shapes.d + shapes.pad * shapes.need_pad, shapes.dv + shapes.pad_v * shapes.need_pad
    mla = d != dv or d > BASE_API_MAX_D
    inner_precise = precise.check_base_api(a)  # CheckBaseApiOptionalInput
    if not mla and a.inputLayout != "SH":
        tiling("base_api.sh_only", "inputLayout need to be SH")
    if not mla and (a.actualSeqLengths is None or a.actualSeqLengthsKv is None):
        tiling("base_api.actual_null", "actualSequenceLengthQ and actualSequenceLengthKV can't be null")
    if a.inputLayout in ("SH", "BSH"):
        kv_heads = a.numKeyValueHeads or a.numHeads
        if k.shape[-1] != kv_heads * shapes.d or v.shape[-1] != kv_heads * shapes.dv:
            REFUSED.refuse("kv_hidden", f"key {list(k.shape)}, value {list(v.shape)}, numKeyValueHeads {kv_heads}")
    act_q, act_kv = _lengths(a)  # SetBaseApiTilingData, before these checks
    max_q, max_kv = (max((n % base_api_pse.UINT32 for n in act), default=0) for act in (act_q, act_kv))
    pse = precise.pse_of(a)
    strides = base_api_pse.check(a, pse, mla, len(act_q), max_q, max_kv)
    if q.dtype == I8:
        tiling("base_api.int8_kernel", "no base-API kernel binary for an INT8 query")
    if not mla:
        plan = Plan(act_q, act_kv, segments(act_q), segments(act_kv), tokens=False)
    else:
        plan = _mla_plan(a, shapes, act_q, act_kv, env)
    plan = _fitted(a, replace(plan, precision=precise.base_api_precision(a, inner_precise, plan.tokens)))
    read_mask = base_api_pse.reader(pse, strides, a.numHeads, max_q, plan.q_rows, plan.kv_rows)
    return replace(plan, read_mask=read_mask)


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
            REFUSED.refuse(
                "lengths_short", f"sparseMode {a.sparseMode}: {what} has {len(given)} elements for {batch} batches"
            )
    pick = lambda given, b, default: (given[b] if len(given) > 1 else given[0]) if given else default  # noqa: E731
    return [pick(given_q, b, s1) for b in range(batch)], [pick(given_kv, b, s2) for b in range(batch)]


def _mla_plan(a, shapes, act_q, act_kv, env):
    """The MLA base-API kernels (`prompt_flash_attention_base_mla.h`, `…_base_mla_high_precision.h`)
    read every layout as packed tokens (strides N*D: `dataShapeType` is taken from the quantType
    field, 0 here) and compute only the query rows their block walk (``_mla_walk``) reaches."""
    if a.inputLayout == "SH" and shapes.d != shapes.dv:
        REFUSED.refuse("sh_dv", f"sparseMode {a.sparseMode}, SH with D {shapes.d} and Dv {shapes.dv}")
    given = None
    if a.inputLayout == "SH":
        given = (list(a.actualSeqLengths or ()), None if a.actualSeqLengthsKv is None else list(a.actualSeqLengthsKv))
    q_rows, kv_rows, key_blocks = _mla_walk(act_q, act_kv, given, shapes.d, env)
    return Plan(act_q, act_kv, q_rows, kv_rows, tokens=True, key_blocks=key_blocks)


def _mla_walk(act_q, act_kv, given, d, env):
    """The kernels' block walk; returns the (start, count) query and key token rows of each batch
    it computes and its softmax key block. The tiling counts totalQBlkNum blocks over the tiling's
    lengths (block sizes from `_block_sizes`); core i takes blocks i, i + cores, ... and walks the
    batches in order, so what is computed does not depend on the core count. The walk starts
    batch 0 with the longest lengths (`qSeqlen = maxSeqlen`; the SH branch only declares
    shadowing locals) but batch 0's block count and size; each later batch starts right after the
    previous one's lengths and takes, for SH (``given``: the raw arrays, which the kernel indexes
    per batch), actualSeqLengths[b] and actualSeqLengthsKv[b], else the longest ones again, until
    the tiling's total runs out. A batch with a zero length is skipped. Rows it does not reach are
    not written. The vector cores take the keys one block of PP_NN columns at a time, two blocks
    at once past four (`NO_STACK_S_BLOCK_LIMIT`)."""

    def blocks(q_len, rows):
        return -(-q_len // rows) if q_len else 0

    def key_block(kv_len, cols):
        return cols * (2 if blocks(kv_len, cols) > NO_STACK_S_BLOCK_LIMIT else 1)

    tiling_sizes = [_block_sizes(q, kv, d) for q, kv in zip(act_q, act_kv)]
    total = sum(blocks(q, rows) for q, (rows, _) in zip(act_q, tiling_sizes))
    q_len, kv_len, (rows, cols) = max(act_q), max(act_kv), tiling_sizes[0]
    start, end, q_tok, kv_tok = 0, blocks(act_q[0], rows), 0, 0
    q_rows, kv_rows, key_blocks = [], [], []
    for batch in itertools.count(1):
        done = min(end, total) - start
        if done > 0 and q_len and kv_len:
            q_rows.append((q_tok, min(done * rows, q_len)))
            kv_rows.append((kv_tok, kv_len))
            key_blocks.append(key_block(kv_len, cols))
        if end >= total:
            return q_rows, kv_rows, key_blocks
        start, q_tok, kv_tok = end, q_tok + q_len, kv_tok + kv_len
        if given is not None:
            q_len, kv_len = (
                _element(array, batch, what) for array, what in zip(given, ("actualSeqLengths", "actualSeqLengthsKv"))
            )
            if q_len and not kv_len:
                env.warn(
                    f"portability: batch {batch} has {q_len} query rows and no key: the MLA kernel sizes its "
                    "query blocks from PP_NN[-1] (an index before the table), taken here as at most D"
                )
        rows, cols = _block_sizes(q_len, kv_len, d)
        end += blocks(q_len, rows)


def _element(array, batch, what):
    """actualSeqLengths*[batch] as the kernel reads it (no broadcast of a single element)."""
    if array is None or batch >= len(array):
        REFUSED.refuse(
            "mla_lengths_read", f"{what} has {0 if array is None else len(array)} elements; SH batch {batch}"
        )
    return array[batch]


PP_ROWS = tuple(range(16, 129, 16))  # PP_MM: the query block sizes


PP_COLS = tuple(range(16, 257, 16))  # PP_NN: the key block sizes


PP_BLOCK_BUFFER = 128 * 128


NO_STACK_S_BLOCK_LIMIT = 4


def _block_sizes(q_len, kv_len, d):
    """(query rows, key columns) per block: `GetPPmnIbd` with isMLA (kernel) =
    `SetBaseApiSeqTilingData` (tiling). With D > 256 the key block never exceeds D, so the rows
    depend on D and the query length only (an index the tiling clamps at 0 and the kernel does not
    falls on a length of 0, which has no block)."""

    def align(n):
        return -(-n // 16) * 16

    def index(val, table):
        return len(table) - 1 if val > table[-1] else max(val // 16 - 1, 0)

    d_aligned = align(d)
    cols = PP_COLS[index(min(PP_BLOCK_BUFFER // max(d_aligned, 128) // 16 * 16, align(kv_len)), PP_COLS)]
    return PP_ROWS[index(min(PP_BLOCK_BUFFER // max(d_aligned, cols) // 16 * 16, align(q_len)), PP_ROWS)], cols


def report_unwritten(q_rows, total):
    """The MLA kernels write their output to a workspace tensor (`prompt_flash_attention_base_aclnn.cpp`
    AllocTensor) that the op_api's ViewCopy then copies whole into attentionOut: token rows the walk
    does not reach carry stale workspace bytes on the NPU. The emulator writes zeros there."""
    written = np.zeros(total, bool)
    for start, count in q_rows:
        written[start : start + count] = True
    if not written.all():
        sanitizer.report(
            "uninitialized-read",
            f"aclnnPromptFlashAttentionV2: the MLA base-API kernel leaves "
            f"{int((~written).sum())} of {total} output token rows unwritten (first: row "
            f"{int(np.argmin(written))}); ViewCopy copies them from uninitialised workspace memory "
            "into attentionOut on the NPU; aclnn-emu writes zeros",
        )


def _fitted(a, plan):
    """Rows past the tensors would be read from neighbouring memory: the emulator rejects them."""
    rows_q = a.query.numel // (a.numHeads * _d(a.query, a))
    rows_kv = a.key.numel // ((a.numKeyValueHeads or a.numHeads) * _d(a.key, a, kv=True))
    ends_q = [start + n for start, n in plan.q_rows]
    ends_kv = [start + n for start, n in plan.kv_rows]
    if (
        any(n < 0 for n in plan.act_q + plan.act_kv)
        or max(ends_q, default=0) > rows_q
        or max(ends_kv, default=0) > rows_kv
    ):
        REFUSED.refuse(
            "lengths_fit",
            f"sparseMode {a.sparseMode}: actual lengths {plan.act_q} / {plan.act_kv}, {rows_q} query / {rows_kv} key rows",
        )
    return plan


def _d(t, a, kv=False):
    """A tensor's D as the layout reads it (unpadded)."""
    heads = (a.numKeyValueHeads or a.numHeads) if kv else a.numHeads
    return t.shape[-1] // heads if a.inputLayout in ("SH", "BSH") else t.shape[-1]
