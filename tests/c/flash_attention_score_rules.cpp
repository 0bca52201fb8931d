// aclnnFlashAttentionScoreV2 status codes: one failing call per validation rule of the op_api,
// infershape, kernel selection and tiling (arch32 on Atlas A2/A3, arch35 on Ascend910_95: run it with
// ACLNN_EMU_SOC set), plus valid baselines, printed as "<rule> <code>". Valid baselines, and the
// chip-dependent calls that pass on one family, also run phase 2 and synchronize; their printed code
// is the first non-zero one.
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    aclDataType dt = ACL_FLOAT16;
    std::string layout = "BNSD";
    int64_t b = 2, n1 = 2, n2 = 1, s1 = 16, s2 = 24, d = 16;
    Shape q, k, v, out, smax, ssum, mask, pse, drop, pad;
    aclDataType kDt = ACL_DT_UNDEFINED, vDt = ACL_DT_UNDEFINED, outDt = ACL_DT_UNDEFINED, pseDt = ACL_DT_UNDEFINED,
        padDt = ACL_DT_UNDEFINED, smaxDt = ACL_FLOAT, maskDt = ACL_UINT8, dropDt = ACL_UINT8;
    aclFormat qFormat = ACL_FORMAT_ND;
    bool hasMask = false, hasPse = false, hasDrop = false, hasPad = false, hasPrefix = false, hasStarts = false;
    std::vector<int64_t> prefix, qStart = {0}, kvStart = {0};
    double scale = 0.25, keep = 1.0;
    int64_t pre = INT32_MAX, next = INT32_MAX, headNum = -1, inner = 0, sparse = 0, pseType = 1;
    std::set<std::string> null;   // parameter names passed as nullptr
    bool run = false;

    void Fill() {
        if (headNum < 0) headNum = n1;
        if (q.empty()) q = LayoutShape(layout, b, n1, s1, d);
        if (k.empty()) k = LayoutShape(layout, b, n2, s2, d);
        if (v.empty()) v = k;
        if (out.empty()) out = q;
        if (smax.empty()) smax = {b, n1, s1, 8};
        if (ssum.empty()) ssum = smax;
        if (hasMask && mask.empty()) mask = {s1, s2};
        if (hasPse && pse.empty()) pse = {b, n1, s1, s2};
        if (hasDrop && drop.empty()) drop = {(b * n1 * s1 * s2 + 7) / 8};
        if (hasPad && pad.empty()) pad = {s1, s2};
        if (hasPrefix && prefix.empty()) prefix = std::vector<int64_t>(b, s2);
        for (aclDataType *x : {&kDt, &vDt, &outDt, &pseDt, &padDt}) {
            if (*x == ACL_DT_UNDEFINED) *x = dt;
        }
    }
};

// Phase 1 (and for baselines phase 2 + synchronize) of one call; returns the first non-zero status.
int Call(Cfg c, aclrtStream stream) {
    c.Fill();
    std::vector<DeviceTensor> store(16);
    int slot = 0;
    auto make = [&](const char *name, bool present, const Shape &shape, aclDataType dt, float value,
                    aclFormat format = ACL_FORMAT_ND) -> aclTensor * {
        if (!present || c.null.count(name)) return nullptr;
        DeviceTensor &t = store[slot++];
        if (t.Create(Bytes(shape, dt, value), shape, dt, format) != 0) return nullptr;
        return t.tensor;
    };
    aclTensor *q = make("query", true, c.q, c.dt, 0.5f, c.qFormat);
    aclTensor *k = make("key", true, c.k, c.kDt, 0.25f);
    aclTensor *v = make("value", true, c.v, c.vDt, 1.0f);
    aclTensor *pse = make("pse", c.hasPse, c.pse, c.pseDt, 0.5f);
    aclTensor *drop = make("dropMask", c.hasDrop, c.drop, c.dropDt, 255.0f);
    aclTensor *pad = make("paddingMask", c.hasPad, c.pad, c.padDt, 0.0f);
    aclTensor *mask = make("attenMask", c.hasMask, c.mask, c.maskDt, 0.0f);
    aclTensor *smax = make("softmaxMaxOut", true, c.smax, c.smaxDt, 0.0f);
    aclTensor *ssum = make("softmaxSumOut", true, c.ssum, ACL_FLOAT, 0.0f);
    aclTensor *out = make("attentionOutOut", true, c.out, c.outDt, 0.0f);
    aclIntArray *prefix = c.hasPrefix ? aclCreateIntArray(c.prefix.data(), c.prefix.size()) : nullptr;
    aclIntArray *qStart = c.hasStarts ? aclCreateIntArray(c.qStart.data(), c.qStart.size()) : nullptr;
    aclIntArray *kvStart = c.hasStarts ? aclCreateIntArray(c.kvStart.data(), c.kvStart.size()) : nullptr;
    std::string layout = c.layout;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnFlashAttentionScoreV2GetWorkspaceSize(
        q, k, v, pse, drop, pad, mask, prefix, qStart, kvStart, c.scale, c.keep, c.pre, c.next, c.headNum,
        c.null.count("inputLayout") ? nullptr : &layout[0], c.inner, c.sparse, c.pseType, smax, ssum, nullptr, out,
        c.null.count("workspaceSize") ? nullptr : &workspaceSize, c.null.count("executor") ? nullptr : &executor);
    if (c.run) ret = RunPhase2(stream, ret, workspaceSize, executor, aclnnFlashAttentionScoreV2);
    if (prefix) aclDestroyIntArray(prefix);
    if (qStart) aclDestroyIntArray(qStart);
    if (kvStart) aclDestroyIntArray(kvStart);
    return ret;
}

}  // namespace

