/* Start-up of the embedded emulator; included ahead of the generated wrappers (build.py), after
   aclemu_built_python (the interpreter that built this library, recorded by build.py). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <algorithm>
#include <string>
static int cffi_start_python(void);
/* The getters hand out arrays the caller releases with delete[]. */
static int64_t *aclemu_new_int64(size_t n) { return new int64_t[n ? n : 1]; }
static const char *aclemu_library_path(void) {
    Dl_info info;
    return dladdr((void *)&aclemu_library_path, &info) && info.dli_fname ? info.dli_fname : "";
}

/* Why the emulator could not start, for stderr (printed once) and aclGetRecentErrMsg. Written
   once, before aclemu_boot_state turns -1. */
static char aclemu_boot_message_text[2048];
static const char *aclemu_boot_message(void) { return aclemu_boot_message_text; }
static void aclemu_fail(const std::string &reason, const std::string &fix) {
    snprintf(aclemu_boot_message_text, sizeof aclemu_boot_message_text,
             "aclnn-emu: cannot start the emulator, so every ACL call returns an error: %.1000s\n"
             "aclnn-emu: fix: %.900s", reason.c_str(), fix.c_str());
}
static void aclemu_boot_failed(void) {
    static int printed = 0;
    if (!__atomic_exchange_n(&printed, 1, __ATOMIC_ACQ_REL)) fprintf(stderr, "%s\n", aclemu_boot_message_text);
}

/* Where this library and its Python live, worked out once by aclemu_start. */
static std::string aclemu_library;       /* this library, symbolic links resolved */
static std::string aclemu_package_root;  /* the directory holding this library's aclnn_emu package */
static bool aclemu_in_site_packages = false;
static std::string aclemu_python;        /* the interpreter started (or the host's, under ctypes) */
static char aclemu_version[32];          /* pythonX.Y of the libpython this library links */

static std::string aclemu_dirname(std::string path, int levels = 1) {
    for (int i = 0; i < levels; i++) {
        size_t slash = path.find_last_of('/');
        path.erase(slash == std::string::npos ? 0 : std::max<size_t>(slash, 1));
    }
    return path;
}
static std::string aclemu_basename(const std::string &path) { return path.substr(path.find_last_of('/') + 1); }

/* Installed, the library is <prefix>/lib/pythonX.Y/site-packages/aclnn_emu/_toolkit/lib64/libascendcl.so;
   editable, it lives in the source tree (<root>/aclnn_emu/_toolkit/lib64/). */
static void aclemu_locate_library(void) {
    char resolved[PATH_MAX];
    aclemu_library = realpath(aclemu_library_path(), resolved) ? resolved : aclemu_library_path();
    snprintf(aclemu_version, sizeof aclemu_version, "python%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    aclemu_package_root = aclemu_dirname(aclemu_library, 4);
    aclemu_in_site_packages = aclemu_basename(aclemu_package_root) == "site-packages" &&
                              aclemu_basename(aclemu_dirname(aclemu_library, 5)) == aclemu_version &&
                              aclemu_basename(aclemu_dirname(aclemu_library, 6)) == "lib";
}

/* The command that reinstalls the package with `python`: editable again if the library lives in a
   checkout (an editable install, whose library only a build in the checkout repairs), else from a
   checkout or wheel. */
static std::string aclemu_reinstall_command(const std::string &python) {
    bool checkout = !aclemu_in_site_packages && access((aclemu_package_root + "/setup.py").c_str(), F_OK) == 0;
    if (!checkout) return "`" + python + " -m pip install --force-reinstall <aclnn-emu checkout or wheel>`";
    return "`cd " + aclemu_package_root + " && " + python + " -m pip install -e .`";
}
static std::string aclemu_reinstall_command(void) { return aclemu_reinstall_command(aclemu_python); }

/* The interpreter of the environment this library is installed in: <prefix>/bin/pythonX.Y, whose
   getpath honours the venv's pyvenv.cfg. A wheel may be installed into another environment than
   the one that built it, so the location comes first; an editable install only has the build's
   record (aclemu_built_python). Returns "" (and says why) if neither exists. */
static std::string aclemu_find_python(void) {
    std::string derived = aclemu_in_site_packages ? aclemu_dirname(aclemu_library, 7) + "/bin/" + aclemu_version : "";
    if (!derived.empty() && access(derived.c_str(), X_OK) == 0) return derived;
    if (access(aclemu_built_python, X_OK) == 0) return aclemu_built_python;
    aclemu_fail("no Python to run it: " + (derived.empty() ? "" : derived + " and ") + aclemu_built_python +
                " do not exist (the library is " + aclemu_library + ")",
                "reinstall aclnn-emu with the Python it should use: " + aclemu_reinstall_command(aclemu_version));
    return "";
}

/* The command that checks an install. */
static std::string aclemu_doctor_hint(void) {
    return " (`" + aclemu_dirname(aclemu_python) + "/aclnn-emu doctor` checks the install)";
}

/* Start the interpreter with an explicit configuration: the caller's PYTHONHOME, PYTHONPATH, user
   site and current directory play no part, Python installs no signal handlers and leaves the
   program's locale and stdio alone. On success the GIL is held. */
static int aclemu_init_python(void) {
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    config.pathconfig_warnings = 0;
    config.parse_argv = 0;
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, aclemu_python.c_str());
    if (!PyStatus_Exception(status))
        status = PyConfig_SetBytesString(&config, &config.executable, aclemu_python.c_str());
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (!PyStatus_Exception(status)) return 0;
    std::string what = status.err_msg ? status.err_msg : "exit status " + std::to_string(status.exitcode);
    aclemu_fail(aclemu_python + " does not start (" + (status.func ? std::string(status.func) + ": " : "") +
                what + ")", "reinstall aclnn-emu with a working Python: " + aclemu_reinstall_command());
    return -1;
}

