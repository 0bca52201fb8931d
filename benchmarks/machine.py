"""What a benchmark ran on, and how to run it as another x86 machine would.

`describe()` is the machine line every benchmark prints first: CPU model and cores, the ISA level of
aclnn-emu's compiled loops, numpy's BLAS with the kernel it picked and its threads, PyTorch's CPU
capability and threads.

`start()` parses a benchmark's command line with `--isa`, re-runs it as asked and prints the line.
`--isa avx2` re-runs a benchmark with every library held to AVX2, so the
numbers of an AVX2-only machine can be reproduced on an AVX-512 one: aclnn-emu's loops
(ACLNN_EMU_ISA), OpenBLAS's kernels (Haswell), numpy's SIMD dispatch, PyTorch's kernels with its MKL
and oneDNN, and glibc's string functions. `--isa baseline` holds only aclnn-emu's loops to x86-64 (the others keep their own
choice), to measure what the loops' vectorisation is worth. `--caches L1,L2,L3` (e.g. 32K,512K,16M,
the per-core L1 and L2 and the L3 of an AVX2 EPYC) has aclnn-emu's loops block for those cache sizes
(ACLNN_EMU_CACHE_SIZES), to model a core with smaller caches.
"""

import ctypes
import os
import platform
import subprocess
import sys

_AVX512_NUMPY = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
AS_AVX2 = {
    "ACLNN_EMU_ISA": "avx2",
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": _AVX512_NUMPY,
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # PyTorch's sgemm (MKL picks AVX-512 on Intel CPUs that have it)
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD",
}
AS_BASELINE = {"ACLNN_EMU_ISA": "baseline"}
_RERUN = "BENCHMARK_RUN_AS_ISA"


def start(parser=None):
    """A benchmark's arguments from `parser` (a bare one if None) plus --isa; re-runs the script as
    that machine if asked, prints the machine line, returns the arguments."""
    import argparse

    parser = parser or argparse.ArgumentParser()
    parser.add_argument(
        "--isa",
        choices=("auto", "avx2", "baseline"),
        default="auto",
        help="run as a machine with this instruction set (see benchmarks/machine.py)",
    )
    parser.add_argument(
        "--caches", default="", help="L1,L2,L3 sizes for aclnn-emu's blocking, e.g. 32K,512K,16M (see machine.py)"
    )
    args = parser.parse_args()
    _rerun_as(args.isa, args.caches)
    print(describe(), flush=True)
    return args


def _rerun_as(isa: str, caches: str) -> None:
    """Re-run this script with the environment of `isa` and `caches` (once; the re-run carries on)."""
    wanted = f"{isa} {caches}".strip()
    if (isa == "auto" and not caches) or os.environ.get(_RERUN) == wanted:
        return
    env = {**os.environ, **{"auto": {}, "avx2": AS_AVX2, "baseline": AS_BASELINE}[isa], _RERUN: wanted}
    if caches:
        env["ACLNN_EMU_CACHE_SIZES"] = caches
    sys.exit(subprocess.run([sys.executable] + sys.argv, env=env).returncode)


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _openblas() -> str:
    """numpy's BLAS: name, version, the kernel it runs and its threads (OpenBLAS answers itself)."""
    import numpy as np

    info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    text = f"{info.get('name')} {info.get('version')}"
    path = next((line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()), None)
    if path:
        lib = ctypes.CDLL(path)
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", ""), ("openblas", "64_")):
            corename = getattr(lib, f"{prefix}_get_corename{suffix}", None)
            threads = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if corename and threads:
                corename.restype = ctypes.c_char_p
                return f"{text}, kernel {corename().decode()}, {threads()} threads"
    return text


def _torch() -> str:
    try:
        import torch
    except ImportError:
        return "PyTorch not installed"
    return f"PyTorch {torch.__version__} {torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads"


def describe() -> str:
    from aclnn_emu.kernels import native, parallel

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    forced = f" (forced by {os.environ[_RERUN]} run)" if _RERUN in os.environ else ""
    caches = "/".join(f"{size >> 10}K" for size in native.cache_sizes())
    return (
        f"machine: {_cpu_model()}, {cores} cores; aclnn-emu loops {native.isa()} (CPU best "
        f"{native.best_isa()}){forced}, blocked for caches {caches}, {parallel.workers()} workers; "
        f"BLAS {_openblas()}; {_torch()}"
    )


if __name__ == "__main__":
    print(describe())
