// aclnnFusedInferAttentionScore V1-V4 through the C ABI: valid calls on each route, then one
// failing call per rule. Prints "<rule> <status>"; the pytest asserts every code, per chip
// (ACLNN_EMU_SOC). Cases of the A2/A3 FIA-V3 route ("a2." prefix) run on Atlas A2/A3 only.
#include <map>
#include <string>

#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "common.h"
#include "fia_spec.h"

// V4's optional tensors, in its order.
static const char *const OPTIONAL_NAMES[] = {
    "pseShift", "attenMask", "deqScale1", "quantScale1", "deqScale2", "quantScale2", "quantOffset2",
    "antiquantScale", "antiquantOffset", "blockTable", "queryPaddingSize", "kvPaddingSize", "keyAntiquantScale",
    "keyAntiquantOffset", "valueAntiquantScale", "valueAntiquantOffset", "keySharedPrefix", "valueSharedPrefix",
    "queryRope", "keyRope", "keyRopeAntiquantScale", "dequantScaleQuery", "learnableSink"};
static const int N_OPT = sizeof(OPTIONAL_NAMES) / sizeof(OPTIONAL_NAMES[0]);

struct Case {
    int version = 4;
    bool hasQ = true, hasK = true, hasV = true, hasOut = true, hasLse = true, lseFlag = false;
    Spec q = T({2, 8, 64, 128}), out = T({2, 8, 64, 128}), lse = T({2, 8, 64, 1}, ACL_FLOAT);
    std::vector<Spec> k = {T({2, 2, 80, 128})}, v = {T({2, 2, 80, 128})};
    std::map<std::string, Spec> opt;
    std::vector<int64_t> actQ, actKv;
    bool hasActQ = false, hasActKv = false;
    int64_t heads = 8, kvHeads = 2, sparseMode = 0, innerPrecise = 1, blockSize = 0, antiquantMode = 0;
    int64_t queryQuantMode = 0;  // V4 only
    int64_t keyAntiquantMode = 0, valueAntiquantMode = 0;  // V2+
    int64_t preTokens = 2147483647, nextTokens = 2147483647;
    double scale = 0.088;
    const char *layout = "BNSD";
    bool run = true;
};

static int Call(const Case &c, aclrtStream stream) {
    TensorPool pool;
    auto make = [&](const Spec &s) { return pool(s.shape, s.dtype, s.values); };
    auto list = [&](const std::vector<Spec> &specs) {
        std::vector<std::pair<std::vector<int64_t>, aclDataType>> shapes;
        for (const Spec &s : specs) shapes.emplace_back(s.shape, s.dtype);
        return pool.List(shapes);
    };
    aclTensor *q = c.hasQ ? make(c.q) : nullptr;
    aclTensor *out = c.hasOut ? make(c.out) : nullptr;
    aclTensor *lse = c.hasLse ? make(c.lse) : nullptr;
    aclTensorList *k = c.hasK ? list(c.k) : nullptr;
    aclTensorList *v = c.hasV ? list(c.v) : nullptr;
    aclTensor *o[N_OPT] = {};
    for (int i = 0; i < N_OPT; i++) {
        auto found = c.opt.find(OPTIONAL_NAMES[i]);
        if (found != c.opt.end()) o[i] = make(found->second);
    }
    aclIntArray *actQ = c.hasActQ ? aclCreateIntArray(c.actQ.data(), c.actQ.size()) : nullptr;
    aclIntArray *actKv = c.hasActKv ? aclCreateIntArray(c.actKv.data(), c.actKv.size()) : nullptr;
    char *layout = const_cast<char *>(c.layout);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    int ret;
    if (c.version == 1) {
        ret = aclnnFusedInferAttentionScoreGetWorkspaceSize(
            q, k, v, o[0], o[1], actQ, actKv, o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11], c.heads,
            c.scale, c.preTokens, c.nextTokens, layout, c.kvHeads, c.sparseMode, c.innerPrecise, c.blockSize, 0,
            c.lseFlag, out, lse, &ws, &ex);
        if (c.run) ret = RunPhase2(stream, ret, ws, ex, aclnnFusedInferAttentionScore);
    } else if (c.version == 2) {
        ret = aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
            q, k, v, o[0], o[1], actQ, actKv, o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11], o[12],
            o[13], o[14], o[15], o[16], o[17], nullptr, c.heads, c.scale, c.preTokens, c.nextTokens, layout,
            c.kvHeads, c.sparseMode, c.innerPrecise, c.blockSize, 0, c.lseFlag, c.keyAntiquantMode, c.valueAntiquantMode, out, lse, &ws, &ex);
        if (c.run) ret = RunPhase2(stream, ret, ws, ex, aclnnFusedInferAttentionScoreV2);
    } else if (c.version == 3) {
        ret = aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
            q, k, v, o[0], o[1], actQ, actKv, o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11], o[12],
            o[13], o[14], o[15], o[16], o[17], nullptr, o[18], o[19], o[20], c.heads, c.scale, c.preTokens,
            c.nextTokens, layout, c.kvHeads, c.sparseMode, c.innerPrecise, c.blockSize, 0, c.lseFlag, c.keyAntiquantMode, c.valueAntiquantMode, out, lse,
            &ws, &ex);
        if (c.run) ret = RunPhase2(stream, ret, ws, ex, aclnnFusedInferAttentionScoreV3);
    } else {
        ret = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
            q, k, v, o[0], o[1], actQ, actKv, o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11], o[12],
            o[13], o[14], o[15], o[16], o[17], nullptr, o[18], o[19], o[20], o[21], o[22], c.heads, c.scale,
            c.preTokens, c.nextTokens, layout, c.kvHeads, c.sparseMode, c.innerPrecise, c.blockSize, c.antiquantMode,
            c.lseFlag, c.keyAntiquantMode, c.valueAntiquantMode, c.queryQuantMode, out, lse, &ws, &ex);
        if (c.run) ret = RunPhase2(stream, ret, ws, ex, aclnnFusedInferAttentionScoreV4);
    }
    if (actQ) aclDestroyIntArray(actQ);
    if (actKv) aclDestroyIntArray(actKv);
    if (k) aclDestroyTensorList(k);
    if (v) aclDestroyTensorList(v);
    return ret;
}

// Prefill, BNSD, D 128, GQA 8/2: the FIA-V3 route on Atlas A2/A3.
static Case Prefill() { return Case(); }

// Decode over a paged cache: 8 blocks of 128 tokens, (blocks, blockSize, H) or (blocks, N2, blockSize, D).
static Case Paged(bool headsMajor) {
    Case c;
    c.q = c.out = T({2, 8, 1, 128});
    c.lse = T({2, 8, 1, 1}, ACL_FLOAT);
    c.k = c.v = {headsMajor ? T({8, 2, 128, 128}) : T({8, 128, 256})};
    c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
    c.blockSize = 128;
    c.hasActKv = true;
    c.actKv = {300, 90};
    return c;
}

// Prefill over a paged cache (blocks, N2, blockSize, D): batch lengths 300 and 140 in 3 + 2 blocks.
static Case PagedPrefill() {
    Case c = Paged(true);
    c.q = c.out = T({2, 8, 64, 128});
    c.lse = T({2, 8, 64, 1}, ACL_FLOAT);
    c.actKv = {300, 140};
    return c;
}

// MLA decode: D 512 + rope 64, one KV head, paged (blocks, blockSize, H), BSND.
static Case Mla() {
    Case c;
    c.layout = "BSND";
    c.q = c.out = T({2, 1, 16, 512}, ACL_BF16);
    c.k = c.v = {T({4, 128, 512}, ACL_BF16)};
    c.opt["queryRope"] = T({2, 1, 16, 64}, ACL_BF16);
    c.opt["keyRope"] = T({4, 128, 64}, ACL_BF16);
    c.opt["blockTable"] = T({2, 2}, ACL_INT32, {0, 1, 2, 3});
    c.heads = 16;
    c.kvHeads = 1;
    c.blockSize = 128;
    c.hasActKv = true;
    c.actKv = {200, 60};
    c.hasLse = false;
    return c;
}

// The same with an INT8 cache beside the BF16 query (antiquant): RouteToFia leaves it, IsUsingIFA takes it.
static Case MlaAntiquant() {
    Case c = Mla();
    c.k = c.v = {T({4, 128, 512}, ACL_INT8)};
    c.opt["keyRope"] = T({4, 128, 64}, ACL_INT8);  // the OpDef pairs the key rope's dtype with the key's
    c.opt["antiquantScale"] = T({2, 512}, ACL_BF16);
    return c;
}

// A2/A3 MLA full quant: INT8 query, key and value, BF16 ropes and output, FLOAT dequant scales, queryQuantMode 3.
static Case MlaInt8FullQuant() {
    Case c = Mla();
    c.q = T({2, 1, 16, 512}, ACL_INT8);
    c.k = c.v = {T({4, 128, 512}, ACL_INT8)};
    c.opt["dequantScaleQuery"] = T({2, 1, 16}, ACL_FLOAT);
    c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1}, ACL_FLOAT);
    c.queryQuantMode = 3;
    return c;
}

// Query D 192, value D 128 (the FIA-V3 route for every layout) with query and key left padding.
static Case Mixed() {
    Case c;
    c.q = T({2, 8, 64, 192});
    c.k = {T({2, 2, 80, 192})};
    c.v = {T({2, 2, 80, 128})};
    c.out = T({2, 8, 64, 128});
    c.opt["queryPaddingSize"] = T({1}, ACL_INT64, {3});
    c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {5});
    c.hasActQ = c.hasActKv = true;
    c.actQ = {40, 61};
    c.actKv = {70, 20};
    return c;
}

// D 32 is no FIA-V3 head size: S = 1 takes the IFA route, S = 16 the PFA route.
static Case Small(int64_t s) {
    Case c;
    c.q = c.out = T({2, 8, s, 32});
    c.lse = T({2, 8, s, 1}, ACL_FLOAT);
    c.k = c.v = {T({2, 2, 80, 32})};
    return c;
}

// A paged prefill with D 32 (the PFA route on Atlas A2/A3): [blocks, N2, blockSize, D], lengths 300 and 140.
static Case PagedSmall() {
    Case c = Small(16);
    c.k = c.v = {T({8, 2, 128, 32})};
    c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
    c.blockSize = 128;
    c.hasActKv = true;
    c.actKv = {300, 140};
    return c;
}

// PfaTnd(192) over a paged cache [blocks, N2, blockSize, D]: key lengths 300 and 140 in 3 + 2 blocks.
static Case PagedTnd();

// An NSD query (no batch) over a paged cache [blocks, N2, blockSize, D] of 300 keys in 3 blocks.
static Case PagedNsd() {
    Case c = PagedSmall();
    c.layout = "NSD";
    c.q = c.out = T({8, 16, 32});
    c.lse = T({1, 8, 16, 1}, ACL_FLOAT);
    c.opt["blockTable"] = T({1, 4}, ACL_INT32, {0, 1, 2, 3});
    c.actKv = {300};
    return c;
}

// The split-fuse route: TND fp16, GQA 8/2, innerPrecise 0, D 256, a paged cache [blocks, 128, N2 * D].
static Case FaiPaged() {
    Case c;
    c.layout = "TND";
    c.innerPrecise = 0;
    c.q = c.out = T({64, 8, 256});
    c.lse = T({64, 8, 1}, ACL_FLOAT);
    c.k = c.v = {T({8, 128, 512})};
    c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
    c.blockSize = 128;
    c.hasActQ = c.hasActKv = true;
    c.actQ = {40, 64};
    c.actKv = {300, 140};
    return c;
}

