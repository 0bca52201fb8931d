// Hostile handles of the newer runtime objects: capture models, notifies, physical memory and
// reserved ranges, data buffers. Usage: runtime_handles <case>; prints "<rule> <code>" lines.
// Each case passes garbage, destroys twice or uses after destroying; nothing may crash.
#include <string>

#include "common.h"

namespace {
int g_stackWord = 42;
void *Garbage() { return &g_stackWord; }              // a real host pointer that is no handle
void *Wild() { return reinterpret_cast<void *>(0x10); }  // an address nothing maps

aclrtPhysicalMemProp DeviceProp() {
    aclrtPhysicalMemProp prop = {};
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    return prop;
}

void Models(aclrtStream stream) {
    REPORT("execute_garbage", aclmdlRIExecuteAsync(Garbage(), stream));
    REPORT("execute_wild", aclmdlRIExecuteAsync(Wild(), stream));
    REPORT("execute_stream_as_model", aclmdlRIExecuteAsync(stream, stream));
    REPORT("destroy_garbage", aclmdlRIDestroy(Garbage()));
    aclmdlRI model = nullptr;
    aclmdlRICaptureBegin(stream, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
    aclrtMemsetAsync(nullptr, 0, 0, 0, stream);
    REPORT("end", aclmdlRICaptureEnd(stream, &model));
    REPORT("destroy", aclmdlRIDestroy(model));
    REPORT("destroy_twice", aclmdlRIDestroy(model));
    REPORT("execute_after_destroy", aclmdlRIExecuteAsync(model, stream));
    REPORT("capture_on_garbage_stream", aclmdlRICaptureBegin(Garbage(), ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
    REPORT("end_on_garbage_stream", aclmdlRICaptureEnd(Garbage(), &model));
    REPORT("sync", aclrtSynchronizeStream(stream));
}

void Notifies(aclrtStream stream) {
    uint32_t id = 0;
    REPORT("record_garbage", aclrtRecordNotify(Garbage(), stream));
    REPORT("wait_wild", aclrtWaitAndResetNotify(Wild(), stream, 1));
    REPORT("id_garbage", aclrtGetNotifyId(Garbage(), &id));
    REPORT("destroy_stream_as_notify", aclrtDestroyNotify(stream));
    aclrtNotify notify = nullptr;
    aclrtCreateNotify(&notify, ACL_NOTIFY_DEFAULT);
    REPORT("destroy", aclrtDestroyNotify(notify));
    REPORT("destroy_twice", aclrtDestroyNotify(notify));
    REPORT("record_after_destroy", aclrtRecordNotify(notify, stream));
    REPORT("wait_after_destroy", aclrtWaitAndResetNotify(notify, stream, 1));
    REPORT("id_after_destroy", aclrtGetNotifyId(notify, &id));
    REPORT("sync", aclrtSynchronizeStream(stream));
}

void Physical() {
    aclrtPhysicalMemProp prop = DeviceProp();
    size_t grain = 0;
    aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &grain);
    void *va = nullptr;
    aclrtReserveMemAddress(&va, 2 * grain, 0, nullptr, 0);
    REPORT("free_garbage", aclrtFreePhysical(Garbage()));
    REPORT("free_wild", aclrtFreePhysical(Wild()));
    REPORT("map_garbage_handle", aclrtMapMem(va, grain, 0, Garbage(), 0));
    aclrtDrvMemHandle handle = nullptr;
    aclrtMallocPhysical(&handle, grain, &prop, 0);
    REPORT("map_garbage_address", aclrtMapMem(Garbage(), grain, 0, handle, 0));
    REPORT("map_wild_address", aclrtMapMem(Wild(), grain, 0, handle, 0));
    REPORT("unmap_garbage", aclrtUnmapMem(Garbage()));
    REPORT("release_garbage", aclrtReleaseMemAddress(Garbage()));
    REPORT("release_inside", aclrtReleaseMemAddress(static_cast<char *>(va) + 64));
    REPORT("free", aclrtFreePhysical(handle));
    REPORT("free_twice", aclrtFreePhysical(handle));
    REPORT("map_after_free", aclrtMapMem(va, grain, 0, handle, 0));
    REPORT("release", aclrtReleaseMemAddress(va));
    REPORT("release_twice", aclrtReleaseMemAddress(va));
    std::vector<uint8_t> host(64);
    REPORT("copy_from_released", aclrtMemcpy(host.data(), 64, va, 64, ACL_MEMCPY_DEVICE_TO_HOST));
}

void DataBuffers() {
    const aclDataBuffer *garbage = static_cast<const aclDataBuffer *>(Garbage());
    REPORT("destroy_garbage", aclDestroyDataBuffer(garbage));
    REPORT("update_garbage", aclUpdateDataBuffer(const_cast<aclDataBuffer *>(garbage), nullptr, 1));
    REPORT("addr_garbage_is_null", aclGetDataBufferAddr(garbage) == nullptr);
    REPORT("size_garbage", aclGetDataBufferSizeV2(garbage));
    char data[16];
    aclDataBuffer *buffer = aclCreateDataBuffer(data, sizeof data);
    REPORT("destroy", aclDestroyDataBuffer(buffer));
    REPORT("destroy_twice", aclDestroyDataBuffer(buffer));
    REPORT("update_after_destroy", aclUpdateDataBuffer(buffer, data, 8));
    REPORT("size_after_destroy", aclGetDataBufferSize(buffer));
    REPORT("addr_after_destroy_is_null", aclGetDataBufferAddr(buffer) == nullptr);
}

void Callbacks(aclrtStream stream) {
    REPORT("subscribe_garbage_stream", aclrtSubscribeReport(1, Garbage()));
    REPORT("unsubscribe_garbage_stream", aclrtUnSubscribeReport(1, Garbage()));
    REPORT("launch_on_garbage_stream",
           aclrtLaunchCallback([](void *) {}, nullptr, ACL_CALLBACK_NO_BLOCK, Garbage()));
    REPORT("host_func_on_garbage_stream", aclrtLaunchHostFunc(Garbage(), [](void *) {}, nullptr));
    REPORT("sync", aclrtSynchronizeStream(stream));
}
}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const std::string which = argv[1];
    aclrtStream stream = nullptr;
    if (SetUp(&stream) != 0) return 1;
    if (which == "models") Models(stream);
    else if (which == "notifies") Notifies(stream);
    else if (which == "physical") Physical();
    else if (which == "data_buffers") DataBuffers();
    else if (which == "callbacks") Callbacks(stream);
    else return 2;
    TearDown(stream);
    printf("done 0\n");
    return 0;
}
