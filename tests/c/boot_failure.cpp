// What the library returns when its embedded Python emulator cannot start.
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
    return 0;
}
