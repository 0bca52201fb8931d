"""The split-fuse route of Atlas A2/A3 (IsUsingFAI: a TND call without sink or rope, sparse 0/3, GQA
with innerPrecise 0 or MHA fp16 without mask, paged or not), op_host/fused_infer_attention_score_tiling.cpp
TilingProcess4SplitFuse: after CheckInputLayout and CheckOutShape, CheckFAIAvailability
(CheckFAIQKV, CheckFAIMask, CheckFAISinglePara, CheckFAILseOutput), every failure 561002; the
FAInfer tiling itself (flash_attention_infer_tiling.h DoTiling) cannot fail.

CheckFAIQKV calls CheckFAIIsTND but drops its result, so the TND rules on the lengths (query T the
last query length; without a cache the key T the last key length) fail nothing there. The
kernels (flash_attention_regular.h) read the query lengths as cumulative ends, the key lengths as
cumulative without a cache and as each batch's own with one (PAGED_CACHE_FLAG). Lengths that are
missing (ConvertContextToParamsFAI reads them without a check) or that address rows outside the
query or key (with a cache: a batch's blocks past the flat blockTable the kernels step through)
the emulator refuses (561002, rule split_fuse.lengths): the hardware reads past its tensors there.

The kernels' roundings are not established here: the call runs with the FIA-V3 kernels' maths
(inferred.split_fuse).

ConvertContextToParamsFAI takes blockTable's dimension 1 as the blocks per batch whatever its rank
(no check refuses a table of other than 2 dims on this route), and the kernels step the flat table
by it (pages.batch_rows). A table of fewer than 2 dims has no dimension 1: the emulator refuses it
(561002, rule split_fuse.block_table_rank)."""

import copy

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_int32, shape_dim

from . import launch, shared_prefix
from .failure import tiling
from .route import Route, first

HEAD_SIZE_MAX = 256
BLOCK_ALIGN, BLOCK_MAX = 16, 512
MASK_SIZE = 2048  # the compressed causal mask of sparse mode 3


def run(a, env):
    """The split-fuse checks, then the launch (FIA-V3 maths over each batch's rows)."""
    a = _without_prefix(a, env)
    route = Route(a, env)
    axes, (qd, _, vd) = route.shape_facts()
    _check_out(a, axes, vd)
    _check_qkv(a)
    _check_mask(a)
    _check_single_para(a, route, qd)
    _check_lse(a, axes)
    if route.paged and a.blockTableOptional.ndim < 2:
        raise tiling("split_fuse.block_table_rank", "the split-fuse tiling reads blockTable's dimension 1")
    ends_q = _ints(a.actualSeqLengthsOptional)
    ends_kv = _ints(a.actualSeqLengthsKvOptional)
    if ends_q is None or ends_kv is None or not ends_q or len(ends_kv) < len(ends_q):
        raise tiling(
            "split_fuse.lengths", "the split-fuse tiling reads actualSeqLengths and actualSeqLengthsKv per batch"
        )
    b = len(ends_q)
    kv = ends_kv[:b] if route.paged else list(np.diff([0, *ends_kv[:b]]))
    q = np.diff([0, *ends_q])
    rows = first(a.key).shape[0]
    if (
        min(q) < 0
        or min(kv) < 0
        or ends_q[-1] > axes.s
        or (_past_table(a, kv) if route.paged else ends_kv[b - 1] > rows)
    ):
        raise tiling(
            "split_fuse.lengths",
            f"actualSeqLengths {ends_q} / actualSeqLengthsKv {ends_kv} address rows outside the query or key",
        )
    return launch.fia_v3(a, env, route, axes, qd, vd)


