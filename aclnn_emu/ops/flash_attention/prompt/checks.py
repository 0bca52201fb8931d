"""aclnnPromptFlashAttentionV2 (attention/prompt_flash_attention, CANN 8.5), and the inner PFA path
V1 and V3 share (`run_inner`).

V2 forwards to the inner PFA op with pseShift forced to NULL (silently ignored) and innerPrecise = 1
(high performance); V3 passes both on (their rules: precise.py). Checks follow the source's order
and codes (reference §2A):
  op_api   null checks 161001; empty output -> success before any dtype check; dtype and shape
           analysis 161002; storage formats 161002 when D needs padding;
  tiling   every failure of infershape, tiling or kernel selection -> 561103;
  after    the inferred output shape against attentionOut -> 161002.
Differences from the doc are listed in docs/divergences/prompt_flash_attention.md.
"""

import numpy as np
from aclnn_emu.opdef.failures import mapped
from aclnn_emu import status
from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.attention.layouts import segments
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.signature import Launch, OpError
from ..common import (
    VALUE_ROWS,
    refuse_value_rows,
    BASE_API_MODES,
    BF16,
    BIG,
    BYTE_MASKS,
    COMPRESSED_MASK,
    F16,
    FP32,
    I8,
    KV_MIN_RANK,
    MASK_DTYPES,
    MAX_BATCH,
    MAX_D,
    MAX_GROUP,
    MAX_HEADS,
    MAX_SH_BATCH,
    PRIVATE_FORMATS,
    QKV_DTYPES,
    QUANT_OUT_PAIRS,
    TILING_LAYOUTS,
    check_ifa_mask,
    check_kv,
    check_query_and_key,
    invalid,
    mode_tokens,
    dtype_name,
    on_arch35,
    require_quant_scale2,
    tiling,
)
from .base_api import check
from .checks_arch35 import (
    IFA_MLA,
    IFA_MLA_KV_BLOCK,
    check_high_precision_mask,
    check_io,
    check_kernel_template,
    check_quant,
    check_sparse_mode,
    kernel_window,
    sparse_tokens,
    tnd_lengths,
)
from . import precise
from .entry import DEQ_DTYPES, OP, OWN_OP_API, V1, V3
from .launch import _launch
from .mask_cast import cast_fp16_mask
from .shapes import Shapes, _axes, _expected_out_shape
from .var_len import check_shapes, check_template

NTD_RULE = "pfa.ntd_layout_in_op_api"


@OP.prepare
def prepare(a, env):
    """V2 (and V1, whose fixed values its own check sets): the inner op with no pseShift and
    innerPrecise 1 (`(void) pseShift` in both op_api files)."""
    a.pseShift, a.innerPrecise = None, 1
    return run_inner(a, env)


@V3.prepare
def run_inner(a, env):
    """InnerPromptFlashAttentionGetWorkspaceSize and the L0 op for the arguments an entry point passes on
    (V3: all of them, pseShift and innerPrecise included)."""
    # Any failure inside L0 (infershape, tiling, kernel selection) is 561103 behind the L2 API.
    with mapped(status.ACLNN_ERR_INNER_NULLPTR, "PromptFlashAttention tiling failed: "):
        return _prepare(a, env)


@V1.check
def v1_fixed(a, env):
    """aclnn_prompt_flash_attention.cpp: no actualSeqLengthsKv, no quantisation parameters, sparseMode 0
    (then V2's path, which drops pseShift and fixes innerPrecise 1)."""
    a.actualSeqLengthsKv = a.deqScale1 = a.quantScale1 = a.deqScale2 = a.quantScale2 = a.quantOffset2 = None
    a.sparseMode = 0


def _prepare(a, env):
    _check_not_null(a)
    if a.attentionOut.is_empty:
        return Launch.nothing()
    _check_dtypes(a)
    shapes = _analyse_shapes(a, env)
    q = a.query.shape
    if a.inputLayout.startswith("BSH") and len(q) == 3 and a.numHeads > 0 and q[2] % a.numHeads:
        UNESTABLISHED.refuse("query_hidden", f"query {list(q)}, numHeads {a.numHeads}")
    if shapes.need_pad:
        _check_formats(a)
        _check_pad_reshape(a, shapes)
        _check_quant_offset2_pad(a, env)
    else:
        _warn_private_formats(a, env)
    cast_fp16_mask(a, env)
    plan = _tiling_checks(a, shapes, env)
    _check_out_shape(a, shapes)
    refuse_value_rows(UNESTABLISHED, a)
    return Launch(0, plan)


# -- op_api ---------------------------------------------------------------------------------------
def _check_not_null(a):
    for name in ("query", "key", "value", "attentionOut"):
        if getattr(a, name) is None:
            raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")
    if a.inputLayout is None:
        raise OpError(
            status.ACLNN_ERR_PARAM_NULLPTR,
            "expected a value of type char but got null for argument inputLayout.",
            rule="null.inputLayout",
        )


