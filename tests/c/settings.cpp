// What a program gets while an ACLNN_EMU_* setting is bad, and after fixing it before aclInit.
// Usage: settings <calls|fix>; prints "<rule> <code>" lines and "msg.<rule> <message>" lines.
#include <cstdlib>
#include <string>

#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

static void Message(const char *rule) {
    const char *msg = aclGetRecentErrMsg();
    printf("msg.%s %s\n", rule, msg ? msg : "(null)");
}

static int Calls() {
    int32_t major = 0, minor = 0, patch = 0;
    REPORT("version", aclrtGetVersion(&major, &minor, &patch));
    REPORT("f2h_one", aclFloatToFloat16(1.0f));
    REPORT("size_fp16", aclDataTypeSize(ACL_FLOAT16));
    REPORT("init", aclInit(nullptr));
    Message("init");
    REPORT("set_device", aclrtSetDevice(0));
    Message("set_device");
    uint32_t count = 7;
    REPORT("device_count", aclrtGetDeviceCount(&count));
    REPORT("device_count_untouched", count == 7);
    void *p = nullptr;
    REPORT("malloc", aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("soc_name_is_null", aclrtGetSocName() == nullptr);
    int64_t dims[1] = {4};
    float host[4] = {};
    REPORT("create_tensor_is_null", aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, host)
                                        == nullptr);
    Message("create_tensor");
    REPORT("destroy_tensor", aclDestroyTensor(nullptr));
    uint64_t ws = 0;
    aclOpExecutor *executor = nullptr;
    REPORT("phase1", aclnnScatterPaKvCacheGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                           nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                           &ws, &executor));
    Message("phase1");
    REPORT("phase2", aclnnScatterPaKvCache(nullptr, 0, nullptr, nullptr));
    REPORT("finalize", aclFinalize());
    return 0;
}

// The library starts with the bad value (the first call below), the program fixes it, aclInit reads it again.
static int Fix() {
    REPORT("size_fp16", aclDataTypeSize(ACL_FLOAT16));
    REPORT("before_init", aclrtSetDevice(0));
    setenv("ACLNN_EMU_SOC", "ascend910_95", 1);
    REPORT("init", aclInit(nullptr));
    REPORT("set_device", aclrtSetDevice(0));
    void *p = nullptr;
    REPORT("malloc", aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("free", aclrtFree(p));
    const char *soc = aclrtGetSocName();
    printf("soc %s\n", soc ? soc : "(null)");
    REPORT("reset", aclrtResetDevice(0));
    REPORT("finalize", aclFinalize());
    return 0;
}

int main(int argc, char **argv) {
    std::string scenario = argc > 1 ? argv[1] : "";
    if (scenario == "calls") return Calls();
    if (scenario == "fix") return Fix();
    printf("unknown scenario %s\n", scenario.c_str());
    return 2;
}
