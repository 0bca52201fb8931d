// Building the tensors of one operator call from short specs, and running both phases: shared by the
// status-code programs of the sparse-attention operators.
#ifndef ACLNN_EMU_TEST_OP_CASE_H_
#define ACLNN_EMU_TEST_OP_CASE_H_

#include <memory>
#include <string>
#include <vector>

#include "common.h"

struct Spec {
    Spec() = default;
    Spec(std::vector<int64_t> s, aclDataType d = ACL_BF16, std::vector<int32_t> v = {})
        : shape(s), dtype(d), values(v) {}
    std::vector<int64_t> shape;
    aclDataType dtype = ACL_BF16;
    aclFormat format = ACL_FORMAT_ND;
    bool null = false;
    std::vector<int32_t> values;  // int32 contents (indices, offsets, block table); others stay zero
};

// Owns the device tensors of one call; Make returns nullptr for a null spec.
struct Tensors {
    std::vector<std::unique_ptr<DeviceTensor>> owned;

    aclTensor *Make(const Spec &s) {
        if (s.null) return nullptr;
        owned.emplace_back(new DeviceTensor());
        int ret = s.values.empty() ? owned.back()->Create(s.shape, s.dtype, s.format)
                                   : owned.back()->Create(s.values, s.shape, s.dtype, s.format);
        return ret == 0 ? owned.back()->tensor : nullptr;
    }
};

typedef aclnnStatus (*Phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream);

// Phase 1 (its status), then a workspace of the size it asked for, phase 2 and a stream sync: the
// first non-zero status.
template <typename Phase1>
int RunPhases(Phase1 phase1, Phase2 phase2, aclrtStream stream) {
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = phase1(&workspaceSize, &executor);
    if (ret != 0) return ret;
    void *ws = nullptr;
    if (workspaceSize > 0 && (ret = aclrtMalloc(&ws, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST)) != 0) return ret;
    ret = phase2(ws, workspaceSize, executor, stream);
    if (ret == 0) ret = aclrtSynchronizeStream(stream);
    if (ws) aclrtFree(ws);
    return ret;
}

// Phase 1 then phase 2 without a workspace (161002 when one is needed), and phase 2 with no executor.
template <typename Phase1>
void ReportPhase2Rules(Phase1 phase1, Phase2 phase2, aclrtStream stream) {
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    int ret = phase1(&workspaceSize, &executor);
    if (ret == 0) ret = phase2(nullptr, 0, executor, stream);
    REPORT("phase2.workspace_small", ret);
    REPORT("phase2.executor_null", phase2(nullptr, 0, nullptr, stream));
}

// main() of a rules program: "soc" as the first argument runs only the chip-dependent case.
template <typename Soc, typename All>
int RulesMain(int argc, char **argv, Soc soc, All all) {
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    if (argc > 1 && std::string(argv[1]) == "soc") {
        soc();
    } else {
        all(stream);
    }
    TearDown(stream);
    return 0;
}

#endif  // ACLNN_EMU_TEST_OP_CASE_H_