def _past_table(a, kv) -> bool:
    """Whether a batch's keys run past the flat blockTable the kernels step through: batch b reads
    entries from b times its dimension 1 on, one per blockSize keys."""
    table, block = a.blockTableOptional, attr_int32(a.blockSize)
    step = shape_dim(table.shape, 1)
    return block <= 0 or any(i * step - (-n // block) > table.numel for i, n in enumerate(kv))


def _ints(values):
    return None if values is None else [int(x) for x in values]


def _check_out(a, axes, vd) -> None:
    """CheckInputLayout's query rank and CheckOutShape for TND: [T, N, value D]."""
    want = (axes.s, axes.n, vd)
    if tuple(a.attentionOut.shape) != want:
        raise tiling(
            "split_fuse.out_shape",
            f"Except outputLayout is TND and Out shape size{list(want)} does NOT match Attention Out shape "
            f"size{list(a.attentionOut.shape)}!",
        )


def _without_prefix(a, env):
    """The split-fuse route never reads a shared prefix: CheckFAIAvailability checks none of its
    inputs and FAInferContext (ConvertContextToParamsFAI) has no field for it, so the call runs as
    one without the prefix (a copy: the caller's arguments stay as given)."""
    names = ("keySharedPrefixOptional", "valueSharedPrefixOptional", "actualSharedPrefixLenOptional")
    if all(getattr(a, name) is None for name in names):
        return a
    shared_prefix.ignored(env, "the split-fuse kernels (IsUsingFAI) never receive it")
    view = copy.copy(a)
    for name in names:
        setattr(view, name, None)
    return view


def _check_qkv(a) -> None:
    """CheckFAIQKV: one fp16/bf16 dtype, no tensor list."""
    dtypes = {a.query.dtype, first(a.key).dtype, first(a.value).dtype}
    if len(dtypes) != 1:
        raise tiling("split_fuse.dtype", "Input dtype of Q, K, and V must be consitent")
    if a.query.dtype not in (DataType.ACL_FLOAT16, DataType.ACL_BF16):
        raise tiling("split_fuse.dtype", "Input dtype of Q, K, and V must be FP16 or BF16")
    if len(a.key.items) > 1 or len(a.value.items) > 1:
        raise tiling("split_fuse.tensor_list", "Split fuse senario does not support incontinuous kv tensor list")


def _check_mask(a) -> None:
    """CheckFAIMask: sparse 0 without a mask, 3 with one of 2-4 dims, [(1, ...,) 2048, 2048]."""
    mode, mask = attr_int32(a.sparseMode), a.attenMaskOptional
    if mode not in (0, 3):
        raise tiling("split_fuse.sparse_mode", "In split fuse senario, sparseMode shall be 0 or 3")
    if mask is None:
        if mode != 0:
            raise tiling("split_fuse.mask_required", "When attnMask is not provided, sparseMode must be 0")
        return
    if mode != 3:
        raise tiling("split_fuse.mask_mode", "When attnMask is provided, sparseMode must be 3")
    if mask.ndim not in (2, 3, 4):
        raise tiling("split_fuse.mask_rank", "When attnMask is provided, it must have 2 or 3 or 4 dims")
    lead, last = mask.shape[:-2], mask.shape[-2:]
    if tuple(last) != (MASK_SIZE, MASK_SIZE) or any(x != 1 for x in lead):
        raise tiling(
            "split_fuse.mask_shape",
            f"In split fuse senario, when sparseMode is 3, the input mask {list(mask.shape)} shall be "
            f"[(1, ...,) {MASK_SIZE}, {MASK_SIZE}]",
        )


def _check_single_para(a, route, qd) -> None:
    """CheckFAISinglePara: with a cache the blockSize attribute its dimension 1, a multiple of 16 up
    to 512; one head size for query, key and value, at most 256."""
    k, v = first(a.key), first(a.value)
    if route.paged:
        kv_heads = attr_int32(a.numKeyValueHeads)  # read as given: IsUsingFAI let only GQA (not 0) through
        kd, vd = shape_dim(k.shape, 2) // kv_heads, shape_dim(v.shape, 2) // kv_heads
        block = int(a.blockSize)
        if block != shape_dim(k.shape, 1):
            raise tiling(
                "split_fuse.block_size",
                "When paged cache is used, the first dim of K and V must be consistent with input blockSize attr",
            )
        if block % BLOCK_ALIGN:
            raise tiling(
                "split_fuse.block_size",
                "When input layout is TND and paged cache is used, the input blockSize must be a multiple of 16",
            )
        if block > BLOCK_MAX:
            raise tiling(
                "split_fuse.block_size",
                "When input layout is TND and paged cache is used, the input blockSize must be less than 512",
            )
    else:
        kd, vd = shape_dim(k.shape, 2), shape_dim(v.shape, 2)
    if qd != kd or qd != vd:
        raise tiling("split_fuse.head_size", "HeadDim of Q, K, and V must be consistent")
    if qd > HEAD_SIZE_MAX:
        raise tiling("split_fuse.head_size", "When input layout is TND, headDim shall not exceed 256")


def _check_lse(a, axes) -> None:
    """CheckFAILseOutput: softmaxLse [T, N, 1]."""
    if not a.lse_wanted:
        return
    if a.softmaxLse.ndim != 3:
        raise tiling("split_fuse.lse_shape", "When layout is TND, SoftmaxLse shape dim must be 3")
    if tuple(a.softmaxLse.shape) != (axes.s, axes.n, 1):
        raise tiling(
            "split_fuse.lse_shape",
            f"When layout is TND, SoftmaxLse shape must be [T, N, 1].In this case it is [{axes.s}, {axes.n}, 1]",
        )
