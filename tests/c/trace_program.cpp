// A program to trace (ACLNN_EMU_TRACE): two streams, an event between them, synchronous and
// asynchronous copies, and two operators called a given number of times.
// Usage: trace_program <ending> <attention calls> <scatter calls>
//   ending: finalize (aclFinalize, then return from main), exit (exit(0) with a launch still queued,
//   never finalized), fork (a child does work of its own and exits; the parent finalizes), threads (a
//   second host thread makes attention calls on a stream of its own while the first makes as many).
// Prints "<rule> <code>" lines; "bytes.*" lines give the sizes the trace must show.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "attention_work.h"

namespace {

// One token scattered into a [2, 4, 1, 16] fp16 cache: slot 1, written with an asynchronous copy.
struct ScatterWork {
    DeviceTensor key, key_cache, slots, value, value_cache;
    void *workspace = nullptr;
    uint64_t workspace_bytes = 0;

    ~ScatterWork() {
        if (workspace) aclrtFree(workspace);
    }

    int Create(aclrtStream stream) {
        std::vector<uint16_t> token(16, 0x3c00);
        int ret = key.Create(token, {1, 1, 16}, ACL_FLOAT16);
        if (ret == 0) ret = value.Create(token, {1, 1, 16}, ACL_FLOAT16);
        if (ret == 0) ret = key_cache.Create({2, 4, 1, 16}, ACL_FLOAT16);
        if (ret == 0) ret = value_cache.Create({2, 4, 1, 16}, ACL_FLOAT16);
        if (ret == 0) ret = slots.Create({1}, ACL_INT32);
        static const int32_t slot = 1;
        return ret != 0 ? ret : aclrtMemcpyAsync(slots.addr, 4, &slot, 4, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    }

    int Launch(aclrtStream stream) {
        uint64_t workspaceSize = 0;
        aclOpExecutor *executor = nullptr;
        int ret = aclnnScatterPaKvCacheGetWorkspaceSize(key.tensor, key_cache.tensor, slots.tensor, value.tensor,
                                                        value_cache.tensor, nullptr, nullptr, nullptr, nullptr,
                                                        nullptr, nullptr, nullptr, &workspaceSize, &executor);
        if (ret == 0 && workspaceSize > workspace_bytes) {    // allocated once, reused
            if (workspace) aclrtFree(workspace);
            ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
            workspace_bytes = workspaceSize;
        }
        return ret != 0 ? ret : aclnnScatterPaKvCache(workspace, workspaceSize, executor, stream);
    }
};

// A forked child's own work: a fresh runtime, one attention call; its exit status says how it went.
int Child() {
    aclrtStream stream;
    if (aclInit(nullptr) != 0 || aclrtSetDevice(0) != 0 || aclrtCreateStream(&stream) != 0) return 2;
    int ok;
    {
        AttentionWork work(1, 64);
        ok = work.Create() == 0 && work.Launch(stream) == 0 && aclrtSynchronizeStream(stream) == 0;
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    return ok && aclFinalize() == 0 ? 0 : 3;
}

// A second host thread's work: its own stream, `calls` attention launches; 0 if all went well.
int OtherThread(int calls) {
    aclrtStream stream;
    if (aclrtSetDevice(0) != 0 || aclrtCreateStream(&stream) != 0) return 1;
    int failures = 0;
    {
        AttentionWork work(1, 64);
        failures += work.Create() != 0;
        for (int i = 0; i < calls; i++) failures += work.Launch(stream) != 0;
        failures += aclrtSynchronizeStream(stream) != 0;
    }
    return failures + (aclrtDestroyStream(stream) != 0);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    std::string ending = argv[1];
    int attention_calls = atoi(argv[2]), scatter_calls = atoi(argv[3]);
    CHECK_OK(aclInit(nullptr));
    REPORT("bad_device", aclrtSetDevice(99));       // a failed call: its slice says so
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream first, second;
    aclrtEvent event;
    CHECK_OK(aclrtCreateStream(&first));
    CHECK_OK(aclrtCreateStream(&second));
    CHECK_OK(aclrtCreateEvent(&event));
    {
        AttentionWork attention(2, 64);
        ScatterWork scatter;
        CHECK_OK(attention.Create());
        printf("bytes.attention_tensor %zu\n", attention.q.bytes);
        for (int i = 0; i < attention_calls; i++) CHECK_OK(attention.Launch(first));
        CHECK_OK(aclrtRecordEvent(event, first));
        CHECK_OK(aclrtStreamWaitEvent(second, event));
        CHECK_OK(scatter.Create(second));
        for (int i = 0; i < scatter_calls; i++) CHECK_OK(scatter.Launch(second));
        printf("bytes.scatter_workspace %llu\n", static_cast<unsigned long long>(scatter.workspace_bytes));
        CHECK_OK(aclrtSynchronizeEvent(event));
        CHECK_OK(aclrtSynchronizeStream(first));
        CHECK_OK(aclrtSynchronizeStream(second));
        REPORT("finished", attention.Finished());
        if (ending == "exit") {
            CHECK_OK(attention.Launch(first));     // still queued when the process exits
            fflush(stdout);
            exit(0);
        }
        if (ending == "threads") {
            int other = -1;
            std::thread thread([&] { other = OtherThread(attention_calls); });
            for (int i = 0; i < attention_calls; i++) CHECK_OK(attention.Launch(first));
            thread.join();
            CHECK_OK(aclrtSynchronizeStream(first));
            REPORT("other_thread", other);
        }
        if (ending == "fork") {
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) exit(Child());
            int status = 0;
            waitpid(pid, &status, 0);
            REPORT("child", WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status));
            REPORT("child.pid", pid);
        }
    }
    CHECK_OK(aclrtDestroyEvent(event));
    CHECK_OK(aclrtDestroyStream(first));
    CHECK_OK(aclrtDestroyStream(second));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return 0;
}
