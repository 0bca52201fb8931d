// The bounds of copies, memsets, tensor views and tensor sizes, one case per process:
//   bounds <case> <how>     how = sync | async | thread
// `async` makes the call with aclrtMemcpyAsync/aclrtMemsetAsync on a stream and synchronises;
// `thread` makes it from a second host thread. Prints "<name> <code>", "<name>.stage 0|1" (0: the
// code came from the call, 1: from the synchronisation) and "changed.<buffer> <bytes>" for every
// buffer whose bytes are watched; tests/robustness/test_bounds.py holds the expectations.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

namespace {
const size_t TiB = size_t(1) << 40;
const size_t MiB = size_t(1) << 20;
aclrtStream g_stream = nullptr;
aclrtContext g_context = nullptr;
std::string g_how;

// A call made the way `how` says; prints its code and where the code came from.
void Report(const char *name, const std::function<int(aclrtStream)> &sync_call,
            const std::function<int(aclrtStream)> &async_call) {
    int code = 0, stage = 0;
    if (g_how == "async") {
        code = async_call(g_stream);
        if (code == 0) {
            code = aclrtSynchronizeStream(g_stream);
            stage = 1;
        }
    } else if (g_how == "thread") {
        std::thread([&] {
            aclrtSetCurrentContext(g_context);
            code = sync_call(g_stream);
        }).join();
    } else {
        code = sync_call(g_stream);
    }
    printf("%s %d\n%s.stage %d\n", name, code, name, code == 0 ? 0 : stage);
}

void Memcpy(const char *name, void *dst, size_t dest_max, const void *src, size_t count, aclrtMemcpyKind kind) {
    Report(name, [=](aclrtStream) { return aclrtMemcpy(dst, dest_max, src, count, kind); },
           [=](aclrtStream s) { return aclrtMemcpyAsync(dst, dest_max, src, count, kind, s); });
}

void Memset(const char *name, void *dst, size_t max_count, int value, size_t count) {
    Report(name, [=](aclrtStream) { return aclrtMemset(dst, max_count, value, count); },
           [=](aclrtStream s) { return aclrtMemsetAsync(dst, max_count, value, count, s); });
}

// A device block filled with a pattern, whose bytes can be compared later.
struct Watched {
    const char *name;
    void *addr = nullptr;
    size_t size;
    std::vector<uint8_t> pattern;

