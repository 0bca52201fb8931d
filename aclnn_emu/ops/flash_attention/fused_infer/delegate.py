"""The routes FusedInferAttentionScore shares with IncreFlashAttention and PromptFlashAttention.

A2/A3: `TilingProcess4IFA` (IFATiling::DoSubOpTiling) and `TilingProcess4PFA` (the PFA tiling);
Ascend910_95: IFATilingV2 for an antiquant key, PromptFlashAttentionTilingV2 for the rest. The
emulator runs those operators' prepare (their public `OP`) on the FIA call's arguments renamed to
theirs; what they reject is a tiling failure of FIA (561002). Inputs their V4/V2 entry points
cannot take are declared below.
"""

from types import SimpleNamespace

import math
import numpy as np

from aclnn_emu import status
from aclnn_emu.opdef.gaps import KINDS, Gaps
from aclnn_emu.opdef.generated import attr_uint32
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention import fused_infer_attention as fia
from aclnn_emu.opdef.signature import Launch, OpError

from ..common import on_arch35
from ..incre import OP as INCRE
from ..prompt import V3 as PROMPT
from ..prompt.checks import actual_lengths
from . import (
    kv_antiquant,
    kv_antiquant_arch35,
    kv_antiquant_msd,
    kv_antiquant_pfa,
    kv_list,
    launch,
    padding,
    paged_prompt,
    paged_prompt_arch32,
)
from . import mla_full_quant_arch35 as mla_full_quant
from . import mla_quant_arch32 as mla_quant
from . import pse_type, rope_arch32, rope_prompt, shared_prefix, split_params
from . import alibi_arch35 as alibi
from . import query_quant_arch35 as query_quant
from .entry import V4
from .failure import tiling
from .layouts import key_rows, query_axes, query_d, query_s, split
from .route import Route

NOT_IMPLEMENTED = Gaps(
    V4,
    "not_implemented",
    {
        "lse": "softmaxLse with an INT8/INT4 (antiquant) key/value on the PFA route (on Atlas A2/A3: the MSD "
        "kernels' (key/value scales) with a 2-D (SH) query or sparse mode 20-22), or on the IFA route with a query "
        "layout other than BSH/BSND/BNSD or (Atlas A2/A3) a query S other than 1",
        "paged_pfa": "a block table (page attention) on a call the tiling sends to the PFA kernels on Atlas A2/A3 "
        "beside an INT8 or INT4 (INT32) key/value with a query layout other than BSH, BSND, BNSD, BNSD_BSND, NSD "
        "or TND (the page-attention rules are not replayed on those shapes)",
        "kv_antiquant": "separate key/value antiquant parameters on Ascend910_95's PFA route and on the A2/A3 one "
        "where the tiling picks the MSD kernels (keyAntiquantScale or valueAntiquantScale with query S <= 16, "
        "beside an fp16 or BF16 query) after their tiling rules (modes, tensor list, padding, dtypes, scale and "
        "offset pairs, the parameters' shapes and dtypes per mode) with a 2-D (SH) query, sparse mode 20-22 or a "
        "shared prefix, and with a block table FLOAT key/value parameters (the kernels read their memory as fp16 "
        "elements); on Ascend910_95's IFA route the combined antiquantScale/Offset with an antiquantMode other "
        "than 0 (IFATilingV2's non-split mode, refused before its checks); or on the A2/A3 "
        "IFA route other than "
        "key and value scales (offsets for both or neither, no antiquantScale) in modes 0-5 (per channel, per "
        "token, per tensor + head, per token + head, per token (+ head) in the cache's blocks as [blocks, "
        "(N2,) blockSize]) or the key per channel with the value per token (modes 0 and 1): a query layout other "
        "than BSH/BSND/BNSD or a 5-D (NZ) key outside modes 0, a per-token side with a shared prefix, and the pair with a per-tensor [1] key scale or value "
        "parameters other than [1, B, S'] / [B, S'] covering the cache (offset alike)",
        "shared_prefix": "a shared prefix beside a query layout other than BSH/BSND/BNSD on the Atlas A2/A3 IFA "
        "route that passes the IFA tiling's prefix rules (a TND query of D 0)",
        "rope": "queryRope/keyRope on Atlas A2/A3, after the IFA tiling's MLA checks (which refuse every INT8/INT4 key beside "
        "a float query), the MLA full-quant kernels (INT8 query, key and value) with a query S other than 1, a TND "
        "layout, an attenMask, empty actualSeqLengthsKv or a value cache of another shape than the key's, the ATB "
        "path (innerPrecise 2, a paged INT8 key, actualSeqLengths) after its layout rule, and a rope on the A2/A3 "
        "PFA route with a TND-like layout over a paged cache, or over dense ones after the PFA tiling's checks (the "
        "var-len kernels, which read it)",
        "per_block_prefix": "a shared prefix beside Ascend910_95's per-block full quant (GetEnableDN then leaves "
        "the DN kernels for the ND ones, whose 128-key blocks step through the 256-key scales)",
        "antiquant_mask": "an attenMask beside an INT8/INT4 key/value with a query S other than 1 on Ascend910_95 "
        "with a query layout other than BSH/BSND/BNSD (IFATilingV2 bounds each TND batch's rows and key windows "
        "by its lengths, which the route does not hand on)",
    },
)


