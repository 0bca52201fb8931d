/* Start-up of the embedded emulator; included ahead of the generated wrappers (build.py). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
static int cffi_start_python(void);
/* The getters hand out arrays the caller releases with delete[]. */
static int64_t *aclemu_new_int64(size_t n) { return new int64_t[n ? n : 1]; }
static const char *aclemu_library_path(void) {
    Dl_info info;
    return dladdr((void *)&aclemu_library_path, &info) && info.dli_fname ? info.dli_fname : "";
}
/* Start the embedded emulator once. Inside an already running interpreter (a Python program
   loading this library with ctypes) the start-up runs with the GIL held and after
   PyType_Modified(&PyCapsule_Type): on Python 3.8-3.11 cffi uses that type's tp_version_tag as
   its start-up spin lock and waits for it to be 0, which it no longer is once the type
   attribute cache has tagged the type (numpy or torch do), so the first call would spin forever.
   Holding the GIL keeps other Python threads from re-tagging the type meanwhile; a mutex of our
   own (taken without the GIL) makes the first callers of several threads queue up. */
static pthread_mutex_t aclemu_boot_lock = PTHREAD_MUTEX_INITIALIZER;
static int aclemu_boot_state = 0;   /* 0 not started, 1 running, -1 failed */
static int aclemu_start(void) {
    int state = __atomic_load_n(&aclemu_boot_state, __ATOMIC_ACQUIRE);
    if (state != 0) return state > 0 ? 0 : -1;
    pthread_mutex_lock(&aclemu_boot_lock);
    state = aclemu_boot_state;
    if (state == 0) {
        int rc;
        if (Py_IsInitialized()) {
            PyGILState_STATE gil = PyGILState_Ensure();
            PyType_Modified(&PyCapsule_Type);
            rc = cffi_start_python();
            PyGILState_Release(gil);
        } else {
            rc = cffi_start_python();
        }
        state = rc == 0 ? 1 : -1;
        __atomic_store_n(&aclemu_boot_state, state, __ATOMIC_RELEASE);
        if (state > 0) aclemu_lifecycle_started(&aclemu_boot_state);
    }
    pthread_mutex_unlock(&aclemu_boot_lock);
    return state > 0 ? 0 : -1;
}
static void aclemu_boot_failed(const char *fn) {
    fprintf(stderr, "aclnn-emu: the embedded Python emulator failed to start; %s returns an error "
                    "(run `aclnn-emu doctor`)\n", fn);
}
