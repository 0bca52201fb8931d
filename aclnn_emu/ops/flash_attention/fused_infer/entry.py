"""aclnnFusedInferAttentionScore V1-V5: five declarations over one inner operator.

V1-V3's parameters are a subset of V4's, in V4's order; V5 (CANN 9.0.0 on) adds three that V4 passes as NULL,
NULL and 0. V1 spells them without the "Optional" suffix, as its header does. V1-V3 and V5 run V4's prepare
(``base=V4``) after their own check, which gives the inner operator the values their wrapper passes (``inner_args``). Defaults are those of
torch_npu.npu_fused_infer_attention_score (op-plugin op_plugin_functions.yaml; inner_precise 0).
"""

from types import SimpleNamespace

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.signature import Bool, Double, Int64, IntArrayIn, Op, String, TensorIn, TensorListIn, TensorOut

from .layouts import attention_out_rule, softmax_lse_rule

F16, BF16, I8, FP32 = DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8, DataType.ACL_FLOAT

# (kind, V4 name, first version, keyword arguments) in V4's order; the tail (attentionOut,
# softmaxLse) follows the attributes in every version.
_T, _A, _I, _D, _S, _B = "tensor", "array", "int", "double", "string", "bool"
_KV_MODES = (
    "{}'s antiquant mode: 0 per channel, 1 per token, 2 per tensor + head, 3 per token + head, 4 / 5 per token "
    "(+ head) with the parameters in the paged cache's blocks; key 0 with value 1 is the one mixed pair; 7 per "
    "block of 256 keys (Ascend910_95, an FP8/HiFloat8 key)"
)
_SPEC = [
    (_T, "query", 1, dict(doc="Q, laid out as inputLayout says (fp16, bf16 or int8)")),
    ("list", "key", 1, dict(doc="K: one tensor, one tensor per batch, or a paged cache with blockTable")),
    ("list", "value", 1, dict(doc="V, laid out like key")),
    (_T, "pseShiftOptional", 1, dict(doc="position encoding added to the scores [B|1, N, S1, S2]")),
    (_T, "attenMaskOptional", 1, dict(doc="mask of scores to drop, nonzero = masked out")),
    (_A, "actualSeqLengthsOptional", 1, dict(doc="valid query length of each batch (TND: cumulative)")),
    (_A, "actualSeqLengthsKvOptional", 1, dict(doc="valid key/value length of each batch (TND: cumulative)")),
    (_T, "deqScale1Optional", 1, dict(doc="INT8 query: dequantisation scale of Q·Kᵀ")),
    (_T, "quantScale1Optional", 1, dict(doc="INT8 query: quantisation scale of P")),
    (_T, "deqScale2Optional", 1, dict(doc="INT8 query: dequantisation scale of P·V")),
    (_T, "quantScale2Optional", 1, dict(doc="INT8 output: quantisation scale")),
    (_T, "quantOffset2Optional", 1, dict(doc="INT8 output: quantisation offset")),
    (_T, "antiquantScaleOptional", 1, dict(doc="INT8/INT4 key and value: dequantisation scales")),
    (_T, "antiquantOffsetOptional", 1, dict(doc="INT8/INT4 key and value: dequantisation offsets")),
    (_T, "blockTableOptional", 1, dict(doc="paged cache: block of each batch's i-th page [B, maxBlocksPerSeq]")),
    (_T, "queryPaddingSizeOptional", 1, dict(doc="query left padding (rows after the valid ones) [1]")),
    (_T, "kvPaddingSizeOptional", 1, dict(doc="key/value left padding [1]")),
    (_T, "keyAntiquantScaleOptional", 2, dict(doc="key's own dequantisation scale")),
    (_T, "keyAntiquantOffsetOptional", 2, dict(doc="key's own dequantisation offset")),
    (_T, "valueAntiquantScaleOptional", 2, dict(doc="value's own dequantisation scale")),
    (_T, "valueAntiquantOffsetOptional", 2, dict(doc="value's own dequantisation offset")),
    (_T, "keySharedPrefixOptional", 2, dict(doc="keys every batch attends to first [1, ...]")),
    (_T, "valueSharedPrefixOptional", 2, dict(doc="values of the shared prefix")),
    (_A, "actualSharedPrefixLenOptional", 2, dict(doc="valid length of the shared prefix")),
    (_T, "queryRopeOptional", 3, dict(doc="MLA: the query's rope part (D 64)")),
    (_T, "keyRopeOptional", 3, dict(doc="MLA: the key's rope part (D 64), laid out like key")),
    (_T, "keyRopeAntiquantScaleOptional", 3, dict(doc="MLA: dequantisation scale of an INT8 keyRope")),
    (
        _T,
        "dequantScaleQueryOptional",
        4,
        dict(doc="query's dequantisation scale: INT8 MLA (A2/A3), FP8/HiFloat8 [B, N, ceil(S1/128), 1] (Ascend910_95)"),
    ),
    (_T, "learnableSinkOptional", 4, dict(doc="BF16 [N]: a learnt score each row's softmax sum also sees")),
    (_A, "qStartIdxOptional", 5, dict(doc="first query position of an inner pse (not emulated: 561003)")),
    (_A, "kvStartIdxOptional", 5, dict(doc="first key position of an inner pse (not emulated: 561003)")),
    (_I, "numHeads", 1, dict(default=1, doc="number of query heads N")),
    (_D, "scaleValue", 1, dict(default=1.0, doc="scale of Q·Kᵀ, usually 1/sqrt(D)")),
    (_I, "preTokens", 1, dict(default=2147483647, doc="sliding window: keys kept before a query")),
    (_I, "nextTokens", 1, dict(default=2147483647, doc="sliding window: keys kept after a query")),
    (_S, "inputLayout", 1, dict(default="BSH", doc="layout of query/key/value, output layout after '_'")),
    (_I, "numKeyValueHeads", 1, dict(default=0, doc="number of key/value heads for GQA (0: numHeads)")),
    (_I, "sparseMode", 1, dict(default=0, doc="0 mask/band, 1 full mask, 2 left-up causal, 3 right-down, 4 band")),
    (_I, "innerPrecise", 1, dict(default=0, doc="0/1 precision mode; 2/3 also zero rows whose keys are all masked")),
    (_I, "blockSize", 1, dict(default=0, doc="paged cache: tokens per block")),
    (_I, "antiquantMode", 1, dict(default=0, doc="0 per channel, 1 per token")),
    (_B, "softmaxLseFlag", 1, dict(default=False, doc="write softmaxLse = log(sum exp) + max per row")),
    (_I, "keyAntiquantMode", 2, dict(default=0, doc=_KV_MODES.format("key"))),
    (_I, "valueAntiquantMode", 2, dict(default=0, doc=_KV_MODES.format("value"))),
    (_I, "queryQuantMode", 4, dict(default=0, doc="query quantisation mode: 3 per token + head, 7 per block")),
    (_I, "pseType", 5, dict(default=0, doc="how the pse enters the scores; 0, what V1-V4 pass (others: 561003)")),
]
_TAIL = [
    TensorOut("attentionOut", like=attention_out_rule, doc="the attention result, in the output layout"),
    TensorOut("softmaxLse", optional=True, like=softmax_lse_rule, doc="FLOAT [B, N, S1, 1] (TND: [T, N, 1])"),
]
_MAKE = {_T: TensorIn, "list": TensorListIn, _A: IntArrayIn, _I: Int64, _D: Double, _S: String, _B: Bool}


