// aclnnFlashAttentionScoreGradV2 status codes: one failing call per validation rule of the reference
// (ops-flash-attention-grad-and-prompt.md §1A) plus valid baselines, printed as "<rule> <code>".
// Valid baselines also run phase 2 and synchronize; their printed code is the first non-zero one.
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    aclDataType dt = ACL_FLOAT16;
    std::string layout = "BNSD";
    int64_t b = 2, n1 = 2, n2 = 1, s1 = 16, s2 = 24, d = 16;
    // Shapes and dtypes derived from the above unless a case overrides them (see Fill()).
    Shape q, k, v, dy, o, dq, dk, dv, smax, ssum, mask, pse, drop, dpse;
    // Per-tensor dtypes: ACL_DT_UNDEFINED means "the query's dtype".
    aclDataType kDt = ACL_DT_UNDEFINED, vDt = ACL_DT_UNDEFINED, dyDt = ACL_DT_UNDEFINED, oDt = ACL_DT_UNDEFINED,
        dqDt = ACL_DT_UNDEFINED, pseDt = ACL_DT_UNDEFINED, dpseDt = ACL_DT_UNDEFINED, smaxDt = ACL_FLOAT,
        ssumDt = ACL_FLOAT, maskDt = ACL_UINT8, dropDt = ACL_UINT8;
    bool hasMask = false, hasPse = false, hasDrop = false, hasDpse = false, hasPrefix = false, hasStarts = false;
    std::vector<int64_t> prefix;
    double scale = 0.25, keep = 1.0;
    int64_t pre = INT32_MAX, next = INT32_MAX, headNum = -1, inner = 0, sparse = 0, pseType = 1;
    std::set<std::string> null;   // parameter names passed as nullptr
    bool run = false;

    void Fill() {
        if (headNum < 0) headNum = n1;
        if (q.empty()) q = LayoutShape(layout, b, n1, s1, d);
        if (k.empty()) k = LayoutShape(layout, b, n2, s2, d);
        if (v.empty()) v = k;
        if (dy.empty()) dy = q;
        if (o.empty()) o = q;
        if (dq.empty()) dq = q;
        if (dk.empty()) dk = k;
        if (dv.empty()) dv = v;
        if (smax.empty()) smax = {b, n1, s1, 8};
        if (ssum.empty()) ssum = smax;
        if (hasMask && mask.empty()) mask = {s1, s2};
        if (hasPse && pse.empty()) pse = {b, n1, s1, s2};
        if (hasDrop && drop.empty()) drop = {(b * n1 * s1 * s2 + 7) / 8};
        if (hasDpse && dpse.empty()) dpse = pse;
        if (hasPrefix && prefix.empty()) prefix = std::vector<int64_t>(b, s2 / 2);
        for (aclDataType *x : {&kDt, &vDt, &dyDt, &oDt, &dqDt, &pseDt, &dpseDt}) {
            if (*x == ACL_DT_UNDEFINED) *x = dt;
        }
    }
};

