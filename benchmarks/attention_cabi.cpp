// FlashAttentionScoreGradV2 and PromptFlashAttentionV2 timed through the C ABI, as a user's program
// calls them: phase 1 + workspace + phase 2 + aclrtSynchronizeStream, best of `rounds` after one
// untimed call. Shapes as in bench_flash_attention_score_grad.py and bench_prompt_flash_attention.py.
// Prints "FAG_ms <best>" and "PFA_ms <best>".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"

namespace {

constexpr int64_t kIntMax = 2147483647;

#define CHECK(call)                                                               \
    do {                                                                          \
        auto status = (call);                                                     \
        if (status != 0) {                                                        \
            fprintf(stderr, "%s failed: %d\n", #call, static_cast<int>(status));  \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

struct Device {
    std::vector<void *> buffers;
    ~Device() {
        for (void *p : buffers) aclrtFree(p);
    }
    // A device tensor of `shape` holding `bytes` of host data (or zeros).
    aclTensor *Tensor(const std::vector<int64_t> &shape, aclDataType dtype, const void *host, size_t bytes) {
        void *dev = nullptr;
        CHECK(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
        buffers.push_back(dev);
        if (host) CHECK(aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
        else CHECK(aclrtMemset(dev, bytes, 0, bytes));
        std::vector<int64_t> strides(shape.size(), 1);
        for (int i = static_cast<int>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
        return aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                               shape.size(), dev);
    }
};

std::vector<aclFloat16> RandomHalves(size_t n, std::mt19937 &rng) {
    std::normal_distribution<float> normal;
    std::vector<aclFloat16> out(n);
    for (auto &x : out) x = aclFloatToFloat16(normal(rng));
    return out;
}

double BestMs(int rounds, const std::function<void()> &call) {
    call();
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        auto start = std::chrono::steady_clock::now();
        call();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

// Phase 1, workspace, phase 2 and a stream sync: what one operator call costs a user.
template <typename Phase1, typename Phase2>
void Call(aclrtStream stream, Phase1 phase1, Phase2 phase2) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    CHECK(phase1(&size, &executor));
    void *workspace = nullptr;
    if (size) CHECK(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(phase2(workspace, size, executor, stream));
    CHECK(aclrtSynchronizeStream(stream));
    if (workspace) aclrtFree(workspace);
}

double FlashAttentionScoreGrad(aclrtStream stream, int rounds, std::mt19937 &rng) {
    const int64_t B = 1, N = 8, S = 2048, D = 128;
    const std::vector<int64_t> shape{B, N, S, D}, stats{B, N, S, 8};
    const size_t n = B * N * S * D;
    Device dev;
    auto q = RandomHalves(n, rng), k = RandomHalves(n, rng), v = RandomHalves(n, rng), dy = RandomHalves(n, rng);
    auto out = RandomHalves(n, rng);
    // Softmax statistics that keep P in range: max above every score, sum 1.
    std::vector<float> smax(B * N * S * 8, 12.0f), ssum(B * N * S * 8, 1.0f);
    aclTensor *tq = dev.Tensor(shape, ACL_FLOAT16, q.data(), n * 2), *tk = dev.Tensor(shape, ACL_FLOAT16, k.data(), n * 2);
    aclTensor *tv = dev.Tensor(shape, ACL_FLOAT16, v.data(), n * 2), *tdy = dev.Tensor(shape, ACL_FLOAT16, dy.data(), n * 2);
    aclTensor *tout = dev.Tensor(shape, ACL_FLOAT16, out.data(), n * 2);
    aclTensor *tmax = dev.Tensor(stats, ACL_FLOAT, smax.data(), smax.size() * 4);
    aclTensor *tsum = dev.Tensor(stats, ACL_FLOAT, ssum.data(), ssum.size() * 4);
    aclTensor *dq = dev.Tensor(shape, ACL_FLOAT16, nullptr, n * 2), *dk = dev.Tensor(shape, ACL_FLOAT16, nullptr, n * 2);
    aclTensor *dv = dev.Tensor(shape, ACL_FLOAT16, nullptr, n * 2);
    char layout[] = "BNSD";
    return BestMs(rounds, [&] {
        Call(stream,
             [&](uint64_t *size, aclOpExecutor **executor) {
                 return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
                     tq, tk, tv, tdy, nullptr, nullptr, nullptr, nullptr, tmax, tsum, nullptr, tout, nullptr, nullptr,
                     nullptr, 1.0 / 11.313708498984761, 1.0, kIntMax, kIntMax, N, layout, 0, 0, 1, dq, dk, dv, nullptr,
                     size, executor);
             },
             aclnnFlashAttentionScoreGradV2);
    });
}

double PromptFlashAttention(aclrtStream stream, int rounds, std::mt19937 &rng) {
    const int64_t B = 1, N = 32, S = 2048, D = 128;
    const std::vector<int64_t> shape{B, N, S, D};
    const size_t n = B * N * S * D;
    Device dev;
    auto q = RandomHalves(n, rng), k = RandomHalves(n, rng), v = RandomHalves(n, rng);
    aclTensor *tq = dev.Tensor(shape, ACL_FLOAT16, q.data(), n * 2), *tk = dev.Tensor(shape, ACL_FLOAT16, k.data(), n * 2);
    aclTensor *tv = dev.Tensor(shape, ACL_FLOAT16, v.data(), n * 2), *out = dev.Tensor(shape, ACL_FLOAT16, nullptr, n * 2);
    char layout[] = "BNSD";
    return BestMs(rounds, [&] {
        Call(stream,
             [&](uint64_t *size, aclOpExecutor **executor) {
                 return aclnnPromptFlashAttentionV2GetWorkspaceSize(
                     tq, tk, tv, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, N,
                     1.0 / 11.313708498984761, kIntMax, 0, layout, 0, 0, out, size, executor);
             },
             aclnnPromptFlashAttentionV2);
    });
}

}  // namespace

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    std::mt19937 rng(0);
    printf("FAG_ms %.1f\n", FlashAttentionScoreGrad(stream, rounds, rng));
    printf("PFA_ms %.1f\n", PromptFlashAttention(stream, rounds, rng));
    fflush(stdout);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