def _check_dtypes(a):
    q, k, v, out = a.query.dtype, a.key.dtype, a.value.dtype, a.attentionOut.dtype
    if not q == k == v:
        invalid(
            "dtype.qkv_same",
            f"The combination of [queryDataType]: {q.short}, [keyDataType]: {k.short}, "
            f"[valueDataType]: {v.short} is not supported by PFA; query, key and value must share one dtype.",
        )
    if q not in QKV_DTYPES:
        invalid(
            "dtype.query", f"query/value/key dataType({q.short}) is invalid, valid range is {{FLOAT16, BF16, INT8}}"
        )
    precise.check_pse_dtype(a)
    if q != out and (q, out) not in QUANT_OUT_PAIRS:
        invalid(
            "dtype.attentionOut",
            f"The combination of [queryDataType]: {q.short}, [outputDataType]: {out.short} "
            "is not supported by PFA; attentionOut must have the query dtype, or be FLOAT16 for INT8 "
            "input, or INT8 for FLOAT16/BF16 input.",
        )
    mask = a.attenMask
    if mask is not None:
        if mask.dtype not in MASK_DTYPES:
            invalid(
                "dtype.attenMask",
                f"attenMask dataType({dtype_name(mask)}) is invalid, should be in range {{FLOAT16, INT8, UINT8, BOOL}}",
            )
        if q == I8 and mask.dtype == F16:
            invalid("dtype.attenMask_int8", "When input tensor datatype is INT8, attenMaskDataType can not be FLOAT16.")


def _analyse_shapes(a, env) -> Shapes:
    heads, kv_heads, layout = a.numHeads, a.numKeyValueHeads, a.inputLayout
    if heads <= 0:
        invalid("shape.numHeads", f"head_num must > 0, but got {heads}")
    q, k, v = a.query.shape, a.key.shape, a.value.shape
    rank = len(q)
    if not len(q) == len(k) == len(v):
        invalid(
            "shape.qkv_rank",
            f"the layout of q and k v must be same, but got q dim:{len(q)} k dim:{len(k)} v dim:{len(v)}",
        )
    ntd = env.op_name in OWN_OP_API and env.version.has(NTD_RULE)
    for prefix, want in (("BNSD", 4), ("BSND", 4), ("NSD", 3), ("TND", 3), ("NTD", 3 if ntd else None), ("SH", 2)):
        if want is not None and layout.startswith(prefix) and rank != want:
            invalid("shape.layout_rank", f"layout is {prefix}, input shape dim should be {want}, but got {rank}")
    if layout == "":
        invalid("shape.layout_empty", "inputLayout should not be null!")
    shapes = _axes(layout, q, k, v, heads, kv_heads, ntd)
    if shapes.d > MAX_D or shapes.dv > MAX_D:
        invalid("shape.d_max", f"D should <= 512, but the D of query is {shapes.d} and the D of value is {shapes.dv}.")
    if 0 in (shapes.n2, shapes.s2, shapes.d, shapes.dv):
        return shapes
    any_int8 = I8 in (a.query.dtype, a.key.dtype, a.value.dtype, a.attentionOut.dtype)
    block = 16
    if shapes.d > shapes.dv:
        if a.attentionOut.dtype == I8:
            invalid(
                "shape.d_gt_dv_int8",
                f"when the D of query({shapes.d}) is greater than D of value({shapes.dv}), "
                "the output type can't be int8.",
            )
        if shapes.layout != "TND" and shapes.d > 128:
            block = 256
    elif any_int8:
        block = 32
    if on_arch35(env):
        return shapes  # the op_api never pads D on Ascend910_95 (so no format check either)
    if shapes.layout != "TND" and (shapes.d % block or shapes.d > shapes.dv):
        shapes.need_pad = True
        shapes.pad = -shapes.d % block
        shapes.pad_v = shapes.d + shapes.pad - shapes.dv if shapes.d > shapes.dv else shapes.pad
    return shapes


def _check_pad_reshape(a, shapes):
    """PreprocessQKVInput: with D padding, SH/BSH query, key and value are reshaped to [B, S, N, D]
    and NSD ones to [B, N, S, D] (SetShapeInfoForSH / ForNSD, N2 and Dv as AnalysisAxis divided
    them). A reshape keeps the element count: a hidden size that is not a multiple of the heads
    fails there (an L0 failure, 561103)."""
    if shapes.layout not in ("SH", "BSH", "NSD"):
        return
    heads, q = a.numHeads, a.query.shape
    batch = q[0] if shapes.layout == "BSH" else 1  # AnalysisAxis: B is 1 for SH and NSD
    s1 = q[0] if shapes.layout == "SH" else q[1]
    targets = (
        ("query", a.query, batch * s1 * heads * shapes.d),
        ("key", a.key, batch * shapes.s2 * shapes.n2 * shapes.d),
        ("value", a.value, batch * shapes.s2 * shapes.n2 * shapes.dv),
    )
    for name, t, size in targets:
        if t.numel != size:
            tiling(
                "op_api.pad_reshape",
                f"D padding reshapes {name} {list(t.shape)} to {size} elements (N2 {shapes.n2}, D {shapes.d}, "
                f"Dv {shapes.dv}); a reshape cannot change the element count",
            )


def _check_quant_offset2_pad(a, env):
    """PreprocessQKVInput pads a 3-/4-D quantScale2 and, before 8.5.0, the offset even when it is null."""
    rule = "pfa.pad_of_null_quant_offset2_fails"
    scale = a.quantScale2
    if env.version.has(rule) and scale is not None and scale.ndim in (3, 4) and a.quantOffset2 is None:
        raise OpError(
            status.ACLNN_ERR_INNER_NULLPTR,
            f"padding quantOffset2 failed: it is nullptr ({env.version.source(rule)})",
            rule="quant2.pad_null_offset",
        )


