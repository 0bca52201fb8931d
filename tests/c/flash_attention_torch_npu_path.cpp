// The entry points torch_npu's fusion attention calls, forward then backward, through the C ABI:
// 1. dense BSND fp16 (B=2, S=40, N1=4 on N2=2, D=32): aclnnFlashAttentionScore then
//    aclnnFlashAttentionScoreGrad with the forward's softmaxMax/Sum and attentionOut;
// 2. packed TND fp16 (cumulative query lengths 30, 50, 90; key lengths 35, 70, 110), right-down causal
//    (sparseMode 3, the 2048x2048 template): aclnnFlashAttentionVarLenScore then
//    aclnnFlashAttentionUnpaddingScoreGrad.
// Prints every input and output as "<name> v0 v1 ..." (fp16 values widened).
#include <cmath>
#include <string>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "common.h"

namespace {

const int64_t N1 = 4, N2 = 2, D = 32;
const double SCALE = 0.1767766952966369;  // 1/sqrt(D)
const int64_t NO_WINDOW = 2147483647;

std::vector<uint16_t> Wave(int64_t n, double step, double phase) {
    std::vector<uint16_t> x(n);
    for (int64_t i = 0; i < n; i++) x[i] = aclFloatToFloat16(static_cast<float>(std::sin(i * step + phase)));
    return x;
}

void PrintHalf(const char *name, const std::vector<uint16_t> &x) {
    printf("%s", name);
    for (uint16_t v : x) printf(" %.9g", static_cast<double>(aclFloat16ToFloat(v)));
    printf("\n");
}

void PrintFloat(const char *name, const std::vector<float> &x) {
    printf("%s", name);
    for (float v : x) printf(" %.9g", static_cast<double>(v));
    printf("\n");
}

struct Step {
    DeviceTensor q, k, v, dy, mask, smax, ssum, out, dq, dk, dv;
};

int Inputs(Step &t, const std::vector<int64_t> &qShape, const std::vector<int64_t> &kvShape, const char *prefix) {
    int64_t qSize = 1, kvSize = 1;
    for (int64_t d : qShape) qSize *= d;
    for (int64_t d : kvShape) kvSize *= d;
    auto q = Wave(qSize, 0.37, 0.0), k = Wave(kvSize, 0.21, 1.0), v = Wave(kvSize, 0.13, 2.0);
    auto dy = Wave(qSize, 0.29, 0.5);
    std::string p(prefix);
    PrintHalf((p + "q").c_str(), q);
    PrintHalf((p + "k").c_str(), k);
    PrintHalf((p + "v").c_str(), v);
    PrintHalf((p + "dy").c_str(), dy);
    CHECK_OK(t.q.Create(q, qShape, ACL_FLOAT16));
    CHECK_OK(t.k.Create(k, kvShape, ACL_FLOAT16));
    CHECK_OK(t.v.Create(v, kvShape, ACL_FLOAT16));
    CHECK_OK(t.dy.Create(dy, qShape, ACL_FLOAT16));
    CHECK_OK(t.out.Create(qShape, ACL_FLOAT16));
    CHECK_OK(t.dq.Create(qShape, ACL_FLOAT16));
    CHECK_OK(t.dk.Create(kvShape, ACL_FLOAT16));
    CHECK_OK(t.dv.Create(kvShape, ACL_FLOAT16));
    return 0;
}

int Outputs(const Step &t, const char *prefix) {
    std::vector<uint16_t> out, dq, dk, dv;
    std::vector<float> smax, ssum;
    CHECK_OK(t.out.Read(out));
    CHECK_OK(t.smax.Read(smax));
    CHECK_OK(t.ssum.Read(ssum));
    CHECK_OK(t.dq.Read(dq));
    CHECK_OK(t.dk.Read(dk));
    CHECK_OK(t.dv.Read(dv));
    std::string p(prefix);
    PrintHalf((p + "out").c_str(), out);
    PrintFloat((p + "softmax_max").c_str(), smax);
    PrintFloat((p + "softmax_sum").c_str(), ssum);
    PrintHalf((p + "dq").c_str(), dq);
    PrintHalf((p + "dk").c_str(), dk);
    PrintHalf((p + "dv").c_str(), dv);
    return 0;
}

int Dense(aclrtStream stream) {
    const int64_t B = 2, S = 40;
    Step t;
    CHECK_OK(Inputs(t, {B, S, N1, D}, {B, S, N2, D}, "bsnd_"));
    CHECK_OK(t.smax.Create({B, N1, S, 8}, ACL_FLOAT));
    CHECK_OK(t.ssum.Create({B, N1, S, 8}, ACL_FLOAT));
    char layout[] = "BSND";
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    aclnnStatus ws = aclnnFlashAttentionScoreGetWorkspaceSize(
        t.q.tensor, t.k.tensor, t.v.tensor, nullptr, nullptr, nullptr, nullptr, nullptr, SCALE, 1.0, NO_WINDOW,
        NO_WINDOW, N1, layout, 0, 0, t.smax.tensor, t.ssum.tensor, nullptr, t.out.tensor, &size, &executor);
    CHECK_OK(RunPhase2(stream, ws, size, executor, aclnnFlashAttentionScore));
    ws = aclnnFlashAttentionScoreGradGetWorkspaceSize(
        t.q.tensor, t.k.tensor, t.v.tensor, t.dy.tensor, nullptr, nullptr, nullptr, nullptr, t.smax.tensor,
        t.ssum.tensor, nullptr, t.out.tensor, nullptr, SCALE, 1.0, NO_WINDOW, NO_WINDOW, N1, layout, 0, 0,
        t.dq.tensor, t.dk.tensor, t.dv.tensor, nullptr, &size, &executor);
    CHECK_OK(RunPhase2(stream, ws, size, executor, aclnnFlashAttentionScoreGrad));
    return Outputs(t, "bsnd_");
}

int Packed(aclrtStream stream) {
    const int64_t T1 = 90, T2 = 110;
    std::vector<int64_t> cuQ = {30, 50, 90}, cuKv = {35, 70, 110};
    Step t;
    CHECK_OK(Inputs(t, {T1, N1, D}, {T2, N2, D}, "tnd_"));
    CHECK_OK(t.smax.Create({T1, N1, 8}, ACL_FLOAT));
    CHECK_OK(t.ssum.Create({T1, N1, 8}, ACL_FLOAT));
    std::vector<uint8_t> mask(2048 * 2048);
    for (int64_t i = 0; i < 2048; i++) {
        for (int64_t j = 0; j < 2048; j++) mask[i * 2048 + j] = j > i;
    }
    CHECK_OK(t.mask.Create(mask, {2048, 2048}, ACL_UINT8));
    aclIntArray *seqQ = aclCreateIntArray(cuQ.data(), cuQ.size());
    aclIntArray *seqKv = aclCreateIntArray(cuKv.data(), cuKv.size());
    char layout[] = "TND";
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    aclnnStatus ws = aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
        t.q.tensor, t.k.tensor, t.v.tensor, nullptr, nullptr, nullptr, t.mask.tensor, nullptr, seqQ, seqKv, SCALE,
        1.0, NO_WINDOW, 0, N1, layout, 0, 3, t.smax.tensor, t.ssum.tensor, nullptr, t.out.tensor, &size, &executor);
    CHECK_OK(RunPhase2(stream, ws, size, executor, aclnnFlashAttentionVarLenScore));
    ws = aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
        t.q.tensor, t.k.tensor, t.v.tensor, t.dy.tensor, nullptr, nullptr, nullptr, t.mask.tensor, t.smax.tensor,
        t.ssum.tensor, nullptr, t.out.tensor, nullptr, seqQ, seqKv, SCALE, 1.0, NO_WINDOW, 0, N1, layout, 0, 3,
        t.dq.tensor, t.dk.tensor, t.dv.tensor, nullptr, &size, &executor);
    CHECK_OK(RunPhase2(stream, ws, size, executor, aclnnFlashAttentionUnpaddingScoreGrad));
    aclDestroyIntArray(seqQ);
    aclDestroyIntArray(seqKv);
    return Outputs(t, "tnd_");
}

}  // namespace

int main() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    CHECK_OK(Dense(stream));
    CHECK_OK(Packed(stream));
    TearDown(stream);
    return 0;
}