int main(int argc, char **argv) {
    const std::string only = argc > 1 ? argv[1] : "";   // run just this rule
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    auto report = [&](const char *rule, const std::function<void(Cfg &)> &edit) {
        if (!only.empty() && only != rule) return;
        Cfg c;
        edit(c);
        REPORT(rule, Call(c, stream));
    };

    // Valid baselines (both phases)
    for (const char *layout : {"BSH", "SBH", "BSND", "BNSD"}) {
        std::string rule = std::string("ok.layout.") + layout;
        report(rule.c_str(), [&](Cfg &c) { c.layout = layout; c.run = true; });
    }
    report("ok.dtype.bf16", [](Cfg &c) { c.dt = ACL_BF16; c.run = true; });
    report("ok.dtype.fp32", [](Cfg &c) { c.dt = ACL_FLOAT; c.run = true; });
    report("ok.mode0.mask_band", [](Cfg &c) { c.hasMask = true; c.pre = 4; c.next = 2; c.run = true; });
    report("ok.mode1", [](Cfg &c) { c.hasMask = true; c.sparse = 1; c.maskDt = ACL_BOOL; c.run = true; });
    for (int mode : {2, 3, 4}) {
        std::string rule = "ok.mode" + std::to_string(mode);
        report(rule.c_str(), [&](Cfg &c) { c.hasMask = true; c.mask = {2048, 2048}; c.sparse = mode; c.pre = 5;
                                           c.next = 3; c.run = true; });
    }
    report("ok.mode5", [](Cfg &c) { c.hasMask = true; c.mask = {2, 1, 16, 24}; c.sparse = 5; c.hasPrefix = true;
                                    c.run = true; });
    report("ok.mode6", [](Cfg &c) { c.hasMask = true; c.mask = {3072, 2048}; c.sparse = 6; c.hasPrefix = true;
                                    c.run = true; });
    report("ok.mode_negative_is_a_full_mask", [](Cfg &c) { c.hasMask = true; c.sparse = -1; c.run = true; });
    report("ok.mode9_without_mask", [](Cfg &c) { c.sparse = 9; c.run = true; });
    report("ok.pse1", [](Cfg &c) { c.hasPse = true; c.run = true; });
    report("ok.pse0.row_broadcast", [](Cfg &c) { c.hasPse = true; c.pse = {1, 2, 1, 24}; c.pseType = 0; c.run = true; });
    report("ok.pse_fp32_with_fp16_query_type2", [](Cfg &c) { c.s2 = 16; c.hasPse = true; c.pse = {2};
                                                             c.pseDt = ACL_FLOAT; c.pseType = 2; c.hasStarts = true;
                                                             c.run = true; });
    report("ok.pse3", [](Cfg &c) { c.s2 = 16; c.hasPse = true; c.pse = {2, 2}; c.pseDt = ACL_FLOAT; c.pseType = 3;
                                   c.run = true; });
    report("ok.dropout", [](Cfg &c) { c.hasDrop = true; c.keep = 0.9; c.run = true; });
    report("ok.keep_prob_without_drop_mask", [](Cfg &c) { c.keep = 0.5; c.run = true; });
    report("ok.padding_mask_ignored", [](Cfg &c) { c.hasPad = true; c.run = true; });
    report("ok.inner_precise_2", [](Cfg &c) { c.inner = 2; c.run = true; });
    report("ok.tokens_int64", [](Cfg &c) { c.hasMask = true; c.pre = LLONG_MAX; c.next = LLONG_MAX; c.run = true; });
    report("ok.empty_key", [](Cfg &c) { c.s2 = 0; c.run = true; });
    report("ok.all_out_empty", [](Cfg &c) { c.s1 = 0; c.headNum = 0; c.dt = ACL_INT8; c.run = true; });
    report("ok.softmax_out_null", [](Cfg &c) { c.run = true; });

    // op_api: CheckFaParam (161001), CheckFormat, InputDtypeCheck, AnalysisInput (161002)
    for (const char *name : {"query", "key", "value", "inputLayout", "softmaxMaxOut", "softmaxSumOut",
                             "attentionOutOut", "workspaceSize", "executor"}) {
        std::string rule = std::string("null.") + name;
        report(rule.c_str(), [&](Cfg &c) { c.null.insert(name); });
    }
    report("format.query_nz", [](Cfg &c) { c.qFormat = ACL_FORMAT_FRACTAL_NZ; });
    report("dtype.key_mixed", [](Cfg &c) { c.kDt = ACL_BF16; c.vDt = ACL_BF16; });
    report("dtype.query_int8", [](Cfg &c) { c.dt = ACL_INT8; });
    report("dtype.pse_type2_null", [](Cfg &c) { c.pseType = 2; });
    report("dtype.pse_type2_fp16", [](Cfg &c) { c.hasPse = true; c.pse = {2}; c.pseType = 2; });
    report("dtype.pse_type1_fp32", [](Cfg &c) { c.hasPse = true; c.pseDt = ACL_FLOAT; });
    report("head_num.zero", [](Cfg &c) { c.headNum = 0; });
    report("shape.layout_lower_case", [](Cfg &c) { c.layout = "bnsd"; });
    report("shape.layout_rank", [](Cfg &c) { c.q = {2, 16, 32}; });
    report("shape.d_zero", [](Cfg &c) { c.layout = "BSH"; c.d = 1; c.headNum = 4; });
    report("shape.qd_kd", [](Cfg &c) { c.k = {2, 1, 24, 32}; c.v = {2, 1, 24, 16}; });
    report("shape.vd", [](Cfg &c) { c.v = {2, 1, 24, 32}; });
    report("shape.d_max", [](Cfg &c) { c.d = 800; });
    report("shape.kv_rank", [](Cfg &c) { c.k = {2, 24, 16}; });

    // L0: kernel selection and tiling, all 161001 through the ViewCopy of a nullptr
    report("select.atten_mask_fp16", [](Cfg &c) { c.hasMask = true; c.maskDt = ACL_FLOAT16; });
    report("select.drop_mask_int8", [](Cfg &c) { c.hasDrop = true; c.dropDt = ACL_INT8; c.keep = 0.5; });
    report("select.padding_mask_fp32", [](Cfg &c) { c.hasPad = true; c.padDt = ACL_FLOAT; });
    report("tiling.bsh_batch", [](Cfg &c) { c.layout = "BSH"; c.k = c.v = {3, 24, 16}; });
    report("tiling.bnsd_d", [](Cfg &c) { c.k = {2, 1, 24, 16}; c.v = {2, 1, 24, 16}; c.b = 3; c.q = {3, 2, 16, 16};
                                         c.smax = c.ssum = {3, 2, 16, 8}; });
    report("tiling.keep_prob_zero", [](Cfg &c) { c.keep = 0.0; });
    report("tiling.keep_prob_above_one", [](Cfg &c) { c.keep = 1.5; });
    report("tiling.pse_type_4", [](Cfg &c) { c.pseType = 4; });
    report("tiling.tnd", [](Cfg &c) { c.layout = "TND"; c.smax = c.ssum = {32, 2, 8}; });
    report("tiling.h1_heads", [](Cfg &c) { c.layout = "BSH"; c.headNum = 3; c.q = c.out = {2, 16, 50};
                                           c.k = c.v = {2, 24, 16}; });
    report("tiling.head_num", [](Cfg &c) { c.headNum = 1; c.smax = c.ssum = {2, 1, 16, 8}; });
    report("tiling.gqa", [](Cfg &c) { c.n1 = 3; c.n2 = 2; });
    report("tiling.pse_null_type0", [](Cfg &c) { c.pseType = 0; c.run = true; });   // runs on arch35
    report("tiling.pse_inner_rank", [](Cfg &c) { c.hasPse = true; c.pse = {1, 2, 2}; c.pseDt = ACL_FLOAT; c.pseType = 3; });
    report("tiling.pse_inner_size", [](Cfg &c) { c.s2 = 16; c.hasPse = true; c.pse = {1}; c.pseDt = ACL_FLOAT;
                                                  c.pseType = 2; });
    report("tiling.pse_rank", [](Cfg &c) { c.hasPse = true; c.pse = {2, 16, 24}; });
    report("tiling.pse_batch", [](Cfg &c) { c.hasPse = true; c.pse = {3, 2, 16, 24}; });
    report("tiling.pse_shape", [](Cfg &c) { c.hasPse = true; c.pse = {2, 2, 8, 24}; });
    report("tiling.pse_alibi_short_s1", [](Cfg &c) { c.hasPse = true; c.pse = {2, 2, 1024, 24}; });
    report("tiling.mask_shape4", [](Cfg &c) { c.hasMask = true; c.mask = {2, 3, 16, 24}; });
    report("tiling.mask_shape2", [](Cfg &c) { c.hasMask = true; c.mask = {16, 16}; });
    report("tiling.mask_rank3", [](Cfg &c) { c.hasMask = true; c.mask = {2, 16, 24}; });
    report("tiling.mask_compressed", [](Cfg &c) { c.hasMask = true; c.mask = {16, 24}; c.sparse = 2; });
    report("tiling.mask_compressed_prefix", [](Cfg &c) { c.hasMask = true; c.mask = {2048, 2048}; c.sparse = 6;
                                                         c.hasPrefix = true; });
    report("tiling.drop_mask_keep_prob_1", [](Cfg &c) { c.hasDrop = true; c.run = true; });   // 161001 on arch35
    report("tiling.drop_size", [](Cfg &c) { c.hasDrop = true; c.drop = {10}; c.keep = 0.5; });
    report("tiling.tokens_both_negative", [](Cfg &c) { c.hasMask = true; c.pre = -1; c.next = -1; });
    report("tiling.tokens_no_block", [](Cfg &c) { c.hasMask = true; c.pre = -25; c.next = 30; });
    report("tiling.tokens_band_mode4", [](Cfg &c) { c.hasMask = true; c.mask = {2048, 2048}; c.sparse = 4;
                                                    c.pre = -30; c.next = 2; });
    report("tiling.sparse_mode_7", [](Cfg &c) { c.hasMask = true; c.mask = {2048, 2048}; c.sparse = 7; });
    report("tiling.prefix_missing", [](Cfg &c) { c.hasMask = true; c.mask = {3072, 2048}; c.sparse = 6; });
    report("tiling.prefix_range", [](Cfg &c) { c.hasMask = true; c.mask = {3072, 2048}; c.sparse = 6;
                                               c.hasPrefix = true; c.prefix = {2, 24}; });
    report("tiling.prefix_mode5_mask", [](Cfg &c) { c.hasMask = true; c.sparse = 5; c.hasPrefix = true; });
    report("tiling.pse_inner_s1_s2", [](Cfg &c) { c.hasPse = true; c.pse = {2}; c.pseDt = ACL_FLOAT; c.pseType = 2;
                                                  c.run = true; });   // runs on arch35
    report("tiling.pse_alibi_not_causal", [](Cfg &c) { c.s1 = c.s2 = 1040; c.hasPse = true; c.pse = {1, 2, 1024, 1040};
                                                       c.hasMask = true; c.mask = {2048, 2048}; c.sparse = 4;
                                                       c.pre = 5; c.next = 5; });
    // Chip-dependent calls (each family's expected code: tests/test_flash_attention_score_cabi.py)
    report("chip.mode7_without_mask", [](Cfg &c) { c.sparse = 7; c.run = true; });
    report("chip.start_idx_beyond_int32", [](Cfg &c) { c.hasStarts = true; c.kvStart = {1LL << 32}; c.run = true; });
    report("chip.start_idx_int32_edge", [](Cfg &c) { c.hasStarts = true; c.qStart = {-5}; c.kvStart = {INT32_MAX - 5};
                                                     c.run = true; });
    report("chip.value_empty", [](Cfg &c) { c.v = {2, 1, 24, 0}; c.out = {2, 2, 16, 0}; c.run = true; });
    report("out.softmax_max_shape", [](Cfg &c) { c.smax = {2, 2, 16, 1}; });
    report("out.attention_out_shape", [](Cfg &c) { c.out = {2, 2, 16, 8}; });
    report("out.attention_out_dtype", [](Cfg &c) { c.outDt = ACL_FLOAT; c.run = true; });
    // Calls whose outcome depends on the CANN release (tests/test_flash_attention_score_cabi.py RELEASE_CHANGES)
    report("release.layout_lower_case_bsh", [](Cfg &c) { c.layout = "BSH"; c.Fill(); c.layout = "bsh"; c.run = true; });
    report("release.pse_like_out", [](Cfg &c) { c.hasPse = true; c.pseDt = ACL_FLOAT; c.outDt = ACL_FLOAT; c.run = true; });
    report("release.pse_like_query_not_out", [](Cfg &c) { c.hasPse = true; c.outDt = ACL_FLOAT; c.run = true; });
    report("release.query_hifloat8", [](Cfg &c) { c.dt = ACL_HIFLOAT8; c.outDt = ACL_FLOAT16; });
    TearDown(stream);
    return 0;
}
