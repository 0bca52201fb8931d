// aclnnPromptFlashAttentionV2 through the C ABI: one failing call per validation rule, plus valid
// baselines per layout and sparse mode. Prints "<rule> <status>"; the pytest asserts every code.
// With the argument "numerics" it instead runs one small fp16 BNSD case and prints the output.
#include <cmath>
#include <string>

#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "common.h"

struct Spec {
    std::vector<int64_t> shape;
    aclDataType dtype;
    aclFormat format;
};

static Spec T(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16, aclFormat format = ACL_FORMAT_ND) {
    return Spec{shape, dtype, format};
}

struct Case {
    bool hasQ = true, hasK = true, hasV = true, hasOut = true;
    Spec q = T({1, 2, 16, 32}), k = T({1, 2, 16, 32}), v = T({1, 2, 16, 32}), out = T({1, 2, 16, 32});
    bool hasMask = false, hasDeq1 = false, hasQuant1 = false, hasDeq2 = false, hasQuant2 = false, hasOffset2 = false;
    Spec mask = T({16, 16}, ACL_BOOL), deq1 = T({1}, ACL_UINT64), quant1 = T({1}, ACL_FLOAT),
         deq2 = T({1}, ACL_UINT64), quant2 = T({1}, ACL_FLOAT), offset2 = T({1}, ACL_FLOAT);
    std::vector<int64_t> actQ, actKv;
    bool hasActQ = false, hasActKv = false;
    int64_t heads = 2, kvHeads = 0, pre = 2147483647, next = 0, sparse = 0;
    double scale = 0.125;
    const char *layout = "BNSD";
    bool run = false;   // also run phase 2 and synchronise (valid baselines)
};

// Small scale/offset values for the quant tensors; other tensors are zero-filled.
static int Make(DeviceTensor &t, const Spec &s) {
    size_t n = ShapeSize(s.shape) * aclDataTypeSize(s.dtype);
    std::vector<uint8_t> host(n, 0);
    if (s.dtype == ACL_FLOAT || s.dtype == ACL_UINT64) {
        float one = 1.0f;
        for (size_t i = 0; i + 4 <= n; i += aclDataTypeSize(s.dtype)) memcpy(&host[i], &one, 4);
    }
    return t.Create(host, s.shape, s.dtype, s.format);
}

static int Call(const Case &c, aclrtStream stream) {
    DeviceTensor q, k, v, out, mask, deq1, quant1, deq2, quant2, offset2;
    if ((c.hasQ && Make(q, c.q)) || (c.hasK && Make(k, c.k)) || (c.hasV && Make(v, c.v)) ||
        (c.hasOut && Make(out, c.out)) || (c.hasMask && Make(mask, c.mask)) || (c.hasDeq1 && Make(deq1, c.deq1)) ||
        (c.hasQuant1 && Make(quant1, c.quant1)) || (c.hasDeq2 && Make(deq2, c.deq2)) ||
        (c.hasQuant2 && Make(quant2, c.quant2)) || (c.hasOffset2 && Make(offset2, c.offset2))) {
        return -1;
    }
    aclIntArray *actQ = c.hasActQ ? aclCreateIntArray(c.actQ.data(), c.actQ.size()) : nullptr;
    aclIntArray *actKv = c.hasActKv ? aclCreateIntArray(c.actKv.data(), c.actKv.size()) : nullptr;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    char *layout = c.layout ? const_cast<char *>(c.layout) : nullptr;
    int ret = aclnnPromptFlashAttentionV2GetWorkspaceSize(
        q.tensor, k.tensor, v.tensor, nullptr, mask.tensor, actQ, actKv, deq1.tensor, quant1.tensor, deq2.tensor,
        quant2.tensor, offset2.tensor, c.heads, c.scale, c.pre, c.next, layout, c.kvHeads, c.sparse, out.tensor,
        &workspaceSize, &executor);
    if (ret == 0 && c.run) {
        void *workspace = nullptr;
        if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        ret = aclnnPromptFlashAttentionV2(workspace, workspaceSize, executor, stream);
        if (ret == 0) ret = aclrtSynchronizeStream(stream);
        if (workspace) aclrtFree(workspace);
    }
    if (actQ) aclDestroyIntArray(actQ);
    if (actKv) aclDestroyIntArray(actKv);
    return ret;
}

