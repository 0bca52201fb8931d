// Runs aclnnSparseFlashAttentionGrad on tensors a test wrote to a directory, the way a C++ program
// calls it, and writes the outputs back. Usage: sparse_flash_attention_grad_run <dir>
//   <dir>/tensors.txt: one line per argument tensor in prototype order, "<name> null" or
//                      "<name> <aclDataType> <ndim> <dims...>", then "attrs <scale> <blockSize> <layout> <mode>"
//   <dir>/<name>.bin:  the raw bytes of every input; outputs are written to <name>.bin after the run
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "aclnnop/aclnn_sparse_flash_attention_grad.h"
#include "common.h"

namespace {

const char *kNames[] = {"query", "key", "value", "sparseIndices", "dOut", "out", "softmaxMax", "softmaxSum",
                        "actualSeqLengthsQuery", "actualSeqLengthsKv", "queryRope", "keyRope",
                        "dQueryOut", "dKeyOut", "dValueOut", "dQueryRopeOut", "dKeyRopeOut"};
constexpr int kTensors = 17;
constexpr int kFirstOutput = 12;

std::vector<uint8_t> ReadFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    std::string dir = argv[1];
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));

    std::ifstream manifest(dir + "/tensors.txt");
    std::unique_ptr<DeviceTensor> tensors[kTensors];
    double scale = 1.0;
    int64_t blockSize = 1, mode = 0;
    char layout[16] = {0};
    std::string line;
    while (std::getline(manifest, line)) {
        std::istringstream fields(line);
        std::string name, kind;
        fields >> name >> kind;
        if (name == "attrs") {
            scale = std::stod(kind);
            std::string text;
            fields >> blockSize >> text >> mode;
            strncpy(layout, text.c_str(), sizeof(layout) - 1);
            continue;
        }
        int index = 0;
        while (index < kTensors && name != kNames[index]) index++;
        if (index == kTensors || kind == "null") continue;
        int ndim = 0;
        fields >> ndim;
        std::vector<int64_t> shape(ndim);
        for (auto &d : shape) fields >> d;
        tensors[index].reset(new DeviceTensor());
        auto dtype = static_cast<aclDataType>(std::stoi(kind));
        if (index < kFirstOutput) {
            CHECK_OK(tensors[index]->Create(ReadFile(dir + "/" + name + ".bin"), shape, dtype));
        } else {
            CHECK_OK(tensors[index]->Create(shape, dtype));
        }
    }
    auto t = [&](int i) { return tensors[i] ? tensors[i]->tensor : nullptr; };

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnSparseFlashAttentionGradGetWorkspaceSize(
        t(0), t(1), t(2), t(3), t(4), t(5), t(6), t(7), t(8), t(9), t(10), t(11), scale, blockSize, layout, mode,
        2147483647, 2147483647, false, t(12), t(13), t(14), t(15), t(16), &workspaceSize, &executor));
    void *workspace = nullptr;
    if (workspaceSize > 0) CHECK_OK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclnnSparseFlashAttentionGrad(workspace, workspaceSize, executor, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));

    for (int i = kFirstOutput; i < kTensors; i++) {
        if (!tensors[i]) continue;
        std::vector<uint8_t> host;
        CHECK_OK(tensors[i]->Read(host));
        std::ofstream(dir + "/" + kNames[i] + ".bin", std::ios::binary)
            .write(reinterpret_cast<const char *>(host.data()), host.size());
    }
    if (workspace) aclrtFree(workspace);
    for (auto &tensor : tensors) tensor.reset();
    TearDown(stream);
    printf("workspace %llu\n", static_cast<unsigned long long>(workspaceSize));
    return 0;
}
