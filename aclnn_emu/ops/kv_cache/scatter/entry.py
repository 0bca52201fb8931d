"""aclnnScatterPaKvCache: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.signature import IntArrayIn, Op, String, TensorIn, TensorRef
from aclnn_emu.ops.kv_cache.common import CACHE_MODES


# scatterMode values with a template of their own (any other string is a plain scatter, as "None").
SCATTER_MODES = ("None", "Rope", "Alibi", "Omni", "Nct")


OP = Op(
    "ScatterPaKvCache",
    "aclnn_scatter_pa_kv_cache.h",
    [
        TensorIn("key", doc="new keys [tokens, heads, kHeadSize]"),
        TensorRef(
            "keyCacheRef",
            doc="paged key cache, updated in place [blocks, blockSize, heads, kHeadSize] (PA_NZ: its NZ form)",
        ),
        TensorIn("slotMapping", doc="cache slot (block * blockSize + offset) of each token; negative: skipped"),
        TensorIn("value", doc="new values [tokens, heads, vHeadSize]"),
        TensorRef("valueCacheRef", doc="paged value cache, updated in place"),
        TensorIn("compressLensOptional", optional=True, doc="Alibi/Rope/Omni modes: tokens each batch keeps"),
        TensorIn(
            "compressSeqOffsetOptional", optional=True, doc="Rope/Omni modes: where each batch's kept tokens start"
        ),
        TensorIn("seqLensOptional", optional=True, doc="compress modes: tokens per batch"),
        String(
            "cacheModeOptional",
            optional=True,
            default="PA_NZ",
            values=CACHE_MODES,
            doc="cache layout: Norm (ND caches; None means Norm) or PA_NZ (NZ caches)",
        ),
        String(
            "scatterModeOptional",
            optional=True,
            values=SCATTER_MODES,
            doc="how tokens land (None: None, a plain scatter)",
        ),
        IntArrayIn("stridesOptional", optional=True, doc="Nct mode: strides of key and value"),
        IntArrayIn("offsetsOptional", optional=True, doc="Nct mode: offsets of key and value"),
    ],
    defaults_from="torch_npu.npu_scatter_pa_kv_cache",
)


I8, F16, BF16 = DataType.ACL_INT8, DataType.ACL_FLOAT16, DataType.ACL_BF16


I32, I64 = DataType.ACL_INT32, DataType.ACL_INT64
