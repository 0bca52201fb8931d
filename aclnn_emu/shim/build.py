"""Build the drop-in CANN toolkit: lib64/libascendcl.so (a cffi embedding library), its alias
libraries, include/, set_env.sh and samples/.

Every exported function is a generated C++ wrapper that first makes sure the embedded interpreter
is up (returning an error code, never 0, if it is not) and then calls its Python binding; the pure
helpers (prototypes.IN_C) are plain C (pure.cpp). The library records the interpreter that built it
(boot.cpp starts it when the library's own location names none) and the element sizes of dtypes.py.

The hand-written C++ (lifecycle.cpp: exit and fork hooks; boot.cpp, pure.cpp, applog.cpp) and the
embedding init code (init_code.py) sit beside this file, so an installed package can rebuild its own toolkit (`aclnn-emu build`).

Usage: python -m aclnn_emu.shim.build [OUT_DIR]     (pip install runs this through setup.py)
"""

import os
import pathlib
import shutil
import sys
import sysconfig
import tempfile

import cffi

from .. import dtypes
from ..capi.declarations import include_dir, runtime_declarations
from ..capi.prototypes import IN_C, TYPES, runtime_prototypes
from ..opdef.registry import all_ops
from ..runtime import version
from . import refusals

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = HERE.parent
# A source checkout holds the headers in include/; an installed package only in its built toolkit.
SOURCE_INCLUDE = PACKAGE.parent / "include"
SOURCE_SAMPLES = PACKAGE.parent / "samples"
# What of samples/ the toolkit ships: the sources, the chip a sample needs (x.soc), the CMake recipe.
SAMPLE_FILES = ("*.cpp", "*.soc", "CMakeLists.txt")

MODULE = "_aclnn_emu_shim"
LIBRARY = "libascendcl.so"
# Library names the official recipes link; each is the same library (SONAME libascendcl.so).
ALIASES = (
    "libnnopbase.so",
    "libopapi.so",
    "libopapi_math.so",
    "libopapi_nn.so",
    "libopapi_transformer.so",
    "libacl_rt.so",
    "libacl_op_compiler.so",
)


def exports():
    """(return type, name, [(ctype, arg name)], boot failure) for every function with a Python binding."""
    items = [
        (p.ret, p.name, list(zip(p.args, p.arg_names)), p.boot_failure) for p in runtime_prototypes() if not p.in_c
    ]
    for op in all_ops():
        params = [
            (f"{ctype} {name}" if not ctype.endswith("*") else f"{ctype}{name}", name)
            for ctype, name in op.cffi_params()
        ]
        for phase1 in (op.phase1, *op.undeclared_phase1):
            items.append(("aclnnStatus", phase1, params, "561000"))
        items.append(
            (
                "aclnnStatus",
                op.phase2,
                [
                    ("void *workspace", "workspace"),
                    ("uint64_t workspaceSize", "workspaceSize"),
                    ("void *executor", "executor"),
                    ("void *stream", "stream"),
                ],
                "561000",
            )
        )
    return items


def refused():
    """The declared runtime functions neither bound to Python nor written in C: generated refusals."""
    implemented = {p.name for p in runtime_prototypes()} | IN_C | {"aclAppLog"}
    return [d for d in runtime_declarations() if d.name not in implemented]


def _python_decl(ret, name, params):
    return f"{ret} _py_{name}({', '.join(c for c, _ in params) or 'void'})"


def _c_string(text: str) -> str:
    """A C string literal holding `text`'s UTF-8 bytes exactly."""
    return (
        '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}" for b in text.encode()) + '"'
    )


def recorded_facts(items) -> str:
    """C definitions of what the library records at build time: the interpreter building it, the
    functions whose Python bindings the init code must attach, and the element size of every
    aclDataType (dtypes.SIZE, indexed by enum value)."""
    sizes = [0] * (max(dtypes.SIZE) + 1)
    for dt, size in dtypes.SIZE.items():
        sizes[dt] = size
    return (
        f"static const char aclemu_built_python[] = {_c_string(sys.executable)};\n"
        f"static const char aclemu_bindings[] = {_c_string(' '.join(item[1] for item in items))};\n"
        f"static const size_t aclemu_dtype_sizes[] = {{{', '.join(map(str, sizes))}}};"
    )