def _refuse_unsupported(
    a, prompt: bool, arch35: bool = False, rope: bool = False, per_block: bool = False, full_quant: bool = False
):
    """The FIA inputs the IFA V4 / PFA V2 preparations cannot take (``rope``: the call's rope runs;
    ``per_block``: the key/value scales are the per-block full-quant ones; ``full_quant``: the MLA
    full-quant scales)."""
    key = a.key.items[0]
    pfa_a2 = prompt and not arch35
    paged_a2 = pfa_a2 and a.blockTableOptional is not None
    # the PA antiquant kernels gather too; an INT4 cache meets the page-attention rules, then no kernel
    same_dtype = a.query.dtype == key.dtype or kv_antiquant_pfa.applies(a) or a.int4
    gathered_a2 = paged_a2 and (a.inputLayout or "BSH") in paged_prompt_arch32.GATHERED and same_dtype
    # a 5-D (NZ) key: on A2/A3 the IFA tiling refuses softmaxLse (_ifa_kv_nz_lse) but with rope, which is refused
    # below; on Ascend910_95 NZ is a copy flag of the one antiquant kernel, which writes it as for ND
    # the second pass; with INT4 no kernel runs (NO_KERNEL int4_pfa) and the checks decide; the MSD
    # kernels write softmaxLse themselves
    msd_lse = kv_antiquant_pfa.applies(a) and kv_antiquant_pfa.msd(a) and kv_antiquant_msd.runs(a)
    pfa_written = pfa_a2 and (kv_antiquant_pfa.kv_antiquant(a) or a.int4 or msd_lse)
    if a.lse_wanted and _antiquant_kv(a) and not pfa_written and (prompt or not _lse_rows_known(a, arch35)):
        NOT_IMPLEMENTED.refuse("lse")
    separate = _separate_antiquant(a) and not (per_block or full_quant)
    if separate and (prompt and arch35 or not prompt and not _ifa_separate_runs(a, arch35)):
        NOT_IMPLEMENTED.refuse("kv_antiquant")
    if arch35 and not prompt and _antiquant_kv(a) and not _separate_tensors(a) and a.antiquantMode != 0:
        NOT_IMPLEMENTED.refuse("kv_antiquant", f"antiquantMode {a.antiquantMode}")
    if pfa_a2 and kv_antiquant_pfa.kv_antiquant(a) and kv_antiquant_pfa.float_params(a):
        NOT_IMPLEMENTED.refuse("kv_antiquant")
    prefix = shared_prefix.present(a) and (prompt or not arch35)  # Ascend910_95's IFA route ignores it
    if prefix and per_block:
        NOT_IMPLEMENTED.refuse("per_block_prefix")
    if prefix and not _prefix_fits(a, prompt, arch35):
        NOT_IMPLEMENTED.refuse("shared_prefix")
    if rope_prompt.present(a) and not rope:
        NOT_IMPLEMENTED.refuse("rope")
    if arch35 and not prompt and _antiquant_kv(a) and _masked(a) and _dense_query_s(a) is None:
        NOT_IMPLEMENTED.refuse("antiquant_mask")
    if paged_a2 and not gathered_a2:
        NOT_IMPLEMENTED.refuse("paged_pfa")


NO_KERNEL = Gaps(
    V4,
    "no_kernel",
    {
        "int4_pfa": "an INT4 (INT32) key/value on the Atlas A2/A3 PFA route (query S > 1) after the PFA tiling's "
        "checks, its key non-empty: prompt_flash_attention_arch32.h compiles every PFA kernel only for a key "
        "other than INT4 (the empty-tensor kernel alone remains), so the tiling key it builds has no kernel"
    },
)


REFUSED = Gaps(
    V4,
    "refused",
    {
        "pair_without_params": "keyAntiquantMode 0 with valueAntiquantMode 1 and neither key nor value antiquant "
        "tensors on Ascend910_95's IFA route, antiquantMode 0: IFATilingV2 (GenAntiquantModeVal) picks the pair's "
        "kernels, which read the separate key and value parameters the call does not give"
    },
)


INFERRED = Gaps(
    V4,
    "inferred",
    {
        "lse_pass": "softmaxLse off the FIA-V3 kernels (the A2/A3 IFA and PFA routes, Ascend910_95's PFA route) "
        "is log(sum exp) + max of the fp32 scores from a second pass; the IFA/PFA kernels' own scores (fp16 on "
        "the A2/A3 PFA route) and their value for rows without keys or with every key masked are not established",
        "int4_nibbles": "an INT4 (INT32) key/value read with element 2i in the low 4 bits of byte i (the 8.5 "
        "source only re-types the tensor); on Atlas A2/A3 the IFA tiling's INT4 rules (D a multiple of 64) are not "
        "replayed (Ascend910_95's IFATilingV2 ones are)",
        "ifa_mla_bnsd_mask": "IFA MLA (D 512 + rope 64) on Ascend910_95 with a BNSD query, S > 1 and sparse mode 3: "
        "the kernel reads the compressed mask for the merged G x S rows without the per-row offset of the other "
        "layouts (attenmask.h, nextTokensOfMlaPerBatch); which key each query row sees there is not established, "
        "the emulator applies each query row's causal window as for BSH/BSND",
        "prefix_walk": "a shared prefix on Ascend910_95's PFA route whose length (actualSharedPrefixLen, else its S) "
        "is not a multiple of 256: the kernels walk the prefix and the batch's keys in key blocks of the tiling's "
        "sInner (64, 128 or 256, which the emulator does not model), and as read (ComputeS2LoopInfo, "
        "ComputeBmm1Tail) a length not a multiple of it makes the last prefix block read prefix rows past that "
        "length, up to it plus the batch's keys, and drops the key's last blocks; the emulator attends to the "
        "prefix's first rows of that length, then to the batch's keys",
        "ifa_mla_quant_split": "the A2/A3 MLA full-quant kernel (INT8 query, key and value) over 256 keys or more: "
        "the IFA tiling may split a batch's keys across cores (IsFlashDecode, by the part's core count) and "
        "combine the parts' outputs by their lse; the emulator walks each batch's keys in one pass",
        "max_workspace_lengths": "GetMaxWorkspaceSize on the IFA/PFA routes checks the actual lengths' values, "
        "which the hardware's tilings do not see there (isMaxWorkspace: FakeArray tensors without data)",
        "list_key_rank": "a key tensor list holding a tensor of more than four dimensions on the PFA route: to "
        "read its S the kernels copy its shape into a four-element stack array (dimInfo: kernel_common.h "
        "SeqLenFromTensorList, prompt_flash_attention_s1s2_bns1_x910.h, flash_attention_score_block_vec_infer.h "
        "GetActualSeqLenKV), past its end; what that overwrites is not established, the emulator runs as if "
        "the array held the shape",
        "msd_sums": "the A2/A3 MSD kernels per token with key or value offsets: the order inside WholeReduceSum "
        "(the last 64 elements of a row sum) and whether the vector FusedMulAdd rounds once are not established; "
        "the emulator sums those 64 in float64 and rounds once, and rounds the product and the sum apart",
    },
)


