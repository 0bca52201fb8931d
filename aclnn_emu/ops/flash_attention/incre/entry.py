"""aclnnIncreFlashAttentionV4: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_uint32
from aclnn_emu.opdef.signature import Double, Int64, IntArrayIn, Op, String, TensorIn, TensorListIn, TensorOut
from ..common import entry_params


I8 = DataType.ACL_INT8


# The inputLayout values the tiling accepts (TND needs the MLA rope inputs V4 cannot pass).
LAYOUTS = ("BSH", "BSND", "BNSD", "BSH_NBSD", "BSND_NBSD", "BNSD_NBSD")


def _attention_out(a):
    """attentionOut by the op's rules: query's shape ([N, B, S, D] for the *_NBSD layouts), INT8 when
    quantScale2 is given (output quantisation), else query's dtype; None without a query."""
    q = a.query
    if q is None:
        return None
    dtype = I8 if getattr(a, "quantScale2", None) is not None else q.dtype
    layout = "BSH" if a.inputLayout is None else a.inputLayout
    heads = attr_uint32(a.numHeads)
    if not layout.endswith("_NBSD") or q.ndim < 3 or not heads or not q.numel:
        return q.shape, dtype
    b, s = q.shape[0], q.shape[2 if layout.startswith("BNSD") else 1]
    return (heads, b, s, q.numel // (b * s * heads)), dtype


OP = Op(
    "IncreFlashAttentionV4",
    "aclnn_incre_flash_attention_v4.h",
    [
        TensorIn(
            "query",
            doc="Q of the decode step (S = 1), laid out as inputLayout says; S in [2, 16] runs the S = 1 "
            "kernels, which ignore S, as the NPU does",
        ),
        TensorListIn(
            "key",
            doc="K: one tensor [B,...] (or one per batch), or the paged cache [blocks, blockSize, H] / "
            "[blocks, N2, blockSize, D] with blocktable",
        ),
        TensorListIn("value", doc="V, laid out like key"),
        TensorIn("pseShift", optional=True, doc="position encoding added to the scores [B|1, N, 1, S]"),
        TensorIn(
            "attenMask",
            optional=True,
            doc="mask of keys to drop, nonzero = masked out [B, S] / [B, 1, S] / [B, 1, 1, S]",
        ),
        IntArrayIn(
            "actualSeqLengths",
            optional=True,
            doc="valid key/value length of each batch (None: key's S, or the block table's capacity)",
        ),
        TensorIn(
            "dequantScale1",
            optional=True,
            doc="INT8 query: dequantisation scale after Q·Kᵀ (no kernel takes an INT8 query: pass None)",
        ),
        TensorIn(
            "quantScale1",
            optional=True,
            doc="INT8 query: quantisation scale before P·V (no kernel takes an INT8 query: pass None)",
        ),
        TensorIn(
            "dequantScale2",
            optional=True,
            doc="INT8 query: dequantisation scale after P·V (no kernel takes an INT8 query: pass None)",
        ),
        TensorIn(
            "quantScale2",
            optional=True,
            doc="INT8 attentionOut: quantisation scale, per tensor [1] or per channel [N*D]",
        ),
        TensorIn("quantOffset2", optional=True, doc="INT8 attentionOut: quantisation offset, shaped like quantScale2"),
        TensorIn(
            "antiquantScale",
            optional=True,
            doc="INT8 key/value: dequantisation scales (keys, values), per "
            "tensor [2] or per channel [2, N2, 1, D] / [2, H] / [2, N2, D]",
        ),
        TensorIn(
            "antiquantOffset", optional=True, doc="INT8 key/value: dequantisation offsets, shaped like antiquantScale"
        ),
        TensorIn(
            "blocktable",
            optional=True,
            doc="page attention: cache block of each batch's i-th block [B, maxBlocksPerSeq]",
        ),
        TensorIn("kvPaddingSize", optional=True, doc="left padding of the key/value rows (kv left padding)"),
        Int64("numHeads", default=1, doc="number of query heads N"),
        Double("scaleValue", default=1.0, doc="scale of Q·Kᵀ, usually 1/sqrt(D)"),
        String(
            "inputLayout",
            default="BSH",
            values=LAYOUTS,
            doc="layout of query/key/value (*_NBSD: attentionOut shaped [N, B, S, D], which the kernels "
            "fill in [B, N, D] order)",
        ),
        Int64("numKeyValueHeads", default=0, doc="number of key/value heads for GQA (0: numHeads)"),
        Int64(
            "blockSize",
            default=0,
            doc="page attention: tokens per cache block (a multiple of 16, of 32 for INT8 caches; at most 512)",
        ),
        Int64("innerPrecise", default=1, doc="0 high precision, 1 high performance (the same maths here)"),
        TensorOut("attentionOut", like=_attention_out, doc="the attention result, query's shape"),
    ],
    defaults_from="torch_npu.npu_incre_flash_attention",
)
# The older entry points of the header family: each has no checks of its own and passes the generated
# inner op V4's parameter set with the values its op_api fixes (checks.py `FIXED`).
_QUANT = ("dequantScale1", "quantScale1", "dequantScale2", "quantScale2", "quantOffset2")
_PAGED = ("antiquantScale", "antiquantOffset", "blocktable", "kvPaddingSize", "blockSize", "innerPrecise")
_DROPPED_PSE = {"pseShift": "ignored: the operator passes no pse on (use IncreFlashAttentionV3 or V4)"}
V1 = Op(
    "IncreFlashAttention",
    "aclnn_incre_flash_attention.h",
    entry_params(OP, [p.name for p in OP.params if p.name not in _QUANT + _PAGED], docs=_DROPPED_PSE),
    base=OP,
    defaults_from="torch_npu.npu_incre_flash_attention",
)
V2 = Op(
    "IncreFlashAttentionV2",
    "aclnn_incre_flash_attention_v2.h",
    entry_params(OP, [p.name for p in OP.params if p.name not in _PAGED], docs=_DROPPED_PSE),
    base=OP,
    defaults_from="torch_npu.npu_incre_flash_attention",
)
V3 = Op(
    "IncreFlashAttentionV3",
    "aclnn_incre_flash_attention_v3.h",
    entry_params(OP, [p.name for p in OP.params if p.name != "kvPaddingSize"]),
    base=OP,
    defaults_from="torch_npu.npu_incre_flash_attention",
)
