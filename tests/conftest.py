import ctypes
import dataclasses
import sys
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The mutation check runs on demand (python tests/mutations/run.py), never as part of the suite.
collect_ignore = ["mutations"]
sys.path.insert(0, str(ROOT / "tests"))

import aclnn_emu  # noqa: E402
from aclnn_emu import config, toolkit  # noqa: E402
from aclnn_emu.runtime import sanitizer  # noqa: E402


def pytest_sessionstart(session):
    if not toolkit.LIBRARY.exists():
        pytest.exit(f"{toolkit.LIBRARY} is missing: run `pip install -e .` (or `aclnn-emu build`) first", 2)
    stale = [p for p in (ROOT / "include").rglob("*.h")
             if (toolkit.HOME / "include" / p.relative_to(ROOT / "include")).read_bytes() != p.read_bytes()]
    if stale:
        pytest.exit(f"the toolkit's headers are older than include/ ({stale[0].name}): run `aclnn-emu build`", 2)
    try:
        from aclnn_emu.kernels import _native
    except ImportError:
        pytest.exit("aclnn_emu.kernels._native is not built: run `pip install -e .` first", 2)
    if pathlib.Path(_native.__file__).stat().st_mtime < (ROOT / "aclnn_emu" / "kernels" / "native.c").stat().st_mtime:
        pytest.exit("aclnn_emu.kernels._native is older than native.c: run `pip install -e .`", 2)


@pytest.fixture(scope="session")
def toolkit_home():
    return toolkit.HOME


@pytest.fixture(scope="session")
def libacl():
    """libascendcl.so loaded into this interpreter through ctypes (it reuses this interpreter)."""
    lib = ctypes.CDLL(str(toolkit.LIBRARY))
    lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
    lib.aclrtGetSocName.restype = ctypes.c_char_p
    lib.aclFloat16ToFloat.restype = ctypes.c_float
    lib.aclFloat16ToFloat.argtypes = [ctypes.c_uint16]
    lib.aclFloatToFloat16.restype = ctypes.c_uint16
    lib.aclFloatToFloat16.argtypes = [ctypes.c_float]
    lib.aclDataTypeSize.restype = ctypes.c_size_t
    lib.aclCreateTensor.restype = ctypes.c_void_p
    lib.aclCreateIntArray.restype = ctypes.c_void_p
    for name in ("aclrtMalloc", "aclrtFree", "aclrtMemcpy", "aclrtMemset", "aclrtMemcpyAsync"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


@pytest.fixture
def chip(request, monkeypatch):
    """The emulated chip for one test (parametrize it with indirect=True); sanitizer findings start empty.
    aclInit re-reads the settings, so the runtime is started before the chip is set."""
    aclnn_emu.setup()
    monkeypatch.setattr(config, "current", dataclasses.replace(config.current, soc=request.param))
    sanitizer.clear()
    return request.param
