"""aclnnGatherPaKvCache: the entry points of its header, each an Op declaration (the C signature, the
rules its outputs are allocated by); checks.py registers what phase 1 runs."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.opdef.signature import Bool, Op, String, TensorIn, TensorRef
from aclnn_emu.ops.kv_cache.common import CACHE_MODES


OP = Op(
    "GatherPaKvCache",
    "aclnn_gather_pa_kv_cache.h",
    [
        TensorIn("keyCache", doc="paged key cache [blocks, blockSize, heads, headSize] (Norm) or its NZ form (PA_NZ)"),
        TensorIn("valueCache", doc="paged value cache, laid out like keyCache"),
        TensorIn("blockTables", doc="cache block of each batch's i-th block [batch, maxBlocks]"),
        TensorIn("seqLens", doc="tokens per batch (cumulative when isSeqLensCumsum)"),
        TensorRef("keyRef", ctype="aclTensor *", doc="gathered keys, written in place [tokens, heads, headSize]"),
        TensorRef("valueRef", ctype="aclTensor *", doc="gathered values, written in place"),
        TensorIn("seqOffsetOptional", optional=True, doc="first cached token of each batch (None: 0)"),
        String("cacheMode", optional=True, values=CACHE_MODES, doc="cache layout (None: Norm)"),
        Bool(
            "isSeqLensCumsum",
            default=False,
            doc="seqLens holds cumulative lengths (batch + 1 entries) rather than lengths",
        ),
    ],
    defaults_from="torch_npu.npu_gather_pa_kv_cache",
)


ND, NZ = Format.ACL_FORMAT_ND, Format.ACL_FORMAT_FRACTAL_NZ


I32, I64 = DataType.ACL_INT32, DataType.ACL_INT64
