"""Environment variables, process lifetime and threads, through compiled C++ programs."""
import pytest

import cabi


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


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910_93", "Ascend910_95"])
def test_soc_name_follows_environment(soc):
    result, _ = scenario("soc", ACLNN_EMU_SOC=soc)
    assert f"soc {soc}" in result.stdout


def test_fp16_helpers_round_and_saturate_like_cann():
    _, codes = scenario("fp16")
    assert codes == {
        "f2h_one": 0x3C00, "f2h_tie_even": 0x3C00, "f2h_tie_up": 0x3C02, "f2h_overflow": 0x7BFF,
        "f2h_neg_overflow": 0xFBFF, "f2h_inf": 0x7BFF, "f2h_nan": 0x7BFF, "f2h_denormal": 0x0001,
        "h2f_inf": 65536, "h2f_neg_inf": -65536, "h2f_nan": 98304, "h2f_max": 65504, "h2f_half": 500,
        "size_fp16": 2, "size_bf16": 2, "size_int64": 8, "size_undefined": 0,
    }


@pytest.mark.parametrize("level, shown", [("info", True), ("warning", False)])
def test_log_level_shows_failed_calls(level, shown):
    result, codes = scenario("devices", ACLNN_EMU_LOG=level)
    assert codes["set_past_last"] == 107001
    assert ("[aclnn-emu INFO]" in result.stderr and "107001" in result.stderr) == shown
