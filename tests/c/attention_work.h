// Work that keeps a stream busy for the lifecycle tests: a PromptFlashAttentionV2 launch whose length
// grows with its sequence length, and a check that its output was really written.
#ifndef ACLNN_EMU_TEST_ATTENTION_WORK_H_
#define ACLNN_EMU_TEST_ATTENTION_WORK_H_

#include <cmath>

#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "common.h"

// q = k = v of shape [1, heads, seq, 128] fp16 with values in [-1, 1]; out starts as NaN, so a finished
// launch is recognisable: every output of attention over such values is finite and in [-1, 1].
struct AttentionWork {
    DeviceTensor q, out;
    int64_t heads, seq;

    AttentionWork(int64_t heads_, int64_t seq_) : heads(heads_), seq(seq_) {}

    int Create() {
        std::vector<int64_t> shape = {1, heads, seq, 128};
        std::vector<uint16_t> values(ShapeSize(shape)), nan(ShapeSize(shape), 0x7e00), period(61);
        for (size_t i = 0; i < period.size(); i++) period[i] = aclFloatToFloat16(static_cast<float>(std::sin(0.1 * i)));
        for (size_t i = 0; i < values.size(); i++) values[i] = period[i % period.size()];
        int ret = q.Create(values, shape, ACL_FLOAT16);
        return ret != 0 ? ret : out.Create(nan, shape, ACL_FLOAT16);
    }

    // Both phases onto `stream`, without synchronising; the status of the first failing call.
    int Launch(aclrtStream stream) {
        uint64_t workspaceSize = 0;
        aclOpExecutor *executor = nullptr;
        char layout[] = "BNSD";
        int ret = aclnnPromptFlashAttentionV2GetWorkspaceSize(
            q.tensor, q.tensor, q.tensor, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            nullptr, heads, 1.0 / std::sqrt(128.0), 2147483647, 0, layout, 0, 0, out.tensor, &workspaceSize,
            &executor);
        return ret != 0 ? ret : aclnnPromptFlashAttentionV2(nullptr, 0, executor, stream);
    }

    // 1 if every output element is a finished attention value, 0 if any is not, or a negative status.
    int Finished() {
        std::vector<uint16_t> host;
        int ret = out.Read(host);
        if (ret != 0) return -ret;
        for (uint16_t h : host) {
            if ((h & 0x7fff) > 0x3c00) return 0;    // |x| > 1, Inf or NaN
        }
        return 1;
    }
};

#endif  // ACLNN_EMU_TEST_ATTENTION_WORK_H_
