"""aclnnSparseFlashAttention: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import dataclasses
import numpy as np
from aclnn_emu import status
from aclnn_emu.kernels.sparse_attention.key_rows import KeyRows
from aclnn_emu.kernels.sparse_attention.select import RowSpans
from aclnn_emu.kernels.sparse_attention.sparse_flash_attention import Outputs, sparse_flash_attention
from aclnn_emu.opdef.outputs import writable
from aclnn_emu.opdef.signature import OpError
from aclnn_emu.ops.sparse_attention.paged import block_table, check_table_extent
from .entry import OP


@dataclasses.dataclass(frozen=True)
class Plan:
    lq: str
    lk: str
    b: int
    s1: int  # BSND: query S; TND: T1
    s2: int  # BSND: key S; TND: T2; PA: blocks per batch x block size
    n1: int
    d: int
    dv: int
    dr: int
    block: int  # PA cache block size (0 otherwise)
    scale: float
    sparse_block: int
    mode: int
    lse: bool


def _ints(tensor, what) -> np.ndarray:
    return tensor.read(what).reshape(-1).astype(np.int64)


def _spans(a, p: Plan, rows: int):
    """(RowSpans, batch of each row, KeyRows) as the kernel walks the rows."""
    if p.lq == "TND":
        cu_q = _ints(a.actualSeqLengthsQuery, "actualSeqLengthsQuery")
        batch = np.searchsorted(cu_q, np.arange(rows), side="right")
        valid = batch < len(cu_q)
        batch = np.minimum(batch, len(cu_q) - 1)
        start_q = np.concatenate(([0], cu_q[:-1]))
        len_q = np.diff(np.concatenate(([0], cu_q)))
        s1 = np.arange(rows) - start_q[batch]
    else:
        batch, s1 = np.divmod(np.arange(rows, dtype=np.int64), max(p.s1, 1))
        seq_q = a.actualSeqLengthsQuery
        len_q = np.full(p.b, p.s1, np.int64) if seq_q is None else _ints(seq_q, "actualSeqLengthsQuery")
        valid = s1 < len_q[batch]
    len_k, kbase = _key_lengths(a, p)
    spans = RowSpans(s1=s1, sq=len_q[batch], sk=len_k[batch], kbase=kbase[batch], valid=valid)
    if p.lk == "PA_BSND":
        keys = KeyRows(kbase, block_table(a.blockTable, a.key.shape[0], OP.name), p.block)
    else:
        keys = KeyRows(kbase)
    return spans, batch.astype(np.int64), keys


def _key_lengths(a, p: Plan):
    """Each batch's key count and first key row: TND offsets are cumulative; BSND/PA lengths are
    per batch (one value serves every batch)."""
    seq = a.actualSeqLengthsKv
    if p.lk == "TND":
        cu = _ints(seq, "actualSeqLengthsKv")
        return np.diff(np.concatenate(([0], cu))), np.concatenate(([0], cu[:-1]))
    kbase = np.arange(p.b, dtype=np.int64) * p.s2
    if seq is None:
        return np.full(p.b, p.s2, np.int64), kbase
    lengths = _ints(seq, "actualSeqLengthsKv")
    return (np.full(p.b, lengths[0]) if lengths.size == 1 else lengths), kbase


def _run(a, p: Plan) -> None:
    rows = a.query.numel // (p.n1 * p.d)
    spans, batch, keys = _spans(a, p, rows)
    _check_key_extent(spans, batch, keys, a.key.numel // p.d)
    read = lambda t, shape, what: t.read(what).reshape(shape)  # noqa: E731
    k_rows = a.key.numel // p.d
    out = writable(a.attentionOutOut, (rows, p.n1, p.dv), a.query.np_dtype, OP.name)
    smax = writable(a.softmaxMaxOut, (rows, p.n1), np.float32, OP.name) if p.lse else (None, None)
    ssum = writable(a.softmaxSumOut, (rows, p.n1), np.float32, OP.name) if p.lse else (None, None)
    if not spans.valid.all():
        out[0][~spans.valid] = 0  # the kernel zeroes the whole output first when a batch is short
    sparse_flash_attention(
        read(a.query, (rows, p.n1, p.d), "query"),
        read(a.queryRope, (rows, p.n1, p.dr), "queryRope"),
        read(a.key, (k_rows, p.d), "key"),
        read(a.keyRope, (k_rows, p.dr), "keyRope"),
        read(a.value, (k_rows, p.dv), "value"),
        read(a.sparseIndices, (rows, a.sparseIndices.shape[-1]), "sparseIndices"),
        spans,
        batch,
        keys,
        scale=p.scale,
        block_size=p.sparse_block,
        sparse_mode=p.mode,
        outputs=Outputs(out[0], smax[0], ssum[0]),
    )
    for _, finish in (out, smax, ssum):
        if finish is not None:
            finish()


def _check_key_extent(spans, batch, keys, key_rows) -> None:
    if not spans.valid.any():
        return
    if keys.table is not None:  # GetKeyGmOffset
        check_table_extent(OP.name, keys.table, keys.block_size, batch[spans.valid], spans.sk[spans.valid])
        return
    ends = (spans.kbase + spans.sk)[spans.valid]
    if (ends > key_rows).any() or (spans.sk < 0).any():
        raise OpError(
            status.ACL_ERROR_RT_AICORE_EXCEPTION,
            "aclnnSparseFlashAttention: actual sequence lengths reach "
            f"past the {key_rows} key rows; the NPU reads out of bounds",
            rule="kernel.key_extent",
        )
