"""The packed variable-length layout (TND) of FlashAttentionScore and its backward: the per-batch
lengths the tilings read from actualSeqQLen / actualSeqKvLen and what they check of them, shared by
both operators (op_host/arch32/flash_attention_score_tiling_general.cpp `GetActualSeqLenData` and the
TND branch of `GetShapeAttrsInfo`, `VarLenSparseModeProcess`; the backward's
flash_attention_score_grad_tiling_*.cpp read them alike), and what the entry points beside V2 that
lack an attribute pass in its place.

Each failure is (message, rule) for the operator's one tiling failure; None passes.
"""

import math

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.params import INT32_MAX
from aclnn_emu.kernels.flash_attention.pse import ALIBI_ROWS
from aclnn_emu.kernels.flash_attention.varlen import band_index
from aclnn_emu.kernels.flash_attention.varlen_pse import PackedPse

# The mask shapes of the compressed modes (2048 x 2048 templates; the prefix one 3072 x 2048).
TND_SPARSE_MODES = (0, 1, 2, 3, 4, 6, 7, 8)  # VarLenSparseModeProcess: 5 and > 8 fail


class Batches:
    """Per-batch query and key lengths of cumulative length lists (a non-increasing step is a batch of
    length 0, as GetActualSeqLenData clamps it)."""

    def __init__(self, cu_q, cu_kv):
        self.cu_q, self.cu_kv = tuple(int(x) for x in cu_q), tuple(int(x) for x in cu_kv)
        self.q = _lengths(self.cu_q)
        self.kv = _lengths(self.cu_kv)
        self.count = len(self.q)

    @property
    def monotone(self) -> bool:
        """Every cumulative list starts at 0 or more and never decreases (what the kernels' offsets assume)."""
        return all(b >= a for cu in (self.cu_q, self.cu_kv) for a, b in zip((0,) + cu, cu))

    @property
    def longest(self) -> tuple:
        return max(self.q, default=0), max(self.kv, default=0)


def _lengths(cu):
    return [max(b - a, 0) if i else b for i, (a, b) in enumerate(zip((0,) + cu, cu))]


def check_lengths(a, key):
    """The TND branch of GetShapeAttrsInfo (`key`: the call's key tensor): (Batches, failure)."""
    cu_q, cu_kv = a.actualSeqQLenOptional, a.actualSeqKvLenOptional
    if cu_q is None or cu_kv is None:
        return None, (
            "actualSeqQlenTensor or actualSeqKvlenTensor is nullptr for inputLayout TND",
            "tiling.tnd_seq_null",
        )
    batches = Batches(cu_q, cu_kv)
    if len(cu_q) != len(cu_kv):
        return None, (f"VarLen scene, q is not equal kv: {len(cu_q)} and {len(cu_kv)} lengths", "tiling.tnd_seq_sizes")
    t1, t2 = a.query.shape[0], key.shape[0]
    if t1 < sum(batches.q) or t2 < sum(batches.kv):
        return None, (
            f"Query T({t1}) and key T({t2}) need larger than respectively sum of seqLen({sum(batches.q)}) and "
            f"sekvLen({sum(batches.kv)}).",
            "tiling.tnd_seq_sum",
        )
    n1 = a.query.shape[1]
    if a.headNum != n1:
        return None, (f"head_num is [{a.headNum}], but got query dim1 [{n1}].", "tiling.head_num")
    n2 = key.shape[1]
    if n2 == 0:
        return None, ("N2 is zero.", "tiling.tnd_n2")
    if n1 % n2:
        return None, (f"n1Size [{n1}] should be a multiple of n2Size [{n2}].", "tiling.gqa")
    return batches, None


def sparse_mode_supported(mode: int):
    """The sparse modes TND takes (VarLenSparseModeProcess; the arch35 GetSparseInfo checks it first,
    with or without an attenMask): failure or None."""
    if mode not in TND_SPARSE_MODES and mode >= 0:
        return f"Var len not support sparse mode {mode}.", "tiling.tnd_sparse_mode"
    return None


