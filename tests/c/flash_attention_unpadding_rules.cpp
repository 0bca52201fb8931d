// Status codes of the FlashAttentionScoreGrad entry points beside V2: aclnnFlashAttentionScoreGrad (V1),
// aclnnFlashAttentionScoreGradV3 (sink) and aclnnFlashAttentionUnpaddingScoreGrad V1-V5 (TND, rope, sink,
// softmax input layout). One call per rule of each entry point's own op_api, plus valid baselines (both
// phases), printed as "<rule> <code>"; run it once per chip family (ACLNN_EMU_SOC).
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    std::string entry = "Unpadding";  // Grad, GradV3, Unpadding, UnpaddingV2 ... UnpaddingV5
    aclDataType dt = ACL_FLOAT16, ropeDt = ACL_DT_UNDEFINED, sinkDt = ACL_FLOAT;
    std::string layout = "TND", softmaxLayout = "";
    int64_t n1 = 2, n2 = 1, d = 64, dr = 32, t1 = 40, t2 = 48;
    std::vector<int64_t> cuQ = {16, 40}, cuKv = {24, 48}, prefix;
    Shape q, k, v, smax, mask, sink, dsink, qRope, kRope, dqRope, dkRope, pse;
    aclDataType pseDt = ACL_DT_UNDEFINED;
    bool hasMask = false, hasSink = false, hasRope = false, hasDrop = false, hasPse = false, seqs = true;
    double keep = 1.0;
    int64_t pre = INT32_MAX, next = INT32_MAX, headNum = -1, sparse = 0, pseType = 1;
    std::set<std::string> null;
    bool run = false;

    void Fill() {
        if (headNum < 0) headNum = n1;
        bool tnd = layout == "TND";
        if (q.empty()) q = tnd ? Shape{t1, n1, d} : LayoutShape(layout, 2, n1, t1 / 2, d);
        if (k.empty()) k = tnd ? Shape{t2, n2, d} : LayoutShape(layout, 2, n2, t2 / 2, d);
        if (v.empty()) v = k;
        if (smax.empty()) smax = tnd ? Shape{t1, n1, 8} : Shape{2, n1, t1 / 2, 8};
        if (hasMask && mask.empty()) mask = {2048, 2048};
        if (hasSink && sink.empty()) sink = {n1};
        if (hasSink && dsink.empty()) dsink = {n1};
        if (hasRope && qRope.empty()) qRope = {t1, n1, dr};
        if (hasRope && kRope.empty()) kRope = {t2, n2, dr};
        if (hasRope && dqRope.empty()) dqRope = qRope;
        if (hasRope && dkRope.empty()) dkRope = kRope;
        if (ropeDt == ACL_DT_UNDEFINED) ropeDt = dt;
        if (pse.empty()) pse = {1, n1, 16, 24};
        if (pseDt == ACL_DT_UNDEFINED) pseDt = pseType == 2 || pseType == 3 ? ACL_FLOAT : dt;
    }
};