def _pfa_context(a) -> None:
    """The first checks of TilingProcess4PFA on Atlas A2/A3 (fused_infer_attention_score_tiling.cpp):
    CheckDequantParams (antiquantMode 0; dequantScaleQuery only with S <= 16 and a queryRope),
    ConvertAttrsPFA, which takes no query dequantisation at all, then CheckParamsPFA."""
    query_quant = a.dequantScaleQueryOptional is not None
    s = query_s(a)
    if a.antiquantMode != 0:
        raise tiling("pfa.antiquant_mode", f"antiquantMode {a.antiquantMode} is not supported on the PFA route")
    if query_quant and s > 16:
        raise tiling("pfa.dequant_query_s", f"query S {s} > 16: dequantScaleQuery is not supported")
    if query_quant and a.queryRopeOptional is None:
        raise tiling("pfa.dequant_query_rope", "dequantScaleQuery needs queryRope")
    if query_quant or a.queryQuantMode != 0:
        raise tiling("pfa.query_dequant", "the PFA kernels do not support query dequantisation")
    padding.check_arch32(a)
    kv_antiquant_pfa.check_d(a, query_d(a))  # the FIA tiling read it before routing (GetQueryD)
    kv_antiquant_pfa.check_io(a)  # RunBigKernelTilingWithParams: CheckIOType


def _ifa_query_quant(a) -> None:
    """IFATiling::ProcessQuant (incre_flash_attention_tiling.cpp): a query other than INT8 takes no
    dequantScaleQuery, an INT8 one needs queryRope and keyRope (the MLA full-quant kernels). Every
    IFA tiling failure is 561002, so checking it before IncreFlashAttentionV4's checks gives the
    same code."""
    if a.query.dtype != DataType.ACL_INT8 and a.dequantScaleQueryOptional is not None:
        raise tiling("ifa.dequant_query", f"a {a.query.dtype.short} query takes no dequantScaleQuery")
    if a.query.dtype == DataType.ACL_INT8 and (a.queryRopeOptional is None or a.keyRopeOptional is None):
        raise tiling("ifa.int8_query_rope", "an INT8 query needs queryRope and keyRope")


def _antiquant_kv(a) -> bool:
    """An INT8/INT4 key/value beside a float query: the antiquant kernels, which write softmaxLse
    themselves (the IFA route)."""
    return a.query.dtype != a.key.items[0].dtype or a.int4


def _masked(a) -> bool:
    return a.attenMaskOptional is not None and not a.attenMaskOptional.is_empty


def _dense_query_s(a) -> int | None:
    """S of a BSH/BSND/BNSD query of its layout's rank; None for other layouts."""
    base = (a.inputLayout or "BSH").split("_")[0]
    if base not in shared_prefix.S_AXIS or a.query.ndim != (3 if base == "BSH" else 4):
        return None
    return a.query.shape[shared_prefix.S_AXIS[base]]


def _lse_rows_known(a, arch35: bool) -> bool:
    """A BSH/BSND/BNSD query whose softmaxLse rows the antiquant kernels are read to write in [B, N, S, 1]
    order: S 1 (the A2/A3 IFA kernels; on Ascend910_95 one row per head), or on Ascend910_95 any S
    (IFATilingV2 merges no G and S rows with softmaxLse, CheckPFAMerge, so
    infer_flash_attention_kvcache.h puts row (b, n, s) at (b N + n) S + s, s counting the
    queryPaddingSize rows before the batch's own)."""
    s = _dense_query_s(a)
    return s is not None and (s == 1 or arch35)


def _ifa_kv_nz_lse(a) -> None:
    """A 5-D key without rope is the IFA tiling's GQA KV-NZ case (GetRopeAndGqaFlag), whose
    ProcessGqaKvNz ends with CheckDefaultMisc("IFA GQA with KV NZ"): softmaxLse is refused there.
    Its other checks fail with the same code (561002), so with softmaxLse every such call fails."""
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None  # ropeFlag_
    if a.lse_wanted and a.key.items[0].ndim == 5 and not rope:
        raise tiling("ifa.kv_nz_lse", "SoftmaxLse output is not supported in IFA GQA with KV NZ.")


