"""ACLNN_EMU_CANN_VERSION through the C ABI: what a program gets from each CANN release (aclnn_emu/versions.py)."""

import pytest

import cabi
from aclnn_emu import versions

A2, A3, A5 = "Ascend910B", "Ascend910_93", "Ascend910_95"
WITHDRAWN = 361001  # ACLNN_ERR_RUNTIME_ERROR
PFA_GONE = "Interface aclnnPromptFlashAttention versions V1 to V3 are no longer supported on Ascend950."
IFA_GONE = "Interface aclnnIncreFlashAttention versions V1 to V4 are no longer supported on Ascend950."
# hicann/runtime include/external/acl/acl_rt.h ACL_MAJOR/MINOR/PATCH_VERSION at each release's tag.
API = {"8.5.0-beta.1": "1.15.0", "8.5.0": "1.16.0", "9.0.0": "1.17.0", "9.1.0": "1.17.0"}
# hicann/runtime src/acl/aclrt_impl/acl.cpp CalculateVersionNum: major*1e7 + minor*1e5 + patch*1e3, a beta
# less 200 plus its number.
NUM = {"8.5.0-beta.1": 80_499_801, "8.5.0": 80_500_000, "9.0.0": 90_000_000, "9.1.0": 90_100_000}


def run(version, soc):
    env = {"ACLNN_EMU_SOC": soc}
    if version is not None:
        env["ACLNN_EMU_CANN_VERSION"] = version
    result = cabi.compile_and_run("cann_versions.cpp", env=env, timeout=180)
    assert result.returncode == 0 and "sanitizer" not in result.stderr, result.stdout + result.stderr
    messages = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.split(" ", 1)[0].endswith(".msg"))
    return result.stdout, cabi.rule_codes(result.stdout), messages


@pytest.mark.parametrize("version", [None, *versions.ORDER])
@pytest.mark.parametrize("soc", [A2, A3, A5])
def test_pfa_v2_and_ifa_v4_per_release_and_chip(version, soc):
    """On Ascend950 (the Ascend910_95 family) 9.0.0 and 9.1.0 refuse PromptFlashAttention V1-V3 and
    IncreFlashAttention V1-V4 in both phases before reading an argument (ops-transformer v9.0.0
    attention/{prompt,incre}_flash_attention/op_host/op_api/aclnn_prompt_flash_attention_v2.cpp
    aclnnPromptFlashAttentionV2GetWorkspaceSize / aclnnPromptFlashAttentionV2 and
    aclnn_incre_flash_attention_v4.cpp aclnnIncreFlashAttentionV4GetWorkspaceSize / aclnnIncreFlashAttentionV4;
    branch 9.1.0 the same functions under attention/*/op_api/). Every other release and chip runs them."""
    stdout, codes, messages = run(version, soc)
    release = version or versions.DEFAULT
    assert f"version {API[release]}\nversion_str {release}\n" in stdout and codes.pop("version_num") == NUM[release]
    if soc == A5 and release.startswith("9."):
        assert codes == {name: WITHDRAWN for name in ("pfa.phase1", "pfa.phase2", "ifa.phase1", "ifa.phase2")}
        for phase in ("phase1", "phase2"):
            assert messages[f"pfa.{phase}.msg"].endswith(PFA_GONE)
            assert messages[f"ifa.{phase}.msg"].endswith(IFA_GONE)
    else:
        assert codes == {f"{op}.{step}": 0 for op in ("pfa", "ifa") for step in ("phase1", "phase2", "phase2.sync")}


@pytest.mark.parametrize("version", versions.ORDER)
def test_coverage_per_release(version):
    """`aclnn-emu coverage --version V`: the release's parts, its withdrawn entry points, its rules and
    what it changes that is not emulated (the 9.x-only entry points among them)."""
    from aclnn_emu import cli

    table = cli.coverage_table(version)
    nine = version.startswith("9.")
    assert ("| `Ascend950PR_9599` |" in table) == nine and ("| `Ascend910_9599` |" in table) != nine
    assert ("| `Ascend950PR_957bx` |" in table) == (version == "9.1.0")
    row = "| `aclnnPromptFlashAttentionV2GetWorkspaceSize` | aclnnop/aclnn_prompt_flash_attention_v2.h | yes"
    assert (row + "; 361001 on Ascend950" in table) == nine and row in table
    fia = "| `aclnnFusedInferAttentionScoreV4GetWorkspaceSize` | aclnnop/aclnn_fused_infer_attention_score_v4.h | yes"
    assert (fia + "; 361001 on Ascend950" in table) == nine and fia in table
    v5 = "| `aclnnFusedInferAttentionScoreV5GetWorkspaceSize` | aclnnop/aclnn_fused_infer_attention_score_v5.h | "
    assert (v5 + "yes |" in table) == nine and (v5 + f"no: not in CANN {version} (from 9.0.0 on)" in table) != nine
    for name, rule in versions.RULES.items():
        assert (f"- `{name}`: {rule.what}" in table) == (version in rule.sources)


def test_the_setting_is_checked_like_every_other():
    """aclnn_emu/config.py: one line naming the variable, the value and the allowed ones; the default stays."""
    from aclnn_emu import config

    chosen, errors, _ = config.check({"ACLNN_EMU_CANN_VERSION": "9.2"})
    assert errors == ["ACLNN_EMU_CANN_VERSION='9.2' is not allowed: use 8.5.0-beta.1, 8.5.0, 9.0.0, 9.1.0"]
    assert chosen.cann_version == "8.5.0" == versions.DEFAULT
    assert config.check({"ACLNN_EMU_CANN_VERSION": " 9.1.0 "})[0].cann_version == "9.1.0"
    assert "(did you mean 8.5.0-beta.1?)" in config.check({"ACLNN_EMU_CANN_VERSION": "8.5.0-BETA1"})[1][0]


@pytest.mark.parametrize("withdrawal", versions.WITHDRAWALS, ids=lambda w: w.rule)
@pytest.mark.parametrize("version", versions.ORDER)
def test_every_withdrawn_entry_point_refuses_both_phases(monkeypatch, withdrawal, version):
    """Each entry point WITHDRAWALS names (all of them emulated) fails on the family before its arguments
    are read, in both phases, in the releases the rule holds in; elsewhere its own checks run."""
    import aclnn_emu as ae
    from aclnn_emu.opdef.registry import by_name
    from aclnn_emu.pytest_plugin import select

    select(monkeypatch, cann_version=version, soc=withdrawal.family)
    ae.setup()
    withdrawn = version in versions.RULES[withdrawal.rule].sources
    for name in withdrawal.entry_points:
        op = by_name(name)
        code = getattr(ae.raw, op.phase1)(*[None] * len(op.params))[0]
        assert (code == withdrawal.code) == withdrawn, (name, version, code)
        assert (getattr(ae.raw, op.phase2)(0, 0, 0, 0) == withdrawal.code) == withdrawn, (name, version)