int Call(Cfg c, aclrtStream stream) {
    c.Fill();
    std::vector<DeviceTensor> store(24);
    int slot = 0;
    auto make = [&](const char *name, bool present, const Shape &shape, aclDataType dt, float value) -> aclTensor * {
        if (!present || c.null.count(name)) return nullptr;
        DeviceTensor &t = store[slot++];
        if (t.Create(Bytes(shape, dt, value), shape, dt) != 0) return nullptr;
        return t.tensor;
    };
    aclTensor *q = make("query", true, c.q, c.dt, 0.5f);
    aclTensor *k = make("key", true, c.k, c.dt, 0.25f);
    aclTensor *v = make("value", true, c.v, c.dt, 1.0f);
    aclTensor *dy = make("dy", true, c.q, c.dt, 0.5f);
    aclTensor *qRope = make("queryRope", c.hasRope, c.qRope, c.ropeDt, 0.5f);
    aclTensor *kRope = make("keyRope", c.hasRope, c.kRope, c.ropeDt, 0.5f);
    aclTensor *pse = make("pse", c.hasPse, c.pse, c.pseDt, 0.0f);
    aclTensor *drop = make("dropMask", c.hasDrop, {c.n1 * (16 * 24 + 24 * 24) / 8 + 8}, ACL_UINT8, 255.0f);
    aclTensor *mask = make("attenMask", c.hasMask, c.mask, ACL_UINT8, 0.0f);
    aclTensor *smax = make("softmaxMax", true, c.smax, ACL_FLOAT, 1.0f);
    aclTensor *ssum = make("softmaxSum", true, c.smax, ACL_FLOAT, 4.0f);
    aclTensor *attnIn = make("attentionIn", true, c.q, c.dt, 0.5f);
    aclTensor *sink = make("sink", c.hasSink, c.sink, c.sinkDt, 0.5f);
    aclTensor *dq = make("dqOut", true, c.q, c.dt, 0.0f);
    aclTensor *dk = make("dkOut", true, c.k, c.dt, 0.0f);
    aclTensor *dv = make("dvOut", true, c.v, c.dt, 0.0f);
    aclTensor *dqRope = make("dqRopeOut", c.hasRope, c.dqRope, c.ropeDt, 0.0f);
    aclTensor *dkRope = make("dkRopeOut", c.hasRope, c.dkRope, c.ropeDt, 0.0f);
    aclTensor *dsink = make("dsinkOut", c.hasSink, c.dsink, ACL_FLOAT, 0.0f);
    aclIntArray *seqQ = c.seqs ? aclCreateIntArray(c.cuQ.data(), c.cuQ.size()) : nullptr;
    aclIntArray *seqKv = c.seqs ? aclCreateIntArray(c.cuKv.data(), c.cuKv.size()) : nullptr;
    aclIntArray *prefix = c.prefix.empty() ? nullptr : aclCreateIntArray(c.prefix.data(), c.prefix.size());
    std::vector<int64_t> zero = {0};
    aclIntArray *qStart = aclCreateIntArray(zero.data(), 1), *kvStart = aclCreateIntArray(zero.data(), 1);
    std::string layout = c.layout, softmaxLayout = c.softmaxLayout;
    char *lay = c.null.count("inputLayout") ? nullptr : &layout[0];
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    uint64_t *ws = c.null.count("workspaceSize") ? nullptr : &size;
    aclOpExecutor **ex = c.null.count("executor") ? nullptr : &executor;
    const std::string &e = c.entry;
    int ret = -1;
    decltype(&aclnnFlashAttentionScoreGrad) phase2 = nullptr;
    if (e == "Grad") {
        ret = aclnnFlashAttentionScoreGradGetWorkspaceSize(q, k, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr,
                                                           attnIn, nullptr, 0.25, c.keep, c.pre, c.next, c.headNum,
                                                           lay, 0, c.sparse, dq, dk, dv, nullptr, ws, ex);
        phase2 = aclnnFlashAttentionScoreGrad;
    } else if (e == "GradV3") {
        ret = aclnnFlashAttentionScoreGradV3GetWorkspaceSize(
            q, k, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, attnIn, sink, nullptr, qStart, kvStart, 0.25,
            c.keep, c.pre, c.next, c.headNum, lay, 0, c.sparse, c.pseType, dq, dk, dv, nullptr, dsink, ws, ex);
        phase2 = aclnnFlashAttentionScoreGradV3;
    } else if (e == "Unpadding") {
        ret = aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
            q, k, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, attnIn, prefix, seqQ, seqKv, 0.25, c.keep,
            c.pre, c.next, c.headNum, lay, 0, c.sparse, dq, dk, dv, nullptr, ws, ex);
        phase2 = aclnnFlashAttentionUnpaddingScoreGrad;
    } else if (e == "UnpaddingV2") {
        ret = aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
            q, k, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, attnIn, prefix, seqQ, seqKv, qStart, kvStart,
            0.25, c.keep, c.pre, c.next, c.headNum, lay, 0, c.sparse, c.pseType, dq, dk, dv, nullptr, ws, ex);
        phase2 = aclnnFlashAttentionUnpaddingScoreGradV2;
    } else if (e == "UnpaddingV3") {
        ret = aclnnFlashAttentionUnpaddingScoreGradV3GetWorkspaceSize(
            q, qRope, k, kRope, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, attnIn, prefix, seqQ, seqKv,
            qStart, kvStart, 0.25, c.keep, c.pre, c.next, c.headNum, lay, 0, c.sparse, c.pseType, dq, dqRope, dk,
            dkRope, dv, nullptr, ws, ex);
        phase2 = aclnnFlashAttentionUnpaddingScoreGradV3;
    } else if (e == "UnpaddingV4") {
        ret = aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
            q, k, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, attnIn, prefix, seqQ, seqKv, 0.25, c.keep,
            c.pre, c.next, c.headNum, lay, 0, c.sparse, dq, dk, dv, nullptr, &softmaxLayout[0], ws, ex);
        phase2 = aclnnFlashAttentionUnpaddingScoreGradV4;
    } else if (e == "UnpaddingV5") {
        ret = aclnnFlashAttentionUnpaddingScoreGradV5GetWorkspaceSize(
            q, qRope, k, kRope, v, dy, pse, drop, nullptr, mask, smax, ssum, nullptr, attnIn, sink, prefix, seqQ,
            seqKv, qStart, kvStart, 0.25, c.keep, c.pre, c.next, c.headNum, lay, 0, c.sparse, c.pseType,
            &softmaxLayout[0], dq, dqRope, dk, dkRope, dv, nullptr, dsink, ws, ex);
        phase2 = aclnnFlashAttentionUnpaddingScoreGradV5;
    }
    if (c.run) ret = RunPhase2(stream, ret, size, executor, phase2);
    for (aclIntArray *a : {seqQ, seqKv, qStart, kvStart, prefix}) {
        if (a) aclDestroyIntArray(a);
    }
    return ret;
}

}  // namespace

