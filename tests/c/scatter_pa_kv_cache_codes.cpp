// aclnnScatterPaKvCache status codes through the C ABI: one "<rule> <code>" line per case.
// The chip comes from ACLNN_EMU_SOC; tests/test_scatter_pa_kv_cache_cabi.py holds the codes per chip.
#include <string>

#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

namespace {
TensorPool T;
aclrtStream g_stream;

struct Args {
    aclTensor *key, *keyCache, *slots, *value, *valueCache;
    aclTensor *compressLens = nullptr, *compressSeqOffset = nullptr, *seqLens = nullptr;
    const char *cacheMode = nullptr, *scatterMode = nullptr;
    aclIntArray *strides = nullptr, *offsets = nullptr;
};

// Both phases and a synchronisation; the first non-zero code.
int Call(const Args &a) {
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnScatterPaKvCacheGetWorkspaceSize(
        a.key, a.keyCache, a.slots, a.value, a.valueCache, a.compressLens, a.compressSeqOffset, a.seqLens,
        const_cast<char *>(a.cacheMode), const_cast<char *>(a.scatterMode), a.strides, a.offsets, &workspaceSize,
        &executor);
    if (ret != 0) return ret;
    void *workspace = nullptr;
    if (workspaceSize > 0 && aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) != 0) return -1;
    ret = aclnnScatterPaKvCache(workspace, workspaceSize, executor, g_stream);
    if (ret == 0) ret = aclrtSynchronizeStream(g_stream);
    if (workspace) aclrtFree(workspace);
    return ret;
}

// key/value [4, 2, 16], caches [2, 4, 2, 16], slots 0..3: valid Normal mode on every chip.
Args Normal(aclDataType kv = ACL_FLOAT16, aclDataType index = ACL_INT32) {
    Args a;
    a.key = T({4, 2, 16}, kv);
    a.keyCache = T({2, 4, 2, 16}, kv);
    a.slots = T({4}, index);
    a.value = T({4, 2, 16}, kv);
    a.valueCache = T({2, 4, 2, 16}, kv);
    return a;
}

// PA_NZ: key/value [4, 2, 32] fp16, caches [2, 4, 16, 16].
Args Nz() {
    Args a;
    a.key = T({4, 2, 32}, ACL_FLOAT16);
    a.keyCache = T({2, 4, 16, 16}, ACL_FLOAT16);
    a.slots = T({4}, ACL_INT32, {3, 17, 0, 30});
    a.value = T({4, 2, 32}, ACL_FLOAT16);
    a.valueCache = T({2, 4, 16, 16}, ACL_FLOAT16);
    a.cacheMode = "PA_NZ";
    return a;
}

// A2 compress modes: 2 batches of 3 tokens, 2 heads of 16, caches [4, 8, 1, 16].
Args Compress(const char *mode, aclDataType kv = ACL_FLOAT16, int64_t head = 16) {
    Args a;
    a.key = T({6, 2, head}, kv);
    a.keyCache = T({4, 8, 1, head}, kv);
    a.slots = T({4}, ACL_INT32, {0, 8, 16, 24});
    a.value = T({6, 2, head}, kv);
    a.valueCache = T({4, 8, 1, head}, kv);
    a.compressLens = T({4}, ACL_INT32, {1});
    a.seqLens = T({2}, ACL_INT32, {3});
    if (std::string(mode) != "Alibi") a.compressSeqOffset = T({4}, ACL_INT32, {0});
    a.scatterMode = mode;
    return a;
}

// arch35 compress modes: key/value FLOAT [2, 3, 2, 8], caches [4, 4, 1, 8], slots [2, 2].
Args Compress95(bool rope) {
    Args a;
    a.key = T({2, 3, 2, 8}, ACL_FLOAT);
    a.keyCache = T({4, 4, 1, 8}, ACL_FLOAT);
    a.slots = T({2, 2}, ACL_INT32, {0, 4, 8, 12});
    a.value = T({2, 3, 2, 8}, ACL_FLOAT);
    a.valueCache = T({4, 4, 1, 8}, ACL_FLOAT);
    a.compressLens = T({2, 2}, ACL_INT32, {1});
    a.seqLens = T({2}, ACL_INT32, {3, 2});
    if (rope) a.compressSeqOffset = T({4}, ACL_INT32, {0});
    return a;
}
}  // namespace

