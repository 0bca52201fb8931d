// aclnnPromptFlashAttention (V1) and aclnnPromptFlashAttentionV3 through the C ABI: what each adds
// to or drops from the shared path (pseShift, innerPrecise), one call per rule. Prints
// "<rule> <status>"; the pytest asserts every code per chip family.
// With the argument "numerics" it runs one fp16 BNSD V3 call with a pseShift, an attenMask with a
// fully masked row and the innerPrecise given as the second argument, and prints the output.
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "op_case.h"

struct Case {
    Spec q{{1, 2, 16, 32}, ACL_FLOAT16}, k{{1, 2, 16, 32}, ACL_FLOAT16}, v{{1, 2, 16, 32}, ACL_FLOAT16};
    Spec out{{1, 2, 16, 32}, ACL_FLOAT16};
    Spec pse, mask;
    std::vector<int64_t> actQ, actKv;
    bool hasActQ = false, hasActKv = false;
    int64_t heads = 2, pre = 2147483647, next = 0, sparse = 0, innerPrecise = 1;
    const char *layout = "BNSD";
    Case() { pse.null = mask.null = true; }
};

static aclIntArray *Ints(bool has, const std::vector<int64_t> &v) {
    return has ? aclCreateIntArray(v.data(), v.size()) : nullptr;
}

static int CallV3(const Case &c, aclrtStream stream) {
    Tensors t;
    aclTensor *q = t.Make(c.q), *k = t.Make(c.k), *v = t.Make(c.v), *out = t.Make(c.out);
    aclTensor *pse = t.Make(c.pse), *mask = t.Make(c.mask);
    aclIntArray *actQ = Ints(c.hasActQ, c.actQ), *actKv = Ints(c.hasActKv, c.actKv);
    char *layout = const_cast<char *>(c.layout);
    int ret = RunPhases(
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnPromptFlashAttentionV3GetWorkspaceSize(q, k, v, pse, mask, actQ, actKv, nullptr, nullptr,
                                                               nullptr, nullptr, nullptr, c.heads, 0.125, c.pre,
                                                               c.next, layout, 0, c.sparse, c.innerPrecise, out, ws,
                                                               ex);
        },
        aclnnPromptFlashAttentionV3, stream);
    if (actQ) aclDestroyIntArray(actQ);
    if (actKv) aclDestroyIntArray(actKv);
    return ret;
}

static int CallV1(const Case &c, aclrtStream stream) {
    Tensors t;
    aclTensor *q = t.Make(c.q), *k = t.Make(c.k), *v = t.Make(c.v), *out = t.Make(c.out);
    aclTensor *pse = t.Make(c.pse), *mask = t.Make(c.mask);
    aclIntArray *actQ = Ints(c.hasActQ, c.actQ);
    char *layout = const_cast<char *>(c.layout);
    int ret = RunPhases(
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnPromptFlashAttentionGetWorkspaceSize(q, k, v, pse, mask, actQ, c.heads, 0.125, c.pre, c.next,
                                                             layout, 0, out, ws, ex);
        },
        aclnnPromptFlashAttention, stream);
    if (actQ) aclDestroyIntArray(actQ);
    return ret;
}

static Spec Pse(std::vector<int64_t> shape = {1, 2, 16, 16}, aclDataType dtype = ACL_FLOAT16) {
    return Spec(shape, dtype);
}

static Case Masked(aclDataType maskDtype = ACL_BOOL) {
    Case c;
    c.mask = Spec({16, 16}, maskDtype);
    return c;
}

// SH with per-batch lengths 6 + 10 (query) and 5 + 11 (key): the base-API path for sparseMode 20-22.
static Case BaseApi() {
    Case c;
    c.layout = "SH";
    c.q = c.k = c.v = c.out = Spec({16, 64}, ACL_FLOAT16);
    c.hasActQ = c.hasActKv = true;
    c.actQ = {6, 10};
    c.actKv = {5, 11};
    c.sparse = 20;
    return c;
}

// TND (bf16, cumulative lengths 5 and 16 query rows, 7 and 20 key rows).
static Case Tnd() {
    Case c;
    c.layout = "TND";
    c.q = c.out = Spec({16, 2, 64}, ACL_BF16);
    c.k = c.v = Spec({20, 2, 64}, ACL_BF16);
    c.hasActQ = c.hasActKv = true;
    c.actQ = {5, 16};
    c.actKv = {7, 20};
    return c;
}

