// Runtime behaviour that depends on the environment or on how a process ends.
// Usage: runtime_env <scenario>; prints "<rule> <code>" lines.
// runtime_env parts <name>...: for each name, ACLNN_EMU_SOC=<name> set before aclInit (settings are
// read again there), then one line "<name> <aclInit code> <aclrtGetSocName or (null)>".
#include <unistd.h>

#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "common.h"

static int Devices() {
    uint32_t count = 0;
    aclrtGetDeviceCount(&count);
    printf("count %u\n", count);
    REPORT("set_last", aclrtSetDevice(static_cast<int32_t>(count) - 1));
    REPORT("set_past_last", aclrtSetDevice(static_cast<int32_t>(count)));
    return 0;
}

static int Memory() {
    void *big = nullptr, *small = nullptr;
    REPORT("malloc_over_capacity", aclrtMalloc(&big, (size_t(1) << 30) + 1, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("malloc_small", aclrtMalloc(&small, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    size_t free_bytes = 0, total = 0;
    aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total);
    printf("total %zu\n", total);
    REPORT("free_small", aclrtFree(small));
    return 0;
}

static int Overread() {
    void *p = nullptr;
    aclrtMalloc(&p, 256, ACL_MEM_MALLOC_HUGE_FIRST);
    std::vector<uint8_t> host(512);
    REPORT("overread", aclrtMemcpy(host.data(), 512, p, 512, ACL_MEMCPY_DEVICE_TO_HOST));
    aclrtFree(p);
    return 0;
}

static int Leak() {
    void *p = nullptr;
    aclrtMalloc(&p, 1000, ACL_MEM_MALLOC_HUGE_FIRST);
    return 0;   // main's TearDown finalizes with the block still allocated
}

static int NoFinalize() {
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    void *p = nullptr;
    aclrtMalloc(&p, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST);
    std::vector<uint8_t> host(1 << 20, 3);
    REPORT("async_copy", aclrtMemcpyAsync(p, host.size(), host.data(), host.size(), ACL_MEMCPY_HOST_TO_DEVICE, stream));
    REPORT("sync", aclrtSynchronizeStream(stream));
    printf("exiting without aclFinalize\n");
    fflush(stdout);
    _exit(0);
}

static int Threads() {
    std::atomic<int> failures(0);
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; t++) {
        workers.emplace_back([&failures, t] {
            if (aclrtSetDevice(0) != 0) failures++;
            aclrtStream stream = nullptr;
            if (aclrtCreateStream(&stream) != 0) failures++;
            for (int i = 0; i < 50; i++) {
                void *p = nullptr;
                std::vector<int32_t> in(257, t * 1000 + i), out(257, -1);
                if (aclrtMalloc(&p, in.size() * 4, ACL_MEM_MALLOC_HUGE_FIRST) != 0) failures++;
                if (aclrtMemcpyAsync(p, in.size() * 4, in.data(), in.size() * 4, ACL_MEMCPY_HOST_TO_DEVICE, stream) != 0) failures++;
                if (aclrtSynchronizeStream(stream) != 0) failures++;
                if (aclrtMemcpy(out.data(), out.size() * 4, p, out.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST) != 0) failures++;
                if (out != in) failures++;
                if (aclrtFree(p) != 0) failures++;
            }
            aclrtDestroyStream(stream);
            aclrtResetDevice(0);
        });
    }
    for (auto &w : workers) w.join();
    REPORT("thread_failures", failures.load());
    return 0;
}

static int SoC() {
    printf("soc %s\n", aclrtGetSocName());
    size_t free_bytes = 0, total = 0;
    REPORT("mem_info", aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total));
    printf("mem_total %zu\nmem_free %zu\n", total, free_bytes);
    return 0;
}

static int Fp16() {
    // reference acl-abi.md §4.8: round to nearest even, saturate, Inf/NaN patterns decoded as numbers
    printf("f2h_one %d\n", aclFloatToFloat16(1.0f));
    printf("f2h_tie_even %d\n", aclFloatToFloat16(1.0f + 1.0f / 2048));
    printf("f2h_tie_up %d\n", aclFloatToFloat16(1.0f + 3.0f / 2048));
    printf("f2h_overflow %d\n", aclFloatToFloat16(1e6f));
    printf("f2h_neg_overflow %d\n", aclFloatToFloat16(-1e6f));
    printf("f2h_inf %d\n", aclFloatToFloat16(std::numeric_limits<float>::infinity()));
    printf("f2h_nan %d\n", aclFloatToFloat16(std::numeric_limits<float>::quiet_NaN()));
    printf("f2h_denormal %d\n", aclFloatToFloat16(5.960464477539063e-08f));
    printf("h2f_inf %d\n", static_cast<int>(aclFloat16ToFloat(0x7C00)));
    printf("h2f_neg_inf %d\n", static_cast<int>(aclFloat16ToFloat(0xFC00)));
    printf("h2f_nan %d\n", static_cast<int>(aclFloat16ToFloat(0x7E00)));
    printf("h2f_max %d\n", static_cast<int>(aclFloat16ToFloat(0x7BFF)));
    printf("h2f_half %d\n", static_cast<int>(aclFloat16ToFloat(0x3800) * 1000));
    printf("size_fp16 %zu\n", aclDataTypeSize(ACL_FLOAT16));
    printf("size_bf16 %zu\n", aclDataTypeSize(ACL_BF16));
    printf("size_int64 %zu\n", aclDataTypeSize(ACL_INT64));
    printf("size_undefined %zu\n", aclDataTypeSize(ACL_DT_UNDEFINED));
    return 0;
}

static int Parts(int count, char **names) {
    for (int i = 0; i < count; ++i) {
        setenv("ACLNN_EMU_SOC", names[i], 1);
        int init = aclInit(nullptr);
        const char *soc = aclrtGetSocName();
        printf("%s %d %s\n", names[i], init, soc ? soc : "(null)");
        if (init == 0) aclFinalize();
    }
    return 0;
}

int main(int argc, char **argv) {
    std::string scenario = argc > 1 ? argv[1] : "";
    if (scenario == "parts") return Parts(argc - 2, argv + 2);
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    int ret = scenario == "devices" ? Devices() : scenario == "memory" ? Memory() : scenario == "overread" ? Overread()
            : scenario == "leak" ? Leak() : scenario == "no_finalize" ? NoFinalize() : scenario == "threads" ? Threads()
            : scenario == "soc" ? SoC() : scenario == "fp16" ? Fp16() : 2;
    TearDown(stream);
    return ret;
}