def sources():
    """(cdef, C++ source) for cffi."""
    items = exports()
    cdef = [
        TYPES,
        "int64_t *aclemu_new_int64(size_t n);",
        "void aclemu_boot_report(int problem, const char *detail);",
        "extern const char aclemu_bindings[];",
        "#define ACLEMU_BOOT_OK ...",
        "#define ACLEMU_BOOT_IMPORT ...",
        "#define ACLEMU_BOOT_ERROR ...",
        "#define ACLEMU_BOOT_STALE ...",
        'extern "Python" void _py_aclAppLog(int, const char *, const char *, uint32_t, const char *);',
        'extern "Python" int _py_aclemu_refused(const char *);',
    ]
    cdef += [f'extern "Python" {_python_decl(*item[:3])};' for item in items]
    src = [
        TYPES,
        recorded_facts(items),
        (HERE / "lifecycle.cpp").read_text(),
        (HERE / "boot.cpp").read_text(),
        (HERE / "pure.cpp").read_text(),
        "static void _py_aclAppLog(int, const char *, const char *, uint32_t, const char *);",
        "static int _py_aclemu_refused(const char *);",
        # The refusals (refusals.py, another translation unit) come through here to reach Python.
        'extern "C" int aclemu_refuse(const char *name) {\n'
        "    if (aclemu_start() != 0) { aclemu_boot_failed(); return 500000; }\n"
        "    return _py_aclemu_refused(name);\n}",
    ]
    for ret, name, params, failure in items:
        src.append(f"static {_python_decl(ret, name, params)};")
        args = ", ".join(n for _, n in params)
        src.append(
            f'extern "C" CFFI_DLLEXPORT {ret} {name}({", ".join(c for c, _ in params)}) {{\n'
            f"    if (aclemu_start() != 0) {{ aclemu_boot_failed(); return ({ret}){failure}; }}\n"
            f"    return _py_{name}({args});\n}}"
        )
    src.append((HERE / "applog.cpp").read_text())
    return "\n".join(cdef), "\n".join(src)


def build(out: pathlib.Path) -> pathlib.Path:
    """Write the whole toolkit into `out` (lib64/, include/, set_env.sh, samples/)."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise SystemExit("aclnn-emu needs a Python built with --enable-shared (libpython3.x.so)")
    cdef, source = sources()
    ffi = cffi.FFI()
    ffi.embedding_api("")
    ffi.cdef(cdef)
    libdir = sysconfig.get_config_var("LIBDIR")
    tmp = tempfile.TemporaryDirectory()
    refusal_source = pathlib.Path(tmp.name) / "refusals.cpp"
    refusal_source.write_text(refusals.source(refused()))
    ffi.set_source(
        MODULE,
        source,
        source_extension=".cpp",
        sources=[str(refusal_source)],
        include_dirs=[str(include_dir())],
        libraries=["stdc++", "dl"],
        extra_compile_args=["-O2", "-Wno-unused-function", "-Wno-deprecated-declarations"],
        extra_link_args=[f"-Wl,-rpath,{libdir}", f"-Wl,-soname,{LIBRARY}"],
    )
    ffi.embedding_init_code((HERE / "init_code.py").read_text())
    lib64 = out / "lib64"
    lib64.mkdir(parents=True, exist_ok=True)
    with tmp:
        built = pathlib.Path(ffi.compile(tmpdir=tmp.name, target="libascendcl.*", verbose=False))
        for name in (LIBRARY,) + ALIASES:  # real copies: wheels do not keep symlinks
            _replace(built, lib64 / name)
    (out / "opp").mkdir(exist_ok=True)
    include = out / "include"
    if SOURCE_INCLUDE.is_dir() and SOURCE_INCLUDE.resolve() != include.resolve():
        if include.exists():
            shutil.rmtree(include)
        shutil.copytree(SOURCE_INCLUDE, include)
    elif not include.is_dir():
        raise SystemExit(f"no headers to install: neither {SOURCE_INCLUDE} nor {include} exists")
    (out / "set_env.sh").write_text(set_env_script())
    for package in version.PACKAGES:  # what aclsysGetVersionStr/Num read, as in a CANN install
        info = out / "share" / "info" / package
        info.mkdir(parents=True, exist_ok=True)
        (info / "version.info").write_text(version.version_info_text())
    install_samples(out / "samples")
    return out


def install_samples(target: pathlib.Path) -> None:
    """Ship the spec samples with the toolkit, as a CANN toolkit ships its samples, so `aclnn-emu samples`
    works without a checkout. An installed package (no samples/ beside it) keeps the copy it has."""
    if not SOURCE_SAMPLES.is_dir() or SOURCE_SAMPLES.resolve() == target.resolve():
        return
    if target.exists():
        shutil.rmtree(target)
    target.mkdir()
    for pattern in SAMPLE_FILES:
        for path in SOURCE_SAMPLES.glob(pattern):
            shutil.copy2(path, target / path.name)


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
    print(build(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else PACKAGE / "_toolkit"))