def check_sparse(a, batches: Batches, mode: int):
    """VarLenSparseModeProcess (only with an attenMask): the modes TND takes, and mode 6's prefix list."""
    problem = sparse_mode_supported(mode)
    if problem is not None:
        return problem
    if mode != 6:
        return None
    prefix = a.prefixOptional
    if prefix is None:
        return "prefixN is null pointer while sparse mode is prefix compress", "tiling.prefix"
    if len(prefix) != batches.count:
        return f"prefixN size {len(prefix)} differs from the batch count {batches.count}", "tiling.prefix"
    for b, (n, s1, s2) in enumerate(zip(prefix, batches.q, batches.kv)):
        low = max(s2 - s1, 0)
        if not low <= n <= s2:
            return f"batch[{b}] prefixN={n} is invalid, should be in range of [{low}, {s2}]", "tiling.prefix"
    return None


def check_tokens(a, batches: Batches, mode: int):
    """CheckPretokenAndNexttoken of the forward's TND tiling (with an attenMask): the per-batch rules of
    modes 3, 4, 7 and 8 against rows no key is visible to (cumulative lengths already found monotone)."""
    pre, nxt = a.preTokens, a.nextTokens
    pairs = [(b, s1, s2) for b, (s1, s2) in enumerate(zip(batches.q, batches.kv))]
    if mode == 0:
        return _no_mask_mode_tokens(pre, nxt, batches, pairs)
    if mode == 3:
        bad = [b for b, s1, s2 in pairs if s1 > s2]
        if bad:
            return f"Batch[{bad[0]}] s1 is larger than s2, exist invalid row.", "tiling.tnd_tokens"
    elif mode == 4:
        if pre < 0:
            return f"pre_tokens[{pre}] config error, has invalid data block.", "tiling.tnd_tokens"
        if nxt < 0 and pre + nxt < 0:
            return f"pre_tokens[{pre}], next_tokens[{nxt}], invalid config.", "tiling.tnd_tokens"
        bad = [b for b, s1, s2 in pairs if s1 and s2 and s1 - nxt > s2]
        if bad:
            return f"Batch[{bad[0]}], next_tokens[{nxt}], has invalid row.", "tiling.tnd_tokens"
    elif mode == 7:
        band = band_index(mode, batches.cu_q, batches.cu_kv)
        if pre < batches.kv[band] or nxt > 0:
            return (
                f"RightDownCausal_Band mode: pre_tokens[{pre}] is smaller than last valid s2[{batches.kv[band]}]"
                f"or next_tokens[{nxt}] is larger than 0, wrong config.",
                "tiling.tnd_tokens",
            )
        for b, s1, s2 in pairs:
            if s1 and s2 and (s1 > s2 or (b == band and s1 - nxt > s2)):
                return f"Batch[{b}] s1[{s1}] s2[{s2}] has an invalid row.", "tiling.tnd_tokens"
    elif mode == 8:
        band = band_index(mode, batches.cu_q, batches.cu_kv)
        if batches.q[band] - nxt > batches.kv[band]:
            return f"Batch[{band}], next_tokens[{nxt}], has invalid row.", "tiling.tnd_tokens"
        if pre < batches.kv[band]:
            return (
                f"Band_LeftUpCausal mode: pre_tokens[{pre}] is smaller than first valid s2[{batches.kv[band]}].",
                "tiling.tnd_tokens",
            )
    return None


def _no_mask_mode_tokens(pre: int, nxt: int, batches: Batches, pairs):
    """Mode 0 with an attenMask (GetSparseInfo, SparseNoMaskModeCheck; the arch35 varlen tiling alike):
    unless the tokens make it causal or cover everything, no negative nextTokens, no batch row without a
    key (S2b + preTokens < S1b), and a negative preTokens needs nextTokens >= |preTokens|."""
    s1, s2 = batches.longest
    if pre >= s1 and (nxt == 0 or nxt >= s2):
        return None
    if nxt < 0:
        return f"nextTokens[{nxt}] config error, there is no valid data block.", "tiling.tnd_tokens"
    for b, q, k in pairs:
        if q and k and k + pre < q:
            return f"Batch[{b}] s1[{q}] s2[{k}] has invalid row, check pre_tokens and next_tokens.", "tiling.tnd_tokens"
    if pre < 0 and nxt < -pre:
        return (
            f"preTokens[{pre}] and nextTokens[{nxt}] config error with S[{min(batches.kv, default=0)}], has invalid "
            "data block.",
            "tiling.tnd_tokens",
        )
    return None


