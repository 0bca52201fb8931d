// Host callbacks: a thread subscribes a stream and runs aclrtProcessReport; callbacks launched
// between copies run on that thread, in stream order, and a blocking one holds the stream back.
// Prints "<rule> <code>" lines and "<rule>_value <v>" lines.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common.h"

#define VALUE(rule, v) printf("%s_value %lld\n", rule, static_cast<long long>(v))

namespace {
struct Log {
    std::vector<int> order;
    std::vector<pthread_t> threads;
    std::vector<uint8_t> seen;  // the first device byte copied back before each callback
    uint8_t *host = nullptr;
};
Log g_log;
struct Tag {
    int index;
};
Tag g_tags[4] = {{0}, {1}, {2}, {3}};

void Callback(void *data) {
    Tag *tag = static_cast<Tag *>(data);
    g_log.order.push_back(tag->index);
    g_log.threads.push_back(pthread_self());
    g_log.seen.push_back(g_log.host[0]);
}

std::atomic<int> g_hostFuncs{0};
void HostFunc(void *) { g_hostFuncs++; }
}  // namespace

int main() {
    aclrtStream stream = nullptr, plain = nullptr;
    if (SetUp(&stream) != 0) return 1;
    aclrtCreateStream(&plain);
    aclrtContext ctx = nullptr;
    aclrtGetCurrentContext(&ctx);
    std::atomic<bool> stop{false};
    pthread_t worker = 0;
    std::thread reporter([&] {
        aclrtSetCurrentContext(ctx);
        while (!stop) aclrtProcessReport(50);
    });
    worker = reporter.native_handle();
    uint64_t tid = static_cast<uint64_t>(worker);

    REPORT("launch_not_subscribed", aclrtLaunchCallback(Callback, &g_tags[0], ACL_CALLBACK_BLOCK, stream));
    REPORT("subscribe", aclrtSubscribeReport(tid, stream));
    REPORT("subscribe_again", aclrtSubscribeReport(tid, stream));
    REPORT("process_not_subscribed_thread", aclrtProcessReport(10));
    REPORT("process_bad_timeout", aclrtProcessReport(0));
    REPORT("launch_bad_block_type", aclrtLaunchCallback(Callback, &g_tags[0], static_cast<aclrtCallbackBlockType>(5),
                                                        stream));
    REPORT("launch_null_fn", aclrtLaunchCallback(nullptr, &g_tags[0], ACL_CALLBACK_BLOCK, stream));
    REPORT("host_func_on_subscribed", aclrtLaunchHostFunc(stream, HostFunc, nullptr));

    // Device byte i is set to i+1 by a memset and copied back before callback i: a blocking callback
    // sees the copy made before it and none made after it.
    void *dev = nullptr;
    uint8_t host = 0;
    g_log.host = &host;
    aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    int launched = 0;
    for (int i = 0; i < 4; i++) {
        aclrtMemsetAsync(dev, 64, i + 1, 64, stream);
        aclrtMemcpyAsync(&host, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST, stream);
        launched += aclrtLaunchCallback(Callback, &g_tags[i], ACL_CALLBACK_BLOCK, stream) == 0;
    }
    VALUE("launched", launched);
    REPORT("sync", aclrtSynchronizeStream(stream));
    int inOrder = g_log.order.size() == 4, onWorker = 1, sawOwnCopy = 1;
    for (size_t i = 0; i < g_log.order.size(); i++) {
        inOrder &= g_log.order[i] == static_cast<int>(i);
        onWorker &= pthread_equal(g_log.threads[i], worker);
        sawOwnCopy &= g_log.seen[i] == i + 1;
    }
    VALUE("in_stream_order", inOrder);
    VALUE("on_subscribed_thread", onWorker);
    VALUE("blocking_saw_its_copy", sawOwnCopy);
    REPORT("unsubscribe_wrong_thread", aclrtUnSubscribeReport(tid + 1, stream));
    REPORT("unsubscribe", aclrtUnSubscribeReport(tid, stream));
    REPORT("unsubscribe_again", aclrtUnSubscribeReport(tid, stream));
    stop = true;
    reporter.join();

    // Non-blocking callbacks queued while nobody processes reports run in their stream order when
    // the subscribed thread finally does, all from one aclrtProcessReport.
    g_log = Log();
    g_log.host = &host;
    std::atomic<bool> go{false};
    std::thread late([&] {
        aclrtSetCurrentContext(ctx);
        while (!go) std::this_thread::yield();
        while (g_log.order.size() < 4 && aclrtProcessReport(1000) == 0) {}
    });
    uint64_t lateTid = static_cast<uint64_t>(late.native_handle());
    aclrtSubscribeReport(lateTid, plain);
    for (int i = 0; i < 4; i++) aclrtLaunchCallback(Callback, &g_tags[i], ACL_CALLBACK_NO_BLOCK, plain);
    REPORT("no_block_sync", aclrtSynchronizeStream(plain));
    VALUE("no_block_waiting", g_log.order.size() == 0);
    go = true;
    late.join();
    inOrder = g_log.order.size() == 4;
    for (size_t i = 0; i < g_log.order.size(); i++) inOrder &= g_log.order[i] == static_cast<int>(i);
    VALUE("no_block_in_stream_order", inOrder);
    aclrtUnSubscribeReport(lateTid, plain);

    REPORT("host_func", aclrtLaunchHostFunc(plain, HostFunc, nullptr));
    REPORT("host_func_null", aclrtLaunchHostFunc(plain, nullptr, nullptr));
    aclrtSynchronizeStream(plain);
    VALUE("host_func_ran", g_hostFuncs.load());
    aclrtFree(dev);
    aclrtDestroyStream(plain);
    TearDown(stream);
    printf("done 0\n");
    return 0;
}