def _check_formats(a):
    for name in ("query", "key", "value", "pseShift", "attenMask", "attentionOut"):
        t = getattr(a, name)
        if t is not None and t.format in PRIVATE_FORMATS:
            invalid(
                "format.nd",
                f"{name} format {t.format.short} is not supported when D is padded; "
                f"{name[0].upper() + name[1:]} format only support ND.",
            )


INFERRED = Gaps(
    OP,
    "inferred",
    {
        "private_format": "a private storage format without D padding (the kernels are registered for ND only; read "
        "here as ND)",
        "deq_scale_mixed": "INT8 query with deqScale1 and deqScale2 of different dtypes (the kernel picks each one's "
        "read mode from the other's flag, so mixed dtypes are misread on hardware)",
    },
    code=status.ACLNN_ERR_INNER_NULLPTR,
)


UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "value_rows": VALUE_ROWS,
        "query_hidden": "a BSH query whose H is not a multiple of numHeads (AnalysisAxis divides it, no check "
        "compares the rest): how the kernel strides over the remainder of each row is not established",
    },
)


def _warn_private_formats(a, env):
    """Without D padding the op_api checks no format: a private one reaches kernel selection, whose
    binaries are registered for FORMAT_ND only (prompt_flash_attention_def.cpp); how it treats
    the format is not established, so the call runs as ND with a portability warning."""
    for name in ("query", "key", "value", "pseShift", "attenMask", "attentionOut"):
        t = getattr(a, name)
        if t is not None and t.format in PRIVATE_FORMATS:
            INFERRED.warn(env, "private_format", f"{name} has storage format {t.format.short}")
            return


