"""queryRope/keyRope on the Atlas A2/A3 IFA and PFA routes: the rope calls RouteToFia leaves there (a
query other than FLOAT16/BF16 or of another dtype than the key: an INT8/INT4 key beside a float query,
an INT8 query; a single rope tensor; shapes GetQkvD cannot read). Every failure is 561002.

fused_infer_attention_score_tiling.cpp `CheckInputLayout`, before either route: `IsMla` (both rope
tensors or neither), then `CheckInputLayoutMla` (the MLA layouts; TND with query D 512 needs a block
table). The IFA tiling (incre_flash_attention_tiling.cpp, _check.cpp) then takes a rope call as MLA
(ropeFlag_): `ProcessPageAttentionFlag` (the paged key's rank; an INT8 MLA query wants an NZ cache),
`ProcessQuant` (an INT8 query: no BNSD layout, no per-tensor or combined antiquant parameters, the
full-quant scales and modes, BF16 ropes), `ProcessKVPaddingSize` (no kv padding with MLA),
`ProcessMlaRope` (`CheckMlaQueryRope`, `CheckMlaAttrs`, `CheckMlaKeyRope`, `CheckMlaMisc`). The last
refuses antiquant, so every rope call with an INT8/INT4 key beside a float query fails the IFA
tiling; only the ATB path (`AtbCheckFlag910`: innerPrecise 2, paged, INT8 key, query lengths; its
tiling `AtbTilingProcess` runs instead of all those rules and its kernel, paged_attention_antiquantkv.h,
reads no rope) and the MLA full-quant kernels (INT8 query, key and value) take one.
"""

from aclnn_emu.dtypes import SIZE, DataType
from aclnn_emu.opdef.generated import attr_int32, attr_uint32, shape_dim

from .failure import tiling
from .layouts import split

