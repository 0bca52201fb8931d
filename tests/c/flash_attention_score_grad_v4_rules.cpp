// aclnnFlashAttentionScoreGradV4 (CANN 9.0.0 on) status codes: one call per rule of its op_api (and of what it hands
// the L0 op differently from the other entry points), plus valid baselines that run both phases, printed as
// "<rule> <code>". Run it with ACLNN_EMU_SOC and ACLNN_EMU_CANN_VERSION set.
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    aclDataType dt = ACL_FLOAT16, kDt = ACL_FLOAT16, dqDt = ACL_DT_UNDEFINED;
    std::string layout = "BNSD", softmaxLayout = "";
    int64_t b = 2, n1 = 2, n2 = 1, s1 = 16, s2 = 24, d = 16;
    Shape dq, smax;  // derived unless a case sets them
    bool dScale = false, rope = false, lengths = false, sink = false, dsink = false, empty = false;
    double keep = 1.0;
    int64_t seed = 0, offset = 0, outDtype = 0, headNum = -1;
    std::set<std::string> null;  // parameter names passed as nullptr
    bool run = false;
};

int Call(Cfg c, aclrtStream stream) {
    bool tnd = c.layout == "TND";
    if (c.empty) c.s1 = c.s2 = 0;
    Shape q = tnd ? Shape{c.b * c.s1, c.n1, c.d} : LayoutShape(c.layout, c.b, c.n1, c.s1, c.d);
    Shape k = tnd ? Shape{c.b * c.s2, c.n2, c.d} : LayoutShape(c.layout, c.b, c.n2, c.s2, c.d);
    if (c.smax.empty()) c.smax = tnd ? Shape{c.b * c.s1, c.n1, 8} : Shape{c.b, c.n1, c.s1, 8};
    if (c.dq.empty()) c.dq = q;
    std::vector<DeviceTensor> store(20);
    int slot = 0;
    auto make = [&](const char *name, bool present, const Shape &shape, aclDataType dt, float value) -> aclTensor * {
        if (!present || c.null.count(name)) return nullptr;
        DeviceTensor &t = store[slot++];
        if (t.Create(Bytes(shape, dt, value), shape, dt) != 0) return nullptr;
        return t.tensor;
    };
    aclTensor *tq = make("query", true, q, c.dt, 0.5f);
    aclTensor *tk = make("keyIn", true, k, c.kDt, 0.25f);
    aclTensor *tv = make("value", true, k, c.kDt, 1.0f);
    aclTensor *dy = make("dy", true, q, c.dt, 1.0f);
    aclTensor *smax = make("softmaxMax", true, c.smax, ACL_FLOAT, 0.0f);
    aclTensor *ssum = make("softmaxSum", true, c.smax, ACL_FLOAT, static_cast<float>(c.s2));
    aclTensor *attentionIn = make("attentionIn", true, q, c.dt, 1.0f);
    aclTensor *sink = make("sink", c.sink, Shape{c.n1}, ACL_FLOAT, 0.5f);
    aclTensor *qRope = make("queryRope", c.rope, Shape{q[0], q[1], 64}, ACL_BF16, 0.5f);
    aclTensor *kRope = make("keyRope", c.rope, Shape{k[0], k[1], 64}, ACL_BF16, 0.5f);
    aclTensor *scaleQ = make("dScaleQ", c.dScale, Shape{1}, ACL_FLOAT, 1.0f);
    aclTensor *dq = make("dqOut", true, c.dq, c.dqDt == ACL_DT_UNDEFINED ? c.dt : c.dqDt, 0.0f);
    aclTensor *dk = make("dkOut", true, k, c.kDt, 0.0f);
    aclTensor *dv = make("dvOut", true, k, c.kDt, 0.0f);
    aclTensor *dsink = make("dsinkOut", c.dsink, Shape{c.n1}, ACL_FLOAT, 0.0f);
    std::vector<int64_t> cuQ, cuKv;
    for (int64_t i = 1; i <= c.b; ++i) {
        cuQ.push_back(i * c.s1);
        cuKv.push_back(i * c.s2);
    }
    aclIntArray *seqQ = c.lengths ? aclCreateIntArray(cuQ.data(), cuQ.size()) : nullptr;
    aclIntArray *seqKv = c.lengths ? aclCreateIntArray(cuKv.data(), cuKv.size()) : nullptr;
    std::string layout = c.layout, softmaxLayout = c.softmaxLayout;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
        tq, tk, tv, dy, nullptr, nullptr, nullptr, nullptr, smax, ssum, nullptr, attentionIn, sink, qRope, kRope,
        scaleQ, nullptr, nullptr, nullptr, nullptr, nullptr, seqQ, seqKv, nullptr, nullptr, 0.25, c.keep, INT32_MAX,
        INT32_MAX, c.headNum < 0 ? c.n1 : c.headNum, &layout[0], &softmaxLayout[0], 0, 0, 1, c.seed, c.offset,
        c.outDtype, dq, dk, dv, nullptr, nullptr, nullptr, dsink, c.null.count("workspaceSize") ? nullptr : &workspaceSize,
        c.null.count("executor") ? nullptr : &executor);
    if (c.run) ret = RunPhase2(stream, ret, workspaceSize, executor, aclnnFlashAttentionScoreGradV4);
    if (seqQ) aclDestroyIntArray(seqQ);
    if (seqKv) aclDestroyIntArray(seqKv);
    return ret;
}

}  // namespace

