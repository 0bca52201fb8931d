// Prints 100 lines of 50 bytes through a buffered stdout, and leaks one device allocation, which the
// emulator's sanitizer reports on stderr at aclFinalize.
#include <cstdio>
#include "acl/acl.h"

int main() {
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    void *leaked = nullptr;
    if (aclrtMalloc(&leaked, 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
    for (int i = 0; i < 100; ++i) printf("line %03d ........................................\n", i);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