def _name(v4_name: str, version: int) -> str:
    return v4_name.removesuffix("Optional") if version == 1 else v4_name


def _declare(version: int, header: str, base: Op | None = None, first_release: str | None = None) -> Op:
    params = []
    for kind, name, since, info in _SPEC:
        if since > version:
            continue
        optional = dict(optional=True) if name.endswith("Optional") and kind in (_T, _A) else {}
        params.append(_MAKE[kind](_name(name, version), **optional, **info))
    suffix = "" if version == 1 else f"V{version}"
    return Op(
        f"FusedInferAttentionScore{suffix}",
        header,
        params + _TAIL,
        base=base,
        defaults_from="torch_npu.npu_fused_infer_attention_score",
        since=first_release,
    )


V4 = _declare(4, "aclnn_fused_infer_attention_score_v4.h")
V1 = _declare(1, "aclnn_fused_infer_attention_score.h", V4)
V2 = _declare(2, "aclnn_fused_infer_attention_score_v2.h", V4)
V3 = _declare(3, "aclnn_fused_infer_attention_score_v3.h", V4)
# CANN 9.0.0 on: V4's parameters plus the start indices and pseType V4 passes as NULL, NULL and 0.
V5 = _declare(5, "aclnn_fused_infer_attention_score_v5.h", V4, first_release="9.0.0")
VERSIONS = {V1: 1, V2: 2, V3: 3, V4: 4, V5: 5}


def inner_args(a, op) -> SimpleNamespace:
    """A version's arguments as V4's: what the version lacks is NULL or 0, as its wrapper passes."""
    version = VERSIONS[op]
    values = {}
    for kind, name, since, info in _SPEC:
        if since <= version:
            values[name] = getattr(a, _name(name, version))
        else:
            values[name] = None if kind in (_T, _A, "list") else info.get("default", 0)
    values["attentionOut"], values["softmaxLse"] = a.attentionOut, a.softmaxLse
    return SimpleNamespace(**values)
