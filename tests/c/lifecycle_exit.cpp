// Exiting while operators run: the process must end with the program's own status, never a crash.
// Usage: lifecycle_exit <case>. Nothing is synchronised, freed or finalised on purpose.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "attention_work.h"

namespace {

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Queued launches on a created stream and the default stream (leaked: main returns meanwhile).
int QueueWork(aclrtStream *stream, int launches) {
    CHECK_OK(SetUp(stream));
    AttentionWork *work = new AttentionWork(8, 2048);
    CHECK_OK(work->Create());
    for (int i = 0; i < launches; i++) CHECK_OK(work->Launch(*stream));
    CHECK_OK(work->Launch(nullptr));
    return 0;
}

// main returns (status 0) while a kernel runs and more are queued.
int ReturnWhileRunning() {
    aclrtStream stream;
    if (QueueWork(&stream, 8) != 0) return 1;
    Sleep(20);
    return 0;
}

// Another thread calls exit(3) while main waits for the stream.
int ExitFromThread() {
    aclrtStream stream;
    if (QueueWork(&stream, 50) != 0) return 1;
    std::thread([] {
        Sleep(50);
        exit(3);
    }).detach();
    aclrtSynchronizeStream(stream);   // returns when exit cancels the work
    for (;;) pause();
}

// main returns while another thread keeps launching; that thread stops at its first refusal.
int ReturnWhileOtherThreadLaunches() {
    aclrtStream stream;
    if (QueueWork(&stream, 2) != 0) return 1;
    aclrtContext ctx;
    CHECK_OK(aclrtGetCurrentContext(&ctx));
    AttentionWork *work = new AttentionWork(2, 512);
    CHECK_OK(work->Create());
    std::thread([=] {
        aclrtSetCurrentContext(ctx);
        while (work->Launch(stream) == 0) {
        }
        for (;;) pause();
    }).detach();
    Sleep(100);
    return 0;
}

// main returns while streams wait for an event recorded behind long work.
int ReturnWithEventsPending() {
    aclrtStream producer, consumer;
    if (QueueWork(&producer, 8) != 0) return 1;
    CHECK_OK(aclrtCreateStream(&consumer));
    aclrtEvent event;
    CHECK_OK(aclrtCreateEvent(&event));
    CHECK_OK(aclrtRecordEvent(event, producer));
    CHECK_OK(aclrtStreamWaitEvent(consumer, event));
    CHECK_OK(aclrtStreamWaitEvent(nullptr, event));
    Sleep(20);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "";
    if (which == "return_while_running") return ReturnWhileRunning();
    if (which == "exit_from_thread") return ExitFromThread();
    if (which == "return_while_other_thread_launches") return ReturnWhileOtherThreadLaunches();
    if (which == "return_with_events_pending") return ReturnWithEventsPending();
    fprintf(stderr, "unknown case %s\n", which.c_str());
    return 2;
}
