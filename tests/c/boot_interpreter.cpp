// Which interpreter the library started, seen from inside it: after aclInit the program asks the
// embedded Python (through libpython's C API, found with dlsym) for its paths, and checks that the
// start-up left the program's signal dispositions and locale alone.
#include <clocale>
#include <csignal>
#include <cstdio>
#include <dlfcn.h>
#include <initializer_list>

#include "acl/acl.h"

int main() {
    int ret = aclInit(nullptr);
    printf("aclInit %d\n", ret);
    if (ret != 0) return 1;
    int untouched = 1;
    for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGXFSZ}) {
        struct sigaction action;
        sigaction(sig, nullptr, &action);
        untouched &= action.sa_handler == SIG_DFL;
    }
    printf("signals_default %d\n", untouched);
    printf("locale %s\n", setlocale(LC_CTYPE, nullptr));
    auto ensure = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
    auto release = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
    auto run = reinterpret_cast<int (*)(const char *)>(dlsym(RTLD_DEFAULT, "PyRun_SimpleString"));
    if (!ensure || !release || !run) return 2;
    int gil = ensure();
    run("import json, os, sys, aclnn_emu, numpy\n"
        "print('python ' + json.dumps({'executable': sys.executable, 'prefix': sys.prefix,\n"
        "    'base_prefix': sys.base_prefix, 'version': list(sys.version_info[:2]), 'path': sys.path,\n"
        "    'os': os.__file__, 'aclnn_emu': aclnn_emu.__file__, 'numpy': numpy.__file__,\n"
        "    'isolated': sys.flags.isolated}), flush=True)\n");
    release(gil);
    return aclFinalize();
}