/* "Type: message" of the pending Python exception, which is cleared. */
static std::string aclemu_take_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *value = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
#endif
    std::string text = value ? Py_TYPE(value)->tp_name : "unknown error";
    PyObject *str = value ? PyObject_Str(value) : NULL;
    const char *message = str ? PyUnicode_AsUTF8(str) : NULL;
    if (message && *message) text += std::string(": ") + message;
    Py_XDECREF(str);
    Py_XDECREF(value);
    PyErr_Clear();
    return text;
}

/* sys.path gets ACLNN_EMU_PYTHONPATH's entries first, then the directory holding this library's
   package (a source tree, or a site-packages the interpreter does not know, such as a user site),
   before cffi imports anything: these add to the interpreter's search path, never replace it. */
static void aclemu_extend_path(void) {
    PyObject *path = PySys_GetObject("path");   /* borrowed */
    if (!path || !PyList_Check(path)) return;
    Py_ssize_t at = 0;
    const char *extra = getenv("ACLNN_EMU_PYTHONPATH");
    std::string entries = extra ? extra : "";
    for (size_t start = 0; start <= entries.size();) {
        size_t end = entries.find(':', start);
        if (end == std::string::npos) end = entries.size();
        PyObject *entry = end > start ? PyUnicode_DecodeFSDefault(entries.substr(start, end - start).c_str()) : NULL;
        if (entry && PyList_Insert(path, at, entry) == 0) at++;
        Py_XDECREF(entry);
        start = end + 1;
    }
    PyObject *root = PyUnicode_DecodeFSDefault(aclemu_package_root.c_str());
    if (root && PySequence_Contains(path, root) == 0) PyList_Insert(path, at, root);
    Py_XDECREF(root);
    PyErr_Clear();
}

/* Set by the init code (init_code.py) once it has attached the bindings, or with what failed. */
enum { ACLEMU_BOOT_OK = 0, ACLEMU_BOOT_IMPORT = 1, ACLEMU_BOOT_ERROR = 2, ACLEMU_BOOT_STALE = 3 };
static int aclemu_boot_reported = -1;
static void aclemu_boot_report(int problem, const char *detail) {
    aclemu_boot_reported = problem;
    if (problem == ACLEMU_BOOT_OK) return;
    std::string what = detail ? detail : "unknown error";
    if (problem == ACLEMU_BOOT_STALE)
        aclemu_fail("this library does not match the aclnn_emu package beside it (" + what + ")",
                    "rebuild it: `" + aclemu_dirname(aclemu_python) + "/aclnn-emu build`");
    else if (problem == ACLEMU_BOOT_IMPORT)
        aclemu_fail(aclemu_python + " cannot import the emulator: " + what,
                    "reinstall aclnn-emu and its dependencies: " + aclemu_reinstall_command() + aclemu_doctor_hint());
    else
        aclemu_fail(aclemu_python + " failed to start the emulator: " + what,
                    "correct what the message names, or ask `" + aclemu_dirname(aclemu_python) + "/aclnn-emu doctor`");
}

