// aclnnLightningIndexerGrad on patterned inputs through the C ABI; writes dq.bin, dk.bin and dw.bin
// (raw fp16/bf16) into a directory for tests/test_lightning_indexer_grad_cabi.py to check.
// Usage: lightning_indexer_grad_numerics fp16|bf16 <directory>
#include <cstring>
#include <string>

#include "aclnnop/aclnn_lightning_indexer_grad.h"
#include "common.h"

namespace {

const int64_t B = 2, S1 = 5, S2 = 24, N1 = 64, D = 128, TOPK = 16;

uint16_t Encode(float value, aclDataType dtype) {
    if (dtype == ACL_FLOAT16) return aclFloatToFloat16(value);
    uint32_t bits;
    memcpy(&bits, &value, sizeof(bits));
    return static_cast<uint16_t>(bits >> 16);  // the patterns are exact in bf16
}

// ((i * mult) % mod - offset) / 8, as the Python side computes it.
std::vector<uint16_t> Pattern(int64_t count, int64_t mult, int64_t mod, int64_t offset, aclDataType dtype) {
    std::vector<uint16_t> values(count);
    for (int64_t i = 0; i < count; i++) values[i] = Encode(static_cast<float>(i * mult % mod - offset) / 8.0f, dtype);
    return values;
}

int Save(const DeviceTensor &t, const std::string &path) {
    std::vector<uint16_t> host;
    if (t.Read(host) != 0) return 1;
    FILE *f = fopen(path.c_str(), "wb");
    if (f == nullptr) return 1;
    fwrite(host.data(), sizeof(uint16_t), host.size(), f);
    fclose(f);
    return 0;
}

// Runs the op; the device tensors are released before the caller tears the runtime down.
int Run(aclDataType dtype, const std::string &dir, aclrtStream stream) {
    std::vector<int32_t> idx(B * S1 * TOPK);
    for (int64_t r = 0; r < B * S1; r++)
        for (int64_t j = 0; j < TOPK; j++) idx[r * TOPK + j] = static_cast<int32_t>((r * 5 + j * 3) % S2);

    DeviceTensor q, k, dy, indices, w, dq, dk, dw;
    CHECK_OK(q.Create(Pattern(B * S1 * N1 * D, 37, 23, 11, dtype), {B, S1, N1, D}, dtype));
    CHECK_OK(k.Create(Pattern(B * S2 * D, 29, 19, 9, dtype), {B, S2, 1, D}, dtype));
    CHECK_OK(dy.Create(Pattern(B * S1 * TOPK, 13, 17, 8, dtype), {B, S1, TOPK}, dtype));
    CHECK_OK(indices.Create(idx, {B, S1, TOPK}, ACL_INT32));
    CHECK_OK(w.Create(Pattern(B * S1 * N1, 7, 11, 5, dtype), {B, S1, N1}, dtype));
    CHECK_OK(dq.Create({B, S1, N1, D}, dtype));
    CHECK_OK(dk.Create({B, S2, 1, D}, dtype));
    CHECK_OK(dw.Create({B, S1, N1}, dtype));

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    char layout[] = "BSND";
    CHECK_OK(aclnnLightningIndexerGradGetWorkspaceSize(q.tensor, k.tensor, dy.tensor, indices.tensor, w.tensor, nullptr,
                                                       nullptr, N1, layout, 3, 65536, 65536, false, dq.tensor,
                                                       dk.tensor, dw.tensor, &workspaceSize, &executor));
    void *workspace = nullptr;
    if (workspaceSize > 0) CHECK_OK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclnnLightningIndexerGrad(workspace, workspaceSize, executor, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(Save(dq, dir + "/dq.bin"));
    CHECK_OK(Save(dk, dir + "/dk.bin"));
    CHECK_OK(Save(dw, dir + "/dw.bin"));
    if (workspace) aclrtFree(workspace);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    int ret = Run(strcmp(argv[1], "fp16") == 0 ? ACL_FLOAT16 : ACL_BF16, argv[2], stream);
    TearDown(stream);
    return ret;
}
