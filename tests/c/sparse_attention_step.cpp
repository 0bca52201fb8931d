// One DeepSeek sparse-attention training step through the C ABI, as a C++ program would run it on an
// NPU: LightningIndexer -> SparseFlashAttention -> SparseFlashAttentionGrad and LightningIndexerGrad,
// every tensor on the device, one stream, one synchronisation at the end.
// Usage: sparse_attention_step <dir>; reads <dir>/<name>.bin for the inputs (bf16 unless noted) and
// writes every output to <dir>/<name>.bin. Shapes are those of tests/test_sparse_attention_round_trip.py.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer.h"
#include "aclnnop/aclnn_lightning_indexer_grad.h"
#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "aclnnop/aclnn_sparse_flash_attention_grad.h"
#include "op_case.h"

namespace {

const int64_t B = 1, S1 = 4, S2 = 96, N1 = 2, D = 512, DR = 64, TOPK = 2048, IH = 64, ID = 128;
const int64_t kMax = INT64_MAX;
const double kScale = 0.04;

std::string g_dir;

int Load(DeviceTensor &t, const std::string &name, const std::vector<int64_t> &shape) {
    std::ifstream in(g_dir + "/" + name + ".bin", std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return t.Create(bytes, shape, ACL_BF16);
}

int Save(const DeviceTensor &t, const std::string &name) {
    std::vector<uint8_t> host;
    int ret = t.Read(host);
    if (ret != 0) return ret;
    std::ofstream(g_dir + "/" + name + ".bin", std::ios::binary).write(reinterpret_cast<const char *>(host.data()),
                                                                      host.size());
    return 0;
}

// Phase 1 through `phase1`, a workspace, phase 2 on `stream`; no synchronisation (the next op queues
// behind it). The workspace is freed at the end of the step.
std::vector<void *> g_workspaces;

template <typename Phase1>
int Launch(Phase1 phase1, Phase2 phase2, aclrtStream stream) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret = phase1(&size, &executor);
    if (ret != 0) return ret;
    void *ws = nullptr;
    if (size > 0 && (ret = aclrtMalloc(&ws, size, ACL_MEM_MALLOC_HUGE_FIRST)) != 0) return ret;
    g_workspaces.push_back(ws);
    return phase2(ws, size, executor, stream);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    g_dir = argv[1];
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    {
        DeviceTensor iq, ik, iw, q, qRope, kv, kRope, dOut, dy;
        CHECK_OK(Load(iq, "iq", {B, S1, IH, ID}));
        CHECK_OK(Load(ik, "ik", {B, S2, 1, ID}));
        CHECK_OK(Load(iw, "iw", {B, S1, IH}));
        CHECK_OK(Load(q, "q", {B, S1, N1, D}));
        CHECK_OK(Load(qRope, "q_rope", {B, S1, N1, DR}));
        CHECK_OK(Load(kv, "kv", {B, S2, 1, D}));
        CHECK_OK(Load(kRope, "k_rope", {B, S2, 1, DR}));
        CHECK_OK(Load(dOut, "d_out", {B, S1, N1, D}));
        CHECK_OK(Load(dy, "dy", {B, S1, TOPK}));

        DeviceTensor indices, scores, out, smax, ssum, dq, dk, dv, dqRope, dkRope, diq, dik, diw, indices3d;
        CHECK_OK(indices.Create({B, S1, 1, TOPK}, ACL_INT32));
        CHECK_OK(scores.Create({B, S1, 1, TOPK}, ACL_BF16));
        CHECK_OK(out.Create({B, S1, N1, D}, ACL_BF16));
        CHECK_OK(smax.Create({B, 1, S1, N1}, ACL_FLOAT));
        CHECK_OK(ssum.Create({B, 1, S1, N1}, ACL_FLOAT));
        CHECK_OK(dq.Create({B, S1, N1, D}, ACL_BF16));
        CHECK_OK(dk.Create({B, S2, 1, D}, ACL_BF16));
        CHECK_OK(dv.Create({B, S2, 1, D}, ACL_BF16));
        CHECK_OK(dqRope.Create({B, S1, N1, DR}, ACL_BF16));
        CHECK_OK(dkRope.Create({B, S2, 1, DR}, ACL_BF16));
        CHECK_OK(diq.Create({B, S1, IH, ID}, ACL_BF16));
        CHECK_OK(dik.Create({B, S2, 1, ID}, ACL_BF16));
        CHECK_OK(diw.Create({B, S1, IH}, ACL_BF16));
        // LightningIndexerGrad takes the indices as [B, S1, topK]: a second view of the same memory.
        std::vector<int64_t> shape3 = {B, S1, TOPK}, strides3 = ContiguousStrides(shape3);
        aclTensor *indicesView = aclCreateTensor(shape3.data(), 3, ACL_INT32, strides3.data(), 0, ACL_FORMAT_ND,
                                                 shape3.data(), 3, indices.addr);
        char bsnd[] = "BSND";

        CHECK_OK(Launch([&](uint64_t *size, aclOpExecutor **e) {
            return aclnnLightningIndexerGetWorkspaceSize(iq.tensor, ik.tensor, iw.tensor, nullptr, nullptr, nullptr,
                                                         bsnd, bsnd, TOPK, 3, kMax, kMax, true, indices.tensor,
                                                         scores.tensor, size, e);
        }, aclnnLightningIndexer, stream));
        CHECK_OK(Launch([&](uint64_t *size, aclOpExecutor **e) {
            return aclnnSparseFlashAttentionGetWorkspaceSize(q.tensor, kv.tensor, kv.tensor, indices.tensor, nullptr,
                                                             nullptr, nullptr, qRope.tensor, kRope.tensor, kScale, 1,
                                                             bsnd, bsnd, 3, kMax, kMax, 2, true, out.tensor,
                                                             smax.tensor, ssum.tensor, size, e);
        }, aclnnSparseFlashAttention, stream));
        CHECK_OK(Launch([&](uint64_t *size, aclOpExecutor **e) {
            return aclnnSparseFlashAttentionGradGetWorkspaceSize(
                q.tensor, kv.tensor, kv.tensor, indices.tensor, dOut.tensor, out.tensor, smax.tensor, ssum.tensor,
                nullptr, nullptr, qRope.tensor, kRope.tensor, kScale, 1, bsnd, 3, kMax, kMax, false, dq.tensor,
                dk.tensor, dv.tensor, dqRope.tensor, dkRope.tensor, size, e);
        }, aclnnSparseFlashAttentionGrad, stream));
        CHECK_OK(Launch([&](uint64_t *size, aclOpExecutor **e) {
            return aclnnLightningIndexerGradGetWorkspaceSize(iq.tensor, ik.tensor, dy.tensor, indicesView, iw.tensor,
                                                             nullptr, nullptr, IH, bsnd, 3, kMax, kMax, false,
                                                             diq.tensor, dik.tensor, diw.tensor, size, e);
        }, aclnnLightningIndexerGrad, stream));
        CHECK_OK(aclrtSynchronizeStream(stream));

        const DeviceTensor *outputs[] = {&indices, &scores, &out, &smax, &ssum, &dq, &dk, &dv, &dqRope, &dkRope,
                                         &diq, &dik, &diw};
        const char *names[] = {"indices", "scores", "out", "smax", "ssum", "dq", "dk", "dv", "dq_rope", "dk_rope",
                               "diq", "dik", "diw"};
        for (int i = 0; i < 13; i++) CHECK_OK(Save(*outputs[i], names[i]));
        aclDestroyTensor(indicesView);
        for (void *ws : g_workspaces) {
            if (ws) aclrtFree(ws);
        }
    }
    TearDown(stream);
    printf("step done\n");
    return 0;
}
