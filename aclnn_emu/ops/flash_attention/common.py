"""What the flash-attention operators share: PromptFlashAttention's dtype sets, limits and error
shapes, the Ascend910_95 (arch35) checks IncreFlashAttention runs through PFA's TilingV2, and the
layout helpers both operators' launches use."""

import dataclasses

from aclnn_emu.opdef.failures import TilingFailure
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.params import FaParams
from aclnn_emu.opdef.signature import Op, OpError, TensorIn
import numpy as np


F16, BF16, I8 = DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8


FP32, U8, BOOL, U64 = DataType.ACL_FLOAT, DataType.ACL_UINT8, DataType.ACL_BOOL, DataType.ACL_UINT64


QKV_DTYPES = (F16, BF16, I8)


QUANT_OUT_PAIRS = ((I8, F16), (F16, I8), (BF16, I8))  # (query, attentionOut) allowed to differ


MASK_DTYPES = (F16, I8, U8, BOOL)


QUANT8 = (DataType.ACL_HIFLOAT8, DataType.ACL_FLOAT8_E5M2, DataType.ACL_FLOAT8_E4M3FN)  # the arch35 OpDefs add them


BYTE_MASKS = (BOOL, I8, U8)


PRIVATE_FORMATS = (Format.ACL_FORMAT_NC1HWC0, Format.ACL_FORMAT_FRACTAL_NZ, Format.ACL_FORMAT_NDC1HWC0)


TILING_LAYOUTS = ("SH", "BSH", "NSD", "BSND", "BNSD", "BNSD_BSND", "TND", "NTD_TND")


BIG = pfa.SPARSE_INT_MAX


NZ_N0 = 16  # FRACTAL_NZ inner block


COMPRESSED_MASK = 2048  # modes 2-4 take the canonical 2048 x 2048 triangle


MAX_BATCH, MAX_HEADS, MAX_D, MAX_GROUP = 65536, 256, 512, 64


MAX_SH_BATCH = 128


BASE_API_MODES = (20, 21, 22)  # CheckBaseAPISupportScenarios: the base-API kernels, no mask


BASE_API_MAX_D = 256  # MLA_THRESHOLD: above it (or D != Dv) the base-API path takes the MLA kernels


MAX_VAR_LEN_BATCH = 4096  # MAX_VAR_LEN_SEQ_LEN: TND actual-length arrays


KV_MIN_RANK = 2  # prompt_flash_attention_tiling.cpp INPUT_QKV_SHAPE_MIN_DIMS (the A2/A3 tiling)


def invalid(rule, message):
    raise OpError(status.ACLNN_ERR_PARAM_INVALID, message, rule=rule)


def tiling(rule, message):
    """A failure inside L0 (infershape, tiling, kernel selection); each operator maps it to its code."""
    raise TilingFailure(rule, message)


def dtype_name(t) -> str:
    return t.dtype.short


def mode_tokens(a, pre, nxt, has_mask, big):
    """The (pre, next) window a sparse mode keeps (SetSparseModeData in both tilings): with an
    attenMask given, mode 1 opens both sides, 2 is causal (next 0), 3 opens pre (the kernel
    derives next per batch); mode 0 without a non-empty mask opens both. ``big`` is the tiling's
    "infinite" token count."""
    mode = a.sparseMode
    if a.attenMask is not None:
        pre, nxt = {1: (big, big), 2: (big, 0), 3: (big, nxt)}.get(mode, (pre, nxt))
    if mode == 0 and not has_mask:
        pre, nxt = big, big
    return pre, nxt


def require_quant_scale2(a):
    """An INT8 output needs a non-empty quantScale2 (CheckPostQuantParams in both tilings)."""
    if a.quantScale2 is None:
        tiling("quant2.scale_null", "post quant scale (quantScale2) is nullptr when output type is int8.")
    if a.quantScale2.is_empty:
        tiling("quant2.scale_empty", "quant_scale2 is empty tensor when output type is int8.")


LAYOUTS = ("BSH", "TND", "BSND", "BNSD", "BNSD_BSND")