int main(int argc, char **argv) {
    const std::string only = argc > 1 ? argv[1] : "";  // run just this rule
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    auto report = [&](const char *rule, const std::function<void(Cfg &)> &edit) {
        if (!only.empty() && only != rule) return;
        Cfg c;
        edit(c);
        REPORT(rule, Call(c, stream));
    };
    auto tnd = [](Cfg &c) { c.layout = "TND"; c.lengths = true; };
    report("ok.bnsd", [](Cfg &c) { c.run = true; });
    report("ok.bsh", [](Cfg &c) { c.layout = "BSH"; c.run = true; });
    report("ok.tnd", [&](Cfg &c) { tnd(c); c.run = true; });
    report("ok.out_dtype_ignored", [](Cfg &c) { c.outDtype = 5; c.run = true; });
    report("ok.all_out_empty", [](Cfg &c) { c.empty = true; c.headNum = 0; c.dt = c.kDt = ACL_INT8; c.run = true; });
    report("dropout.seed_offset", [](Cfg &c) { c.keep = 0.5; c.seed = 7; c.offset = 16; c.run = true; });
    for (const char *name : {"query", "keyIn", "value", "dy", "attentionIn", "dqOut", "dkOut", "dvOut",
                             "workspaceSize", "executor"}) {
        std::string rule = std::string("null.") + name;
        report(rule.c_str(), [&](Cfg &c) { c.null.insert(name); });
    }
    report("head_num.zero", [](Cfg &c) { c.headNum = 0; });
    report("shape.dq_unlike_query", [](Cfg &c) { c.dq = {2, 2, 16, 8}; });
    report("dtype.dq_unlike_query", [](Cfg &c) { c.dqDt = ACL_FLOAT; c.run = true; });
    report("dtype.key_mixed", [](Cfg &c) { c.kDt = ACL_BF16; });
    report("dtype.key_mixed_before_dscale", [](Cfg &c) { c.kDt = ACL_BF16; c.dScale = true; });
    report("sink.with_dsink", [](Cfg &c) { c.sink = c.dsink = true; c.run = true; });
    report("sink.without_dsink", [](Cfg &c) { c.sink = true; c.run = true; });
    report("sink.fp32_query", [](Cfg &c) { c.sink = c.dsink = true; c.dt = c.kDt = ACL_FLOAT; });
    report("softmax_in.dense_same_as_input", [](Cfg &c) { c.softmaxLayout = "same_as_input"; c.run = true; });
    report("softmax_in.tnd_unknown", [&](Cfg &c) { tnd(c); c.softmaxLayout = "BSH"; c.run = true; });
    report("softmax_in.tnd_same_as_input", [&](Cfg &c) { tnd(c); c.softmaxLayout = "same_as_input"; c.run = true; });
    report("softmax_in.tnd_same_as_input_head_major", [&](Cfg &c) {
        tnd(c); c.softmaxLayout = "same_as_input"; c.smax = {c.n1, c.b * c.s1, 8}; c.run = true; });
    report("tnd.without_lengths", [](Cfg &c) { c.layout = "TND"; });
    report("gap.dscale", [](Cfg &c) { c.dScale = true; });
    report("gap.rope", [&](Cfg &c) { c.dt = c.kDt = ACL_BF16; tnd(c); c.rope = true; });
    report("gap.dense_lengths", [](Cfg &c) { c.lengths = true; });
    TearDown(stream);
    return 0;
}
