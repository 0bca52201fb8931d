// aclnnFusedInferAttentionScoreV2's shared prefix (keySharedPrefix, valueSharedPrefix,
// actualSharedPrefixLen) on the IFA (query S 1) and PFA routes through the C ABI, D 32 (no FIA-V3
// head size): dense, tensor-list and paged keys, one rule per case; then TND D 128 calls of the A2/A3
// split-fuse route ("tnd." cases). Prints "<case> <status>"; the
// pytest asserts every code, per chip (ACLNN_EMU_SOC). "arch35." cases run on Ascend910_95 only, "a2."
// ones on Atlas A2/A3 only.
#include <map>
#include <string>

#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "common.h"
#include "fia_spec.h"

struct Case {
    Spec q = T({2, 4, 1, 32});
    std::vector<Spec> k = {T({2, 2, 40, 32})}, v = {T({2, 2, 40, 32})};
    bool hasKeyPrefix = true, hasValuePrefix = true;
    Spec keyPrefix = T({1, 2, 16, 32}), valuePrefix = T({1, 2, 16, 32});
    std::vector<int64_t> prefixLen = {12};  // empty: NULL
    std::map<std::string, Spec> opt;  // antiquantScale, blockTable, kvPaddingSize
    std::vector<int64_t> actQ, actKv;  // empty: NULL
    int64_t blockSize = 0, kvHeads = 2, innerPrecise = 1;
    const char *layout = "BNSD";
};

static int Call(const Case &c, aclrtStream stream) {
    TensorPool pool;
    auto make = [&](const Spec &s) { return pool(s.shape, s.dtype, s.values); };
    auto optional = [&](const char *name) {
        auto found = c.opt.find(name);
        return found == c.opt.end() ? nullptr : make(found->second);
    };
    auto list = [&](const std::vector<Spec> &specs) {
        std::vector<std::pair<std::vector<int64_t>, aclDataType>> shapes;
        for (const Spec &s : specs) shapes.emplace_back(s.shape, s.dtype);
        return pool.List(shapes);
    };
    auto ints = [](const std::vector<int64_t> &v) {
        return v.empty() ? nullptr : aclCreateIntArray(v.data(), v.size());
    };
    std::vector<int64_t> outShape = c.q.shape;
    aclTensor *q = make(c.q), *out = make(T(outShape)), *lse = make(T({1}, ACL_FLOAT));
    aclTensorList *k = list(c.k), *v = list(c.v);
    aclTensor *kp = c.hasKeyPrefix ? make(c.keyPrefix) : nullptr;
    aclTensor *vp = c.hasValuePrefix ? make(c.valuePrefix) : nullptr;
    aclIntArray *actQ = ints(c.actQ), *actKv = ints(c.actKv), *prefixLen = ints(c.prefixLen);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    int ret = aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
        q, k, v, nullptr, nullptr, actQ, actKv, nullptr, nullptr, nullptr, nullptr, nullptr,
        optional("antiquantScale"), nullptr, optional("blockTable"), nullptr, optional("kvPaddingSize"), nullptr,
        nullptr, nullptr, nullptr, kp, vp, prefixLen, 4, 0.176, 2147483647, 2147483647, const_cast<char *>(c.layout),
        c.kvHeads, 0, c.innerPrecise, c.blockSize, 0, false, 0, 0, out, lse, &ws, &ex);
    ret = RunPhase2(stream, ret, ws, ex, aclnnFusedInferAttentionScoreV2);
    for (aclIntArray *a : {actQ, actKv, prefixLen})
        if (a) aclDestroyIntArray(a);
    aclDestroyTensorList(k);
    aclDestroyTensorList(v);
    return ret;
}

// Decode (S 1: the IFA route on Atlas A2/A3, the PFA route on Ascend910_95), or prefill (S 16: PFA).
// D 128 is a FIA-V3 head size, which the prefix keeps off RouteToFia (CheckGqaFeatureSupport).
static Case Dense(int64_t s = 1, int64_t d = 32) {
    Case c;
    c.q = T({2, 4, s, d});
    c.k = c.v = {T({2, 2, 40, d})};
    c.keyPrefix = c.valuePrefix = T({1, 2, 16, d});
    return c;
}

