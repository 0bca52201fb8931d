"""Every function CANN 8.5's public runtime headers declare links, and every one the emulator does
not implement refuses loudly.

The list comes from our headers (aclnn_emu.capi.declarations parses include/acl/acl_rt.h,
acl_base_rt.h and acl_rt_allocator.h), the same declarations the shim's exports are generated from,
so the test and the library cannot drift apart."""

import ctypes
import json
import subprocess
import sys

import pytest

from aclnn_emu import status, toolkit
from aclnn_emu.capi.declarations import runtime_declarations
from aclnn_emu.runtime import unsupported
from aclnn_emu.shim.build import refused

DECLARED = runtime_declarations()
REFUSED = refused()


def test_the_three_headers_declare_the_329_functions_of_cann_8_5():
    # Counted in CANN 8.5's include/external/acl/{acl_rt.h (305), acl_base_rt.h (14), acl_rt_allocator.h (10)}.
    per_header = {h: sum(d.header == h for d in DECLARED) for h in ("acl_rt.h", "acl_base_rt.h", "acl_rt_allocator.h")}
    assert per_header == {"acl_rt.h": 305, "acl_base_rt.h": 14, "acl_rt_allocator.h": 10}
    assert len({d.name for d in DECLARED}) == 329


@pytest.mark.parametrize("name", [d.name for d in DECLARED])
def test_dlsym_finds_every_declared_function(name):
    library = ctypes.CDLL(str(toolkit.LIBRARY))  # ctypes resolves attributes with dlsym
    assert ctypes.cast(getattr(library, name), ctypes.c_void_p).value


# Calls every refused function once with zeroed arguments (a refusal reads none of them), in a
# child process, and reports its result, aclGetRecentErrMsg and whether the library survived.
_CALL_ALL = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
out = {}
for name, nargs, status_return in json.loads(sys.argv[2]):
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int if status_return else ctypes.c_void_p
    result = fn(*([None] * nargs))
    message = lib.aclGetRecentErrMsg()
    out[name] = [result or 0, (message or b"").decode()]
print(json.dumps(out))
"""


def _nargs(params: str) -> int:
    return 0 if params in ("", "void") else params.count(",") + 1


@pytest.fixture(scope="module")
def refusals():
    calls = [(d.name, _nargs(d.params), d.returns_status) for d in REFUSED]
    done = subprocess.run(
        [sys.executable, "-c", _CALL_ALL, str(toolkit.LIBRARY), json.dumps(calls)],
        env=toolkit.environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout), done.stderr


def test_refused_functions_are_the_declared_ones_without_an_emulation():
    assert len(REFUSED) > 200 and not {d.name for d in REFUSED} & {"aclInit", "aclrtMalloc", "aclrtMemcpy"}


@pytest.mark.parametrize("declaration", REFUSED, ids=lambda d: d.name)
def test_a_function_not_emulated_refuses_with_the_documented_code_and_names_itself(refusals, declaration):
    # Codes: runtime-layer functions return ACL_ERROR_RT_FEATURE_NOT_SUPPORT as the runtime's C API
    # maps RT_ERROR_FEATURE_NOT_SUPPORT (runtime src/runtime/feature/src/api/api_c.cc, e.g.
    # rtReserveMemAddress); acl-layer ones ACL_ERROR_FEATURE_UNSUPPORTED (src/acl/aclrt_impl/memory.cpp,
    # aclrtDeviceEnablePeerAccessImpl). See aclnn_emu/runtime/unsupported.py.
    results, stderr = refusals
    result, message = results[declaration.name]
    expected = unsupported.code_of(declaration.name)
    assert expected in (status.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, status.ACL_ERROR_FEATURE_UNSUPPORTED)
    assert result == (expected if declaration.returns_status else 0)
    assert f"{declaration.name} is not emulated" in message and f"({expected})" in message
    assert f"aclnn-emu: {declaration.name} is not emulated" in stderr


def test_the_structs_the_bindings_read_have_the_headers_layout(tmp_path):
    # The bindings read these structs through cffi stand-ins (capi/prototypes.py TYPES); a field at
    # another offset would read garbage, so each layout is compared with the header's.
    import cffi

    from aclnn_emu.capi.prototypes import TYPES

    ffi = cffi.FFI()
    ffi.cdef(TYPES)
    fields = {
        "aclrtMemLocation": ("id", "type"),
        "aclrtPhysicalMemProp": ("handleType", "allocationType", "memAttr", "location", "reserve"),
        "aclrtMemcpyBatchAttr": ("dstLoc", "srcLoc", "rsv"),
    }
    lines = [
        f'printf("{s} %zu{"".join(" %zu" for _ in f)}\\n", sizeof({s}){"".join(f", offsetof({s}, {x})" for x in f)});'
        for s, f in fields.items()
    ]
    source = tmp_path / "layout.c"
    source.write_text(
        '#include <stdio.h>\n#include <stddef.h>\n#include "acl/acl.h"\nint main(void) {\n'
        + "\n".join(lines)
        + "\nreturn 0;\n}\n"
    )
    exe = tmp_path / "layout"
    built = subprocess.run(
        ["gcc", f"-I{toolkit.HOME / 'include'}", str(source), "-o", str(exe)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    printed = {
        line.split()[0]: [int(v) for v in line.split()[1:]]
        for line in subprocess.run([str(exe)], capture_output=True, text=True).stdout.splitlines()
    }
    for struct, names in fields.items():
        assert printed[struct] == [ffi.sizeof(struct)] + [ffi.offsetof(struct, n) for n in names], struct
