// aclnnGatherPaKvCache status codes through the C ABI: one "<rule> <code>" line per case, and the
// workspace sizes. The chip comes from ACLNN_EMU_SOC; tests/test_gather_pa_kv_cache_cabi.py holds
// the codes per chip.
#include "aclnnop/aclnn_gather_pa_kv_cache.h"
#include "common.h"

namespace {
TensorPool T;
aclrtStream g_stream;

struct Args {
    aclTensor *keyCache, *valueCache, *tables, *seqLens, *key, *value, *seqOffset = nullptr;
    const char *cacheMode = "Norm";
    bool cumsum = false;
};

uint64_t g_workspace = 0;

// Both phases and a synchronisation; the first non-zero code.
int Call(const Args &a) {
    aclOpExecutor *executor = nullptr;
    int ret = aclnnGatherPaKvCacheGetWorkspaceSize(a.keyCache, a.valueCache, a.tables, a.seqLens, a.key, a.value,
                                                   a.seqOffset, const_cast<char *>(a.cacheMode), a.cumsum,
                                                   &g_workspace, &executor);
    if (ret != 0) return ret;
    void *workspace = nullptr;
    if (g_workspace > 0 && aclrtMalloc(&workspace, g_workspace, ACL_MEM_MALLOC_HUGE_FIRST) != 0) return -1;
    ret = aclnnGatherPaKvCache(workspace, g_workspace, executor, g_stream);
    if (ret == 0) ret = aclrtSynchronizeStream(g_stream);
    if (workspace) aclrtFree(workspace);
    return ret;
}

// Norm: 2 batches of 5 and 9 tokens, caches [4 blocks, 8, 2 heads, 16 | 32], seqOffset 0 and 8.
Args Norm(aclDataType data = ACL_FLOAT16, aclDataType index = ACL_INT32, aclFormat cacheFormat = ACL_FORMAT_ND) {
    Args a;
    a.keyCache = T({4, 8, 2, 16}, data, {}, cacheFormat);
    a.valueCache = T({4, 8, 2, 32}, data, {}, cacheFormat);
    a.tables = T({2, 3}, index, {0, 1, 2, 3, 0, 1});
    a.seqLens = T({2}, index, {5, 9});
    a.key = T({14, 2, 16}, data);
    a.value = T({14, 2, 32}, data);
    a.seqOffset = T({2}, index, {0, 8});
    return a;
}

// PA_NZ: the same tokens in 32-byte pieces, caches [4, H*D/16, 8, 16] fp16.
Args Nz(aclFormat cacheFormat) {
    Args a = Norm(ACL_FLOAT16, ACL_INT32, cacheFormat);
    a.keyCache = T({4, 2, 8, 16}, ACL_FLOAT16, {}, cacheFormat);
    a.valueCache = T({4, 4, 8, 16}, ACL_FLOAT16, {}, cacheFormat);
    a.key = T({14, 32}, ACL_FLOAT16);
    a.value = T({14, 64}, ACL_FLOAT16);
    a.seqOffset = nullptr;
    a.cacheMode = "PA_NZ";
    return a;
}
}  // namespace

