/* Exit and fork for C programs (included ahead of boot.cpp by build.py; what the runtime does is in
   aclnn_emu/runtime/lifecycle.py).

   Exit: the embedded interpreter is never finalised, so Python's atexit hooks never run. A C atexit
   handler, registered once the emulator has started, stops the stream workers instead; atexit
   handlers run before the ELF destructors (OpenBLAS's among them), so no worker is inside BLAS when
   those run.

   Fork: a fork() from C runs no Python at-fork hook. pthread_atfork handlers do what os.fork does
   (PyOS_BeforeFork / PyOS_AfterFork_Parent / PyOS_AfterFork_Child, with the GIL), which also runs
   the runtime's own hooks. They stand aside when the fork is Python's own os.fork, which has done
   all of that already: a hook registered with os.register_at_fork marks such a fork in the forking
   thread. */
#include <pthread.h>
#include <stdlib.h>

static int *aclemu_lifecycle_state = nullptr;          /* boot.cpp's aclemu_boot_state: 1 = running */
static __thread int aclemu_python_forking = 0;          /* inside os.fork, in the forking thread */
static __thread int aclemu_fork_wrapped = 0;            /* the prepare handler took the GIL */
static __thread PyGILState_STATE aclemu_fork_gil;

static int aclemu_python_running(void) {
    return aclemu_lifecycle_state && __atomic_load_n(aclemu_lifecycle_state, __ATOMIC_ACQUIRE) == 1 &&
           Py_IsInitialized();
}

static void aclemu_stop_at_exit(void) {
    if (!aclemu_python_running()) return;   /* also after a Python host finalised itself */
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *module = PyImport_ImportModule("aclnn_emu.runtime.lifecycle");
    PyObject *result = module ? PyObject_CallMethod(module, "stop_at_exit", nullptr) : nullptr;
    if (result == nullptr) PyErr_Print();
    Py_XDECREF(result);
    Py_XDECREF(module);
    PyGILState_Release(gil);
}

static void aclemu_fork_prepare(void) {
    aclemu_fork_wrapped = !aclemu_python_forking && aclemu_python_running();
    if (!aclemu_fork_wrapped) return;
    aclemu_fork_gil = PyGILState_Ensure();
    PyOS_BeforeFork();
}

static void aclemu_fork_parent(void) {
    if (!aclemu_fork_wrapped) return;
    aclemu_fork_wrapped = 0;
    PyOS_AfterFork_Parent();
    PyGILState_Release(aclemu_fork_gil);
}

static void aclemu_fork_child(void) {
    if (!aclemu_fork_wrapped) return;
    aclemu_fork_wrapped = 0;
    PyOS_AfterFork_Child();
    PyGILState_Release(aclemu_fork_gil);
}

static PyObject *aclemu_mark_python_fork(PyObject *, PyObject *) {
    aclemu_python_forking = 1;
    Py_RETURN_NONE;
}

static PyObject *aclemu_unmark_python_fork(PyObject *, PyObject *) {
    aclemu_python_forking = 0;
    Py_RETURN_NONE;
}

static PyMethodDef aclemu_fork_marks[] = {
    {"aclemu_mark_python_fork", aclemu_mark_python_fork, METH_NOARGS, nullptr},
    {"aclemu_unmark_python_fork", aclemu_unmark_python_fork, METH_NOARGS, nullptr},
};

/* os.register_at_fork(before=mark, after_in_parent=unmark, after_in_child=unmark); with the GIL. */
static void aclemu_register_python_fork_marks(void) {
    PyObject *mark = PyCFunction_New(&aclemu_fork_marks[0], nullptr);
    PyObject *unmark = PyCFunction_New(&aclemu_fork_marks[1], nullptr);
    PyObject *os = PyImport_ImportModule("os");
    PyObject *do_register = os ? PyObject_GetAttrString(os, "register_at_fork") : nullptr;
    PyObject *args = PyTuple_New(0);
    PyObject *kwargs = Py_BuildValue("{sOsOsO}", "before", mark, "after_in_parent", unmark, "after_in_child", unmark);
    PyObject *result = do_register && args && kwargs ? PyObject_Call(do_register, args, kwargs) : nullptr;
    if (result == nullptr) PyErr_Print();
    Py_XDECREF(result);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(do_register);
    Py_XDECREF(os);
    Py_XDECREF(unmark);
    Py_XDECREF(mark);
}

/* Called by aclemu_start() once the emulator is up (under its boot lock, so once). */
static void aclemu_lifecycle_started(int *boot_state) {
    aclemu_lifecycle_state = boot_state;
    PyGILState_STATE gil = PyGILState_Ensure();
    aclemu_register_python_fork_marks();
    PyGILState_Release(gil);
    pthread_atfork(aclemu_fork_prepare, aclemu_fork_parent, aclemu_fork_child);
    atexit(aclemu_stop_at_exit);
}
