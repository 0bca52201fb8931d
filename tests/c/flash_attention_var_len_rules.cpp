// Status codes of the FlashAttentionScore forward entry points beside V2: aclnnFlashAttentionScore (V1),
// aclnnFlashAttentionScoreV3 (sink) and aclnnFlashAttentionVarLenScore V1-V5 (TND, rope, sink, softmax
// layout). One call per rule of each entry point's own op_api and of the TND tiling, plus valid baselines
// (both phases), printed as "<rule> <code>"; run it once per chip family (ACLNN_EMU_SOC).
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    std::string entry = "VarLen";  // Score, ScoreV3, VarLen, VarLenV2 ... VarLenV5
    aclDataType dt = ACL_FLOAT16, ropeDt = ACL_DT_UNDEFINED, sinkDt = ACL_FLOAT;
    std::string layout = "TND", softmaxLayout = "";
    int64_t n1 = 2, n2 = 1, d = 64, dr = 32, t1 = 40, t2 = 48;
    std::vector<int64_t> cuQ = {16, 40}, cuKv = {24, 48};
    Shape q, k, v, out, smax, mask, sink, qRope, kRope, pse;
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
        if (out.empty()) out = q;
        if (smax.empty()) smax = tnd ? Shape{t1, n1, 8} : Shape{2, n1, t1 / 2, 8};
        if (hasMask && mask.empty()) mask = {2048, 2048};
        if (hasSink && sink.empty()) sink = {n1};
        if (hasRope && qRope.empty()) qRope = {t1, n1, dr};
        if (hasRope && kRope.empty()) kRope = {t2, n2, dr};
        if (ropeDt == ACL_DT_UNDEFINED) ropeDt = dt;
        if (pse.empty()) pse = {1, n1, 16, 24};
        if (pseDt == ACL_DT_UNDEFINED) pseDt = pseType == 2 || pseType == 3 ? ACL_FLOAT : dt;
    }
};

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
    aclTensor *k = make("key", true, c.k, c.dt, 0.25f);
    aclTensor *v = make("value", true, c.v, c.dt, 1.0f);
    aclTensor *qRope = make("queryRope", c.hasRope, c.qRope, c.ropeDt, 0.5f);
    aclTensor *kRope = make("keyRope", c.hasRope, c.kRope, c.ropeDt, 0.5f);
    aclTensor *pse = make("pse", c.hasPse, c.pse, c.pseDt, 0.0f);
    aclTensor *drop = make("dropMask", c.hasDrop, {c.n1 * (16 * 24 + 24 * 24) / 8 + 8}, ACL_UINT8, 255.0f);
    aclTensor *mask = make("attenMask", c.hasMask, c.mask, ACL_UINT8, 0.0f);
    aclTensor *sink = make("sink", c.hasSink, c.sink, c.sinkDt, 0.5f);
    aclTensor *smax = make("softmaxMaxOut", true, c.smax, ACL_FLOAT, 0.0f);
    aclTensor *ssum = make("softmaxSumOut", true, c.smax, ACL_FLOAT, 0.0f);
    aclTensor *out = make("attentionOutOut", true, c.out, c.dt, 0.0f);
    aclIntArray *seqQ = c.seqs ? aclCreateIntArray(c.cuQ.data(), c.cuQ.size()) : nullptr;
    aclIntArray *seqKv = c.seqs ? aclCreateIntArray(c.cuKv.data(), c.cuKv.size()) : nullptr;
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
    decltype(&aclnnFlashAttentionScore) phase2 = nullptr;
    if (e == "Score") {
        ret = aclnnFlashAttentionScoreGetWorkspaceSize(q, k, v, pse, drop, nullptr, mask, nullptr, 0.25, c.keep, c.pre,
                                                       c.next, c.headNum, lay, 0, c.sparse, smax, ssum, nullptr, out,
                                                       ws, ex);
        phase2 = aclnnFlashAttentionScore;
    } else if (e == "ScoreV3") {
        ret = aclnnFlashAttentionScoreV3GetWorkspaceSize(q, k, v, pse, drop, nullptr, mask, sink, nullptr, qStart,
                                                         kvStart, 0.25, c.keep, c.pre, c.next, c.headNum, lay, 0,
                                                         c.sparse, c.pseType, smax, ssum, nullptr, out, ws, ex);
        phase2 = aclnnFlashAttentionScoreV3;
    } else if (e == "VarLen") {
        ret = aclnnFlashAttentionVarLenScoreGetWorkspaceSize(q, k, v, pse, drop, nullptr, mask, nullptr, seqQ, seqKv,
                                                             0.25, c.keep, c.pre, c.next, c.headNum, lay, 0, c.sparse,
                                                             smax, ssum, nullptr, out, ws, ex);
        phase2 = aclnnFlashAttentionVarLenScore;
    } else if (e == "VarLenV2") {
        ret = aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
            q, k, v, pse, drop, nullptr, mask, nullptr, seqQ, seqKv, qStart, kvStart, 0.25, c.keep, c.pre, c.next,
            c.headNum, lay, 0, c.sparse, c.pseType, smax, ssum, nullptr, out, ws, ex);
        phase2 = aclnnFlashAttentionVarLenScoreV2;
    } else if (e == "VarLenV3") {
        ret = aclnnFlashAttentionVarLenScoreV3GetWorkspaceSize(
            q, qRope, k, kRope, v, pse, drop, nullptr, mask, nullptr, seqQ, seqKv, qStart, kvStart, 0.25, c.keep,
            c.pre, c.next, c.headNum, lay, 0, c.sparse, c.pseType, smax, ssum, nullptr, out, ws, ex);
        phase2 = aclnnFlashAttentionVarLenScoreV3;
    } else if (e == "VarLenV4") {
        ret = aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
            q, k, v, pse, drop, nullptr, mask, nullptr, seqQ, seqKv, 0.25, c.keep, c.pre, c.next, c.headNum, lay, 0,
            c.sparse, &softmaxLayout[0], smax, ssum, nullptr, out, ws, ex);
        phase2 = aclnnFlashAttentionVarLenScoreV4;
    } else if (e == "VarLenV5") {
        ret = aclnnFlashAttentionVarLenScoreV5GetWorkspaceSize(
            q, qRope, k, kRope, v, pse, drop, nullptr, mask, sink, nullptr, seqQ, seqKv, qStart, kvStart, 0.25,
            c.keep, c.pre, c.next, c.headNum, lay, 0, c.sparse, c.pseType, &softmaxLayout[0], smax, ssum, nullptr,
            out, ws, ex);
        phase2 = aclnnFlashAttentionVarLenScoreV5;
    }
    if (c.run) ret = RunPhase2(stream, ret, size, executor, phase2);
    for (aclIntArray *a : {seqQ, seqKv, qStart, kvStart}) {
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
    const char *varLens[] = {"VarLen", "VarLenV2", "VarLenV3", "VarLenV4", "VarLenV5"};

    // Valid baselines (both phases)
    report("Score.ok.bsnd", [](Cfg &c) { c.entry = "Score"; c.layout = "BSND"; c.run = true; });
    report("ScoreV3.ok.sink", [](Cfg &c) { c.entry = "ScoreV3"; c.layout = "BSND"; c.hasSink = true; c.run = true; });
    report("ScoreV3.ok.empty_sink", [](Cfg &c) { c.entry = "ScoreV3"; c.layout = "BSND"; c.hasSink = true;
                                                 c.sink = {0}; c.run = true; });
    for (const char *e : varLens) {
        std::string entry = e;
        report(entry + ".ok.tnd", [&](Cfg &c) { c.entry = entry; c.run = true; });
        report(entry + ".ok.causal", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 3; c.run = true; });
        // VarLen: the layout is checked after the empty outputs (SUCCESS) and before anything else (161002)
        report(entry + ".layout.bsnd", [&](Cfg &c) { c.entry = entry; c.layout = "BSND"; });
        report(entry + ".layout.lower_case", [&](Cfg &c) { c.entry = entry; c.layout = "tnd"; });
        report(entry + ".layout.bsnd_all_out_empty", [&](Cfg &c) { c.entry = entry; c.layout = "BSND";
                                                                   c.out = {0, 2, 64}; c.smax = {0, 2, 8}; });
        report(entry + ".null.query_before_layout", [&](Cfg &c) { c.entry = entry; c.layout = "BSND";
                                                                  c.null.insert("query"); });
        report(entry + ".tiling.seq_null", [&](Cfg &c) { c.entry = entry; c.seqs = false; });
        report(entry + ".tiling.seq_sizes_differ", [&](Cfg &c) { c.entry = entry; c.cuKv = {48}; });
        report(entry + ".tiling.seq_past_t1", [&](Cfg &c) { c.entry = entry; c.cuQ = {16, 41}; });
        report(entry + ".tiling.head_num", [&](Cfg &c) { c.entry = entry; c.headNum = 1; });
        // CheckPretokenAndNexttoken: rows no key is visible to, per batch
        report(entry + ".tokens.mode3_s1_above_s2", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 3;
                                                                  c.cuQ = {30, 40}; });
        report(entry + ".tokens.mode4_negative_pre", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 4;
                                                                   c.pre = -1; c.next = 8; });
        report(entry + ".tokens.mode7_positive_next", [&](Cfg &c) { c.entry = entry; c.hasMask = true;
                                                                    c.sparse = 7; c.next = 1; });
        report(entry + ".tokens.mode8_pre_below_s2", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 8;
                                                                   c.pre = 10; c.next = 0; });
        report(entry + ".ok.mode8", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 8; c.pre = 24;
                                                  c.next = 0; c.run = true; });
    }
    // The TND pse (AnalyzeOptionalInput, then SetPseAlibiParams of FlashAttentionVarLenScoreTiling); batches
    // 16x24 and 24x24, N1 = 2
    for (const char *e : varLens) {
        std::string entry = e;
        auto pse = [entry](Cfg &c, Shape shape) { c.entry = entry; c.hasPse = true; c.pse = shape; };
        report(entry + ".ok.pse_one_row", [&](Cfg &c) { pse(c, {2 * 48, 1}); c.run = true; });
        report(entry + ".ok.pse_packed", [&](Cfg &c) { pse(c, {2 * (16 * 24 + 24 * 24), 1}); c.run = true; });
        report(entry + ".pse.rank_1", [&](Cfg &c) { pse(c, {2 * 48}); });
        report(entry + ".pse.shape", [&](Cfg &c) { pse(c, {5, 1}); });
        report(entry + ".pse.alibi_unequal", [&](Cfg &c) { pse(c, {1, 2, 1024, 24}); c.hasMask = true;
                                                           c.sparse = 2; });
        auto equal = [&](Cfg &c) { pse(c, {2, 2, 1024, 24}); c.cuQ = {24, 48}; c.t1 = 48; };
        report(entry + ".ok.pse_alibi", [&](Cfg &c) { equal(c); c.hasMask = true; c.sparse = 3; c.run = true; });
        report(entry + ".pse.alibi_not_causal", [&](Cfg &c) { equal(c); });
    }
    // Mode 0 with a mask (GetSparseInfo, SparseNoMaskModeCheck); batches 16x24 and 24x24
    for (const char *e : varLens) {
        std::string entry = e;
        auto band = [entry](Cfg &c, int64_t pre, int64_t next) { c.entry = entry; c.hasMask = true; c.mask = {24, 24};
                                                                 c.pre = pre; c.next = next; };
        report(entry + ".ok.mode0_band", [&](Cfg &c) { band(c, 8, 4); c.run = true; });
        report(entry + ".tokens.mode0_negative_next", [&](Cfg &c) { band(c, 100, -1); });
        report(entry + ".tokens.mode0_row_without_keys", [&](Cfg &c) { band(c, -1, 30); });
        report(entry + ".tokens.mode0_band_gap", [&](Cfg &c) { band(c, -4, 2); c.cuQ = {16, 36}; c.t1 = 36;
                                                              c.mask = {20, 24}; });
        // the arch35 GetSparseInfo checks the mode before looking for a mask
        report(entry + ".sparse.mode5_without_mask", [&](Cfg &c) { c.entry = entry; c.sparse = 5; c.run = true; });
    }
    // 4-D attenMask with TND (AnalyzeOptionalInput): [1|B, 1, maxS1, maxS2] or [B, N1, maxS1, maxS2]
    for (const char *e : varLens) {
        std::string entry = e;
        ReportTndMasks<Cfg>(entry, report);
        report(entry + ".mask.rank_3", [&](Cfg &c) { c.entry = entry; c.hasMask = true; c.sparse = 1;
                                                     c.mask = {1, 24, 24}; });
    }
    for (const char *e : {"VarLenV2", "VarLenV5"}) {
        std::string entry = e;
        auto slopes = [entry](Cfg &c) { c.entry = entry; c.hasPse = true; c.pseType = 2; c.pse = {2}; };
        report(entry + ".ok.pse_slopes", [&](Cfg &c) { slopes(c); c.pse = {2, 2}; c.run = true; });
        report(entry + ".ok.pse_slopes_equal", [&](Cfg &c) { slopes(c); c.cuQ = {24, 48}; c.t1 = 48; c.run = true; });
        report(entry + ".pse.slopes_rank", [&](Cfg &c) { slopes(c); c.pse = {1, 2, 2}; });
        report(entry + ".pse.slopes_mode7", [&](Cfg &c) { slopes(c); c.hasMask = true; c.sparse = 7; c.pre = 24;
                                                          c.next = 0; });
        report(entry + ".pse.slopes_mode8", [&](Cfg &c) { slopes(c); c.hasMask = true; c.sparse = 8; c.pre = 24;
                                                          c.next = 0; });
        report(entry + ".pse.null_type0", [&](Cfg &c) { c.entry = entry; c.pseType = 0; });
    }
    report("VarLenV3.ok.rope", [](Cfg &c) { c.entry = "VarLenV3"; c.dt = ACL_BF16; c.hasRope = true; c.hasMask = true;
                                            c.sparse = 3; c.run = true; });
    report("VarLenV5.ok.rope_sink_tnd_softmax", [](Cfg &c) { c.entry = "VarLenV5"; c.dt = ACL_BF16; c.hasRope = true;
                                                             c.hasMask = true; c.sparse = 3; c.hasSink = true;
                                                             c.softmaxLayout = "same_as_input"; c.run = true; });
    report("VarLenV4.ok.same_as_input", [](Cfg &c) { c.entry = "VarLenV4"; c.softmaxLayout = "same_as_input";
                                                     c.run = true; });
    report("VarLenV4.ok.unknown_softmax_layout", [](Cfg &c) { c.entry = "VarLenV4"; c.softmaxLayout = "NTD";
                                                              c.run = true; });

    // isSupportMultiInput (rope), wrapped in CHECK_RET(..., ACLNN_ERR_PARAM_NULLPTR): 161001
    for (const char *e : {"VarLenV3", "VarLenV5"}) {
        std::string entry = e;
        auto rope = [entry](Cfg &c) { c.entry = entry; c.dt = ACL_BF16; c.hasRope = true; c.hasMask = true;
                                      c.sparse = 3; };
        report(entry + ".rope.query_rope_only", [&](Cfg &c) { rope(c); c.null.insert("keyRope"); });
        report(entry + ".rope.wider_than_d", [&](Cfg &c) { rope(c); c.dr = 72; });
        report(entry + ".rope.fp16", [&](Cfg &c) { rope(c); c.dt = ACL_FLOAT16; });
        report(entry + ".rope.rope_fp16", [&](Cfg &c) { rope(c); c.ropeDt = ACL_FLOAT16; });
        report(entry + ".rope.prefix_mode", [&](Cfg &c) { rope(c); c.sparse = 6; c.mask = {3072, 2048}; });
        report(entry + ".rope.no_mask", [&](Cfg &c) { rope(c); c.hasMask = false; c.sparse = 0; });
        report(entry + ".rope.dropout", [&](Cfg &c) { rope(c); c.hasDrop = true; c.keep = 0.9; });
        report(entry + ".rope.keep_prob", [&](Cfg &c) { rope(c); c.keep = 0.9; });
        report(entry + ".rope.padded_d", [&](Cfg &c) { rope(c); c.d = 100; });
    }

    // sink: InputDtypeCheck (161002), then the tiling (161001)
    for (const char *e : {"ScoreV3", "VarLenV5"}) {
        std::string entry = e;
        auto sinkCase = [entry](Cfg &c) { c.entry = entry; c.hasSink = true;
                                          if (entry == "ScoreV3") c.layout = "BSND"; };
        report(entry + ".sink.fp16", [&](Cfg &c) { sinkCase(c); c.sinkDt = ACL_FLOAT16; });
        report(entry + ".sink.size", [&](Cfg &c) { sinkCase(c); c.sink = {3}; });
        report(entry + ".sink.rank", [&](Cfg &c) { sinkCase(c); c.sink = {1, 2}; });
    }
    // V1: CheckFaParam nulls and the L0 outputs (161001 either way)
    for (const char *name : {"query", "key", "value", "inputLayout", "softmaxMaxOut", "softmaxSumOut",
                             "attentionOutOut", "workspaceSize", "executor"}) {
        report(std::string("Score.null.") + name, [&](Cfg &c) { c.entry = "Score"; c.layout = "BSND";
                                                                c.null.insert(name); });
    }
    report("Score.tiling.tnd_without_lengths", [](Cfg &c) { c.entry = "Score"; });
    report("Score.dtype.int8", [](Cfg &c) { c.entry = "Score"; c.layout = "BSND"; c.dt = ACL_INT8; });
    TearDown(stream);
    return 0;
}
