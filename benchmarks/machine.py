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

`peak_line()` measures the fp32 FMA peak of the cores at the loops' ISA level (fma_peak.c) and states
what share of it each contender of a dense benchmark reaches: no fp32 matmul runs faster, so it
bounds how far below PyTorch's time an operator can get.
"""

import ctypes
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile

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
# fma_peak.c's vector width per ISA level of aclnn-emu's loops
_FMA_FLAGS = {
    "avx2": ["-march=x86-64-v3", "-DVECTOR_BYTES=32"],
    "avx512": ["-march=x86-64-v4", "-mprefer-vector-width=512", "-DVECTOR_BYTES=64"],
}


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


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def fma_peak() -> float | None:
    """GFLOP/s of fp32 fused multiply-adds on every core at once (fma_peak.c, one process per core)
    at the ISA level aclnn-emu's loops run at; None at the baseline level or without a C compiler."""
    from aclnn_emu.kernels import native

    flags, cc = _FMA_FLAGS.get(native.isa()), shutil.which(os.environ.get("CC", "cc"))
    if flags is None or cc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "fma_peak")
        source = pathlib.Path(__file__).with_name("fma_peak.c")
        if subprocess.run([cc, "-O2", "-ffp-contract=fast", *flags, str(source), "-o", exe]).returncode:
            return None
        runs = [subprocess.Popen([exe], stdout=subprocess.PIPE, text=True) for _ in range(_cores())]
        return sum(float(run.communicate()[0].split()[0]) for run in runs)


def peak_line(flops: float, seconds: dict) -> str:
    """The FMA peak of the cores and the share of it each named run of `flops` reaches in its
    `seconds`, the first of them PyTorch; and the share 0.85 of PyTorch's time would need."""
    from aclnn_emu.kernels import native

    peak = fma_peak()
    if peak is None:
        return "FMA peak: not measured (no C compiler, or the baseline level)"
    shares = ", ".join(f"{name} {flops / t / 1e9 / peak:.0%}" for name, t in seconds.items())
    first = next(iter(seconds.values()))
    return (
        f"FMA peak of the {_cores()} cores ({native.isa()}): {peak:.0f} GFLOP/s; reached: {shares}; "
        f"0.85 of PyTorch's time needs {flops / (0.85 * first) / 1e9 / peak:.0%}"
    )


def describe() -> str:
    from aclnn_emu.kernels import native, parallel

    cores = _cores()
    forced = f" (forced by {os.environ[_RERUN]} run)" if _RERUN in os.environ else ""
    caches = "/".join(f"{size >> 10}K" for size in native.cache_sizes())
    return (
        f"machine: {_cpu_model()}, {cores} cores; aclnn-emu loops {native.isa()} (CPU best "
        f"{native.best_isa()}){forced}, blocked for caches {caches}, {parallel.workers()} workers; "
        f"BLAS {_openblas()}; {_torch()}"
    )


if __name__ == "__main__":
    print(describe())
