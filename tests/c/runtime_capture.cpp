// Graph capture: a decode step (ScatterPaKvCache of one token, then IncreFlashAttentionV4 over the
// paged cache) captured once and replayed ten times, against the same step run ten times on a copy
// of the same buffers. Prints "<rule> <code>" lines and "<rule>_value <v>" lines.
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

#define VALUE(rule, v) printf("%s_value %lld\n", rule, static_cast<long long>(v))

namespace {
const int64_t B = 2, N = 4, N2 = 2, D = 32, BLOCK = 16, BLOCKS = 4, MAX_BLOCKS = 2, LEN = 20;

struct Step {
    DeviceTensor keyCache, valueCache, query, out, table, keyRow, valueRow, slots, scatterSpace, attentionSpace;
    aclTensor *scatterKey = nullptr, *scatterValue = nullptr;

    int Create() {
        std::vector<int64_t> cacheShape = {BLOCKS, BLOCK, N2 * D};
        int ret = keyCache.Create(LcgFp16(BLOCKS * BLOCK * N2 * D, 1), cacheShape, ACL_FLOAT16);
        if (ret == 0) ret = valueCache.Create(LcgFp16(BLOCKS * BLOCK * N2 * D, 2), cacheShape, ACL_FLOAT16);
        if (ret == 0) ret = query.Create(LcgFp16(B * N * D, 3), {B, N, 1, D}, ACL_FLOAT16);
        if (ret == 0) ret = out.Create(std::vector<uint16_t>(B * N * D, 0), {B, N, 1, D}, ACL_FLOAT16);
        if (ret == 0) ret = table.Create(std::vector<int32_t>{2, 0, 3, 1}, {B, MAX_BLOCKS}, ACL_INT32);
        if (ret == 0) ret = keyRow.Create(LcgFp16(B * N2 * D, 4), {B, N2, D}, ACL_FLOAT16);
        if (ret == 0) ret = valueRow.Create(LcgFp16(B * N2 * D, 5), {B, N2, D}, ACL_FLOAT16);
        // Token LEN-1 of each batch: block table[b][1], offset (LEN-1) % BLOCK.
        if (ret == 0) ret = slots.Create(std::vector<int32_t>{0 * BLOCK + 3, 1 * BLOCK + 3}, {B}, ACL_INT32);
        std::vector<int64_t> view = {BLOCKS, BLOCK, N2, D};
        std::vector<int64_t> strides = ContiguousStrides(view);
        scatterKey = aclCreateTensor(view.data(), 4, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, view.data(), 4,
                                     keyCache.addr);
        scatterValue = aclCreateTensor(view.data(), 4, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, view.data(), 4,
                                       valueCache.addr);
        return ret;
    }

    // A workspace kept for the step's lifetime: a captured launch uses it again at every replay.
    static int Space(DeviceTensor &space, uint64_t size) {
        if (size == 0 || space.addr != nullptr) return 0;
        return space.Create({static_cast<int64_t>(size)}, ACL_UINT8);
    }

    // Phase 1 and phase 2 of both operators, launched on `stream` without synchronising.
    int Launch(aclrtStream stream) {
        uint64_t size = 0;
        aclOpExecutor *executor = nullptr;
        int ret = aclnnScatterPaKvCacheGetWorkspaceSize(keyRow.tensor, scatterKey, slots.tensor, valueRow.tensor,
                                                        scatterValue, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                        nullptr, nullptr, &size, &executor);
        if (ret == 0) ret = Space(scatterSpace, size);
        if (ret == 0) ret = aclnnScatterPaKvCache(scatterSpace.addr, size, executor, stream);
        if (ret != 0) return ret;
        std::vector<int64_t> shape = {BLOCKS, BLOCK, N2 * D};
        std::vector<int64_t> strides = ContiguousStrides(shape);
        aclTensor *k = aclCreateTensor(shape.data(), 3, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, shape.data(), 3,
                                       keyCache.addr);
        aclTensor *v = aclCreateTensor(shape.data(), 3, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, shape.data(), 3,
                                       valueCache.addr);
        aclTensorList *keys = aclCreateTensorList(&k, 1), *values = aclCreateTensorList(&v, 1);
        std::vector<int64_t> lens(B, LEN);
        aclIntArray *act = aclCreateIntArray(lens.data(), B);
        ret = aclnnIncreFlashAttentionV4GetWorkspaceSize(query.tensor, keys, values, nullptr, nullptr, act, nullptr,
                                                         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                         table.tensor, nullptr, N, 0.17677669529663687,
                                                         const_cast<char *>("BNSD"), N2, BLOCK, 1, out.tensor, &size,
                                                         &executor);
        if (ret == 0) ret = Space(attentionSpace, size);
        if (ret == 0) ret = aclnnIncreFlashAttentionV4(attentionSpace.addr, size, executor, stream);
        aclDestroyIntArray(act);
        aclDestroyTensorList(keys);
        aclDestroyTensorList(values);
        return ret;
    }

