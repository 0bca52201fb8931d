// One attention training step through the C ABI: aclnnFlashAttentionScoreV2 forward (BNSD fp32, GQA
// N1=2 on N2=1, left-up causal, pse row bias), the loss L = 0.5 * |O - T|^2 and its gradient dO = O - T
// on the host, aclnnFlashAttentionScoreGradV2 with the forward's softmaxMax/Sum and attentionOut, and an
// SGD update of Q, K and V. Prints the inputs, the loss and the updated tensors as "<name> v0 v1 ...".
#include <cmath>
#include <string>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "common.h"

namespace {

const int64_t B = 1, N1 = 2, N2 = 1, S = 24, D = 16;
const double SCALE = 0.25, LR = 0.5;

std::vector<float> Wave(int64_t n, double step, double phase) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; i++) x[i] = static_cast<float>(std::sin(i * step + phase));
    return x;
}

void Print(const char *name, const std::vector<float> &x) {
    printf("%s", name);
    for (float v : x) printf(" %.9g", static_cast<double>(v));
    printf("\n");
}

}  // namespace

int main() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    std::vector<int64_t> qShape = {B, N1, S, D}, kvShape = {B, N2, S, D}, lanes = {B, N1, S, 8},
                         pseShape = {B, N1, 1, S}, maskShape = {2048, 2048};
    auto q = Wave(B * N1 * S * D, 0.37, 0.0), k = Wave(B * N2 * S * D, 0.21, 1.0), v = Wave(B * N2 * S * D, 0.13, 2.0);
    auto target = Wave(B * N1 * S * D, 0.29, 0.5), pse = Wave(B * N1 * S, 0.7, 0.3);
    std::vector<uint8_t> mask(2048 * 2048);
    for (int64_t i = 0; i < 2048; i++) {
        for (int64_t j = 0; j < 2048; j++) mask[i * 2048 + j] = j > i;
    }
    Print("q", q);
    Print("k", k);
    Print("v", v);
    Print("target", target);
    Print("pse", pse);

    DeviceTensor tq, tk, tv, tpse, tmask, tmax, tsum, tout, tdy, tdq, tdk, tdv;
    CHECK_OK(tq.Create(q, qShape, ACL_FLOAT));
    CHECK_OK(tk.Create(k, kvShape, ACL_FLOAT));
    CHECK_OK(tv.Create(v, kvShape, ACL_FLOAT));
    CHECK_OK(tpse.Create(pse, pseShape, ACL_FLOAT));
    CHECK_OK(tmask.Create(mask, maskShape, ACL_UINT8));
    CHECK_OK(tmax.Create(lanes, ACL_FLOAT));
    CHECK_OK(tsum.Create(lanes, ACL_FLOAT));
    CHECK_OK(tout.Create(qShape, ACL_FLOAT));
    char layout[] = "BNSD";
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    aclnnStatus ws = aclnnFlashAttentionScoreV2GetWorkspaceSize(
        tq.tensor, tk.tensor, tv.tensor, tpse.tensor, nullptr, nullptr, tmask.tensor, nullptr, nullptr, nullptr, SCALE,
        1.0, 2147483647, 0, N1, layout, 0, 2, 0, tmax.tensor, tsum.tensor, nullptr, tout.tensor, &size, &executor);
    CHECK_OK(RunPhase2(stream, ws, size, executor, aclnnFlashAttentionScoreV2));

    std::vector<float> out, dy(q.size());
    CHECK_OK(tout.Read(out));
    double loss = 0;
    for (size_t i = 0; i < out.size(); i++) {
        dy[i] = out[i] - target[i];
        loss += 0.5 * dy[i] * dy[i];
    }
    printf("loss %.9g\n", loss);
    Print("out", out);

    CHECK_OK(tdy.Create(dy, qShape, ACL_FLOAT));
    CHECK_OK(tdq.Create(qShape, ACL_FLOAT));
    CHECK_OK(tdk.Create(kvShape, ACL_FLOAT));
    CHECK_OK(tdv.Create(kvShape, ACL_FLOAT));
    ws = aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
        tq.tensor, tk.tensor, tv.tensor, tdy.tensor, tpse.tensor, nullptr, nullptr, tmask.tensor, tmax.tensor,
        tsum.tensor, nullptr, tout.tensor, nullptr, nullptr, nullptr, SCALE, 1.0, 2147483647, 0, N1, layout, 0, 2, 0,
        tdq.tensor, tdk.tensor, tdv.tensor, nullptr, &size, &executor);
    CHECK_OK(RunPhase2(stream, ws, size, executor, aclnnFlashAttentionScoreGradV2));

    std::vector<float> dq, dk, dv;
    CHECK_OK(tdq.Read(dq));
    CHECK_OK(tdk.Read(dk));
    CHECK_OK(tdv.Read(dv));
    for (size_t i = 0; i < q.size(); i++) q[i] -= static_cast<float>(LR) * dq[i];
    for (size_t i = 0; i < k.size(); i++) k[i] -= static_cast<float>(LR) * dk[i];
    for (size_t i = 0; i < v.size(); i++) v[i] -= static_cast<float>(LR) * dv[i];
    Print("q_new", q);
    Print("k_new", k);
    Print("v_new", v);
    TearDown(stream);
    return 0;
}