def check_grad_tokens(a, batches: Batches, mode: int, masked: bool, arch35: bool, skip_empty: bool = False):
    """ProcessTokensInfo of the backward's TND tilings (arch32; the arch35 CheckUnpadTokensInfo alike,
    over every batch), after its token correction: modes 7 and 8 check the band batch, modes 0 and 4
    every batch (of grad_batch_count on arch32; with `skip_empty` not those with an S1b or S2b of 0), that
    -preTokens and -nextTokens stay within its lengths (mode 0 compares preTokens with S2b, mode 4 with
    S1b) and preTokens + nextTokens > 0."""
    if mode not in (0, 4, 7, 8):
        return None
    pre, nxt = _grad_tokens(a, mode, masked)
    count = batches.count if arch35 else grad_batch_count(batches)
    if mode in (7, 8):
        rows = [b for b in range(count) if batches.q[b]]
        checked = [(rows[-1] if mode == 7 else rows[0]) if rows else 0]
    else:
        checked = [b for b in range(count) if not skip_empty or (batches.q[b] and batches.kv[b])]
    for b in checked:
        s1, s2 = batches.q[b], batches.kv[b]
        low_pre, low_next = (s2, s1) if mode == 0 else (s1, s2)
        if -pre > low_pre or -nxt > low_next or pre + nxt <= 0:
            return (
                f"pre_token and next_token is invalid in the unpad scene, got b {b}, s1 {s1}, s2 {s2}, pre_token "
                f"{pre}, next_token {nxt}, sparse_mode {mode}",
                "tiling.tnd_tokens",
            )
    return None


def check_mask(mask, batches: Batches, compressed: tuple | None, heads: int, grad: bool = False, arch35: bool = False):
    """The attenMask shapes of a TND call (the forward's AnalyzeOptionalInput): 4-D [1|B, 1, max S1,
    max S2] or [B, N1, max S1, max S2], or 2-D [max S1, max S2] or [T1, T2]; a compressed mode takes any
    2-D shape, and then needs the template's last two dimensions. With `grad` the backward's
    CheckAttenMaskShape: its B leaves out trailing empty batches (grad_batch_count), and a compressed
    4-D mask's last two dimensions are compared with the template only; with `arch35` too the arch35
    SetAttenMaskShapeType: B counts every batch and neither an uncompressed 4-D mask's last two
    dimensions nor a 2-D mask's shape are checked (the all-lengths-equal path checks their size:
    runs_as_bsnd). Failure or None."""
    shape, (s1, s2) = tuple(mask.shape), batches.longest
    b = grad_batch_count(batches) if grad and not arch35 else batches.count
    if mask.ndim == 4 and grad:
        if shape[:2] not in ((b, heads), (b, 1), (1, 1)):
            return f"dim value error, dim0 = {shape[0]}, dim1 = {shape[1]}", "tiling.mask_shape"
        if compressed is None and not arch35 and shape[2:] != (s1, s2):
            return f"atten mask shape [{shape[2]},{shape[3]}] is invalid.", "tiling.mask_shape"
    elif mask.ndim == 4:
        if shape not in ((1, 1, s1, s2), (b, 1, s1, s2), (b, heads, s1, s2)):
            return (
                f"get unsupported atten_mask shape, the shape is {list(shape)}. B=[{b}], N=[{heads}], Sq=[{s1}], "
                f"Skv=[{s2}], supported atten_mask shape can be [B, N, Sq, Skv], [B, 1, Sq, Skv], [1, 1, Sq, Skv] "
                "and [Sq, Skv].",
                "tiling.mask_shape",
            )
    elif mask.ndim == 2:
        unchecked = compressed is not None or (grad and arch35)
        if not unchecked and shape not in (batches.longest, (sum(batches.q), sum(batches.kv))):
            return (
                f"get unsupported atten_mask shape, the shape is {list(shape)}. MaxSq=[{s1}], MaxSkv=[{s2}], when "
                "input_layout is TND, the supported atten_mask shape is [MaxSq, MaxSkv].",
                "tiling.mask_shape",
            )
    else:
        return f"atten mask dim should be 2 or 4, but got {mask.ndim}", "tiling.mask_rank"
    if compressed is not None and shape[-2:] != compressed:
        rows, cols = compressed
        return (
            f"In the attenmask compression, please set the atten_mask_shape to [{rows},{cols}]",
            "tiling.mask_compressed",
        )
    return None


