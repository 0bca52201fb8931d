"""A key/value tensor list on the PFA route: one [1, ...] tensor per batch, each with its own S.

Atlas A2/A3, `TilingProcess4PFA` → `CheckParamsPFA` → `CheckKvPFA` (fused_infer_attention_score_tiling.cpp):
the list mode holds when there is more than one key tensor, no block table, a layout other than NSD,
and the query's batch differs from the first key tensor's; Ascend910_95, `TilingFusedInferAttentionScoreV2`
(arch35/fused_infer_attention_score_tiling_v2.cpp): whenever there is more than one key tensor, a block
table or TND then failing. Both check `CheckTensorList` / `GetCumulativeKeyValueSIn{BSH,BNSD,BSND}`: each
tensor of batch 1, as many key and value tensors as query batches, the heads, H or D alike across them
(Ascend910_95: the key's and the value's each, PFA MLA's 192/128 allowed), each key's S equal to its
value's, and no empty tensor beside non-empty ones. The PFA tilings then take S2 as the longest S, each
batch's key length as its tensor's S unless actualSeqLengthsKv gives one in [0, that S]
(`CheckActSeqLen`, `ParseActualSeqLengths`), and refuse a shared prefix and left padding. Every
failure is 561002. The emulator stacks the tensors, zero-padded to the longest S, into the batched key
and value the PFA kernels walk with those lengths.
"""

import numpy as np

from aclnn_emu.opdef.generated import attr_uint32, shape_dim

from .failure import tiling
from .layouts import split

BATCH_LIMIT = 65535  # Ascend910_95's BLIMIT
MLA_QK_D, MLA_V_D = 192, 128
S_AXIS = {"BSH": 1, "BSND": 1, "BNSD": 2}
RANK = {"BSH": 3, "BSND": 4, "BNSD": 4}


def listed(a, arch35: bool) -> bool:
    keys = a.key.items
    if len(keys) < 2:
        return False
    if arch35:
        return True
    layout = split(a.inputLayout)[0]
    return (
        layout != "NSD" and a.blockTableOptional is None and shape_dim(a.query.shape, 0) != shape_dim(keys[0].shape, 0)
    )


def check(a, arch35: bool) -> list[int]:
    """The list checks in the tilings' order; returns each batch's key S."""
    layout = split(a.inputLayout)[0]
    if arch35 and a.blockTableOptional is not None:
        raise tiling("list.paged", "When tensorlist is used, page attention is not supported!")
    if arch35 and layout == "TND":
        raise tiling("list.tnd", "When tensorlist is used, layout TND is not supported!")
    keys, values, batch = a.key.items, a.value.items, shape_dim(a.query.shape, 0)
    for what, tensors in (("Key", keys), ("Value", values)):
        for t in tensors:
            if shape_dim(t.shape, 0) != 1:
                raise tiling(
                    "list.batch",
                    f"Batch value of {what}({shape_dim(t.shape, 0)}) is NOT 1 but should be 1 under tensorlist mode!",
                )
    if batch != len(keys) or len(keys) != len(values):
        raise tiling("list.count", f"Batch of Query({batch}), Key({len(keys)}) and Value({len(values)}) do NOT equal")
    if arch35 and batch > BATCH_LIMIT:
        raise tiling("list.batch_limit", f"Batch of Query({batch}) do NOT larger than 65535 under tensorlist mode!")
    _alike(a, layout, keys, values, arch35)
    lengths = [shape_dim(t.shape, S_AXIS.get(layout, 1)) for t in keys]
    if 0 in lengths and sum(lengths):
        raise tiling("list.empty", "Got empty tensor in key and value which is not continuous.")
    given = a.actualSeqLengthsKvOptional
    for i, n in enumerate([int(x) for x in given or ()][:batch]):
        if n < 0 or n > lengths[i]:
            raise tiling("list.actual_kv", f"Actual_seq_lengths_kv[{i}]({n}) must be in range[0, {lengths[i]}]!")
    if a.keySharedPrefixOptional is not None or a.valueSharedPrefixOptional is not None:
        raise tiling("list.shared_prefix", "when tensorlist is used, system prefix is not supported!")
    if a.queryPaddingSizeOptional is not None or a.kvPaddingSizeOptional is not None:
        raise tiling("list.padding", "When tensorlist is used, left padding is not supported!")
    return lengths


def overruns_shape_array(a) -> bool:
    """Whether a key tensor has more dimensions than the four the kernels' shape array holds."""
    return any(len(t.shape) > 4 for t in a.key.items)