// One [1, N2, S_b, D] tensor per batch.
static Case Listed(int64_t s = 1, int64_t d = 32) {
    Case c = Dense(s, d);
    c.k = c.v = {T({1, 2, 40, d}), T({1, 2, 70, d})};
    return c;
}

// A paged cache (blocks, N2, blockSize, D) of 8 blocks of 128.
static Case Paged(int64_t s = 1, int64_t d = 32) {
    Case c = Dense(s, d);
    c.k = c.v = {T({8, 2, 128, d})};
    c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
    c.blockSize = 128;
    c.actKv = {300, 90};
    return c;
}

// INT8 key/value (and prefix) with a per-channel antiquantScale: the IFA route on every chip.
static Case Int8(Case c) {
    for (auto *specs : {&c.k, &c.v})
        for (Spec &s : *specs) s.dtype = ACL_INT8;
    c.keyPrefix.dtype = c.valuePrefix.dtype = ACL_INT8;
    c.opt["antiquantScale"] = T({2, 2, 1, 32});
    return c;
}

// TND FLOAT16, D 128, batches of 8 and 16 rows: MHA with innerPrecise 1 and no mask, which Atlas A2/A3's
// CheckSpecConditions keeps off RouteToFia and IsUsingFAI sends to the split-fuse tiling.
static Case SplitFuse() {
    Case c;
    c.layout = "TND";
    c.q = T({16, 4, 128});
    c.k = c.v = {T({16, 4, 128})};
    c.kvHeads = 4;
    c.keyPrefix = c.valuePrefix = T({1, 4, 16, 128});
    c.actQ = c.actKv = {8, 16};
    return c;
}

