"""Build the drop-in CANN toolkit: lib64/libascendcl.so (a cffi embedding library), its alias
libraries, include/ and set_env.sh.

Every exported function is a generated C++ wrapper that first makes sure the embedded interpreter
is up (returning an error code, never 0, if it is not) and then calls its Python binding.

Usage: python -m shim.build OUT_DIR     (pip install runs this through setup.py)
"""
import os
import pathlib
import shutil
import sys
import sysconfig
import tempfile

import cffi

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aclnn_emu.capi.prototypes import TYPES, runtime_prototypes  # noqa: E402
from aclnn_emu.ops import all_ops  # noqa: E402

MODULE = "_aclnn_emu_shim"
LIBRARY = "libascendcl.so"
# Library names the official recipes link; each is the same library (SONAME libascendcl.so).
ALIASES = ("libnnopbase.so", "libopapi.so", "libopapi_math.so", "libopapi_nn.so",
           "libopapi_transformer.so", "libacl_rt.so", "libacl_op_compiler.so")

HELPERS_C = r"""
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
    }
    pthread_mutex_unlock(&aclemu_boot_lock);
    return state > 0 ? 0 : -1;
}
static void aclemu_boot_failed(const char *fn) {
    fprintf(stderr, "aclnn-emu: the embedded Python emulator failed to start; %s returns an error "
                    "(run `aclnn-emu doctor`)\n", fn);
}
"""

APPLOG_C = r"""
extern "C" CFFI_DLLEXPORT void aclAppLog(aclLogLevel logLevel, const char *func, const char *file,
                                         uint32_t line, const char *fmt, ...) {
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt ? fmt : "", args);
    va_end(args);
    if (aclemu_start() == 0) _py_aclAppLog(logLevel, func, file, line, message);
}
"""

INIT_PY = r'''
import os, site, sys
from _aclnn_emu_shim import ffi, lib
# The library sits in <package>/_toolkit/lib64/: make the directory holding the package importable
# (a venv's site-packages or a source checkout) before importing the emulator.
_lib = os.path.realpath(ffi.string(lib.aclemu_library_path()).decode())
_root = os.environ.get("ACLNN_EMU_PYTHONPATH") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_lib))))
if _root not in sys.path:
    site.addsitedir(_root)
    sys.path.insert(0, _root)
from aclnn_emu.capi import bindings
bindings.attach(ffi, lib)
'''


def exports():
    """(return type, name, [(ctype, arg name)]) for every exported function but aclAppLog."""
    items = [(p.ret, p.name, list(zip(p.args, p.arg_names)), p.boot_failure) for p in runtime_prototypes()]
    for op in all_ops():
        params = [(f"{ctype} {name}" if not ctype.endswith("*") else f"{ctype}{name}", name)
                  for ctype, name in op.cffi_params()]
        items.append(("aclnnStatus", op.phase1, params, "561000"))
        items.append(("aclnnStatus", op.phase2, [("void *workspace", "workspace"),
                                                  ("uint64_t workspaceSize", "workspaceSize"),
                                                  ("void *executor", "executor"), ("void *stream", "stream")],
                      "561000"))
    return items


def _python_decl(ret, name, params):
    return f"{ret} _py_{name}({', '.join(c for c, _ in params) or 'void'})"


def sources():
    """(cdef, C++ source) for cffi."""
    items = exports()
    cdef = [TYPES, "int64_t *aclemu_new_int64(size_t n);", "const char *aclemu_library_path(void);",
            'extern "Python" void _py_aclAppLog(int, const char *, const char *, uint32_t, const char *);']
    cdef += [f'extern "Python" {_python_decl(*item[:3])};' for item in items]
    src = [TYPES, HELPERS_C, "static void _py_aclAppLog(int, const char *, const char *, uint32_t, const char *);"]
    for ret, name, params, failure in items:
        src.append(f"static {_python_decl(ret, name, params)};")
        args = ", ".join(n for _, n in params)
        src.append(f'extern "C" CFFI_DLLEXPORT {ret} {name}({", ".join(c for c, _ in params)}) {{\n'
                   f'    if (aclemu_start() != 0) {{ aclemu_boot_failed("{name}"); return ({ret}){failure}; }}\n'
                   f'    return _py_{name}({args});\n}}')
    src.append(APPLOG_C)
    return "\n".join(cdef), "\n".join(src)


def build(out: pathlib.Path) -> pathlib.Path:
    """Write the whole toolkit into `out` (lib64/, include/, set_env.sh)."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise SystemExit("aclnn-emu needs a Python built with --enable-shared (libpython3.x.so)")
    cdef, source = sources()
    ffi = cffi.FFI()
    ffi.embedding_api("")
    ffi.cdef(cdef)
    libdir = sysconfig.get_config_var("LIBDIR")
    ffi.set_source(MODULE, source, source_extension=".cpp", libraries=["stdc++", "dl"],
                   extra_compile_args=["-O2", "-Wno-unused-function"],
                   extra_link_args=[f"-Wl,-rpath,{libdir}", f"-Wl,-soname,{LIBRARY}"])
    ffi.embedding_init_code(INIT_PY)
    lib64 = out / "lib64"
    lib64.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        built = pathlib.Path(ffi.compile(tmpdir=tmp, target="libascendcl.*", verbose=False))
        for name in (LIBRARY,) + ALIASES:   # real copies: wheels do not keep symlinks
            _replace(built, lib64 / name)
    (out / "opp").mkdir(exist_ok=True)
    include = out / "include"
    if include.exists():
        shutil.rmtree(include)
    shutil.copytree(ROOT / "include", include)
    (out / "set_env.sh").write_text(set_env_script())
    return out


def _replace(source: pathlib.Path, target: pathlib.Path) -> None:
    """Install a file by rename, so running programs that mapped the old library keep working."""
    staging = target.with_name(f".{target.name}.new")
    shutil.copy2(source, staging)
    os.replace(staging, target)


def set_env_script() -> str:
    return """# Source this file to use the aclnn-emu toolkit like a CANN install.
_aclnn_emu_home="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export ASCEND_HOME_PATH="${_aclnn_emu_home}"
export ASCEND_TOOLKIT_HOME="${_aclnn_emu_home}"
export ASCEND_CUSTOM_PATH="${_aclnn_emu_home}"
export ASCEND_OPP_PATH="${_aclnn_emu_home}/opp"
export LD_LIBRARY_PATH="${_aclnn_emu_home}/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
unset _aclnn_emu_home
"""


if __name__ == "__main__":
    print(build(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "aclnn_emu" / "_toolkit"))
