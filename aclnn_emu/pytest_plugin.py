"""pytest plugin for conformance tests of code that calls aclnn (installed as the `aclnn_emu` pytest11
entry point, so any test suite in the environment has it).

Fixtures:
- `acl_device`: an `aclnn_emu.Device(0)` entered for the test, with `.stream` (an aclnn_emu.Stream);
  afterwards its stream is destroyed, the device reset (aclFinalize too when it started the runtime)
  and the test's leaks reported (sanitizer kind "leak"): device memory allocated during the test
  and still live, that is memory allocated through the C-equivalent API (aclrtMalloc, a program's
  own) and not freed, and tensors made by aclnn_emu.to_device/empty that are still referenced
  (kept in a global, say). A tensor the test let go is freed when Python collects it (the check
  collects reference cycles first), so it is no leak.
- `aclnn_soc`: the emulated chip's name, as the test asked for it (a part such as Ascend910B4 or a
  family such as Ascend910_95). `@pytest.mark.soc("Ascend910B", "Ascend910_95")` runs the test once
  per chip; `pytest --aclnn-soc=all` (every family) or a comma-separated list runs every test using
  the fixture and not marked on each of them. Without either, the chip of ACLNN_EMU_SOC.
- `aclnn_strict`: ACLNN_EMU_STRICT=1 for the test (inferred rules return their codes).

A test using any of them fails when the device-memory sanitizer reports anything while it runs (its
fixtures' teardown included), unless marked `@pytest.mark.sanitizer_expected` (any report) or
`@pytest.mark.sanitizer_expected("leak", ...)` (reports of those kinds).

Settings are changed both in the running emulator and in the environment, so they hold when the
code under test calls aclInit again. Under pytest-xdist every worker is a process of its own with
its own emulated runtime: `pytest -n 4` needs nothing more.
"""

import dataclasses

import pytest

OPTION = "--aclnn-soc"


def pytest_addoption(parser):
    parser.addoption(
        OPTION,
        default=None,
        metavar="CHIPS",
        help="run tests using the aclnn_soc fixture on these emulated chips: 'all' (every "
        "family: Ascend910B, Ascend910_93, Ascend910_95) or a comma-separated list of parts "
        "or families",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "soc(*chips): run a test using the aclnn_soc fixture once per chip")
    config.addinivalue_line(
        "markers",
        "sanitizer_expected(*kinds): sanitizer reports (of these kinds) do not fail a test using the aclnn fixtures",
    )


def _chips(text: str) -> list:
    from aclnn_emu import config, platform

    names = {soc.lower(): soc for soc in config.SOCS}
    asked = platform.FAMILIES if text.strip().lower() == "all" else [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in asked if c.lower() not in names]
    if unknown:
        raise pytest.UsageError(
            f"{OPTION}: unknown chip(s) {', '.join(unknown)}; allowed: all, {', '.join(config.SOCS)}"
        )
    return [names[c.lower()] for c in asked]


def pytest_generate_tests(metafunc):
    if "aclnn_soc" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("soc")
    option = metafunc.config.getoption(OPTION)
    if marker is not None:
        chips = _chips(",".join(marker.args))
    elif option:
        chips = _chips(option)
    else:
        chips = [None]
    metafunc.parametrize("aclnn_soc", chips, indirect=True, ids=[c or "default-soc" for c in chips])


def select(monkeypatch, **settings) -> None:
    """Change emulator settings (config.Config fields: soc, strict, sanitize, ...) for one test; soc
    takes a part or a family name."""
    from aclnn_emu import config, platform

    if "soc" in settings:
        settings["soc"] = platform.part(settings["soc"]).name
    variables = {"soc": "ACLNN_EMU_SOC", "strict": "ACLNN_EMU_STRICT", "sanitize": "ACLNN_EMU_SANITIZE"}
    for name, value in settings.items():
        if name in variables:
            monkeypatch.setenv(variables[name], str(int(value)) if isinstance(value, bool) else str(value))
    monkeypatch.setattr(config, "current", dataclasses.replace(config.current, **settings))


@pytest.fixture
def _aclnn_sanitizer_check(request):
    """Fails the test when the sanitizer reported something during it (and its fixtures) unexpectedly."""
    from aclnn_emu.runtime import sanitizer

    before = len(sanitizer.reports())
    yield
    new = sanitizer.reports()[before:]
    marker = request.node.get_closest_marker("sanitizer_expected")
    if marker is not None:
        new = [r for r in new if marker.args and r[0] not in marker.args]
    if new:
        lines = "\n".join(f"  {kind}: {message}" for kind, message in new)
        pytest.fail(
            f"aclnn-emu sanitizer reported during the test (mark it "
            f"@pytest.mark.sanitizer_expected({', '.join(repr(k) for k in dict.fromkeys(k for k, _ in new))}) "
            f"if that is intended):\n{lines}",
            pytrace=False,
        )


@dataclasses.dataclass
class AclDevice:
    device: object
    stream: object

    @property
    def id(self) -> int:
        return self.device.id


@pytest.fixture
def acl_device(_aclnn_sanitizer_check):
    """An emulated device (aclnn_emu.Device(0)) and a stream on it, torn down after the test."""
    import aclnn_emu

    with aclnn_emu.Device(0) as device:
        yield AclDevice(device, device.stream())


@pytest.fixture
def aclnn_soc(request, monkeypatch, _aclnn_sanitizer_check):
    """The emulated chip for this test (see the module doc for how it is chosen)."""
    from aclnn_emu import config

    soc = getattr(request, "param", None)
    if soc is None:
        return config.current.soc
    select(monkeypatch, soc=soc)
    return soc


@pytest.fixture
def aclnn_strict(monkeypatch, _aclnn_sanitizer_check):
    """ACLNN_EMU_STRICT=1 for this test."""
    select(monkeypatch, strict=True)
    return True
