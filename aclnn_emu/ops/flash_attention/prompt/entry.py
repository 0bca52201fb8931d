"""aclnnPromptFlashAttentionV2: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.opdef.signature import Double, Int64, IntArrayIn, Op, OpError, String, TensorIn, TensorOut
from ..common import BF16, F16, FP32, I8, MASK_DTYPES, QKV_DTYPES, TILING_LAYOUTS, U64, entry_params
from .shapes import _axes, _expected_out_shape


DEQ_DTYPES = (U64, FP32)  # deqScale1/deqScale2 kernels


QUANT2_DTYPES = (FP32, BF16)  # quantScale2/quantOffset2 with an INT8 output (help() only)


def _attention_out(a):
    """attentionOut by the op's own rules: query's shape with value's head size (CheckResultOutShapePfa),
    FLOAT16 for an INT8 query, INT8 when quantScale2 is given, else query's dtype; None without q, k, v."""
    q = a.query
    if None in (q, a.key, a.value):
        return None
    try:
        shape = _expected_out_shape(
            a, _axes(a.inputLayout, q.shape, a.key.shape, a.value.shape, a.numHeads, a.numKeyValueHeads)
        )
    except (OpError, IndexError, ZeroDivisionError):  # the op's checks will say what is wrong
        shape = q.shape
    dtype = I8 if getattr(a, "quantScale2", None) is not None else F16 if q.dtype == I8 else q.dtype
    return shape, dtype


OP = Op(
    "PromptFlashAttentionV2",
    "aclnn_prompt_flash_attention_v2.h",
    [
        TensorIn("query", dtypes=QKV_DTYPES, doc="Q, laid out as inputLayout says"),
        TensorIn("key", dtypes=QKV_DTYPES, doc="K, same dtype as query"),
        TensorIn("value", dtypes=QKV_DTYPES, doc="V, same dtype as query"),
        TensorIn("pseShift", optional=True, doc="reserved by the operator: pass None"),
        TensorIn(
            "attenMask",
            optional=True,
            dtypes=MASK_DTYPES,
            doc="mask of scores to drop, 1/True = masked out "
            "([S1,S2], [B,S1,S2] or [B,1,S1,S2]; 2048x2048 for sparseMode 2-4)",
        ),
        IntArrayIn("actualSeqLengths", optional=True, doc="valid query length of each batch (None: S1 of query)"),
        IntArrayIn("actualSeqLengthsKv", optional=True, doc="valid key/value length of each batch (None: S2 of key)"),
        TensorIn("deqScale1", optional=True, dtypes=DEQ_DTYPES, doc="INT8 query: dequantisation scale of Q·Kᵀ"),
        TensorIn("quantScale1", optional=True, dtypes=(FP32,), doc="INT8 query: quantisation scale of P before P·V"),
        TensorIn("deqScale2", optional=True, dtypes=DEQ_DTYPES, doc="INT8 query: dequantisation scale of P·V"),
        TensorIn(
            "quantScale2", optional=True, dtypes=QUANT2_DTYPES, doc="INT8 output: quantisation scale of the result"
        ),
        TensorIn(
            "quantOffset2", optional=True, dtypes=QUANT2_DTYPES, doc="INT8 output: quantisation offset of the result"
        ),
        Int64("numHeads", default=1, doc="number of query heads N"),
        Double("scaleValue", default=1.0, doc="scale of Q·Kᵀ, usually 1/sqrt(D)"),
        Int64("preTokens", default=2147483647, doc="sliding window: keys this many positions before a query are kept"),
        Int64("nextTokens", default=0, doc="sliding window: keys this many positions after a query are kept"),
        String(
            "inputLayout",
            default="BSH",
            values=TILING_LAYOUTS,
            doc="layout of query/key/value (BNSD_BSND: BNSD in, BSND out)",
        ),
        Int64("numKeyValueHeads", default=0, doc="number of key/value heads for GQA (0: numHeads)"),
        Int64(
            "sparseMode",
            default=0,
            doc="how attenMask and the token window select scores (0 defaultMask, "
            "1 allMask, 2 leftUpCausal, 3 rightDownCausal, 4 band)",
        ),
        TensorOut(
            "attentionOut", like=_attention_out, doc="the attention result, query's shape with value's head size"
        ),
    ],
    defaults_from="torch_npu.npu_prompt_flash_attention",
)
# aclnn_prompt_flash_attention.cpp: V2's path with pseShift dropped, no actualSeqLengthsKv or
# quantisation parameters, sparseMode 0 (checks.py `v1_fixed`).
V1 = Op(
    "PromptFlashAttention",
    "aclnn_prompt_flash_attention.h",
    entry_params(
        OP,
        (
            "query",
            "key",
            "value",
            "pseShift",
            "attenMask",
            "actualSeqLengths",
            "numHeads",
            "scaleValue",
            "preTokens",
            "nextTokens",
            "inputLayout",
            "numKeyValueHeads",
            "attentionOut",
        ),
        docs={
            "pseShift": "ignored: the operator passes no pse on (use PromptFlashAttentionV3)",
            "attenMask": "mask of scores to drop, 1/True = masked out ([S1,S2], [B,S1,S2] or [B,1,S1,S2])",
        },
    ),
    base=OP,
    defaults_from="torch_npu.npu_prompt_flash_attention",
)
# aclnn_prompt_flash_attention_v3.cpp: every argument on, pseShift and innerPrecise honoured (precise.py).
# FusedInferAttentionScore's PFA branch takes these parameters: checks.run_inner runs them.
# torch_npu.npu_prompt_flash_attention calls V3 (op-plugin FlashAttentionKernelNpuOpApi.cpp), with
# innerPrecise 1 (0 for its sparse modes 10-14); V1 shares its defaults.
V3 = Op(
    "PromptFlashAttentionV3",
    "aclnn_prompt_flash_attention_v3.h",
    entry_params(
        OP,
        [p.name for p in OP.params],
        added={
            "attentionOut": Int64(
                "innerPrecise",
                default=1,
                doc="0 high precision, 1 high performance (fp16 only; an fp16 pseShift forces high precision), "
                "2/3 the same with rows whose every key is masked set to 0",
            )
        },
        docs={
            "pseShift": "position term added to the scaled scores before the mask, [B|1, N, >=S1, >=S2] "
            "(FLOAT16 for a FLOAT16 or INT8 query, BF16 for BF16)"
        },
    ),
    base=OP,
    defaults_from="torch_npu.npu_prompt_flash_attention",
)
OWN_OP_API = (V1.name, OP.name, V3.name)  # the entry points whose op_api is PFA's (FIA's route has its own)