int main() {
    CHECK_OK(SetUp(&g_stream));
    const aclFormat ND = ACL_FORMAT_ND, FNZ = ACL_FORMAT_FRACTAL_NZ;
    Args a;

    // -- valid calls, and the workspace each chip's tiling asks for
    REPORT("ok.norm", Call(Norm()));
    REPORT("workspace.norm", g_workspace);
    REPORT("ok.norm_cumsum", [] { Args c = Norm(); c.seqLens = T({3}, ACL_INT32, {0, 5, 14}); c.cumsum = true;
                                  return Call(c); }());
    a = Norm(); a.seqOffset = nullptr; REPORT("ok.no_seq_offset", Call(a));
    a = Norm(); a.cacheMode = nullptr; REPORT("ok.null_cache_mode_is_norm", Call(a));
    a = Norm(); a.keyCache = T({4, 8, 2, 16}, ACL_FLOAT16, {}, ACL_FORMAT_NCHW); REPORT("ok.nchw_is_nd", Call(a));
    REPORT("ok.int8", Call(Norm(ACL_INT8)));
    REPORT("ok.nz_nd_caches", Call(Nz(ND)));
    REPORT("ok.nz_fractal_nz_caches", Call(Nz(FNZ)));
    a = Norm(ACL_FLOAT); a.key = T({0, 2, 16}, ACL_FLOAT); a.value = T({0, 2, 32}, ACL_FLOAT);
    REPORT("ok.empty_outputs_before_lookup", Call(a));

    // -- required nulls, in prototype order
    a = Norm(); a.keyCache = nullptr; REPORT("null.keyCache", Call(a));
    a = Norm(); a.valueCache = nullptr; REPORT("null.valueCache", Call(a));
    a = Norm(); a.tables = nullptr; REPORT("null.blockTables", Call(a));
    a = Norm(); a.seqLens = nullptr; REPORT("null.seqLens", Call(a));
    a = Norm(); a.key = nullptr; REPORT("null.keyRef", Call(a));
    a = Norm(); a.value = nullptr; REPORT("null.valueRef", Call(a));

    // -- kernel lookup
    REPORT("dtype.float", Call(Norm(ACL_FLOAT)));
    REPORT("dtype.hifloat8", Call(Norm(ACL_HIFLOAT8)));
    a = Norm(); a.keyCache = T({4, 8, 2, 16}, ACL_BF16); REPORT("dtype.key_cache_differs", Call(a));
    a = Norm(); a.value = T({14, 2, 32}, ACL_BF16); REPORT("dtype.value_ref_differs", Call(a));
    REPORT("dtype.int64_indices", Call(Norm(ACL_FLOAT16, ACL_INT64)));
    a = Norm(); a.seqLens = T({2}, ACL_INT64, {5, 9}); REPORT("dtype.mixed_indices", Call(a));
    a = Norm(); a.seqOffset = T({2}, ACL_INT64, {0, 8}); REPORT("optional.seq_offset_int64", Call(a));
    a = Norm(); a.seqOffset = T({2}, ACL_FLOAT); REPORT("optional.seq_offset_float", Call(a));
    a = Norm(); a.key = T({14, 2, 16}, ACL_FLOAT16, {}, FNZ); REPORT("format.key_ref_fractal_nz", Call(a));
    a = Norm(); a.tables = T({2, 3}, ACL_INT32, {0}, FNZ); REPORT("format.block_tables_fractal_nz", Call(a));
    a = Nz(FNZ); a.valueCache = T({4, 4, 8, 16}, ACL_FLOAT16); REPORT("format.caches_differ", Call(a));

    // -- the cache mode (A2/A3: exact "Norm" or "PA_NZ"; arch35: "" reads as Norm)
    a = Norm(); a.cacheMode = "Bogus"; REPORT("tiling.cache_mode", Call(a));
    a = Norm(); a.cacheMode = ""; REPORT("tiling.cache_mode_empty", Call(a));
    a = Norm(); a.cacheMode = "norm"; REPORT("tiling.cache_mode_case", Call(a));

    // -- sizes the A2/A3 tiling requires positive (int32 of storage dims; a missing dim reads 0)
    a = Norm(); a.keyCache = T({4, 0, 2, 16}, ACL_FLOAT16); REPORT("tiling.blockSize", Call(a));
    a = Nz(ND); a.keyCache = T({4, 2, 0, 16}, ACL_FLOAT16); REPORT("tiling.blockSize_nz", Call(a));
    a = Norm(); a.tables = T({0, 3}, ACL_INT32); REPORT("tiling.numTokens", Call(a));
    a = Norm(); a.tables = T({2, 0}, ACL_INT32); REPORT("tiling.numblkTabCol", Call(a));
    a = Norm(); a.tables = T({6}, ACL_INT32); REPORT("tiling.numblkTabCol_missing", Call(a));
    a = Norm(); a.key = T({14, 2, 0}, ACL_FLOAT16); REPORT("tiling.tokenSizeK", Call(a));
    a = Norm(); a.key = T({14, 32}, ACL_FLOAT16); REPORT("tiling.tokenSizeK_missing", Call(a));
    a = Norm(); a.value = T({14, 0, 32}, ACL_FLOAT16); REPORT("tiling.tokenSizeV", Call(a));
    a = Nz(ND); a.value = T({14}, ACL_FLOAT16); REPORT("tiling.tokenSizeV_nz_missing", Call(a));

    // -- the arch35 tiling's shape checks, in its order (A2/A3 checks none of them)
    a = Norm(); a.keyCache = T({32, 2, 16}, ACL_FLOAT16); REPORT("t95.key_cache_rank", Call(a));
    a = Norm(); a.keyCache = T({0, 8, 2, 16}, ACL_FLOAT16); REPORT("t95.key_cache_dims", Call(a));
    a = Nz(FNZ); a.keyCache = T({4, 4, 8, 8}, ACL_FLOAT16, {}, FNZ); REPORT("t95.key_cache_nz_dim3", Call(a));
    a = Norm(ACL_FLOAT16, ACL_INT32, FNZ); REPORT("t95.key_cache_fractal_nz_in_norm", Call(a));
    a = Nz(ND); a.valueCache = T({4, 4, 8, 16}, ACL_FLOAT16); REPORT("t95.key_cache_nd_in_pa_nz", Call(a));
    a = Norm(); a.valueCache = T({32, 2, 32}, ACL_FLOAT16); REPORT("t95.value_cache_rank", Call(a));
    a = Nz(FNZ); a.valueCache = T({4, 8, 8, 8}, ACL_FLOAT16, {}, FNZ); REPORT("t95.value_cache_nz_dim3", Call(a));
    a = Norm(); a.valueCache = T({4, 4, 2, 32}, ACL_FLOAT16); REPORT("t95.value_cache_dims", Call(a));
    a = Nz(FNZ); a.valueCache = T({4, 4, 4, 16}, ACL_FLOAT16, {}, FNZ); REPORT("t95.value_cache_nz_dims", Call(a));
    a = Norm(); a.tables = T({2, 3, 1}, ACL_INT32, {0, 1, 2, 3, 0, 1}); REPORT("t95.block_tables_rank", Call(a));
    a = Norm(); a.seqLens = T({2, 1}, ACL_INT32, {5, 9}); REPORT("t95.seq_lens_rank", Call(a));
    a = Norm(); a.seqLens = T({3}, ACL_INT32, {5, 9, 0}); REPORT("t95.seq_lens_len", Call(a));
    a = Norm(); a.seqLens = T({2}, ACL_INT32, {0, 5}); a.cumsum = true; REPORT("t95.seq_lens_len_cumsum", Call(a));
    a = Norm(); a.key = T({14, 2, 16, 1}, ACL_FLOAT16); REPORT("t95.key_rank", Call(a));
    a = Norm(); a.key = T({0, 2, 16}, ACL_FLOAT16); REPORT("t95.key_dims", Call(a));
    a = Norm(); a.key = T({14, 1, 32}, ACL_FLOAT16); REPORT("t95.key_heads", Call(a));
    a = Nz(FNZ); a.key = T({14, 16}, ACL_FLOAT16); REPORT("t95.key_nz_hidden", Call(a));
    a = Norm(); a.value = T({14, 64}, ACL_FLOAT16); REPORT("t95.value_rank", Call(a));
    a = Norm(); a.value = T({13, 2, 32}, ACL_FLOAT16); REPORT("t95.value_tokens", Call(a));
    a = Norm(); a.value = T({14, 2, 16}, ACL_FLOAT16); REPORT("t95.value_dims", Call(a));
    a = Nz(FNZ); a.value = T({14, 32}, ACL_FLOAT16); REPORT("t95.value_nz_hidden", Call(a));
    a = Norm(); a.seqOffset = T({2, 1}, ACL_INT32, {0}); REPORT("t95.seq_offset_rank", Call(a));
    a = Norm(); a.seqOffset = T({3}, ACL_INT32, {0}); REPORT("t95.seq_offset_len", Call(a));

    // -- what the A2/A3 kernels do at run time
    // 10224 block-table columns leave no room for a batch in the PA_NZ kernel's locate buffer
    a = Nz(ND); a.tables = T({1, 10224}, ACL_INT32, {0}); a.seqLens = T({1}, ACL_INT32, {14});
    REPORT("kernel.nz_table_width", Call(a));
    a = Nz(ND); a.key = T({14, 76 * 1024}, ACL_FLOAT16); a.keyCache = T({4, 76 * 1024 / 16, 8, 16}, ACL_FLOAT16);
    REPORT("inferred.nz_token_over_148k", Call(a));

    T.Clear();
    TearDown(g_stream);
    return 0;
}
