import ctypes
import sys
import pathlib
import zlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The mutation check runs on demand (python tests/mutations/run.py), never as part of the suite.
collect_ignore = ["mutations"]
sys.path.insert(0, str(ROOT / "tests"))

import aclnn_emu  # noqa: E402
from aclnn_emu import platform, pytest_plugin, toolkit  # noqa: E402
from aclnn_emu.runtime import sanitizer  # noqa: E402


def pytest_sessionstart(session):
    if not toolkit.LIBRARY.exists():
        pytest.exit(f"{toolkit.LIBRARY} is missing: run `pip install -e .` (or `aclnn-emu build`) first", 2)
    stale = [
        p
        for p in (ROOT / "include").rglob("*.h")
        if (toolkit.HOME / "include" / p.relative_to(ROOT / "include")).read_bytes() != p.read_bytes()
    ]
    if stale:
        pytest.exit(f"the toolkit's headers are older than include/ ({stale[0].name}): run `aclnn-emu build`", 2)
    try:
        from aclnn_emu.kernels import _native
    except ImportError:
        pytest.exit("aclnn_emu.kernels._native is not built: run `pip install -e .` first", 2)
    from aclnn_emu.shim.native import SOURCES

    built = pathlib.Path(_native.__file__).stat().st_mtime
    newer = [source.name for source in SOURCES if built < source.stat().st_mtime]
    if newer:
        pytest.exit(f"aclnn_emu.kernels._native is older than {newer[0]}: run `pip install -e .`", 2)


@pytest.fixture(autouse=True)
def own_module_rng(request):
    """A test module's generator ``RNG`` restarted for each test from the test's id: its data then
    does not depend on which of the module's tests ran before it in the process (nor on how xdist
    shares tests out), so a test that passes passes every time."""
    module = request.module
    if isinstance(getattr(module, "RNG", None), np.random.Generator):
        module.RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


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


def pytest_addoption(parser):
    parser.addoption(
        "--families",
        default=",".join(platform.FAMILIES),
        help="chip families the C-ABI status suites run on (comma-separated; default: all)",
    )


def pytest_generate_tests(metafunc):
    """`family`: each C-ABI status suite runs once per chip family (ACLNN_EMU_SOC=<family>)."""
    if "family" in metafunc.fixturenames:
        families = metafunc.config.getoption("families").split(",")
        metafunc.parametrize("family", families, scope="module")


@pytest.fixture
def chip(request, monkeypatch):
    """The emulated chip for one test (parametrize it with indirect=True), set as the plugin's aclnn_soc
    sets it; sanitizer findings start empty. Unlike aclnn_soc, the tests assert their findings themselves."""
    aclnn_emu.setup()
    pytest_plugin.select(monkeypatch, soc=request.param)
    sanitizer.clear()
    return request.param
