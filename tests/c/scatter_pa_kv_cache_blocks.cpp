// aclnnScatterPaKvCache compress modes on Atlas A2/A3 with fp16 rows of 24 elements (48 bytes, one
// whole 32-byte block and a half): Alibi, Rope and Omni scatter deterministic data into caches
// [4, 8, 1, 24]; the six caches are written to argv[1] and compared byte for byte against the
// block-copy references by tests/test_scatter_pa_kv_cache_cabi.py.
#include <cstring>

#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

namespace {
const int64_t kHeads = 2, kHead = 24, kTokens = 12, kBlocks = 4, kBlock = 8;

int Scatter(aclrtStream stream, const char *mode, DeviceTensor &kc, DeviceTensor &vc) {
    DeviceTensor key, value, slots, wins, offsets, lens;
    int ret = 0;
    if ((ret = key.Create(LcgFp16(kTokens * kHeads * kHead, 1), {kTokens, kHeads, kHead}, ACL_FLOAT16)) ||
        (ret = value.Create(LcgFp16(kTokens * kHeads * kHead, 2), {kTokens, kHeads, kHead}, ACL_FLOAT16)) ||
        (ret = slots.Create(std::vector<int32_t>{0, 8, 16, 24}, {4}, ACL_INT32)) ||
        (ret = wins.Create(std::vector<int32_t>{2, 0, 3, 7}, {4}, ACL_INT32)) ||
        (ret = offsets.Create(std::vector<int32_t>{1, 2, -1, 0}, {4}, ACL_INT32)) ||
        (ret = lens.Create(std::vector<int32_t>{5, 7}, {2}, ACL_INT32)))
        return ret;
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    const bool alibi = strcmp(mode, "Alibi") == 0;
    ret = aclnnScatterPaKvCacheGetWorkspaceSize(key.tensor, kc.tensor, slots.tensor, value.tensor, vc.tensor,
                                                wins.tensor, alibi ? nullptr : offsets.tensor, lens.tensor, nullptr,
                                                const_cast<char *>(mode), nullptr, nullptr, &size, &executor);
    return RunPhase2(stream, ret, size, executor, aclnnScatterPaKvCache);
}
}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    {
        FILE *out = fopen(argv[1], "wb");
        const int64_t cacheSize = kBlocks * kBlock * kHead;
        uint32_t seed = 3;
        for (const char *mode : {"Alibi", "Rope", "Omni"}) {
            DeviceTensor kc, vc;
            CHECK_OK(kc.Create(LcgFp16(cacheSize, seed++), {kBlocks, kBlock, 1, kHead}, ACL_FLOAT16));
            CHECK_OK(vc.Create(LcgFp16(cacheSize, seed++), {kBlocks, kBlock, 1, kHead}, ACL_FLOAT16));
            CHECK_OK(Scatter(stream, mode, kc, vc));
            CHECK_OK(Dump(out, kc));
            CHECK_OK(Dump(out, vc));
        }
        fclose(out);
    }
    TearDown(stream);
    return 0;
}
