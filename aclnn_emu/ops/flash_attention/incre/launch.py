"""aclnnIncreFlashAttentionV4: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu.kernels.attention.layouts import to_bnsd
from aclnn_emu.kernels.flash_attention import incre_flash_attention as ifa
from aclnn_emu.kernels.flash_attention.pse import PseSource
from aclnn_emu.runtime import sanitizer
from aclnn_emu.opdef.gaps import Gaps
from .entry import I8, OP


# Calls the 8.5 tiling passes whose kernels would then read past an input: refused with 561003.
REFUSED = Gaps(
    OP,
    "refused",
    {
        "mtp": "a query S in [2, 16] whose rows the tiling splits (SplitUnbalanced; about S x G above 256, 128 with "
        "int8 key/value): the S = 1 kernels then count their batch index past B and read key, value and "
        "lengths past their ends",
        "kv_heads": "a batched key whose head count or H differs from numKeyValueHeads x D and that is smaller than "
        "the kernel's addressing by numKeyValueHeads: the kernel reads past the key's end",
        "actual_seq_uint32": "an actualSeqLengths value of 2**32 or more (ParseActualSeqLens and the page attention "
        "check compare its low 32 bits): the kernel reads the whole int64 length and runs past the key and value",
        "quant2_rank": "a per-channel quantScale2/quantOffset2 of rank 5 or more holding fewer than N x D values (the "
        "tiling checks no such shape): the kernel reads N x D values, past its end",
    },
)


def key_view_by_kv_heads(k0, base, batch, s, n2, d, ends, env):
    """The shape the kernels read a batched key (and value) through when its heads or H differ from
    numKeyValueHeads: [B, N2, S, D] (BNSD) or [B, S, N2 x D] (BSH/BSND) over its flat elements, batch
    b's rows up to ends[b]. Refused where those rows reach past the key; otherwise that view, with a
    warning."""
    if base == "BNSD":
        shape, reach = (batch, n2, s, d), [b * n2 * s * d + (n2 - 1) * s * d + e * d for b, e in enumerate(ends) if e]
    else:
        shape, reach = (batch, s, n2 * d), [b * s * n2 * d + e * n2 * d for b, e in enumerate(ends) if e]
    detail = f"key {list(k0.shape)} read as {list(shape)} (numKeyValueHeads {n2}, D {d}, S {s}) by element offsets"
    if max(reach, default=0) > k0.numel:
        REFUSED.refuse("kv_heads", f"{detail}: the rows read end at element {max(reach)}, past the key's {k0.numel}")
    env.warn(f"{detail}, as the NPU kernels address it; the key's own head split is not used")
    return shape


def kernel_view(x, shape):
    """``x``'s flat elements as ``shape`` (the kernel's addressing); elements past ``x`` (never read:
    `key_view_by_kv_heads` refuses such calls) are zeros."""
    flat, size = x.reshape(-1), int(np.prod(shape))
    flat = flat[:size] if flat.size >= size else np.concatenate([flat, np.zeros(size - flat.size, flat.dtype)])
    return flat.reshape(shape)


def _run(a, p):
    if p.d == 0 or p.kv_heads == 0:  # a head dimension of 0 (H below numHeads): no element to compute
        return
    # The kernels read query row (b, n) at (b N + n) D: [B, N, D] for S = 1 in every layout, the
    # first B N rows of the flat query for S > 1 (ifa_speculative).
    q = a.query.read("query").reshape(-1)[: p.batch * p.heads * p.d].reshape(p.batch, p.heads, p.d)
    if p.paged:
        kv = _paged(a, p)
        lengths = [p.max_blocks * p.block_size] * p.batch if p.actual is None else list(p.actual)
        start = [0] * p.batch
    else:
        keys, values = _dense(a.key, "key", p), _dense(a.value, "value", p)
        lengths = list(p.kv_lens) * (p.batch if len(p.kv_lens) == 1 else 1) if p.actual is None else list(p.actual)
        start = [0] * p.batch
        if p.left_padding:
            pad = max(int(a.kvPaddingSize.read("kvPaddingSize").reshape(-1)[0]), 0)
            start = [p.kv_lens[0] - pad - n for n in lengths]
            lengths = [n if s >= 0 else 0 for n, s in zip(lengths, start)]
        kv = ifa.DenseKv(keys, values, start)
    width = max([s + n for s, n in zip(start, lengths)] + [0])
    mask = _rows(a.attenMask, "attenMask", p.batch, width, stride=0 if p.mtp else None) if p.has_mask else None
    pse = _pse(a.pseShift, p, width)
    out_quant = _out_quant(a, p)
    antiquant = _antiquant(a, p, kv)
    out_dtype = a.attentionOut.np_dtype
    lse_t = getattr(a, "softmaxLse", None)  # FusedInferAttentionScore's output; IncreFlashAttentionV4 has none
    lse = None if lse_t is None else np.full((p.batch, p.heads), ifa.LSE_NO_TOKENS, np.float32)
    o = ifa.incre_flash_attention(
        q,
        kv,
        scale=p.scale,
        lengths=lengths,
        kv_heads=p.kv_heads,
        out_dtype=out_dtype,
        mask=mask,
        pse=pse,
        antiquant=antiquant,
        out_quant=out_quant,
        lse=lse,
    )
    if p.paged and kv.bad_ids:
        sanitizer.report(
            "out-of-bounds",
            f"{OP.phase2}: blocktable entries {kv.bad_ids[:8]} (batch, block id) lie "
            "outside the key/value cache; their tokens read as zeros here",
        )
    write_prefix(a.attentionOut, o)
    if lse_t is not None:  # [B, N, 1, 1]: row (b, n) at b N + n
        lse_t.write(lse.reshape(lse_t.shape))


def _dense(tensor_list, name, p):
    """One [N2, S, D] view per batch: the batches of the one tensor, or one tensor per batch."""
    if p.listed:
        return [
            to_bnsd(t.read(f"{name}[{i}]"), p.base, p.kv_heads)[0] for i, t in enumerate(tensor_list.items[: p.batch])
        ]
    x = tensor_list.items[0].read(name)
    if p.kv_shape is None:
        return list(to_bnsd(x, p.base, p.kv_heads))
    return list(to_bnsd(kernel_view(x, p.kv_shape), "BNSD" if p.base == "BNSD" else "BSH", p.kv_heads))


def _paged(a, p):
    """The caches as [blocks, N2, block_size, D] views, addressed as the kernel does: by blockSize,
    whatever the cache's own dimension 1 says. The value's D is `p.value_d` where it differs (MLA on
    Ascend910_95). A 5-D (NZ) cache (blocks, N2, D / D0, blockSize, D0) holds element (block, n,
    token, d) at [block, n, d // D0, token, d % D0] (CopyInL1.h GmCopyInToL1HasRopePA, the arch35
    antiquant CopyKVPaNz; the layout of the A2/A3 GatherPaKvCache PA_NZ): a gathered copy, not a view."""
    views = []
    rank = a.key.items[0].ndim  # the tiling takes the layout from the key: the value is addressed alike
    for t, name, d in ((a.key.items[0], "key", p.d), (a.value.items[0], "value", getattr(p, "value_d", p.d))):
        flat = t.read(name).reshape(-1)
        block = p.block_size * p.kv_heads * d
        flat = flat[: len(flat) // block * block]
        if rank == 3:
            views.append(flat.reshape(-1, p.block_size, p.kv_heads, d).transpose(0, 2, 1, 3))
        elif rank == 5:
            d0 = a.key.items[0].shape[4]
            nz = flat.reshape(-1, p.kv_heads, d // d0, p.block_size, d0)
            views.append(np.ascontiguousarray(nz.transpose(0, 1, 3, 2, 4)).reshape(-1, p.kv_heads, p.block_size, d))
        else:
            views.append(flat.reshape(-1, p.kv_heads, p.block_size, d))
    table = _rows(a.blocktable, "blocktable", p.batch, p.max_blocks, fill=-1)
    return ifa.PagedKv(views[0], views[1], table, p.block_size)


def _rows(t, name, rows, width, fill=0, stride=None):
    """[rows, width] of a tensor read as the kernels address it: row b starts at b * stride (the
    last dim unless given) of its flat storage; what lies past the tensor reads as `fill` and is
    reported."""
    flat = t.read(name).reshape(-1)
    last = (t.shape[-1] if t.ndim else 1) if stride is None else stride
    index = np.arange(rows)[:, None] * last + np.arange(width)[None, :]
    inside = index < flat.size
    if not inside.all():
        sanitizer.report(
            "out-of-bounds",
            f"{OP.phase2}: {name} {list(t.shape)} is read up to element "
            f"{int(index.max())}, past its end; those elements read as {fill} here",
        )
    return np.where(inside, flat[np.minimum(index, max(flat.size - 1, 0))] if flat.size else fill, fill)


def _pse(t, p, width):
    """pseShift [B|1, N, 1, S] as the family's additive position term (pseType 0: S * scale + pse)."""
    if t is None:
        return None
    pse = t.read("pseShift")
    if pse.shape[3] < width:
        sanitizer.report(
            "out-of-bounds",
            f"{OP.phase2}: pseShift {list(t.shape)} is read up to column {width - 1}; "
            "the columns past its end read as 0 here",
        )
        pse = np.concatenate([pse, np.zeros(pse.shape[:3] + (width - pse.shape[3],), pse.dtype)], axis=3)
    return PseSource(pse, 0, 1, pse.shape[3])


