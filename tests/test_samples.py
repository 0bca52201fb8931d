"""Every spec sample builds with the official recipes, runs unchanged and prints what the goldens
predict (tests/golden/samples.py)."""

import pathlib
import subprocess
import sys

import pytest

from aclnn_emu import toolkit, versions
from aclnn_emu.cli import sample_env
from golden.samples import EXPECTED, fia_example_lines

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SPEC_TOOLS = ROOT.parent / "shared" / "tools" / "extract_samples.py"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.cpp"))
# Every sample prints its outputs after a successful run, as "result[i] is: ..." lines or (the
# IncreFlashAttentionV4 sample) "index: i: ..." lines.
RESULT_LINES = ("result[0] is:", "index: 0:")


def bash(script, cwd):
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def cmake_build(tmp_path_factory):
    """The current recipe: source set_env.sh; cmake -DCMAKE_SKIP_RPATH=TRUE; make."""
    build = tmp_path_factory.mktemp("samples-build")
    result = bash(
        f"source {toolkit.HOME}/set_env.sh && cmake {SAMPLES} -DCMAKE_CXX_COMPILER=g++ "
        f"-DCMAKE_SKIP_RPATH=TRUE >/dev/null && make -j2 2>&1",
        build,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return build / "bin"


@pytest.mark.skipif(not SPEC_TOOLS.exists(), reason="the spec docs are not beside this checkout")
def test_samples_are_byte_identical_to_the_spec(tmp_path):
    """Every sample of the first five docs is here, and every sample here (those of the extended
    and family docs too) is its doc's, byte for byte."""
    subprocess.run([sys.executable, str(SPEC_TOOLS), str(tmp_path / "spec")], check=True, capture_output=True)
    subprocess.run(
        [sys.executable, str(SPEC_TOOLS), str(tmp_path / "all"), "--extended", "--family"],
        check=True,
        capture_output=True,
    )
    assert {p.stem for p in (tmp_path / "spec").glob("*.cpp")} <= set(NAMES)
    for name in NAMES:
        assert (SAMPLES / f"{name}.cpp").read_bytes() == (tmp_path / "all" / f"{name}.cpp").read_bytes(), name


@pytest.mark.parametrize("version", versions.ORDER)
@pytest.mark.parametrize("name", NAMES)
def test_sample_runs_unchanged(cmake_build, name, version):
    """Under every CANN release: no sample calls what a release changes (the samples' chips, dtypes
    and layouts are the same in 9.x; the 910_95 sample runs as Ascend950), so each prints the same."""
    env = toolkit.environment({**sample_env(SAMPLES / f"{name}.cpp"), "ACLNN_EMU_CANN_VERSION": version})
    result = subprocess.run([str(cmake_build / name)], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if "result[" in line or line.startswith("index: ")]
    assert lines, "no result line printed"
    if EXPECTED[name] is None:  # what it prints is undefined (see tests/golden/samples.py)
        return
    expected = EXPECTED[name]()
    assert len(lines) == len(expected)
    compared = [(i, got, want) for i, (got, want) in enumerate(zip(lines, expected)) if want is not None]
    wrong = [(i, got, want) for i, got, want in compared if got != want]
    assert len(compared) >= len(expected) // 4 and not wrong, f"{len(wrong)} lines differ, first: {wrong[:1]}"


def test_older_recipe_with_custom_path_and_libopapi(tmp_path):
    """CANN 8.x page: ASCEND_CUSTOM_PATH, include + include/aclnn, libopapi.so."""
    (tmp_path / "CMakeLists.txt").write_text(f"""cmake_minimum_required(VERSION 3.14)
project(ACLNN_EXAMPLE)
add_compile_options(-std=c++11)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY "./bin")
set(CMAKE_CXX_FLAGS_RELEASE "-fPIC -O2 -Wall")
add_executable(opapi_test {SAMPLES / "aclnnScatterPaKvCache.cpp"})
set(ASCEND_PATH $ENV{{ASCEND_CUSTOM_PATH}})
include_directories(${{ASCEND_PATH}}/include ${{ASCEND_PATH}}/include/aclnn)
target_link_libraries(opapi_test PRIVATE ${{ASCEND_PATH}}/lib64/libascendcl.so ${{ASCEND_PATH}}/lib64/libnnopbase.so
                      ${{ASCEND_PATH}}/lib64/libopapi.so ${{ASCEND_PATH}}/lib64/libopapi_transformer.so)
""")
    result = bash(
        f"source {toolkit.HOME}/set_env.sh && mkdir -p build && cd build && cmake .. "
        f"-DCMAKE_CXX_COMPILER=g++ -DCMAKE_SKIP_RPATH=TRUE >/dev/null && make 2>&1 && ./bin/opapi_test",
        tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_plain_gpp_line(tmp_path):
    home = toolkit.HOME
    result = bash(
        f"g++ {SAMPLES / 'aclnnScatterPaKvCache.cpp'} -I{home}/include -I{home}/include/aclnnop "
        f"-L{home}/lib64 -lascendcl -lnnopbase -lopapi -o prog && "
        f"LD_LIBRARY_PATH={home}/lib64 ./prog",
        tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_aclnn_emu_run_command():
    result = subprocess.run(
        [sys.executable, "-m", "aclnn_emu.cli", "run", str(SAMPLES / "aclnnScatterPaKvCache.cpp")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


MIRROR = pathlib.Path("/work/.mirror/cannmirror+ops-transformer/repo")
FIA_EXAMPLE = "attention/fused_infer_attention_score/examples/test_aclnn_fused_infer_attention_score.cpp"


@pytest.mark.skipif(not MIRROR.exists(), reason="the ops-transformer mirror is not on this machine")
def test_cann_fused_infer_attention_score_example(tmp_path):
    """CANN's own FusedInferAttentionScoreV4 example (ops-transformer v8.5.0-beta.1), read from the
    mirror at test time, built with the plain g++ line and run unchanged; it prints its fp16 output
    through a float vector (pairs of halves, then the allocation's float 1s)."""
    source = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"v8.5.0-beta.1:{FIA_EXAMPLE}"], capture_output=True, check=True
    ).stdout
    (tmp_path / "example.cpp").write_bytes(source)
    home = toolkit.HOME
    result = bash(
        f"g++ -std=c++11 example.cpp -I{home}/include -I{home}/include/aclnn -I{home}/include/aclnnop "
        f"-L{home}/lib64 -lascendcl -lnnopbase -lopapi -o prog && LD_LIBRARY_PATH={home}/lib64 ./prog",
        tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("result[")]
    assert lines == fia_example_lines()
