// Host overhead of the emulated runtime: microseconds per call through the C ABI, and the rate of
// the per-element helpers (millions of conversions per second).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"

using Clock = std::chrono::steady_clock;

static double Micros(Clock::time_point start, int iterations) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iterations;
}

static aclTensor *Make(const std::vector<int64_t> &shape, aclDataType dtype, void *addr) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    return aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                           shape.size(), addr);
}

// Converts a buffer element by element, as the spec samples fill host data, and back: the best of
// five rounds (a shared machine's other load only ever slows a round down).
static double BestRate(size_t n, const std::function<void()> &round) {
    double best = 0;
    for (int r = 0; r < 5; r++) {
        auto start = Clock::now();
        round();
        best = std::max(best, n / std::chrono::duration<double>(Clock::now() - start).count() / 1e6);
    }
    return best;
}

static void ConversionRates(size_t n) {
    std::vector<float> values(n), back(n);
    std::vector<aclFloat16> halves(n);
    for (size_t i = 0; i < n; i++) values[i] = static_cast<float>(i % 4099) * 0.37f - 700.0f;
    size_t bytes = 0;
    double to_half = BestRate(n, [&] { for (size_t i = 0; i < n; i++) halves[i] = aclFloatToFloat16(values[i]); });
    double to_float = BestRate(n, [&] { for (size_t i = 0; i < n; i++) back[i] = aclFloat16ToFloat(halves[i]); });
    double sizes = BestRate(n, [&] { for (size_t i = 0; i < n; i++) bytes += aclDataTypeSize(aclDataType(i & 31)); });
    printf("aclFloatToFloat16_Mps %.1f\n", to_half);
    printf("aclFloat16ToFloat_Mps %.1f  (checksum %.1f)\n", to_float, back[n / 3] + back[n - 1]);
    printf("aclDataTypeSize_Mps %.1f  (checksum %zu)\n", sizes, bytes);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    ConversionRates(size_t(1) << 23);   // 8.4 M: one fp16 tensor of B1 N32 S2048 D128
    auto start = Clock::now();
    if (aclInit(nullptr) != 0 || aclrtSetDevice(0) != 0) return 1;
    double init_s = std::chrono::duration<double>(Clock::now() - start).count();
    aclrtStream stream;
    aclrtCreateStream(&stream);

    void *dev = nullptr;
    aclrtMalloc(&dev, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST);
    std::vector<char> host(64, 1);
    start = Clock::now();
    for (int i = 0; i < n; i++) aclrtMemcpy(dev, 64, host.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE);
    double memcpy_us = Micros(start, n);

    std::vector<int64_t> shape = {4, 8, 16};
    start = Clock::now();
    for (int i = 0; i < n; i++) aclDestroyTensor(Make(shape, ACL_FLOAT16, dev));
    double tensor_us = Micros(start, n);

    // Whole two-phase calls of ScatterPaKvCache (phase 1 + phase 2, then one final synchronize):
    // the trivial path (both caches empty: checks run, nothing is launched), and one token really
    // scattered (adds the kernel's own time on the stream).
    char *base = static_cast<char *>(dev);
    aclTensor *key = Make({1, 1, 16}, ACL_FLOAT16, base);
    aclTensor *key_cache = Make({2, 4, 1, 16}, ACL_FLOAT16, base + 4096);
    aclTensor *empty_cache = Make({0, 4, 1, 16}, ACL_FLOAT16, base + 4096);
    aclTensor *slots = Make({1}, ACL_INT32, base + 8192);
    aclTensor *value = Make({1, 1, 16}, ACL_FLOAT16, base + 12288);
    aclTensor *value_cache = Make({2, 4, 1, 16}, ACL_FLOAT16, base + 16384);
    aclrtMemset(base + 8192, 4, 0, 4);
    int status = 0;
    void *workspace = nullptr;
    uint64_t workspace_size = 0;
    auto two_phase = [&](aclTensor *kc, aclTensor *vc) {
        auto begin = Clock::now();
        for (int i = 0; i < n; i++) {
            uint64_t ws = 0;
            aclOpExecutor *executor = nullptr;
            status |= aclnnScatterPaKvCacheGetWorkspaceSize(key, kc, slots, value, vc, nullptr, nullptr, nullptr,
                                                            nullptr, nullptr, nullptr, nullptr, &ws, &executor);
            if (ws > workspace_size) {   // as a program would: allocate once, reuse
                aclrtFree(workspace);
                status |= aclrtMalloc(&workspace, ws, ACL_MEM_MALLOC_HUGE_FIRST);
                workspace_size = ws;
            }
            status |= aclnnScatterPaKvCache(workspace, ws, executor, stream);
        }
        status |= aclrtSynchronizeStream(stream);
        return Micros(begin, n);
    };
    double trivial_us = two_phase(empty_cache, empty_cache);
    double one_token_us = two_phase(key_cache, value_cache);

    printf("aclInit+aclrtSetDevice_s %.3f\n", init_s);
    printf("aclrtMemcpy_64B_us %.2f\n", memcpy_us);
    printf("aclCreateTensor+aclDestroyTensor_us %.2f\n", tensor_us);
    printf("two_phase_op_call_us %.2f%s\n", trivial_us, status ? "  (an operator call failed)" : "");
    printf("two_phase_op_call_with_kernel_us %.2f  (one token scattered; includes the kernel)\n", one_token_us);
    aclrtFree(workspace);
    aclrtFree(dev);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