def _before_checks(a, env, prompt: bool, rope: bool = False, per_block: bool = False, full_quant: bool = False) -> None:
    """What both routes check, refuse or warn about before the other operator's checks."""
    if not on_arch35(env) and rope_prompt.present(a):  # CheckInputLayout, before either route
        rope_arch32.check_layout(a)
    if not on_arch35(env) and prompt:
        _pfa_context(a)
        shared_prefix.check_pfa_arch32(a)
    elif not on_arch35(env) and rope_prompt.present(a) and rope_arch32.atb(a):  # the ATB path, before PreProcess
        rope_arch32.check_atb(a)
    elif not on_arch35(env):  # ProcessQuant, ProcessAntiQuant, then (an NZ key) ProcessGqaKvNz, ProcessSharedPrefix
        _ifa_query_quant(a)
        kv_antiquant.check_ifa(a)
        if rope_prompt.present(a):  # ropeFlag_: the MLA rules
            rope_arch32.check_ifa(a)
        _ifa_kv_nz_lse(a)
        shared_prefix.check_ifa_arch32(a)
    elif prompt:
        if query_quant.per_tensor_8bit_float(a):
            query_quant.refuse_per_tensor(a)
        shared_prefix.check_pfa_arch35(a, rope_prompt.present(a))
    elif shared_prefix.present(a):
        shared_prefix.ignored(env, "on Ascend910_95 the IFA (antiquant) kernels never receive it")
    scaled = prompt and (query_quant.per_block(a) or query_quant.mla_full_quant(a))
    if on_arch35(env) and a.dequantScaleQueryOptional is not None and not scaled:
        env.warn(
            "dequantScaleQuery is ignored: of Ascend910_95's kernels only the per-block (an FP8 E4M3 / HiFloat8 "
            "query with the three quant modes 7) and the MLA full-quant ones read it (CANN 8.5)"
        )
    _refuse_unsupported(a, prompt=prompt, arch35=on_arch35(env), rope=rope, per_block=per_block, full_quant=full_quant)
    if a.max_workspace:
        INFERRED.warn(env, "max_workspace_lengths")


def _applied_sink(a, env, prompt: bool):
    """The learnableSink the route's kernels apply, or None (a NULL or empty one: the tiling's
    hasLearnableSink). Only the A2/A3 PFA TND kernels take it (prompt_flash_attention_arch32.h hands
    it to the base-API var-len kernels alone); the A2/A3 IFA kernels and both Ascend910_95 kernel
    families never receive it (fused_infer_attention_score{,_apt}.cpp), so there it is ignored."""
    sink = a.learnableSinkOptional
    if sink is None or sink.is_empty:
        return None
    if prompt and not on_arch35(env) and a.inputLayout == "TND":
        return sink
    where = (
        "Ascend910_95's kernels" if on_arch35(env) else ("the PFA kernels outside TND" if prompt else "the IFA kernels")
    )
    env.warn(f"learnableSink is ignored: {where} do not take it (CANN 8.5), so the output is that without a sink")
    return None


def _separate_antiquant(a) -> bool:
    separate = (
        a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional, a.valueAntiquantScaleOptional,
        a.valueAntiquantOffsetOptional,
    )  # fmt: skip
    return any(x is not None for x in separate) or bool(a.keyAntiquantMode or a.valueAntiquantMode)


def _ifa_separate_runs(a, arch35: bool) -> bool:
    """Ascend910_95: every call (separate tensors: IFATilingV2's split mode; key/value modes alone: its
    non-split mode, see _modes_alone)."""
    return arch35 or _emulated_pairs(a)


def _modes_alone(a) -> bool:
    """Key/value antiquant modes without key/value tensors: IFATilingV2::ProcessAntiQuant takes the
    combined antiquantScale/Offset with antiquantMode (non-split mode) and reads the two modes only
    for kPerChnVPerTokFlag_ (keyAntiquantMode 0, valueAntiquantMode 1, an INT8/INT4 cache), which
    GenAntiquantModeVal turns into the pair's kernels (mode 2) when antiquantMode is 0."""
    return _separate_antiquant(a) and not _separate_tensors(a)


def _separate_tensors(a) -> bool:
    """Ascend910_95: separate parameters go to IFATilingV2's split-mode rules (kv_antiquant_arch35),
    which refuse after their checks what the emulator does not run; modes without them take the
    non-split path (_modes_alone)."""
    separate = (a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional, a.valueAntiquantScaleOptional)
    return any(x is not None for x in separate) or a.valueAntiquantOffsetOptional is not None


def _emulated_pairs(a) -> bool:
    """Atlas A2/A3: key and value scales (and offsets for both or neither) without the combined
    antiquantScale, per channel (the IFA kernels' (x + offset) * scale with the key's and the value's
    own parameters, which IncreFlashAttentionV4's antiquantScale holds as its rows 0 and 1) or in
    the modes split_params hands the kernel."""
    offsets = (a.keyAntiquantOffsetOptional is None) == (a.valueAntiquantOffsetOptional is None)
    scales = a.keyAntiquantScaleOptional is not None and a.valueAntiquantScaleOptional is not None
    if not (scales and offsets and a.antiquantScaleOptional is None and a.antiquantOffsetOptional is None):
        return False
    if a.keyAntiquantMode == 0 and a.valueAntiquantMode == 0:
        return True
    return split_params.handled(a) and _split_fits(a)


def _split_fits(a) -> bool:
    """kv_antiquant checked the key's shapes (the value's alike but in the pair) for BSH/BSND/BNSD
    queries; a 5-D (NZ) key's it does not, and a shared prefix would move the per-token positions."""
    if a.key.items[0].ndim == 5 or (split_params.per_token(a) and a.keySharedPrefixOptional is not None):
        return False
    if (a.inputLayout or "BSH").split("_")[0] not in ("BSH", "BSND", "BNSD"):
        return False
    paged_ranks = {split_params.PER_TOKEN_PAGED: 2, split_params.PER_TOKEN_HEAD_PAGED: 3}
    if a.keyAntiquantMode in paged_ranks:  # the tiling reads those axes only
        return a.keyAntiquantScaleOptional.ndim == paged_ranks[a.keyAntiquantMode]
    if (a.keyAntiquantMode, a.valueAntiquantMode) != kv_antiquant.CHANNEL_TOKEN:
        return True
    base = (a.inputLayout or "BSH").split("_")[0]
    batch = query_axes(a.query.shape, base, attr_uint32(a.numHeads)).b
    per_tensor_key = a.keyAntiquantScaleOptional.ndim == 1  # the tiling then runs the kernels per channel
    return not per_tensor_key and split_params.value_rows_fit(a, batch, key_rows(a, base))


