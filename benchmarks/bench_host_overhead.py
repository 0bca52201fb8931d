"""Host overhead per call (C ABI): goals <= 20 us per runtime call, <= 100 us per operator call,
aclInit <= 0.5 s, and >= 100 M conversions/s for the per-element helpers (plain C in the shim).
Run: python benchmarks/bench_host_overhead.py [--isa avx2]"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import machine  # noqa: E402
from aclnn_emu.cli import compile_and_run  # noqa: E402

# name -> (goal, True if higher is better)
GOALS = {
    "aclInit+aclrtSetDevice_s": (0.5, False),
    "aclrtMemcpy_64B_us": (20, False),
    "aclCreateTensor+aclDestroyTensor_us": (20, False),
    "two_phase_op_call_us": (100, False),
    "aclFloatToFloat16_Mps": (100, True),
    "aclFloat16ToFloat_Mps": (100, True),
    "aclDataTypeSize_Mps": (100, True),
}


def main():
    machine.start()
    stage, result = compile_and_run(pathlib.Path(__file__).with_name("host_overhead.cpp"), ["3000"])
    if stage != "run" or result.returncode != 0:
        sys.exit(f"host_overhead failed ({stage}):\n{result.stdout}{result.stderr}")
    for line in result.stdout.splitlines():
        name, value = line.split()[:2]
        goal, higher = GOALS.get(name, (None, False))
        met = goal is not None and (float(value) >= goal if higher else float(value) <= goal)
        verdict = "" if goal is None else f"  goal {'>=' if higher else '<='} {goal}: {'met' if met else 'MISSED'}"
        print(f"{name:40s} {value:>10s}{verdict}  {' '.join(line.split()[2:])}")


if __name__ == "__main__":
    main()