// Phase 1 (and for baselines phase 2 + synchronize) of one call; returns the first non-zero status.
int Call(Cfg c, aclrtStream stream) {
    c.Fill();
    std::vector<DeviceTensor> store(16);
    int slot = 0;
    auto make = [&](const char *name, bool present, const Shape &shape, aclDataType dt, float value) -> aclTensor * {
        if (!present || c.null.count(name)) return nullptr;
        DeviceTensor &t = store[slot++];
        if (t.Create(Bytes(shape, dt, value), shape, dt) != 0) return nullptr;
        return t.tensor;
    };
    aclTensor *q = make("query", true, c.q, c.dt, 0.5f);
    aclTensor *k = make("keyIn", true, c.k, c.kDt, 0.25f);
    aclTensor *v = make("value", true, c.v, c.vDt, 1.0f);
    aclTensor *dy = make("dy", true, c.dy, c.dyDt, 1.0f);
    aclTensor *pse = make("pse", c.hasPse, c.pse, c.pseDt, 0.5f);
    aclTensor *drop = make("dropMask", c.hasDrop, c.drop, c.dropDt, 255.0f);
    aclTensor *mask = make("attenMask", c.hasMask, c.mask, c.maskDt, 0.0f);
    aclTensor *smax = make("softmaxMax", true, c.smax, c.smaxDt, 0.0f);
    aclTensor *ssum = make("softmaxSum", true, c.ssum, c.ssumDt, static_cast<float>(c.s2));
    aclTensor *o = make("attentionIn", true, c.o, c.oDt, 1.0f);
    aclTensor *dq = make("dqOut", true, c.dq, c.dqDt, 0.0f);
    aclTensor *dk = make("dkOut", true, c.dk, c.kDt, 0.0f);
    aclTensor *dv = make("dvOut", true, c.dv, c.vDt, 0.0f);
    aclTensor *dpse = make("dpseOut", c.hasDpse, c.dpse, c.dpseDt, 0.0f);
    aclIntArray *prefix = c.hasPrefix ? aclCreateIntArray(c.prefix.data(), c.prefix.size()) : nullptr;
    std::vector<int64_t> starts = {0};
    aclIntArray *qStart = c.hasStarts ? aclCreateIntArray(starts.data(), 1) : nullptr;
    aclIntArray *kvStart = c.hasStarts ? aclCreateIntArray(starts.data(), 1) : nullptr;
    std::string layout = c.layout;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
        q, k, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, o, prefix, qStart, kvStart, c.scale, c.keep,
        c.pre, c.next, c.headNum, &layout[0], c.inner, c.sparse, c.pseType, dq, dk, dv, dpse,
        c.null.count("workspaceSize") ? nullptr : &workspaceSize, c.null.count("executor") ? nullptr : &executor);
    if (c.run) ret = RunPhase2(stream, ret, workspaceSize, executor, aclnnFlashAttentionScoreGradV2);
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

    // Valid baselines: each layout, each sparse mode, each pseType, dropout, GQA, dtypes.
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
    report("ok.pse1", [](Cfg &c) { c.hasPse = true; c.hasDpse = true; c.run = true; });
    report("ok.pse0.row_broadcast", [](Cfg &c) { c.hasPse = true; c.pse = {2, 2, 1, 24}; c.pseType = 0; c.run = true; });
    report("ok.pse2", [](Cfg &c) { c.hasPse = true; c.pse = {2}; c.pseDt = ACL_FLOAT; c.pseType = 2;
                                   c.hasStarts = true; c.run = true; });
    report("ok.pse3", [](Cfg &c) { c.hasPse = true; c.pse = {2, 2}; c.pseDt = ACL_FLOAT; c.pseType = 3; c.run = true; });
    report("ok.dropout", [](Cfg &c) { c.hasDrop = true; c.keep = 0.9; c.run = true; });
    report("ok.tokens_int32_max", [](Cfg &c) { c.pre = INT32_MAX; c.next = INT32_MAX; c.run = true; });
    report("ok.inner_precise_ignored", [](Cfg &c) { c.inner = 2; c.run = true; });
    report("ok.empty_key", [](Cfg &c) { c.s2 = 0; c.run = true; });
    report("ok.all_out_empty", [](Cfg &c) { c.s1 = 0; c.s2 = 0; c.headNum = 0; c.dt = ACL_INT8; c.run = true; });

    // op_api: nulls (161001), headNum, ranks and GetInputShapeInfo (161002)
    for (const char *name : {"query", "keyIn", "value", "dy", "attentionIn", "dqOut", "dkOut", "dvOut",
                             "workspaceSize", "executor"}) {
        std::string rule = std::string("null.") + name;
        report(rule.c_str(), [&](Cfg &c) { c.null.insert(name); });
    }
    report("head_num.zero", [](Cfg &c) { c.headNum = 0; });
    report("rank.dy_2d", [](Cfg &c) { c.dy = {16, 32}; });
    report("shape.d_zero", [](Cfg &c) { c.layout = "BSH"; c.d = 1; c.headNum = 4; });
    report("shape.rank4", [](Cfg &c) { c.q = {2, 16, 32}; });
    report("shape.rank4_lower_case_bsh", [](Cfg &c) { c.layout = "bsh"; c.q = c.dy = c.o = c.dq = {2, 16, 32};
                                                      c.k = c.v = c.dk = c.dv = {2, 24, 16}; });
    report("shape.qd_kd", [](Cfg &c) { c.k = c.dk = {2, 1, 24, 32}; c.v = c.dv = {2, 1, 24, 16}; });
    report("shape.vd", [](Cfg &c) { c.v = c.dv = {2, 1, 24, 32}; });

    // infershape / kernel selection / tiling: all 161001 (the doc says 161002 for dtypes)
    report("infershape.layout", [](Cfg &c) { c.layout = "NSBD"; });
    report("tiling.layout_lower_case", [](Cfg &c) { c.layout = "bnsd"; });
    report("tiling.tnd_in_v2", [](Cfg &c) { c.layout = "TND"; });
    report("dtype.query_int8", [](Cfg &c) { c.dt = ACL_INT8; });
    report("dtype.key_mixed", [](Cfg &c) { c.kDt = ACL_BF16; });
    report("dtype.atten_mask_fp16", [](Cfg &c) { c.hasMask = true; c.maskDt = ACL_FLOAT16; });
    report("dtype.drop_mask_int8", [](Cfg &c) { c.hasDrop = true; c.dropDt = ACL_INT8; c.keep = 0.5; });
    report("dtype.pse_bf16", [](Cfg &c) { c.hasPse = true; c.pseDt = ACL_BF16; });
    report("tiling.softmax_max_null", [](Cfg &c) { c.null.insert("softmaxMax"); });
    report("tiling.softmax_sum_1d", [](Cfg &c) { c.ssum = {2 * 2 * 16 * 8}; });
    report("tiling.bsh_batch", [](Cfg &c) { c.layout = "BSH"; c.k = c.v = c.dk = c.dv = {3, 24, 16}; });
    report("tiling.h1_heads", [](Cfg &c) { c.layout = "BSH"; c.headNum = 3; c.q = c.dy = c.o = c.dq = {2, 16, 50};
                                           c.k = c.v = c.dk = c.dv = {2, 24, 16}; });
    report("tiling.head_num", [](Cfg &c) { c.headNum = 1; c.smax = c.ssum = {2, 1, 16, 8}; });
    report("tiling.softmax_dtype", [](Cfg &c) { c.ssumDt = ACL_FLOAT16; });
    report("tiling.attention_in_dtype", [](Cfg &c) { c.oDt = ACL_FLOAT; });
    report("tiling.softmax_shape", [](Cfg &c) { c.smax = c.ssum = {2, 2, 16, 1}; });
    report("tiling.attention_in_shape", [](Cfg &c) { c.o = {2, 2, 15, 16}; });
    report("tiling.dy_shape", [](Cfg &c) { c.dy = {2, 2, 16, 32}; });
    report("tiling.keep_prob_zero", [](Cfg &c) { c.keep = 0.0; });
    report("tiling.keep_prob_above_one", [](Cfg &c) { c.keep = 1.5; });
    report("tiling.drop_null", [](Cfg &c) { c.keep = 0.5; });
    report("tiling.drop_size", [](Cfg &c) { c.hasDrop = true; c.drop = {10}; c.keep = 0.5; });
    report("tiling.sparse_mode_9", [](Cfg &c) { c.sparse = 9; });
    report("tiling.sparse_mode_negative", [](Cfg &c) { c.sparse = -1; });
    report("tiling.sparse_mode_7_needs_tnd", [](Cfg &c) { c.sparse = 7; });
    report("tiling.pse_type_4", [](Cfg &c) { c.pseType = 4; });
    report("tiling.tokens_int64_max", [](Cfg &c) { c.pre = LLONG_MAX; c.next = LLONG_MAX; });
    report("tiling.tokens_mode0", [](Cfg &c) { c.pre = -25; c.next = 30; });
    report("tiling.mask_lead", [](Cfg &c) { c.hasMask = true; c.mask = {2, 3, 16, 24}; });
    report("tiling.mask_rank3", [](Cfg &c) { c.hasMask = true; c.mask = {2, 16, 24}; });
    report("tiling.prefix_mode6", [](Cfg &c) { c.hasMask = true; c.mask = {3072, 2048}; c.sparse = 6; });
    report("tiling.pse_null_type0", [](Cfg &c) { c.pseType = 0; });
    report("tiling.pse_dtype_type1", [](Cfg &c) { c.hasPse = true; c.pseDt = ACL_FLOAT; });
    report("tiling.pse_shape", [](Cfg &c) { c.hasPse = true; c.pse = {1, 2, 1, 24}; });
    report("tiling.pse_alibi_not_causal", [](Cfg &c) { c.s1 = c.s2 = 1040; c.hasPse = true; c.pse = {1, 2, 1024, 1040};
                                                       c.next = 5; });
    report("tiling.pse_inner_shape", [](Cfg &c) { c.hasPse = true; c.pse = {2, 1}; c.pseDt = ACL_FLOAT; c.pseType = 2; });
    report("tiling.mask_shape_mode0", [](Cfg &c) { c.hasMask = true; c.mask = {16, 16}; });
    report("tiling.mask_shape_mode2", [](Cfg &c) { c.hasMask = true; c.mask = {16, 24}; c.sparse = 2; });
    report("tiling.mask_shape_mode6", [](Cfg &c) { c.hasMask = true; c.mask = {2048, 2048}; c.sparse = 6;
                                                   c.hasPrefix = true; });
    report("tiling.pad_tokens_int64", [](Cfg &c) { c.hasMask = true; c.pre = -(1LL << 32) + 5; c.next = 5; });
    report("out.dq_shape", [](Cfg &c) { c.dq = {2, 2, 16, 8}; });
    report("out.dv_shape", [](Cfg &c) { c.dv = {2, 1, 24, 8}; });
    report("tiling.value_seq", [](Cfg &c) { c.v = c.dv = {2, 1, 20, 16}; });
    report("tiling.key_batch", [](Cfg &c) { c.k = c.v = c.dk = c.dv = {3, 1, 24, 16}; });
    report("out.dq_dtype", [](Cfg &c) { c.dqDt = ACL_FLOAT; c.run = true; });

    // Calls whose outcome depends on the chip family (Ascend910_95 runs the arch35 tiling)
    report("chip.drop_generated", [](Cfg &c) { c.keep = 0.5; c.run = true; });
    report("chip.drop_with_keep_prob_one", [](Cfg &c) { c.hasDrop = true; c.run = true; });
    report("chip.mask_larger_than_s1_s2", [](Cfg &c) { c.hasMask = true; c.mask = {32, 32}; c.run = true; });
    report("chip.mask_covers_only_in_elements", [](Cfg &c) { c.hasMask = true; c.mask = {8, 64}; c.run = true; });
    report("chip.mask_larger_fp32", [](Cfg &c) { c.dt = ACL_FLOAT; c.hasMask = true; c.mask = {32, 32}; c.run = true; });
    report("chip.dy_value_head_dim", [](Cfg &c) { c.dy = c.o = {2, 2, 16, 8}; c.run = true; });
    report("chip.prefix_mode6_without_mask", [](Cfg &c) { c.sparse = 6; c.run = true; });
    report("chip.layout_lower_case_bsnd", [](Cfg &c) { c.layout = "BSND"; c.Fill(); c.layout = "bsnd"; c.run = true; });
    report("chip.alibi_pse_without_mask", [](Cfg &c) { c.s1 = c.s2 = 1040; c.hasPse = true; c.pse = {1, 2, 1024, 1040};
                                                       c.pre = 2000; c.next = 0; c.run = true; });
    report("chip.pse_type0_without_pse", [](Cfg &c) { c.pseType = 0; c.run = true; });
    report("chip.tokens_without_mask", [](Cfg &c) { c.pre = -25; c.next = 30; c.run = true; });
    report("chip.query_hifloat8", [](Cfg &c) { c.dt = ACL_HIFLOAT8; c.oDt = c.dqDt = ACL_FLOAT16; });
    report("chip.query_fp8_e4m3", [](Cfg &c) { c.dt = ACL_FLOAT8_E4M3FN; c.oDt = c.dqDt = ACL_BF16; });
    TearDown(stream);
    return 0;
}
