// Shutdown with work in flight: aclFinalize, aclrtResetDevice, aclrtDestroyStream and
// aclrtDestroyContext while operators are queued or running, from this thread or another, with events
// pending; and a stream destroyed while another thread submits to it.
// Usage: lifecycle_shutdown <case>. Prints "<rule> <code>" lines (times as "<rule>.ms <ms>").
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "attention_work.h"

namespace {

// kQueued launches are far more work than a prompt shutdown may wait for; each case measures one
// launch first ("launch.ms"), so the test can compare without assuming the machine's speed.
constexpr int64_t kHeads = 8, kSeq = 2048;
constexpr int kQueued = 24;

using Clock = std::chrono::steady_clock;

long long MsSince(Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Creates the work and prints how long one launch takes on `stream`.
int Prepare(AttentionWork &work, aclrtStream stream) {
    int ret = work.Create();
    if (ret != 0) return ret;
    auto start = Clock::now();
    ret = work.Launch(stream);
    if (ret == 0) ret = aclrtSynchronizeStream(stream);
    printf("launch.ms %lld\n", MsSince(start));
    return ret;
}

int Queue(AttentionWork &work, aclrtStream stream, int count) {
    for (int i = 0; i < count; i++) {
        int ret = work.Launch(stream);
        if (ret != 0) return ret;
    }
    return 0;
}

// aclFinalize or aclrtResetDevice(0), then `wait_for_others`; prints the code and "<rule>.ms".
template <typename Wait>
void ShutDown(bool finalize, Wait wait_for_others) {
    auto start = Clock::now();
    const char *rule = finalize ? "finalize" : "reset";
    REPORT(rule, finalize ? aclFinalize() : aclrtResetDevice(0));
    wait_for_others();
    printf("%s.ms %lld\n", rule, MsSince(start));
}

// Launches until the first failure and returns that status (a destroyed stream must produce one).
int LaunchUntilRefused(AttentionWork &work, aclrtStream stream, std::atomic<int> &launched) {
    for (;;) {
        int ret = work.Launch(stream);
        if (ret != 0) return ret;
        launched++;
    }
}

// aclFinalize with launches queued on a created stream and the default stream.
int FinalizeQueued() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    AttentionWork work(kHeads, kSeq), other(kHeads, kSeq);
    CHECK_OK(Prepare(work, stream));
    CHECK_OK(other.Create());
    CHECK_OK(Queue(work, stream, kQueued));
    CHECK_OK(Queue(other, nullptr, 2));
    auto start = Clock::now();
    REPORT("finalize", aclFinalize());
    printf("finalize.ms %lld\n", MsSince(start));
    REPORT("finalize.sync_destroyed_stream", aclrtSynchronizeStream(stream));
    REPORT("finalize.init_again", aclInit(nullptr));
    return 0;
}

// aclrtResetDevice: the default stream's work is waited for, the created stream's is cancelled.
int ResetQueued() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    AttentionWork work(kHeads, kSeq);
    CHECK_OK(Prepare(work, stream));
    CHECK_OK(Queue(work, stream, kQueued));
    CHECK_OK(Queue(work, nullptr, 1));
    auto start = Clock::now();
    REPORT("reset", aclrtResetDevice(0));
    printf("reset.ms %lld\n", MsSince(start));
    REPORT("reset.sync_stream", aclrtSynchronizeStream(stream));
    REPORT("reset.destroy_stream", aclrtDestroyStream(stream));
    REPORT("reset.sync_default", aclrtSynchronizeStream(nullptr));
    REPORT("reset.set_again", aclrtSetDevice(0));
    REPORT("reset.finished_default", work.Finished());
    REPORT("finalize", aclFinalize());
    return 0;
}

// aclrtDestroyStream drains: the queued launches finish before it returns.
int DestroyQueued() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    AttentionWork work(kHeads, kSeq);
    CHECK_OK(work.Create());
    CHECK_OK(Queue(work, stream, 2));
    REPORT("destroy", aclrtDestroyStream(stream));
    REPORT("destroy.finished", work.Finished());
    REPORT("destroy.sync_after", aclrtSynchronizeStream(stream));
    REPORT("destroy.launch_after", work.Launch(stream));
    TearDown(nullptr);
    return 0;
}

// aclrtDestroyContext with its streams busy: they are cancelled.
int DestroyContextQueued() {
    CHECK_OK(aclInit(nullptr));
    CHECK_OK(aclrtSetDevice(0));
    AttentionWork work(kHeads, kSeq);
    CHECK_OK(Prepare(work, nullptr));
    aclrtContext ctx;
    CHECK_OK(aclrtCreateContext(&ctx, 0));
    aclrtStream stream;
    CHECK_OK(aclrtCreateStream(&stream));
    CHECK_OK(Queue(work, stream, kQueued));
    CHECK_OK(Queue(work, nullptr, kQueued));
    auto start = Clock::now();
    REPORT("destroy_context", aclrtDestroyContext(ctx));
    printf("destroy_context.ms %lld\n", MsSince(start));
    REPORT("destroy_context.sync_stream", aclrtSynchronizeStream(stream));
    REPORT("destroy_context.launch_default", work.Launch(nullptr));
    TearDown(nullptr);
    return 0;
}