# -- L0: infershape, tiling, kernel selection (all 561103) ----------------------------------------
def _padded_d(t_shape, layout, heads, shapes, value=False):
    """The D the tiling sees for q/k/v after the op_api padded it (CheckD)."""
    pad = shapes.pad_v if value else shapes.pad
    if layout == "BSH":
        return (t_shape[2] // heads + pad) if shapes.need_pad else t_shape[2] // heads
    return t_shape[3] + (pad if shapes.need_pad else 0)


def _tiling_checks(a, shapes, env):
    q, k, v, out = a.query, a.key, a.value, a.attentionOut
    layout, heads = a.inputLayout, a.numHeads
    kv_heads = a.numKeyValueHeads or heads
    if layout == "BSH" and q.ndim != 3:
        tiling("infershape.bsh_rank", f"Layout BSH, queryDims({q.ndim}) must be 3!")
    if on_arch35(env):
        return _tiling_v2_checks(a, shapes, env)
    if shapes.layout == "NTD":  # the 9.x op_api passes it on as "NTD"; infershape takes it
        tiling("layout.ntd", f"SetInputLayout: no A2/A3 tiling layout NTD ({env.version.source(NTD_RULE)})")
    if layout == "TND" and q.dtype == I8:
        tiling("io.tnd_int8", "When Layout is TND, not support QKV dataType is all int8!")
    if layout == "TND" and out.dtype == I8:
        tiling("io.tnd_int8_out", "When Layout is TND, not support attention out dataType is int8!")
    if layout in ("TND", "BSH") and not q.ndim == k.ndim == v.ndim == 3:
        tiling(
            "dims.rank3",
            f"Layout TND/NTD_TND/BSH queryDims({q.ndim}), keydims({k.ndim}), valueDims({v.ndim}) must be 3!",
        )
    if layout in ("BSH", "BNSD", "BSND", "BNSD_BSND"):
        dims = (
            _padded_d(q.shape, layout, heads, shapes),
            _padded_d(k.shape, layout, kv_heads, shapes),
            _padded_d(v.shape, layout, kv_heads, shapes, value=True),
        )
        if len(set(dims)) != 1:
            tiling(
                "d.equal",
                f"layout BSH, BSND, BNSD, BNSD_BSND, queryD keyD valueD must be equal! "
                f"(after padding: query D {dims[0]}, key D {dims[1]}, value D {dims[2]})",
            )
    if a.sparseMode in BASE_API_MODES:
        plan = check(a, shapes, env)
        _check_kernel_dtypes(a, env)
        full = [(BIG, BIG)] * len(plan.q_rows)
        return _launch(
            a,
            plan.act_q,
            plan.act_kv,
            full,
            None,
            rows=(plan.q_rows, plan.kv_rows),
            precision=plan.precision,
            tokens=plan.tokens,
            kv_blocks=plan.key_blocks,
            read_pse=plan.read_mask,
        )
    inner_precise = precise.check_a2(a, env)
    precise.check_a2_mask(a, inner_precise)  # CheckMaskType
    _check_bf16_mask_dtype(a)
    precise.check_row_invalid_mask(a, inner_precise)
    _check_int8_fp16_out(a)
    if q.is_empty:
        tiling("shape.query_empty", "query is empty tensor.")
    if layout not in TILING_LAYOUTS:
        tiling(
            "shape.layout_exact",
            f"inputLayout {layout!r}: when D != 512 only support layout BSH, BSND, BNSD, BNSD_BSND, TND, NTD_TND.",
        )
    if layout == "NTD_TND":
        tiling("shape.ntd_tnd", "NTD_TND layout is only supported in FIA, not in PFA.")
    if k.is_empty or v.is_empty:
        return _empty_kv(a, layout)
    _check_int8_scales(a)
    if k.ndim < KV_MIN_RANK or k.ndim > 5:
        tiling("kv.rank", f"tensor key shape dimNum({k.ndim}) is invalid! Only support range [{KV_MIN_RANK}, 5]")
    _check_heads(a, layout, kv_heads)
    has_mask = a.attenMask is not None and not a.attenMask.is_empty
    if layout == "TND":
        act_q, act_kv = check_shapes(a)
        _check_mask_shape(a, has_mask, 0, 0, 0)  # the TND branch leaves B, S1 and S2 at 0
        _check_sparse(a, has_mask, 0, 0)
        check_template(a, act_q, act_kv)
        _check_kernel_dtypes(a, env)
        bands = pfa.batch_bands(a.sparseMode, a.preTokens, a.nextTokens, has_mask, act_q, act_kv)
        return _launch(
            a, act_q, act_kv, bands, None, rows=(segments(act_q), segments(act_kv)), inner_precise=inner_precise
        )
    rows = None
    if layout == "SH":
        batch, s1, s2, act_q, act_kv = _sh_batches(a, env)
        rows = segments(act_q)
        rows = (rows, [(start, n) for (start, _), n in zip(rows, act_kv)])  # keys start with the queries
    else:
        batch, s1, s2 = _check_batch(a, layout)
        act_q = actual_lengths(a.actualSeqLengths, batch, s1, "query")
        act_kv = actual_lengths(a.actualSeqLengthsKv, batch, s2, "key/value")
    return _common_checks(a, shapes, env, has_mask, (batch, s1, s2), act_q, act_kv, rows, inner_precise)


def _tiling_v2_checks(a, shapes, env):
    """Ascend910_95: PromptFlashAttentionTilingV2::RunBigKernelTilingWithParams in its order
    (CheckTensorInvalid, CheckEmptyTensor, then CheckSingleAttribute: CheckIO, CheckKV,
    CheckQueryAndKey, CheckQuant, CheckActSeq(Len), CheckMaskTypeAndShape, CheckSparseMode; then
    CheckMaskCrossover and CheckMultiFeatureCrossover); V2-only rules live in prompt/checks_arch35."""
    q, k, v, layout = a.query, a.key, a.value, a.inputLayout
    if q.is_empty:
        tiling("arch35.query_empty", "Query input is empty and output is not empty!")
    if k.is_empty or v.is_empty:
        out = a.attentionOut  # CheckEmptyTensor: zeros, no limits and no int8 rule
        return lambda workspace: out.write(np.zeros(out.shape, out.np_dtype))
    rope = getattr(a, "rope_mode", None)  # FusedInferAttentionScore's queryRope/keyRope (CheckRope)
    mla = check_io(a)
    check_kv(a, mla)
    group_limit = not mla and rope != IFA_MLA
    _check_heads(a, layout, a.numKeyValueHeads or a.numHeads, N_AXIS_V2, group_limit=group_limit)
    check_query_and_key(a)
    _check_int8_scales(a)  # CheckQuant
    _check_int8_fp16_out(a)
    check_quant(a)
    rows = None
    if layout == "TND":  # CheckActSeq
        act_q, act_kv = tnd_lengths(a)
        batch, s1, s2 = len(act_q), max(act_q), max(act_kv)
        s2 = getattr(a, "paged_s2", s2)  # FusedInferAttentionScore's paged cache: blocks x blockSize
        rows = (segments(act_q), segments(act_kv))
    else:  # CheckActSeqLen
        batch, s1, s2 = _check_batch(a, layout)
        act_q = actual_lengths(a.actualSeqLengths, batch, s1, "query")
        act_kv = actual_lengths(a.actualSeqLengthsKv, batch, s2, "key/value")
    precise.check_pse_shape(a, batch, a.numHeads, s1, s2, arch35=True)
    inner_precise = precise.check_arch35(a)  # CheckInnerPrecise
    has_mask = a.attenMask is not None and not a.attenMask.is_empty
    one_row = s1 == 1 and rope is None  # enableIFA / enableIFAMask, which CheckRope switches off
    if has_mask:  # CheckMaskTypeAndShape
        check_high_precision_mask(a)
        _check_bf16_mask_dtype(a)
    check_sparse_mode(a)  # CheckSparseMode
    pre, nxt = sparse_tokens(a, has_mask, one_row)
    _check_band_negative(a)
    _check_token_rules(a, pre, nxt, s1, s2)
    _check_sparse_mask(a, has_mask)  # CheckMaskCrossover
    if one_row and has_mask:
        check_ifa_mask(a, batch, s2)
    else:
        _check_mask_shape(a, has_mask, batch, s1, s2)
    precise.check_arch35_tnd(a)  # CheckTNDLayoutCrossover
    _check_batch_tokens(a, pre, nxt, act_q, act_kv, s1)  # CheckMultiFeatureCrossover
    _check_kernel_dtypes(a, env, flag_read_deq=False)
    check_kernel_template(a, env, one_row, act_q, has_mask, mla or rope is not None)
    window = kernel_window(a, env, (pre, nxt), has_mask, one_row)
    bands = pfa.batch_bands(a.sparseMode, *window, has_mask, act_q, act_kv)
    mask_t = a.attenMask if has_mask and a.sparseMode in (0, 1) else None
    kv_block = IFA_MLA_KV_BLOCK if rope == IFA_MLA else pfa.KV_BLOCK
    return _launch(
        a, act_q, act_kv, bands, mask_t, rows=rows, precision=pfa.ARCH35, ifa_mask=one_row,
        inner_precise=inner_precise, kv_block=kv_block,
    )  # fmt: skip


def _check_bf16_mask_dtype(a):
    mask = a.attenMask
    if mask is not None and a.query.dtype == BF16 and mask.dtype not in BYTE_MASKS:
        tiling(
            "mask.bf16_dtype",
            f"invalid maskType dtype[{dtype_name(mask)}], maskType should be bool, int8 or "
            "uint8 when input type is bfloat16",
        )


def _check_int8_fp16_out(a):
    if (
        a.query.dtype == I8
        and a.attentionOut.dtype == F16
        and (a.quantScale2 is not None or a.quantOffset2 is not None)
    ):
        tiling(
            "quant.int8_fp16_out",
            "When query dtype is int8 and output dtype is fp16, the output's dequant "
            "scale and the output's dequant offset should be null.",
        )


def _common_checks(a, shapes, env, has_mask, dims, act_q, act_kv, rows, inner_precise):
    """The mask, pse, sparse, token and quant rules after the batch dims are known; then the launch."""
    q, out, layout, heads = a.query, a.attentionOut, a.inputLayout, a.numHeads
    batch, s1, s2 = dims
    _check_mask_shape(a, has_mask, batch, s1, s2)
    block = 32 // q.np_dtype.itemsize if layout == "SH" else 1  # GetBasicShape aligns SH's S to 32 bytes
    precise.check_pse_shape(a, batch, heads, -(-s1 // block) * block, -(-s2 // block) * block)
    pre, nxt = _check_sparse(a, has_mask, s1, s2)
    h = heads * (shapes.d + (shapes.pad if shapes.need_pad else 0))  # the (padded) query H
    if a.numHeads > h:
        tiling("heads.h", "num heads is error.")
    _check_batches(a, has_mask, pre, nxt, act_q, act_kv, s1)
    if q.dtype == F16 and out.dtype == I8 and layout == "SH":
        tiling("quant.sh_int8_out", "When input dtype is fp16 and output dtype is int8, SH layout is not supported.")
    if q.dtype != I8 and out.dtype == I8:
        if any(t is not None for t in (a.deqScale1, a.quantScale1, a.deqScale2)):
            tiling(
                "quant.fp16_int8_out",
                "When input dtype is fp16 and output dtype is int8, PFA inputs "
                "dequantScale1, quantScale1 and dequantScale2 should be null.",
            )
    _check_post_quant(a, h)
    _check_kernel_dtypes(a, env)
    bands = pfa.batch_bands(a.sparseMode, a.preTokens, a.nextTokens, has_mask, act_q, act_kv)
    mask_t = a.attenMask if has_mask and a.sparseMode in (0, 1) else None
    return _launch(a, act_q, act_kv, bands, mask_t, rows=rows, inner_precise=inner_precise)


def _empty_kv(a, layout):
    """S2 == 0: the empty-tensor tiling zero-fills attentionOut (int8 rejected)."""
    q = a.query.shape
    if layout in ("BNSD", "BNSD_BSND", "NSD"):
        b, n, d = (1, q[0], q[2]) if len(q) == 3 else (q[0], q[1], q[3])
        h = None
    elif layout in ("BSH", "SH"):
        b, h = (1, q[1]) if len(q) == 2 else (q[0], q[2])
    elif layout == "BSND":
        b, n, d, h = q[0], q[2], q[3], None
    else:  # TND
        b, n, d, h = 1, q[1], q[2], None
    if b > MAX_BATCH:
        tiling("empty.batch", f"batch size should <= 65536, but batch size = {b}")
    if h is not None and h > MAX_D * MAX_HEADS:
        tiling("empty.h", f"h should <= 512 * 256, but h = {h}")
    if h is None and n > MAX_HEADS:
        tiling("empty.n", f"n should <= 256, but n = {n}")
    if h is None and d > MAX_D:
        tiling("empty.d", f"D should <= 512, but d = {d}")
    if I8 in (a.query.dtype, a.key.dtype, a.value.dtype):
        tiling("empty.int8", "when input or output is empty tensor, input datatype should not be int8.")
    out = a.attentionOut
    return lambda workspace: out.write(np.zeros(out.shape, out.np_dtype))


def _check_int8_scales(a):
    if a.query.dtype != I8:
        return
    scales = (a.deqScale1, a.quantScale1, a.deqScale2)
    if any(t is None for t in scales):
        tiling(
            "quant.int8_scales_null",
            "dequant scale or first quant scale is nullptr when input type is int8 "
            "(deqScale1, quantScale1 and deqScale2 are required).",
        )
    if any(t.is_empty for t in scales):
        tiling("quant.int8_scales_empty", "dequant scale or first quant scale is empty tensor when input type is int8.")


N_AXIS = {"BNSD": 1, "BNSD_BSND": 1, "BSND": 2, "NSD": 0}


N_AXIS_V2 = {"BNSD": 1, "BNSD_BSND": 1, "BSND": 2, "TND": 1}  # TilingV2 reads TND's N too


def _check_heads(a, layout, kv_heads, n_axes=N_AXIS, group_limit=True):
    """SetTilingHeadNumRatio / CheckInputDimAndHeadNum (the head counts of the layouts in ``n_axes``
    are read from the shapes); TilingV2 drops the group limit for its MLA shapes (``group_limit``)."""
    q, k, v = a.query.shape, a.key.shape, a.value.shape
    heads = a.numHeads
    if a.numKeyValueHeads < 0:
        tiling("heads.negative", f"numHeads({heads}) or numKeyValueHeads({a.numKeyValueHeads}) is negative!")
    n_axis = n_axes.get(layout)
    if heads > MAX_HEADS:
        tiling("heads.max", f"the query's heads num({heads}) should not be more than 256!")
    if n_axis is not None:
        for name, shape, want in (("query", q, heads), ("key", k, kv_heads), ("value", v, kv_heads)):
            if shape[n_axis] != want:
                attr = "numHeads" if name == "query" else "numKeyValueHeads"
                tiling(f"heads.{name}", f"numHeads({shape[n_axis]}) in {name} shape must match {attr}({want}) in attr!")
    if heads % kv_heads:
        tiling("heads.divisible", f"numHeads({heads}) must be divisible by numKeyValueHeads({kv_heads})!")
    if group_limit and heads // kv_heads > MAX_GROUP:
        tiling("heads.group", f"numHeads / numKeyValueHeads = {heads // kv_heads}, cannot be larger than 64")


def _check_batch(a, layout):
    q, k = a.query.shape, a.key.shape
    if layout == "NSD":
        batch, batch_kv, s1, s2 = 1, 1, q[1], k[1]
    elif layout in ("BNSD", "BNSD_BSND"):
        batch, batch_kv, s1, s2 = q[0], k[0], q[2], k[2]
    else:
        batch, batch_kv, s1, s2 = q[0], k[0], q[1], k[1]
    if batch != batch_kv:
        tiling(
            "batch.equal",
            f"query batch must be equal to key/value batch, query batch = {batch} , key/value batch = {batch_kv} .",
        )
    if batch > MAX_BATCH:
        tiling("batch.max", f"batch size({batch}) should not be larger than 65536!")
    return batch, s1, s2


def _sh_batches(a, env):
    """SH packs the batches' rows: B is the length of actualSeqLengths (1 without it), batch b's
    queries and keys both start at row sum(actualSeqLengths[:b]) (the kernel offsets the keys by
    the query lengths, hence S1 == S2), and it holds actualSeqLengthsKv[b] keys."""
    act_q, act_kv = a.actualSeqLengths, a.actualSeqLengthsKv
    s1, s2 = a.query.shape[0], a.key.shape[0]
    d, kv_heads = a.query.shape[1] // a.numHeads, a.numKeyValueHeads or a.numHeads
    if a.key.shape[1] != kv_heads * d or a.value.shape[1] % kv_heads:
        tiling(
            "sh.kv_hidden",
            f"SH key H ({a.key.shape[1]}) must be numKeyValueHeads({kv_heads}) x D({d}) and "
            f"value H ({a.value.shape[1]}) a multiple of numKeyValueHeads (the CANN tiling does not check "
            "this; its kernel would misread the rows, so the emulator rejects it)",
        )
    batch, batch_kv = len(act_q or ()) or 1, len(act_kv or ()) or 1
    if batch != batch_kv:
        tiling(
            "batch.equal",
            f"query batch must be equal to key/value batch, query batch = {batch} , key/value batch = {batch_kv} .",
        )
    if batch > MAX_SH_BATCH:
        tiling("batch.sh_max", f"batch size({batch}) should not be larger than 128 when input layout is SH!")
    if s1 != s2:
        tiling("sh.q_kv_diff", f"SH format not support q kv diff, length of q = {s1} , length of kv = {s2}.")
    if act_q and sum(act_q) != s1:
        tiling("sh.sum", f"SH format sum of actual_seq_q({sum(act_q)}) do not match s_q({s1})!")
    act_q, act_kv = list(act_q or [s1]), list(act_kv or [s2])
    starts = [start for start, _ in segments(act_q)]
    fitted = [max(0, min(n, s2 - start)) for n, start in zip(act_kv, starts)]
    fitted_q = [max(0, n) for n in act_q]
    if fitted != act_kv or fitted_q != act_q:
        env.warn(
            f"SH: actual lengths {act_q} / {act_kv} reach outside the {s1} rows (no check in the CANN "
            "tiling; the kernel would read neighbouring memory); clipped to the tensor"
        )
    return batch, s1, s2, fitted_q, fitted


def actual_lengths(values, batch, limit, what):
    """CheckActualSeqLength, then the per-batch lengths (length 1 broadcasts, >= B takes the first B)."""
    if not values:
        return [limit] * batch
    if 1 < len(values) < batch:
        arg = "actualSeqLengths" if what == "query" else "actualSeqLengthsKv"
        tiling(
            f"actual_seq.{arg}_len",
            f"Dim({len(values)}) of the {what}'s actual sequence lengths "
            f"({arg}) must equal to 1 or greater than or equal to batch size({batch})!",
        )
    for i, value in enumerate(values[:batch]):
        if not 0 <= value <= limit:
            tiling(
                f"actual_seq.{what.split('/')[0]}_range",
                f"The {what}'s actual sequence lengths[{i}]({value}) must be in range[0, {limit}]!",
            )
    return [values[0]] * batch if len(values) == 1 else list(values[:batch])


def _check_mask_shape(a, has_mask, batch, s1, s2):
    if not has_mask:
        return
    shape, mode = a.attenMask.shape, a.sparseMode
    if len(shape) not in (2, 3, 4):
        tiling("mask.rank", f"attenMask dim({len(shape)}) must be 2 or 3 or 4!")
    mask_batch = 1 if len(shape) == 2 else shape[0]
    if mode in (0, 1):
        if not (shape[-2] >= s1 and shape[-1] >= s2 and mask_batch in (1, batch)):
            tiling(
                "mask.shape",
                f"attenMask batch({mask_batch}) must be 1 or {batch}, attenMask Q_S({shape[-2]}) "
                f"must be larger than sQ({s1}), attenMask KV_S({shape[-1]}) must be larger than sK({s2}), "
                "please check",
            )
    elif mode in (2, 3, 4):
        if shape[-2:] != (COMPRESSED_MASK, COMPRESSED_MASK) or any(dim != 1 for dim in shape[:-2]):
            tiling(
                "mask.compressed_shape",
                f"attenMask shape {list(shape)}: attenMask shape must be (2048, 2048) "
                f"or (1, 2048, 2048) or (1, 1, 2048, 2048) when sparse mode = {mode}",
            )


def _check_sparse(a, has_mask, s1, s2):
    """Sparse-mode rules; returns the (pre, next) tokens the kernel tiling keeps (clamped)."""
    if a.sparseMode not in (0, 1, 2, 3, 4):
        tiling("sparse.mode", f"sparse_mode = {a.sparseMode} is out of range.")
    pre, nxt = mode_tokens(a, a.preTokens, a.nextTokens, has_mask, BIG)
    _check_band_negative(a)
    _check_sparse_mask(a, has_mask)
    _check_token_rules(a, pre, nxt, s1, s2)
    return min(pre, BIG), min(nxt, BIG)


def _check_band_negative(a):
    if a.attenMask is not None and a.sparseMode == 4 and a.preTokens < 0 and a.nextTokens < 0:
        tiling(
            "sparse.band_negative",
            f"preTokens and nextTokens must not be negative number in band mode, "
            f"preTokens = {a.preTokens} , nextTokens = {a.nextTokens} .",
        )


def _check_sparse_mask(a, has_mask):
    """Modes 1-4 need a mask, modes 2-4 a byte mask."""
    mode = a.sparseMode
    if mode in (1, 2, 3, 4):
        if not has_mask:
            tiling("sparse.mask_required", f"attenMask should not be null when sparse_mode is {mode}.")
        if mode != 1 and a.attenMask.dtype not in BYTE_MASKS:
            tiling(
                "sparse.mask_dtype",
                f"invalid maskType dtype[{dtype_name(a.attenMask)}], maskType should be bool, "
                f"int8 or uint8 when sparse mode is {mode}.",
            )


def _check_token_rules(a, pre, nxt, s1, s2):
    """The window rules on the tokens the mode keeps (``pre``, ``nxt``)."""
    mode = a.sparseMode
    if pre < 0 and nxt < 0:
        tiling(
            "tokens.both_negative",
            f"preTokens and nextokens cannot neither be negative number, preTokens = {pre}, nextTokens = {nxt}.",
        )
    if -nxt > pre:
        tiling(
            "tokens.order",
            f"nexttoken line should be higher than pretoken line (preTokens = {pre}, nextTokens = {nxt}).",
        )
    if mode == 0 and nxt < 0 and -nxt >= s1:
        tiling(
            "tokens.next_vs_s1",
            f"nextTokens absolute value should be smaller than length of q, nextTokens = {nxt}, length of q = {s1}.",
        )
    if mode == 0 and pre < 0 and -pre >= s2:
        tiling(
            "tokens.pre_vs_s2",
            f"preToken absolute value should be smaller than length of k and v, preTokens = {pre}, seqLengthKV = {s2}",
        )


def _check_batches(a, has_mask, pre, nxt, act_q, act_kv, s1):
    """The per-batch token rules with the A2/A3 tiling's int8-output ones (band mode and the
    post-quant offset need every row computed)."""
    mode, out_int8 = a.sparseMode, a.attentionOut.dtype == I8
    if out_int8 and mode == 4 and (pre < 0 or nxt < 0):
        tiling(
            "tokens.int8_band_negative",
            f"When output type is int8, sparse mode = 4, preTokens ({pre}) or nextTokens ({nxt}) cannot be negative.",
        )
    check_offset = out_int8 and a.quantOffset2 is not None and not a.quantOffset2.is_empty

    def offset_rows(aq, ak):
        ((pre_b, next_b),) = pfa.batch_bands(mode, pre, nxt, has_mask, [aq], [ak])
        if check_offset and (pre_b + ak - aq < 0 or next_b < 0):
            tiling(
                "quant.offset_uncomputed_rows",
                f"When sparse mode = {mode}, output dtype is int8, the output's "
                f"dequant offset is not null or empty tensor, preTokens = {a.preTokens} and nextTokens = "
                f"{a.nextTokens}, some rows of the matrix do not participate in the calculation.",
            )

    _check_batch_tokens(a, pre, nxt, act_q, act_kv, s1, offset_rows)


def _check_batch_tokens(a, pre, nxt, act_q, act_kv, s1, between=None):
    """The token rules against each batch's actual lengths; ``between(aq, ak)`` runs before the band
    rules of each batch (the A2/A3 tiling's int8 offset rule)."""
    mode = a.sparseMode
    for aq, ak in zip(act_q, act_kv):
        if mode == 0 and aq != s1 and nxt < 0 and -nxt >= aq:
            tiling(
                "tokens.next_vs_actual_q",
                f"nexttoken absolute value should be smaller than actual length of "
                f"q, nextTokens = {nxt}, the query's actual sequence lengths = {aq}",
            )
        if mode == 0 and pre < 0 and -pre >= ak:
            tiling(
                "tokens.pre_vs_actual_kv",
                f"preToken absolute value should be smaller than actual length of k "
                f"and v, preToken = {pre}, actual length of k and v = {ak}.",
            )
        if between is not None:
            between(aq, ak)
        if mode == 4 and nxt < 0 and -nxt >= ak:
            tiling(
                "tokens.band_next",
                f"nextTokens absolute value should be smaller than actual length of k and v "
                f"in band mode, nextTokens = {nxt}, actual length of k and v = {ak}",
            )
        if mode == 4 and pre < 0 and -pre >= aq:
            tiling(
                "tokens.band_pre",
                f"preTokens absolute value should be smaller than actual length of q in band "
                f"mode, preTokens = {pre}, the query's actual sequence lengths = {aq}",
            )


def _check_post_quant(a, h):
    if a.attentionOut.dtype != I8:
        return
    require_quant_scale2(a)
    scale, offset, q = a.quantScale2, a.quantOffset2, a.query.dtype
    if scale.numel != 1 and (scale.numel // a.numHeads) % 32:
        tiling(
            "quant2.per_channel_align",
            f"post quant per-channel do not support D({scale.numel // a.numHeads}) non-32-byte aligned.",
        )
    if scale.dtype not in (BF16, FP32, F16):
        tiling("quant2.scale_dtype", f"post quant scale dtype({dtype_name(scale)}) only support bf16, fp16 and fp32 .")
    if offset is not None and offset.dtype != scale.dtype:
        tiling(
            "quant2.offset_dtype",
            f"post quant scale dtype({dtype_name(scale)}) and offset dtype({dtype_name(offset)}) must be consistent.",
        )
    if q != BF16 and scale.dtype == BF16:
        tiling("quant2.bf16_scale", f"post quant scale and offset support bf16 only if input dtype({q.short}) is bf16.")
    if q != F16 and scale.dtype == F16:
        tiling("quant2.fp16_scale", f"post quant scale and offset support fp16 only if input dtype({q.short}) is fp16.")
    if offset is not None and offset.numel != scale.numel:
        tiling(
            "quant2.offset_size",
            f"the output's dequant scale dimension multiply result({scale.numel}) do not "
            f"equal the output's dequant offset dimension multiply result({offset.numel}).",
        )
    if scale.numel not in (1, h):
        tiling(
            "quant2.size",
            f"post the output's dequant scale/offset dimension multiply result only support 1 and "
            f"H({h}), now is ({scale.numel}).",
        )


def _check_kernel_dtypes(a, env, flag_read_deq=True):
    """Kernel selection: only the dtype combinations the op definition registers have a binary
    (the same for ascend910b, ascend910_93 and ascend910_95). ``flag_read_deq``: the kernel reads
    each deqScale by the other's dtype flag (A2/A3; the arch35 kernels read both as fp32 alike)."""
    for name in ("deqScale1", "deqScale2"):
        t = getattr(a, name)
        if t is not None and t.dtype not in DEQ_DTYPES:
            tiling(f"kernel.{name}_dtype", f"{name} dtype {dtype_name(t)} has no kernel; expected UINT64 or FLOAT")
    if a.quantScale1 is not None and a.quantScale1.dtype != FP32:
        tiling(
            "kernel.quantScale1_dtype", f"quantScale1 dtype {dtype_name(a.quantScale1)} has no kernel; expected FLOAT"
        )
    if a.attentionOut.dtype == I8 and a.quantScale2.dtype == F16:
        tiling("kernel.quantScale2_dtype", "quantScale2 dtype FLOAT16 has no kernel; expected FLOAT or BF16")
    if flag_read_deq and a.query.dtype == I8 and a.deqScale1.dtype != a.deqScale2.dtype:
        INFERRED.warn(
            env, "deq_scale_mixed", f"deqScale1 {dtype_name(a.deqScale1)}, deqScale2 {dtype_name(a.deqScale2)}"
        )


def _check_out_shape(a, shapes):
    """CheckResultOutShapePfa, after tiling: the inferred (sliced, reshaped) shape against attentionOut."""
    out = a.attentionOut
    expected = _expected_out_shape(a, shapes)
    if shapes.need_pad and shapes.layout in ("BSH", "SH", "NSD"):
        if int(np.prod(expected)) != out.numel:  # the op_api reshapes to attentionOut's shape
            tiling("out.reshape", f"attentionOut shape {list(out.shape)} cannot hold the output {list(expected)}")
        return
    if tuple(expected) != out.shape and not (int(np.prod(expected)) == 1 == out.numel):
        invalid(
            "out.shape",
            f"Out tensor's shape{list(out.shape)} is not equal with Expect Out tensor's "
            f"shape{list(expected)}, Please check the Out tensor's shape.",
        )
