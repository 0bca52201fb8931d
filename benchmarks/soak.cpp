// Soak test of the runtime through the C ABI (driven by bench_soak.py).
// Usage: soak <seconds> <threads> <seed>
//
// Each thread loops: allocate, copy host->device on stream A, record an event, make stream B wait for
// it, run aclnnScatterPaKvCache (two-phase) on B, copy the caches back on B, then either synchronise B
// or destroy it unsynchronised (a destroy drains, so the results must still arrive) and create a new
// one; then check every byte against a host-side scatter and free everything. Meanwhile each thread
// offers a "race" stream that its neighbour copies into while the owner destroys it at a random
// moment: a copy the runtime accepted must have happened, a refused one must be refused with 107017.
//
// Prints "tick <seconds> <calls> <rss_kb> <device_kb>" every second (device_kb: the part of the RSS
// that is device memory, the shared arena), then the totals as "<name> <value>" lines.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "acl/acl.h"

namespace {

constexpr int64_t kHeads = 2, kHead = 32, kBlocks = 4, kBlock = 16, kSlots = kBlocks * kBlock;
constexpr int64_t kRow = kHeads * kHead;   // fp16 elements per token / cache slot

std::atomic<long long> g_calls(0), g_iterations(0), g_verified(0), g_corrupted(0), g_unexpected(0);
std::atomic<long long> g_destroyed_unsynced(0), g_race_copies(0), g_race_refused(0), g_race_lost(0);
std::atomic<bool> g_stop(false);
aclrtContext g_context;

// Every runtime call goes through here: counted, and any code not in `allowed` is unexpected.
int Call(int ret, int allowed = 0) {
    g_calls++;
    if (ret != 0 && ret != allowed) {
        g_unexpected++;
        fprintf(stderr, "unexpected status %d: %s\n", ret, aclGetRecentErrMsg());
    }
    return ret;
}

struct Rng {
    uint64_t state;
    uint32_t Next() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return static_cast<uint32_t>(state >> 16);
    }
};

struct Device {
    void *addr = nullptr;
    size_t bytes = 0;
    aclTensor *tensor = nullptr;

    int Create(const std::vector<int64_t> &shape, aclDataType dtype) {
        bytes = aclDataTypeSize(dtype);
        for (int64_t d : shape) bytes *= d;
        if (Call(aclrtMalloc(&addr, bytes, ACL_MEM_MALLOC_HUGE_FIRST)) != 0) return -1;
        std::vector<int64_t> strides(shape.size(), 1);
        for (int i = static_cast<int>(shape.size()) - 2; i >= 0; i--) strides[i] = strides[i + 1] * shape[i + 1];
        g_calls++;
        tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                 shape.size(), addr);
        return tensor ? 0 : -1;
    }

    void Release() {
        if (tensor) Call(aclDestroyTensor(tensor));
        if (addr) Call(aclrtFree(addr));
        tensor = nullptr;
        addr = nullptr;
    }
};

// The race stream a thread offers its neighbour: (stream, generation); `destroyed` is the last
// generation whose aclrtDestroyStream has returned.
struct RaceSlot {
    std::mutex lock;
    aclrtStream stream = nullptr;
    long long generation = 0;
    std::atomic<long long> destroyed{0};
};
std::vector<RaceSlot> g_race;

// The owner's side: take the offered stream out of the slot and destroy it, unsynchronised.
void WithdrawRaceStream(int id) {
    aclrtStream offered;
    long long generation;
    {
        std::lock_guard<std::mutex> hold(g_race[id].lock);
        offered = g_race[id].stream;
        generation = g_race[id].generation;
        g_race[id].stream = nullptr;
    }
    if (offered) Call(aclrtDestroyStream(offered));
    g_race[id].destroyed = generation;     // a neighbour may be waiting for this destroy
}