    Watched(const char *n, size_t bytes, uint8_t seed) : name(n), size(bytes), pattern(bytes) {
        for (size_t i = 0; i < bytes; i++) pattern[i] = uint8_t(1 + (seed + i * 7) % 255);   // never 0
        if (aclrtMalloc(&addr, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != 0 ||
            aclrtMemcpy(addr, bytes, pattern.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) != 0) {
            printf("FAILED to set up %s\n", n);
        }
    }
    ~Watched() { aclrtFree(addr); }
    uint8_t *bytes() const { return static_cast<uint8_t *>(addr); }

    // How many bytes differ from the pattern (read back with a plain, in-bounds copy).
    void PrintChanged() const {
        std::vector<uint8_t> now(size);
        aclrtMemcpy(now.data(), size, addr, size, ACL_MEMCPY_DEVICE_TO_HOST);
        size_t changed = 0;
        for (size_t i = 0; i < size; i++) changed += now[i] != pattern[i];
        printf("changed.%s %zu\n", name, changed);
    }
};

void PrintHostChanged(const char *name, const std::vector<uint8_t> &buf, uint8_t fill) {
    size_t changed = 0;
    for (uint8_t b : buf) changed += b != fill;
    printf("changed.%s %zu\n", name, changed);
}

// -- copies and memsets far beyond their allocation -------------------------------------------------
int MemsetHuge() {
    Watched a("a", 4096, 1), b("b", 4096, 2);
    Memset("memset", a.addr, TiB, 0x5A, TiB);
    a.PrintChanged(); b.PrintChanged();
    return 0;
}

int MemcpyHugeD2D() {
    Watched a("a", 4096, 1), b("b", 4096, 2);
    Memcpy("memcpy", b.addr, TiB, a.addr, TiB, ACL_MEMCPY_DEVICE_TO_DEVICE);
    a.PrintChanged(); b.PrintChanged();
    return 0;
}

int MemcpySizeMax() {
    Watched a("a", 4096, 1);
    std::vector<uint8_t> host(4096, 0);
    Memcpy("h2d", a.addr, SIZE_MAX, host.data(), SIZE_MAX, ACL_MEMCPY_HOST_TO_DEVICE);
    Memcpy("d2h", host.data(), SIZE_MAX, a.addr, SIZE_MAX, ACL_MEMCPY_DEVICE_TO_HOST);
    std::vector<uint8_t> other(4096, 0);
    Memcpy("h2h", other.data(), SIZE_MAX, host.data(), SIZE_MAX, ACL_MEMCPY_HOST_TO_HOST);
    a.PrintChanged();
    PrintHostChanged("host", host, 0);
    PrintHostChanged("other", other, 0);
    return 0;
}

// An address range that wraps around the end of the address space.
int MemcpyWraps() {
    Watched a("a", 4096, 1);
    std::vector<uint8_t> host(4096, 0);
    size_t wrap = SIZE_MAX - reinterpret_cast<uintptr_t>(a.addr) + 4097;   // ends at a + 4096 modulo 2^64
    Memcpy("d2h", host.data(), wrap, a.addr, wrap, ACL_MEMCPY_DEVICE_TO_HOST);
    Memset("memset", a.addr, wrap, 0, wrap);
    a.PrintChanged();
    PrintHostChanged("host", host, 0);
    return 0;
}

// -- host ranges that are unmapped or read-only ------------------------------------------------------
const size_t kPage = sysconf(_SC_PAGESIZE);

// Fresh zeroed pages of host memory, to unmap or protect.
uint8_t *HostPages(size_t count) {
    return static_cast<uint8_t *>(mmap(nullptr, count * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                       -1, 0));
}

int HostUnmapped() {
    Watched a("a", 8192, 1);
    uint8_t *map = HostPages(2);
    munmap(map + kPage, kPage);                 // the second page is gone
    Memcpy("h2d_source_unmapped", a.addr, 2 * kPage, map, 2 * kPage, ACL_MEMCPY_HOST_TO_DEVICE);
    Memcpy("d2h_dest_unmapped", map, 2 * kPage, a.addr, 2 * kPage, ACL_MEMCPY_DEVICE_TO_HOST);
    a.PrintChanged();
    PrintHostChanged("host", std::vector<uint8_t>(map, map + kPage), 0);
    return 0;
}

int HostReadOnly() {
    Watched a("a", 4096, 1);
    uint8_t *map = HostPages(1);
    mprotect(map, kPage, PROT_READ);
    Memcpy("d2h_dest_read_only", map, 64, a.addr, 64, ACL_MEMCPY_DEVICE_TO_HOST);
    Memcpy("h2d_source_read_only", a.addr, 64, map, 64, ACL_MEMCPY_HOST_TO_DEVICE);   // reading it is fine
    PrintHostChanged("host", std::vector<uint8_t>(map, map + kPage), 0);
    return 0;
}

// -- the edge of the mapped page, neighbouring memory, freed pages -----------------------------------
// The first allocation starts the arena, so its 2 MiB page ends 2 MiB after it.
int PageEdge() {
    Watched a("a", 4096, 1);
    std::vector<uint8_t> host(2 * MiB + 1, 0);
    Memcpy("d2h_to_page_end", host.data(), 2 * MiB, a.addr, 2 * MiB, ACL_MEMCPY_DEVICE_TO_HOST);
    Memcpy("d2h_past_page_end", host.data(), 2 * MiB + 1, a.addr, 2 * MiB + 1, ACL_MEMCPY_DEVICE_TO_HOST);
    Memset("memset_past_page_end", a.addr, 2 * MiB + 1, 0, 2 * MiB + 1);
    a.PrintChanged();
    PrintHostChanged("host", host, 0);
    return 0;
}

// A block's padded size is ALIGN_UP(256, 32) + 32 = 288 and the next block starts 64-byte aligned,
// at +320: 512 bytes from a reach 192 bytes into b.
int Neighbour() {
    Watched a("a", 256, 1), b("b", 256, 2);
    std::vector<uint8_t> host(512, 0);
    Memcpy("d2h_overread", host.data(), 512, a.addr, 512, ACL_MEMCPY_DEVICE_TO_HOST);
    PrintHostChanged("host", host, 0);
    printf("overread.a_then_b %d\n", memcmp(host.data(), a.pattern.data(), 256) == 0 &&
                                         memcmp(host.data() + 320, b.pattern.data(), 192) == 0);
    Memset("memset_overrun", a.addr, 512, 0, 512);
    b.PrintChanged();
    return 0;
}

// A block alone in its pages: once freed, its pages are unmapped; a small block keeps them mapped.
int FreedPage() {
    void *alone = nullptr;
    aclrtMalloc(&alone, 4 * MiB, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtFree(alone);
    std::vector<uint8_t> host(64, 0);
    Memcpy("d2h_freed_page", host.data(), 64, alone, 64, ACL_MEMCPY_DEVICE_TO_HOST);
    Memset("memset_freed_page", alone, 64, 0, 64);
    PrintHostChanged("host", host, 0);
    return 0;
}

// -- tensors: negative offsets and impossible sizes ---------------------------------------------------
aclTensor *Tensor(const std::vector<int64_t> &shape, void *addr, int64_t offset = 0,
                  aclDataType dtype = ACL_FLOAT16) {
    std::vector<int64_t> strides = ContiguousStrides(shape);
    return aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), offset, ACL_FORMAT_ND,
                           shape.data(), shape.size(), addr);
}

// ScatterPaKvCache with key/value [4, 2, 16] and caches [2, 4, 2, 16]: the key's view offset moved.
int RunScatter(const char *name, int64_t key_offset) {
    Watched key("key", 4 * 2 * 16 * 2, 1), value("value", 4 * 2 * 16 * 2, 2);
    Watched cache("cache", 2 * 4 * 2 * 16 * 2, 3), vcache("vcache", 2 * 4 * 2 * 16 * 2, 4);
    std::vector<int32_t> slots_host = {0, 1, 2, 3};
    void *slots = nullptr;
    aclrtMalloc(&slots, 16, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(slots, 16, slots_host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE);
    aclTensor *k = Tensor({4, 2, 16}, key.addr, key_offset), *v = Tensor({4, 2, 16}, value.addr);
    aclTensor *kc = Tensor({2, 4, 2, 16}, cache.addr), *vc = Tensor({2, 4, 2, 16}, vcache.addr);
    aclTensor *s = Tensor({4}, slots, 0, ACL_INT32);
    uint64_t ws = 0;
    aclOpExecutor *executor = nullptr;
    int code = aclnnScatterPaKvCacheGetWorkspaceSize(k, kc, s, v, vc, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                     nullptr, nullptr, &ws, &executor);
    REPORT((std::string(name) + ".phase1").c_str(), code);
    void *workspace = nullptr;
    if (ws > 0) aclrtMalloc(&workspace, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    Report(name, [&](aclrtStream stream) {
        int ret = aclnnScatterPaKvCache(workspace, ws, executor, stream);
        return ret ? ret : aclrtSynchronizeStream(stream);
    }, [&](aclrtStream stream) { return aclnnScatterPaKvCache(workspace, ws, executor, stream); });
    if (workspace) aclrtFree(workspace);
    cache.PrintChanged(); vcache.PrintChanged(); key.PrintChanged();
    for (aclTensor *t : {k, v, kc, vc, s}) aclDestroyTensor(t);
    aclrtFree(slots);
    return 0;
}

// Far below the arena, or as far as an offset goes: the kernel faults (507015), not the process.
int OffsetFarBelow() { return RunScatter("scatter", -(int64_t(1) << 40)); }
int OffsetInt64Min() { return RunScatter("scatter", INT64_MIN); }

// 16 elements (32 bytes) below the key: in a mapped page (no block precedes it, but the arena's
// first page is mapped), so the kernel reads neighbouring memory and the sanitizer says so.
int OffsetSlightlyBelow() {
    Watched before("before", 256, 9);
    return RunScatter("scatter", -16);
}

int ImpossibleTensors() {
    Watched a("a", 4096, 1);
    int64_t big = int64_t(1) << 31;
    aclTensor *overflow = Tensor({big, big, big}, a.addr);
    printf("create.overflow_null %d\n", overflow == nullptr);
    const char *msg = aclGetRecentErrMsg();
    printf("create.overflow_message %d\n", msg != nullptr && strstr(msg, "overflows int64") != nullptr);
    aclTensor *too_big = Tensor({int64_t(1) << 20, int64_t(1) << 20, int64_t(1) << 10}, a.addr);
    printf("create.beyond_device_memory_null %d\n", too_big == nullptr);
    aclTensor *fine = Tensor({4}, a.addr);
    printf("create.fine_null %d\n", fine == nullptr);
    int64_t dims[3] = {big, big, big}, strides[3] = {big * big, big, 1};
    REPORT("init.overflow", aclInitTensor(fine, dims, 3, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, dims, 3, a.addr));
    int64_t *shape = nullptr;
    uint64_t ndim = 0;
    aclGetViewShape(fine, &shape, &ndim);
    printf("init.kept_description %d\n", ndim == 1 && shape[0] == 4);
    delete[] shape;
    uint64_t ws = 0;
    aclOpExecutor *executor = nullptr;
    REPORT("phase1.null_tensor", aclnnScatterPaKvCacheGetWorkspaceSize(overflow, fine, fine, fine, fine, nullptr,
           nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &ws, &executor));
    aclDestroyTensor(fine);
    return 0;
}
}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    std::string name = argv[1];
    g_how = argc > 2 ? argv[2] : "sync";
    if (SetUp(&g_stream) != 0) return 1;
    aclrtGetCurrentContext(&g_context);
    int ret = name == "memset_huge" ? MemsetHuge() : name == "memcpy_huge_d2d" ? MemcpyHugeD2D()
            : name == "memcpy_size_max" ? MemcpySizeMax() : name == "wraps" ? MemcpyWraps()
            : name == "host_unmapped" ? HostUnmapped() : name == "host_read_only" ? HostReadOnly()
            : name == "page_edge" ? PageEdge() : name == "neighbour" ? Neighbour() : name == "freed_page" ? FreedPage()
            : name == "offset_far_below" ? OffsetFarBelow() : name == "offset_int64_min" ? OffsetInt64Min()
            : name == "offset_slightly_below" ? OffsetSlightlyBelow()
            : name == "impossible_tensors" ? ImpossibleTensors() : 2;
    TearDown(g_stream);
    printf("done %d\n", ret);
    return ret;
}
