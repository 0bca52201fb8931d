// aclnnFlashAttentionScoreGradV2 from C: BSH fp16, GQA (N1=2, N2=1), left-up causal (sparseMode 2).
// Builds the inputs, runs a plain double forward for attentionIn/softmaxMax/softmaxSum, calls both
// phases and prints every input and output as "<name> v0 v1 ..." for the pytest to check.
#include <cmath>
#include <string>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "common.h"

namespace {

const int64_t B = 1, N1 = 2, N2 = 1, S1 = 12, S2 = 20, D = 8;
const double SCALE = 0.35;

std::vector<uint16_t> Half(const std::vector<double> &x) {
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); i++) h[i] = aclFloatToFloat16(static_cast<float>(x[i]));
    return h;
}

std::vector<double> Widen(const std::vector<uint16_t> &h) {
    std::vector<double> x(h.size());
    for (size_t i = 0; i < h.size(); i++) x[i] = aclFloat16ToFloat(h[i]);
    return x;
}

template <typename T>
void Print(const char *name, const std::vector<T> &x) {
    printf("%s", name);
    for (T v : x) printf(" %.9g", static_cast<double>(v));
    printf("\n");
}

std::vector<double> Wave(int64_t n, double step, double phase, bool cosine) {
    std::vector<double> x(n);
    for (int64_t i = 0; i < n; i++) x[i] = cosine ? std::cos(i * step + phase) : std::sin(i * step + phase);
    return x;
}

}  // namespace

int main() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    auto q = Half(Wave(B * S1 * N1 * D, 0.37, 0, false));
    auto k = Half(Wave(B * S2 * N2 * D, 0.21, 0, true));
    auto v = Half(Wave(B * S2 * N2 * D, 0.13, 1, false));
    auto dy = Half(Wave(B * S1 * N1 * D, 0.29, 2, true));
    auto qd = Widen(q), kd = Widen(k), vd = Widen(v);

    // Forward in double: BSH element (b, s, n, d) at [s][n*D + d] (B = 1).
    std::vector<float> smax(N1 * S1 * 8), ssum(N1 * S1 * 8);
    std::vector<double> out(S1 * N1 * D, 0.0);
    for (int64_t n = 0; n < N1; n++) {
        for (int64_t i = 0; i < S1; i++) {
            std::vector<double> s(S2);
            double mx = -3.4028234663852886e38;
            for (int64_t j = 0; j < S2; j++) {
                double dot = 0;
                for (int64_t x = 0; x < D; x++) dot += qd[i * N1 * D + n * D + x] * kd[j * N2 * D + x];
                s[j] = j > i ? -3.4028234663852886e38 : dot * SCALE;
                mx = std::max(mx, s[j]);
            }
            double sum = 0;
            for (int64_t j = 0; j < S2; j++) sum += std::exp(s[j] - mx);
            for (int64_t j = 0; j < S2; j++) {
                double p = std::exp(s[j] - mx) / sum;
                for (int64_t x = 0; x < D; x++) out[i * N1 * D + n * D + x] += p * vd[j * N2 * D + x];
            }
            for (int lane = 0; lane < 8; lane++) {
                smax[(n * S1 + i) * 8 + lane] = static_cast<float>(mx);
                ssum[(n * S1 + i) * 8 + lane] = static_cast<float>(sum);
            }
        }
    }
    auto outHalf = Half(out);

    DeviceTensor tq, tk, tv, tdy, tmask, tmax, tsum, tout, tdq, tdk, tdv;
    std::vector<uint8_t> mask(2048 * 2048);
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t j = 0; j < 2048; j++) mask[i * 2048 + j] = j > i;
    CHECK_OK(tq.Create(q, {B, S1, N1 * D}, ACL_FLOAT16));
    CHECK_OK(tk.Create(k, {B, S2, N2 * D}, ACL_FLOAT16));
    CHECK_OK(tv.Create(v, {B, S2, N2 * D}, ACL_FLOAT16));
    CHECK_OK(tdy.Create(dy, {B, S1, N1 * D}, ACL_FLOAT16));
    CHECK_OK(tmask.Create(mask, {2048, 2048}, ACL_UINT8));
    CHECK_OK(tmax.Create(smax, {B, N1, S1, 8}, ACL_FLOAT));
    CHECK_OK(tsum.Create(ssum, {B, N1, S1, 8}, ACL_FLOAT));
    CHECK_OK(tout.Create(outHalf, {B, S1, N1 * D}, ACL_FLOAT16));
    CHECK_OK(tdq.Create({B, S1, N1 * D}, ACL_FLOAT16));
    CHECK_OK(tdk.Create({B, S2, N2 * D}, ACL_FLOAT16));
    CHECK_OK(tdv.Create({B, S2, N2 * D}, ACL_FLOAT16));
    char layout[] = "BSH";
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
        tq.tensor, tk.tensor, tv.tensor, tdy.tensor, nullptr, nullptr, nullptr, tmask.tensor, tmax.tensor,
        tsum.tensor, nullptr, tout.tensor, nullptr, nullptr, nullptr, SCALE, 1.0, 2147483647, 0, N1, layout, 0, 2, 1,
        tdq.tensor, tdk.tensor, tdv.tensor, nullptr, &workspaceSize, &executor));
    void *workspace = nullptr;
    if (workspaceSize > 0) CHECK_OK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclnnFlashAttentionScoreGradV2(workspace, workspaceSize, executor, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    std::vector<uint16_t> dq, dk, dv;
    CHECK_OK(tdq.Read(dq));
    CHECK_OK(tdk.Read(dk));
    CHECK_OK(tdv.Read(dv));
    Print("q", Widen(q));
    Print("k", kd);
    Print("v", vd);
    Print("dy", Widen(dy));
    Print("out", Widen(outHalf));
    Print("smax", smax);
    Print("ssum", ssum);
    Print("dq", Widen(dq));
    Print("dk", Widen(dk));
    Print("dv", Widen(dv));
    if (workspace) aclrtFree(workspace);
    TearDown(stream);
    return 0;
}
