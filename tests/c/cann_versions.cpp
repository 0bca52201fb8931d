// A user's program under each ACLNN_EMU_CANN_VERSION: the version functions, then a valid
// aclnnPromptFlashAttentionV2 and aclnnIncreFlashAttentionV4 call, each phase's status and message.
// Phase 2 gets the executor phase 1 returned (nullptr when it failed), as a program that does not
// check phase 1's status would pass it. Prints "<rule> <status>" lines and "<rule>.msg <text>".
#include <cstdio>
#include <string>

#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "common.h"

static void Message(const char *rule) {
    const char *msg = aclGetRecentErrMsg();
    printf("%s.msg %s\n", rule, msg ? msg : "(none)");
}

static int Phase2(const char *rule, aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream),
                  uint64_t size, aclOpExecutor *executor, aclrtStream stream) {
    void *workspace = nullptr;
    if (size > 0 && aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) != 0) return -1;
    int ret = phase2(workspace, size, executor, stream);
    REPORT(rule, ret);
    if (ret != 0) Message(rule);
    if (ret == 0) REPORT((std::string(rule) + ".sync").c_str(), aclrtSynchronizeStream(stream));
    if (workspace) aclrtFree(workspace);
    return 0;
}

static int Calls(aclrtStream stream) {
    std::vector<int64_t> bnsd = {1, 2, 16, 32}, row = {1, 2, 1, 32};
    DeviceTensor q, k, v, out, q1, out1;
    CHECK_OK(q.Create(LcgFp16(ShapeSize(bnsd), 1), bnsd, ACL_FLOAT16));
    CHECK_OK(k.Create(LcgFp16(ShapeSize(bnsd), 2), bnsd, ACL_FLOAT16));
    CHECK_OK(v.Create(LcgFp16(ShapeSize(bnsd), 3), bnsd, ACL_FLOAT16));
    CHECK_OK(out.Create(bnsd, ACL_FLOAT16));
    CHECK_OK(q1.Create(LcgFp16(ShapeSize(row), 4), row, ACL_FLOAT16));
    CHECK_OK(out1.Create(row, ACL_FLOAT16));

    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    char layout[] = "BNSD";
    int ret = aclnnPromptFlashAttentionV2GetWorkspaceSize(
        q.tensor, k.tensor, v.tensor, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        2, 0.125, 2147483647, 0, layout, 0, 0, out.tensor, &size, &executor);
    REPORT("pfa.phase1", ret);
    if (ret != 0) Message("pfa.phase1");
    CHECK_OK(Phase2("pfa.phase2", aclnnPromptFlashAttentionV2, size, executor, stream));

    aclTensor *keys[] = {k.tensor}, *values[] = {v.tensor};
    aclTensorList *keyList = aclCreateTensorList(keys, 1), *valueList = aclCreateTensorList(values, 1);
    size = 0;
    executor = nullptr;
    ret = aclnnIncreFlashAttentionV4GetWorkspaceSize(
        q1.tensor, keyList, valueList, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, 2, 0.125, layout, 2, 0, 1, out1.tensor, &size, &executor);
    REPORT("ifa.phase1", ret);
    if (ret != 0) Message("ifa.phase1");
    CHECK_OK(Phase2("ifa.phase2", aclnnIncreFlashAttentionV4, size, executor, stream));
    return 0;
}

int main() {
    int32_t major = 0, minor = 0, patch = 0;
    CHECK_OK(aclrtGetVersion(&major, &minor, &patch));
    printf("version %d.%d.%d\n", major, minor, patch);
    char runtime[] = "runtime", text[128] = {0};
    int32_t num = 0;
    CHECK_OK(aclsysGetVersionStr(runtime, text));
    CHECK_OK(aclsysGetVersionNum(runtime, &num));
    printf("version_str %s\nversion_num %d\n", text, num);
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    CHECK_OK(Calls(stream));  // its tensors are freed before aclFinalize checks for leaks
    TearDown(stream);
    return 0;
}