def on_arch35(env) -> bool:
    """The call runs on an Ascend910_95 part (TilingV2 and the arch35 kernels)."""
    return env.soc.startswith("Ascend910_95")


def check_layout(a):
    """TilingV2 CheckIO: the layouts it knows (its first shape check)."""
    if a.inputLayout not in LAYOUTS:
        tiling(
            "arch35.layout",
            f"Invalid input layout:{a.inputLayout}. Currently only TND/BSH/BNSD/BSND/BSND_BNSD layout are supported.",
        )


MLA_D, MLA_DV = 192, 128  # MLA_QKD_SIZE / MLA_VD_SIZE: the one D != Dv TilingV2 takes


MAX_BATCH, MAX_HEADS, MAX_D = 65536, 256, 512


def check_query_out(a, mla):
    """CheckQueryOutParamsConsistency: equal ranks and dims (BNSD_BSND: N and S swapped; MLA: not Dv)."""
    q, out = a.query.shape, a.attentionOut.shape
    if len(q) != len(out):
        tiling(
            "arch35.query_out_rank",
            f"tensor query shape dimNum({len(q)}) must be consistent with tensor output shape dimNum({len(out)})!",
        )
    order = list(range(len(q)))
    if a.inputLayout == "BNSD_BSND":
        order[1], order[2] = 2, 1  # query N, S against output S, N
    for i, j in enumerate(order):
        if mla and i == len(q) - 1:
            continue
        if q[i] != out[j]:
            tiling(
                "arch35.query_out",
                f"tensor query shape ({q[i]}) do not equal to tensor output shape({out[j]}) "
                f"in dim {i} for {a.inputLayout}.",
            )


def check_kv(a, mla, paged=False):
    """CheckKV: key and value shapes (not for a page-attention cache), then
    CheckKeyValueParamsConsistency (equal ranks and shapes but for MLA's Dv)."""
    if not paged:
        shape_info(a, a.key, "key")
        shape_info(a, a.value, "value")
    k, v = a.key.shape, a.value.shape
    if len(k) != len(v):
        tiling(
            "arch35.kv_rank_same",
            f"tensor key shape dimNum({len(k)}) must be consistent with tensor value shape dimNum({len(v)})!",
        )
    if not 3 <= len(k) <= 5:
        tiling("arch35.kv_rank", f"tensor key shape dimNum({len(k)}) is invalid! Only support range [3, 5].")
    for i, (dk, dv) in enumerate(zip(k, v)):
        if dk != dv and not (mla and i == len(k) - 1):
            tiling("arch35.kv_shape", f"tensor key shape({dk}) do not equal to tensor value shape({dv}) in dim {i}.")


def check_query_and_key(a):
    """CheckQueryAndKey after the head rules: equal batch and D."""
    (bq, _, _, dq), (bk, _, _, dk) = shape_info(a, a.query, "query"), shape_info(a, a.key, "key")
    if bq != bk:
        tiling(
            "arch35.batch",
            f"query batch must be equal to key/value batch, query batch = {bq} , key/value batch = {bk}.",
        )
    if dq != dk:
        tiling("arch35.d", f"query d size must be equal to key d size, query d = {dq} , key d = {dk}.")


def per_batch(ends):
    return [e - p for e, p in zip(ends, [0] + list(ends[:-1]))]


def require_tnd_lengths(a):
    """TilingV2 reads both arrays while taking the TND shapes, before CheckActSeq's null checks (a null
    array is dereferenced on hardware); the emulator answers with CheckActSeq's messages."""
    for ends, what in ((a.actualSeqLengths, "actualSequenceLengthQ"), (a.actualSeqLengthsKv, "actualSequenceLengthKV")):
        if ends is None:
            tiling("arch35.tnd_null", f"When layout is TND, {what} can not be nullptr")
    if not a.actualSeqLengths:
        tiling(
            "arch35.tnd_batch_size",
            "batch size of query should be less than or equal to 65536 and > 0, but batch size = 0.",
        )


