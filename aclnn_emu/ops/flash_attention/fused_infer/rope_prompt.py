"""queryRope/keyRope on Ascend910_95's PFA route (PromptFlashAttentionTilingV2, every same-dtype
call there): CheckRope's checks and the IFA MLA rules, every failure 561002, and the rope tensors
the kernels join to their heads.

op_host/prompt_flash_attention_tiling_v2.cpp `CheckRope` (in CheckSingleAttribute, after CheckIO and
CheckKV) wants both rope tensors or neither, then `GetAndCheckRopeShape` on the query and (without
a block table) the key: the layout's rank, a head size of 128 or 512, a rope D of 64, and the
batch, heads, rows and tokens of the tensor it belongs to. It then switches the tiling's IFA mode
(S = 1: enableIFA, enableIFAMask) and the GQA merge off for every rope call, so a one-row query is
an ordinary PFA row there. A head size of 128 turns PFARope on: the group limit of 64 stays
(SetAndCheckHeadNumRatio, in the PromptFlashAttentionV3 checks), and the kernels take the query
and its rope as one head of D 192 against the key and its rope (`UpdateTilingKeyConfig`: config
DAligned192_DVAligned128). 512 turns IFA MLA on: `CheckIFAMLA`
(after CheckQueryAndKey: S in [1, 16], N in {32, 64, 128}, numKeyValueHeads exactly 1), no
actualSeqLengths outside TND (`CheckActSeqLen`), a block size of 32-byte multiples (the IFA rule of
`CheckPATypeAndShape`), and `CheckMaskCrossIFAMLA` (S = 1: sparse 0 without a mask; S > 1: that or
sparse 3 with one); its kernel (`flash_attention_kvsame_bn2gs1s2.h`, config
S1Aligned64_S2Aligned128_DAligned576_DVAligned512) multiplies [q, qr] by [k, kr] in one product of
K = 576. Either way Q·Kᵀ + Qr·Krᵀ is one fp32 product: the emulator hands the PFA kernels the rope
tensors, which they append to each head's D. With a key/value tensor list GetAndCheckRopeShape
compares no batch for the key (kv_list checks the keyRope's batch and rows).
"""

from aclnn_emu.opdef.generated import attr_int32, attr_uint32, shape_dim

from ..prompt.checks_arch35 import IFA_MLA, PFA_ROPE
from . import paged_prompt
from .failure import tiling
from .layouts import RANK, query_axes, split

ROPE_D = 64
HEAD_D = (128, 512)
PFA_ROPE_D = 128  # enablePFARope; 512 is IFA MLA
RANK3 = ("BSH", "TND")


def present(a) -> bool:
    return a.queryRopeOptional is not None or a.keyRopeOptional is not None


def check(a) -> str:
    """CheckRope, then the IFA MLA rules; the kernel mode the emulator runs ("pfa_rope" or
    "ifa_mla")."""
    q_rope, k_rope = a.queryRopeOptional, a.keyRopeOptional
    if q_rope is None:
        raise tiling("rope.query_null", "queryRope is null, but keyRope is not null, they should be consistent.")
    if k_rope is None:
        raise tiling("rope.key_null", "queryRope is not null, but keyRope is null, they should be consistent.")
    layout = split(a.inputLayout)[0]
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    query_d = _rope_shape(a.query, q_rope, layout, heads, "query", "queryRope")
    key = a.key.items[0]
    if a.blockTableOptional is None:  # a key/value list: its tensors' batch is 1, so none is compared
        _rope_shape(key, k_rope, layout, kv_heads, "key", "keyRope", batch=len(a.key.items) == 1)
    mode = PFA_ROPE if query_d == PFA_ROPE_D else IFA_MLA
    if mode == IFA_MLA:
        _check_ifa_mla(a, layout, heads)
    return mode


IFA_MLA_S = 16  # CheckIFAMLA: query S in [1, 16]
IFA_MLA_HEADS = (32, 64, 128)
SPARSE_NONE, SPARSE_RIGHT_DOWN = 0, 3


