// fork() after aclInit, with work in flight: the child starts from a fresh, uninitialised runtime, the
// parent's handles and device pointers give it error codes, and neither process hangs.
// Usage: lifecycle_fork <case>. Prints "<rule> <code>" lines; the child's are prefixed "child.".
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "attention_work.h"

namespace {

// Waits for a child and returns its exit status, or 1000 + signal if it was killed.
int Reap(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

pid_t Fork() {
    fflush(stdout);
    return fork();
}

// A fresh launch in the child: its own memory, its own stream; 1 if it computed.
int FreshWorkInChild() {
    aclrtStream stream;
    if (aclrtCreateStream(&stream) != 0) return -1;
    int finished;
    {
        AttentionWork work(2, 256);
        if (work.Create() != 0 || work.Launch(stream) != 0 || aclrtSynchronizeStream(stream) != 0) return 0;
        finished = work.Finished();
    }
    aclrtDestroyStream(stream);
    return finished;
}

// What a child can and cannot do with what it inherited.
void Child(AttentionWork &parent_work, aclrtStream parent_stream) {
    std::vector<uint8_t> host(parent_work.out.bytes);
    void *parent_ptr = parent_work.out.addr;
    REPORT("child.sync_parent_stream", aclrtSynchronizeStream(parent_stream));
    REPORT("child.launch_default_stream", parent_work.Launch(nullptr));
    REPORT("child.memcpy_without_context",
           aclrtMemcpy(host.data(), host.size(), parent_ptr, host.size(), ACL_MEMCPY_DEVICE_TO_HOST));
    REPORT("child.finalize_uninitialised", aclFinalize());
    REPORT("child.init", aclInit(nullptr));
    REPORT("child.set_device", aclrtSetDevice(0));
    REPORT("child.memcpy_parent_pointer",
           aclrtMemcpy(host.data(), host.size(), parent_ptr, host.size(), ACL_MEMCPY_DEVICE_TO_HOST));
    REPORT("child.memset_parent_pointer", aclrtMemset(parent_ptr, host.size(), 0, host.size()));
    REPORT("child.free_parent_pointer", aclrtFree(parent_ptr));
    REPORT("child.launch_parent_tensors", parent_work.Launch(nullptr));
    REPORT("child.sync_parent_tensors", aclrtSynchronizeStream(nullptr));
    REPORT("child.fresh_work", FreshWorkInChild());
    REPORT("child.reset", aclrtResetDevice(0));
    REPORT("child.finalize", aclFinalize());
}

// The parent used a stream and has more work queued on it and on the default stream when it forks.
int ChildAfterUse() {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    AttentionWork work(8, 2048);
    CHECK_OK(work.Create());
    CHECK_OK(work.Launch(stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(work.Launch(stream));
    CHECK_OK(work.Launch(stream));
    CHECK_OK(work.Launch(nullptr));
    pid_t pid = Fork();
    if (pid == 0) {
        Child(work, stream);
        exit(0);
    }
    REPORT("parent.child_status", Reap(pid));
    REPORT("parent.sync", aclrtSynchronizeStream(stream));
    REPORT("parent.sync_default", aclrtSynchronizeStream(nullptr));
    REPORT("parent.finished", work.Finished());
    TearDown(stream);
    return 0;
}

// A thread keeps launching and synchronising while another forks, several times over.
int ForkWhileOtherThreadWorks() {
    aclrtStream unused;
    CHECK_OK(SetUp(&unused));
    aclrtContext ctx;
    CHECK_OK(aclrtGetCurrentContext(&ctx));
    std::atomic<bool> stop(false);
    std::atomic<int> rounds(0);
    int failure = 0;
    std::thread worker([&] {
        aclrtSetCurrentContext(ctx);
        aclrtStream stream;
        AttentionWork work(4, 1024);
        failure = aclrtCreateStream(&stream) || work.Create();
        while (!stop && !failure) {
            failure = work.Launch(stream) || work.Launch(stream) || aclrtSynchronizeStream(stream) || !work.Finished();
            rounds++;
        }
        aclrtDestroyStream(stream);
    });
    while (rounds.load() == 0 && !failure) std::this_thread::yield();
    int children_ok = 0;
    const int children = 5;
    for (int i = 0; i < children; i++) {
        pid_t pid = Fork();
        if (pid == 0) exit(aclInit(nullptr) == 0 && aclrtSetDevice(0) == 0 && FreshWorkInChild() == 1 ? 0 : 1);
        children_ok += Reap(pid) == 0;
    }
    stop = true;
    worker.join();
    printf("fork.children %d\n", children);
    printf("fork.children_ok %d\n", children_ok);
    REPORT("fork.parent_thread_failure", failure);
    TearDown(unused);
    return 0;
}

// The exit test run many times cheaply: each child initialises, queues work, and returns from its
// "main" (exit) without synchronising. Every child must exit with status 0.
int ExitWithoutSynchronisingInChildren(int children) {
    CHECK_OK(aclInit(nullptr));    // starts the emulator once, in the parent
    int exited_zero = 0;
    for (int i = 0; i < children; i++) {
        pid_t pid = Fork();
        if (pid == 0) {
            aclrtStream stream;
            AttentionWork *work = new AttentionWork(4, 1024);   // leaked, as a program that just returns
            bool ok = SetUp(&stream) == 0 && work->Create() == 0 && work->Launch(stream) == 0 &&
                      work->Launch(stream) == 0 && work->Launch(nullptr) == 0;
            exit(ok ? 0 : 1);
        }
        int status = Reap(pid);
        exited_zero += status == 0;
        if (status != 0) printf("exit.child_%d_status %d\n", i, status);
    }
    printf("exit.children %d\n", children);
    printf("exit.children_exit_0 %d\n", exited_zero);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    std::string which = argc > 1 ? argv[1] : "";
    if (which == "child_after_use") return ChildAfterUse();
    if (which == "fork_while_other_thread_works") return ForkWhileOtherThreadWorks();
    if (which == "exit_without_synchronising_in_children") return ExitWithoutSynchronisingInChildren(100);
    fprintf(stderr, "unknown case %s\n", which.c_str());
    return 2;
}