def shape_info(a, t, name):
    """SetShape + GetAndCheckShape: (b, n, s, d) of one tensor, with TilingV2's range checks."""
    layout, shape = a.inputLayout, t.shape
    want = 3 if layout in ("BSH", "TND") else 4
    if len(shape) != want:
        tiling(
            "arch35.rank",
            f"dim num of {name} should = {want} when inputLayout is {layout},but dim num is {len(shape)}.",
        )
    if layout == "TND":
        require_tnd_lengths(a)
        ends = a.actualSeqLengths if name == "query" else a.actualSeqLengthsKv
        b, s, (t_rows, n, d) = len(a.actualSeqLengths), max(per_batch(ends)) if ends else 0, shape
    elif layout == "BSH":
        heads = a.numHeads if name == "query" else (a.numKeyValueHeads or a.numHeads)
        b, s, n = shape[0], shape[1], heads
        d = shape[2] // n if n > 0 else 0
    elif layout == "BSND":
        b, s, n, d = shape
    else:  # BNSD, BNSD_BSND
        b, n, s, d = shape
    if not 0 < b <= MAX_BATCH:
        tiling(
            "arch35.batch_size",
            f"batch size of {name} should be less than or equal to {MAX_BATCH} and > 0, but batch size = {b}.",
        )
    if s <= 0:
        tiling("arch35.seq_size", f"seq size of {name} should > 0, but sequence size = {s}.")
    for value, limit, axis in ((n, MAX_HEADS, "n"), (d, MAX_D, "d")):
        if not 0 < value <= limit:
            tiling(
                f"arch35.{axis}_size",
                f"{axis} size of {name} should be less than or equal to {limit} and > 0, but {axis} = {value}.",
            )
    if layout == "TND" and t_rows <= 0:
        tiling("arch35.tnd_t", f"When layout is TND, t should > 0, but t = {t_rows}.")
    return b, n, s, d


def check_ifa_mask(a, batch, s2):
    """CheckMaskShape/CheckMaskShapeCrossSparse with a one-row query (enableIFAMask): the mask is
    [B, S2] (2-D), [B, 1, S2] or [B, N, 1, S2], whatever the sparse mode; its batch must be B."""
    shape = a.attenMask.shape
    if len(shape) not in (2, 3, 4):
        tiling("mask.rank", f"attenMask dim({len(shape)}) must be 2 or 3 or 4!")
    mask_batch, mask_s1 = (shape[0], 1) if len(shape) == 2 else (shape[0], shape[-2])
    if mask_batch != batch or mask_s1 != 1 or shape[-1] < s2:
        tiling(
            "arch35.ifa_mask",
            f"attenMask batch({mask_batch}) must be {batch}, attenMask Q_S({mask_s1}) must be "
            f"1,attenMask KV_S({shape[-1]}) must be larger than or equal to sK({s2}), please check",
        )


def from_bnsd(o, layout):
    b, n, s, d = o.shape
    if layout == "NSD":
        return o[0]
    if layout == "BNSD":
        return o
    bsnd = o.transpose(0, 2, 1, 3)
    if layout in ("BSH", "SH"):
        return bsnd.reshape(b, s, n * d)
    return bsnd[0] if layout == "TND" else bsnd


def mask_3d(mask, ifa=False):
    """[Bm, S1m, S2m]: the head axis of a 4-D mask is never indexed by the kernel; a 2-D mask is
    [S1m, S2m], or [B, S2] for a one-row query on Ascend910_95 (TilingV2 CheckMaskShape)."""
    if mask.ndim == 2:
        return mask[:, None] if ifa else mask[None]
    return mask[:, 0] if mask.ndim == 4 else mask


def output_quant(scale_t, offset_t, heads):
    def per_head(t):
        values = t.read().astype(np.float32).reshape(-1)
        return values.reshape(1, 1) if values.size == 1 else values.reshape(heads, -1)

    scale = per_head(scale_t)
    offset = np.zeros_like(scale) if offset_t is None or offset_t.is_empty else per_head(offset_t)
    return pfa.OutputQuant(scale, offset)


