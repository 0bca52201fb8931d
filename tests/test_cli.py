"""The aclnn-emu command: env, doctor, coverage."""
import subprocess
import sys

from aclnn_emu import toolkit


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "aclnn_emu.cli", *args], capture_output=True, text=True,
                          timeout=300, **kwargs)


def test_env_exports_what_set_env_sh_exports():
    result = cli("env")
    assert result.returncode == 0
    script = f'eval "{result.stdout}"; echo "$ASCEND_HOME_PATH|$ASCEND_TOOLKIT_HOME|$ASCEND_OPP_PATH|$LD_LIBRARY_PATH"'
    via_cli = subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout
    via_sh = subprocess.run(["bash", "-c", f"source {toolkit.HOME}/set_env.sh; echo \"$ASCEND_HOME_PATH|"
                             "$ASCEND_TOOLKIT_HOME|$ASCEND_OPP_PATH|$LD_LIBRARY_PATH\""],
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}).stdout
    home, toolkit_home, opp, ld = via_cli.strip().split("|")
    assert home == toolkit_home == str(toolkit.HOME) and opp == f"{toolkit.HOME}/opp"
    assert ld.split(":")[0] == f"{toolkit.HOME}/lib64"
    assert via_sh.strip().split("|")[:3] == [home, toolkit_home, opp]


def test_doctor_passes_on_a_working_install():
    result = cli("doctor")
    assert result.returncode == 0, result.stdout
    assert "[FAIL]" not in result.stdout and "a C++ program runs against the toolkit" in result.stdout


def test_doctor_explains_a_broken_install(tmp_path):
    broken = tmp_path / "aclnn_emu"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('simulated')\n")
    result = cli("doctor", env={**toolkit.environment(), "ACLNN_EMU_PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    assert "[FAIL] a C++ program runs against the toolkit" in result.stdout
    assert "500000" in result.stdout