int main() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    Case c;
    for (int64_t d : {32, 128})
    for (int64_t s : {1, 16}) {
        std::string at = std::string(s == 1 ? "_decode" : "_prefill") + (d == 128 ? "_d128" : "");
        auto report = [&](const std::string &name, const Case &x) { REPORT((name + at).c_str(), Call(x, stream)); };
        report("ok.dense", Dense(s, d));
        report("list", Listed(s, d));
        report("paged", Paged(s, d));
        c = Dense(s, d); c.hasValuePrefix = false; report("key_only", c);
        c = Dense(s, d); c.hasKeyPrefix = false; report("value_only", c);
        c = Dense(s, d); c.prefixLen = {17}; report("length_range", c);
        c = Dense(s, d); c.prefixLen = {-1}; report("length_negative", c);
        c = Dense(s, d); c.prefixLen = {12, 12}; report("length_count", c);
        c = Dense(s, d); c.keyPrefix = c.valuePrefix = T({2, 2, 16, d}); report("batch_two", c);
        c = Dense(s, d); c.keyPrefix = c.valuePrefix = T({1, 1, 16, d}); report("heads", c);
        c = Dense(s, d); c.keyPrefix = c.valuePrefix = T({1, 2, 0, d}); c.prefixLen = {}; report("empty", c);
        c = Dense(s, d); c.keyPrefix = c.valuePrefix = T({1, 16, 2 * d}); report("rank", c);
        c = Dense(s, d); c.valuePrefix = T({1, 2, 12, d}); report("shapes", c);
        c = Dense(s, d); c.actKv = {40, 30}; c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {0}); report("kv_padding", c);
    }
    REPORT("int8.dense", Call(Int8(Dense()), stream));
    REPORT("int8.list", Call(Int8(Listed()), stream));
    REPORT("int8.paged", Call(Int8(Paged()), stream));
    c = Int8(Dense()); c.hasKeyPrefix = false; REPORT("int8.value_only", Call(c, stream));
    // A TND prefix on the split-fuse route: its shape, its length count and a paged cache beside it.
    REPORT("tnd.split_fuse_mha", Call(SplitFuse(), stream));
    c = SplitFuse(); c.keyPrefix = c.valuePrefix = T({2, 4, 16, 128}); c.prefixLen = {12, 12};
    REPORT("tnd.split_fuse_prefix_unfit", Call(c, stream));
    c = SplitFuse(); c.k = c.v = {T({16, 2, 128})}; c.kvHeads = 2; c.innerPrecise = 0;
    c.keyPrefix = c.valuePrefix = T({1, 2, 16, 128}); REPORT("tnd.split_fuse_gqa", Call(c, stream));
    c.k = c.v = {T({8, 128, 256})}; c.opt["blockTable"] = T({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7});
    c.blockSize = 128; REPORT("tnd.split_fuse_gqa_paged", Call(c, stream));
    if (OnA2()) {
        // IsUsingFAI reads no key dtype: an INT8 key/value (and prefix) beside the FLOAT16 query takes the
        // split-fuse route, whose CheckFAIQKV wants one dtype.
        c = SplitFuse(); c.k = c.v = {T({16, 4, 128}, ACL_INT8)}; c.keyPrefix = c.valuePrefix = T({1, 4, 16, 128}, ACL_INT8);
        REPORT("a2.tnd.split_fuse_int8_key", Call(c, stream));
    }
    if (OnA2()) {
        // Layouts whose prefix the A2/A3 tilings read no batch of. TND GQA with innerPrecise 1 (no split-fuse) and
        // NSD take the PFA tiling; TND D 512 the IFA one.
        c = Dense(); c.q = T({16, 4, 32}); c.k = c.v = {T({40, 2, 32})}; c.layout = "TND";
        c.keyPrefix = c.valuePrefix = T({1, 2, 32}); c.prefixLen = {}; c.actQ = {8, 16}; c.actKv = {20, 40};
        REPORT("a2.tnd_pfa", Call(c, stream));
        c.prefixLen = {1}; REPORT("a2.tnd_pfa_length", Call(c, stream));
        c.prefixLen = {0}; REPORT("a2.tnd_pfa_length_zero", Call(c, stream));
        c = Dense(); c.q = T({4, 16, 32}); c.k = c.v = {T({2, 40, 32})}; c.layout = "NSD";
        c.keyPrefix = c.valuePrefix = T({1, 16, 32}); REPORT("a2.nsd_pfa", Call(c, stream));
        c.prefixLen = {17}; REPORT("a2.nsd_pfa_length", Call(c, stream));
        c = Dense(); c.q = T({2, 4, 512}); c.k = c.v = {T({80, 2, 512})}; c.layout = "TND";
        c.keyPrefix = c.valuePrefix = T({1, 2, 512}); c.prefixLen = {}; c.actQ = {1, 2}; c.actKv = {40, 80};
        REPORT("a2.tnd_ifa", Call(c, stream));
        c.keyPrefix = c.valuePrefix = T({1, 4, 512}); REPORT("a2.tnd_ifa_heads", Call(c, stream));
    }
    if (!OnA2()) {
        // A prefix of other heads read at the key's strides: [1, 4, 16, 32] holds the rows of both key heads
        // ((2 - 1) x 16 + 12 rows of 32), [1, 1, 16, 32] (the "heads" cases) not.
        c = Dense(16); c.keyPrefix = c.valuePrefix = T({1, 4, 16, 32}); REPORT("arch35.heads_fit", Call(c, stream));
        c.prefixLen = {}; c.keyPrefix = c.valuePrefix = T({1, 1, 28, 32}); REPORT("arch35.heads_short", Call(c, stream));
        c = Dense(); c.q = T({16, 4, 32}); c.k = c.v = {T({40, 2, 32})}; c.layout = "TND";
        c.keyPrefix = c.valuePrefix = T({1, 2, 32}); c.prefixLen = {}; c.actQ = {8, 16}; c.actKv = {20, 40};
        REPORT("arch35.tnd", Call(c, stream));
    }
    TearDown(stream);
    return 0;
}