def _antiquant_args(a, arch35: bool) -> dict:
    """IncreFlashAttentionV4's antiquantScale/Offset for FIA's: the combined pair as it is; separate
    parameters on Ascend910_95 through kv_antiquant_arch35, on Atlas A2/A3 per channel stacked, the
    other modes through split_params."""
    if not _separate_antiquant(a):
        return dict(antiquantScale=a.antiquantScaleOptional, antiquantOffset=a.antiquantOffsetOptional)
    if arch35 and _modes_alone(a):
        return dict(antiquantScale=a.antiquantScaleOptional, antiquantOffset=a.antiquantOffsetOptional)
    if arch35:
        split = kv_antiquant_arch35.Split(a, lambda: NOT_IMPLEMENTED.refuse("kv_antiquant"))
        return dict(antiquantScale=split, antiquantOffset=None)
    if split_params.handled(a):
        return dict(antiquantScale=split_params.SplitParams(a), antiquantOffset=None)
    offset = a.keyAntiquantOffsetOptional
    return dict(
        antiquantScale=_Rows(a.keyAntiquantScaleOptional, a.valueAntiquantScaleOptional),
        antiquantOffset=None if offset is None else _Rows(offset, a.valueAntiquantOffsetOptional),
    )


class _Rows:
    """Key and value parameters seen as IncreFlashAttentionV4's antiquant tensor: the two joined
    along their first axis ([1, ...] each, per channel or per tensor, gives [2, ...]); read when
    the kernel runs."""

    def __init__(self, key_t, value_t):
        self.key_t, self.value_t = key_t, value_t
        self.dtype, self.format = key_t.dtype, key_t.format
        self.shape = (key_t.shape[0] + value_t.shape[0],) + tuple(key_t.shape[1:])
        self.ndim, self.numel = len(self.shape), key_t.numel + value_t.numel
        self.is_empty = self.numel == 0

    def read(self, what: str = "tensor"):
        return np.concatenate([self.key_t.read(f"key {what}"), self.value_t.read(f"value {what}")])


class _Int4:
    """An INT32 key/value tensor read as INT4 (TensorPreProcess: last dimension x 8), handed to the
    IFA route as the INT8 values the antiquant kernel dequantises; ``int4`` tells the Ascend910_95
    tiling replay (incre/antiquant_arch35) to apply its INT4 rules."""

    int4 = True

    def __init__(self, t):
        self.t, self.dtype, self.format = t, DataType.ACL_INT8, t.format
        shape = tuple(t.shape)  # a 0-d tensor keeps its shape (TensorPreProcess: viewShapeDim >= 1)
        self.shape = shape[:-1] + (shape[-1] * fia.INT4_PER_INT32,) if shape else shape
        self.ndim, self.numel = len(self.shape), math.prod(self.shape)
        self.is_empty = self.numel == 0

    def read(self, what: str = "tensor"):
        return fia.unpack_int4(self.t.read(what))


def _int4_list(lst):
    return SimpleNamespace(items=[None if t is None else _Int4(t) for t in lst.items])


def _unpacked(a):
    """The call with its INT4 key/value lists as the tiling sees them (last dimension x 8)."""
    return SimpleNamespace(**{**vars(a), "key": _int4_list(a.key), "value": _int4_list(a.value)})


def _prefix_fits(a, prompt: bool, arch35: bool) -> bool:
    """After the tilings' prefix rules (shared_prefix), which refuse every other A2/A3 layout but
    through the A2/A3 PFA tiling's empty-tensor path (no prefix read): a BSH/BSND/BNSD query."""
    base = (a.inputLayout or "BSH").split("_")[0]
    return base in shared_prefix.S_AXIS or prompt and not arch35 and shared_prefix.pfa_arch32_empty(a)


class _Prefixed:
    """A batched key or value with the shared prefix's first ``rows`` rows in front of every
    batch's own (the kernels attend to the prefix first, then to the batch's keys)."""

    def __init__(self, t, prefix_t, rows, layout):
        self.t, self.prefix_t, self.rows = t, prefix_t, rows
        self.axis = shared_prefix.S_AXIS[layout]
        self.dtype, self.format = t.dtype, t.format
        shape = list(t.shape)
        shape[self.axis] += rows
        self.shape, self.ndim = tuple(shape), len(shape)
        self.numel = int(np.prod(shape))
        self.is_empty = self.numel == 0

    def read(self, what: str = "tensor"):
        x = self.t.read(what)
        prefix = np.take(self.prefix_t.read(f"{what} shared prefix"), range(self.rows), axis=self.axis)
        prefix = np.broadcast_to(prefix, (x.shape[0],) + prefix.shape[1:])
        return np.concatenate([prefix, x], axis=self.axis)


def _kv(a, prefixed: bool = True, arch35: bool = False):
    """(key tensor list, value tensor list, key lengths) as the IFA/PFA preparations take them:
    INT4 lists unpacked; with ``prefixed`` a shared prefix put in front of each batch's keys, of a
    batched key or of each tensor of a list (the lengths grow by it), on Ascend910_95 as its
    kernels address it (shared_prefix.KeyStrided)."""
    key, value, lengths = a.key, a.value, a.actualSeqLengthsKvOptional
    prefixes: tuple = a.keySharedPrefixOptional, a.valueSharedPrefixOptional
    if a.int4:  # PrefixTensorPreProcess re-types an INT32 prefix pair as TensorPreProcess the lists
        key, value = _int4_list(key), _int4_list(value)
        prefixes = tuple(_Int4(t) if t is not None and t.dtype == DataType.ACL_INT32 else t for t in prefixes)
    if prefixed and shared_prefix.present(a):
        layout = (a.inputLayout or "BSH").split("_")[0]
        rows = shared_prefix.rows(a)
        if arch35 and shared_prefix.arch35_strided(a):
            prefixes = tuple(shared_prefix.KeyStrided(a, t) for t in prefixes)
        axis = shared_prefix.S_AXIS[layout]  # a tensor without that axis is left to the shape checks
        key, value = (
            SimpleNamespace(items=[_Prefixed(t, prefix, rows, layout) if t.ndim > axis else t for t in lst.items])
            for lst, prefix in zip((key, value), prefixes)
        )
        lengths = None if lengths is None else tuple(int(n) + rows for n in lengths)
    return key, value, lengths


