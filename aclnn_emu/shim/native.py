"""Build aclnn_emu.kernels._native, the compiled inner loops of the kernels: the C sources in
aclnn_emu/kernels (native.c, matmul.c, attention_blocks.c, attention_grad_blocks.c), each compiled on its own against
native.h, and the interface native_api.h, which is also cffi's declarations, so every constant the
Python side needs (lib.PANEL, lib.FP16_EVEN, ...) is read from the C.

setup.py hands `ffi` to cffi's setuptools integration (`cffi_modules`), so `pip install .` and
`pip install -e .` compile it like any other extension module.
"""

import pathlib

import cffi

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent  # setup.py's folder, where setuptools runs
KERNELS = pathlib.Path("aclnn_emu", "kernels")  # (setuptools takes paths relative to ROOT only)
SOURCES = tuple(KERNELS / name for name in ("native.c", "matmul.c", "attention_blocks.c", "attention_grad_blocks.c"))
HEADERS = (KERNELS / "native.h", KERNELS / "native_api.h")
DECLARATIONS = (ROOT / HEADERS[1]).read_text()
# -ffp-contract=off: no multiply-adds fused beyond the explicit fmaf calls, so every ISA version
# rounds identically; -fno-trapping-math: no FP exception is ever observed, so the compare-and-select
# roundings vectorise without AVX-512's masks too (results unchanged); -fopenmp-simd: the `omp simd`
# reductions vectorise without linking OpenMP.
FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd"]

ffi = cffi.FFI()
ffi.cdef(DECLARATIONS)
ffi.set_source(
    "aclnn_emu.kernels._native",
    '#include "native.h"',
    sources=[path.as_posix() for path in SOURCES],
    include_dirs=[KERNELS.as_posix()],
    depends=[path.as_posix() for path in HEADERS],
    extra_compile_args=FLAGS,
)
