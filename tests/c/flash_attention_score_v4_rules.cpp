// aclnnFlashAttentionScoreV4 (CANN 9.0.0 on) status codes: one call per rule of its op_api and of the tiling
// attributes V4 adds, plus valid baselines that run both phases, printed as "<rule> <code>". Run it with
// ACLNN_EMU_SOC and ACLNN_EMU_CANN_VERSION set.
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    aclDataType dt = ACL_FLOAT16, kDt = ACL_FLOAT16, outDt = ACL_FLOAT16;
    std::string layout = "BNSD", softmaxLayout = "";
    int64_t b = 2, n1 = 2, n2 = 1, s1 = 16, s2 = 24, d = 16;
    aclFormat qFormat = ACL_FORMAT_ND;
    bool dScale = false, rope = false, lengths = false;
    double keep = 1.0;
    int64_t outDtype = 0, seed = 0, offset = 0, headNum = -1;
    std::set<std::string> null;  // parameter names passed as nullptr
    bool run = false;
};

int Call(Cfg c, aclrtStream stream) {
    bool tnd = c.layout == "TND";
    Shape q = tnd ? Shape{c.b * c.s1, c.n1, c.d} : LayoutShape(c.layout, c.b, c.n1, c.s1, c.d);
    Shape k = tnd ? Shape{c.b * c.s2, c.n2, c.d} : LayoutShape(c.layout, c.b, c.n2, c.s2, c.d);
    Shape smax = tnd ? Shape{c.b * c.s1, c.n1, 8} : Shape{c.b, c.n1, c.s1, 8};
    std::vector<DeviceTensor> store(12);
    int slot = 0;
    auto make = [&](const char *name, bool present, const Shape &shape, aclDataType dt, float value,
                    aclFormat format = ACL_FORMAT_ND) -> aclTensor * {
        if (!present || c.null.count(name)) return nullptr;
        DeviceTensor &t = store[slot++];
        if (t.Create(Bytes(shape, dt, value), shape, dt, format) != 0) return nullptr;
        return t.tensor;
    };
    aclTensor *tq = make("query", true, q, c.dt, 0.5f, c.qFormat);
    aclTensor *tk = make("key", true, k, c.kDt, 0.25f);
    aclTensor *tv = make("value", true, k, c.kDt, 1.0f);
    aclTensor *qRope = make("queryRope", c.rope, Shape{q[0], q[1], 64}, ACL_BF16, 0.5f);
    aclTensor *kRope = make("keyRope", c.rope, Shape{k[0], k[1], 64}, ACL_BF16, 0.5f);
    aclTensor *dq = make("dScaleQ", c.dScale, Shape{1}, ACL_FLOAT, 1.0f);
    aclTensor *tmax = make("softmaxMaxOut", true, smax, ACL_FLOAT, 0.0f);
    aclTensor *tsum = make("softmaxSumOut", true, smax, ACL_FLOAT, 0.0f);
    aclTensor *out = make("attentionOutOut", true, q, c.outDt, 0.0f);
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
    int ret = aclnnFlashAttentionScoreV4GetWorkspaceSize(
        tq, tk, tv, nullptr, nullptr, nullptr, nullptr, qRope, kRope, dq, nullptr, nullptr, nullptr, nullptr, seqQ,
        seqKv, nullptr, nullptr, 0.25, c.keep, INT32_MAX, INT32_MAX, c.headNum < 0 ? c.n1 : c.headNum,
        c.null.count("inputLayout") ? nullptr : &layout[0], 0, 0, c.outDtype, 1, &softmaxLayout[0], c.seed, c.offset,
        tmax, tsum, nullptr, out, c.null.count("workspaceSize") ? nullptr : &workspaceSize,
        c.null.count("executor") ? nullptr : &executor);
    if (c.run) ret = RunPhase2(stream, ret, workspaceSize, executor, aclnnFlashAttentionScoreV4);
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
    report("ok.bnsd", [](Cfg &c) { c.run = true; });
    report("ok.bsh", [](Cfg &c) { c.layout = "BSH"; c.run = true; });
    report("ok.tnd", [](Cfg &c) { c.layout = "TND"; c.lengths = true; c.run = true; });
    report("ok.tnd_same_as_input", [](Cfg &c) { c.layout = "TND"; c.lengths = true; c.softmaxLayout = "same_as_input";
                                                c.run = true; });
    report("ok.out_dtype_1", [](Cfg &c) { c.outDtype = 1; c.run = true; });
    report("ok.seed_offset", [](Cfg &c) { c.keep = 0.5; c.seed = 7; c.offset = 16; c.run = true; });
    for (const char *name : {"query", "key", "value", "inputLayout", "softmaxMaxOut", "softmaxSumOut",
                             "attentionOutOut", "workspaceSize", "executor"}) {
        std::string rule = std::string("null.") + name;
        report(rule.c_str(), [&](Cfg &c) { c.null.insert(name); });
    }
    report("format.query_nz", [](Cfg &c) { c.qFormat = ACL_FORMAT_FRACTAL_NZ; c.run = true; });
    report("dtype.key_mixed", [](Cfg &c) { c.kDt = ACL_BF16; });
    report("dtype.key_mixed_before_dscale", [](Cfg &c) { c.kDt = ACL_BF16; c.dScale = true; });
    report("head_num.zero", [](Cfg &c) { c.headNum = 0; });
    report("tiling.out_dtype_2", [](Cfg &c) { c.outDtype = 2; c.run = true; });
    report("tiling.tnd_without_lengths", [](Cfg &c) { c.layout = "TND"; });
    report("gap.dscale", [](Cfg &c) { c.dScale = true; });
    report("gap.rope", [](Cfg &c) { c.dt = c.kDt = c.outDt = ACL_BF16; c.layout = "TND"; c.lengths = true;
                                    c.rope = true; });
    report("ok.dense_lengths_ignored", [](Cfg &c) { c.lengths = true; c.run = true; });
    TearDown(stream);
    return 0;
}