// The neighbour's side of a race: copy 256 bytes device->device on the owner's race stream.
void RaceCopy(int owner, Device &src, Device &dst, const std::vector<uint8_t> &expected) {
    aclrtStream stream;
    long long generation;
    {
        std::lock_guard<std::mutex> hold(g_race[owner].lock);
        stream = g_race[owner].stream;
        generation = g_race[owner].generation;
    }
    if (stream == nullptr) return;
    Call(aclrtMemset(dst.addr, dst.bytes, 0, dst.bytes));
    int ret = Call(aclrtMemcpyAsync(dst.addr, dst.bytes, src.addr, src.bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
                   ACL_ERROR_RT_INVALID_HANDLE);
    if (ret != 0) {
        g_race_refused++;
        return;
    }
    if (Call(aclrtSynchronizeStream(stream), ACL_ERROR_RT_INVALID_HANDLE) != 0) {
        // destroyed meanwhile: its destroy drains the copy; wait until that destroy has returned
        while (g_race[owner].destroyed.load() < generation) std::this_thread::yield();
    }
    std::vector<uint8_t> host(dst.bytes);
    Call(aclrtMemcpy(host.data(), host.size(), dst.addr, dst.bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    g_race_copies++;
    if (host != expected) g_race_lost++;
}

// Both phases onto `stream`; the workspace is returned through `workspace` (freed by the caller).
int Scatter(Device &key, Device &kc, Device &slots, Device &value, Device &vc, aclrtStream stream,
            void **workspace) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    char mode[] = "Norm";
    int ret = Call(aclnnScatterPaKvCacheGetWorkspaceSize(key.tensor, kc.tensor, slots.tensor, value.tensor,
                                                         vc.tensor, nullptr, nullptr, nullptr, mode, nullptr,
                                                         nullptr, nullptr, &size, &executor));
    if (ret == 0 && size > 0) ret = Call(aclrtMalloc(workspace, size, ACL_MEM_MALLOC_HUGE_FIRST));
    return ret != 0 ? ret : Call(aclnnScatterPaKvCache(*workspace, size, executor, stream));
}

void Worker(int id, int threads, uint64_t seed) {
    Call(aclrtSetCurrentContext(g_context));
    Rng rng{seed * 0x9E3779B97F4A7C15ull + id + 1};
    aclrtStream a, b;
    aclrtEvent event;
    Call(aclrtCreateStream(&a));
    Call(aclrtCreateStream(&b));
    Call(aclrtCreateEvent(&event));
    // the race: this thread's offered stream, and the buffers it copies on its neighbour's
    int neighbour = (id + threads - 1) % threads, left_for_race = 0;
    Device race_src, race_dst;
    race_src.Create({256}, ACL_UINT8);
    race_dst.Create({256}, ACL_UINT8);
    std::vector<uint8_t> race_bytes(256);
    for (auto &x : race_bytes) x = static_cast<uint8_t>(rng.Next());
    Call(aclrtMemcpy(race_src.addr, 256, race_bytes.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE));

    while (!g_stop.load()) {
        // the race stream: create and offer one, or destroy the offered one (unsynchronised)
        if (left_for_race-- <= 0) {
            WithdrawRaceStream(id);
            aclrtStream fresh;
            Call(aclrtCreateStream(&fresh));
            std::lock_guard<std::mutex> hold(g_race[id].lock);
            g_race[id].stream = fresh;
            g_race[id].generation++;
            left_for_race = rng.Next() % 4;
        }
        RaceCopy(neighbour, race_src, race_dst, race_bytes);

        // the pipeline
        int64_t tokens = 4 + rng.Next() % 29;
        std::vector<int32_t> slots(kSlots);
        for (int64_t i = 0; i < kSlots; i++) slots[i] = static_cast<int32_t>(i);
        for (int64_t i = 0; i < tokens; i++) std::swap(slots[i], slots[i + rng.Next() % (kSlots - i)]);
        slots.resize(tokens);
        std::vector<uint16_t> key(tokens * kRow), value(tokens * kRow), kc(kSlots * kRow), vc(kSlots * kRow);
        for (auto *v : {&key, &value, &kc, &vc})
            for (auto &x : *v) x = static_cast<uint16_t>(rng.Next() & 0x7BFF);
        std::vector<uint16_t> want_k = kc, want_v = vc, got_k(kc.size()), got_v(vc.size());
        for (int64_t t = 0; t < tokens; t++) {
            std::copy(key.begin() + t * kRow, key.begin() + (t + 1) * kRow, want_k.begin() + slots[t] * kRow);
            std::copy(value.begin() + t * kRow, value.begin() + (t + 1) * kRow, want_v.begin() + slots[t] * kRow);
        }
        Device dkey, dvalue, dkc, dvc, dslots;
        bool ok = dkey.Create({tokens, kHeads, kHead}, ACL_FLOAT16) == 0 &&
                  dvalue.Create({tokens, kHeads, kHead}, ACL_FLOAT16) == 0 &&
                  dkc.Create({kBlocks, kBlock, kHeads, kHead}, ACL_FLOAT16) == 0 &&
                  dvc.Create({kBlocks, kBlock, kHeads, kHead}, ACL_FLOAT16) == 0 &&
                  dslots.Create({tokens}, ACL_INT32) == 0;
        auto h2d = [&](Device &d, const void *host) {
            return Call(aclrtMemcpyAsync(d.addr, d.bytes, host, d.bytes, ACL_MEMCPY_HOST_TO_DEVICE, a));
        };
        ok = ok && h2d(dkey, key.data()) == 0 && h2d(dvalue, value.data()) == 0 && h2d(dkc, kc.data()) == 0 &&
             h2d(dvc, vc.data()) == 0 && h2d(dslots, slots.data()) == 0;
        ok = ok && Call(aclrtRecordEvent(event, a)) == 0 && Call(aclrtStreamWaitEvent(b, event)) == 0;
        void *workspace = nullptr;
        ok = ok && Scatter(dkey, dkc, dslots, dvalue, dvc, b, &workspace) == 0;
        ok = ok && Call(aclrtMemcpyAsync(got_k.data(), got_k.size() * 2, dkc.addr, dkc.bytes,
                                         ACL_MEMCPY_DEVICE_TO_HOST, b)) == 0 &&
             Call(aclrtMemcpyAsync(got_v.data(), got_v.size() * 2, dvc.addr, dvc.bytes,
                                   ACL_MEMCPY_DEVICE_TO_HOST, b)) == 0;
        if (rng.Next() % 8 == 0) {     // destroy B unsynchronised: the destroy must drain it
            ok = Call(aclrtDestroyStream(b)) == 0 && Call(aclrtCreateStream(&b)) == 0 && ok;
            g_destroyed_unsynced++;
        } else {
            ok = Call(aclrtSynchronizeStream(b)) == 0 && ok;
        }
        ok = Call(aclrtSynchronizeStream(a)) == 0 && ok;    // before anything is freed, whatever failed
        if (workspace) Call(aclrtFree(workspace));
        g_iterations++;
        if (ok && got_k == want_k && got_v == want_v) {
            g_verified++;
        } else {
            g_corrupted++;
        }
        for (Device *d : {&dkey, &dvalue, &dkc, &dvc, &dslots}) d->Release();
    }
    WithdrawRaceStream(id);
    race_src.Release();
    race_dst.Release();
    Call(aclrtDestroyEvent(event));
    Call(aclrtDestroyStream(a));
    Call(aclrtDestroyStream(b));
}

long RssKb(const char *field) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (status && fgets(line, sizeof line, status)) {
        if (strncmp(line, field, n) == 0) kb = atol(line + n + 1);
    }
    if (status) fclose(status);
    return kb;
}

}  // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    double seconds = argc > 1 ? atof(argv[1]) : 600;
    int threads = argc > 2 ? atoi(argv[2]) : 8;
    uint64_t seed = argc > 3 ? strtoull(argv[3], nullptr, 10) : 1;
    if (aclInit(nullptr) != 0 || aclrtSetDevice(0) != 0 || aclrtGetCurrentContext(&g_context) != 0) return 1;
    g_race = std::vector<RaceSlot>(threads);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; i++) workers.emplace_back(Worker, i, threads, seed);
    for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        printf("tick %.1f %lld %ld %ld\n", t, g_calls.load(), RssKb("VmRSS:"), RssKb("RssShmem:"));
        if (t >= seconds) break;
    }
    g_stop = true;
    for (auto &w : workers) w.join();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    printf("seconds %.1f\ncalls %lld\niterations %lld\nverified %lld\ncorrupted %lld\nunexpected_status %lld\n", t,
           g_calls.load(), g_iterations.load(), g_verified.load(), g_corrupted.load(), g_unexpected.load());
    printf("destroyed_unsynchronised %lld\nrace_copies %lld\nrace_refused %lld\nrace_lost %lld\n",
           g_destroyed_unsynced.load(), g_race_copies.load(), g_race_refused.load(), g_race_lost.load());
    printf("peak_rss_kb %ld\n", RssKb("VmHWM:"));
    int ret = aclrtResetDevice(0);
    printf("reset %d\nfinalize %d\n", ret, aclFinalize());
    return 0;
}