def _as_tiling_failure(op, prepare, args, env):
    """The other operator's prepare; its refusals are FIA tiling failures (561002), the emulator's
    own gaps (declared with their code) keep it."""
    try:
        return prepare(args, env)
    except OpError as exc:
        if exc.code == status.ACLNN_ERR_INNER_TILING_ERROR or exc.rule.split(".")[0] in KINDS:
            raise
        raise OpError(
            status.ACLNN_ERR_INNER_TILING_ERROR,
            f"FusedInferAttentionScore tiling failed ({op.name} route): {exc.message}",
            rule=f"tiling.{op.name}.{exc.rule}",
        ) from None


def _without_rope(a, env, kernels: str):
    """The call as kernels that read no queryRope/keyRope see it, with a warning."""
    env.warn(f"queryRope/keyRope are ignored: {kernels} read no rope (CANN 8.5), so the output is that without them")
    return _ropeless(a)


def _ropeless(a):
    return SimpleNamespace(**{**vars(a), "queryRopeOptional": None, "keyRopeOptional": None})


def incre(a, env):
    """The IFA route: IncreFlashAttentionV4's arguments (actualSeqLengths are the key lengths;
    separate per-channel key/value antiquant parameters as its stacked antiquantScale/Offset).
    Ascend910_95's IFATilingV2 reads no rope (ConvertContextToParamsIFA leaves it out, hasRope is 0),
    so its antiquant kernel runs without one."""
    ignored = on_arch35(env) and rope_prompt.present(a)
    full_quant = not on_arch35(env) and mla_quant.applies(a) and not rope_arch32.atb(a)  # ATB: AtbCheckFlag910 first
    _before_checks(a, env, prompt=False, rope=ignored or full_quant, full_quant=full_quant)
    if ignored:
        a = _without_rope(a, env, "Ascend910_95's antiquant kernels (IFATilingV2)")
    if a.int4:
        INFERRED.warn(env, "int4_nibbles")
    sink = _applied_sink(a, env, prompt=False)
    key, value, kv_lengths = _kv(a, prefixed=not on_arch35(env))
    args = SimpleNamespace(
        query=a.query,
        key=key,
        value=value,
        pseShift=a.pseShiftOptional,
        attenMask=a.attenMaskOptional,
        **_sparse_args(a, on_arch35(env)),
        actualSeqLengths=kv_lengths,
        dequantScale1=a.deqScale1Optional,
        quantScale1=a.quantScale1Optional,
        dequantScale2=a.deqScale2Optional,
        quantScale2=a.quantScale2Optional,
        quantOffset2=a.quantOffset2Optional,
        **(dict(antiquantScale=None, antiquantOffset=None) if full_quant else _antiquant_args(a, on_arch35(env))),
        blocktable=a.blockTableOptional,
        kvPaddingSize=a.kvPaddingSizeOptional,
        numHeads=a.numHeads,
        scaleValue=a.scaleValue,
        inputLayout=a.inputLayout,
        numKeyValueHeads=a.numKeyValueHeads,
        blockSize=a.blockSize,
        innerPrecise=a.innerPrecise,
        attentionOut=a.attentionOut,
        softmaxLse=a.softmaxLse if a.lse_wanted and _antiquant_kv(a) else None,  # the antiquant kernels write it
    )
    if full_quant:  # the rest of IFATiling on the call seen in BF16; the MLA full-quant kernel runs
        args.query = mla_quant.checked_view(a.query)
        args.key, args.value = (
            SimpleNamespace(items=[mla_quant.checked_view(t) for t in x.items]) for x in (key, value)
        )
    out = _as_tiling_failure(INCRE, INCRE.prepare_fn, args, env)
    pair = (a.keyAntiquantMode, a.valueAntiquantMode) == kv_antiquant_arch35.CHANNEL_TOKEN
    if on_arch35(env) and _modes_alone(a) and pair and _antiquant_kv(a):
        REFUSED.refuse("pair_without_params")
    if full_quant:
        return _mla_quant(a, env, out)
    return _with_lse(a, env, out, sink, padding.ifa_keys(a), second_pass=args.softmaxLse is None)


def _mla_quant(a, env, out):
    """The A2/A3 MLA full-quant kernel after the IFA tiling's checks (an empty output launches none)."""
    route = Route(a, env)
    axes = route.shape_facts()[0]
    if mla_quant.unmodelled(a, route, axes):
        NOT_IMPLEMENTED.refuse("rope")
    if out.run is None:
        return out
    if mla_quant.splits(a):
        INFERRED.warn(env, "ifa_mla_quant_split")
    return mla_quant.launch(a, route, axes)


def _sparse_args(a, arch35: bool) -> dict:
    """What ConvertContextToParamsIFA hands IFATilingV2 beyond IncreFlashAttentionV4's inputs: the
    sparse mode (read through a uint32 pointer), the tokens, the query's lengths (without data in
    GetMaxWorkspaceSize) and queryPaddingSize, and whether GetMaxWorkspaceSize asks."""
    if not arch35:
        return {}
    return dict(
        sparseMode=attr_uint32(a.sparseMode), preTokens=a.preTokens, nextTokens=a.nextTokens,
        actualSeqLengthsQ=None if a.max_workspace else a.actualSeqLengthsOptional, max_workspace=a.max_workspace,
        queryPaddingSize=a.queryPaddingSizeOptional,
        check_pse_type=lambda: pse_type.check_ifa_route(a),  # ProcessPseShift's pseType (V5)
    )  # fmt: skip