def runs_as_bsnd(a, batches: Batches) -> bool:
    """The arch35 backward's isAllSame switch (ProcessSparseModeInfo): every batch of the same query and
    key lengths as the one before it (one batch included) and sparseMode <= 6 (as uint32) run the
    BSND path: its sparse-mode, token and mask-size checks, and kernels that read the same elements."""
    same = all(q == batches.q[0] for q in batches.q) and all(k == batches.kv[0] for k in batches.kv)
    return bool(batches.q) and same and (a.sparseMode & 0xFFFFFFFF) <= 6  # no batch: no lengths to compare


BN2_MAX_S, BN2_MULTIBLK_SEQ, BN2_MULTIBLK_BN, BN2_MAX_D = 128, 640, 256, 512
WIDE_TYPES = (DataType.ACL_FLOAT, DataType.ACL_FLOAT8_E5M2, DataType.ACL_FLOAT8_E4M3FN)


BN2S2_DROPOUT_D = "fag.arch35_bn2s2_needs_d128_with_dropout"


def grad_kernel_is_tnd_arch35(a, batches: Batches, version) -> bool:
    """Whether the arch35 backward's kernels of a call on its BSND path (runs_as_bsnd) run with layout TND
    after all: SetSplitAxis (DoOpTiling, after the checks) gives back layout TND with the BN2S2 split to
    a call that takes neither the BN2 split (both lengths <= 128) nor its multi-block form (B·N1 >= 256,
    a length above 128, both <= 640, not the prefix modes), when N1 = N2, D <= 512, the query is not
    FLOAT (or FP8) and there is no rope; both BN2 forms need the value's D equal to D and, with keepProb
    < 1, key lengths that are multiples of 8 (dropoutIsDivisibleBy8). From 9.0.0 (`version`,
    BN2S2_DROPOUT_D) BN2S2 also needs keepProb 1 or D <= 128."""
    s1, s2 = batches.longest
    n1, n2, d = a.query.shape[1], a.keyIn.shape[1], a.query.shape[2]
    rope = getattr(a, "queryRope", None) is not None
    narrow = n1 == n2 and d <= BN2_MAX_D and a.query.dtype not in WIDE_TYPES and not rope
    bn2_shape = narrow and d == a.value.shape[2]
    whole_bytes = float(np.float32(a.keepProb)) >= 1 or s2 % 8 == 0
    bn2 = bn2_shape and s1 <= BN2_MAX_S and s2 <= BN2_MAX_S
    multi_block = (
        bn2_shape
        and batches.count * n1 >= BN2_MULTIBLK_BN
        and (a.sparseMode & 0xFFFFFFFF) not in (5, 6)
        and max(s1, s2) > BN2_MAX_S
        and max(s1, s2) <= BN2_MULTIBLK_SEQ
    )
    dropout_d = float(np.float32(a.keepProb)) >= 1 or d <= 128 or not version.has(BN2S2_DROPOUT_D)
    return narrow and dropout_d and not ((bn2 or multi_block) and whole_bytes)


def check_grad_sparse_mode_arch35(a, as_bsnd: bool):
    """The arch35 backward's sparse-mode value check (CheckVarLenSparseModeValue, or CheckSparseModeValue on
    the BSND path), with or without a mask, on the mode as uint32: failure or None."""
    mode = a.sparseMode & 0xFFFFFFFF
    if mode > 8 or (mode == 5 and not as_bsnd):
        return f"Var len not support sparse mode {mode}.", "tiling.tnd_sparse_mode"
    return None


def grad_batch_count(batches: Batches) -> int:
    """The backward tilings' B: the batches without the trailing ones whose query and key lengths are
    both 0 (the first batch always counts)."""
    count = batches.count
    while count > 1 and batches.q[count - 1] <= 0 and batches.kv[count - 1] <= 0:
        count -= 1
    return count


SAB_MEAN_LENGTH = 1024  # SAB_TND_SIZE


