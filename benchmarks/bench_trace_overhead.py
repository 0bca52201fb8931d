"""Tracing (ACLNN_EMU_TRACE) overhead per call, off versus on, in turns, through the C ABI (ctypes on
libascendcl.so, which runs in this interpreter): a trivial runtime call (aclrtGetDevice), a two-phase
operator call on its trivial path (ScatterPaKvCache with empty caches: its checks, no launch), and one
that launches a kernel (one token scattered, then aclrtSynchronizeStream).

Off, each hook is one test of the flag `trace.enabled`; the last columns count the tests a call makes
(by counting them) and what they cost at the measured price of one test. Goal: off costs nothing
measurable (the tests below 1 % of the call). On, a call costs more by what recording and writing
its events (a slice per C call and per stream task, the arrows) costs.
Run: python benchmarks/bench_trace_overhead.py [--calls N] [--rounds R]"""

import argparse
import ctypes
import os
import pathlib
import sys
import tempfile
import time
import timeit
import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import machine  # noqa: E402
from aclnn_emu import toolkit  # noqa: E402
from aclnn_emu.runtime import trace  # noqa: E402

ACL_FLOAT16, ACL_INT32, ACL_FORMAT_ND = 1, 3, 2
GOAL_SHARE = 0.01  # the flag tests' share of a call, off


def check(code, what):
    if code != 0:
        sys.exit(f"{what} returned {code}")


class Calls:
    """The three calls, on one device, one stream and tensors made through the C ABI."""

    def __init__(self, lib):
        self.lib = lib
        p, u64 = ctypes.c_void_p, ctypes.c_uint64
        lib.aclCreateTensor.restype = p
        lib.aclCreateTensor.argtypes = [p, u64, ctypes.c_int, p, ctypes.c_int64, ctypes.c_int, p, u64, p]
        lib.aclrtMalloc.argtypes = [p, ctypes.c_size_t, ctypes.c_int]
        lib.aclrtMemset.argtypes = [p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_size_t]
        lib.aclnnScatterPaKvCache.argtypes = [p, u64, p, p]
        check(lib.aclInit(None), "aclInit")
        check(lib.aclrtSetDevice(0), "aclrtSetDevice")
        self.stream = ctypes.c_void_p()
        check(lib.aclrtCreateStream(ctypes.byref(self.stream)), "aclrtCreateStream")
        self.device = ctypes.c_int32()
        self.base = base = ctypes.c_void_p()
        check(lib.aclrtMalloc(ctypes.byref(base), 1 << 16, 0), "aclrtMalloc")
        lib.aclrtMemset(base, 1 << 16, 0, 1 << 16)
        self.key = self.tensor((1, 1, 16), ACL_FLOAT16, base.value)
        self.slots = self.tensor((1,), ACL_INT32, base.value + 8192)
        self.value = self.tensor((1, 1, 16), ACL_FLOAT16, base.value + 12288)
        self.caches = [self.tensor((2, 4, 1, 16), ACL_FLOAT16, base.value + offset) for offset in (4096, 16384)]
        self.empty = [self.tensor((0, 4, 1, 16), ACL_FLOAT16, base.value + 4096)] * 2
        self.workspace, self.workspace_size = ctypes.c_void_p(), 0

    def tensor(self, shape, dtype, addr):
        dims = (ctypes.c_int64 * len(shape))(*shape)
        strides = (ctypes.c_int64 * len(shape))(*[1] * len(shape))
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        return ctypes.c_void_p(
            self.lib.aclCreateTensor(dims, len(shape), dtype, strides, 0, ACL_FORMAT_ND, dims, len(shape), addr)
        )

    def close(self):
        for p in (self.workspace, self.base):
            self.lib.aclrtFree(p)
        self.lib.aclFinalize()

    def runtime_call(self):
        self.lib.aclrtGetDevice(ctypes.byref(self.device))

    def two_phase(self, caches):
        size, executor = ctypes.c_uint64(), ctypes.c_void_p()
        check(
            self.lib.aclnnScatterPaKvCacheGetWorkspaceSize(
                self.key,
                caches[0],
                self.slots,
                self.value,
                caches[1],
                *[None] * 7,
                ctypes.byref(size),
                ctypes.byref(executor),
            ),
            "aclnnScatterPaKvCacheGetWorkspaceSize",
        )
        if size.value > self.workspace_size:
            check(self.lib.aclrtMalloc(ctypes.byref(self.workspace), size.value, 0), "aclrtMalloc")
            self.workspace_size = size.value
        check(
            self.lib.aclnnScatterPaKvCache(self.workspace, size.value, executor, self.stream), "aclnnScatterPaKvCache"
        )

    def trivial_op(self):
        self.two_phase(self.empty)

    def kernel_op(self):
        self.two_phase(self.caches)
        check(self.lib.aclrtSynchronizeStream(self.stream), "aclrtSynchronizeStream")