int main(int argc, char **argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    auto report = [&](const std::string &rule, const std::function<void(Cfg &)> &edit) {
        if (!only.empty() && only != rule) return;
        Cfg c;
        edit(c);
        REPORT(rule.c_str(), Call(c, stream));
    };
    const char *unpaddings[] = {"Unpadding", "UnpaddingV2", "UnpaddingV3", "UnpaddingV4", "UnpaddingV5"};

    report("Grad.ok.bsnd", [](Cfg &c) { c.entry = "Grad"; c.layout = "BSND"; c.run = true; });
    report("GradV3.ok.sink", [](Cfg &c) { c.entry = "GradV3"; c.layout = "BSND"; c.hasSink = true; c.run = true; });
    for (const char *name : {"query", "key", "value", "dy", "attentionIn", "dqOut", "dkOut", "dvOut",
                             "workspaceSize", "executor"}) {
        report(std::string("Grad.null.") + name, [&](Cfg &c) { c.entry = "Grad"; c.layout = "BSND";
                                                               c.null.insert(name); });
    }
    report("Grad.head_num.zero", [](Cfg &c) { c.entry = "Grad"; c.layout = "BSND"; c.headNum = 0; });
    report("Grad.tiling.tnd_without_lengths", [](Cfg &c) { c.entry = "Grad"; });
    report("GradV3.sink.fp32_query", [](Cfg &c) { c.entry = "GradV3"; c.layout = "BSND"; c.hasSink = true;
                                                  c.dt = ACL_FLOAT; });
    report("GradV3.sink.fp16", [](Cfg &c) { c.entry = "GradV3"; c.layout = "BSND"; c.hasSink = true;
                                            c.sinkDt = ACL_FLOAT16; });
    report("GradV3.sink.size", [](Cfg &c) { c.entry = "GradV3"; c.layout = "BSND"; c.hasSink = true; c.sink = {3};
                                            c.dsink = {3}; });
    report("GradV3.sink.rank", [](Cfg &c) { c.entry = "GradV3"; c.layout = "BSND"; c.hasSink = true;
                                            c.sink = {1, 2}; });
    report("GradV3.dsink.rank", [](Cfg &c) { c.entry = "GradV3"; c.layout = "BSND"; c.hasSink = true;
                                             c.dsink = {1, 2}; });

    for (const char *e : unpaddings) {
        std::string entry = e;
        report(entry + ".ok.tnd", [&](Cfg &c) { c.entry = entry; c.run = true; });
        report(entry + ".ok.causal", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 3; c.run = true; });
        // The layout check comes before the null checks: a null query with BSND is 161002
        report(entry + ".layout.bsnd", [&](Cfg &c) { c.entry = entry; c.layout = "BSND"; });
        report(entry + ".layout.null_query_bsnd", [&](Cfg &c) { c.entry = entry; c.layout = "BSND";
                                                                c.null.insert("query"); });
        report(entry + ".null.query_tnd", [&](Cfg &c) { c.entry = entry; c.null.insert("query"); });
        report(entry + ".head_num.zero", [&](Cfg &c) { c.entry = entry; c.headNum = 0; });
        report(entry + ".tiling.seq_null", [&](Cfg &c) { c.entry = entry; c.seqs = false; });
        report(entry + ".tiling.seq_sizes_differ", [&](Cfg &c) { c.entry = entry; c.cuKv = {48}; });
        report(entry + ".tiling.eod_nonzero", [&](Cfg &c) { c.entry = entry; c.cuQ = {16, 40, 30};
                                                            c.cuKv = {24, 48, 40}; });
        report(entry + ".ok.all_lengths_zero", [&](Cfg &c) { c.entry = entry; c.cuQ = {0, 0}; c.cuKv = {0, 0};
                                                             c.run = true; });
    }
    report("UnpaddingV4.ok.same_as_input", [](Cfg &c) { c.entry = "UnpaddingV4"; c.softmaxLayout = "same_as_input";
                                                        c.run = true; });
    report("UnpaddingV4.softmax.shape", [](Cfg &c) { c.entry = "UnpaddingV4"; c.smax = {2, 40, 8}; });
    report("UnpaddingV4.softmax.shape_same_as_input", [](Cfg &c) { c.entry = "UnpaddingV4"; c.smax = {2, 40, 8};
                                                                   c.softmaxLayout = "same_as_input"; });
    report("UnpaddingV4.softmax_layout.unknown", [](Cfg &c) { c.entry = "UnpaddingV4"; c.softmaxLayout = "NTD"; });
    report("UnpaddingV4.null.all_but_dq_present", [](Cfg &c) { c.entry = "UnpaddingV4"; c.null.insert("dqOut"); });
    // The TND pse (ProcessPseInfo); batches 16x24 and 24x24, N1 = 2, T2 = 48 (56 key rows: one_row_of_*)
    for (const char *e : unpaddings) {
        std::string entry = e;
        auto pse = [entry](Cfg &c, Shape shape) { c.entry = entry; c.hasPse = true; c.pse = shape; };
        report(entry + ".ok.pse_one_row", [&](Cfg &c) { pse(c, {2 * 48}); c.run = true; });
        report(entry + ".ok.pse_packed", [&](Cfg &c) { pse(c, {2 * (16 * 24 + 24 * 24)}); c.run = true; });
        report(entry + ".pse.length", [&](Cfg &c) { pse(c, {5}); });
        report(entry + ".pse.rank_2", [&](Cfg &c) { pse(c, {2 * 48, 1}); });
        report(entry + ".pse.dtype", [&](Cfg &c) { pse(c, {2 * 48}); c.pseDt = ACL_FLOAT; });
        report(entry + ".pse.alibi_not_causal", [&](Cfg &c) { pse(c, {1, 2, 1024, 24}); });
        report(entry + ".ok.pse_alibi", [&](Cfg &c) { pse(c, {2, 2, 1024, 24}); c.hasMask = true; c.sparse = 3;
                                                      c.run = true; });
        // a key T (56) past the lengths' sum (48): a 1-D pse of N1 rows of T2, or of the lengths' sum
        report(entry + ".ok.pse_one_row_of_key_t", [&](Cfg &c) { pse(c, {2 * 56}); c.t2 = 56; c.run = true; });
        report(entry + ".pse.one_row_of_kv_sum", [&](Cfg &c) { pse(c, {2 * 48}); c.t2 = 56; c.run = true; });
    }
    // ProcessTokensInfo (TND): modes 0 and 4 per batch, 7 and 8 on the band batch; batches 16x24 and 24x24
    for (const char *e : unpaddings) {
        std::string entry = e;
        auto tokens = [entry](Cfg &c, int64_t sparse, int64_t pre, int64_t next) {
            c.entry = entry; c.hasMask = true; c.sparse = sparse; c.pre = pre; c.next = next;
            if (sparse == 0) c.mask = {24, 24};
        };
        report(entry + ".ok.mode0_band", [&](Cfg &c) { tokens(c, 0, 8, 4); c.run = true; });
        report(entry + ".tokens.mode0_sum_not_positive", [&](Cfg &c) { tokens(c, 0, -3, 3); });
        report(entry + ".tokens.mode0_pre_past_s2", [&](Cfg &c) { tokens(c, 0, -30, 40); });
        // -preTokens 20: past batch 0's S1 (16), within its S2 (24), which mode 0 compares it with
        report(entry + ".ok.mode0_pre_within_s2", [&](Cfg &c) { tokens(c, 0, -20, 40); });
        report(entry + ".tokens.mode0_empty_batch", [&](Cfg &c) { tokens(c, 0, -20, 40); c.cuQ = {16, 16, 40};
                                                                 c.cuKv = {24, 24, 48}; c.run = true; });
        report(entry + ".tokens.mode4_next_past_s2", [&](Cfg &c) { tokens(c, 4, 40, -30); });
        report(entry + ".tokens.mode7_sum_not_positive", [&](Cfg &c) { tokens(c, 7, 0, 0); });
    }
    // 4-D attenMask with TND (CheckAttenMaskShape): B leaves out trailing empty batches
    for (const char *e : unpaddings) {
        std::string entry = e;
        ReportTndMasks<Cfg>(entry, report);
        auto trailing = [&](Cfg &c, Shape shape) { c.entry = entry; c.hasMask = true; c.sparse = 1; c.mask = shape;
                                                   c.cuQ = {16, 40, 40}; c.cuKv = {24, 48, 48}; };
        report(entry + ".ok.mask_trailing_empty", [&](Cfg &c) { trailing(c, {2, 1, 24, 24}); c.run = true; });
        report(entry + ".mask.trailing_empty_counted", [&](Cfg &c) { trailing(c, {3, 1, 24, 24}); });
        // other last dimensions, and 2-D masks of another shape; batches 16x24 and 24x24, then 24x24 twice
        auto masked = [&](Cfg &c, Shape shape) { c.entry = entry; c.hasMask = true; c.sparse = 1; c.mask = shape; };
        report(entry + ".mask.last_dims_wider", [&](Cfg &c) { masked(c, {2, 1, 24, 30}); });
        report(entry + ".mask.two_d_other_shape", [&](Cfg &c) { masked(c, {24, 30}); });
        report(entry + ".mask.two_d_read_past", [&](Cfg &c) { masked(c, {20, 30}); });
        auto same = [&](Cfg &c, Shape shape) { masked(c, shape); c.cuQ = {24, 48}; c.t1 = 48; };
        report(entry + ".mask.all_same_last_dims_wider", [&](Cfg &c) { same(c, {2, 1, 24, 30}); });
        // one batch: 25 x 20 holds the 23 * 20 + 24 elements read, fewer than S1 x S2
        report(entry + ".mask.all_same_too_small", [&](Cfg &c) { masked(c, {1, 1, 25, 20}); c.cuQ = {24};
                                                                 c.cuKv = {24}; c.t1 = 24; c.t2 = 24; });
        report(entry + ".tokens.all_same_mode0_sum_zero", [&](Cfg &c) { same(c, {24, 24}); c.sparse = 0; c.pre = -3;
                                                                       c.next = 3; });
        // sparse mode 5 on the BSND path (N1 2 over N2 1: layout BSND), whose kernels read prefixN[b]
        report(entry + ".mask.all_same_prefix5_no_prefix", [&](Cfg &c) { same(c, {2, 1, 24, 24}); c.sparse = 5; });
        report(entry + ".ok.all_same_prefix5", [&](Cfg &c) { same(c, {2, 1, 24, 24}); c.sparse = 5;
                                                             c.prefix = {8, 8}; c.run = true; });
    }
    for (const char *e : {"UnpaddingV2", "UnpaddingV5"}) {
        std::string entry = e;
        auto slopes = [entry](Cfg &c) { c.entry = entry; c.hasPse = true; c.pseType = 2; c.pse = {2}; };
        report(entry + ".ok.pse_slopes", [&](Cfg &c) { slopes(c); c.pse = {2, 2}; c.run = true; });
        report(entry + ".pse.slopes_size", [&](Cfg &c) { slopes(c); c.pse = {3}; });
        report(entry + ".pse.slopes_trailing_empty", [&](Cfg &c) { slopes(c); c.pse = {3, 2}; c.cuQ = {16, 40, 40};
                                                                   c.cuKv = {24, 48, 48}; });
        report(entry + ".pse.slopes_mode7", [&](Cfg &c) { slopes(c); c.hasMask = true; c.sparse = 7; c.pre = 24;
                                                          c.next = 0; });
        report(entry + ".pse.slopes_mode7_no_mask", [&](Cfg &c) { slopes(c); c.sparse = 7; c.pre = 24; c.next = 0; });
        report(entry + ".pse.slopes_mode8_no_mask", [&](Cfg &c) { slopes(c); c.sparse = 8; c.pre = 24; c.next = 0; });
        report(entry + ".ok.pse_slopes_mode7_same_ab", [&](Cfg &c) { slopes(c); c.hasMask = true; c.sparse = 7;
                                                                     c.pre = 1024; c.next = 0; c.t1 = c.t2 = 1024;
                                                                     c.cuQ = {1024}; c.cuKv = {1024}; });
        report(entry + ".pse.null_type0", [&](Cfg &c) { c.entry = entry; c.pseType = 0; });
        report(entry + ".pse.type_5_without_pse", [&](Cfg &c) { c.entry = entry; c.pseType = 5; });
    }
    report("UnpaddingV3.ok.rope", [](Cfg &c) { c.entry = "UnpaddingV3"; c.dt = ACL_BF16; c.hasRope = true;
                                               c.hasMask = true; c.sparse = 3; c.run = true; });
    report("UnpaddingV3.ok.rope_d64", [](Cfg &c) { c.entry = "UnpaddingV3"; c.dt = ACL_BF16; c.hasRope = true;
                                                   c.dr = 64; c.hasMask = true; c.sparse = 3; c.run = true; });
    report("UnpaddingV5.ok.rope_sink", [](Cfg &c) { c.entry = "UnpaddingV5"; c.dt = ACL_BF16; c.hasRope = true;
                                                    c.hasMask = true; c.sparse = 3; c.hasSink = true;
                                                    c.softmaxLayout = "same_as_input"; c.run = true; });
    // isSupportMultiInput of the backward returns its own codes
    for (const char *e : {"UnpaddingV3", "UnpaddingV5"}) {
        std::string entry = e;
        auto rope = [entry](Cfg &c) { c.entry = entry; c.dt = ACL_BF16; c.hasRope = true; c.hasMask = true;
                                      c.sparse = 3; };
        report(entry + ".rope.query_rope_only", [&](Cfg &c) { rope(c); c.null.insert("keyRope"); });
        report(entry + ".rope.rank", [&](Cfg &c) { rope(c); c.qRope = {c.t1, c.n1 * c.dr}; });
        report(entry + ".rope.wider_than_d", [&](Cfg &c) { rope(c); c.dr = 72; });
        report(entry + ".rope.fp16", [&](Cfg &c) { rope(c); c.dt = ACL_FLOAT16; c.ropeDt = ACL_BF16; });
        report(entry + ".rope.prefix_mode", [&](Cfg &c) { rope(c); c.sparse = 6; c.mask = {3072, 2048}; });
        report(entry + ".rope.no_mask", [&](Cfg &c) { rope(c); c.hasMask = false; c.sparse = 0; });
        report(entry + ".rope.dropout", [&](Cfg &c) { rope(c); c.hasDrop = true; c.keep = 0.9; });
        report(entry + ".rope.keep_prob", [&](Cfg &c) { rope(c); c.keep = 0.9; });
        report(entry + ".rope.padded_d", [&](Cfg &c) { rope(c); c.d = 100; });
    }
    report("UnpaddingV5.sink.fp32_query", [](Cfg &c) { c.entry = "UnpaddingV5"; c.hasSink = true; c.dt = ACL_FLOAT; });
    report("UnpaddingV5.sink.rank", [](Cfg &c) { c.entry = "UnpaddingV5"; c.hasSink = true; c.sink = {1, 2}; });
    report("UnpaddingV5.out.dsink_shape", [](Cfg &c) { c.entry = "UnpaddingV5"; c.hasSink = true; c.dsink = {3}; });
    report("UnpaddingV5.out.dq_rope_shape", [](Cfg &c) { c.entry = "UnpaddingV5"; c.dt = ACL_BF16; c.hasRope = true;
                                                          c.hasMask = true; c.sparse = 3; c.dqRope = {40, 2, 16}; });
    TearDown(stream);
    return 0;
}