# A value whose leading dimensions differ from the key's: neither op's A2/A3 tiling compares them
# (FAS's CheckParams and PFA's CheckShape compare ranks, batch and head dims); the kernels address
# value rows by the key's B, N2 and S2. Each operator declares it as an unestablished gap.
VALUE_ROWS = (
    "a value shaped unlike the key but for its last dimension (the tiling compares their ranks, batch and head "
    "dims only): the kernel reads value rows by the key's batch, heads and sequence length, past a shorter "
    "value's end or across a longer one's rows"
)


def refuse_value_rows(gaps, a, key=None) -> None:
    """Refuse (`gaps`'s "value_rows") a value whose leading dimensions differ from the key's (`key`,
    default a.key)."""
    key = a.key if key is None else key
    if tuple(a.value.shape[:-1]) != tuple(key.shape[:-1]):
        gaps.refuse("value_rows", f"key {list(key.shape)}, value {list(a.value.shape)}")


def entry_params(base, names, added=None, docs=None, extra=(), replaced=None) -> list:
    """An entry point's parameters as its header lists them: ``names`` taken from ``base`` (an Op) in
    that order, ``added`` Params placed before the base parameter each names ({before: Param}),
    ``docs`` replacing the help of some ({name: doc}); ``names`` may also take the ``extra`` Params,
    and the ``replaced`` ones ({name: Param}) stand in for the base's."""
    by_name = {p.name: p for p in (*base.params, *extra)} | (replaced or {})
    added, docs = added or {}, docs or {}
    params = []
    for n in names:
        if n in added:
            params.append(added[n])
        params.append(dataclasses.replace(by_name[n], doc=docs[n]) if n in docs else by_name[n])
    return params


def entry_points(base, extra, defaults_from, tnd_replaced=(), tnd_docs=None):
    """The declaration of the other entry points of ``base``'s header, which only drop, add or
    re-describe parameters: ``declare(name, names, tnd=False, since=None)`` is the Op with the parameters named
    (space separated) among ``base``'s and ``extra``, for the variable-length (TND) entry points with
    ``tnd_replaced`` and ``tnd_docs`` in place; each runs ``base``'s prepare after its own checks and
    takes the defaults of torch_npu's ``defaults_from``."""
    tnd = dict(replaced={p.name: p for p in tnd_replaced}, docs=tnd_docs)

    def declare(name: str, names: str, tnd_layout: bool = False, since: str | None = None) -> Op:
        params = entry_params(base, names.split(), extra=extra, **(tnd if tnd_layout else {}))
        return Op(name, base.header, params, base=base, defaults_from=defaults_from, since=since)

    return declare


def score_params(a, layout: str, mode: int, **per_launch) -> FaParams:
    """The kernels' parameters of a FlashAttentionScore or FlashAttentionScoreGrad call from the
    attributes both take; ``per_launch`` the fields each launch sets itself."""
    return FaParams(
        scale=a.scaleValue,
        keep_prob=float(np.float32(a.keepProb)),
        head_num=a.headNum,
        layout=layout,
        pre_tokens=a.preTokens,
        next_tokens=a.nextTokens,
        sparse_mode=mode,
        pse_type=a.pseType,
        prefix=a.prefixOptional,
        **per_launch,
    )


def v4_inputs(scales) -> list:
    """The inputs FlashAttentionScore(Grad)V4 (CANN 9.0.0 on) add that aclnn-emu refuses (561003): the rope halves,
    which V4 hands to the L0 op without isSupportMultiInput, and the FP8/HiFloat8 dequant scales named by `scales`."""
    return [
        TensorIn("queryRopeOptional", optional=True, doc="the rope half of Q (not emulated with V4: 561003)"),
        TensorIn("keyRopeOptional", optional=True, doc="the rope half of K (not emulated with V4: 561003)"),
        *(
            TensorIn(
                f"dScale{t}Optional",
                optional=True,
                doc=f"dequant scale of {t} for an FP8/HiFloat8 query (not emulated: 561003)",
            )
            for t in scales
        ),
    ]