class CountingModule(types.ModuleType):
    """Put on the trace module while a call runs: counts the reads of `trace.enabled` (off)."""

    reads = 0

    @property
    def enabled(self):
        CountingModule.reads += 1
        return False


def flag_tests(call) -> int:
    CountingModule.reads = 0
    trace.__class__ = CountingModule
    try:
        call()
    finally:
        trace.__class__ = types.ModuleType
    return CountingModule.reads


def flag_test_ns() -> float:
    """The price of one `if trace.enabled:` as the hooks write it (a module attribute)."""

    def test(n=100_000):
        for _ in range(n):
            if trace.enabled:
                pass

    def loop(n=100_000):
        for _ in range(n):
            pass

    best = [min(timeit.repeat(f, number=1, repeat=7)) for f in (test, loop)]
    return max(0.0, best[0] - best[1]) / 1e5 * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed round")
    parser.add_argument("--rounds", type=int, default=7)
    args = machine.start(parser)
    calls = Calls(ctypes.CDLL(str(toolkit.LIBRARY)))
    contenders = {
        "aclrtGetDevice": calls.runtime_call,
        "two-phase op call, trivial path": calls.trivial_op,
        "two-phase op call + kernel + sync": calls.kernel_op,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        best = {(name, mode): float("inf") for name in contenders for mode in ("off", "on")}
        for timed in [False] + [True] * args.rounds:
            for name, call in contenders.items():
                n = args.calls // (10 if call == calls.kernel_op else 1)
                for mode in ("off", "on"):
                    trace.configure(path if mode == "on" else "")
                    start = time.perf_counter()
                    for _ in range(n):
                        call()
                    trace.checkpoint()  # writing the calls' events is part of their cost
                    elapsed = (time.perf_counter() - start) / n
                    trace.configure("")
                    if timed:
                        best[name, mode] = min(best[name, mode], elapsed)
        size = os.path.getsize(path)
    price = flag_test_ns()
    print(f"one flag test: {price:.1f} ns (the trace of the last 'on' round: {size / 1024:.0f} KiB)")
    header = ("call", "off us", "on us", "on/off", "flag tests", "their share off")
    print(f"{header[0]:36s} {header[1]:>8s} {header[2]:>8s} {header[3]:>7s} {header[4]:>11s} {header[5]:>16s}")
    for name, call in contenders.items():
        off, on = best[name, "off"] * 1e6, best[name, "on"] * 1e6
        tests = flag_tests(call)
        share = tests * price / 1e3 / off
        verdict = "met" if share <= GOAL_SHARE else "MISSED"
        print(
            f"{name:36s} {off:8.2f} {on:8.2f} {on / off:6.2f}x {tests:11d} {100 * share:9.2f} %  "
            f"goal <= {100 * GOAL_SHARE:.0f} %: {verdict}"
        )
    calls.close()


if __name__ == "__main__":
    main()