def prompt(a, env):
    """The PFA route: PromptFlashAttentionV3's arguments (pseShift and innerPrecise as FIA's context
    hands them to the PFA tiling) with the key/value lists' one tensor; a paged cache (Ascend910_95)
    after the tiling's page-attention checks, as the dense key and value its kernels walk. Ascend910_95's
    per-block full quant runs PromptFlashAttentionV3's checks on the call seen in its output dtype,
    then its own rules and kernels (query_quant_arch35); its MLA full quant checks CheckMLAFullQuant
    after the rope rules, then PromptFlashAttentionV3's checks alike, and the PFA launch runs its
    kernels (mla_full_quant_arch35) where FIA's kernel list has them."""
    per_block = on_arch35(env) and query_quant.per_block(a)
    mla_full = on_arch35(env) and query_quant.mla_full_quant(a)
    if on_arch35(env):
        padding.check_arch35(a)
        pse_type.check_tiling_v2(a)  # PromptFlashAttentionTilingV2::SetAttributeInfo
    with_alibi = alibi.wanted(a, on_arch35(env))
    kv_s = kv_list.check(a, on_arch35(env)) if kv_list.listed(a, on_arch35(env)) else None
    if kv_s is not None and kv_list.overruns_shape_array(a):
        INFERRED.warn(env, "list_key_rank")
    rope = rope_prompt.check(a) if on_arch35(env) and rope_prompt.present(a) else None
    if mla_full:
        mla_full_quant.check(a)
    no_kernel = mla_full_quant.without_kernel(a, rope) if mla_full else None
    full_quant = mla_full and no_kernel is None
    paged = a.blockTableOptional is not None and on_arch35(env) and paged_prompt.gathered(a)
    facts = paged_prompt.check(a, env) if paged else None
    ignored = not on_arch35(env) and rope_prompt.present(a) and rope_arch32.ignored_on_pfa(a)
    # A2/A3 TND with a rope over dense caches: the PFA tiling's TND rope rules, its other checks on the
    # call without the rope, then the var-len kernels, which read it (not emulated)
    tnd_rope = not on_arch35(env) and rope_prompt.present(a) and not ignored and a.blockTableOptional is None
    _before_checks(
        a, env, prompt=True, rope=rope is not None or per_block or ignored or tnd_rope, per_block=per_block,
        full_quant=mla_full,
    )  # fmt: skip
    if ignored:
        a = _without_rope(a, env, "the Atlas A2/A3 PFA kernels this call takes")
    if tnd_rope:
        rope_arch32.check_pfa_tnd(a)
        a = _ropeless(a)
    if a.blockTableOptional is not None and not on_arch35(env):  # inside the PFA tiling, after its context's checks
        facts = paged_prompt_arch32.check(_unpacked(a) if a.int4 else a, env)
    if rope_prompt.bnsd_causal_mla(a, rope):
        INFERRED.warn(env, "ifa_mla_bnsd_mask")
    padding.check_pfa_tiling(a, on_arch35(env))
    sink = _applied_sink(a, env, prompt=True)
    key, value, kv_lengths = _kv(a, on_arch35(env) or not shared_prefix.pfa_arch32_empty(a), on_arch35(env))
    query, key, value = a.query, key.items[0], value.items[0]
    if kv_s is not None:
        key, value, kv_lengths = kv_list.stacked(a, kv_s)
    msd = not on_arch35(env) and kv_antiquant_pfa.applies(a) and kv_antiquant_pfa.msd(a)
    if msd:
        key, value = (kv_antiquant_msd.Int8View(t, a.query.dtype) for t in (key, value))
    elif not on_arch35(env) and kv_antiquant_pfa.applies(a):
        key, value = kv_antiquant_pfa.Dequantised(a, key, 0), kv_antiquant_pfa.Dequantised(a, value, 1)
    if a.int4:  # the PFA tiling's shape checks on the unpacked shapes; its INT8 rules do not see INT4
        key, value = (query_quant.Retyped(t, a.query.dtype) for t in (key, value))
    extra = {}
    if facts is not None:
        key, value = (
            paged_prompt.dense(a, facts, key, "key", facts.qd),
            paged_prompt.dense(a, facts, value, "value", facts.vd),
        )
        kv_lengths = paged_prompt.cumulative_kv(a, facts) or kv_lengths
        extra = dict(paged_s2=facts.s2)
    if per_block or mla_full:  # the shared checks on shapes alone (MLA full quant: its kernels read the values)
        view = query_quant.Widened if full_quant else query_quant.Retyped
        query, key, value = (view(t, a.attentionOut.dtype) for t in (query, key, value))
    pse = a.pseShiftOptional
    if mla_full and pse is not None:  # PromptFlashAttention's op_api pse dtype rule is not FIA's
        pse = query_quant.Retyped(pse, a.attentionOut.dtype)
    empty_kv = key.is_empty or value.is_empty  # CheckEmptyTensor's return, before every rule below
    if with_alibi and not empty_kv:
        alibi.check_slopes(a)
    args = SimpleNamespace(
        query=query,
        key=key,
        value=value,
        pseShift=None if with_alibi else pse,  # SetAttributeInfo: the slopes are no pseShift
        attenMask=a.attenMaskOptional,
        actualSeqLengths=a.actualSeqLengthsOptional,
        actualSeqLengthsKv=kv_lengths,
        deqScale1=a.deqScale1Optional,
        quantScale1=a.quantScale1Optional,
        deqScale2=a.deqScale2Optional,
        quantScale2=a.quantScale2Optional,
        quantOffset2=a.quantOffset2Optional,
        numHeads=a.numHeads,
        scaleValue=a.scaleValue,
        inputLayout=a.inputLayout,
        numKeyValueHeads=a.numKeyValueHeads,
        sparseMode=a.sparseMode,
        innerPrecise=a.innerPrecise,
        attentionOut=a.attentionOut,
        **padding.kernel_args(a, on_arch35(env)),
        learnableSink=sink,  # FIA's own input: CheckLearnableSinkWhenLayoutIsTND and the TND kernels
        rope_mode=rope,  # CheckRope's kernel mode, and the tensors its kernels append to each head
        rope=None if rope is None else rope_prompt.tensors(a, facts),
        full_quant=mla_full_quant.Kernel(a) if full_quant else None,
        msd=kv_antiquant_msd.Reader(a) if msd else None,
        softmax_lse=a.softmaxLse if msd and a.lse_wanted else None,
        alibi=alibi.Kernel(a) if with_alibi else None,
        **extra,
    )
    out = _as_tiling_failure(PROMPT, PROMPT.prepare_fn, args, env)
    if with_alibi and not empty_kv:
        _check_alibi_after(a, env, args)
    if tnd_rope:
        NOT_IMPLEMENTED.refuse("rope")
    if on_arch35(env):
        shared_prefix.check_arch35_reads(a)
        if shared_prefix.present(a) and shared_prefix.rows(a) % shared_prefix.ARCH35_WHOLE_BLOCKS:
            INFERRED.warn(env, "prefix_walk", f"length {shared_prefix.rows(a)}")
    else:
        kv_antiquant_pfa.check_after_shapes(a, args.key.is_empty or args.value.is_empty)
        if kv_antiquant_pfa.msd(a):  # S <= 16 here
            kv_antiquant_msd.check(a, kv_s is not None)
            if not kv_antiquant_msd.runs(a):
                NOT_IMPLEMENTED.refuse("kv_antiquant")
            if kv_antiquant_msd.sums_inferred(a):
                INFERRED.warn(env, "msd_sums")
        if a.int4 and not (args.key.is_empty or args.value.is_empty):
            NO_KERNEL.refuse("int4_pfa")
    if args.key.is_empty or args.value.is_empty:
        # The tiling's empty-tensor path: its kernel (arch32 PromptFlashAttentionEmptyTensor, arch35
        # PromptFlashAttentionZeroOutPut) zeroes attentionOut and writes no softmaxLse.
        if a.lse_wanted:
            env.warn("softmaxLse is left as it was: with an empty key or value the kernel only zeroes attentionOut")
        return out
    if no_kernel is not None:
        mla_full_quant.NO_KERNEL.refuse("mla_full_quant", no_kernel)
    if full_quant:
        mla_full_quant.check_reads(a, Route(a, env).shape_facts()[0])
    if per_block:
        query_quant.check_params(a, listed=kv_s is not None)
        query_quant.check_crossover(a)
        return out if out.run is None else query_quant.launch(a, out.workspace_size)
    if full_quant:  # its kernels write softmaxLse themselves
        return _with_lse(a, env, out, sink, second_pass=False)
    if not on_arch35(env) and kv_antiquant_pfa.kv_antiquant(a):
        a = kv_antiquant_pfa.DequantisedCall(a)
    return _with_lse(a, env, out, sink, args.left_padding, second_pass=not msd)