def _alike(a, layout, keys, values, arch35):
    """The per-layout rules: heads, H or D alike across the tensors, each key's S its value's."""
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    s_axis = S_AXIS.get(layout, 1)
    if layout == "BSH":
        k0, v0 = shape_dim(keys[0].shape, 2), shape_dim(values[0].shape, 2)
        mla = kv_heads and (k0 // kv_heads, v0 // kv_heads) == (MLA_QK_D, MLA_V_D)
        if arch35 and k0 != v0 and not mla:
            raise tiling(
                "list.h", f"H of Key({k0}) and Value({v0}) is different in the first batch under tensorlist mode!"
            )
        want_v = v0 if arch35 else k0
        if any(shape_dim(k.shape, 2) != k0 for k in keys) or any(shape_dim(v.shape, 2) != want_v for v in values):
            raise tiling("list.h", "H is not the same across batch and Key Value under tensorlist mode!")
    else:
        n_axis = 1 if layout == "BNSD" else 2
        n0, k0, v0 = shape_dim(keys[0].shape, n_axis), shape_dim(keys[0].shape, 3), shape_dim(values[0].shape, 3)
        if kv_heads != n0:
            raise tiling("list.kv_heads", f"kvN from tensorlist ({n0}) does NOT EQUAL kvN from attribute ({kv_heads})!")
        if arch35 and k0 != v0 and (k0, v0) != (MLA_QK_D, MLA_V_D):
            raise tiling(
                "list.d", f"D of Key({k0}) and Value({v0}) is different in the first batch under tensorlist mode!"
            )
        for k, v in zip(keys, values):
            if shape_dim(k.shape, n_axis) != n0 or shape_dim(v.shape, n_axis) != n0:
                raise tiling("list.n", "N is not the same across batch and Key Value under tensorlist mode!")
            if shape_dim(k.shape, 3) != k0 or shape_dim(v.shape, 3) != (v0 if arch35 else k0):
                raise tiling("list.d", "D is not the same across batch and Key Value under tensorlist mode!")
    for k, v in zip(keys, values):
        if shape_dim(k.shape, s_axis) != shape_dim(v.shape, s_axis):
            raise tiling(
                "list.s",
                f"S from Key({shape_dim(k.shape, s_axis)}) and Value({shape_dim(v.shape, s_axis)}) does NOT equal!",
            )
    if arch35 and a.keyRopeOptional is not None:
        _rope_rows(a.keyRopeOptional, keys, s_axis)


def _rope_rows(key_rope, keys, s_axis):
    """Ascend910_95 CheckTensorList with a keyRope: one batched tensor of as many batches as the
    list, every key tensor of its S. The list is then a dense cache cut per batch, and the kernels
    read the rope at each batch's own rows (flash_attention_score_block_cube.h: keyRope's offset
    takes the batch, the key's the batch's tensor)."""
    if shape_dim(key_rope.shape, 0) != len(keys):
        raise tiling(
            "list.rope_batch", f"Batch of Key({len(keys)}) do NOT equal to Batch of KeyRope"
            f"({shape_dim(key_rope.shape, 0)}) under tensorlist mode!",
        )  # fmt: skip
    rows = shape_dim(key_rope.shape, s_axis)
    for k in keys:
        if shape_dim(k.shape, s_axis) != rows:
            raise tiling(
                "list.rope_s", f"S for Key({shape_dim(k.shape, s_axis)}) and keyRope({rows}) does NOT equal but "
                "they should!",
            )  # fmt: skip


def stacked(a, lengths):
    """(key, value, key lengths) as the PFA preparation takes them: the lists stacked along the
    batch, zero-padded to the longest S; the lengths actualSeqLengthsKv's or each tensor's S."""
    layout = split(a.inputLayout)[0]
    axis, rank = S_AXIS.get(layout, 1), RANK.get(layout)
    given = a.actualSeqLengthsKvOptional
    kv_lengths = tuple(int(x) for x in given) if given is not None else tuple(lengths)
    key, value = (_Stacked(lst.items, axis, max(lengths), rank) for lst in (a.key, a.value))
    return key, value, kv_lengths


class _Stacked:
    """[1, ...] tensors as one batched tensor, each zero-padded to ``rows`` along ``axis``; read
    when the kernel runs. The tilings compare only the dimensions the layout names (batch, S, N, D
    or H), never the rank: the kernels take each tensor's data address and walk it as the layout's
    [1, N, S, D] (or [1, S, H]) with that tensor's S, so a tensor of more dimensions is read as the
    first elements of its memory in that shape."""

    def __init__(self, items, axis, rows, rank=None):
        self.items, self.axis, self.rows = items, axis, rows
        first = items[0]
        self.dtype, self.format = first.dtype, first.format
        shape = [len(items), *first.shape[1:rank]]
        shape[axis] = rows
        self.shape, self.ndim = tuple(shape), len(shape)
        self.numel = int(np.prod(shape))
        self.is_empty = self.numel == 0

    def read(self, what: str = "tensor"):
        out = None
        for b, t in enumerate(self.items):
            x = self._walked(t, f"{what}[{b}]")
            out = np.zeros(self.shape, x.dtype) if out is None else out
            index = [b] + [slice(None)] * (self.ndim - 1)
            index[self.axis] = slice(0, x.shape[self.axis])
            out[tuple(index)] = x[0]
        return out

    def _walked(self, t, what):
        """The tensor as the kernel walks it: its own shape when of the layout's rank, else the first
        elements of its memory in the layout's shape with its own S."""
        if len(t.shape) == self.ndim:
            return t.read(what)
        want = (1, *(shape_dim(t.shape, i) for i in range(1, self.ndim)))
        flat = t.storage(what)[: int(np.prod(want))]
        return np.pad(flat, (0, int(np.prod(want)) - flat.size)).reshape(want)
