// aclnnGatherPaKvCache numerics through the C ABI on deterministic fp16 data: a Norm gather with
// seqOffset, a PA_NZ gather with cumulative lengths, and a Norm scatter (aclnnScatterPaKvCache) of
// fresh tokens gathered back. The six outputs are written to argv[1] and compared against the
// loop references by tests/test_gather_pa_kv_cache_cabi.py.
#include "aclnnop/aclnn_gather_pa_kv_cache.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

namespace {
const int64_t kHeads = 2, kHead = 64, kBlocks = 5, kBlock = 16, kBatches = 3, kCols = 3, kRows = 48;
const std::vector<int32_t> kTable = {3, 0, 4, 1, 2, 0, 4, 4, 1};
const std::vector<int32_t> kLens = {20, 9, 16};

int Run(aclrtStream stream, aclnnStatus status, uint64_t size, aclOpExecutor *executor,
        aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    return status != 0 ? status : RunPhase2(stream, size, executor, phase2);
}

int Gather(aclrtStream stream, DeviceTensor &kc, DeviceTensor &vc, DeviceTensor &table, DeviceTensor &lens,
           DeviceTensor &key, DeviceTensor &value, aclTensor *seqOffset, const char *mode, bool cumsum) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    aclnnStatus status = aclnnGatherPaKvCacheGetWorkspaceSize(kc.tensor, vc.tensor, table.tensor, lens.tensor,
                                                              key.tensor, value.tensor, seqOffset,
                                                              const_cast<char *>(mode), cumsum, &size, &executor);
    return Run(stream, status, size, executor, aclnnGatherPaKvCache);
}
}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    {
        const int64_t cacheSize = kBlocks * kBlock * kHeads * kHead, outSize = kRows * kHeads * kHead;
        DeviceTensor table, lens, cumulative, offsets;
        CHECK_OK(table.Create(kTable, {kBatches, kCols}, ACL_INT32));
        CHECK_OK(lens.Create(kLens, {kBatches}, ACL_INT32));
        CHECK_OK(cumulative.Create(std::vector<int32_t>{0, 20, 29, 45}, {kBatches + 1}, ACL_INT32));
        CHECK_OK(offsets.Create(std::vector<int32_t>{0, 16, 5}, {kBatches}, ACL_INT32));
        FILE *out = fopen(argv[1], "wb");

        // Norm: caches [blocks, block, heads, head]; seqOffset 16 shifts batch 1 by one column.
        DeviceTensor kc, vc, key, value;
        CHECK_OK(kc.Create(LcgFp16(cacheSize, 3), {kBlocks, kBlock, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(vc.Create(LcgFp16(cacheSize, 4), {kBlocks, kBlock, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(key.Create(LcgFp16(outSize, 7), {kRows, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(value.Create(LcgFp16(outSize, 8), {kRows, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(Gather(stream, kc, vc, table, lens, key, value, offsets.tensor, "Norm", false));
        CHECK_OK(Dump(out, key));
        CHECK_OK(Dump(out, value));

        // PA_NZ: caches [blocks, heads * head / 16, block, 16], cumulative lengths.
        DeviceTensor nzk, nzv, flatKey, flatValue;
        const std::vector<int64_t> nzShape = {kBlocks, kHeads * kHead / 16, kBlock, 16};
        CHECK_OK(nzk.Create(LcgFp16(cacheSize, 5), nzShape, ACL_FLOAT16));
        CHECK_OK(nzv.Create(LcgFp16(cacheSize, 6), nzShape, ACL_FLOAT16));
        CHECK_OK(flatKey.Create(LcgFp16(outSize, 9), {kRows, kHeads * kHead}, ACL_FLOAT16));
        CHECK_OK(flatValue.Create(LcgFp16(outSize, 10), {kRows, kHeads * kHead}, ACL_FLOAT16));
        CHECK_OK(Gather(stream, nzk, nzv, table, cumulative, flatKey, flatValue, nullptr, "PA_NZ", true));
        CHECK_OK(Dump(out, flatKey));
        CHECK_OK(Dump(out, flatValue));

        // Scatter 45 fresh tokens to the slots the table gives (batches in distinct blocks), gather them back.
        const std::vector<int32_t> distinct = {3, 0, 2, 1, 4, 0, 4, 4, 1};
        std::vector<int32_t> slots;
        for (int64_t b = 0; b < kBatches; b++)
            for (int32_t t = 0; t < kLens[b]; t++)
                slots.push_back(distinct[b * kCols + t / kBlock] * kBlock + t % kBlock);
        const int64_t tokens = static_cast<int64_t>(slots.size());
        DeviceTensor fresh, freshValue, slotTensor, ndk, ndv, distinctTable, backKey, backValue;
        CHECK_OK(fresh.Create(LcgFp16(tokens * kHeads * kHead, 1), {tokens, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(freshValue.Create(LcgFp16(tokens * kHeads * kHead, 2), {tokens, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(slotTensor.Create(slots, {tokens}, ACL_INT32));
        CHECK_OK(ndk.Create(std::vector<uint16_t>(cacheSize, 0), {kBlocks, kBlock, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(ndv.Create(std::vector<uint16_t>(cacheSize, 0), {kBlocks, kBlock, kHeads, kHead}, ACL_FLOAT16));
        uint64_t size = 0;
        aclOpExecutor *executor = nullptr;
        char norm[] = "Norm";
        aclnnStatus status = aclnnScatterPaKvCacheGetWorkspaceSize(fresh.tensor, ndk.tensor, slotTensor.tensor,
                                                                   freshValue.tensor, ndv.tensor, nullptr, nullptr,
                                                                   nullptr, norm, nullptr, nullptr, nullptr, &size,
                                                                   &executor);
        CHECK_OK(Run(stream, status, size, executor, aclnnScatterPaKvCache));
        CHECK_OK(distinctTable.Create(distinct, {kBatches, kCols}, ACL_INT32));
        CHECK_OK(backKey.Create({tokens, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(backValue.Create({tokens, kHeads, kHead}, ACL_FLOAT16));
        CHECK_OK(Gather(stream, ndk, ndv, distinctTable, lens, backKey, backValue, nullptr, "Norm", false));
        CHECK_OK(Dump(out, backKey));
        CHECK_OK(Dump(out, backValue));
        fclose(out);
    }
    TearDown(stream);
    return 0;
}