// Prefill with MLA rope: D 128 + rope 64, BNSD (V3).
static Case Rope() {
    Case c;
    c.version = 3;
    c.opt["queryRope"] = T({2, 8, 64, 64});
    c.opt["keyRope"] = T({2, 2, 80, 64});
    return c;
}

// MLA decode (D 512 + rope 64, 32 query heads, one KV head): IFA MLA on Ascend910_95, FIA-V3 MLA on Atlas A2/A3.
static Case MlaDecode(int64_t s1 = 1) {
    Case c;
    c.version = 3;
    c.heads = 32;
    c.kvHeads = 1;
    c.q = c.out = T({2, 32, s1, 512});
    c.lse = T({2, 32, s1, 1}, ACL_FLOAT);
    c.k = c.v = {T({2, 1, 80, 512})};
    c.opt["queryRope"] = T({2, 32, s1, 64});
    c.opt["keyRope"] = T({2, 1, 80, 64});
    return c;
}

// The same over a paged cache [blocks, blockSize, H] of 16-token blocks (80 keys: 5 per batch).
static Case PagedMlaDecode() {
    Case c = MlaDecode();
    c.k = c.v = {T({10, 16, 512})};
    c.opt["keyRope"] = T({10, 16, 64});
    c.opt["blockTable"] = T({2, 5}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    c.blockSize = 16;
    c.hasActKv = true;
    c.actKv = {80, 80};
    return c;
}

// TND bf16, batches of 40 and 24 rows: with D 128 and quantScale2 (or D 192, MHA) off the FIA-V3 route.
static Case PfaTnd(int64_t d) {
    Case c;
    c.layout = "TND";
    c.q = c.out = T({64, 8, d}, ACL_BF16);
    c.lse = T({64, 8, 1}, ACL_FLOAT);
    c.k = c.v = {T({64, 2, d}, ACL_BF16)};
    if (d == 128) c.opt["quantScale2"] = T({1}, ACL_FLOAT);
    if (d == 192) c.k = c.v = {T({64, 8, d}, ACL_BF16)};  // value D 192 needs G = 1
    if (d == 192) c.kvHeads = 8;
    c.hasActQ = c.hasActKv = true;
    c.actQ = c.actKv = {40, 64};
    return c;
}

static Case PagedTnd() {
    Case c = PfaTnd(192);
    c.k = c.v = {T({8, 8, 128, 192}, ACL_BF16)};
    c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
    c.blockSize = 128;
    c.actKv = {300, 140};
    return c;
}

// MLA full quant (Ascend910_95): FP8 E4M3 query, key and value with BF16 ropes and output, queryQuantMode 3,
// key/value modes 0, FLOAT scales [B, N, S] (BNSD) and [1].
static Case MlaFullQuant(int64_t s1 = 1) {
    Case c = MlaDecode(s1);
    c.version = 4;
    c.q = T({2, 32, s1, 512}, ACL_FLOAT8_E4M3FN);
    c.out = T({2, 32, s1, 512}, ACL_BF16);
    c.k = c.v = {T({2, 1, 80, 512}, ACL_FLOAT8_E4M3FN)};
    c.opt["queryRope"] = T({2, 32, s1, 64}, ACL_BF16);
    c.opt["keyRope"] = T({2, 1, 80, 64}, ACL_BF16);
    c.opt["dequantScaleQuery"] = T({2, 32, s1}, ACL_FLOAT);
    c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1}, ACL_FLOAT);
    c.queryQuantMode = 3;
    return c;
}

// Per-block full quant (Ascend910_95): 8-bit float query, key and value, the three modes 7, FLOAT scales
// [B, N, ceil(S1 / 128), 1] and [B, N2, ceil(S2 / 256), 1].
static Case PerBlock(aclDataType dtype = ACL_FLOAT8_E4M3FN) {
    Case c;
    c.q = T({2, 8, 64, 128}, dtype);
    c.k = c.v = {T({2, 2, 80, 128}, dtype)};
    c.opt["dequantScaleQuery"] = T({2, 8, 1, 1}, ACL_FLOAT);
    c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 2, 1, 1}, ACL_FLOAT);
    c.queryQuantMode = c.keyAntiquantMode = c.valueAntiquantMode = 7;
    return c;
}