def grad_runs_same_ab(a, batches: Batches) -> bool:
    """Whether the Atlas A2/A3 backward of a TND call with a pse runs the SameAb template
    (arch32 ..._s1s2_bn2gs1s2_sab.cpp IsCapable, priority 15500, tried before S1s2Bn2gs1s2 at 16000): a 1-D
    sink, or a non-FLOAT query whose cumulative lengths, at the last batch whose cumulative query length
    is not 0, average at least 1024 query and key tokens per batch up to it (isTndSABHit, integer
    division). Its pse processing has no sparse-mode rules and its kernel keeps the start indices in
    every batch. (The deterministic option, the template's other test, is not emulated: 0.)"""
    sink = getattr(a, "sinkInOptional", None)
    if sink is not None and len(sink.shape) == 1:
        return True
    if a.query.dtype == DataType.ACL_FLOAT:
        return False
    last = next((i for i in range(len(batches.cu_q) - 1, -1, -1) if batches.cu_q[i] != 0), None)
    if last is None:
        return False
    count = last + 1
    return min(batches.cu_q[last], batches.cu_kv[last]) // count >= SAB_MEAN_LENGTH


def causal_type(a, batches: Batches, mode: int, masked: bool) -> bool:
    """Whether the forward's TND sparse type is CAUSAL or RIGHT_DOWN_CAUSAL (GetSparseInfo,
    CheckPretokenAndNexttoken): modes 2 and 3, mode 0 with preTokens >= max S1 and nextTokens 0, mode 4
    with preTokens >= max S2 and nextTokens 0; nothing without an attenMask."""
    s1, s2 = batches.longest
    pre, nxt = a.preTokens, a.nextTokens
    return masked and (
        mode in (2, 3) or (mode == 0 and pre >= s1 and nxt == 0) or (mode == 4 and pre >= s2 and nxt == 0)
    )


def _inner_pse(pse, heads: int):
    """pseType 2/3 slopes, [N1] or [B, N1] (both tilings check the rank only here)."""
    if pse.ndim not in (1, 2):
        return None, (
            f"pse inner mode, unsupported pse shape {list(pse.shape)}: pseType 2/3 takes FLOAT slopes [N1] or [B,N1]",
            "tiling.pse_inner_shape",
        )
    return PackedPse("slopes", heads, alibi_batches=pse.shape[0] if pse.ndim == 2 else 1), None


def _inner_pse_modes(batches: Batches, mode: int, masked: bool, starts: tuple, equal_lengths: bool = False):
    """The generated ALiBi's sparse-mode rules (the VarLen SetPseAlibiParams; the backward's
    ProcessPseInfo alike): no mode 7; mode 8 needs S1 = S2 per batch, batch 0 shifted by the start
    indices `starts` (qStartIdx, kvStartIdx as the tiling stores them). `equal_lengths`: the arch35
    forward asks S1b = S2b of every batch in the other modes too."""
    if masked and mode == 7:
        return "INNER Pse does not support sparse mode 7.", "tiling.pse_inner_mode"
    if not masked or mode != 8:
        if equal_lengths and any(q != k for q, k in zip(batches.q, batches.kv)):
            return (
                "Inner pse alibi is only support when actualSeqQLen and actualSeqKvLen are equal.",
                "tiling.pse_inner_mode",
            )
        return None
    q_start, kv_start = starts
    if batches.count and batches.q[0] - batches.kv[0] + q_start - kv_start:
        return (
            f"INNER Pse sparse mode 8 is only supported when actualSeqLenData[0] {batches.q[0]} + qStartIdx "
            f"{q_start} - actualSeqLenKvData[0] {batches.kv[0]} - kvStartIdx {kv_start} == 0.",
            "tiling.pse_inner_mode",
        )
    for b, (s1, s2) in enumerate(zip(batches.q, batches.kv)):
        if b and s1 != s2:
            return (
                f"INNER Pse sparse mode 8 is only supported when actualSeqQLen[{b}] {s1} and actualSeqKvLen[{b}] "
                f"{s2} are equal.",
                "tiling.pse_inner_mode",
            )
    return None


def start_values(a) -> tuple:
    """(qStartIdx, kvStartIdx) as the arch32 SetQKVStartIdx stores them: both only when both are given
    and not empty, else 0 and 0."""
    q, kv = getattr(a, "qStartIdxOptional", None), getattr(a, "kvStartIdxOptional", None)
    if not q or not kv:
        return 0, 0
    return int(q[0]), int(kv[0])


def grad_start_values_arch35(a) -> tuple:
    """(qStartIdx, kvStartIdx) as the arch35 backward's SetQKVStartIdx stores them: element 0 of
    qStartIdx, then of kvStartIdx (0 when absent or empty); neither without a qStartIdx."""
    q, kv = getattr(a, "qStartIdxOptional", None), getattr(a, "kvStartIdxOptional", None)
    if not q:
        return 0, 0
    return int(q[0]), int(kv[0]) if kv else 0


