// Several threads make the process's first ACL calls at once: one starts the emulator, the others
// wait for it, and every call succeeds (then the threads keep calling, sharing the interpreter).
#include <cstdio>
#include <thread>
#include <vector>

#include "acl/acl.h"

int main() {
    std::vector<std::thread> threads;
    std::vector<int> failures(8, 0);
    for (int t = 0; t < 8; t++) {
        threads.emplace_back([t, &failures] {
            for (int i = 0; i < 50; i++) {
                uint32_t count = 0;
                failures[t] += aclrtGetDeviceCount(&count) != 0 || count != 1;
            }
        });
    }
    for (auto &thread : threads) thread.join();
    int failed = 0;
    for (int f : failures) failed += f;
    printf("failed_calls %d\n", failed);
    return 0;
}
