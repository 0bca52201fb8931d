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


def test_first_call_from_a_running_interpreter_after_capsule_lookups():
    """Loading the library with ctypes after the PyCapsule type was tagged by the type cache (numpy
    and torch do that) must not hang in cffi's start-up lock (regression)."""
    import subprocess
    import sys
    from aclnn_emu import toolkit
    script = f"""
import ctypes, datetime
capsule = datetime.datetime_CAPI
for _ in range(3):
    getattr(capsule, "missing", None)      # tags PyCapsule_Type in the type cache
lib = ctypes.CDLL({str(toolkit.LIBRARY)!r})
print(lib.aclSetAclOpExecutorRepeatable(None))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "561103", result.stderr
