// aclnnPromptFlashAttentionV2 with sparseMode 20 on the MLA base-API kernels (D > 256) through the
// C ABI. The query/key/value/output bytes come from q.bin, k.bin, v.bin and out.bin in <directory>
// (out.bin: what attentionOut holds before the call); the output is written back to out.bin.
// Usage: prompt_flash_attention_mla fp16|bf16 <layout> <directory> <heads> <q,shape> <kv,shape>
//        <actualSeqLengths|-> <actualSeqLengthsKv|->   (lists comma-separated, "-" for none)
#include <cstdlib>
#include <string>

#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "common.h"

namespace {

std::vector<int64_t> Numbers(const std::string &text) {
    std::vector<int64_t> values;
    if (text == "-") return values;
    size_t at = 0;
    while (at <= text.size()) {
        size_t comma = text.find(',', at);
        if (comma == std::string::npos) comma = text.size();
        values.push_back(std::strtoll(text.substr(at, comma - at).c_str(), nullptr, 10));
        at = comma + 1;
    }
    return values;
}

int Load(DeviceTensor &t, const std::string &path, const std::vector<int64_t> &shape, aclDataType dtype) {
    std::vector<uint16_t> host(ShapeSize(shape));
    FILE *f = fopen(path.c_str(), "rb");
    if (f == nullptr) return 1;
    size_t got = fread(host.data(), sizeof(uint16_t), host.size(), f);
    fclose(f);
    return got == host.size() ? t.Create(host, shape, dtype) : 1;
}

int Run(char **argv, aclrtStream stream) {
    aclDataType dtype = std::string(argv[1]) == "fp16" ? ACL_FLOAT16 : ACL_BF16;
    std::string dir = argv[3];
    int64_t heads = std::strtoll(argv[4], nullptr, 10);
    std::vector<int64_t> qShape = Numbers(argv[5]), kvShape = Numbers(argv[6]);
    std::vector<int64_t> actQ = Numbers(argv[7]), actKv = Numbers(argv[8]);
    DeviceTensor q, k, v, out;
    CHECK_OK(Load(q, dir + "/q.bin", qShape, dtype));
    CHECK_OK(Load(k, dir + "/k.bin", kvShape, dtype));
    CHECK_OK(Load(v, dir + "/v.bin", kvShape, dtype));
    CHECK_OK(Load(out, dir + "/out.bin", qShape, dtype));
    aclIntArray *lengthsQ = actQ.empty() ? nullptr : aclCreateIntArray(actQ.data(), actQ.size());
    aclIntArray *lengthsKv = actKv.empty() ? nullptr : aclCreateIntArray(actKv.data(), actKv.size());
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnPromptFlashAttentionV2GetWorkspaceSize(
        q.tensor, k.tensor, v.tensor, nullptr, nullptr, lengthsQ, lengthsKv, nullptr, nullptr, nullptr, nullptr,
        nullptr, heads, 0.125, 2147483647, 0, argv[2], 0, 20, out.tensor, &workspaceSize, &executor);
    ret = RunPhase2(stream, ret, workspaceSize, executor, aclnnPromptFlashAttentionV2);
    if (lengthsQ) aclDestroyIntArray(lengthsQ);
    if (lengthsKv) aclDestroyIntArray(lengthsKv);
    CHECK_OK(ret);
    FILE *f = fopen((dir + "/out.bin").c_str(), "wb");
    if (f == nullptr) return 1;
    int dumped = Dump(f, out);
    fclose(f);
    return dumped;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 9) return 2;
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    int ret = Run(argv, stream);
    TearDown(stream);
    return ret;
}
