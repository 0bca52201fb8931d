// What the library returns when its embedded Python emulator cannot start: error codes (never 0),
// the reason from aclGetRecentErrMsg, and pure helpers that still work because they are C.
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

int main() {
    REPORT("aclInit", aclInit(nullptr));
    REPORT("aclrtSetDevice", aclrtSetDevice(0));
    int64_t dims[1] = {4};
    printf("aclCreateTensor_is_null %d\n", aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1,
                                                             nullptr) == nullptr);
    uint64_t ws = 0;
    aclOpExecutor *executor = nullptr;
    REPORT("phase1", aclnnScatterPaKvCacheGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                           nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                           &ws, &executor));
    REPORT("aclDestroyTensor", aclDestroyTensor(nullptr));
    REPORT("aclFloatToFloat16", aclFloatToFloat16(1.5f));
    REPORT("aclFloat16ToFloat_x4", aclFloat16ToFloat(0x3E00) * 4);
    REPORT("aclDataTypeSize", aclDataTypeSize(ACL_BF16));
    for (int i = 0; i < 2; i++) {   // the reason, each time it is asked for
        const char *message = aclGetRecentErrMsg();
        printf("message<<%s>>\n", message ? message : "(null)");
    }
    return 0;
}
