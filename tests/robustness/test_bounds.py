"""The bounds of every copy and memset, tensor views and impossible tensor sizes.

Each case is a run of tests/c/bounds.cpp (or a Python snippet) in its own process with a timeout,
so a crash or a hang fails the case, not the run. Every case is made synchronously, asynchronously
on a stream and from a second host thread, with the sanitizer warning and failing calls. Codes are
exact; "changed.<buffer>" counts the bytes of a watched buffer that differ from what it held.
"""

import subprocess
import sys
import textwrap

import pytest

import cabi

BAD_RANGE = 107000  # ACL_ERROR_RT_PARAM_INVALID: the driver refuses the range
FAULT = 507015  # ACL_ERROR_RT_AICORE_EXCEPTION: a kernel (or the sanitizer in error mode) fails
MiB = 1 << 20

# What each case prints with ACLNN_EMU_SANITIZE=warn.
WARN = {
    "memset_huge": {"memset": BAD_RANGE, "changed.a": 0, "changed.b": 0},
    "memcpy_huge_d2d": {"memcpy": BAD_RANGE, "changed.a": 0, "changed.b": 0},
    "memcpy_size_max": {
        "h2d": BAD_RANGE,
        "d2h": BAD_RANGE,
        "h2h": BAD_RANGE,
        "changed.a": 0,
        "changed.host": 0,
        "changed.other": 0,
    },
    "wraps": {"d2h": BAD_RANGE, "memset": BAD_RANGE, "changed.a": 0, "changed.host": 0},
    "host_unmapped": {
        "h2d_source_unmapped": BAD_RANGE,
        "d2h_dest_unmapped": BAD_RANGE,
        "changed.a": 0,
        "changed.host": 0,
    },
    "host_read_only": {"d2h_dest_read_only": BAD_RANGE, "h2d_source_read_only": 0, "changed.host": 0},
    # The first block's 2 MiB page is mapped: reading to its end returns the block (4096 non-zero
    # bytes) and untouched memory (zeros); one byte more leaves mapped memory.
    "page_edge": {
        "d2h_to_page_end": 0,
        "d2h_past_page_end": BAD_RANGE,
        "memset_past_page_end": BAD_RANGE,
        "changed.a": 0,
        "changed.host": 4096,
    },
    # 512 bytes from a 256-byte block: a's bytes, 64 zero bytes (padding and gap), then b's first 192.
    "neighbour": {
        "d2h_overread": 0,
        "changed.host": 256 + 192,
        "overread.a_then_b": 1,
        "memset_overrun": 0,
        "changed.b": 192,
    },
    "freed_page": {"d2h_freed_page": BAD_RANGE, "memset_freed_page": BAD_RANGE, "changed.host": 0},
    "offset_far_below": {
        "scatter.phase1": 0,
        "scatter": FAULT,
        "changed.cache": 0,
        "changed.vcache": 0,
        "changed.key": 0,
    },
    "offset_int64_min": {
        "scatter.phase1": 0,
        "scatter": FAULT,
        "changed.cache": 0,
        "changed.vcache": 0,
        "changed.key": 0,
    },
    # The key is read from 32 bytes before its block: the cache gets all 4 tokens (4 x 2 x 16 fp16).
    "offset_slightly_below": {
        "scatter.phase1": 0,
        "scatter": 0,
        "changed.cache": 256,
        "changed.vcache": 256,
        "changed.key": 0,
    },
    "impossible_tensors": {
        "create.overflow_null": 1,
        "create.overflow_message": 1,
        "create.beyond_device_memory_null": 1,
        "create.fine_null": 0,
        "init.overflow": 161002,
        "init.kept_description": 1,
        "phase1.null_tensor": 161001,
    },
}

# ACLNN_EMU_SANITIZE=error: every reported overrun fails its call and nothing moves; the ranges the
# driver refuses give the same codes as before.
ERROR = {case: dict(codes) for case, codes in WARN.items()}
ERROR["page_edge"].update({"d2h_to_page_end": FAULT, "changed.host": 0})
ERROR["neighbour"].update(
    {"d2h_overread": FAULT, "changed.host": 0, "overread.a_then_b": 0, "memset_overrun": FAULT, "changed.b": 0}
)
ERROR["offset_slightly_below"].update({"scatter": FAULT, "changed.cache": 0, "changed.vcache": 0})

