"""Environment variables, process lifetime and threads, through compiled C++ programs."""

import pytest

import cabi
from aclnn_emu import config
from aclnn_emu.platform import ALIASES, PARTS, UNKNOWN_HBM


def scenario(name, **env):
    result = cabi.compile_and_run("runtime_env.cpp", name, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result, cabi.rule_codes(result.stdout)


def test_device_count_from_environment():
    _, codes = scenario("devices", ACLNN_EMU_DEVICE_COUNT="3")
    assert codes == {"count": 3, "set_last": 0, "set_past_last": 107001}


def test_device_memory_limit_gives_the_allocation_error():
    result, codes = scenario("memory", ACLNN_EMU_DEVICE_MEMORY="1G")
    assert codes["malloc_over_capacity"] == 207001
    assert codes["malloc_small"] == 0 and codes["free_small"] == 0
    assert codes["total"] == 1 << 30


@pytest.mark.parametrize("mode, code, reported", [("warn", 0, True), ("off", 0, False), ("error", 507015, True)])
def test_sanitize_modes_on_an_overread(mode, code, reported):
    result, codes = scenario("overread", ACLNN_EMU_SANITIZE=mode)
    assert codes["overread"] == code
    assert ("out-of-bounds" in result.stderr) == reported


def test_leaks_are_listed_at_finalize():
    result, _ = scenario("leak")
    assert "leak: 1000 bytes" in result.stderr


def test_exit_without_finalize_does_not_hang():
    result, codes = scenario("no_finalize")
    assert codes == {"async_copy": 0, "sync": 0}
    assert "exiting without aclFinalize" in result.stdout


@pytest.mark.parametrize("sync", ["0", "1"])
def test_threads_share_the_runtime_safely(sync):
    _, codes = scenario("threads", ACLNN_EMU_SYNC=sync)
    assert codes == {"thread_failures": 0}


def test_soc_name_is_the_part_name_and_a_family_name_means_one_part():
    """Every part name of aclnn_emu.platform (any case) and each family alias, read again at each aclInit."""
    names = list(PARTS) + [name.lower() for name in PARTS] + list(ALIASES)
    result = cabi.compile_and_run("runtime_env.cpp", "parts", *names, timeout=120)
    rows = [line.split() for line in result.stdout.splitlines()]
    expected = {
        **{name: name for name in PARTS},
        **{name.lower(): name for name in PARTS},
        "Ascend910B": "Ascend910B2",
        "Ascend910_93": "Ascend910_9392",
        "Ascend910_95": "Ascend910_9599",
    }
    assert rows == [[name, "0", expected[name]] for name in names]


@pytest.mark.parametrize("name", ["Ascend910B5", "Ascend910", "Ascend910_9393", "Ascend950PR_9599", "Ascend310P3"])
def test_a_name_that_is_no_emulated_part_is_the_one_line_setting_error(name):
    result = cabi.compile_and_run("runtime_env.cpp", "parts", name, env={"ACLNN_EMU_SOC": name}, timeout=120)
    assert result.stdout == f"{name} 100000 (null)\n"
    lines = result.stderr.splitlines()
    assert lines == [f"aclnn-emu: {config.BY_VARIABLE['ACLNN_EMU_SOC'].rejected(name)}; {config.CONSEQUENCE}"]


@pytest.mark.parametrize(
    "name, soc, total",
    [
        ("Ascend910B4", "Ascend910B4", 32 << 30),
        ("Ascend910B2", "Ascend910B2", 64 << 30),
        ("Ascend910B4-1", "Ascend910B4-1", 32 << 30),
        ("Ascend910_9362", "Ascend910_9362", 32 << 30),
        ("ascend910_93", "Ascend910_9392", 64 << 30),
        ("Ascend910B2C", "Ascend910B2C", UNKNOWN_HBM),
        ("Ascend910_95", "Ascend910_9599", UNKNOWN_HBM),
    ],
)
def test_get_mem_info_reports_the_parts_hbm(name, soc, total):
    """platform.py: memory_size of the part's platform config; not published for B2C and arch35 parts."""
    result, codes = scenario("soc", ACLNN_EMU_SOC=name)
    assert f"soc {soc}\n" in result.stdout
    assert codes["mem_info"] == 0 and codes["mem_total"] == total and 0 < codes["mem_free"] <= total


def test_device_memory_setting_overrides_the_parts_hbm():
    _, codes = scenario("soc", ACLNN_EMU_SOC="Ascend910B4", ACLNN_EMU_DEVICE_MEMORY="3G")
    assert codes["mem_total"] == 3 << 30


def test_fp16_helpers_round_and_saturate_like_cann():
    _, codes = scenario("fp16")
    assert codes == {
        "f2h_one": 0x3C00,
        "f2h_tie_even": 0x3C00,
        "f2h_tie_up": 0x3C02,
        "f2h_overflow": 0x7BFF,
        "f2h_neg_overflow": 0xFBFF,
        "f2h_inf": 0x7BFF,
        "f2h_nan": 0x7BFF,
        "f2h_denormal": 0x0001,
        "h2f_inf": 65536,
        "h2f_neg_inf": -65536,
        "h2f_nan": 98304,
        "h2f_max": 65504,
        "h2f_half": 500,
        "size_fp16": 2,
        "size_bf16": 2,
        "size_int64": 8,
        "size_undefined": 0,
    }


@pytest.mark.parametrize("level, shown", [("info", True), ("warning", False)])
def test_log_level_shows_failed_calls(level, shown):
    result, codes = scenario("devices", ACLNN_EMU_LOG=level)
    assert codes["set_past_last"] == 107001
    assert ("[aclnn-emu INFO]" in result.stderr and "107001" in result.stderr) == shown