static int Numerics(aclrtStream stream, int64_t innerPrecise) {
    const std::vector<int64_t> shape = {1, 2, 8, 16}, pseShape = {1, 2, 8, 8};
    std::vector<uint16_t> q(ShapeSize(shape)), val(ShapeSize(shape)), pse(ShapeSize(pseShape));
    for (size_t i = 0; i < q.size(); i++) {
        q[i] = aclFloatToFloat16(static_cast<float>((static_cast<int>(i * 7 % 13) - 6) / 4.0));
        val[i] = aclFloatToFloat16(static_cast<float>(std::sin(0.37 * i)));
    }
    for (size_t i = 0; i < pse.size(); i++) pse[i] = aclFloatToFloat16(static_cast<float>((static_cast<int>(i % 9) - 4) / 2.0));
    std::vector<uint8_t> mask(64, 0);
    for (int j = 0; j < 8; j++) mask[3 * 8 + j] = 1;  // row 3: every key masked
    mask[5 * 8 + 2] = 1;
    DeviceTensor tq, tk, tv, tpse, tmask, tout;
    CHECK_OK(tq.Create(q, shape, ACL_FLOAT16));
    CHECK_OK(tk.Create(q, shape, ACL_FLOAT16));
    CHECK_OK(tv.Create(val, shape, ACL_FLOAT16));
    CHECK_OK(tpse.Create(pse, pseShape, ACL_FLOAT16));
    CHECK_OK(tmask.Create(mask, {8, 8}, ACL_BOOL));
    CHECK_OK(tout.Create(shape, ACL_FLOAT16));
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    char layout[] = "BNSD";
    CHECK_OK(aclnnPromptFlashAttentionV3GetWorkspaceSize(tq.tensor, tk.tensor, tv.tensor, tpse.tensor, tmask.tensor,
                                                         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                         nullptr, 2, 0.25, 2147483647, 2147483647, layout, 0, 1,
                                                         innerPrecise, tout.tensor, &workspaceSize, &executor));
    CHECK_OK(aclnnPromptFlashAttentionV3(nullptr, 0, executor, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    std::vector<uint16_t> result;
    CHECK_OK(tout.Read(result));
    for (uint16_t h : result) printf("%.8f\n", aclFloat16ToFloat(h));
    return 0;
}

static void Rules(aclrtStream stream) {
    Case c;
    // V1: aclnn_prompt_flash_attention.cpp drops pseShift and fixes sparseMode 0, innerPrecise 1.
    REPORT("v1.ok", CallV1(c, stream));
    c = Case(); c.pse = Pse({3}, ACL_FLOAT); REPORT("v1.pse_dropped", CallV1(c, stream));
    c = Case(); c.q.null = true; REPORT("v1.null.query", CallV1(c, stream));
    c = Masked(ACL_FLOAT16); REPORT("v1.fp16_mask", CallV1(c, stream));
    c = Case(); c.hasActQ = true; c.actQ = {17}; REPORT("v1.actual_seq_range", CallV1(c, stream));
    // V3: every argument goes on.
    REPORT("v3.ok", CallV3(c = Case(), stream));
    c = Case(); c.pse = Pse(); REPORT("v3.pse", CallV3(c, stream));
    c = Case(); c.q.shape = c.out.shape = {2, 2, 16, 32}; c.k.shape = c.v.shape = {2, 2, 16, 32}; c.pse = Pse();
    REPORT("v3.pse_batch_broadcast", CallV3(c, stream));
    c = Case(); c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = ACL_BF16; c.pse = Pse({1, 2, 16, 16}, ACL_BF16);
    REPORT("v3.pse_bf16", CallV3(c, stream));
    c = Case(); c.pse = Pse({1, 2, 20, 24}); REPORT("v3.pse_larger", CallV3(c, stream));
    c = Case(); c.pse = Pse({0}); REPORT("v3.pse_empty", CallV3(c, stream));
    c = Case(); c.pse = Pse({1, 2, 16, 16}, ACL_BF16); REPORT("v3.pse_dtype", CallV3(c, stream));
    c = Case(); c.pse = Pse({0}, ACL_FLOAT); REPORT("v3.pse_empty_dtype", CallV3(c, stream));
    c = Case(); c.pse = Pse({2, 16, 16}); REPORT("v3.pse_rank", CallV3(c, stream));
    c = Case(); c.pse = Pse({1, 1, 16, 16}); REPORT("v3.pse_heads", CallV3(c, stream));
    c = Case(); c.pse = Pse({1, 2, 16, 15}); REPORT("v3.pse_short", CallV3(c, stream));
    c = Case(); c.q.shape = c.out.shape = {2, 2, 16, 32}; c.k.shape = c.v.shape = {2, 2, 16, 32};
    c.pse = Pse({3, 2, 16, 16}); REPORT("v3.pse_batch", CallV3(c, stream));
    c = Tnd(); c.pse = Pse({1, 2, 16, 20}, ACL_BF16); REPORT("v3.pse_tnd", CallV3(c, stream));
    for (int64_t precise : {0, 1, 2, 3}) {
        c = Masked(); c.innerPrecise = precise;
        REPORT(("v3.inner_precise" + std::to_string(precise)).c_str(), CallV3(c, stream));
    }
    c = Masked(); c.innerPrecise = 4; REPORT("v3.inner_precise4", CallV3(c, stream));
    c = Masked(); c.innerPrecise = 5; REPORT("v3.inner_precise5", CallV3(c, stream));
    c = Masked(); c.innerPrecise = -1; REPORT("v3.inner_precise_negative", CallV3(c, stream));
    c = Masked(ACL_FLOAT16); REPORT("v3.fp16_mask", CallV3(c, stream));
    c = Masked(ACL_FLOAT16); c.innerPrecise = 0; REPORT("v3.fp16_mask_high_precision", CallV3(c, stream));
    c = Masked(ACL_FLOAT16); c.pse = Pse(); REPORT("v3.fp16_mask_pse", CallV3(c, stream));
    c = Masked(ACL_FLOAT16); c.innerPrecise = 3; REPORT("v3.fp16_mask_row_invalid", CallV3(c, stream));
    c = BaseApi(); REPORT("v3.base_api", CallV3(c, stream));
    c = BaseApi(); c.innerPrecise = 2; REPORT("v3.base_api_inner_precise2", CallV3(c, stream));
    c = BaseApi(); c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = ACL_BF16; c.innerPrecise = 2;
    REPORT("v3.base_api_bf16_inner_precise2", CallV3(c, stream));
    c = BaseApi(); c.innerPrecise = 0; REPORT("v3.base_api_high_precision", CallV3(c, stream));
    // sparseMode 20-22: the pse is the base-API kernels' mask (N 2, B 2, maxSeqLen 10, maxKvSeqLen 11).
    const std::vector<std::pair<const char *, std::pair<int, std::vector<int64_t>>>> masks = {
        {"v3.base_api_pse", {20, {1, 2, 16, 16}}},
        {"v3.base_api_pse_norm_2d", {21, {10, 11}}},
        {"v3.base_api_pse_norm_3d", {21, {2, 10, 11}}},
        {"v3.base_api_pse_norm_4d", {21, {2, 2, 10, 11}}},
        {"v3.base_api_pse_norm_short", {21, {10, 10}}},
        {"v3.base_api_pse_norm_batch", {21, {3, 10, 11}}},
        {"v3.base_api_pse_norm_rank1", {21, {11}}},
        {"v3.base_api_pse_norm_rank5", {21, {1, 2, 2, 10, 11}}},
        {"v3.base_api_pse_norm_4d_read_past", {21, {1, 2, 10, 11}}},
        {"v3.base_api_pse_alibi_3d", {22, {2, 10, 11}}},
        {"v3.base_api_pse_alibi_4d", {22, {2, 2, 10, 11}}},
        {"v3.base_api_pse_alibi_heads", {22, {3, 10, 11}}},
        {"v3.base_api_pse_alibi_4d_batch", {22, {1, 2, 10, 11}}},
        {"v3.base_api_pse_alibi_2d", {22, {256, 256}}},
        {"v3.base_api_pse_alibi_compress", {22, {2, 10, 128}}},
        {"v3.base_api_pse_alibi_compress_4d", {22, {2, 2, 10, 128}}},
    };
    for (const auto &m : masks) {
        c = BaseApi(); c.sparse = m.second.first; c.pse = Pse(m.second.second);
        REPORT(m.first, CallV3(c, stream));
    }
    // D 288: the MLA base-API kernels, whose walk takes the longest lengths for batch 0 (8 + 8 rows).
    c = BaseApi(); c.q = c.k = c.v = c.out = Spec({16, 576}, ACL_FLOAT16); c.actQ = c.actKv = {8, 8};
    c.sparse = 22; c.pse = Pse({2, 8, 8});
    REPORT("v3.base_api_pse_mla_alibi", CallV3(c, stream));
    c.sparse = 21; c.pse = Pse({2, 2, 8, 8});
    REPORT("v3.base_api_pse_mla_half", CallV3(c, stream));
    c.innerPrecise = 0; REPORT("v3.base_api_pse_mla_high_precision", CallV3(c, stream));
}

int main(int argc, char **argv) {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    int ret = 0;
    if (argc > 2 && std::string(argv[1]) == "numerics") {
        ret = Numerics(stream, std::atoll(argv[2]));
    } else {
        Rules(stream);
    }
    TearDown(stream);
    return ret;
}
