// Virtual memory: a reserved range, physical memory mapped into it, an operator (ScatterPaKvCache)
// writing its cache there, the bytes read back through the mapping, then unmapped and released.
// Prints "<rule> <code>" lines and "<rule>_value <v>" lines.
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include <vector>

#include "common.h"

#define VALUE(rule, v) printf("%s_value %lld\n", rule, static_cast<long long>(v))

int main() {
    aclrtStream stream = nullptr;
    if (SetUp(&stream) != 0) return 1;
    aclrtPhysicalMemProp prop = {};
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t grain = 0;
    REPORT("granularity", aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &grain));
    VALUE("granularity", grain);

    void *va = nullptr, *other = nullptr;
    REPORT("reserve_size_zero", aclrtReserveMemAddress(&va, 0, 0, nullptr, 0));
    REPORT("reserve_flags_bad", aclrtReserveMemAddress(&va, 4 * grain, 0, nullptr, 2));
    REPORT("reserve_alignment", aclrtReserveMemAddress(&va, 4 * grain, 4096, nullptr, 0));
    REPORT("reserve_expect_unaligned", aclrtReserveMemAddress(&va, 4 * grain, 0, (void *)0x1000, 0));
    REPORT("reserve_null", aclrtReserveMemAddress(nullptr, 4 * grain, 0, nullptr, 0));
    REPORT("reserve", aclrtReserveMemAddress(&va, 4 * grain, 0, nullptr, 1));

    aclrtDrvMemHandle handle = nullptr, second = nullptr;
    REPORT("physical_size_zero", aclrtMallocPhysical(&handle, 0, &prop, 0));
    REPORT("physical_flags", aclrtMallocPhysical(&handle, grain, &prop, 1));
    prop.memAttr = ACL_DDR_MEM_HUGE;
    REPORT("physical_ddr_on_device", aclrtMallocPhysical(&handle, grain, &prop, 0));
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
    REPORT("physical_unregistered", aclrtMallocPhysical(&handle, grain, &prop, 0));
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 9;
    REPORT("physical_bad_device", aclrtMallocPhysical(&handle, grain, &prop, 0));
    prop.location.id = 0;
    REPORT("physical_null_prop", aclrtMallocPhysical(&handle, grain, nullptr, 0));
    REPORT("physical", aclrtMallocPhysical(&handle, grain, &prop, 0));
    REPORT("physical_second", aclrtMallocPhysical(&second, grain, &prop, 0));

    char *base = static_cast<char *>(va);
    REPORT("map_offset", aclrtMapMem(base, grain, 64, handle, 0));
    REPORT("map_size_mismatch", aclrtMapMem(base, 2 * grain, 0, handle, 0));
    REPORT("map_misaligned", aclrtMapMem(base + 4096, grain, 0, handle, 0));
    REPORT("map_outside", aclrtMapMem(base + 4 * grain, grain, 0, handle, 0));
    REPORT("map_flags", aclrtMapMem(base, grain, 0, handle, 1));
    REPORT("map", aclrtMapMem(base + grain, grain, 0, handle, 0));
    REPORT("map_overlap", aclrtMapMem(base + grain, grain, 0, second, 0));
    REPORT("map_second", aclrtMapMem(base + 2 * grain, grain, 0, second, 0));
    REPORT("free_physical_mapped", aclrtFreePhysical(handle));
    REPORT("release_mapped", aclrtReleaseMemAddress(va));

    // A key cache of [blocks=2, blockSize=4, heads=1, D=16] fp16 living across the two mappings'
    // boundary (it starts 64 bytes before the second one), one token scattered into slot 5.
    const int64_t blocks = 2, block = 4, d = 16;
    void *cache = base + 2 * grain - 64;
    std::vector<uint16_t> zeros(blocks * block * d, 0);
    REPORT("memcpy_into_mapping",
           aclrtMemcpy(cache, zeros.size() * 2, zeros.data(), zeros.size() * 2, ACL_MEMCPY_HOST_TO_DEVICE));
    std::vector<int64_t> cacheShape = {blocks, block, 1, d};
    std::vector<int64_t> strides = ContiguousStrides(cacheShape);
    aclTensor *keyCache = aclCreateTensor(cacheShape.data(), 4, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND,
                                          cacheShape.data(), 4, cache);
    aclTensor *valueCache = aclCreateTensor(cacheShape.data(), 4, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND,
                                            cacheShape.data(), 4, cache);
    std::vector<uint16_t> row = LcgFp16(d, 7), back(zeros.size(), 0xFFFF);
    {
    std::vector<int32_t> slot = {5};
    DeviceTensor key, slots;
    key.Create(row, {1, 1, d}, ACL_FLOAT16);
    slots.Create(slot, {1}, ACL_INT32);
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnScatterPaKvCacheGetWorkspaceSize(key.tensor, keyCache, slots.tensor, key.tensor, valueCache, nullptr,
                                                    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &size,
                                                    &executor);
    REPORT("scatter_into_mapping", RunPhase2(stream, ret, size, executor, aclnnScatterPaKvCache));
    }
    REPORT("memcpy_from_mapping",
           aclrtMemcpy(back.data(), back.size() * 2, cache, back.size() * 2, ACL_MEMCPY_DEVICE_TO_HOST));
    int exact = 1;
    for (int64_t i = 0; i < blocks * block * d; i++) exact &= back[i] == (i / d == 5 ? row[i % d] : 0);
    VALUE("scatter_bytes_exact", exact);
    aclDestroyTensor(keyCache);
    aclDestroyTensor(valueCache);

    REPORT("unmap", aclrtUnmapMem(base + grain));
    REPORT("unmap_again", aclrtUnmapMem(base + grain));
    REPORT("memcpy_unmapped", aclrtMemcpy(back.data(), 64, base + grain, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    REPORT("unmap_second", aclrtUnmapMem(base + 2 * grain));
    REPORT("free_physical", aclrtFreePhysical(handle));
    REPORT("free_physical_again", aclrtFreePhysical(handle));
    REPORT("free_physical_second", aclrtFreePhysical(second));
    REPORT("release", aclrtReleaseMemAddress(va));
    REPORT("release_again", aclrtReleaseMemAddress(va));
    REPORT("release_null", aclrtReleaseMemAddress(nullptr));
    (void)other;

    // Host memory registered for the device: copies use its device address as device memory.
    std::vector<uint8_t> pinned(8192, 3), out(64, 0);
    void *devView = nullptr, *inner = nullptr, *devBuf = nullptr;
    REPORT("host_register_size_zero", aclrtHostRegister(pinned.data(), 0, ACL_HOST_REGISTER_MAPPED, &devView));
    REPORT("host_register_null", aclrtHostRegister(nullptr, 64, ACL_HOST_REGISTER_MAPPED, &devView));
    REPORT("host_register_bad_type",
           aclrtHostRegister(pinned.data(), 64, static_cast<aclrtHostRegisterType>(3), &devView));
    REPORT("host_register", aclrtHostRegister(pinned.data(), pinned.size(), ACL_HOST_REGISTER_MAPPED, &devView));
    REPORT("host_register_twice", aclrtHostRegister(pinned.data() + 64, 64, ACL_HOST_REGISTER_MAPPED, &inner));
    REPORT("host_device_pointer", aclrtHostGetDevicePointer(pinned.data() + 100, &inner, 0));
    VALUE("host_device_pointer_offset", static_cast<char *>(inner) - static_cast<char *>(devView));
    REPORT("host_device_pointer_flag", aclrtHostGetDevicePointer(pinned.data(), &inner, 1));
    aclrtMalloc(&devBuf, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    pinned[100] = 42;
    REPORT("copy_from_registered", aclrtMemcpy(devBuf, 64, inner, 64, ACL_MEMCPY_DEVICE_TO_DEVICE));
    aclrtMemcpy(out.data(), 64, devBuf, 64, ACL_MEMCPY_DEVICE_TO_HOST);
    VALUE("registered_bytes_seen", out[0] == 42 && out[1] == 3);
    REPORT("memset_registered", aclrtMemset(devView, 16, 9, 16));
    VALUE("registered_bytes_written", pinned[0] == 9 && pinned[15] == 9 && pinned[16] == 3);
    REPORT("cmo_prefetch", aclrtCmoAsync(devBuf, 64, ACL_RT_CMO_TYPE_PREFETCH, stream));
    REPORT("cmo_null", aclrtCmoAsync(nullptr, 64, ACL_RT_CMO_TYPE_PREFETCH, stream));
    REPORT("cmo_size_zero", aclrtCmoAsync(devBuf, 0, ACL_RT_CMO_TYPE_PREFETCH, stream));
    REPORT("cmo_host", aclrtCmoAsync(out.data(), 64, ACL_RT_CMO_TYPE_FLUSH, stream));
    REPORT("cmo_sync", aclrtSynchronizeStream(stream));
    REPORT("host_unregister", aclrtHostUnregister(pinned.data()));
    REPORT("host_unregister_again", aclrtHostUnregister(pinned.data()));
    REPORT("copy_from_unregistered", aclrtMemcpy(devBuf, 64, inner, 64, ACL_MEMCPY_DEVICE_TO_DEVICE));
    aclrtFree(devBuf);
    TearDown(stream);
    printf("done 0\n");
    return 0;
}