/* With the GIL held: let cffi set the library up as a module of the running interpreter and run
   the init code. cffi's own failures print a traceback, so what can fail (cffi missing) is tried
   first; the init code itself never raises but reports. Before cffi_start_python, the type
   attribute cache's tag on PyCapsule_Type is cleared: on Python 3.8-3.11 cffi uses that
   tp_version_tag as its start-up spin lock and waits for it to be 0, which it no longer is once
   the cache has tagged the type (numpy or torch do), so the first call would spin forever; holding
   the GIL keeps other Python threads from re-tagging it meanwhile. */
static int aclemu_attach(void) {
    aclemu_extend_path();
    PyObject *backend = PyImport_ImportModule("_cffi_backend");
    if (!backend) {
        aclemu_fail(aclemu_python + " cannot import cffi: " + aclemu_take_exception(),
                    "reinstall aclnn-emu and its dependencies: " + aclemu_reinstall_command() + aclemu_doctor_hint());
        return -1;
    }
    Py_DECREF(backend);
    PyType_Modified(&PyCapsule_Type);
    if (cffi_start_python() != 0) {
        aclemu_fail("cffi could not load this library into " + aclemu_python + " (its message is above)",
                    "reinstall aclnn-emu: " + aclemu_reinstall_command() + aclemu_doctor_hint());
        return -1;
    }
    if (aclemu_boot_reported < 0)
        aclemu_fail("the start-up code of this library did not finish", "rebuild it: `" +
                    aclemu_dirname(aclemu_python) + "/aclnn-emu build`");
    return aclemu_boot_reported == ACLEMU_BOOT_OK ? 0 : -1;
}

/* Python 3.10 installs its SIGINT handler when the signal module is first imported, even with
   install_signal_handlers = 0 (3.11 no longer does): import it during start-up and give the program
   back the SIGINT disposition it had, so Ctrl-C still stops it. */
static void aclemu_keep_sigint(const struct sigaction *before) {
    Py_XDECREF(PyImport_ImportModule("signal"));
    PyErr_Clear();
    sigaction(SIGINT, before, NULL);
}

/* The Python program's own interpreter, when a running Python loaded this library (ctypes). */
static std::string aclemu_host_python(void) {
    PyObject *executable = PySys_GetObject("executable");   /* borrowed */
    const char *text = executable && PyUnicode_Check(executable) ? PyUnicode_AsUTF8(executable) : NULL;
    PyErr_Clear();
    return text ? text : "python";
}

/* Start the embedded emulator once. Inside an already running interpreter (a Python program
   loading this library with ctypes) the emulator joins it; otherwise this library starts the
   Python of its own install. A mutex of our own (taken without the GIL) makes the first callers
   of several threads queue up. */
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
            aclemu_locate_library();
            aclemu_python = aclemu_host_python();
            rc = aclemu_attach();
            PyGILState_Release(gil);
        } else {
            struct sigaction sigint;
            sigaction(SIGINT, NULL, &sigint);
            aclemu_locate_library();
            aclemu_python = aclemu_find_python();
            rc = aclemu_python.empty() ? -1 : aclemu_init_python();
            if (rc == 0) {
                rc = aclemu_attach();
                aclemu_keep_sigint(&sigint);
                PyEval_SaveThread();   /* release the GIL the start-up thread holds */
            }
        }
        state = rc == 0 ? 1 : -1;
        __atomic_store_n(&aclemu_boot_state, state, __ATOMIC_RELEASE);
        if (state > 0) aclemu_lifecycle_started(&aclemu_boot_state);
    }
    pthread_mutex_unlock(&aclemu_boot_lock);
    return state > 0 ? 0 : -1;
}