def forward_pse(a, pse, batches: Batches, heads: int):
    """AnalyzeOptionalInput's TND pse branch (the arch32 forward; the arch35 AnalyzeTndPseOptionalInput
    alike): (PackedPse, failure). A packed pse is
    told by its dimension 0 alone: N1·ΣS2b (one row per head), N1·ΣS1b·S2b, else the alibi shape
    [1|B, N1, 1024, max S2]."""
    if a.pseType in (2, 3):
        return _inner_pse(pse, heads)
    shape, dim0 = tuple(pse.shape), pse.shape[0]
    if dim0 == sum(batches.kv) * heads:
        return PackedPse("1s2", heads), None
    if dim0 == sum(q * k for q, k in zip(batches.q, batches.kv)) * heads:
        return PackedPse("s1s2", heads), None
    if len(shape) == 4 and dim0 in (1, batches.count) and shape[1:] == (heads, ALIBI_ROWS, batches.longest[1]):
        return PackedPse("s1s2", heads), None
    return None, (
        f"get unsupported pse shape {list(shape)}: with inputLayout TND dimension 0 must be N1*sum(S2) = "
        f"{heads * sum(batches.kv)} or N1*sum(S1*S2), or the shape [1|B, N1, 1024, maxS2]",
        "tiling.pse_shape",
    )


def forward_pse_alibi(a, pse, form: PackedPse, batches: Batches, mode: int, masked: bool, starts=None):
    """SetPseAlibiParams of FlashAttentionVarLenScoreTiling: (the form the kernel reads, failure). A pse
    of rank < 2 fails; one whose second-to-last dimension is 1024 is the compressed alibi, which needs
    S1b = S2b in every batch and a causal sparse type. With `starts` (the (qStartIdx, kvStartIdx) of
    the arch35 SetQKVStartIdx) the arch35 VarLen tiling's SetPseAlibiParamsRegbase: no rank check (a
    1-D pse's second-to-last dimension is gert's invalid value, not 1024), and slopes need S1b = S2b in
    every batch outside mode 8."""
    arch35 = starts is not None
    if form.form == "slopes":
        return form, _inner_pse_modes(batches, mode, masked, starts if arch35 else start_values(a), arch35)
    if pse.ndim < 2:
        return form, None if arch35 else (f"Invalid Pse DimNum({pse.ndim}), PseType({a.pseType}).", "tiling.pse_rank")
    if pse.shape[-2] != ALIBI_ROWS:
        return form, None
    if any(q != k for q, k in zip(batches.q, batches.kv)):
        return form, ("Pse alibi only support when actualSeqQLen and actualSeqKvLen are equal.", "tiling.pse_alibi_s")
    if not causal_type(a, batches, mode, masked):
        return form, ("Pse alibi only support causal sparse type.", "tiling.pse_alibi_causal")
    return PackedPse("alibi", form.heads, alibi_batches=pse.shape[0], alibi_width=pse.shape[-1]), None


