// The runtime functions serving engines and frameworks call most, beyond the core: 2D copies,
// stream facts, device facts, peer access, versions and data buffers.
// Prints "<rule> <code>" lines (and "<rule>_value <v>" lines for what a call wrote).
#include <stdint.h>
#include <string.h>

#include <vector>

#include "common.h"

#define VALUE(rule, v) printf("%s_value %lld\n", rule, static_cast<long long>(v))

static void Copies2d(aclrtStream stream) {
    // 5 rows of 24 bytes, host pitch 40, device pitch 64: the gaps keep their bytes.
    const size_t width = 24, height = 5, spitch = 40, dpitch = 64;
    std::vector<uint8_t> src(spitch * height), back(dpitch * height, 0xEE);
    for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>(i * 7 + 3);
    void *dev = nullptr;
    aclrtMalloc(&dev, dpitch * height, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemset(dev, dpitch * height, 0xAB, dpitch * height);
    REPORT("memcpy2d_h2d", aclrtMemcpy2d(dev, dpitch, src.data(), spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy2d_back", aclrtMemcpy(back.data(), back.size(), dev, back.size(), ACL_MEMCPY_DEVICE_TO_HOST));
    int exact = 1;
    for (size_t r = 0; r < height; r++)
        for (size_t c = 0; c < dpitch; c++)
            exact &= back[r * dpitch + c] == (c < width ? src[r * spitch + c] : 0xAB);
    VALUE("memcpy2d_bytes_exact", exact);
    std::vector<uint8_t> out(spitch * height, 0x11);
    REPORT("memcpy2d_async_d2h",
           aclrtMemcpy2dAsync(out.data(), spitch, dev, dpitch, width, height, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    aclrtSynchronizeStream(stream);
    exact = 1;
    for (size_t r = 0; r < height; r++)
        for (size_t c = 0; c < spitch; c++) exact &= out[r * spitch + c] == (c < width ? src[r * spitch + c] : 0x11);
    VALUE("memcpy2d_async_bytes_exact", exact);
    REPORT("memcpy2d_width_over_pitch",
           aclrtMemcpy2d(dev, 16, src.data(), spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy2d_zero_height", aclrtMemcpy2d(dev, dpitch, src.data(), spitch, width, 0, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy2d_null", aclrtMemcpy2d(nullptr, dpitch, src.data(), spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE));
    REPORT("memcpy2d_kind_d2d", aclrtMemcpy2d(dev, dpitch, dev, dpitch, width, 1, ACL_MEMCPY_DEVICE_TO_DEVICE));
    aclrtFree(dev);
}

static void Streams(aclrtStream stream) {
    aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
    void *dev = nullptr;
    const size_t big = size_t(64) << 20;
    aclrtMalloc(&dev, big, ACL_MEM_MALLOC_HUGE_FIRST);
    for (int i = 0; i < 16; i++) aclrtMemsetAsync(dev, big, i, big, stream);
    REPORT("stream_query_busy", aclrtStreamQuery(stream, &status));
    VALUE("stream_query_busy", status);
    aclrtSynchronizeStream(stream);
    REPORT("stream_query_idle", aclrtStreamQuery(stream, &status));
    VALUE("stream_query_idle", status);
    REPORT("stream_query_null_status", aclrtStreamQuery(stream, nullptr));
    aclrtFree(dev);
    int32_t id1 = -1, id2 = -1;
    aclrtStream other = nullptr;
    aclrtCreateStream(&other);
    REPORT("stream_get_id", aclrtStreamGetId(stream, &id1));
    aclrtStreamGetId(other, &id2);
    VALUE("stream_ids_differ", id1 != id2 && id1 >= 0 && id2 >= 0);
    aclrtDestroyStream(other);
    REPORT("stream_get_id_destroyed", aclrtStreamGetId(other, &id2));
    REPORT("failure_mode_stop", aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE));
    REPORT("failure_mode_bad", aclrtSetStreamFailureMode(stream, 7));
    int32_t least = -1, greatest = -1;
    REPORT("priority_range", aclrtDeviceGetStreamPriorityRange(&least, &greatest));
    VALUE("priority_least", least);
    VALUE("priority_greatest", greatest);
    uint32_t available = 0, fewer = 0;
    REPORT("streams_available", aclrtGetStreamAvailableNum(&available));
    VALUE("streams_available_positive", available > 0);
    aclrtStream extra = nullptr;
    aclrtCreateStream(&extra);
    aclrtGetStreamAvailableNum(&fewer);
    VALUE("streams_available_counts_down", available - fewer);
    aclrtDestroyStream(extra);
    REPORT("op_wait_timeout", aclrtSetOpWaitTimeout(100));
}

static void Devices() {
    int64_t value = 0;
    REPORT("device_info_aicore", aclrtGetDeviceInfo(0, ACL_DEV_ATTR_AICORE_CORE_NUM, &value));
    VALUE("device_info_aicore", value);
    REPORT("device_info_vector", aclrtGetDeviceInfo(0, ACL_DEV_ATTR_VECTOR_CORE_NUM, &value));
    VALUE("device_info_vector", value);
    REPORT("device_info_bad_device", aclrtGetDeviceInfo(99, ACL_DEV_ATTR_AICORE_CORE_NUM, &value));
    REPORT("device_info_null", aclrtGetDeviceInfo(0, ACL_DEV_ATTR_AICORE_CORE_NUM, nullptr));
    int32_t logic = -1;
    REPORT("logic_by_user", aclrtGetLogicDevIdByUserDevId(1, &logic));
    VALUE("logic_by_user", logic);
    REPORT("logic_by_user_bad", aclrtGetLogicDevIdByUserDevId(99, &logic));
    aclrtFloatOverflowMode mode = ACL_RT_OVERFLOW_MODE_UNDEF;
    REPORT("sat_mode_set", aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN));
    REPORT("sat_mode_get", aclrtGetDeviceSatMode(&mode));
    VALUE("sat_mode_get", mode);
    int64_t opt = -1;
    REPORT("sys_param_set", aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1));
    REPORT("sys_param_get", aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &opt));
    VALUE("sys_param_get", opt);
}

static void Peers() {
    int32_t can = -1, state = -1;
    REPORT("peer_can_access", aclrtDeviceCanAccessPeer(&can, 0, 1));
    VALUE("peer_can_access", can);
    REPORT("peer_can_access_same", aclrtDeviceCanAccessPeer(&can, 0, 0));
    REPORT("peer_can_access_absent", aclrtDeviceCanAccessPeer(&can, 0, 9));
    REPORT("peer_enable_flags", aclrtDeviceEnablePeerAccess(1, 1));
    REPORT("peer_enable_self", aclrtDeviceEnablePeerAccess(0, 0));
    REPORT("peer_enable", aclrtDeviceEnablePeerAccess(1, 0));
    aclrtDevicePeerAccessStatus(0, 1, &state);
    VALUE("peer_status_enabled", state);
    REPORT("peer_disable", aclrtDeviceDisablePeerAccess(1));
    aclrtDevicePeerAccessStatus(0, 1, &state);
    VALUE("peer_status_disabled", state);
}

static void VersionsAndBuffers() {
    int32_t major = 0, minor = 0, patch = 0, num = 0;
    aclrtGetVersion(&major, &minor, &patch);
    VALUE("acl_version", major * 10000 + minor * 100 + patch);
    char runtime[] = "runtime", missing[] = "no-such-package";
    char text[ACL_PKG_VERSION_MAX_SIZE] = {0};
    REPORT("version_num", aclsysGetVersionNum(runtime, &num));
    VALUE("version_num", num);
    REPORT("version_str", aclsysGetVersionStr(runtime, text));
    VALUE("version_str_is_8_5_0", strcmp(text, "8.5.0") == 0);
    REPORT("version_missing_package", aclsysGetVersionNum(missing, &num));
    REPORT("version_null", aclsysGetVersionNum(runtime, nullptr));
    char data[64];
    aclDataBuffer *buffer = aclCreateDataBuffer(data, sizeof data);
    VALUE("data_buffer_addr_ok", aclGetDataBufferAddr(buffer) == data);
    VALUE("data_buffer_size", aclGetDataBufferSizeV2(buffer));
    REPORT("data_buffer_update", aclUpdateDataBuffer(buffer, data + 8, 16));
    VALUE("data_buffer_size_v1", aclGetDataBufferSize(buffer));
    REPORT("data_buffer_destroy", aclDestroyDataBuffer(buffer));
    REPORT("data_buffer_destroy_null", aclDestroyDataBuffer(nullptr));
    VALUE("data_buffer_addr_null", aclGetDataBufferAddr(nullptr) == nullptr);
}

static void Notifies(aclrtStream stream) {
    aclrtStream waiter = nullptr;
    aclrtCreateStream(&waiter);
    aclrtNotify notify = nullptr;
    REPORT("notify_create_bad_flag", aclrtCreateNotify(&notify, 7));
    REPORT("notify_create_null", aclrtCreateNotify(nullptr, ACL_NOTIFY_DEFAULT));
    REPORT("notify_create", aclrtCreateNotify(&notify, ACL_NOTIFY_DEFAULT));
    uint32_t id = 99999;
    REPORT("notify_get_id", aclrtGetNotifyId(notify, &id));
    VALUE("notify_id_set", id != 99999);
    // The waiter stream copies a device byte only after `stream` has set it and recorded the notify.
    void *dev = nullptr;
    uint8_t host = 0;
    aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemset(dev, 64, 0, 64);
    REPORT("notify_wait", aclrtWaitAndResetNotify(notify, waiter, 0));
    aclrtMemcpyAsync(&host, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST, waiter);
    aclrtMemsetAsync(dev, 64, 0x5A, 64, stream);
    REPORT("notify_record", aclrtRecordNotify(notify, stream));
    aclrtSynchronizeStream(waiter);
    VALUE("notify_ordered", host == 0x5A);
    REPORT("notify_wait_timeout", aclrtWaitAndResetNotify(notify, waiter, 1));
    REPORT("notify_wait_timeout_sync", aclrtSynchronizeStream(waiter));
    // A failed task (the wait above timed out) stops a stream in ACL_STOP_ON_FAILURE mode: the
    // memset queued after another failing wait does not run; in the default mode it does.
    aclrtMemset(dev, 64, 0, 64);
    aclrtSetStreamFailureMode(waiter, ACL_STOP_ON_FAILURE);
    aclrtWaitAndResetNotify(notify, waiter, 1);
    aclrtMemsetAsync(dev, 64, 0x77, 64, waiter);
    REPORT("stop_on_failure_sync", aclrtSynchronizeStream(waiter));
    aclrtMemcpy(&host, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST);
    VALUE("stop_on_failure_skipped", host == 0);
    aclrtSetStreamFailureMode(waiter, ACL_CONTINUE_ON_FAILURE);
    aclrtWaitAndResetNotify(notify, waiter, 1);
    aclrtMemsetAsync(dev, 64, 0x77, 64, waiter);
    REPORT("continue_on_failure_sync", aclrtSynchronizeStream(waiter));
    aclrtMemcpy(&host, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST);
    VALUE("continue_on_failure_ran", host == 0x77);
    REPORT("notify_destroy", aclrtDestroyNotify(notify));
    REPORT("notify_destroy_again", aclrtDestroyNotify(notify));
    REPORT("notify_record_destroyed", aclrtRecordNotify(notify, stream));
    REPORT("notify_destroy_null", aclrtDestroyNotify(nullptr));
    aclrtFree(dev);
    aclrtDestroyStream(waiter);
}

static void Batches(aclrtStream stream) {
    std::vector<uint8_t> a(100, 1), b(50, 2), backA(100, 0), backB(50, 0);
    void *da = nullptr, *db = nullptr;
    aclrtMalloc(&da, 100, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&db, 50, ACL_MEM_MALLOC_HUGE_FIRST);
    void *dsts[2] = {da, db}, *srcs[2] = {a.data(), b.data()};
    size_t maxs[2] = {100, 50}, sizes[2] = {100, 50}, attrIndex[1] = {0}, fail = 12345;
    aclrtMemcpyBatchAttr attr = {};
    attr.dstLoc.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    attr.srcLoc.type = ACL_MEM_LOCATION_TYPE_HOST;
    REPORT("batch", aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 2, &attr, attrIndex, 1, &fail));
    aclrtMemcpy(backA.data(), 100, da, 100, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtMemcpy(backB.data(), 50, db, 50, ACL_MEMCPY_DEVICE_TO_HOST);
    VALUE("batch_bytes_exact", backA == a && backB == b);
    VALUE("batch_fail_index_none", fail == SIZE_MAX);
    size_t small[2] = {100, 10};
    REPORT("batch_dest_max_small", aclrtMemcpyBatch(dsts, small, srcs, sizes, 2, &attr, attrIndex, 1, &fail));
    REPORT("batch_zero", aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 0, &attr, attrIndex, 1, &fail));
    REPORT("batch_null_fail_index", aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 2, &attr, attrIndex, 1, nullptr));
    attr.rsv[3] = 1;
    REPORT("batch_rsv", aclrtMemcpyBatch(dsts, maxs, srcs, sizes, 2, &attr, attrIndex, 1, &fail));
    attr.rsv[3] = 0;
    void *badSrcs[2] = {a.data(), nullptr};
    REPORT("batch_second_bad", aclrtMemcpyBatch(dsts, maxs, badSrcs, sizes, 2, &attr, attrIndex, 1, &fail));
    VALUE("batch_fail_index", fail);
    REPORT("batch_async", aclrtMemcpyBatchAsync(dsts, maxs, srcs, sizes, 2, &attr, attrIndex, 1, &fail, stream));
    REPORT("batch_async_sync", aclrtSynchronizeStream(stream));
    aclrtFree(da);
    aclrtFree(db);
}

int main() {
    aclrtStream stream = nullptr;
    if (SetUp(&stream) != 0) return 1;
    Copies2d(stream);
    Streams(stream);
    Devices();
    Peers();
    VersionsAndBuffers();
    Notifies(stream);
    Batches(stream);
    TearDown(stream);
    printf("done 0\n");
    return 0;
}