# Codes found only when the stream runs the task: everything the sanitizer or a kernel reports.
AT_SYNCHRONIZE = {
    "page_edge": {"d2h_to_page_end"},
    "neighbour": {"d2h_overread", "memset_overrun"},
    "offset_far_below": {"scatter"},
    "offset_int64_min": {"scatter"},
    "offset_slightly_below": {"scatter"},
}


def run_case(case: str, how: str, sanitize: str):
    result = cabi.compile_and_run("bounds.cpp", case, how, env={"ACLNN_EMU_SANITIZE": sanitize}, timeout=120)
    assert result.returncode == 0 and "done 0" in result.stdout, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result, cabi.rule_codes(result.stdout)


@pytest.mark.parametrize("sanitize", ["warn", "error"])
@pytest.mark.parametrize("how", ["sync", "async", "thread"])
@pytest.mark.parametrize("case", sorted(WARN))
def test_bounds(case, how, sanitize):
    result, codes = run_case(case, how, sanitize)
    expected = (WARN if sanitize == "warn" else ERROR)[case]
    assert {k: v for k, v in codes.items() if not k.endswith(".stage") and k != "done"} == expected, result.stderr
    late = AT_SYNCHRONIZE.get(case, set()) if how == "async" else set()
    stages = {k[: -len(".stage")]: v for k, v in codes.items() if k.endswith(".stage")}
    assert stages == {name: int(name in late and expected[name] != 0) for name in stages}


@pytest.mark.parametrize(
    "case, text",
    [
        ("page_edge", "ends 2093056 bytes past the end of the 4096-byte allocation"),
        ("neighbour", "out-of-bounds: memset: "),
        ("offset_slightly_below", "starts 32 bytes before the 256-byte allocation"),
    ],
)
def test_overruns_into_neighbouring_memory_are_reported(case, text):
    result, _ = run_case(case, "sync", "warn")
    assert text in result.stderr


def python_case(code: str, **env) -> subprocess.CompletedProcess:
    """A Python snippet using aclnn_emu in its own process; it prints what the test asserts."""
    full = {"ACLNN_EMU_DEVICE_MEMORY": "1G", **env}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**cabi.toolkit.environment(), **full},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_python_empty_refuses_negative_and_impossible_shapes():
    out = python_case("""
        import aclnn_emu as ae
        from aclnn_emu.dtypes import DataType
        for shape in ((-5, 4), (2**31, 2**31, 2**31), (1 << 30, 4)):
            try:
                ae.empty(shape, DataType.ACL_FLOAT16)
            except ValueError as exc:
                print("ValueError", exc)
        print("ok", ae.empty((0, 4), DataType.ACL_FLOAT16).shape)
    """).stdout.splitlines()
    assert out[0] == "ValueError empty(): shape (-5, 4) has the dimension -5; dimensions are integers >= 0"
    assert out[1].startswith("ValueError empty(): view shape [2147483648, 2147483648, 2147483648]")
    assert "its size overflows int64" in out[1]
    assert out[2].startswith("ValueError empty(): view shape [1073741824, 4] holds 8589934592 bytes: more than")
    assert out[3] == "ok (0, 4)"


def test_python_tensor_views_check_both_ends():
    out = python_case("""
        import aclnn_emu as ae
        from aclnn_emu.dtypes import DataType
        from aclnn_emu.meta import Tensor
        from aclnn_emu.runtime.errors import AclError
        t = ae.empty((4,), DataType.ACL_FLOAT16)
        for offset in (-(1 << 40), 1 << 40, -(1 << 63)):
            try:
                Tensor((4,), DataType.ACL_FLOAT16, offset=offset, addr=t.addr).view()
            except AclError as exc:
                print(exc.code, exc.rule)
    """).stdout.splitlines()
    assert out == [f"{FAULT} memory.unmapped"] * 3
