// Runtime semantics of reference acl-abi.md §4: prints "<rule> <code>" for each case.
#include <thread>
#include <vector>

#include "common.h"

static int FromOtherThread(int (*fn)()) {
    int ret = -1;
    std::thread worker([&] { ret = fn(); });
    worker.join();
    return ret;
}

int main() {
    // §4.1 init / finalize
    REPORT("init.first", aclInit(nullptr));
    REPORT("init.repeat", aclInit(nullptr));

    // §4.2 devices
    uint32_t count = 0;
    REPORT("device.count", aclrtGetDeviceCount(&count));
    printf("device.count.value %u\n", count);
    REPORT("device.bad_id", aclrtSetDevice(static_cast<int32_t>(count)));
    REPORT("device.negative_id", aclrtSetDevice(-1));
    REPORT("context.none.malloc", FromOtherThread([] { void *p; return aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST); }));
    REPORT("context.none.memcpy", FromOtherThread([] { char a[4], b[4]; return aclrtMemcpy(a, 4, b, 4, ACL_MEMCPY_HOST_TO_HOST); }));
    REPORT("context.none.create_stream", FromOtherThread([] { aclrtStream s; return aclrtCreateStream(&s); }));
    REPORT("device.set", aclrtSetDevice(0));
    int32_t dev = -1;
    REPORT("device.get", aclrtGetDevice(&dev));
    printf("device.get.value %d\n", dev);
    aclrtRunMode mode;
    REPORT("run_mode", aclrtGetRunMode(&mode));
    printf("run_mode.value %d\n", static_cast<int>(mode));

    // contexts
    REPORT("context.create.null", aclrtCreateContext(nullptr, 0));
    REPORT("context.create.bad_device", [] { aclrtContext c; return aclrtCreateContext(&c, 99); }());
    aclrtContext primary = nullptr;
    REPORT("context.get_current", aclrtGetCurrentContext(&primary));
    aclrtContext ctx = nullptr;
    REPORT("context.create", aclrtCreateContext(&ctx, 0));
    REPORT("context.set_current", aclrtSetCurrentContext(ctx));
    REPORT("context.set_current.null", aclrtSetCurrentContext(nullptr));
    REPORT("context.destroy.null", aclrtDestroyContext(nullptr));
    REPORT("context.destroy.garbage", aclrtDestroyContext(&ctx));
    REPORT("context.destroy.primary", aclrtDestroyContext(primary));
    REPORT("context.set_primary", aclrtSetCurrentContext(primary));
    REPORT("context.destroy", aclrtDestroyContext(ctx));
    REPORT("context.destroy.again", aclrtDestroyContext(ctx));

    // streams
    REPORT("stream.create.null", aclrtCreateStream(nullptr));
    aclrtStream stream = nullptr;
    REPORT("stream.create", aclrtCreateStream(&stream));
    REPORT("stream.destroy.null", aclrtDestroyStream(nullptr));
    REPORT("stream.destroy.garbage", aclrtDestroyStream(&stream));
    REPORT("stream.sync.null", aclrtSynchronizeStream(nullptr));
    REPORT("stream.sync", aclrtSynchronizeStream(stream));
    REPORT("stream.sync.garbage", aclrtSynchronizeStream(&stream));

    // §4.3 malloc
    void *dev_a = nullptr, *dev_b = nullptr;
    REPORT("malloc.zero", aclrtMalloc(&dev_a, 0, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("malloc.null_out", aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("malloc.ok", aclrtMalloc(&dev_a, 100, ACL_MEM_MALLOC_HUGE_FIRST));
    REPORT("malloc.ok2", aclrtMalloc(&dev_b, 256, ACL_MEM_MALLOC_NORMAL_ONLY));
    printf("malloc.align64 %d\n", static_cast<int>(reinterpret_cast<uintptr_t>(dev_a) % 64));
    printf("malloc.padded_gap %lld\n", static_cast<long long>(reinterpret_cast<char *>(dev_b) - reinterpret_cast<char *>(dev_a)));

    // §4.5 memcpy, in CANN's order
    std::vector<uint8_t> host(256), back(512, 0xEE);
    for (size_t i = 0; i < host.size(); i++) host[i] = static_cast<uint8_t>(i * 7 + 3);
    REPORT("memcpy.count0_nulls", aclrtMemcpy(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy.null_dst", aclrtMemcpy(nullptr, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy.null_src", aclrtMemcpy(dev_b, 16, nullptr, 16, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy.kind_inner_d2d", aclrtMemcpy(dev_b, 16, host.data(), 16, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE));
    REPORT("memcpy.kind_out_of_range", aclrtMemcpy(dev_b, 16, host.data(), 16, static_cast<aclrtMemcpyKind>(42)));
    REPORT("memcpy.dest_max0", aclrtMemcpy(dev_b, 0, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy.count_gt_dest_max", aclrtMemcpy(dev_b, 16, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy.same_pointer", aclrtMemcpy(dev_b, 16, dev_b, 16, ACL_MEMCPY_DEVICE_TO_DEVICE));
    REPORT("memcpy.h2d", aclrtMemcpy(dev_b, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy.d2d", aclrtMemcpy(dev_a, 100, dev_b, 100, ACL_MEMCPY_DEVICE_TO_DEVICE));
    REPORT("memcpy.d2h", aclrtMemcpy(back.data(), 256, dev_b, 256, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("memcpy.roundtrip_equal %d\n", memcmp(back.data(), host.data(), 256) == 0);
    std::vector<uint8_t> small(100);
    REPORT("memcpy.d2h_small", aclrtMemcpy(small.data(), 100, dev_a, 100, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("memcpy.d2d_equal %d\n", memcmp(small.data(), host.data(), 100) == 0);
    // A sample reading an fp16 buffer back as float: twice the allocation; works, gets reported.
    REPORT("memcpy.overread", aclrtMemcpy(back.data(), 512, dev_b, 512, ACL_MEMCPY_DEVICE_TO_HOST));
    REPORT("memcpy.default_kind", aclrtMemcpy(back.data(), 16, dev_b, 16, ACL_MEMCPY_DEFAULT));
    REPORT("memcpy.kind_mismatch", aclrtMemcpy(back.data(), 16, host.data(), 16, ACL_MEMCPY_DEVICE_TO_HOST));

    // memset
    REPORT("memset.count0", aclrtMemset(nullptr, 0, 0, 0));
    REPORT("memset.null", aclrtMemset(nullptr, 16, 0, 16));
    REPORT("memset.count_gt_max", aclrtMemset(dev_b, 16, 0, 32));
    REPORT("memset.ok", aclrtMemset(dev_b, 256, 0x5A, 256));
    aclrtMemcpy(back.data(), 256, dev_b, 256, ACL_MEMCPY_DEVICE_TO_HOST);
    printf("memset.value %d\n", back[0] == 0x5A && back[255] == 0x5A);

    // async copies and memset on a stream
    REPORT("memcpy_async.count0", aclrtMemcpyAsync(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    REPORT("memcpy_async.null", aclrtMemcpyAsync(nullptr, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    REPORT("memcpy_async.bad_kind", aclrtMemcpyAsync(dev_b, 16, host.data(), 16, static_cast<aclrtMemcpyKind>(9), stream));
    REPORT("memcpy_async.h2d", aclrtMemcpyAsync(dev_b, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    REPORT("memset_async.ok", aclrtMemsetAsync(dev_a, 100, 0x11, 100, stream));
    REPORT("memcpy_async.bad_stream", aclrtMemcpyAsync(dev_b, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE, &stream));
    REPORT("stream.sync_after_async", aclrtSynchronizeStream(stream));
    aclrtMemcpy(back.data(), 256, dev_b, 256, ACL_MEMCPY_DEVICE_TO_HOST);
    printf("memcpy_async.equal %d\n", memcmp(back.data(), host.data(), 256) == 0);

    // events
    aclrtEvent start = nullptr, end = nullptr;
    REPORT("event.create.null", aclrtCreateEvent(nullptr));
    REPORT("event.create", aclrtCreateEvent(&start));
    REPORT("event.create_with_flag", aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE));
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    REPORT("event.query.unrecorded", aclrtQueryEventStatus(start, &st));
    printf("event.query.unrecorded.value %d\n", static_cast<int>(st));
    float ms = -1;
    REPORT("event.elapsed.unrecorded", aclrtEventElapsedTime(&ms, start, end));
    REPORT("event.record", aclrtRecordEvent(start, stream));
    aclrtMemcpyAsync(dev_b, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    REPORT("event.record_end", aclrtRecordEvent(end, stream));
    REPORT("event.sync", aclrtSynchronizeEvent(end));
    REPORT("event.query", aclrtQueryEventStatus(end, &st));
    printf("event.query.value %d\n", static_cast<int>(st));
    REPORT("event.elapsed", aclrtEventElapsedTime(&ms, start, end));
    printf("event.elapsed.nonnegative %d\n", ms >= 0.0f);
    REPORT("event.wait", aclrtStreamWaitEvent(stream, end));
    REPORT("event.wait.default_stream", aclrtStreamWaitEvent(nullptr, end));
    REPORT("event.reset", aclrtResetEvent(start, stream));
    REPORT("event.destroy.null", aclrtDestroyEvent(nullptr));
    REPORT("event.destroy.garbage", aclrtDestroyEvent(&start));
    REPORT("event.destroy", aclrtDestroyEvent(start));
    aclrtDestroyEvent(end);
    REPORT("device.synchronize", aclrtSynchronizeDevice());

    // §4.4 free
    REPORT("free.null", aclrtFree(nullptr));
    REPORT("free.host_pointer", aclrtFree(host.data()));
    REPORT("free.ok", aclrtFree(dev_a));
    REPORT("free.double", aclrtFree(dev_a));
    REPORT("memcpy.use_after_free", aclrtMemcpy(dev_a, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE));

    // host memory and memory info
    void *pinned = nullptr;
    REPORT("malloc_host.zero", aclrtMallocHost(&pinned, 0));
    REPORT("malloc_host.ok", aclrtMallocHost(&pinned, 4096));
    memset(pinned, 1, 4096);
    REPORT("free_host.null", aclrtFreeHost(nullptr));
    REPORT("free_host.ok", aclrtFreeHost(pinned));
    size_t free_bytes = 0, total = 0;
    REPORT("mem_info", aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total));
    printf("mem_info.consistent %d\n", free_bytes <= total && total > 0);

    // error messages and misc
    aclrtMalloc(&dev_a, 0, ACL_MEM_MALLOC_HUGE_FIRST);
    const char *msg = aclGetRecentErrMsg();
    printf("errmsg.after_error %d\n", msg != nullptr && strstr(msg, "100000") != nullptr);
    printf("errmsg.soc %s\n", aclrtGetSocName());
    int32_t major = 0, minor = 0, patch = 0;
    REPORT("version", aclrtGetVersion(&major, &minor, &patch));

    REPORT("stream.destroy", aclrtDestroyStream(stream));
    REPORT("stream.destroy.again", aclrtDestroyStream(stream));
    aclrtFree(dev_b);
    REPORT("device.reset", aclrtResetDevice(0));
    REPORT("finalize", aclFinalize());
    REPORT("finalize.repeat", aclFinalize());
    REPORT("init.after_finalize", aclInit(nullptr));
    REPORT("finalize.second_cycle", aclFinalize());
    return 0;
}