def backward_pse(
    a,
    pse,
    batches: Batches,
    heads: int,
    key_tokens: int,
    mode: int,
    masked: bool,
    arch35=False,
    tokens=None,
    same_ab=False,
):
    """ProcessPseInfo of the backward's TND tilings: (PackedPse, failure). Slopes must be exactly [N1]
    or [B, N1]; a 1-D pse is packed, told by its length (N1·`key_tokens` or N1·ΣS1b·S2b); else only
    the alibi shape [1|B, N1, 1024, max S2] with causal tokens (preTokens >= max S1, nextTokens 0)
    passes. On Atlas A2/A3 B is grad_batch_count's and `key_tokens` the key's rows (T2; from 9.1.0 the
    key lengths' sum); with `arch35`
    (..._regbase.cpp ProcessPseInfo) B counts every batch, `key_tokens` is the last actualSeqKvLen,
    and the slopes' mode rules (of the sparseMode attribute, mask or not, with the arch35 start
    indices) come before their shape. The Atlas A2/A3 S1s2Bn2gs1s2 template applies them after the
    shape, to the sparseMode attribute too, mask or not; its SameAb template (`same_ab`,
    grad_runs_same_ab) not at all. `tokens`: the corrected (preTokens, nextTokens) of the arch35 BSND
    path (default: _grad_tokens')."""
    shape, count = tuple(pse.shape), batches.count if arch35 else grad_batch_count(batches)
    if a.pseType in (2, 3):
        if arch35:
            problem = _inner_pse_modes(batches, mode, True, grad_start_values_arch35(a))
            if problem is not None:
                return None, problem
        form, problem = _inner_pse(pse, heads)
        if problem is None and shape not in ((heads,), (count, heads)):
            problem = (
                f"FAG invalid pse shape {list(shape)}, should be [N1] = [{heads}] or [B, N1] = [{count}, {heads}]",
                "tiling.pse_inner_size",
            )
        if problem is not None or arch35 or same_ab:
            return form, problem
        return form, _inner_pse_modes(batches, mode, True, start_values(a))
    if len(shape) == 1:
        if shape[0] == key_tokens * heads:
            return PackedPse("1s2", heads), None
        if shape[0] == sum(q * k for q, k in zip(batches.q, batches.kv)) * heads:
            return PackedPse("s1s2", heads), None
        return None, ("pse outer mode, tnd, unsupported pse shape", "tiling.pse_shape")
    if len(shape) != 4:
        return None, (f"The shape of pse is not 4 dimensions, got {len(shape)}", "tiling.pse_rank")
    s1, s2 = batches.longest
    pre, nxt = tokens or _grad_tokens(a, mode, masked)
    if s1 <= pre and nxt == 0 and shape[0] in (1, count) and shape[1:] == (heads, ALIBI_ROWS, s2):
        return PackedPse("alibi", heads, alibi_batches=shape[0], alibi_width=s2), None
    return None, (
        f"The shape of pse{list(shape)} is invalid or tocken[{a.preTokens},{a.nextTokens}] not casual",
        "tiling.pse_shape",
    )


def _grad_tokens(a, mode: int, masked: bool) -> tuple:
    """The backward's tokens after ProcessTokensInfo: modes 2 and 3 (INT32_MAX, 0); no attenMask or mode 1
    (INT32_MAX, INT32_MAX); the others as given (TND applies no right-down shift)."""
    if not masked or mode == 1:
        return INT32_MAX, INT32_MAX
    if mode in (2, 3):
        return INT32_MAX, 0
    return a.preTokens, a.nextTokens


def drop_mask_bytes(batches: Batches, heads: int) -> int:
    """The dropMask bytes a TND call needs: Σ_b N1·S1b·S2b bits."""
    return math.ceil(heads * sum(q * k for q, k in zip(batches.q, batches.kv)) / 8)


# Ascend910_95 registers the sink input (flash_attention_score{,_grad}_def.cpp) but no arch35 tiling or
# kernel reads it: the call runs as without one.
SINK_IGNORED = (
    "sinkOptional is ignored on Ascend910_95: no arch35 tiling or kernel reads it (the result is the one without "
    "a sink; dsinkOut is not written)"
)


def check_sink(sink, heads: int):
    """The sink checks of the arch32 tiling: FLOAT, 1-D of N1 elements."""
    if sink.dtype != DataType.ACL_FLOAT:
        return f"invalid sink dtype[{sink.dtype.name}], only support float.", "tiling.sink_dtype"
    if sink.ndim != 1:
        return f"invalid sink shape {list(sink.shape)}, sink shape only support [n,].", "tiling.sink_rank"
    if sink.numel != heads:
        return f"Input sink shapeSize is invalid, it should be {heads}, but got {sink.numel}", "tiling.sink_size"
    return None


def fixed_attributes(a):
    """What the entry points without them pass to L0 (V1, VarLen/Unpadding V1 and V4): no start
    indices, PSE_TYPE_V1."""
    for name, value in (("qStartIdxOptional", None), ("kvStartIdxOptional", None), ("pseType", 1)):
        if not hasattr(a, name):
            setattr(a, name, value)


def pad_extent(cu_q, cu_kv):
    """(longest kv length, query total) as the op_api's padding rules read them (GetSumIntArrayMaxValue,
    getSeqLenQSum), or None when the lists are missing or of different lengths."""
    if cu_q is None or cu_kv is None or len(cu_q) != len(cu_kv) or not len(cu_q):
        return None
    kv_max = max([cu_kv[0]] + [b - a for a, b in zip(cu_kv, cu_kv[1:])])
    return kv_max, next((n for n in reversed(cu_q) if n > 0), 0)