// Another thread queues work and waits on the stream while this one finalizes or resets: its
// synchronisation returns (an error for cancelled work), never hangs.
int ShutdownWhileOtherThreadWaits(bool finalize) {
    CHECK_OK(aclInit(nullptr));
    CHECK_OK(aclrtSetDevice(0));
    aclrtContext ctx;
    CHECK_OK(aclrtGetCurrentContext(&ctx));
    AttentionWork work(kHeads, kSeq);
    CHECK_OK(Prepare(work, nullptr));
    std::atomic<int> stage(0);
    int queued = -1, synced = -1, sync_default = -1;
    std::thread other([&] {
        aclrtSetCurrentContext(ctx);
        aclrtStream stream;
        queued = aclrtCreateStream(&stream);
        if (queued == 0) queued = Queue(work, stream, kQueued);
        stage = 1;
        synced = aclrtSynchronizeStream(stream);
        sync_default = aclrtSynchronizeStream(nullptr);
    });
    while (stage.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));   // the other thread is in its wait
    ShutDown(finalize, [&] { other.join(); });
    REPORT("other.queued", queued);
    REPORT("other.sync", synced);
    REPORT("other.sync_default", sync_default);
    return 0;
}

// A stream waits for an event recorded behind long work on another stream, and another thread waits
// for that event on the host; both streams are cancelled by the reset or finalize.
int ShutdownWithEventsPending(bool finalize) {
    aclrtStream producer, consumer;
    CHECK_OK(SetUp(&producer));
    CHECK_OK(aclrtCreateStream(&consumer));
    AttentionWork work(kHeads, kSeq), after(2, 256);
    CHECK_OK(Prepare(work, producer));
    CHECK_OK(after.Create());
    aclrtEvent event;
    CHECK_OK(aclrtCreateEvent(&event));
    CHECK_OK(Queue(work, producer, kQueued));
    CHECK_OK(aclrtRecordEvent(event, producer));
    CHECK_OK(aclrtStreamWaitEvent(consumer, event));
    CHECK_OK(after.Launch(consumer));
    CHECK_OK(aclrtStreamWaitEvent(nullptr, event));    // the default stream waits too
    int host_wait = -1;
    std::thread waiter([&] { host_wait = aclrtSynchronizeEvent(event); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ShutDown(finalize, [&] { waiter.join(); });
    REPORT("event.host_wait", host_wait);
    return 0;
}

// Another thread keeps launching onto a stream while this one destroys it. Every launch
// after the destroy is refused with a code, and synchronising the destroyed stream returns one.
int DestroyWhileSubmitting() {
    aclrtStream unused;
    CHECK_OK(SetUp(&unused));
    aclrtContext ctx;
    CHECK_OK(aclrtGetCurrentContext(&ctx));
    AttentionWork work(1, 64);
    CHECK_OK(work.Create());
    const int rounds = 20;
    int refused_ok = 0, sync_ok = 0, destroyed_ok = 0, launched_total = 0;
    for (int round = 0; round < rounds; round++) {
        aclrtStream stream;
        CHECK_OK(aclrtCreateStream(&stream));
        std::atomic<int> launched(0);
        int refused = 0, synced = 0;
        std::thread submitter([&] {
            aclrtSetCurrentContext(ctx);
            refused = LaunchUntilRefused(work, stream, launched);
            synced = aclrtSynchronizeStream(stream);
        });
        while (launched.load() < 1 + round % 4) std::this_thread::yield();
        destroyed_ok += aclrtDestroyStream(stream) == 0;
        submitter.join();
        refused_ok += refused == ACL_ERROR_RT_INVALID_HANDLE;
        sync_ok += synced == ACL_ERROR_RT_INVALID_HANDLE;
        launched_total += launched.load();
    }
    printf("race.rounds %d\n", rounds);
    printf("race.destroyed %d\n", destroyed_ok);
    printf("race.refused_with_107017 %d\n", refused_ok);
    printf("race.sync_with_107017 %d\n", sync_ok);
    printf("race.launched_some %d\n", launched_total >= rounds);
    REPORT("race.sync_default", aclrtSynchronizeStream(nullptr));
    REPORT("race.finished", work.Finished());
    TearDown(unused);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);   // a case killed by its timeout still shows how far it got
    std::string which = argc > 1 ? argv[1] : "";
    if (which == "finalize_queued") return FinalizeQueued();
    if (which == "reset_queued") return ResetQueued();
    if (which == "destroy_queued") return DestroyQueued();
    if (which == "destroy_context_queued") return DestroyContextQueued();
    if (which == "finalize_while_other_thread_waits") return ShutdownWhileOtherThreadWaits(true);
    if (which == "reset_while_other_thread_waits") return ShutdownWhileOtherThreadWaits(false);
    if (which == "finalize_with_events_pending") return ShutdownWithEventsPending(true);
    if (which == "reset_with_events_pending") return ShutdownWithEventsPending(false);
    if (which == "destroy_while_submitting") return DestroyWhileSubmitting();
    fprintf(stderr, "unknown case %s\n", which.c_str());
    return 2;
}