int main() {
    CHECK_OK(SetUp(&g_stream));
    int64_t stride32[] = {32, 32}, zero2[] = {0, 0}, one[] = {32};
    aclIntArray *strides = aclCreateIntArray(stride32, 2), *offsets = aclCreateIntArray(zero2, 2);
    aclIntArray *shortStrides = aclCreateIntArray(one, 1);
    Args a;

    // -- valid calls
    REPORT("ok.normal", Call(Normal()));
    a = Normal(); a.key = T({4, 2, 16}, ACL_FLOAT16, {}, ACL_FORMAT_NCHW);
    REPORT("ok.normal_nchw_is_nd", Call(a));
    REPORT("ok.normal_int64_slots", Call(Normal(ACL_FLOAT16, ACL_INT64)));
    REPORT("ok.nz", Call(Nz()));
    // 5-D NZ caches [blocks, heads, D / last, blockSize, last] (branch 9.1.0 on Atlas A2/A3)
    a = Nz(); a.keyCache = T({2, 2, 2, 16, 16}, ACL_FLOAT16); a.valueCache = T({2, 2, 2, 16, 16}, ACL_FLOAT16);
    REPORT("ok.nz_5d", Call(a));
    a = Normal(); a.value = T({}, ACL_FLOAT16); a.valueCache = T({}, ACL_FLOAT16);
    REPORT("ok.key_only", Call(a));
    a = Normal(); a.scatterMode = "Nct"; a.strides = strides; a.offsets = offsets;
    REPORT("ok.nct", Call(a));
    REPORT("ok.alibi", Call(Compress("Alibi")));
    REPORT("ok.rope", Call(Compress("Rope")));
    REPORT("ok.omni", Call(Compress("Omni")));
    a = Normal(); a.scatterMode = "Foo"; REPORT("mode.unknown_scatter_mode", Call(a));
    a = Normal(); a.cacheMode = "ND"; REPORT("mode.unknown_cache_mode", Call(a));
    a = Normal(); a.scatterMode = "NHSD"; REPORT("mode.nhsd", Call(a));
    // NHSD caches [blocks, heads, blockSize, D] (branch 9.1.0's template on Atlas A2/A3)
    a = Normal(); a.scatterMode = "NHSD"; a.keyCache = T({2, 2, 4, 16}, ACL_FLOAT16);
    a.valueCache = T({2, 2, 4, 16}, ACL_FLOAT16); REPORT("mode.nhsd_caches", Call(a));
    REPORT("ok.alibi_4d", Call(Compress95(false)));
    REPORT("ok.rope_4d", Call(Compress95(true)));
    a = Normal(ACL_FLOAT); a.keyCache = T({0, 4, 2, 16}, ACL_FLOAT); a.valueCache = T({0, 4, 2, 16}, ACL_FLOAT);
    REPORT("ok.empty_caches_before_lookup", Call(a));
    REPORT("ok.mixed_int8_key_fp16_value", [] {
        Args m = Normal(ACL_INT8); m.value = T({4, 2, 16}, ACL_FLOAT16); m.valueCache = T({2, 4, 2, 16}, ACL_FLOAT16);
        return Call(m);
    }());

    // -- required nulls, in prototype order
    a = Normal(); a.key = nullptr; REPORT("null.key", Call(a));
    a = Normal(); a.keyCache = nullptr; REPORT("null.keyCacheRef", Call(a));
    a = Normal(); a.slots = nullptr; REPORT("null.slotMapping", Call(a));
    a = Normal(); a.value = nullptr; REPORT("null.value", Call(a));
    a = Normal(); a.valueCache = nullptr; REPORT("null.valueCacheRef", Call(a));

    // -- kernel lookup: required I/O off the registered combinations, optional ones
    REPORT("dtype.float_key", Call(Normal(ACL_FLOAT)));
    REPORT("dtype.hifloat8", Call(Normal(ACL_HIFLOAT8)));
    a = Normal(); a.keyCache = T({2, 4, 2, 16}, ACL_BF16); REPORT("dtype.key_cache_differs", Call(a));
    a = Normal(); a.valueCache = T({2, 4, 2, 16}, ACL_BF16); REPORT("dtype.value_cache_differs", Call(a));
    a = Normal(); a.value = T({4, 2, 16}, ACL_INT8); a.valueCache = T({2, 4, 2, 16}, ACL_INT8);
    REPORT("dtype.fp16_key_int8_value", Call(a));
    REPORT("dtype.slot_int16", Call(Normal(ACL_FLOAT16, ACL_INT16)));
    a = Nz(); a.keyCache = T({2, 4, 16, 16}, ACL_FLOAT16, {}, ACL_FORMAT_FRACTAL_NZ);
    REPORT("format.key_cache_fractal_nz", Call(a));
    a = Normal(); a.key = T({4, 2, 16}, ACL_FLOAT16, {}, ACL_FORMAT_FRACTAL_NZ);
    REPORT("format.key_fractal_nz", Call(a));
    a = Compress("Alibi"); a.compressLens = T({4}, ACL_INT64, {1}); REPORT("optional.compress_lens_int64", Call(a));
    a = Compress("Alibi"); a.seqLens = T({2}, ACL_FLOAT); REPORT("optional.seq_lens_float", Call(a));

    // -- A2/A3 Membase tiling
    a = Normal(); a.key = T({1, 4, 2, 16}, ACL_FLOAT16); REPORT("tiling.key_rank", Call(a));
    a = Normal(); a.keyCache = T({8, 2, 16}, ACL_FLOAT16); REPORT("tiling.key_cache_rank", Call(a));
    a = Normal(); a.slots = T({4, 1}, ACL_INT32); REPORT("tiling.slot_rank", Call(a));
    a = Normal(); a.value = T({4, 32}, ACL_FLOAT16); REPORT("tiling.value_rank", Call(a));
    a = Normal(); a.valueCache = T({8, 2, 16}, ACL_FLOAT16); REPORT("tiling.value_cache_rank", Call(a));
    a = Normal(); a.value = T({4, 1, 32}, ACL_FLOAT16); a.valueCache = T({2, 4, 1, 32}, ACL_FLOAT16);
    REPORT("tiling.kv_dims", Call(a));
    a = Normal(); a.valueCache = T({2, 8, 2, 16}, ACL_FLOAT16); REPORT("tiling.cache_dims", Call(a));
    a = Nz(); a.valueCache = T({2, 4, 8, 16}, ACL_FLOAT16); REPORT("tiling.nz_cache_dims", Call(a));
    a = Normal(); a.key = T({0, 2, 16}, ACL_FLOAT16); a.value = T({0, 2, 16}, ACL_FLOAT16); a.slots = T({0}, ACL_INT32);
    REPORT("tiling.zero_tokens", Call(a));
    a = Normal(); a.value = T({4, 2, 0}, ACL_FLOAT16); a.valueCache = T({2, 4, 2, 0}, ACL_FLOAT16);
    REPORT("tiling.zero_value_head", Call(a));
    a = Normal(); a.keyCache = T({1, 2, 2, 16}, ACL_FLOAT16); a.valueCache = T({1, 2, 2, 16}, ACL_FLOAT16);
    REPORT("tiling.cache_capacity", Call(a));
    a = Nz(); a.keyCache = T({2, 3, 16, 16}, ACL_FLOAT16); REPORT("tiling.nz_dim1", Call(a));
    a = Nz(); a.keyCache = T({2, 4, 16, 8}, ACL_FLOAT16); REPORT("tiling.nz_dim3", Call(a));
    a = Nz(); a.key = T({4, 2, 8}, ACL_FLOAT16); a.value = T({4, 2, 8}, ACL_FLOAT16);
    a.keyCache = T({2, 1, 16, 16}, ACL_FLOAT16); a.valueCache = T({2, 1, 16, 16}, ACL_FLOAT16);
    REPORT("tiling.nz_align", Call(a));
    a = Compress("Alibi"); a.compressLens = T({2, 2}, ACL_INT32, {1}); REPORT("tiling.compress_rank", Call(a));
    a = Compress("Alibi"); a.compressLens = nullptr; REPORT("tiling.compress_null", Call(a));
    a = Compress("Rope"); a.seqLens = T({0}, ACL_INT32); REPORT("tiling.no_batches", Call(a));
    a = Normal(); a.scatterMode = "Nct"; a.strides = shortStrides; REPORT("tiling.nct_short_strides", Call(a));
    a = Normal(ACL_INT8); a.scatterMode = "Nct"; REPORT("no_kernel.int8_nct", Call(a));
    REPORT("no_kernel.int8_rope", Call(Compress("Rope", ACL_INT8, 32)));
    REPORT("unestablished.short_rows", Call(Compress("Alibi", ACL_FLOAT16, 8)));
    REPORT("ok.rows_of_one_and_a_half_blocks", Call(Compress("Rope", ACL_FLOAT16, 24)));
    a = Compress("Rope"); a.compressSeqOffset = nullptr; REPORT("kernel.rope_without_offsets", Call(a));

    // -- arch35 arch35 tiling
    a = Compress95(true); a.value = T({6, 2, 8}, ACL_FLOAT); REPORT("tiling95.kv_rank", Call(a));
    a = Compress95(false); a.seqLens = nullptr; REPORT("tiling95.four_d_without_seq_lens", Call(a));
    a = Compress95(true); a.keyCache = T({2, 2, 2, 8}, ACL_FLOAT); REPORT("tiling95.rope_cache_dim2", Call(a));
    a = Compress95(true); a.compressSeqOffset = T({3}, ACL_INT32, {0}); REPORT("tiling95.rope_offsets_len", Call(a));
    a = Compress95(false); a.slots = T({2, 3}, ACL_INT32); REPORT("tiling95.alibi_slot_dim1", Call(a));
    a = Compress95(false); a.value = T({2, 3, 1, 8}, ACL_FLOAT); REPORT("tiling95.alibi_value_dim2", Call(a));
    // 2112 tokens of 8 x 128 floats do not fit in UB on 64 cores: slot_mapping must then be 1-D
    a.key = T({2112, 8, 128}, ACL_FLOAT); a.value = T({2112, 8, 128}, ACL_FLOAT);
    a.keyCache = T({17, 128, 8, 128}, ACL_FLOAT); a.valueCache = T({17, 128, 8, 128}, ACL_FLOAT);
    a.slots = T({2112, 1}, ACL_INT32); a.compressLens = nullptr; a.seqLens = nullptr; a.compressSeqOffset = nullptr;
    REPORT("tiling95.slot_2d_not_fully_loaded", Call(a));

    aclDestroyIntArray(strides);
    aclDestroyIntArray(offsets);
    aclDestroyIntArray(shortStrides);
    T.Clear();
    TearDown(g_stream);
    return 0;
}