static Case Bsh() {
    Case c;
    c.layout = "BSH";
    c.q = T({1, 16, 64}); c.k = T({1, 16, 64}); c.v = T({1, 16, 64}); c.out = T({1, 16, 64});
    return c;
}

static Case Int8Case() {
    Case c;
    c.q.dtype = c.k.dtype = c.v.dtype = ACL_INT8;
    c.hasDeq1 = c.hasQuant1 = c.hasDeq2 = true;
    return c;
}

static Case Masked(int64_t mode) {
    Case c;
    c.sparse = mode;
    c.hasMask = true;
    if (mode >= 2) c.mask = T({2048, 2048}, ACL_BOOL);
    return c;
}

// SH: two packed batches of 6 and 10 rows, H = 2 x 32.
static Case Sh() {
    Case c;
    c.layout = "SH";
    c.q = c.k = c.v = c.out = T({16, 64});
    c.hasActQ = c.hasActKv = true; c.actQ = {6, 10}; c.actKv = {6, 9};
    return c;
}

// TND (bf16, cumulative lengths): batches of 5 and 11 query rows, 7 and 13 key rows.
static Case Tnd(int64_t d = 64, int64_t dv = 64) {
    Case c;
    c.layout = "TND";
    c.q = T({16, 2, d}, ACL_BF16); c.k = T({20, 2, d}, ACL_BF16); c.v = T({20, 2, dv}, ACL_BF16);
    c.out = T({16, 2, dv}, ACL_BF16);
    c.hasActQ = c.hasActKv = true; c.actQ = {5, 16}; c.actKv = {7, 20};
    return c;
}

static Case TndMasked(int64_t mode) {
    Case c = Tnd();
    c.sparse = mode;
    c.hasMask = true; c.mask = T({2048, 2048}, ACL_BOOL);
    return c;
}

// sparseMode 20-22 (the base-API path): SH with per-batch lengths 6 + 10 (query), 5 + 11 (key).
static Case BaseApi(int64_t mode = 20) {
    Case c = Sh();
    c.sparse = mode;
    c.actKv = {5, 11};
    return c;
}

