// aclnnScatterPaKvCache numerics through the C ABI: a PA_NZ scatter with INT64 slots and a Normal
// scatter with INT32 slots on deterministic fp16 data; the four caches are written to argv[1] and
// compared against the loop references by tests/test_scatter_pa_kv_cache_cabi.py.
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

namespace {
int Scatter(aclrtStream stream, DeviceTensor &key, DeviceTensor &kc, DeviceTensor &slots, DeviceTensor &value,
            DeviceTensor &vc, const char *cacheMode) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnScatterPaKvCacheGetWorkspaceSize(key.tensor, kc.tensor, slots.tensor, value.tensor, vc.tensor,
                                                    nullptr, nullptr, nullptr, const_cast<char *>(cacheMode),
                                                    nullptr, nullptr, nullptr, &size, &executor);
    if (ret != 0) return ret;
    void *workspace = nullptr;
    if (size > 0 && (ret = aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST)) != 0) return ret;
    ret = aclnnScatterPaKvCache(workspace, size, executor, stream);
    if (ret == 0) ret = aclrtSynchronizeStream(stream);
    aclrtFree(workspace);
    return ret;
}
}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    const int64_t tokens = 40, heads = 2, head = 64, blocks = 5, block = 16;
    {
        // PA_NZ: tokens fill blocks 3 and 0 and half of block 4; token 5 is padding (-1).
        std::vector<int64_t> slots(tokens);
        const int64_t table[] = {3, 0, 4};
        for (int64_t t = 0; t < tokens; t++) slots[t] = table[t / block] * block + t % block;
        slots[5] = -1;
        DeviceTensor key, value, kc, vc, slotTensor;
        CHECK_OK(key.Create(LcgFp16(tokens * heads * head, 1), {tokens, heads, head}, ACL_FLOAT16));
        CHECK_OK(value.Create(LcgFp16(tokens * heads * head, 2), {tokens, heads, head}, ACL_FLOAT16));
        const std::vector<int64_t> nzShape = {blocks, heads * head / 16, block, 16};
        CHECK_OK(kc.Create(LcgFp16(blocks * heads * head * block, 3), nzShape, ACL_FLOAT16));
        CHECK_OK(vc.Create(LcgFp16(blocks * heads * head * block, 4), nzShape, ACL_FLOAT16));
        CHECK_OK(slotTensor.Create(slots, {tokens}, ACL_INT64));
        CHECK_OK(Scatter(stream, key, kc, slotTensor, value, vc, "PA_NZ"));
        FILE *out = fopen(argv[1], "wb");
        CHECK_OK(Dump(out, kc));
        CHECK_OK(Dump(out, vc));
        // Normal: the same data into ND caches [blocks, block, heads, head], slots in reverse order.
        std::vector<int32_t> reversed(tokens);
        for (int64_t t = 0; t < tokens; t++) reversed[t] = static_cast<int32_t>(blocks * block - 1 - 2 * t);
        DeviceTensor ndk, ndv, ndSlots;
        CHECK_OK(ndk.Create(LcgFp16(blocks * block * heads * head, 5), {blocks, block, heads, head}, ACL_FLOAT16));
        CHECK_OK(ndv.Create(LcgFp16(blocks * block * heads * head, 6), {blocks, block, heads, head}, ACL_FLOAT16));
        CHECK_OK(ndSlots.Create(reversed, {tokens}, ACL_INT32));
        CHECK_OK(Scatter(stream, key, ndk, ndSlots, value, ndv, "Norm"));
        CHECK_OK(Dump(out, ndk));
        CHECK_OK(Dump(out, ndv));
        fclose(out);
    }
    TearDown(stream);
    return 0;
}