int main() {
    aclrtStream stream = nullptr;
    if (SetUp(&stream) != 0) return 1;
    Case c;
    // Valid calls, every version.
    c = Prefill(); REPORT("ok.prefill", Call(c, stream));
    c = Prefill(); c.version = 1; REPORT("ok.v1", Call(c, stream));
    c = Prefill(); c.version = 2; REPORT("ok.v2", Call(c, stream));
    c = Prefill(); c.version = 3; REPORT("ok.v3", Call(c, stream));
    c = Prefill(); c.layout = "BSH"; c.q = c.out = T({2, 64, 1024}); c.k = c.v = {T({2, 80, 256})};
    REPORT("ok.bsh", Call(c, stream));
    c = Prefill(); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 3; REPORT("ok.causal", Call(c, stream));
    c = Small(1); REPORT("ok.ifa_route", Call(c, stream));
    c = Small(16); REPORT("ok.pfa_route", Call(c, stream));
    c = Prefill(); c.hasLse = false; REPORT("ok.lse_null_flag_false", Call(c, stream));
    c = Prefill(); c.lseFlag = true; REPORT("ok.lse", Call(c, stream));
    c = Small(1); c.lseFlag = true; REPORT("ok.lse_ifa_route", Call(c, stream));
    c = Small(16); c.lseFlag = true; REPORT("ok.lse_pfa_route", Call(c, stream));
    // The PFA tiling takes FIA's pseShift [B|1, N, S1, S2] (ConvertContextToParamsPFA; arch35 PromptFlashAttentionTilingV2).
    c = Small(16); c.opt["pseShift"] = T({1, 8, 16, 80}); REPORT("ok.pse_pfa_route", Call(c, stream));
    // learnableSink: the FIA-V3 kernels take it (A2/A3, D 128); the A2/A3 IFA kernels, the A2/A3 PFA
    // kernels outside TND and Ascend910_95's kernels ignore it, and the call succeeds.
    c = Prefill(); c.opt["learnableSink"] = T({8}, ACL_BF16); REPORT("ok.sink", Call(c, stream));
    c = Small(1); c.lseFlag = true; c.opt["learnableSink"] = T({8}, ACL_BF16); REPORT("ok.sink_ifa_route", Call(c, stream));
    c = Small(16); c.lseFlag = true; c.opt["learnableSink"] = T({3}, ACL_BF16); REPORT("ok.sink_pfa_route", Call(c, stream));
    // A key/value tensor list on the PFA route (A2/A3 CheckKvPFA, Ascend910_95 CheckTensorList): one
    // [1, ...] tensor per batch, each with its own S.
    c = Small(16); c.k = c.v = {T({1, 2, 40, 32}), T({1, 2, 70, 32})}; c.lseFlag = true; REPORT("ok.list_pfa_route", Call(c, stream));
    c = Small(16); c.k = c.v = {T({2, 2, 40, 32}), T({2, 2, 70, 32})}; REPORT("list_batch_two", Call(c, stream));
    c = Small(16); c.k = c.v = {T({1, 2, 40, 32}), T({1, 2, 70, 32}), T({1, 2, 70, 32})}; REPORT("tiling.list_count", Call(c, stream));
    c = Small(16); c.k = c.v = {T({1, 4, 40, 32}), T({1, 4, 70, 32})}; REPORT("tiling.list_kv_heads", Call(c, stream));
    c = Small(16); c.k = {T({1, 2, 40, 32}), T({1, 2, 70, 32})}; c.v = {T({1, 2, 40, 32}), T({1, 2, 60, 32})};
    REPORT("tiling.list_s", Call(c, stream));
    c = Small(16); c.k = c.v = {T({1, 2, 40, 32}), T({1, 2, 70, 32})}; c.hasActKv = true; c.actKv = {50, 70};
    REPORT("tiling.list_actual_kv", Call(c, stream));
    // softmaxLse beside an INT8 key/value (antiquant): the antiquant kernels write it (S = 1, and any S on
    // Ascend910_95, mask or not); on the A2/A3 PFA route (S > 1) it comes from a second pass
    c = Small(1); c.lseFlag = true; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2, 2, 1, 32});
    REPORT("ok.lse_antiquant_decode", Call(c, stream));
    c = Small(16); c.lseFlag = true; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2, 2, 1, 32});
    REPORT("lse_antiquant_prefill", Call(c, stream));
    c.opt["attenMask"] = T({2, 16, 80}, ACL_BOOL); REPORT("lse_antiquant_prefill_mask", Call(c, stream));
    // A rope beside an INT8 key/value: Ascend910_95's IFATilingV2 reads none (the call runs without it);
    // the A2/A3 IFA tiling takes it as MLA, whose rules refuse this call.
    c = Small(1); c.version = 3; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2, 2, 1, 32});
    c.opt["queryRope"] = T({2, 8, 1, 64}); c.opt["keyRope"] = T({2, 2, 80, 64}, ACL_INT8);
    REPORT("rope_antiquant_decode", Call(c, stream));
    if (!OnA2()) {
        // Speculative decode over an INT8 cache: IFATilingV2 ProcessAttenMaskSparsePFA with FIA's sparse mode and tokens.
        c = Small(4); c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2, 2, 1, 32});
        c.sparseMode = 3; c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); REPORT("arch35.ok.antiquant_mask_causal", Call(c, stream));
        c.opt["attenMask"] = T({2, 4, 80}, ACL_BOOL); REPORT("arch35.tiling.antiquant_mask_template", Call(c, stream));
        c.sparseMode = 5; REPORT("arch35.tiling.antiquant_sparse_mode", Call(c, stream));
        c.sparseMode = 2; c.opt.erase("attenMask"); REPORT("arch35.tiling.antiquant_mask_required", Call(c, stream));
        c.sparseMode = 4; c.preTokens = c.nextTokens = -1; c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL);
        REPORT("arch35.tiling.antiquant_band_negative", Call(c, stream));
        c.sparseMode = 0; c.preTokens = 3; c.nextTokens = -4; c.opt["attenMask"] = T({2, 4, 80}, ACL_BOOL);
        REPORT("arch35.tiling.antiquant_next_vs_s1", Call(c, stream));
        c.preTokens = c.nextTokens = 2147483647; c.hasActQ = true; c.actQ = {4, 3};
        REPORT("arch35.ok.antiquant_mask_lengths", Call(c, stream));
        c.actQ = {5, 3}; REPORT("arch35.tiling.antiquant_actual_q_range", Call(c, stream));
        c.actQ = {4, 3}; c.opt["queryPaddingSize"] = T({1}, ACL_INT64);
        REPORT("arch35.ok.antiquant_mask_padding", Call(c, stream));
        // Key/value modes without key/value tensors: IFATilingV2's non-split mode (the combined parameters).
        c = Small(1); c.version = 2; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2, 2, 1, 32});
        c.keyAntiquantMode = c.valueAntiquantMode = 1; REPORT("arch35.ok.kv_modes_alone", Call(c, stream));
        c.keyAntiquantMode = 0; REPORT("arch35.refused.kv_pair_without_params", Call(c, stream));
        c.version = 4; c.keyAntiquantMode = c.valueAntiquantMode = 0; c.antiquantMode = 1;
        REPORT("arch35.not_implemented.combined_per_token", Call(c, stream));
        // An INT8 5-D (NZ) paged cache [Bn, N2, D / 16, Bs, 16]: the antiquant kernel writes softmaxLse as for ND.
        c = Paged(true); c.lseFlag = true; c.k = c.v = {T({8, 2, 8, 128, 16}, ACL_INT8)};
        c.opt["antiquantScale"] = T({2, 2, 1, 128}); REPORT("arch35.ok.antiquant_paged_nz_lse", Call(c, stream));
    }
    if (OnA2()) {
        // A 5-D (NZ) key: the IFA tiling's GQA KV-NZ checks refuse softmaxLse (CheckDefaultMisc)
        c = Small(1); c.lseFlag = true; c.k = c.v = {T({4, 2, 1, 128, 32}, ACL_INT8)};
        c.opt["antiquantScale"] = T({2, 2, 1, 32}); c.opt["blockTable"] = T({2, 2}, ACL_INT32);
        c.blockSize = 128; c.hasActKv = true; c.actKv = {200, 100};
        REPORT("a2.tiling.ifa_kv_nz_lse", Call(c, stream));
    }
    if (OnA2()) {
        // D 64 is a FIA-V3 head size too (CheckGqaDSupport): softmaxLse works there
        c = Prefill(); c.lseFlag = true; c.q = c.out = T({2, 8, 64, 64}); c.k = c.v = {T({2, 2, 80, 64})};
        REPORT("a2.ok.lse_d64", Call(c, stream));
        c = Mla(); c.version = 3; REPORT("a2.ok.mla_rope", Call(c, stream));
        // S = 1 without rope is the "legacy IFA" shape: GetUpdateInfo sets sparse mode 0 before the checks.
        c = Paged(true); c.sparseMode = 3; REPORT("a2.ok.legacy_ifa_sparse_ignored", Call(c, stream));
    }
    // Generated entry point: NULLs (161001), kernel key (161002 required / 561003 optional).
    c = Prefill(); c.hasQ = false; REPORT("null.query", Call(c, stream));
    c = Prefill(); c.hasK = false; REPORT("null.key", Call(c, stream));
    c = Prefill(); c.hasV = false; REPORT("null.value", Call(c, stream));
    c = Prefill(); c.hasOut = false; REPORT("null.attentionOut", Call(c, stream));
    c = Prefill(); c.hasLse = false; c.lseFlag = true; REPORT("null.softmaxLse", Call(c, stream));
    c = Prefill(); c.q.dtype = c.out.dtype = ACL_FLOAT; REPORT("dtype.query", Call(c, stream));
    c = Prefill(); c.out.dtype = ACL_FLOAT; REPORT("dtype.attentionOut", Call(c, stream));
    c = Prefill(); c.k[0].dtype = c.v[0].dtype = ACL_INT32; c.version = 1; REPORT("dtype.key_int32_v1", Call(c, stream));
    // V2-V4 read an INT32 key/value as INT4 (last dim x 8), which the kernel key takes.
    c = Small(1); c.k = c.v = {T({2, 2, 80, 4}, ACL_INT32)}; c.version = 2; c.opt["antiquantScale"] = T({2, 2, 1, 32});
    REPORT("int4_v2", Call(c, stream));
    // D 64: IFATilingV2's INT4 rule (headDims a multiple of 64) passes on Ascend910_95 too.
    c = Small(1); c.q = c.out = T({2, 8, 1, 64}); c.k = c.v = {T({2, 2, 80, 8}, ACL_INT32)}; c.version = 2;
    c.opt["antiquantScale"] = T({2, 2, 1, 64}); REPORT("ok.int4_d64", Call(c, stream));
    c = Prefill(); c.lseFlag = true; c.lse.dtype = ACL_FLOAT16; REPORT("dtype.softmaxLse", Call(c, stream));
    c = Prefill(); c.opt["learnableSink"] = T({8}, ACL_FLOAT); REPORT("kernel.sink_dtype", Call(c, stream));
    c = Prefill(); c.opt["blockTable"] = T({2, 4}, ACL_INT64); REPORT("kernel.block_table_dtype", Call(c, stream));
    // The FIA-V3 route's TilingCheck (561002), Atlas A2/A3.
    if (OnA2()) {
        c = Prefill(); c.innerPrecise = 5; REPORT("a2.tiling.inner_precise", Call(c, stream));
        c = Prefill(); c.sparseMode = 7; c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); REPORT("a2.tiling.sparse_mode", Call(c, stream));
        c = Prefill(); c.sparseMode = 3; REPORT("a2.tiling.mask_required", Call(c, stream));
        c = Prefill(); c.opt["learnableSink"] = T({4}, ACL_BF16); REPORT("a2.tiling.sink_shape", Call(c, stream));
        c = Prefill(); c.opt["queryRope"] = T({2, 8, 64, 64}); REPORT("a2.tiling.rope_pair", Call(c, stream));
        c = Paged(true); c.hasActKv = false; REPORT("a2.tiling.paged_actual_kv", Call(c, stream));
        c = Paged(true); c.blockSize = 120; REPORT("a2.tiling.block_size", Call(c, stream));
        c = Mla(); c.opt["learnableSink"] = T({16}, ACL_BF16); REPORT("a2.tiling.sink_mla", Call(c, stream));
        c = Prefill(); c.opt["dequantScaleQuery"] = T({1}, ACL_FLOAT); REPORT("a2.tiling.dequant_query", Call(c, stream));
        c = Prefill(); c.k = {T({2, 4, 80, 128})}; REPORT("a2.tiling.consistency_key", Call(c, stream));
        // A block table on the PFA route (D 32): prompt_flash_attention_tiling.cpp's page-attention rules.
        c = PagedSmall(); REPORT("a2.ok.pfa_paged", Call(c, stream));
        c.lseFlag = true; REPORT("a2.ok.pfa_paged_lse", Call(c, stream));
        c = PagedSmall(); c.k = c.v = {T({8, 128, 64})}; REPORT("a2.ok.pfa_paged_bnbsh", Call(c, stream));
        c.layout = "BSH"; c.q = c.out = T({2, 16, 256}); REPORT("a2.ok.pfa_paged_bsh", Call(c, stream));
        c = PagedSmall(); c.layout = "BSH"; c.q = c.out = T({2, 16, 256}); REPORT("a2.tiling.pfa_paged_cache_layout", Call(c, stream));
        // S2 = max blocks x blockSize (3 x 128), not the table's 4 columns, for CheckAttenMaskShape.
        c = PagedSmall(); c.opt["attenMask"] = T({16, 384}, ACL_BOOL); REPORT("a2.ok.pfa_paged_mask", Call(c, stream));
        c.opt["attenMask"] = T({16, 300}, ACL_BOOL); REPORT("a2.tiling.pfa_paged_mask_s2", Call(c, stream));
        c = PagedSmall(); c.hasActKv = false; REPORT("a2.tiling.pfa_paged_actual_kv_required", Call(c, stream));
        c = PagedSmall(); c.actKv = {300, -5}; REPORT("a2.tiling.pfa_paged_actual_kv_negative", Call(c, stream));
        c = PagedSmall(); c.actKv = {300}; c.opt["blockTable"] = T({2, 3}, ACL_INT32, {0, 1, 2, 3, 4, 5});
        REPORT("a2.ok.pfa_paged_one_length", Call(c, stream));
        c = PagedSmall(); c.k = c.v = {T({16, 2, 64, 32})}; c.blockSize = 64; REPORT("a2.tiling.pfa_paged_block_size", Call(c, stream));
        c = PagedSmall(); c.v = {T({8, 128, 64})}; REPORT("a2.tiling.pfa_paged_key_value_rank", Call(c, stream));
        c = PagedSmall(); c.k = c.v = {T({8, 4, 128, 32})}; REPORT("a2.tiling.pfa_paged_cache_shape", Call(c, stream));
        c = PagedSmall(); c.v = {T({9, 2, 128, 32})}; REPORT("a2.tiling.pfa_paged_key_value", Call(c, stream));
        c = PagedSmall(); c.opt["blockTable"] = T({2, 2}, ACL_INT32); REPORT("a2.tiling.pfa_paged_block_table_shape", Call(c, stream));
        c = PagedSmall(); c.k = c.v = {T({4, 2, 128, 32})}; REPORT("a2.tiling.pfa_paged_cache_blocks", Call(c, stream));
        c = PagedSmall(); c.version = 2; c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 32});
        REPORT("a2.tiling.pfa_paged_shared_prefix", Call(c, stream));
        c = PagedSmall(); c.layout = "TND"; c.q = c.out = T({32, 8, 32}); c.lse = T({32, 8, 1}, ACL_FLOAT);
        c.hasActQ = true; c.actQ = {16, 32}; REPORT("a2.tiling.pfa_paged_tnd_d32", Call(c, stream));
        // A 5-D (NZ) paged cache [Bn, N2, D / D0, Bs, D0], D0 = 32 bytes (fia_tiling_shape.cpp).
        c = Paged(true); c.k = c.v = {T({8, 2, 8, 128, 16})}; REPORT("a2.ok.paged_nz", Call(c, stream));
        c.lseFlag = true; REPORT("a2.ok.paged_nz_lse", Call(c, stream));
        c.lseFlag = false; c.k = {T({8, 2, 16, 128, 8})}; REPORT("a2.tiling.paged_nz_shape", Call(c, stream));
        c = Paged(true); c.k = c.v = {T({8, 2, 8, 128, 16})}; c.opt["pseShift"] = T({2, 8, 1, 512});
        REPORT("a2.tiling.pse_nz", Call(c, stream));
        c = Prefill(); c.hasActQ = true; c.actQ = {65, 64}; REPORT("a2.tiling.actual_q_range", Call(c, stream));
        c = Prefill(); c.hasActKv = true; c.actKv = {-1}; REPORT("a2.tiling.actual_kv_range", Call(c, stream));
        c = Prefill(); c.out = T({2, 8, 64, 64}); REPORT("a2.tiling.consistency_out", Call(c, stream));
        c = Prefill(); c.lseFlag = true; c.lse = T({2, 8, 64}, ACL_FLOAT); REPORT("a2.tiling.consistency_lse", Call(c, stream));
        c = Prefill(); c.opt["attenMask"] = T({2, 32, 80}, ACL_BOOL); REPORT("a2.tiling.mask_shape", Call(c, stream));
        c = Prefill(); c.opt["attenMask"] = T({64, 80}, ACL_BOOL); c.preTokens = -10; c.nextTokens = 5;
        REPORT("a2.tiling.tokens_window", Call(c, stream));
        c = Prefill(); c.q = T({2, 8, 64, 192}); c.k = {T({2, 2, 80, 192})}; c.opt["pseShift"] = T({2, 8, 32, 80});
        REPORT("a2.tiling.pse_shape", Call(c, stream));
        c = Prefill(); c.opt["queryRope"] = T({2, 8, 32, 64}); c.opt["keyRope"] = T({2, 2, 80, 64});
        REPORT("a2.tiling.query_rope_shape", Call(c, stream));
        // BNSD_NBSD is no legacy GQA layout: the FIA-V3 route takes a shared prefix there.
        c = Prefill(); c.version = 2; c.layout = "BNSD_NBSD"; c.out = T({8, 2, 64, 128});
        c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 128});
        REPORT("a2.ok.prefix_nbsd", Call(c, stream));
        c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({2, 2, 16, 128});
        REPORT("a2.tiling.prefix_batch", Call(c, stream));
        // Query D 192 / value D 128 reaches the FIA-V3 route with padding and pseShift.
        c = Mixed(); c.opt["pseShift"] = T({1, 8, 64, 80}); REPORT("a2.ok.fia_v3_padding_pse", Call(c, stream));
        c = Mixed(); c.layout = "BNSD_NBSD"; c.out = T({8, 2, 64, 128}); REPORT("a2.tiling.padding_layout", Call(c, stream));
        c = Mixed(); c.q = T({2, 8, 1, 192}); c.out = T({2, 8, 1, 128}); c.actQ = {1, 1};
        REPORT("a2.tiling.padding_query_s", Call(c, stream));
        c = Mixed(); c.hasActKv = false; REPORT("a2.tiling.padding_kv_lengths", Call(c, stream));
        c = Mixed(); c.opt.erase("queryPaddingSize"); c.opt.erase("kvPaddingSize"); c.layout = "BNSD_NBSD";
        c.out = T({8, 2, 64, 128}); c.opt["pseShift"] = T({1, 8, 64, 80}); REPORT("a2.tiling.pse_layout", Call(c, stream));
        // A rope pair of the query's head size is ROPE_SPLIT for D 128 as for 512: CheckParaExistenceMlaNoquant
        // refuses padding, pseShift, a shared prefix and output quantisation beside it.
        c = Rope(); c.version = 4; c.opt["pseShift"] = T({1, 8, 64, 80}); REPORT("a2.tiling.rope_pse", Call(c, stream));
        c = Rope(); c.opt["queryPaddingSize"] = T({1}, ACL_INT64, {3}); c.hasActQ = true; c.actQ = {40, 61};
        REPORT("a2.tiling.rope_query_padding", Call(c, stream));
        c = Rope(); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {5}); c.hasActKv = true; c.actKv = {70, 20};
        REPORT("a2.tiling.rope_kv_padding", Call(c, stream));
        c = Mla(); c.opt["pseShift"] = T({1, 16, 1, 256}, ACL_BF16); REPORT("a2.tiling.mla_pse", Call(c, stream));
        c = Mla(); c.opt["kvPaddingSize"] = T({1}, ACL_INT64); REPORT("a2.tiling.mla_kv_padding", Call(c, stream));
        c = Rope(); c.opt["quantScale2"] = T({1}, ACL_FLOAT); REPORT("a2.tiling.rope_quant_scale2", Call(c, stream));
        c = Rope(); c.version = 2; c.opt.erase("queryRope"); c.opt.erase("keyRope");
        c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 128}); c.version = 3;
        c.opt["queryRope"] = T({2, 8, 64, 64}); c.opt["keyRope"] = T({2, 2, 80, 64}); REPORT("a2.tiling.rope_prefix", Call(c, stream));
        // Rope calls off the FIA-V3 route: CheckInputLayout's MLA rules, then the IFA tiling's.
        c = MlaAntiquant(); REPORT("a2.tiling.rope_antiquant", Call(c, stream));
        c = MlaAntiquant(); c.layout = "BNSD_BSND"; c.q = T({2, 16, 1, 512}, ACL_BF16); c.opt["queryRope"] = T({2, 16, 1, 64}, ACL_BF16);
        REPORT("a2.tiling.rope_mla_layout", Call(c, stream));
        c = MlaAntiquant(); c.opt.erase("keyRope"); REPORT("a2.tiling.rope_mla_pair", Call(c, stream));
        c = MlaAntiquant(); c.layout = "TND"; c.q = c.out = T({2, 16, 512}, ACL_BF16); c.opt["queryRope"] = T({2, 16, 64}, ACL_BF16);
        c.k = c.v = {T({2, 1, 512}, ACL_INT8)}; c.opt["keyRope"] = T({2, 1, 64}, ACL_INT8); c.opt.erase("blockTable");
        c.hasActQ = true; c.actQ = {1, 2}; c.actKv = {1, 2}; REPORT("a2.tiling.rope_mla_tnd_unpaged", Call(c, stream));
        c = MlaAntiquant(); c.k = c.v = {T({4, 1, 128, 512}, ACL_INT8)}; c.opt["keyRope"] = T({4, 1, 128, 64}, ACL_INT8);
        REPORT("a2.tiling.rope_paged_bnbd_layout", Call(c, stream));
        // An INT8 query of S 32 takes the PFA route, whose x910 kernels read no rope: it runs without; TND there
        // meets the PFA tiling's TND rope rules (D 128 + 64), then CheckIOType (no all-INT8 TND). innerPrecise 2
        // with query lengths: the IFA tiling's ATB path.
        c = Prefill(); c.q = T({2, 8, 32, 64}, ACL_INT8); c.out = T({2, 8, 32, 64}); c.k = c.v = {T({2, 2, 80, 64}, ACL_INT8)};
        c.opt["queryRope"] = T({2, 8, 32, 64}, ACL_INT8); c.opt["keyRope"] = T({2, 2, 80, 64}, ACL_INT8); c.version = 3;
        c.opt["deqScale1"] = c.opt["quantScale1"] = c.opt["deqScale2"] = T({1}, ACL_FLOAT);
        REPORT("a2.ok.rope_pfa_ignored", Call(c, stream));
        // Sparse modes 20-22 take the base-API kernels, which read no rope either; their tiling wants SH, which
        // CheckInputLayoutMla refuses beside a rope (prompt_flash_attention_tiling.cpp CheckBaseApiOptionalInput).
        c.sparseMode = 20; REPORT("a2.tiling.rope_pfa_base_api", Call(c, stream)); c.sparseMode = 0;
        c.layout = "TND"; c.q = T({64, 8, 64}, ACL_INT8); c.out = T({64, 8, 64}); c.k = c.v = {T({160, 2, 64}, ACL_INT8)};
        c.opt["queryRope"] = T({64, 8, 64}, ACL_INT8); c.opt["keyRope"] = T({160, 2, 64}, ACL_INT8);
        c.hasActQ = c.hasActKv = true; c.actQ = {32, 64}; c.actKv = {80, 160}; REPORT("a2.tiling.rope_pfa_tnd_d", Call(c, stream));
        c.q = T({64, 8, 128}, ACL_INT8); c.out = T({64, 8, 128}); c.k = c.v = {T({160, 2, 128}, ACL_INT8)};
        REPORT("a2.tiling.rope_pfa_tnd_int8", Call(c, stream));
        c = MlaAntiquant(); c.innerPrecise = 2; c.hasActQ = true; c.actQ = {1, 1}; REPORT("a2.not_implemented.rope_atb", Call(c, stream));
        // RunBigKernelTiling takes the ATB path before PreProcess; AtbTilingCheck: BSH, BSND, BNSD, TND only.
        c.layout = "BSND_NBSD"; c.out = T({16, 2, 1, 512}, ACL_BF16); REPORT("a2.tiling.rope_atb_layout", Call(c, stream));
        // INT8 query: IFATiling::ProcessQuant's full-quant rules, then the MLA ones; its kernel runs S 1.
        c = MlaInt8FullQuant(); c.k = c.v = {T({4, 1, 16, 128, 32}, ACL_INT8)}; c.opt["keyRope"] = T({4, 1, 4, 128, 16}, ACL_BF16);
        REPORT("a2.ok.rope_full_quant", Call(c, stream));
        c.q = T({2, 2, 16, 512}, ACL_INT8); c.out = T({2, 2, 16, 512}, ACL_BF16); c.opt["queryRope"] = T({2, 2, 16, 64}, ACL_BF16);
        c.opt["dequantScaleQuery"] = T({2, 2, 16}, ACL_FLOAT); REPORT("a2.not_implemented.rope_full_quant", Call(c, stream));
        c = MlaInt8FullQuant(); c.k = c.v = {T({4, 1, 16, 128, 32}, ACL_INT8)}; c.opt["keyRope"] = T({4, 1, 4, 128, 16}, ACL_BF16);
        c.opt["kvPaddingSize"] = T({1}, ACL_INT64); REPORT("a2.tiling.rope_mla_kv_padding", Call(c, stream));
        c = MlaInt8FullQuant(); c.opt["dequantScaleQuery"] = T({2, 16}, ACL_FLOAT);
        REPORT("a2.tiling.rope_full_quant_query_scale", Call(c, stream));
        c = MlaInt8FullQuant(); c.opt["valueAntiquantScale"] = T({1, 512}, ACL_FLOAT);
        REPORT("a2.tiling.rope_full_quant_kv_scale", Call(c, stream));
        c = MlaInt8FullQuant(); c.k = c.v = {T({4, 1, 128, 512}, ACL_INT8)}; c.opt["keyRope"] = T({4, 1, 128, 64}, ACL_BF16);
        REPORT("a2.tiling.rope_full_quant_bnbd", Call(c, stream));
        c = MlaInt8FullQuant(); c.layout = "BNSD"; c.q = T({2, 16, 1, 512}, ACL_INT8); c.out = T({2, 16, 1, 512}, ACL_BF16);
        c.opt["queryRope"] = T({2, 16, 1, 64}, ACL_BF16); REPORT("a2.tiling.rope_full_quant_bnsd", Call(c, stream));
        c = MlaInt8FullQuant(); c.queryQuantMode = 0; REPORT("a2.tiling.rope_full_quant_mode", Call(c, stream));
    }
    // Left padding on the PFA route (A2/A3 CheckParamsPFA, arch35 CheckKVPaddingCrossover pass it).
    c = Small(16); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {3}); c.hasActKv = true; c.actKv = {70, 40};
    c.opt["queryPaddingSize"] = T({1}, ACL_INT64, {2}); c.hasActQ = true; c.actQ = {12, 14};
    REPORT("ok.pfa_padding", Call(c, stream));
    // The PFA tilings refuse padding beside a shared prefix (A2/A3 RunBigKernelTilingWithParams, arch35 CheckPrefix).
    c = Small(16); c.version = 2; c.opt["kvPaddingSize"] = T({1}, ACL_INT64); c.hasActKv = true; c.actKv = {80, 80};
    c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 32});
    REPORT("tiling.pfa_prefix_padding", Call(c, stream));
    if (!OnA2()) {
        // fused_infer_attention_score_tiling_v2.cpp ConvertContextToParamsPFA / CheckKVPaddingCrossover,
        // then prompt_flash_attention_tiling_v2.cpp CheckTNDLayoutCrossover.
        c = Small(16); c.opt["kvPaddingSize"] = T({1}, ACL_INT64); REPORT("arch35.tiling.padding_kv_lengths", Call(c, stream));
        c = Small(16); c.opt["queryPaddingSize"] = T({1}, ACL_INT64); REPORT("arch35.tiling.padding_q_lengths", Call(c, stream));
        c = Small(16); c.opt["kvPaddingSize"] = T({2}, ACL_INT64); c.hasActKv = true; c.actKv = {80, 80};
        REPORT("arch35.tiling.padding_shape", Call(c, stream));
        c = Small(16); c.k = c.v = {T({1, 2, 80, 32}), T({1, 2, 80, 32})}; c.opt["kvPaddingSize"] = T({1}, ACL_INT64);
        c.hasActKv = true; c.actKv = {80, 80}; REPORT("arch35.tiling.list_padding", Call(c, stream));
        c = PagedPrefill(); c.opt["kvPaddingSize"] = T({1}, ACL_INT64); REPORT("arch35.tiling.paged_padding", Call(c, stream));
        c = Small(16); c.layout = "TND"; c.q = c.out = T({32, 8, 32}); c.k = c.v = {T({160, 2, 32})};
        c.hasActQ = c.hasActKv = true; c.actQ = {16, 32}; c.actKv = {80, 160}; c.opt["queryPaddingSize"] = T({1}, ACL_INT64);
        REPORT("arch35.tiling.tnd_padding", Call(c, stream));
    }
    // Query dequantisation: A2/A3 IFATiling::ProcessQuant (561002); Ascend910_95 not emulated (561003).
    c = Small(1); c.opt["dequantScaleQuery"] = T({2, 8, 1}, ACL_FLOAT); REPORT("query_quant.decode", Call(c, stream));
    if (OnA2()) {
        // TilingProcess4PFA: CheckDequantParams, then ConvertAttrsPFA.
        c = Small(32); c.opt["dequantScaleQuery"] = T({2, 8, 32}, ACL_FLOAT);
        REPORT("a2.tiling.pfa_dequant_query_s", Call(c, stream));
        c = Small(16); c.opt["dequantScaleQuery"] = T({2, 8, 16}, ACL_FLOAT);
        REPORT("a2.tiling.pfa_dequant_query_rope", Call(c, stream));
        c = Small(16); c.queryQuantMode = 1; REPORT("a2.tiling.pfa_query_quant_mode", Call(c, stream));
        c = Small(16); c.antiquantMode = 1; REPORT("a2.tiling.pfa_antiquant_mode", Call(c, stream));
        // TND bf16 with quantScale2 is off RouteToFia and IsUsingFAI: the PFA tiling's
        // CheckLearnableSinkWhenLayoutIsTND, then its TND base-API kernels with the sink.
        c = PfaTnd(128); c.opt["learnableSink"] = T({8}, ACL_BF16); REPORT("a2.ok.pfa_tnd_sink", Call(c, stream));
        c = PfaTnd(128); c.opt["learnableSink"] = T({8, 1}, ACL_BF16); REPORT("a2.tiling.pfa_tnd_sink_rank", Call(c, stream));
        c = PfaTnd(128); c.opt["learnableSink"] = T({4}, ACL_BF16); REPORT("a2.tiling.pfa_tnd_sink_n", Call(c, stream));
        c = PfaTnd(192); c.opt["learnableSink"] = T({8}, ACL_BF16); REPORT("a2.tiling.pfa_tnd_sink_dv", Call(c, stream));
        c = PfaTnd(192); REPORT("a2.ok.pfa_tnd_d192", Call(c, stream));
        // A bf16 MHA TND call with a shared prefix: CheckGqaConstrain refuses the prefix (no FIA-V3), the
        // split-fuse kernels want an fp16 MHA query, so the PFA tiling takes it, whose TND shape read leaves
        // the prefix's batch 0: "prefix batch num(0) only support 1!".
        c = PfaTnd(64); c.k = c.v = {T({64, 8, 64}, ACL_BF16)}; c.kvHeads = 8; c.version = 2;
        c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({16, 8, 64}, ACL_BF16);
        REPORT("a2.tiling.pfa_prefix_tnd", Call(c, stream));
        // TND over a paged cache on the PFA route (D 192, MHA): CheckPASparseMode, CheckPAWhenBaseApi.
        c = PagedTnd(); REPORT("a2.ok.pfa_paged_tnd", Call(c, stream));
        c.lseFlag = true; REPORT("a2.ok.pfa_paged_tnd_lse", Call(c, stream));
        c = PagedTnd(); c.k = c.v = {T({8, 128, 1536}, ACL_BF16)}; REPORT("a2.ok.pfa_paged_tnd_bnbsh", Call(c, stream));
        c = PagedTnd(); c.sparseMode = 1; c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL);
        REPORT("a2.tiling.pfa_paged_tnd_sparse_mode", Call(c, stream));
        c = PagedTnd(); c.opt["attenMask"] = T({64, 384}, ACL_BOOL); REPORT("a2.tiling.pfa_paged_tnd_mask", Call(c, stream));
        c = PagedTnd(); c.actKv = {300}; REPORT("a2.tiling.pfa_paged_tnd_kv_count", Call(c, stream));
        c = PagedTnd(); c.actKv = {300, -1}; REPORT("a2.tiling.pfa_paged_tnd_kv_negative", Call(c, stream));
        c = PagedTnd(); c.blockSize = 64; REPORT("a2.tiling.pfa_paged_tnd_block_size", Call(c, stream));
        c = PagedTnd(); c.k = c.v = {T({8, 8, 64, 192}, ACL_BF16)}; REPORT("a2.tiling.pfa_paged_tnd_cache_block", Call(c, stream));
        c = PagedTnd(); c.actKv = {0, 0}; REPORT("a2.tiling.pfa_paged_tnd_no_blocks", Call(c, stream));
        c = PagedTnd(); c.k = c.v = {T({8, 4, 128, 192}, ACL_BF16)}; REPORT("a2.tiling.pfa_paged_tnd_cache_shape", Call(c, stream));
        c = PagedTnd(); c.opt["blockTable"] = T({2, 2}, ACL_INT32); REPORT("a2.tiling.pfa_paged_tnd_block_table_shape", Call(c, stream));
        c = PagedTnd(); c.k = c.v = {T({4, 8, 128, 192}, ACL_BF16)}; REPORT("a2.tiling.pfa_paged_tnd_cache_blocks", Call(c, stream));
        // NSD (no batch) over a paged cache: CheckPATypeAndShape takes a 3- or 4-D cache.
        c = PagedNsd(); REPORT("a2.ok.pfa_paged_nsd", Call(c, stream));
        c.k = c.v = {T({8, 128, 64})}; REPORT("a2.ok.pfa_paged_nsd_bnbsh", Call(c, stream));
        c = PagedNsd(); c.opt["blockTable"] = T({1, 2}, ACL_INT32); REPORT("a2.tiling.pfa_paged_nsd_block_table_shape", Call(c, stream));
        // The split-fuse route over a paged cache (TND fp16, GQA, innerPrecise 0, [blocks, blockSize, H]):
        // D 256 and key lengths each batch's own; CheckFAIAvailability's rules.
        c = FaiPaged(); REPORT("a2.ok.fai_paged_d256", Call(c, stream));
        c.lseFlag = true; REPORT("a2.ok.fai_paged_lse", Call(c, stream));
        c.lse = T({64, 8}, ACL_FLOAT); REPORT("a2.tiling.fai_lse_shape", Call(c, stream));
        c = FaiPaged(); c.blockSize = 64; REPORT("a2.tiling.fai_block_size", Call(c, stream));
        c = FaiPaged(); c.sparseMode = 3; c.opt["attenMask"] = T({1024, 1024}, ACL_BOOL); REPORT("a2.tiling.fai_mask_shape", Call(c, stream));
        c = FaiPaged(); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); REPORT("a2.tiling.fai_mask_mode", Call(c, stream));
        c = FaiPaged(); c.sparseMode = 3; c.opt["attenMask"] = T({1, 2048, 2048}, ACL_BOOL); REPORT("a2.ok.fai_paged_causal", Call(c, stream));
        // CheckParamsPFA's left-padding rules.
        c = Small(16); c.opt["kvPaddingSize"] = T({1}, ACL_INT64); REPORT("a2.tiling.pfa_padding_kv_lengths", Call(c, stream));
        c = Small(16); c.opt["kvPaddingSize"] = T({2}, ACL_INT64); c.hasActKv = true; c.actKv = {80, 80};
        REPORT("a2.tiling.pfa_padding_shape", Call(c, stream));
        // IFATiling::ProcessAntiQuant: separate key/value antiquant parameters (V2+) on the IFA route.
        c = Small(1); c.version = 2; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["keyAntiquantScale"] = T({1, 2, 1, 32});
        REPORT("a2.tiling.ifa_value_scale_missing", Call(c, stream));
        c.opt["valueAntiquantScale"] = T({1, 2, 1, 32}); c.valueAntiquantMode = 1;
        REPORT("a2.tiling.ifa_value_scale_dtype", Call(c, stream));
        c.keyAntiquantMode = 1; c.valueAntiquantMode = 0; REPORT("a2.tiling.ifa_modes_differ", Call(c, stream));
        c.keyAntiquantMode = c.valueAntiquantMode = 1; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 80}, ACL_FLOAT);
        REPORT("a2.ok.kv_antiquant_per_token", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 79}, ACL_FLOAT);
        REPORT("a2.tiling.ifa_per_token_s", Call(c, stream));
        c.keyAntiquantMode = c.valueAntiquantMode = 4; REPORT("a2.tiling.ifa_mode_paged", Call(c, stream));
        c.keyAntiquantMode = c.valueAntiquantMode = 3; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 80}, ACL_FLOAT);
        REPORT("a2.tiling.ifa_per_token_head", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 2, 80}, ACL_FLOAT);
        REPORT("a2.ok.kv_antiquant_per_token_head", Call(c, stream));
        c.keyAntiquantMode = 0; c.valueAntiquantMode = 1; c.opt["keyAntiquantScale"] = T({1, 2, 1, 32});
        c.opt["valueAntiquantScale"] = T({1, 2, 80}, ACL_FLOAT);
        REPORT("a2.ok.kv_antiquant_channel_token", Call(c, stream));
        c.opt["keyAntiquantScale"] = T({1, 2, 1, 16}); REPORT("a2.tiling.ifa_per_channel", Call(c, stream));
        c.opt["keyAntiquantScale"] = T({1}); REPORT("a2.not_implemented.kv_antiquant_per_tensor_key", Call(c, stream));
        // Modes 4: per-token parameters in the paged cache's blocks [blocks, blockSize].
        c = Paged(true); c.version = 2; c.k = c.v = {T({8, 2, 128, 128}, ACL_INT8)}; c.keyAntiquantMode = c.valueAntiquantMode = 4;
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({8, 128}, ACL_FLOAT);
        REPORT("a2.ok.kv_antiquant_paged_params", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({8, 64}, ACL_FLOAT);
        REPORT("a2.tiling.ifa_paged_params", Call(c, stream));
        // The PFA tiling's KV antiquant: an INT8 key/value beside an FP16 query, S 20 (D 32: no FIA-V3 head size).
        c = Small(20); c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2});
        REPORT("a2.ok.pfa_kv_antiquant", Call(c, stream));
        c.opt["antiquantScale"] = c.opt["antiquantOffset"] = T({2, 2, 1, 32});
        REPORT("a2.ok.pfa_kv_antiquant_per_channel", Call(c, stream));
        c.opt.erase("antiquantOffset"); c.opt["antiquantScale"] = T({3}); REPORT("a2.tiling.pfa_per_tensor_scale", Call(c, stream));
        c.opt["antiquantScale"] = T({2, 2, 32}); REPORT("a2.tiling.pfa_scale_rank", Call(c, stream));
        c.opt.erase("antiquantScale"); REPORT("a2.tiling.pfa_scale_null", Call(c, stream));
        c.opt["antiquantScale"] = T({2}, ACL_FLOAT); REPORT("a2.ok.pfa_kv_antiquant_float_params", Call(c, stream));
        c = Small(20); c.q = c.out = T({2, 8, 20, 48}); c.k = c.v = {T({2, 2, 80, 48}, ACL_INT8)};
        c.opt["antiquantScale"] = T({2}); REPORT("a2.tiling.pfa_d_align_int8", Call(c, stream));
        // softmaxLse beside an INT8 key/value and a shared prefix: the prefix kernels write it after the last key tile.
        c = Small(20); c.version = 2; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["antiquantScale"] = T({2});
        c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 32}, ACL_INT8); c.lseFlag = true;
        REPORT("a2.ok.pfa_prefix_antiquant_lse", Call(c, stream));
        c = Small(20); c.q = c.out = T({2, 8, 20, 40}); c.k = c.v = {T({2, 2, 80, 40})};
        REPORT("a2.tiling.pfa_d_align", Call(c, stream));
        // An INT32 key/value read as INT4 beside an FP16 query, S 20: no PFA kernel but the empty-tensor one.
        c = Small(20); c.q = c.out = T({2, 8, 20, 64}); c.k = c.v = {T({2, 2, 80, 8}, ACL_INT32)}; c.version = 2;
        c.opt["antiquantScale"] = T({2}); REPORT("a2.no_kernel.pfa_int4", Call(c, stream));
        c.lseFlag = true; c.lse = T({2, 8, 20, 1}, ACL_FLOAT); REPORT("a2.no_kernel.pfa_int4_lse", Call(c, stream));
        c.lseFlag = false; c.k = c.v = {T({2, 2, 0, 8}, ACL_INT32)}; REPORT("a2.ok.pfa_int4_empty", Call(c, stream));
        // With a block table the page-attention rules see the unpacked cache [blocks, blockSize, H2], then no kernel.
        c.k = c.v = {T({8, 128, 16}, ACL_INT32)}; c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
        c.blockSize = 128; c.hasActKv = true; c.actKv = {300, 140}; c.layout = "BSH"; c.q = c.out = T({2, 20, 512});
        REPORT("a2.no_kernel.pfa_int4_paged", Call(c, stream));
        c.k = c.v = {T({8, 128, 8}, ACL_INT32)}; REPORT("a2.tiling.pfa_int4_paged_cache_shape", Call(c, stream));
        c = Small(20); c.q = c.out = T({2, 8, 20, 64}); c.k = c.v = {T({2, 2, 80, 8}, ACL_INT32)}; c.version = 2;
        c.k = c.v = {T({2, 2, 80, 8}, ACL_INT32)}; c.q = c.out = T({2, 8, 8, 64}); c.opt.erase("antiquantScale");
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 1, 64});
        REPORT("a2.tiling.pfa_msd_int4", Call(c, stream));
        c = Small(20); c.q.dtype = c.out.dtype = ACL_BF16; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)};
        c.opt["antiquantScale"] = T({2}, ACL_BF16); REPORT("a2.tiling.pfa_bf16_kv_scales", Call(c, stream));
        c.opt.erase("antiquantScale"); c.version = 2; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 1, 32}, ACL_BF16);
        REPORT("a2.tiling.pfa_msd_s", Call(c, stream));
        // Per channel beside a BF16 query: rank-4 parameters fail (with offsets: without them the source's
        // message reads their null shapes), BF16 [N2, D] pass to the kernels.
        c.q = c.out = T({2, 8, 8, 32}, ACL_BF16);
        c.opt["keyAntiquantOffset"] = c.opt["valueAntiquantOffset"] = T({1, 2, 1, 32}, ACL_BF16);
        REPORT("a2.tiling.pfa_msd_channel_rank", Call(c, stream));
        c.opt.erase("keyAntiquantOffset"); c.opt.erase("valueAntiquantOffset");
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 32}, ACL_BF16);
        REPORT("a2.ok.pfa_msd", Call(c, stream));
        c.opt["keyAntiquantScale"] = T({2, 16}, ACL_BF16); REPORT("a2.tiling.pfa_msd_channel_shape", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 32}, ACL_FLOAT);
        REPORT("a2.tiling.pfa_msd_channel_dtype", Call(c, stream));
        // Per token beside an fp16 query: FLOAT [B2, S2].
        c.q = c.out = T({2, 8, 8, 32}); c.keyAntiquantMode = c.valueAntiquantMode = 1;
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 80}, ACL_FLOAT);
        REPORT("a2.ok.pfa_msd_per_token", Call(c, stream));
        c.lseFlag = true; c.lse = T({2, 8, 8, 1}, ACL_FLOAT); REPORT("a2.ok.pfa_msd_lse", Call(c, stream));
        c.lseFlag = false;
        c.opt["valueAntiquantScale"] = T({2, 79}, ACL_FLOAT); REPORT("a2.tiling.pfa_msd_token_shape", Call(c, stream));
        c.valueAntiquantMode = 0; REPORT("a2.tiling.pfa_msd_modes", Call(c, stream));
        // A block table beside an INT8 cache [blocks, blockSize, H2], fp16 BSH query of S 20 > 16: the PA
        // antiquant kernels with the key's and the value's own per-channel scales, causal sparse mode 3.
        c = Small(20); c.layout = "BSH"; c.q = c.out = T({2, 20, 256}); c.version = 2;
        c.k = c.v = {T({8, 128, 64}, ACL_INT8)}; c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
        c.blockSize = 128; c.hasActKv = true; c.actKv = {300, 140}; c.sparseMode = 3;
        c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 64});
        REPORT("a2.ok.pfa_paged_antiquant", Call(c, stream));
        c.lseFlag = true; REPORT("a2.ok.pfa_paged_antiquant_lse", Call(c, stream));
        c.lseFlag = false; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 64}, ACL_FLOAT);
        REPORT("a2.not_implemented.pfa_paged_float_params", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 64});
        c.lseFlag = false; c.keyAntiquantMode = 1; REPORT("a2.tiling.pfa_paged_antiquant_modes", Call(c, stream));
        c.keyAntiquantMode = 0; c.opt["valueAntiquantScale"] = T({1, 32});
        REPORT("a2.tiling.pfa_paged_value_scale_shape", Call(c, stream));
        c.opt["valueAntiquantScale"] = T({1, 64}); c.opt["antiquantScale"] = T({2});
        REPORT("a2.tiling.pfa_paged_antiquant_per_tensor", Call(c, stream));
        c.opt.erase("antiquantScale"); c.innerPrecise = 0; REPORT("a2.tiling.pfa_paged_antiquant_precise", Call(c, stream));
        c.innerPrecise = 1; c.sparseMode = 0; REPORT("a2.tiling.pfa_paged_antiquant_sparse", Call(c, stream));
        c.sparseMode = 3; c.opt.erase("keyAntiquantScale"); c.opt.erase("valueAntiquantScale");
        REPORT("a2.tiling.pfa_paged_key_scale_null", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 1, 32}); c.layout = "BNSD";
        c.q = c.out = T({2, 8, 20, 32}); REPORT("a2.tiling.pfa_paged_antiquant_layout", Call(c, stream));
        // CheckPostQuantParams: an INT8 output quantised per channel takes no padding.
        c = Small(16); c.out.dtype = ACL_INT8; c.opt["quantScale2"] = T({8, 32}, ACL_FLOAT);
        c.opt["kvPaddingSize"] = T({1}, ACL_INT64); c.hasActKv = true; c.actKv = {80, 80};
        REPORT("a2.tiling.pfa_post_quant_padding", Call(c, stream));
    }
    // MLA decode runs on every chip (A2/A3: the FIA-V3 MLA kernels; Ascend910_95: IFA MLA).
    c = MlaDecode(); REPORT("ok.mla_decode", Call(c, stream));
    c = PagedMlaDecode(); REPORT("ok.mla_paged", Call(c, stream));
    // A block table: the FIA-V3 route on Atlas A2/A3, PromptFlashAttentionTilingV2 on Ascend910_95.
    c = Paged(false); REPORT("ok.paged_bsh_cache", Call(c, stream));
    c = Paged(true); REPORT("ok.paged_bnsd_cache", Call(c, stream));
    c = Paged(true); c.lseFlag = true; REPORT("ok.paged_lse", Call(c, stream));
    c = PagedPrefill(); REPORT("ok.paged_prefill", Call(c, stream));
    if (!OnA2()) {
        // A 5-D (NZ) cache [blocks, N2, D / D0, blockSize, D0], D0 the elements of 32 bytes (CheckPACacheShape).
        c = Small(16); c.k = c.v = {T({8, 2, 2, 128, 16})}; c.opt["blockTable"] = T({2, 1}, ACL_INT32, {0, 1});
        c.blockSize = 128; c.hasActKv = true; c.actKv = {80, 80};
        REPORT("arch35.ok.paged_nz", Call(c, stream));
        c.lseFlag = true; REPORT("arch35.ok.paged_nz_lse", Call(c, stream));
        c.lseFlag = false; c.k = c.v = {T({8, 2, 4, 128, 8})}; REPORT("arch35.tiling.paged_nz_d0", Call(c, stream));
        // TND over a paged cache: B from actualSeqLengths, each batch's own key length (CheckActSeq lets it
        // decrease and never compares it with a key T), S2 = max blocks x blockSize (3 x 128 here).
        c = PagedPrefill(); c.layout = "TND"; c.q = c.out = T({128, 8, 128}); c.lse = T({128, 8, 1}, ACL_FLOAT);
        c.hasActQ = true; c.actQ = {64, 128};
        REPORT("arch35.ok.paged_tnd", Call(c, stream));
        c.lseFlag = true; REPORT("arch35.ok.paged_tnd_lse", Call(c, stream));
        c.lseFlag = false; c.actKv = {300, -5}; REPORT("arch35.tiling.paged_tnd_kv_negative", Call(c, stream));
        c.actKv = {300}; REPORT("arch35.tiling.paged_tnd_kv_count", Call(c, stream));
        c.actKv = {300, 140}; c.opt["blockTable"] = T({3, 4}, ACL_INT32); REPORT("arch35.tiling.paged_tnd_block_table_shape", Call(c, stream));
        c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
        c.opt["attenMask"] = T({64, 384}, ACL_BOOL); REPORT("arch35.ok.paged_tnd_mask", Call(c, stream));
        c.opt["attenMask"] = T({64, 300}, ACL_BOOL); REPORT("arch35.tiling.paged_tnd_mask_s2", Call(c, stream));
        // NTD is no layout of PromptFlashAttentionTilingV2 (SetInputLayout), paged or not.
        c = PagedPrefill(); c.layout = "NTD"; c.q = c.out = T({8, 128, 128}); c.lse = T({128, 8, 1}, ACL_FLOAT);
        c.hasActQ = true; c.actQ = {64, 128};
        REPORT("arch35.tiling.paged_ntd", Call(c, stream));
        // queryRope/keyRope: PromptFlashAttentionTilingV2 CheckRope (D 128: PFARope, run; D 512: IFA MLA and
        // S = 1 checked, then not emulated), the paged keyRope by CheckPACacheShape.
        c = Rope(); REPORT("arch35.ok.rope", Call(c, stream));
        c = Rope(); c.opt.erase("keyRope"); REPORT("arch35.tiling.rope_pair", Call(c, stream));
        c = Rope(); c.opt["queryRope"] = T({2, 8, 64, 32}); REPORT("arch35.tiling.rope_d", Call(c, stream));
        c = Rope(); c.opt["keyRope"] = T({2, 2, 60, 64}); REPORT("arch35.tiling.rope_shape", Call(c, stream));
        // A key/value list beside a rope (CheckTensorList): one keyRope of the list's batches, each key of its S.
        c = Rope(); c.k = c.v = {T({1, 2, 80, 128}), T({1, 2, 80, 128})}; REPORT("arch35.ok.rope_list", Call(c, stream));
        c.opt["keyRope"] = T({3, 2, 80, 64}); REPORT("arch35.tiling.rope_list_batch", Call(c, stream));
        c.opt["keyRope"] = T({2, 2, 80, 64}); c.k = c.v = {T({1, 2, 80, 128}), T({1, 2, 70, 128})};
        REPORT("arch35.tiling.rope_list_s", Call(c, stream));
        c = Rope(); c.q = c.out = T({2, 8, 64, 64}); c.k = c.v = {T({2, 2, 80, 64})}; REPORT("arch35.tiling.rope_head_d", Call(c, stream));
        c = Rope(); c.heads = 130; c.kvHeads = 2; c.q = c.out = T({2, 130, 64, 128}); c.lse = T({2, 130, 64, 1}, ACL_FLOAT);
        c.opt["queryRope"] = T({2, 130, 64, 64}); REPORT("arch35.tiling.rope_group", Call(c, stream));
        c = PagedPrefill(); c.version = 3; c.opt["queryRope"] = T({2, 8, 64, 64}); c.opt["keyRope"] = T({8, 2, 128, 64});
        REPORT("arch35.ok.paged_rope", Call(c, stream));
        c.opt["keyRope"] = T({8, 128, 128}); REPORT("arch35.tiling.paged_key_rope_rank", Call(c, stream));
        c.opt["keyRope"] = T({8, 2, 128, 32}); REPORT("arch35.tiling.paged_key_rope_cache", Call(c, stream));
        // S = 1 with a rope: CheckRope switches the tiling's IFA mode off (a PFARope row).
        c = Rope(); c.q = c.out = T({2, 8, 1, 128}); c.lse = T({2, 8, 1, 1}, ACL_FLOAT); c.opt["queryRope"] = T({2, 8, 1, 64});
        REPORT("arch35.ok.rope_decode", Call(c, stream));
        // IFA MLA (head size 512): CheckIFAMLA, CheckActSeqLen, CheckMaskCrossIFAMLA, the IFA block-size rule.
        c = Rope(); c.q = c.out = T({2, 8, 64, 512}); c.k = c.v = {T({2, 2, 80, 512})}; REPORT("arch35.tiling.rope_mla_s", Call(c, stream));
        c = MlaDecode(); REPORT("arch35.ok.mla", Call(c, stream));
        c = MlaDecode(4); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 3; REPORT("arch35.ok.mla_causal", Call(c, stream));
        c = MlaDecode(17); REPORT("arch35.tiling.rope_mla_s_17", Call(c, stream));
        c = MlaDecode(); c.heads = 128; c.q = c.out = T({2, 128, 1, 512}); c.lse = T({2, 128, 1, 1}, ACL_FLOAT);
        c.opt["queryRope"] = T({2, 128, 1, 64}); REPORT("arch35.ok.mla_128_heads", Call(c, stream));
        c = MlaDecode(); c.heads = 16; c.q = c.out = T({2, 16, 1, 512}); c.lse = T({2, 16, 1, 1}, ACL_FLOAT);
        c.opt["queryRope"] = T({2, 16, 1, 64}); REPORT("arch35.tiling.rope_mla_heads", Call(c, stream));
        c = MlaDecode(); c.kvHeads = 0; REPORT("arch35.tiling.rope_mla_kv_heads", Call(c, stream));
        c = MlaDecode(); c.hasActQ = true; c.actQ = {1, 1}; REPORT("arch35.tiling.rope_mla_actual_q", Call(c, stream));
        c = MlaDecode(); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 3; REPORT("arch35.tiling.rope_mla_mask_decode", Call(c, stream));
        c = MlaDecode(4); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 2; REPORT("arch35.tiling.rope_mla_mask", Call(c, stream));
        c = PagedMlaDecode(); REPORT("arch35.ok.paged_mla_block_16", Call(c, stream));
        c = PagedMlaDecode(); c.k = c.v = {T({10, 24, 512})}; c.opt["keyRope"] = T({10, 24, 64}); c.blockSize = 24;
        REPORT("arch35.tiling.paged_mla_block_size", Call(c, stream));
        c = Rope(); c.layout = "TND"; c.q = c.out = T({64, 8, 128}); c.lse = T({64, 8, 1}, ACL_FLOAT); c.k = c.v = {T({64, 2, 128})};
        c.opt["queryRope"] = T({64, 8, 64}); c.opt["keyRope"] = T({64, 2, 64});
        c.hasActQ = c.hasActKv = true; c.actQ = c.actKv = {40, 64}; REPORT("arch35.ok.rope_tnd", Call(c, stream));
        c.opt["keyRope"] = T({60, 2, 64}); REPORT("arch35.tiling.rope_tnd_t", Call(c, stream));
        c.opt["keyRope"] = T({64, 2, 64}); c.q = c.out = T({2, 8, 128}); c.lse = T({2, 8, 1}, ACL_FLOAT);
        c.opt["queryRope"] = T({2, 8, 64}); c.actQ = {1, 2}; REPORT("arch35.ok.rope_tnd_decode", Call(c, stream));
        // GetMaxSeq: the longest batch decides the IFA mode, so one row in a batch is no decode.
        c.q = c.out = T({3, 8, 128}); c.lse = T({3, 8, 1}, ACL_FLOAT); c.opt["queryRope"] = T({3, 8, 64}); c.actQ = {1, 3};
        REPORT("arch35.ok.rope_tnd_ragged", Call(c, stream));
        // S = 1 is the tiling's IFA mode: blockSize a multiple of 32 bytes (CheckPATypeAndShape).
        c = Paged(true); c.k = c.v = {T({16, 2, 48, 128})}; c.opt["blockTable"] = T({2, 8}, ACL_INT32); c.blockSize = 48;
        REPORT("arch35.ok.paged_decode_block_48", Call(c, stream));
        c = Paged(true); c.k = c.v = {T({16, 2, 40, 128})}; c.opt["blockTable"] = T({2, 8}, ACL_INT32); c.blockSize = 40;
        REPORT("arch35.tiling.paged_block_size_decode", Call(c, stream));
        c = PagedPrefill(); c.k = c.v = {T({16, 2, 64, 128})}; c.opt["blockTable"] = T({2, 8}, ACL_INT32); c.blockSize = 64;
        REPORT("arch35.tiling.paged_block_size", Call(c, stream));
        c = PagedPrefill(); c.hasActKv = false; REPORT("arch35.tiling.paged_actual_kv_required", Call(c, stream));
        c = PagedPrefill(); c.k = c.v = {T({4, 2, 128, 128})}; REPORT("arch35.tiling.paged_cache_shape", Call(c, stream));
        c = PagedPrefill(); c.v = {T({8, 2, 128, 64})}; REPORT("arch35.tiling.paged_key_value", Call(c, stream));
        c = PagedPrefill(); c.layout = "BSH"; c.q = c.out = T({2, 64, 1024}); REPORT("arch35.tiling.paged_cache_rank", Call(c, stream));
        c = PagedPrefill(); c.opt["blockTable"] = T({2, 2}, ACL_INT32); REPORT("arch35.tiling.paged_block_table_shape", Call(c, stream));
        c = PagedPrefill(); c.opt["blockTable"] = T({2, 4, 1}, ACL_INT32); REPORT("arch35.tiling.paged_block_table_rank", Call(c, stream));
        c = PagedPrefill(); c.actKv = {300, -5}; REPORT("arch35.tiling.paged_actual_kv_negative", Call(c, stream));
        c = PagedPrefill(); c.version = 2; c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 128});
        REPORT("arch35.tiling.paged_shared_prefix", Call(c, stream));
        // IFATilingV2::ProcessAntiQuant in split mode: separate key/value antiquant parameters (V2+).
        c = Small(1); c.version = 2; c.k = c.v = {T({2, 2, 80, 32}, ACL_INT8)}; c.opt["keyAntiquantScale"] = T({1, 2, 1, 32});
        REPORT("arch35.tiling.split_value_scale_missing", Call(c, stream));
        c.opt["valueAntiquantScale"] = T({1, 2, 32}); REPORT("arch35.tiling.split_scale_shapes", Call(c, stream));
        c.keyAntiquantMode = c.valueAntiquantMode = 1; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 80}, ACL_FLOAT);
        REPORT("arch35.ok.kv_antiquant_per_token", Call(c, stream));
        c.valueAntiquantMode = 3; REPORT("arch35.tiling.split_modes_differ", Call(c, stream));
        c.valueAntiquantMode = 1; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1, 2, 79}, ACL_FLOAT);
        REPORT("arch35.tiling.split_per_token_s", Call(c, stream));
        c.keyAntiquantMode = c.valueAntiquantMode = 3; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 2, 80}, ACL_FLOAT);
        REPORT("arch35.ok.kv_antiquant_per_token_head", Call(c, stream));
        c.keyAntiquantMode = 0; c.valueAntiquantMode = 1; c.opt["keyAntiquantScale"] = T({1, 2, 1, 32});
        c.opt["valueAntiquantScale"] = T({1, 2, 80}, ACL_FLOAT); REPORT("arch35.ok.kv_antiquant_channel_token", Call(c, stream));
        c.opt["keyAntiquantScale"] = T({1, 2, 1, 16}); REPORT("arch35.tiling.split_per_channel", Call(c, stream));
        c.keyAntiquantMode = c.valueAntiquantMode = 4; c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({8, 128}, ACL_FLOAT);
        REPORT("arch35.tiling.split_pa_unpaged", Call(c, stream));
        // Modes 4 in a paged cache: the parameters beside the cache's blocks [blocks, blockSize].
        c = Paged(true); c.version = 2; c.k = c.v = {T({8, 2, 128, 128}, ACL_INT8)}; c.keyAntiquantMode = c.valueAntiquantMode = 4;
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({8, 128}, ACL_FLOAT);
        REPORT("arch35.ok.kv_antiquant_paged_params", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({8, 64}, ACL_FLOAT);
        REPORT("arch35.tiling.split_paged_params", Call(c, stream));
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({8, 128}, ACL_FLOAT);
        // Per token over a 5-D (NZ) paged cache: the NZ layout only changes the cache's copy.
        c.k = c.v = {T({8, 2, 8, 128, 16}, ACL_INT8)}; c.keyAntiquantMode = c.valueAntiquantMode = 1;
        c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 512}, ACL_FLOAT);
        REPORT("arch35.ok.kv_antiquant_paged_nz", Call(c, stream));
    }
    if (!OnA2()) {
        // Per-block full quant: PromptFlashAttentionTilingV2 SetAttributeInfo, CheckPerblockQuantParams,
        // CheckPerblockCrossover; an 8-bit float query outside per block is per tensor, INT8 only.
        c = PerBlock(); REPORT("arch35.ok.per_block", Call(c, stream));
        c = PerBlock(ACL_HIFLOAT8); c.out = T({2, 8, 64, 128}, ACL_BF16); REPORT("arch35.ok.per_block_hif8", Call(c, stream));
        c = PerBlock(); c.layout = "BSH"; c.q = T({2, 64, 1024}, ACL_FLOAT8_E4M3FN); c.out = T({2, 64, 1024});
        c.k = c.v = {T({2, 80, 256}, ACL_FLOAT8_E4M3FN)}; REPORT("arch35.ok.per_block_bsh", Call(c, stream));
        c = PerBlock(); c.queryQuantMode = 0; REPORT("arch35.tiling.per_tensor_fp8", Call(c, stream));
        c = PerBlock(); c.out = T({2, 8, 64, 128}, ACL_FLOAT8_E4M3FN); REPORT("arch35.dtype.per_block_out", Call(c, stream));
        c = PerBlock(); c.k = c.v = {T({4, 2, 128, 128}, ACL_FLOAT8_E4M3FN)}; c.opt["blockTable"] = T({2, 2}, ACL_INT32, {0, 1, 2, 3});
        c.blockSize = 128; c.hasActKv = true; c.actKv = {200, 100}; REPORT("arch35.tiling.per_block_paged", Call(c, stream));
        c = PerBlock(); c.k = c.v = {T({1, 2, 80, 128}, ACL_FLOAT8_E4M3FN), T({1, 2, 60, 128}, ACL_FLOAT8_E4M3FN)};
        REPORT("arch35.tiling.per_block_tensor_list", Call(c, stream));
        c = PerBlock(); c.opt.erase("valueAntiquantScale"); REPORT("arch35.tiling.per_block_scale_missing", Call(c, stream));
        c = PerBlock(); c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({2, 2, 1, 1});
        REPORT("arch35.tiling.per_block_scale_dtype", Call(c, stream));
        c = PerBlock(); c.layout = "TND"; c.q = T({64, 8, 128}, ACL_FLOAT8_E4M3FN); c.out = T({64, 8, 128});
        c.k = c.v = {T({64, 2, 128}, ACL_FLOAT8_E4M3FN)}; c.hasActQ = c.hasActKv = true; c.actQ = c.actKv = {40, 64};
        REPORT("arch35.tiling.per_block_tnd", Call(c, stream));
        c = PerBlock(); c.q = T({2, 8, 64, 256}, ACL_FLOAT8_E4M3FN); c.out = T({2, 8, 64, 256});
        c.k = c.v = {T({2, 2, 80, 256}, ACL_FLOAT8_E4M3FN)}; REPORT("arch35.tiling.per_block_head_size", Call(c, stream));
        c = PerBlock(); c.opt["dequantScaleQuery"] = T({2, 8, 1}, ACL_FLOAT); REPORT("arch35.tiling.per_block_scale_rank", Call(c, stream));
        c = PerBlock(); c.opt["dequantScaleQuery"] = T({2, 8, 2, 1}, ACL_FLOAT); REPORT("arch35.tiling.per_block_query_scale_shape", Call(c, stream));
        c = PerBlock(); c.opt["keyAntiquantScale"] = T({2, 8, 1, 1}, ACL_FLOAT); REPORT("arch35.tiling.per_block_key_scale_shape", Call(c, stream));
        c = PerBlock(); c.hasActQ = true; c.actQ = {64, 64}; REPORT("arch35.tiling.per_block_actual_seq", Call(c, stream));
        c = PerBlock(); c.innerPrecise = 2; REPORT("arch35.tiling.per_block_inner_precise", Call(c, stream));
        c = PerBlock(); c.lseFlag = true; REPORT("arch35.tiling.per_block_lse", Call(c, stream));
        c = PerBlock(); c.out = T({2, 8, 64, 128}, ACL_BF16); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 3;
        REPORT("arch35.tiling.per_block_mask", Call(c, stream));
        c = PerBlock(); c.opt["pseShift"] = T({2, 8, 64, 80}); REPORT("arch35.tiling.per_block_pse", Call(c, stream));
        // a shared prefix: GetEnableDN picks the ND kernels, not emulated
        c = PerBlock(); c.out = T({2, 8, 64, 128}, ACL_BF16);
        c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 2, 16, 128}, ACL_FLOAT8_E4M3FN);
        REPORT("arch35.not_implemented.per_block_prefix", Call(c, stream));
        // FP8 E4M3 query, key and value with queryRope and keyRope: MLA full quant, CheckMLAFullQuant after the
        // rope rules; its kernels run for D 512 (IFA MLA) over BSH/BSND/BNSD, dense or paged.
        c = MlaFullQuant(); REPORT("arch35.ok.mla_full_quant", Call(c, stream));
        c = MlaFullQuant(4); c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 3;
        REPORT("arch35.ok.mla_full_quant_causal", Call(c, stream));
        c = MlaFullQuant(); c.layout = "BSH"; c.q = T({2, 1, 32 * 512}, ACL_FLOAT8_E4M3FN); c.out = T({2, 1, 32 * 512}, ACL_BF16);
        c.k = c.v = {T({2, 80, 512}, ACL_FLOAT8_E4M3FN)}; c.opt["queryRope"] = T({2, 1, 32 * 64}, ACL_BF16);
        c.opt["keyRope"] = T({2, 80, 64}, ACL_BF16); c.opt["dequantScaleQuery"] = T({2, 1, 32}, ACL_FLOAT);
        REPORT("arch35.ok.mla_full_quant_bsh", Call(c, stream));
        c = MlaFullQuant(); c.layout = "TND"; c.q = T({4, 32, 512}, ACL_FLOAT8_E4M3FN); c.out = T({4, 32, 512}, ACL_BF16);
        c.k = c.v = {T({160, 1, 512}, ACL_FLOAT8_E4M3FN)}; c.opt["queryRope"] = T({4, 32, 64}, ACL_BF16);
        c.opt["keyRope"] = T({160, 1, 64}, ACL_BF16); c.opt["dequantScaleQuery"] = T({4, 32}, ACL_FLOAT);
        c.opt["attenMask"] = T({2048, 2048}, ACL_BOOL); c.sparseMode = 3; c.hasActQ = c.hasActKv = true;
        c.actQ = {1, 4}; c.actKv = {60, 160}; REPORT("arch35.ok.mla_full_quant_tnd", Call(c, stream));
        // a paged cache of 32-token blocks (the IFA rule: 32 bytes of FP8)
        c = MlaFullQuant(); c.k = c.v = {T({5, 32, 512}, ACL_FLOAT8_E4M3FN)}; c.opt["keyRope"] = T({5, 32, 64}, ACL_BF16);
        c.opt["blockTable"] = T({2, 3}, ACL_INT32, {0, 1, 2, 3, 4, 0}); c.blockSize = 32; c.hasActKv = true; c.actKv = {80, 50};
        REPORT("arch35.ok.mla_full_quant_paged", Call(c, stream));
        // the OpDef pairs BF16 ropes with a BF16 output only, and FLOAT scales alone (the kernel key, 561003)
        c = MlaFullQuant(); c.out = T({2, 32, 1, 512}); REPORT("arch35.kernel.mla_fq_out_dtype", Call(c, stream));
        c = MlaFullQuant(); c.opt["valueAntiquantScale"] = T({1}, ACL_BF16); REPORT("arch35.kernel.mla_fq_scale_dtype", Call(c, stream));
        c = MlaFullQuant(); c.out = T({2, 32, 1, 512}); c.opt["queryRope"] = T({2, 32, 1, 64}); c.opt["keyRope"] = T({2, 1, 80, 64});
        REPORT("arch35.tiling.mla_fq_out_dtype", Call(c, stream));
        c = MlaFullQuant(); c.opt["keyRope"] = T({2, 1, 80, 64}); c.opt["queryRope"] = T({2, 32, 1, 64});
        REPORT("arch35.tiling.mla_fq_rope_dtype", Call(c, stream));
        c = MlaFullQuant(); c.queryQuantMode = 7; REPORT("arch35.tiling.mla_fq_query_mode", Call(c, stream));
        c = MlaFullQuant(); c.valueAntiquantMode = 1; REPORT("arch35.tiling.mla_fq_kv_mode", Call(c, stream));
        c = MlaFullQuant(); c.opt.erase("dequantScaleQuery"); REPORT("arch35.tiling.mla_fq_query_scale_null", Call(c, stream));
        c = MlaFullQuant(); c.opt.erase("keyAntiquantScale"); REPORT("arch35.tiling.mla_fq_kv_scale_null", Call(c, stream));
        // the shape rule fails only when both halves do (!CheckQScaleShape4MLAFullQuant && !CheckKVScaleShape4MLAFullQuant)
        c = MlaFullQuant(); c.opt["dequantScaleQuery"] = T({2, 32, 1, 1}, ACL_FLOAT); c.opt["keyAntiquantScale"] = T({2}, ACL_FLOAT);
        REPORT("arch35.tiling.mla_fq_scale_shape", Call(c, stream));
        c = MlaFullQuant(); c.opt["dequantScaleQuery"] = T({2, 32, 1, 1}, ACL_FLOAT); REPORT("arch35.ok.mla_full_quant_query_scale_4d", Call(c, stream));
        c = MlaFullQuant(); c.opt["keyAntiquantScale"] = T({2}, ACL_FLOAT); REPORT("arch35.ok.mla_full_quant_key_scale_2", Call(c, stream));
        c = MlaFullQuant(); c.opt["keyAntiquantOffset"] = T({1}, ACL_FLOAT); REPORT("arch35.tiling.mla_fq_offset", Call(c, stream));
        c = MlaFullQuant(); c.opt["deqScale1"] = T({1}, ACL_FLOAT); REPORT("arch35.tiling.mla_fq_int8_scales", Call(c, stream));
        c = MlaFullQuant(); c.opt["keySharedPrefix"] = c.opt["valueSharedPrefix"] = T({1, 1, 16, 512}, ACL_FLOAT8_E4M3FN);
        REPORT("arch35.tiling.mla_fq_prefix", Call(c, stream));
        // checked, then no kernel (561003): D 128 (PFARope) and pseShift name tiling keys FIA's kernel list lacks
        c = PerBlock(); c.queryQuantMode = 3; c.keyAntiquantMode = c.valueAntiquantMode = 0; c.out = T({2, 8, 64, 128}, ACL_BF16);
        c.opt["queryRope"] = T({2, 8, 64, 64}, ACL_BF16); c.opt["keyRope"] = T({2, 2, 80, 64}, ACL_BF16);
        c.opt["dequantScaleQuery"] = T({2, 8, 64}, ACL_FLOAT); c.opt["keyAntiquantScale"] = c.opt["valueAntiquantScale"] = T({1}, ACL_FLOAT);
        REPORT("arch35.no_kernel.mla_full_quant_pfa_rope", Call(c, stream));
        c = MlaFullQuant(); c.lseFlag = true; c.lse = T({2, 32, 1, 1}, ACL_FLOAT); REPORT("arch35.ok.mla_full_quant_lse", Call(c, stream));
        c = MlaFullQuant(); c.opt["pseShift"] = T({2, 32, 1, 80}); REPORT("arch35.no_kernel.mla_full_quant_pse", Call(c, stream));
        // a dequantScaleQuery the kernel reads past (561003, refused)
        c = MlaFullQuant(); c.opt["dequantScaleQuery"] = T({2, 16}, ACL_FLOAT); REPORT("arch35.refused.mla_full_quant_short_scale", Call(c, stream));
        // left padding: the query's needs actualSeqLengths, which IFA MLA refuses outside TND; the key's runs
        c = MlaFullQuant(); c.opt["queryPaddingSize"] = T({1}, ACL_INT64, {0}); c.hasActQ = true; c.actQ = {1, 1};
        REPORT("arch35.tiling.mla_full_quant_query_padding", Call(c, stream));
        c = MlaFullQuant(); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {3}); c.hasActKv = true; c.actKv = {60, 77};
        REPORT("arch35.ok.mla_full_quant_kv_padding", Call(c, stream));
    }
    // FiaInfoParser on Atlas A2/A3, TilingV2 on Ascend910_95 (561002).
    c = Prefill(); c.heads = 0; REPORT("tiling.heads_zero", Call(c, stream));
    if (OnA2()) {
        c = Prefill(); c.kvHeads = 3; REPORT("a2.tiling.group", Call(c, stream));
        c = Prefill(); c.v = {T({2, 2, 80, 128}), T({2, 2, 80, 128})}; REPORT("a2.tiling.list_lengths", Call(c, stream));
    }
    return 0;
}