def _check_ifa_mla(a, layout, heads) -> None:
    """CheckIFAMLA (the attribute numKeyValueHeads, so its default 0 fails too), CheckActSeqLen's
    MLA rule, CheckMaskCrossIFAMLA (on the query's own S)."""
    s = _rows(a, layout, heads)
    if s is not None and not 1 <= s <= IFA_MLA_S:
        raise tiling(
            "rope.mla_s", f"input query's sequence length is {s}, it should be in range of [1, 16] when enable ifa mla"
        )
    if heads not in IFA_MLA_HEADS:
        raise tiling(
            "rope.mla_heads", f"input query's heads num is {heads}, it should be in range of {{32, 64, 128}} when "
            "enable ifa mla",
        )  # fmt: skip
    if attr_uint32(a.numKeyValueHeads) != 1:
        raise tiling(
            "rope.mla_kv_heads",
            f"input key/value's heads num is {attr_uint32(a.numKeyValueHeads)}, it should be 1 when enable ifa mla",
        )
    if a.actualSeqLengthsOptional is not None and layout != "TND":
        raise tiling(
            "rope.mla_actual_q",
            f"The layout is {layout}, Actual_seq_lengths cannot be configured in MLA and non-TND scenarios",
        )
    mask = a.attenMaskOptional is not None and a.attenMaskOptional.numel > 0
    sparse = attr_int32(a.sparseMode)
    allowed = (sparse == SPARSE_NONE and not mask) or (s != 1 and sparse == SPARSE_RIGHT_DOWN and mask)
    if not allowed:
        raise tiling(
            "rope.mla_mask", f"sparse mode {sparse} {'with' if mask else 'without'} a mask is not supported with ifa "
            "mla (S = 1: sparse 0 without mask; S > 1: that or sparse 3 with a mask)",
        )  # fmt: skip


def bnsd_causal_mla(a, mode) -> bool:
    """IFA MLA over a BNSD query of more than one row under sparse mode 3 (its mask reading differs)."""
    layout, heads = split(a.inputLayout)[0], attr_uint32(a.numHeads)
    return (
        mode == IFA_MLA
        and layout == "BNSD"
        and attr_int32(a.sparseMode) == SPARSE_RIGHT_DOWN
        and _rows(a, layout, heads) != 1
    )


def _rows(a, layout, heads) -> int | None:
    """The query S the tiling's IFA mode looks at: TND's longest batch (GetMaxSeq; None without
    lengths, which the PFA checks refuse), else the query's S."""
    if layout != "TND":
        return query_axes(a.query.shape, layout, heads).s
    ends = [int(x) for x in a.actualSeqLengthsOptional or ()]
    return max((e - p for e, p in zip(ends, [0] + ends[:-1])), default=None)


def _rope_shape(t, rope, layout, heads, name, rope_name, batch: bool = True) -> int:
    """GetAndCheckRopeShape (the batch only with ``batch``); returns the head size of ``t``."""
    rank = 3 if layout in RANK3 else 4
    if rope.ndim != rank:
        raise tiling(
            "rope.rank", f"dim num of {name} should = {rank} when inputLayout is {layout}, but is {rope.ndim}."
        )
    b, n, s, d, tokens = _dims(t.shape, layout, heads)
    if d not in HEAD_D:
        raise tiling(
            "rope.head_d", f"When queryRope and keyRope is not null, d size of {name} must be 128 or 512, but d = {d}."
        )
    rb, rn, rs, rd, rt = _dims(rope.shape, layout, heads)
    if rd != ROPE_D:
        raise tiling(
            "rope.d", f"When queryRope and keyRope is not null, d size of {rope_name} must be 64, but d = {rd}."
        )
    for what, mine, theirs in (("batch size", rb, b), ("head number", rn, n), ("seq length", rs, s), ("t", rt, tokens)):
        if mine != theirs and (batch or what != "batch size"):
            raise tiling(
                "rope.shape", f"{what} of {rope_name} should be equal to {name} {what}, but {mine} != {theirs}."
            )
    return d


def _dims(shape, layout, heads) -> tuple[int, int, int, int, int]:
    """(B, N, S, D, T) as SetShape reads them (BSH: D = H / heads; TND: B and S from the length
    arrays, the same for a tensor and its rope, so only T, N and D are compared)."""
    dims = tuple(shape_dim(shape, i) for i in range(RANK.get(layout, len(shape))))  # gert: 0 past the rank
    if layout == "TND":
        return 0, dims[1], 0, dims[2], dims[0]
    if layout not in ("BSH", "BSND", "BNSD"):
        raise tiling("rope.layout", f"input layout {layout} is not supported with queryRope and keyRope")
    axes = query_axes(dims, layout, heads)
    return axes.b, axes.n, axes.s, axes.d, 0


def tensors(a, facts):
    """(queryRope, keyRope) as the PFA kernels take them: a paged keyRope gathered like the key
    (``facts`` from paged_prompt.check, None without a block table)."""
    key_rope = a.keyRopeOptional
    if facts is not None:
        key_rope = paged_prompt.dense(a, facts, key_rope, "keyRope", ROPE_D)
    return a.queryRopeOptional, key_rope
