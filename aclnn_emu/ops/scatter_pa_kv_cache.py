"""aclnnScatterPaKvCache (attention/scatter_pa_kv_cache, CANN 8.5; generated aclnn)."""
from .signature import IntArrayIn, Op, String, TensorIn

OP = Op("ScatterPaKvCache", "aclnn_scatter_pa_kv_cache.h", [
    TensorIn("key"), TensorIn("keyCacheRef"), TensorIn("slotMapping"), TensorIn("value"),
    TensorIn("valueCacheRef"), TensorIn("compressLensOptional", optional=True),
    TensorIn("compressSeqOffsetOptional", optional=True), TensorIn("seqLensOptional", optional=True),
    String("cacheModeOptional"), String("scatterModeOptional"),
    IntArrayIn("stridesOptional", optional=True), IntArrayIn("offsetsOptional", optional=True),
])