def _check_alibi_after(a, env, args) -> None:
    """The alibi's rules after the PFA tiling's own: the per-batch lengths (values the tiling has
    checked; a TND/NTD call, refused below, skips it), SetQKVStartIdx (GetMaxWorkspaceSize: lengths
    and start indices without data, unread), then what the emulator does not run."""
    base = split(a.inputLayout or "BSH")[0]
    if not a.max_workspace and base not in alibi.PACKED:
        axes, _ = Route(a, env).shape_facts()
        alibi.check_lengths(
            actual_lengths(args.actualSeqLengths, axes.b, axes.s, "query"),
            actual_lengths(args.actualSeqLengthsKv, axes.b, key_rows(a, base), "key/value"),
        )
    if not a.max_workspace:
        alibi.start_indices(a)
    alibi.check_emulated(a)


def _with_lse(a, env, out, sink, left=None, second_pass: bool = True):
    """The other operator's launch, then (softmaxLseFlag) softmaxLse from a second pass of the
    FIA-V3 maths over the same call, after its shape check ([B, N, S, 1]; [T, N, 1] for TND), with
    the sink only where the route's kernels apply it; ``left`` the route's left padding. Without
    ``second_pass`` the launch writes softmaxLse itself (the IFA antiquant kernels)."""
    if not a.lse_wanted or out.run is None:  # nothing launched (an empty output): no kernel writes it
        return out
    route = Route(a, env)
    axes, (qd, _, vd) = route.shape_facts()
    want = (axes.s, axes.n, 1) if route.base == "TND" else (axes.b, axes.n, axes.s, 1)
    if tuple(a.softmaxLse.shape) != want:
        raise OpError(
            status.ACLNN_ERR_INNER_TILING_ERROR,
            f"FusedInferAttentionScore tiling failed: softmaxLse {list(a.softmaxLse.shape)} does not match "
            f"{list(want)}",
            rule="tiling.softmax_lse",
        )
    if not second_pass:
        return out
    INFERRED.warn(env, "lse_pass")
    lse = launch.fia_v3(a, env, route, axes, qd, vd, write_out=False, left=left, sink=sink is not None)

    def run(workspace):
        if out.run is not None:
            out.run(workspace)
        lse.run(workspace)

    return Launch(out.workspace_size, run)
