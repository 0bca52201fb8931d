"""A library whose interpreter fails to start answers with error codes, never with 0."""
import cabi


def test_failed_start_returns_errors_not_success(tmp_path):
    broken = tmp_path / "aclnn_emu"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('simulated broken install')\n")
    result = cabi.compile_and_run("boot_failure.cpp", env={"ACLNN_EMU_PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert cabi.rule_codes(result.stdout) == {
        "aclInit": 500000, "aclrtSetDevice": 500000, "aclCreateTensor_is_null": 1, "phase1": 561000,
        "aclDestroyTensor": 561000,
    }
    assert "failed to start" in result.stderr
