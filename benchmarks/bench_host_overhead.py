"""Host overhead per call (C ABI): goals <= 20 us per runtime call, <= 100 us per operator call,
aclInit <= 0.5 s. Run: python benchmarks/bench_host_overhead.py"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from aclnn_emu.cli import compile_and_run  # noqa: E402

GOALS = {"aclInit+aclrtSetDevice_s": 0.5, "aclrtMemcpy_64B_us": 20, "aclCreateTensor+aclDestroyTensor_us": 20,
         "two_phase_op_call_us": 100}


def main():
    stage, result = compile_and_run(pathlib.Path(__file__).with_name("host_overhead.cpp"), ["3000"])
    if stage != "run" or result.returncode != 0:
        sys.exit(f"host_overhead failed ({stage}):\n{result.stdout}{result.stderr}")
    for line in result.stdout.splitlines():
        name, value = line.split()[:2]
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"  goal <= {goal}: {'met' if float(value) <= goal else 'MISSED'}"
        print(f"{name:40s} {value:>10s}{verdict}  {' '.join(line.split()[2:])}")


if __name__ == "__main__":
    main()