I8, INT4, BF16, FP32 = DataType.ACL_INT8, DataType.ACL_INT4, DataType.ACL_BF16, DataType.ACL_FLOAT
MLA_LAYOUTS = ("BSH", "BNSD", "BSND", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD", "TND_NTD", "TND", "NTD_TND")
MLA_D, MLA_ROPE_D = 512, 64
MLA_GROUPS = (1, 2, 4, 8, 16, 32, 64, 128)
ATB_INNER_PRECISE = 2
PER_TOKEN_HEAD, PER_CHANNEL = 3, 0  # the full-quant query and key/value modes
NZ_BYTES = 32


def check_layout(a) -> None:
    """IsMla and CheckInputLayoutMla (fused_infer_attention_score_tiling.cpp CheckInputLayout)."""
    q_rope, k_rope = a.queryRopeOptional, a.keyRopeOptional
    if q_rope is not None and k_rope is None:
        raise tiling("rope.key_null", "keyRope is null, but queryRope exists, they should be both null or exist.")
    if q_rope is None and k_rope is not None:
        raise tiling("rope.query_null", "queryRope is null, but keyRope exists, they should be both null or exist.")
    if q_rope is None:
        return
    layout = a.inputLayout or "BSH"
    if layout not in MLA_LAYOUTS:
        raise tiling(
            "rope.layout", f"inputlayout({layout}) only support {{BSH, BNSD, BSND, TND, BNSD_NBSD, BSND_NBSD, "
            "BSH_NBSD, TND_NTD}} in mla.",
        )  # fmt: skip
    if layout == "TND" and shape_dim(a.query.shape, 2) == MLA_D and a.blockTableOptional is None:
        raise tiling("rope.tnd_paged", f"Layout is {layout}, MLA enabled, PA must be enabled when query's D is 512.")


def ignored_on_pfa(a) -> bool:
    """A rope the A2/A3 PFA route never reads: its tiling checks one only for TND-like layouts
    (CheckInputShapeWhenLayoutIsTND), and prompt_flash_attention_arch32.h hands queryRope/keyRope to the
    TND var-len kernels alone (UnpackInit: PromptFlashAttentionVarLenScoreSameAB{,BaseApi}), never to
    the PromptFlashAttentionS1s2Bns1X910 kernels (Init, InitQuant, InitKvAntiquant) nor to the base-API
    ones of sparse modes 20-22 (INVOKE_PFA_GENERAL_OP_IMPL_BASE_API / _MLA: Init without rope)."""
    return split(a.inputLayout)[0] not in ("TND", "NTD")


def check_pfa_tnd(a) -> None:
    """CheckInputShapeWhenLayoutIsTND's rope rules (prompt_flash_attention_tiling.cpp) over dense caches,
    then the empty-queryRope rule after it: query, key and value 3-D; the ropes of the query's and the
    key's rank; queryRope's T and N the query's, keyRope's T and N the key's; D 128 for query, key and
    value with rope D 64; queryRope not empty. The PFA checks run after these on the call without the
    rope; a call failing both meets these first (all 561002)."""
    base = split(a.inputLayout)[0]
    t_axis, n_axis = (0, 1) if base == "TND" else (1, 0)
    q, k, v = a.query, a.key.items[0], a.value.items[0]
    q_rope, k_rope = a.queryRopeOptional, a.keyRopeOptional
    if (q.ndim, k.ndim, v.ndim) != (3, 3, 3):
        raise tiling(
            "pfa.tnd_dims", f"When layout is {base}, querDim({q.ndim}) keyDim({k.ndim}) valueDim({v.ndim}) must be 3."
        )
    if q_rope.ndim != q.ndim or k_rope.ndim != k.ndim:
        raise tiling(
            "pfa.tnd_rope_dims", f"When layout is {base}, queryRopeDims({q_rope.ndim})/keyRopeDims({k_rope.ndim}) must "
            f"be equal to queryDims({q.ndim})/keyDims({k.ndim})!",
        )  # fmt: skip
    qs, ks, qrs, krs = (tuple(t.shape) for t in (q, k, q_rope, k_rope))
    if qrs[t_axis] != qs[t_axis] or qrs[n_axis] != qs[n_axis]:
        raise tiling("pfa.tnd_query_rope_shape", f"queryRope {list(qrs)}: its T and N must be the query's {list(qs)}")
    if krs[t_axis] != ks[t_axis]:
        raise tiling("pfa.tnd_key_rope_t", f"keyRopeT({krs[t_axis]}) must be equal to keyT({ks[t_axis]})!")
    if krs[n_axis] != ks[n_axis]:
        raise tiling("pfa.tnd_key_rope_n", f"keyRopeN({krs[n_axis]}) must be equal to keyN({ks[n_axis]})!")
    if (qs[2], ks[2], v.shape[2], qrs[2], krs[2]) != (128, 128, 128, MLA_ROPE_D, MLA_ROPE_D):
        raise tiling(
            "pfa.tnd_rope_d", f"When layout is {base} and queryRope/keyRope is not nullptr, queryRopeD({qrs[2]})/"
            f"keyRopeD({krs[2]}) must be 64, queryD({qs[2]})/keyD({ks[2]})/valueD({v.shape[2]}) must be 128!",
        )  # fmt: skip
    if q_rope.numel == 0:
        raise tiling("pfa.tnd_rope_empty", f"When layout is {base}, queryRope should not be empty tensor.")


def atb(a) -> bool:
    """AtbCheckFlag910: the IFA tiling's ATB path, which checks no rope."""
    lengths = a.actualSeqLengthsOptional
    return (
        attr_int32(a.innerPrecise) == ATB_INNER_PRECISE
        and a.blockTableOptional is not None
        and a.key.items[0].dtype == I8
        and bool(lengths)
    )


ATB_LAYOUTS = ("BSH", "BSND", "BNSD", "TND")


def check_atb(a) -> None:
    """AtbTilingProcess's rules (RunBigKernelTiling takes the ATB path before PreProcess, so none of
    the IFA tiling's other rules run): `AtbTilingCheck` takes BSH, BSND, BNSD and TND only."""
    layout = a.inputLayout or "BSH"
    if layout not in ATB_LAYOUTS:
        raise tiling("ifa.atb_layout", f"the IFA tiling's ATB path takes inputLayout {ATB_LAYOUTS}, not {layout}")


def check_ifa(a) -> None:
    """The IFA tiling's MLA rules, in its order (the caller has run ProcessQuant's first rules and
    ProcessAntiQuant: kv_antiquant.check_ifa)."""
    f = _Facts(a)
    _page_attention(a, f)
    if f.quant:
        _full_quant(a, f)
    if a.kvPaddingSizeOptional is not None and a.kvPaddingSizeOptional.numel:  # CheckSupportKVLeftPadding
        if f.kv_dtype == INT4:
            raise tiling("ifa.int4_kv_padding", "When input Kv Dtypes is INT4, KvLeftPadding is not supported.")
        raise tiling("ifa.mla_kv_padding", "kvPadding is not supported in MLA.")
    _query_rope(a, f)
    _attrs(f)
    _key_rope(a, f)
    _misc(a, f)


class _Facts:
    """What the IFA tiling has read off the call by ProcessMlaRope (QKVPreProcess, ProcessPageAttentionFlag)."""

    def __init__(self, a):
        self.layout = a.inputLayout or "BSH"
        base = split(self.layout)[0]
        self.q_layout = {"BSH": "BSND", "BSND": "BSND", "BNSD": "BNSD", "TND": "TND"}[base]
        self.heads = attr_uint32(a.numHeads)
        self.kv_heads = attr_uint32(a.numKeyValueHeads) or self.heads
        q = a.query.shape
        self.head_d = {"BSH": shape_dim(q, 2) // max(self.heads, 1), "TND": shape_dim(q, 2)}.get(base, shape_dim(q, 3))
        key = a.key.items[0]
        self.kv_dtype = INT4 if a.int4 else key.dtype
        self.key_rank = key.ndim
        self.paged = a.blockTableOptional is not None
        self.kv_layout = {3: "BSH", 4: "BNSD", 5: "NZ"}.get(self.key_rank) if self.paged else None
        self.quant = a.query.dtype == I8
        self.antiquant = a.query.dtype != self.kv_dtype and self.kv_dtype in (I8, INT4)
        self.block_size = attr_int32(a.blockSize)


def _page_attention(a, f) -> None:
    """ProcessPageAttentionFlag with ropeFlag_."""
    if not f.paged:
        return
    if f.kv_layout is None:
        raise tiling("ifa.mla_key_rank", f"The dim of keyShape[{f.key_rank}] should be one of 3,4,5.")
    if f.quant and f.kv_dtype == I8 and f.head_d == MLA_D:
        if f.key_rank == 4:
            raise tiling("ifa.mla_quant_kv_layout", "when the dtype of query is int8 in MLA, KV layout must be NZ")
    elif f.key_rank == 4 and f.layout not in ("BNSD", "TND", "TND_NTD", "BNSD_NBSD"):
        if attr_int32(a.innerPrecise) != ATB_INNER_PRECISE:
            raise tiling(
                "ifa.paged_bnbd_layout", "when Page Attention scene, kvcache is BNBD, query layout must be BNSD, "
                "BNSD_NBSD, TND, TND_NTD or BNSD_BSND",
            )  # fmt: skip


def _full_quant(a, f) -> None:
    """ProcessQuant for an INT8 query with its ropes: CheckQkvQuantParams4FullQuant's presence,
    shape (query, key, value), mode and dtype rules, then the ropes' dtype."""
    if f.q_layout == "BNSD":
        raise tiling("ifa.quant_bnsd", "when the dtype of query is int8 in MLA, layout BNSD/BNSD_NBSD is not support")
    if any(t is not None for t in (a.quantScale1Optional, a.deqScale1Optional, a.deqScale2Optional)):
        raise tiling(
            "ifa.quant_scales", "when the dtype of query is int8, quantScale1/deqScale1/deqScale2 should be null"
        )
    if a.antiquantScaleOptional is not None or a.antiquantOffsetOptional is not None:
        raise tiling(
            "ifa.quant_antiquant", "when the dtype of query is int8 in MLA, antiquantScale/Offset should be null"
        )
    if a.keyAntiquantOffsetOptional is not None or a.valueAntiquantOffsetOptional is not None:
        raise tiling(
            "ifa.quant_offsets", "when the dtype of query is int8 in MLA, the key's/value's offset should be null"
        )
    scales = (a.dequantScaleQueryOptional, a.keyAntiquantScaleOptional, a.valueAntiquantScaleOptional)
    if any(t is None for t in scales):
        raise tiling(
            "ifa.quant_scales_missing", "when the dtype of query is int8, the query's, the key's and the value's "
            "dequant scales should not be null",
        )  # fmt: skip
    _query_scale_shape(a, f)
    for name, t in (("key", a.keyAntiquantScaleOptional), ("value", a.valueAntiquantScaleOptional)):
        if tuple(t.shape) != (1,):  # CheckKVQuantParam4FullQuant: one dimension, then its size
            raise tiling(
                "ifa.quant_kv_scale_shape", f"when the dtype of query is int8 in MLA, the {name}'s dequant scale "
                f"{list(t.shape)} should be [1]",
            )  # fmt: skip
    if a.queryQuantMode != PER_TOKEN_HEAD:
        raise tiling("ifa.quant_query_mode", "when the dtype of query is int8, the query's quant mode should be 3")
    if a.keyAntiquantMode != PER_CHANNEL or a.valueAntiquantMode != PER_CHANNEL:
        raise tiling(
            "ifa.quant_kv_modes", "when the dtype of query is int8, the key's and value's quant modes should be 0"
        )
    if any(t.dtype != FP32 for t in scales):
        raise tiling(
            "ifa.quant_scale_dtype", "when the dtype of query is int8, the dequant scales' dtype should be fp32"
        )
    if a.queryRopeOptional.dtype != BF16 or a.keyRopeOptional.dtype != BF16:
        raise tiling(
            "ifa.quant_rope_dtype", "when the dtype of query is int8, query_rope and key rope dtype should be bf16"
        )


def _query_scale_shape(a, f) -> None:
    """CheckQueryQuantParam4FullQuant: BSH/BSH_NBSD [B, S, numHeads]; other layouts the query's
    shape without its last axis."""
    q, dq = tuple(a.query.shape), tuple(a.dequantScaleQueryOptional.shape)
    if f.layout in ("BSH", "BSH_NBSD"):
        fits = len(dq) == len(q) and dq[:2] == q[:2] and dq[2] == f.heads
    else:
        fits = len(dq) + 1 == len(q) and dq == q[: len(dq)]
    if not fits:
        raise tiling(
            "ifa.quant_query_scale_shape", f"the query's dequant scale {list(dq)} does not fit the query "
            f"{list(q)} ({f.layout}) when the dtype of query is int8",
        )  # fmt: skip


def _query_rope(a, f) -> None:
    """CheckMlaQueryRope; sets f.rope_d (headDimRope_)."""
    q_rope, q = a.queryRopeOptional, a.query
    want = BF16 if f.quant else q.dtype
    if q_rope.dtype != want:
        raise tiling("ifa.mla_query_rope_dtype", f"queryRope {q_rope.dtype.short} must be {want.short}")
    if q_rope.ndim != q.ndim:
        raise tiling(
            "ifa.mla_query_rope_rank", f"queryRope({q_rope.ndim}) and query({q.ndim}) dimensions must be the same."
        )
    r, s = tuple(q_rope.shape), tuple(q.shape)
    axes: tuple[int, ...]
    if f.q_layout == "TND":
        axes = (0, 1)
    elif f.q_layout == "BNSD":
        axes = (0, 1, 2)
    else:  # BSH/BSND: B and S, then N for a 4-D rope
        axes = (0, 1) if q_rope.ndim != 4 else (0, 1, 2)
    for i in axes:
        if r[i] != s[i]:
            raise tiling("ifa.mla_query_rope_shape", f"queryRope {list(r)} and query {list(s)} differ in axis {i}")
    if f.q_layout == "BSND" and q_rope.ndim != 4:
        f.rope_d = r[2] // max(f.heads, 1)
    else:
        f.rope_d = r[-1]


def _attrs(f) -> None:
    """CheckMlaAttrs."""
    if f.kv_heads != 1:
        raise tiling("ifa.mla_kv_heads", f"the key/value's heads num({f.kv_heads}) only support 1 in MLA.")
    if f.heads // f.kv_heads not in MLA_GROUPS:
        raise tiling("ifa.mla_group", f"the query's heads num {f.heads} per KV head: MLA supports {MLA_GROUPS}")
    if f.head_d != MLA_D:
        raise tiling("ifa.mla_d", f"queryD({f.head_d}) only support 512 in MLA.")
    if f.rope_d != MLA_ROPE_D:
        raise tiling("ifa.mla_rope_d", f"headDimRope({f.rope_d}) only support 64 in MLA.")
    if f.kv_layout == "NZ" and f.q_layout == "BNSD":
        raise tiling(
            "ifa.mla_nz_layout", "When kv is NZ, layout only support {BSH, BSND, TND, BSH_NBSD, BSND_NBSD, TND_NTD}."
        )


def _key_rope(a, f) -> None:
    """CheckMlaKeyRope: a paged cache, the rope's dtype, then its shape against the key's."""
    if not f.paged:
        raise tiling("ifa.mla_unpaged", "only PageAttention KvCache is supported in MLA mode")
    k_rope, key = a.keyRopeOptional, a.key.items[0]
    want = a.queryRopeOptional.dtype if f.quant else key.dtype
    if k_rope.dtype != want:
        raise tiling("ifa.mla_key_rope_dtype", f"keyRope {k_rope.dtype.short} must be {want.short}")
    if k_rope.numel == 0 or key.numel == 0:
        raise tiling("ifa.mla_key_rope_empty", "empty key or keyRope Tensor is not supported in MLA.")
    r, k = tuple(k_rope.shape), tuple(key.shape)
    if len(r) != len(k) or r[:1] != k[:1]:
        raise tiling(
            "ifa.mla_key_rope_blocks", f"KeyRope {list(r)} and Key {list(k)} must have the same blocks and rank"
        )
    bs, n2 = f.block_size, f.kv_heads
    want_k: tuple[int, ...]
    want_r: tuple[int, ...]
    if f.kv_layout == "BSH":
        want_k, want_r = (bs, n2 * f.head_d), (bs, n2 * f.rope_d)
    elif f.kv_layout == "BNSD":
        want_k, want_r = (n2, bs, f.head_d), (n2, bs, f.rope_d)
    else:  # NZ: [blocks, N2, D / D0, blockSize, D0], D0 the elements of 32 bytes
        d0, r0 = NZ_BYTES // SIZE[f.kv_dtype], NZ_BYTES // SIZE[k_rope.dtype]
        want_k, want_r = (n2, f.head_d // d0, bs, d0), (n2, f.rope_d // r0, bs, r0)
    if k[1:] != want_k:
        raise tiling("ifa.mla_key_shape", f"KeyShape {list(k)} must be {[k[0], *want_k]} in MLA.")
    if r[1:] != want_r:
        raise tiling("ifa.mla_key_rope_shape", f"KeyRopeShape {list(r)} must be {[r[0], *want_r]} in MLA.")


def _misc(a, f) -> None:
    """CheckMlaMisc: no antiquant, then CheckDefaultMisc("MLA") (pse, softmaxLse, an INT8 output; the
    kv padding failed before, a paged cache is continuous, the prefix flag is set after), then the
    block size."""
    if f.antiquant:
        raise tiling("ifa.mla_antiquant", "antiquant is not supported in MLA.")
    if a.pseShiftOptional is not None:
        raise tiling("ifa.mla_pse", "PseShift is not supported in MLA.")
    if a.lse_wanted:
        raise tiling("ifa.mla_lse", "SoftmaxLse output is not supported in MLA.")
    if a.attentionOut.dtype == I8:
        raise tiling("ifa.mla_post_quant", "PostQuant is not supported in MLA.")
    if f.kv_layout == "NZ" and f.block_size != 128:
        raise tiling(
            "ifa.mla_nz_block_size", f"blockSize({f.block_size}), MLA only support {{128}} when KvCache is NZ."
        )
    if f.block_size not in (16, 128):
        raise tiling(
            "ifa.mla_block_size", f"blockSize({f.block_size}), MLA only support {{16, 128}} when KvCache is ND."
        )