def _out_quant(a, p):
    if a.attentionOut.dtype != I8:
        return None
    scale_t, offset_t = a.quantScale2, a.quantOffset2
    per_channel = scale_t.numel > 1 or (offset_t is not None and offset_t.numel > 1)

    def values(t):
        v = t.read().astype(np.float32).reshape(-1)
        return (
            v[: p.heads * p.d].reshape(p.heads, p.d)
            if per_channel and v.size >= p.heads * p.d
            else np.broadcast_to(v[:1].reshape(1, 1), (p.heads, p.d) if per_channel else (1, 1)).copy()
        )

    scale = values(scale_t)
    offset = np.zeros_like(scale) if offset_t is None else values(offset_t)
    return ifa.OutputQuant(scale, offset)


def _antiquant(a, p, kv):
    if a.antiquantScale is None:
        return None
    own = getattr(a.antiquantScale, "kernel_antiquant", None)
    if own is not None:  # FusedInferAttentionScore's separate key/value parameters, through the block table read here
        return own(p.batch, p.kv_heads, p.d, kv.table if p.paged else None)

    def pair(t):
        v = t.read().astype(np.float32)
        return (v[0], v[1]) if v.ndim == 1 else tuple(v.reshape(2, p.kv_heads, p.d))

    scale = pair(a.antiquantScale)
    offset = pair(a.antiquantOffset) if a.antiquantOffset is not None else tuple(np.zeros_like(s) for s in scale)
    return ifa.Antiquant(scale[0], offset[0], scale[1], offset[1])


def write_prefix(out_t, o):
    """[B, N, D] into attentionOut from its first element, as the kernels write it (row (b, n) at
    (b N + n) D). That holds for the *_NBSD layouts too: only the MLA tiling data carries
    outputLayout (incre_flash_attention_tiling_mla.h), the other kernels have no NBSD path. Past
    B N D the tensor keeps its contents (query S > 1, ifa_speculative)."""
    flat = np.ascontiguousarray(o).reshape(-1)
    if flat.size == out_t.numel:
        out_t.write(flat.reshape(out_t.shape))
        return
    view = np.array(out_t.read("attentionOut")).reshape(-1)
    count = min(view.size, flat.size)
    view[:count] = flat[:count]
    out_t.write(view.reshape(out_t.shape))