    ~Step() {
        if (scatterKey) aclDestroyTensor(scatterKey);
        if (scatterValue) aclDestroyTensor(scatterValue);
    }
};

int Same(const DeviceTensor &a, const DeviceTensor &b) {
    std::vector<uint8_t> x, y;
    a.Read(x);
    b.Read(y);
    return x == y;
}

int AllZero(const DeviceTensor &t) {
    std::vector<uint16_t> x;
    t.Read(x);
    for (auto v : x)
        if (v) return 0;
    return 1;
}
}  // namespace

int main() {
    aclrtStream stream = nullptr, other = nullptr;
    if (SetUp(&stream) != 0) return 1;
    aclrtCreateStream(&other);
    {
        Step direct, captured;
        CHECK_OK(direct.Create());
        CHECK_OK(captured.Create());
        for (int i = 0; i < 10; i++) CHECK_OK(direct.Launch(other));
        REPORT("direct_sync", aclrtSynchronizeStream(other));

        aclmdlRI model = nullptr, seen = nullptr;
        aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
        REPORT("capture_null_stream", aclmdlRICaptureBegin(nullptr, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
        REPORT("capture_bad_mode", aclmdlRICaptureBegin(stream, static_cast<aclmdlRICaptureMode>(3)));
        REPORT("end_not_capturing", aclmdlRICaptureEnd(stream, &model));
        REPORT("info_idle", aclmdlRICaptureGetInfo(stream, &status, &seen));
        VALUE("info_idle_status", status);
        REPORT("capture_begin", aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_RELAXED));
        REPORT("capture_again", aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_RELAXED));
        REPORT("capture_launch", captured.Launch(stream));
        REPORT("info_active", aclmdlRICaptureGetInfo(stream, &status, &seen));
        VALUE("info_active_status", status);
        REPORT("info_both_null", aclmdlRICaptureGetInfo(stream, nullptr, nullptr));
        aclrtStreamStatus query = ACL_STREAM_STATUS_COMPLETE;
        REPORT("query_capturing", aclrtStreamQuery(stream, &query));
        REPORT("sync_capturing", aclrtSynchronizeStream(stream));
        REPORT("destroy_while_capturing", aclmdlRIDestroy(seen));
        REPORT("capture_end", aclmdlRICaptureEnd(stream, &model));
        VALUE("info_model_is_end_model", seen == model);
        REPORT("sync_after_capture", aclrtSynchronizeStream(stream));  // anything queued has run
        VALUE("captured_not_run", AllZero(captured.out));
        REPORT("execute_null", aclmdlRIExecuteAsync(nullptr, stream));
        for (int i = 0; i < 10; i++) REPORT("execute", aclmdlRIExecuteAsync(model, stream));
        REPORT("replay_sync", aclrtSynchronizeStream(stream));
        VALUE("replay_out_same_bytes", Same(direct.out, captured.out));
        VALUE("replay_key_cache_same_bytes", Same(direct.keyCache, captured.keyCache));
        VALUE("replay_value_cache_same_bytes", Same(direct.valueCache, captured.valueCache));
        VALUE("replay_out_not_zero", !AllZero(captured.out));
        // Order inside a replay: set, copy out, set again; the copy must see the first value.
        {
            void *dev = nullptr;
            uint8_t host[8] = {0}, last[8] = {0};
            aclrtMalloc(&dev, 8, ACL_MEM_MALLOC_HUGE_FIRST);
            aclmdlRI ordered = nullptr;
            aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
            aclrtMemsetAsync(dev, 8, 0x11, 8, stream);
            aclrtMemcpyAsync(host, 8, dev, 8, ACL_MEMCPY_DEVICE_TO_HOST, stream);
            aclrtMemsetAsync(dev, 8, 0x22, 8, stream);
            aclmdlRICaptureEnd(stream, &ordered);
            REPORT("ordered_execute", aclmdlRIExecuteAsync(ordered, stream));
            aclrtSynchronizeStream(stream);
            aclrtMemcpy(last, 8, dev, 8, ACL_MEMCPY_DEVICE_TO_HOST);
            VALUE("replay_in_order", host[0] == 0x11 && host[7] == 0x11 && last[0] == 0x22);
            aclmdlRIDestroy(ordered);
            aclrtFree(dev);
        }
        REPORT("execute_sync_api", aclmdlRIExecute(model, -1));
        REPORT("execute_bad_timeout", aclmdlRIExecute(model, 0));
        REPORT("destroy", aclmdlRIDestroy(model));
        REPORT("destroy_again", aclmdlRIDestroy(model));
        REPORT("execute_destroyed", aclmdlRIExecuteAsync(model, stream));
    }
    aclrtDestroyStream(other);
    TearDown(stream);
    printf("done 0\n");
    return 0;
}
