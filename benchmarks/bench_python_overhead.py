"""Python per-call overhead of aclnn_emu.ops.X against aclnn_emu.raw, goal <= 1.5x raw for a trivial call.

The trivial call is ScatterPaKvCache with empty caches (both phases, nothing to launch), as in
bench_host_overhead.py. The raw contender does what a Python program driving the two phases itself
does: phase 1, phase 2 on the stream, and a check of each status. ae.ops.X does the same and
packages the outputs. Shown too, for information: ae.ops.X with numpy arrays (copied to device
memory and back each call) and ae.ops.X on one scattered token.
Run: python benchmarks/bench_python_overhead.py [--calls N] [--isa avx2]"""

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from interleaved import best_times  # noqa: E402

GOAL = 1.5
NORM = "Norm"  # the ND caches here (the default is torch_npu's PA_NZ)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500, help="calls per round")
    calls = machine.start(parser).calls
    stream = ae.setup()
    key = np.arange(32, dtype=np.float16).reshape(2, 1, 16)
    slots = np.array([2, 0], np.int32)
    empty = np.zeros((0, 4, 1, 16), np.float16)
    d_key, d_slots, d_empty = ae.to_device(key), ae.to_device(slots), ae.to_device(empty)
    phase1, phase2 = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize, ae.raw.aclnnScatterPaKvCache
    scatter = ae.ops.ScatterPaKvCache
    nulls = [None] * 7

    def raw():
        for _ in range(calls):
            code, size, executor = phase1(d_key, d_empty, d_slots, d_key, d_empty, *nulls)
            if code or phase2(0, size, executor, stream):
                raise ae.AclnnError(code or 1, "raw call failed")

    def ops():
        for _ in range(calls):
            scatter(d_key, d_empty, d_slots, d_key, d_empty, cacheModeOptional=NORM, stream=stream)

    def ops_numpy():
        for _ in range(calls // 10):
            scatter(key, empty, slots, key, empty, cacheModeOptional=NORM, stream=stream)

    cache = np.zeros((1, 4, 1, 16), np.float16)

    def ops_one_token():
        for _ in range(calls // 10):
            scatter(key, cache, slots, key, cache.copy(), cacheModeOptional=NORM, stream=stream)

    # Many short rounds: the best of each finds the quiet moments of a busy machine.
    best = best_times({"raw": raw, "ops": ops, "ops_numpy": ops_numpy, "ops_one_token": ops_one_token}, rounds=20)
    us = {name: t / (calls if name in ("raw", "ops") else calls // 10) * 1e6 for name, t in best.items()}
    ratio = us["ops"] / us["raw"]
    print(f"{'ae.raw two phases (trivial call)':45s} {us['raw']:8.2f} us")
    print(
        f"{'ae.ops.ScatterPaKvCache (device tensors)':45s} {us['ops']:8.2f} us  {ratio:.2f}x raw, goal <= {GOAL}x: "
        f"{'met' if ratio <= GOAL else 'MISSED'}"
    )
    print(f"{'ae.ops.ScatterPaKvCache (numpy in and out)':45s} {us['ops_numpy']:8.2f} us  (copies to device and back)")
    print(
        f"{'ae.ops.ScatterPaKvCache (numpy, one token)':45s} {us['ops_one_token']:8.2f} us  (includes the kernel "
        "and a stream sync)"
    )
    for tensor in (d_key, d_slots, d_empty):
        ae.free(tensor)


if __name__ == "__main__":
    main()
