// aclnnFusedInferAttentionScoreV5 (CANN 9.0.0 on) beside V4 under each ACLNN_EMU_CANN_VERSION and chip: valid calls
// that run both phases, V5's own parameters, printed as "<rule> <code>" (and "<rule>.msg <text>" for V4's phase 1).
// Phase 2 gets the executor phase 1 returned, as a program that does not check phase 1's status would pass it.
#include <climits>
#include <cstdio>
#include <functional>
#include <string>

#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
#include "flash_attention_case.h"

namespace {

struct Cfg {
    int version = 5;
    bool nullQuery = false, starts = false, run = true;
    int64_t pseType = 0, d = 32;  // D 128 takes Atlas A2/A3's FIA-V3 route (CheckGqaConstrain), D 32 the PFA route
    int slopes = -1;             // FLOAT alibi slopes: -1 none, 0 a 0-d tensor, 1 one per query head ([2])
    bool shortQuery = false;     // actualSeqLengths [8] beside the keys' 16
};

int Call(const Cfg &c, aclrtStream stream, const char *rule) {
    Shape bnsd = {1, 2, 16, c.d};
    DeviceTensor q, k, v, out;
    if (q.Create(Bytes(bnsd, ACL_FLOAT16, 0.5f), bnsd, ACL_FLOAT16) != 0) return -1;
    if (k.Create(Bytes(bnsd, ACL_FLOAT16, 0.25f), bnsd, ACL_FLOAT16) != 0) return -1;
    if (v.Create(Bytes(bnsd, ACL_FLOAT16, 1.0f), bnsd, ACL_FLOAT16) != 0) return -1;
    if (out.Create(Bytes(bnsd, ACL_FLOAT16, 0.0f), bnsd, ACL_FLOAT16) != 0) return -1;
    aclTensor *keys[] = {k.tensor}, *values[] = {v.tensor};
    aclTensorList *keyList = aclCreateTensorList(keys, 1), *valueList = aclCreateTensorList(values, 1);
    std::vector<int64_t> first = {7}, eight = {8};
    aclIntArray *start = c.starts ? aclCreateIntArray(first.data(), 1) : nullptr;
    aclIntArray *lengths = c.shortQuery ? aclCreateIntArray(eight.data(), 1) : nullptr;
    Shape slopesShape = c.slopes == 0 ? Shape{} : Shape{2};
    DeviceTensor slopes;
    if (c.slopes >= 0 && slopes.Create(Bytes(slopesShape, ACL_FLOAT, 0.25f), slopesShape, ACL_FLOAT) != 0) return -1;
    aclTensor *query = c.nullQuery ? nullptr : q.tensor;
    char layout[] = "BNSD";
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret;
    if (c.version == 4) {
        ret = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
            query, keyList, valueList, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            nullptr, nullptr, nullptr, nullptr, nullptr, 2, 0.125, INT32_MAX, INT32_MAX, layout, 2, 0, 0, 0, 0, false, 0,
            0, 0, out.tensor, nullptr, &size, &executor);
    } else {
        ret = aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
            query, keyList, valueList, c.slopes >= 0 ? slopes.tensor : nullptr, nullptr, lengths, nullptr, nullptr,
            nullptr, nullptr, nullptr, nullptr,
            nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            nullptr, nullptr, nullptr, nullptr, nullptr, start, start, 2, 0.125, INT32_MAX, INT32_MAX, layout, 2, 0, 0, 0,
            0, false, 0, 0, 0, c.pseType, out.tensor, nullptr, &size, &executor);
    }
    if (ret != 0 && c.version == 4) {
        const char *msg = aclGetRecentErrMsg();
        printf("%s.msg %s\n", rule, msg ? msg : "(none)");
    }
    if (c.run && c.version == 4) {
        // phase 2 with whatever phase 1 returned: a withdrawn entry point refuses it before reading the executor
        void *workspace = nullptr;
        if (size > 0 && aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) != 0) return -1;
        int second = aclnnFusedInferAttentionScoreV4(workspace, size, executor, stream);
        REPORT((std::string(rule) + ".phase2").c_str(), second);
        if (second == 0) second = aclrtSynchronizeStream(stream);
        if (workspace) aclrtFree(workspace);
        if (ret == 0) ret = second;
    } else if (c.run) {
        ret = RunPhase2(stream, ret, size, executor, aclnnFusedInferAttentionScoreV5);
    }
    if (start) aclDestroyIntArray(start);
    if (lengths) aclDestroyIntArray(lengths);
    aclDestroyTensorList(keyList);
    aclDestroyTensorList(valueList);
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
        REPORT(rule, Call(c, stream, rule));
    };
    report("v4.ok", [](Cfg &c) { c.version = 4; });
    report("v5.ok", [](Cfg &) {});
    report("v5.null.query", [](Cfg &c) { c.nullQuery = true; c.run = false; });
    report("v5.start_indices", [](Cfg &c) { c.starts = true; });
    report("v5.pse_type1.pfa", [](Cfg &c) { c.pseType = 1; });
    report("v5.pse_type1.fia_v3", [](Cfg &c) { c.pseType = 1; c.d = 128; });
    report("v5.pse_type2.pfa", [](Cfg &c) { c.pseType = 2; });
    report("v5.alibi.ok", [](Cfg &c) { c.pseType = 2; c.slopes = 1; c.starts = true; });
    report("v5.alibi.scalar_slopes", [](Cfg &c) { c.pseType = 3; c.slopes = 0; c.run = false; });
    report("v5.alibi.lengths", [](Cfg &c) { c.pseType = 2; c.slopes = 1; c.shortQuery = true; c.run = false; });
    TearDown(stream);
    return 0;
}