static int Numerics(aclrtStream stream) {
    const std::vector<int64_t> shape = {1, 2, 4, 16};
    std::vector<uint16_t> qk(ShapeSize(shape)), val(ShapeSize(shape));
    for (size_t i = 0; i < qk.size(); i++) {
        qk[i] = aclFloatToFloat16(static_cast<float>((static_cast<int>(i * 7 % 13) - 6) / 4.0));
        val[i] = aclFloatToFloat16(static_cast<float>(std::sin(0.37 * i)));
    }
    DeviceTensor q, k, v, out;
    CHECK_OK(q.Create(qk, shape, ACL_FLOAT16));
    CHECK_OK(k.Create(qk, shape, ACL_FLOAT16));
    CHECK_OK(v.Create(val, shape, ACL_FLOAT16));
    CHECK_OK(out.Create(shape, ACL_FLOAT16));
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    char layout[] = "BNSD";
    CHECK_OK(aclnnPromptFlashAttentionV2GetWorkspaceSize(q.tensor, k.tensor, v.tensor, nullptr, nullptr, nullptr,
                                                         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 2,
                                                         0.25, 2147483647, 0, layout, 0, 0, out.tensor,
                                                         &workspaceSize, &executor));
    CHECK_OK(aclnnPromptFlashAttentionV2(nullptr, 0, executor, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    std::vector<uint16_t> result;
    CHECK_OK(out.Read(result));
    for (uint16_t h : result) printf("%.8f\n", aclFloat16ToFloat(h));
    return 0;
}

int main(int argc, char **argv) {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    if (argc > 1 && std::string(argv[1]) == "numerics") {
        int ret = Numerics(stream);
        TearDown(stream);
        return ret;
    }
    Case c;
    // Valid baselines (both phases).
    c = Case(); c.run = true; REPORT("ok.BNSD", Call(c, stream));
    c = Bsh(); c.run = true; REPORT("ok.BSH", Call(c, stream));
    c = Case(); c.layout = "BSND"; c.q = c.k = c.v = c.out = T({1, 16, 2, 32}); c.run = true; REPORT("ok.BSND", Call(c, stream));
    c = Case(); c.layout = "BNSD_BSND"; c.out = T({1, 16, 2, 32}); c.run = true; REPORT("ok.BNSD_BSND", Call(c, stream));
    c = Case(); c.layout = "NSD"; c.q = c.k = c.v = c.out = T({2, 16, 32}); c.run = true; REPORT("ok.NSD", Call(c, stream));
    for (int64_t mode = 0; mode <= 4; mode++) {
        c = Masked(mode); c.run = true;
        REPORT(("ok.sparse" + std::to_string(mode)).c_str(), Call(c, stream));
    }
    c = Case(); c.heads = 4; c.kvHeads = 2; c.q = c.out = T({1, 4, 16, 32}); c.run = true; REPORT("ok.gqa", Call(c, stream));
    c = Int8Case(); c.run = true; REPORT("ok.int8", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = c.hasOffset2 = true; c.run = true; REPORT("ok.fp16_int8_out", Call(c, stream));
    c = Case(); c.hasActQ = c.hasActKv = true; c.actQ = {7}; c.actKv = {9, 3, 1}; c.run = true; REPORT("ok.actual_seq", Call(c, stream));
    c = Case(); c.k = c.v = T({1, 2, 0, 32}); c.run = true; REPORT("ok.empty_kv", Call(c, stream));
    c = Case(); c.out = T({1, 0, 16, 32}); c.q.dtype = ACL_FLOAT; REPORT("ok.empty_out_before_dtype", Call(c, stream));
    c = Sh(); c.run = true; REPORT("ok.SH", Call(c, stream));
    c = Sh(); c.hasActQ = c.hasActKv = false; c.run = true; REPORT("ok.SH_one_batch", Call(c, stream));
    c = Sh(); c.q = c.k = c.v = c.out = T({16, 48}); c.run = true; REPORT("ok.SH_padded_d", Call(c, stream));
    c = Tnd(); c.run = true; REPORT("ok.TND", Call(c, stream));
    c = TndMasked(3); c.run = true; REPORT("ok.TND_causal", Call(c, stream));
    c = TndMasked(4); c.pre = 3; c.next = 1; c.run = true; REPORT("ok.TND_band", Call(c, stream));
    c = Tnd(192, 128); c.run = true; REPORT("ok.TND_d192", Call(c, stream));
    c = Tnd(); c.k = c.v = T({0, 2, 64}, ACL_BF16); c.run = true; REPORT("ok.TND_empty_kv", Call(c, stream));
    c = Case(); c.q = c.k = T({1, 2, 16, 192}); c.v = c.out = T({1, 2, 16, 128}); c.run = true; REPORT("ok.mla_d192", Call(c, stream));
    c = Case(); c.v = c.out = T({1, 2, 16, 16}); c.run = true; REPORT("v2.d_gt_dv", Call(c, stream));
    // A one-row query (S1 = 1) on TilingV2 takes the decode mask: its batch must be B.
    c = Masked(1); c.q = c.out = T({2, 2, 1, 32}); c.k = c.v = T({2, 2, 16, 32}); c.mask = T({1, 1, 16}, ACL_BOOL);
    c.run = true; REPORT("v2.ifa_mask_batch", Call(c, stream));
    c = Masked(1); c.q = c.out = T({2, 2, 1, 32}); c.k = c.v = T({2, 2, 16, 32}); c.mask = T({2, 16}, ACL_BOOL);
    c.run = true; REPORT("v2.ifa_mask_2d", Call(c, stream));
    c = Masked(1); c.mask.dtype = ACL_FLOAT16; c.run = true; REPORT("v2.fp16_mask", Call(c, stream));
    // TilingV2 CheckQuant: a bf16 query's int8 scales are not refused with an INT8 output.
    c = Case(); c.q.dtype = c.k.dtype = c.v.dtype = ACL_BF16; c.out.dtype = ACL_INT8; c.hasQuant2 = c.hasDeq1 = true;
    c.run = true; REPORT("v2.bf16_int8_out_scales", Call(c, stream));
    // CheckPostQuantShape: [1] or qN x vD elements, offset of the same rank; no 32-element D rule.
    c = Case(); c.q = c.k = c.v = T({1, 2, 16, 16}); c.out = T({1, 2, 16, 16}, ACL_INT8); c.hasQuant2 = true;
    c.quant2 = T({2, 16}, ACL_FLOAT); c.run = true; REPORT("v2.quant2_per_channel_d16", Call(c, stream));
    // PreprocessQKVInput pads a 3-D quantScale2 with D (8 -> 16) and, before 8.5.0, a null quantOffset2 too.
    c = Case(); c.q = c.k = c.v = c.out = T({1, 2, 16, 8}); c.hasQuant2 = true; c.quant2 = T({2, 1, 8}, ACL_FLOAT);
    c.run = true; REPORT("v2.quant2_3d_null_offset", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2 = T({64}, ACL_FLOAT); REPORT("v2.quant2_1d_per_channel", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2 = T({1, 1}, ACL_FLOAT); REPORT("v2.quant2_one_2d", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = c.hasOffset2 = true; c.quant2 = T({2, 32}, ACL_FLOAT);
    c.offset2 = T({64}, ACL_FLOAT); REPORT("v2.quant2_offset_rank", Call(c, stream));
    // SetAndCheckHeadNumRatio: no group limit for the MLA D 192 / Dv 128.
    c = Case(); c.heads = 128; c.kvHeads = 1; c.q = T({1, 128, 4, 192}); c.out = T({1, 128, 4, 128});
    c.k = T({1, 1, 16, 192}); c.v = T({1, 1, 16, 128}); c.run = true; REPORT("v2.mla_group", Call(c, stream));
    // SetSparseModeData: a one-row query with a mask (enableIFA) opens the token window.
    c = Masked(0); c.q = c.out = T({2, 2, 1, 32}); c.k = c.v = T({2, 2, 16, 32}); c.mask = T({2, 16}, ACL_BOOL);
    c.pre = -3; c.next = -3; c.run = true; REPORT("v2.ifa_mask_tokens", Call(c, stream));
    // Kernel selection among the arch35 binaries (portability rules there).
    c = Int8Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.run = true; REPORT("v2.int8_int8_out", Call(c, stream));
    c = Int8Case(); c.q = c.out = T({1, 2, 1, 256}, ACL_INT8); c.out.dtype = ACL_FLOAT16; c.k = c.v = T({1, 2, 16, 256}, ACL_INT8);
    c.run = true; REPORT("v2.int8_decode_d256", Call(c, stream));
    c = Tnd(192, 192); c.actQ = {8, 16}; c.run = true; REPORT("v2.bf16_tnd_merge", Call(c, stream));
    c = BaseApi(20); c.run = true; REPORT("ok.sparse20", Call(c, stream));
    // CheckBaseApiPse: without a pseShift (V2 passes none) only sparseMode 20 runs
    c = BaseApi(21); REPORT("base_api.sparse21_without_pse", Call(c, stream));
    c = BaseApi(22); REPORT("base_api.sparse22_without_pse", Call(c, stream));

    // op_api: null checks (161001).
    c = Case(); c.hasQ = false; REPORT("null.query", Call(c, stream));
    c = Case(); c.hasK = false; REPORT("null.key", Call(c, stream));
    c = Case(); c.hasV = false; REPORT("null.value", Call(c, stream));
    c = Case(); c.hasOut = false; REPORT("null.attentionOut", Call(c, stream));
    c = Case(); c.layout = nullptr; REPORT("null.inputLayout", Call(c, stream));
    // op_api: dtypes (161002).
    c = Case(); c.k.dtype = ACL_BF16; REPORT("dtype.qkv_same", Call(c, stream));
    c = Case(); c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = ACL_FLOAT; REPORT("dtype.query", Call(c, stream));
    c = Case(); c.out.dtype = ACL_BF16; REPORT("dtype.attentionOut", Call(c, stream));
    c = Masked(1); c.mask.dtype = ACL_FLOAT; REPORT("dtype.attenMask", Call(c, stream));
    c = Int8Case(); c.hasMask = true; c.mask.dtype = ACL_FLOAT16; c.sparse = 1; REPORT("dtype.attenMask_int8", Call(c, stream));
    // op_api: shape analysis (161002).
    c = Case(); c.heads = 0; REPORT("shape.numHeads", Call(c, stream));
    c = Case(); c.k = T({1, 16, 64}); REPORT("shape.qkv_rank", Call(c, stream));
    c = Case(); c.q = c.k = c.v = T({1, 16, 64}); REPORT("shape.layout_rank", Call(c, stream));
    c = Case(); c.layout = ""; REPORT("shape.layout_empty", Call(c, stream));
    c = Case(); c.layout = "XYZW"; REPORT("shape.layout", Call(c, stream));
    c = Bsh(); c.heads = 128; REPORT("shape.d_zero", Call(c, stream));
    c = Case(); c.q = c.k = c.v = c.out = T({1, 2, 16, 520}); REPORT("shape.d_max", Call(c, stream));
    c = Case(); c.v = T({1, 2, 16, 16}); c.out = T({1, 2, 16, 16}, ACL_INT8); c.hasQuant2 = true; REPORT("shape.d_gt_dv_int8", Call(c, stream));
    c = Case(); c.q = c.k = c.v = c.out = T({1, 2, 16, 24}); c.q.format = ACL_FORMAT_FRACTAL_NZ; REPORT("format.nd", Call(c, stream));
    // Tiling, infershape and kernel selection (561103).
    c = Bsh(); c.q = c.out = T({1, 16, 8, 8}); c.k = c.v = T({1, 16, 8, 8}); c.layout = "BSH"; REPORT("infershape.bsh_rank", Call(c, stream));
    c = Case(); c.k = T({1, 2, 16, 16}); REPORT("d.equal", Call(c, stream));
    c = Bsh(); c.q = c.out = T({1, 4, 16, 16}); c.k = c.v = T({1, 4, 16, 16}); REPORT("infershape.bsh_nz", Call(c, stream));
    // sparseMode 20-22: CheckBaseApiRequiredInput / CheckBaseApiOptionalInput (561103).
    c = BaseApi(); c.k = c.v = T({0, 64}); REPORT("base_api.empty", Call(c, stream));
    c = BaseApi(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; REPORT("base_api.fp16_dtypes", Call(c, stream));
    c = BaseApi(); c.q.dtype = c.k.dtype = c.v.dtype = ACL_BF16; c.out.dtype = ACL_INT8; c.hasQuant2 = true;
    REPORT("base_api.bf16_dtypes", Call(c, stream));
    c = BaseApi(); c.hasMask = true; c.mask = T({16, 16}, ACL_BOOL); REPORT("base_api.mask", Call(c, stream));
    c = Case(); c.layout = "BNSDX"; c.sparse = 20; REPORT("base_api.layout", Call(c, stream));
    c = Case(); c.layout = "NSD"; c.q = c.k = c.v = c.out = T({2, 16, 32}); c.sparse = 20; REPORT("base_api.nsd_not_sh", Call(c, stream));
    c = Bsh(); c.sparse = 22; REPORT("base_api.sh_only", Call(c, stream));
    c = BaseApi(); c.hasActKv = false; REPORT("base_api.actual_null", Call(c, stream));
    c = BaseApi(); c.q.dtype = c.k.dtype = c.v.dtype = ACL_INT8; c.hasDeq1 = c.hasQuant1 = c.hasDeq2 = true;
    REPORT("base_api.int8_kernel", Call(c, stream));
    c = BaseApi(); c.actKv = {5, 12}; REPORT("base_api.lengths_fit", Call(c, stream));
    c = BaseApi(); c.q = c.out = T({20, 576}); c.k = c.v = T({22, 576}); c.run = true;
    REPORT("ok.base_api_mla_uneven", Call(c, stream));
    c = BaseApi(); c.actQ = {8, 8}; c.actKv = {8, 8}; c.q = c.k = c.v = c.out = T({16, 576}); c.run = true;
    REPORT("ok.base_api_mla", Call(c, stream));
    c = BaseApi(); c.actQ = {8, 8}; c.actKv = {8}; c.q = c.k = c.v = c.out = T({16, 576});
    REPORT("base_api.mla_lengths_read", Call(c, stream));
    c = BaseApi(); c.actQ = {8, 8}; c.actKv = {8}; c.v = T({16, 128}); REPORT("base_api.sh_dv", Call(c, stream));
    c = Case(); c.sparse = 20; c.q = c.k = c.v = c.out = T({1, 2, 16, 288}); c.run = true; REPORT("ok.base_api_mla_bnsd", Call(c, stream));
    c = BaseApi(); c.actQ = c.actKv = {8, 8, 8}; c.q = c.k = c.v = c.out = T({16, 576}); REPORT("base_api.lengths_fit_mla", Call(c, stream));
    c = Masked(1); c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = ACL_BF16; c.mask.dtype = ACL_FLOAT16; REPORT("mask.bf16_dtype", Call(c, stream));
    c = Int8Case(); c.hasQuant2 = true; REPORT("quant.int8_fp16_out", Call(c, stream));
    c = Case(); c.q = T({1, 2, 0, 32}); REPORT("shape.query_empty", Call(c, stream));
    c = Case(); c.layout = "BNSDX"; REPORT("shape.layout_exact", Call(c, stream));
    // NTD (query [N, T, D]): the 9.x op_api reads it, the A2/A3 tiling does not know it.
    c = Tnd(); c.layout = "NTD"; c.q = c.out = T({2, 16, 64}, ACL_BF16); c.k = c.v = T({2, 20, 64}, ACL_BF16);
    REPORT("release.ntd", Call(c, stream));
    c = Case(); c.k = c.v = T({1, 2, 0, 32}); c.q.dtype = c.k.dtype = c.v.dtype = ACL_INT8; c.out.dtype = ACL_FLOAT16;
    REPORT("empty.int8", Call(c, stream));
    c = Case(); c.k = c.v = T({1, 300, 0, 32}); c.q = c.out = T({1, 300, 16, 32}); c.heads = 300; REPORT("empty.n", Call(c, stream));
    c = Int8Case(); c.hasQuant1 = false; REPORT("quant.int8_scales_null", Call(c, stream));
    c = Int8Case(); c.deq2 = T({0}, ACL_UINT64); REPORT("quant.int8_scales_empty", Call(c, stream));
    c = Case(); c.kvHeads = -1; REPORT("heads.negative", Call(c, stream));
    c = Case(); c.heads = 300; c.q = c.out = T({1, 300, 16, 32}); REPORT("heads.max", Call(c, stream));
    c = Case(); c.heads = 4; c.q = c.out = T({1, 2, 16, 32}); c.q = T({1, 2, 16, 32}); REPORT("heads.query", Call(c, stream));
    c = Case(); c.kvHeads = 1; REPORT("heads.key", Call(c, stream));
    c = Case(); c.heads = 3; c.kvHeads = 2; c.q = c.out = T({1, 3, 16, 32}); REPORT("heads.divisible", Call(c, stream));
    c = Case(); c.heads = 130; c.kvHeads = 2; c.q = c.out = T({1, 130, 16, 32}); REPORT("heads.group", Call(c, stream));
    c = Case(); c.k = c.v = T({2, 2, 16, 32}); REPORT("batch.equal", Call(c, stream));
    // SH (the A2/A3 tiling; 561103).
    c = Sh(); c.hasActKv = false; REPORT("sh.batch_equal", Call(c, stream));
    c = Sh(); c.actQ.assign(129, 0); c.actQ[0] = 16; c.actKv.assign(129, 0); REPORT("batch.sh_max", Call(c, stream));
    c = Sh(); c.k = c.v = T({12, 64}); c.hasActKv = false; c.hasActQ = false; REPORT("sh.q_kv_diff", Call(c, stream));
    c = Sh(); c.actQ = {6, 9}; REPORT("sh.sum", Call(c, stream));
    c = Sh(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; REPORT("quant.sh_int8_out", Call(c, stream));
    c = Sh(); c.k = T({16, 48}); REPORT("sh.kv_hidden", Call(c, stream));
    // TND (the var-len checks; 561103).
    c = Tnd(); c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = ACL_INT8; c.out.dtype = ACL_FLOAT16;
    c.hasDeq1 = c.hasQuant1 = c.hasDeq2 = true; REPORT("io.tnd_int8", Call(c, stream));
    c = Tnd(); c.actQ.assign(4097, 16); c.actKv.assign(4097, 16); REPORT("tnd.actual_len_max", Call(c, stream));
    c = Tnd(); c.hasActKv = false; REPORT("tnd.actual_null", Call(c, stream));
    c = Tnd(); c.actQ.clear(); REPORT("tnd.actual_empty", Call(c, stream));
    c = Tnd(); c.actQ = {5, 15}; REPORT("tnd.query_t", Call(c, stream));
    c = Tnd(); c.actKv = {7, 17}; REPORT("tnd.key_t", Call(c, stream));
    c = Tnd(); c.v = T({20, 1, 64}, ACL_BF16); REPORT("tnd.kv_n", Call(c, stream));
    c = Tnd(); c.heads = 4; c.q = c.out = T({16, 2, 64}, ACL_BF16); REPORT("tnd.query_n", Call(c, stream));
    c = Tnd(); c.heads = 3; c.q = c.out = T({16, 3, 64}, ACL_BF16); REPORT("tnd.group", Call(c, stream));
    c = Tnd(96, 96); REPORT("tnd.d", Call(c, stream));
    c = Tnd(192, 192); c.heads = 4; c.kvHeads = 2; c.q = c.out = T({16, 4, 192}, ACL_BF16);
    REPORT("tnd.group_d192", Call(c, stream));
    c = Tnd(); c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = ACL_FLOAT16; REPORT("tnd.dtype", Call(c, stream));
    c = Tnd(); c.actKv = {3, 7, 20}; REPORT("tnd.actual_len_equal", Call(c, stream));
    c = Tnd(); c.actQ = {-1, 16}; REPORT("tnd.actual_negative", Call(c, stream));
    c = Tnd(); c.actKv = {9, 7, 20}; c.actQ = {5, 6, 16}; REPORT("tnd.actual_decreasing", Call(c, stream));
    c = TndMasked(1); REPORT("tnd.sparse_mode", Call(c, stream));
    c = Tnd(); c.hasMask = true; c.mask = T({16, 16}, ACL_BOOL); REPORT("tnd.mode0_mask", Call(c, stream));
    c = TndMasked(4); c.q = c.out = T({16, 2, 192}, ACL_BF16); c.k = c.v = T({20, 2, 192}, ACL_BF16); REPORT("tnd.band_dv", Call(c, stream));
    c = TndMasked(3); c.actKv = {4, 20}; REPORT("tnd.causal_s1_s2", Call(c, stream));
    c = TndMasked(4); c.pre = -6; c.next = 7; REPORT("tnd.band_tokens", Call(c, stream));
    c = Tnd(); c.next = -1; c.hasMask = false; c.sparse = 0; REPORT("ok.TND_tokens_ignored", Call(c, stream));
    c = Case(); c.q = c.k = c.v = c.out = T({2, 2, 16, 32}); c.hasActQ = true; c.actQ = {4, 4, 4}; c.q = c.k = c.v = c.out = T({4, 2, 16, 32});
    REPORT("actual_seq.actualSeqLengths_len", Call(c, stream));
    c = Case(); c.hasActQ = true; c.actQ = {17}; REPORT("actual_seq.query_range", Call(c, stream));
    c = Case(); c.hasActKv = true; c.actKv = {-1}; REPORT("actual_seq.key_range", Call(c, stream));
    c = Masked(1); c.mask = T({2, 2, 16, 16, 1}, ACL_BOOL); REPORT("mask.rank", Call(c, stream));
    c = Masked(1); c.mask = T({15, 16}, ACL_BOOL); REPORT("mask.shape", Call(c, stream));
    c = Masked(2); c.mask = T({16, 16}, ACL_BOOL); REPORT("mask.compressed_shape", Call(c, stream));
    c = Case(); c.sparse = 5; REPORT("sparse.mode", Call(c, stream));
    c = Masked(4); c.pre = -1; c.next = -1; REPORT("sparse.band_negative", Call(c, stream));
    c = Case(); c.sparse = 3; REPORT("sparse.mask_required", Call(c, stream));
    c = Masked(2); c.mask.dtype = ACL_FLOAT16; REPORT("sparse.mask_dtype", Call(c, stream));
    c = Masked(0); c.pre = -3; c.next = -3; REPORT("tokens.both_negative", Call(c, stream));
    c = Masked(0); c.pre = -5; c.next = 3; REPORT("tokens.order", Call(c, stream));
    c = Masked(0); c.pre = 40; c.next = -16; REPORT("tokens.next_vs_s1", Call(c, stream));
    c = Masked(0); c.pre = -16; c.next = 40; REPORT("tokens.pre_vs_s2", Call(c, stream));
    c = Masked(0); c.pre = -6; c.next = 40; c.hasActKv = true; c.actKv = {6}; REPORT("tokens.pre_vs_actual_kv", Call(c, stream));
    c = Masked(0); c.pre = 40; c.next = -6; c.hasActQ = true; c.actQ = {6}; REPORT("tokens.next_vs_actual_q", Call(c, stream));
    c = Masked(4); c.pre = -1; c.next = 5; c.out.dtype = ACL_INT8; c.hasQuant2 = true; REPORT("tokens.int8_band_negative", Call(c, stream));
    c = Masked(3); c.out.dtype = ACL_INT8; c.hasQuant2 = c.hasOffset2 = true; c.hasActKv = true; c.actKv = {8};
    REPORT("quant.offset_uncomputed_rows", Call(c, stream));
    c = Masked(4); c.pre = 5; c.next = -16; REPORT("tokens.band_next", Call(c, stream));
    c = Masked(4); c.pre = -16; c.next = 40; REPORT("tokens.band_pre", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.hasDeq1 = true; REPORT("quant.fp16_int8_out", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; REPORT("quant2.scale_null", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2 = T({0}, ACL_FLOAT); REPORT("quant2.scale_empty", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2 = T({2, 16}, ACL_FLOAT); REPORT("quant2.per_channel_align", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2.dtype = ACL_INT32; REPORT("quant2.scale_dtype", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = c.hasOffset2 = true; c.offset2.dtype = ACL_BF16; REPORT("quant2.offset_dtype", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2.dtype = ACL_BF16; REPORT("quant2.bf16_scale", Call(c, stream));
    c = Case(); c.q.dtype = c.k.dtype = c.v.dtype = ACL_BF16; c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2.dtype = ACL_FLOAT16;
    REPORT("quant2.fp16_scale", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = c.hasOffset2 = true; c.offset2 = T({2}, ACL_FLOAT); REPORT("quant2.offset_size", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2 = T({96}, ACL_FLOAT); REPORT("quant2.size", Call(c, stream));
    c = Int8Case(); c.deq1.dtype = ACL_FLOAT16; REPORT("kernel.deqScale1_dtype", Call(c, stream));
    c = Int8Case(); c.quant1.dtype = ACL_FLOAT16; REPORT("kernel.quantScale1_dtype", Call(c, stream));
    c = Case(); c.out.dtype = ACL_INT8; c.hasQuant2 = true; c.quant2.dtype = ACL_FLOAT16; REPORT("kernel.quantScale2_dtype", Call(c, stream));
    // After tiling: the output shape (161002).
    c = Case(); c.out = T({1, 2, 16, 16}); REPORT("out.shape", Call(c, stream));
    TearDown(stream);
    return 0;
}
