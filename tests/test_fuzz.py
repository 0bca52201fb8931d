"""The fuzzer (tests/fuzz): every exported entry point has a baseline that runs on the chips it
names, the harness sees what it is meant to see (changed guard and input bytes, hangs, crashes),
and a short seeded run finds no bad outcome. The long run: `python -m tests.fuzz --help`."""

import os
import time

import numpy as np
import pytest

from aclnn_emu import versions
from aclnn_emu.opdef.registry import all_ops, by_name
from aclnn_emu.runtime import devices
from fuzz import case as fcase
from fuzz import driver, mutate
from fuzz.baselines import BASELINES
from fuzz.case import Case, T

CI_SEED = 29
CI_CALLS, CI_SECONDS = 2500, 60  # the seeded cases, cut at the time budget on a slow machine


def test_every_exported_entry_point_has_a_baseline():
    undeclared = [name for op in all_ops() for name in op.undeclared_phase1]
    assert sorted(BASELINES) == sorted([op.name for op in all_ops()] + undeclared)


@pytest.mark.parametrize(
    "name, baseline, soc",
    [(name, fn, soc) for name, entries in BASELINES.items() for fn, chips in entries for soc in chips],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_every_baseline_runs_on_its_chips(name, baseline, soc):
    outcome = fcase.run(Case(name, soc, False, baseline(soc)))
    assert outcome.kind == ("accepted" if name.startswith("aclnn") else "ran"), outcome  # phase 1 only


def test_cases_are_the_same_for_the_same_seed_and_number():
    assert repr(mutate.generate(5, 17)) == repr(mutate.generate(5, 17))
    assert {mutate.generate(5, i).op for i in range(200)} == set(BASELINES)


def test_a_quarter_of_the_calls_run_under_a_9x_release_that_declares_the_entry_point():
    cases = [mutate.generate(5, i) for i in range(400)]
    released = [c for c in cases if c.release]
    assert 60 <= len(released) <= 140, len(released)
    for c in released:
        assert c.release in versions.since("9.0.0")
        assert versions.declares(versions.RELEASES[c.release], by_name(c.op).since), c
    assert f"release={released[0].release!r}" in fcase.reproducer(released[0])


def test_a_case_runs_under_its_release():
    """PromptFlashAttentionV2 on Ascend950 returns 361001 from 9.0.0 on (versions.WITHDRAWALS)."""
    ((baseline, _), *_) = BASELINES["PromptFlashAttentionV2"]
    args = baseline("Ascend910_95")
    assert fcase.run(Case("PromptFlashAttentionV2", "Ascend910_95", False, args)).kind == "ran"
    withdrawn = fcase.run(Case("PromptFlashAttentionV2", "Ascend910_95", False, args, release="9.0.0"))
    assert (withdrawn.kind, withdrawn.code) == ("rejected", 361001), withdrawn


def test_generating_contents_over_an_extreme_float_fill_keeps_the_floats():
    """Seed 213 case 48785: an integer tensor whose fill an earlier mutation made (-inf,) gets new
    contents; generating it once raised OverflowError and stopped the long run."""
    case = mutate.generate(213, 48785)
    assert any(m.startswith("contents") for m in case.mutations), case.mutations


class _Corrupting:
    """A planted bug: the first run of a stream task writes one byte past a tensor or into an input."""

    def __init__(self, where):
        self.where = where

    def __call__(self, made):
        base, nbytes, *_ = made.allocations[0]
        devices.memory_of(base).array(base, nbytes)[self.where(nbytes)] ^= 0xFF


@pytest.mark.parametrize(
    "where, finding",
    [(lambda n: n - 1, "guard bytes of query"), (lambda n: fcase.GUARD, "input bytes of query")],
    ids=["guard", "input"],
)
def test_a_changed_guard_or_input_byte_is_bad(monkeypatch, where, finding):
    original = fcase._Made.changed
    corrupt = _Corrupting(where)
    monkeypatch.setattr(fcase._Made, "changed", lambda self: (corrupt(self), original(self))[1])
    outcome = fcase.run(
        Case("FlashAttentionScoreV2", "Ascend910B", False, BASELINES["FlashAttentionScoreV2"][0][0](""))
    )
    assert outcome.kind == "changed-bytes" and finding in outcome.detail


def test_values_reach_the_device_as_c_would_store_them():
    int32 = fcase._dtype("INT32")
    data = fcase._values(T((3,), "INT32", fill=(-1, (1 << 32) + 5, 7)), int32, 3, 0)
    assert np.frombuffer(data, np.int32).tolist() == [-1, 5, 7]  # the low bytes, as a C cast keeps
    data = fcase._values(T((2,), "INT32", fill=(float("nan"), 2.0)), int32, 2, 0)
    assert np.frombuffer(data, np.int32).tolist() == [0, 2]


def _sleep_forever(connection, seed):  # a worker that never answers
    connection.send("ready")
    connection.recv()
    time.sleep(3600)


def _die(connection, seed):  # a worker that dies on its first job
    connection.send("ready")
    connection.recv()
    os._exit(3)


@pytest.mark.parametrize("serve, kind", [(_sleep_forever, "hang"), (_die, "crash")])
def test_a_hang_or_a_crash_is_bad_and_the_run_goes_on(monkeypatch, serve, kind):
    monkeypatch.setattr(driver, "_serve", serve)
    pool = driver.Pool(seed=1, workers=1, timeout=2)
    try:
        outcomes = [o for _, o in pool.run([("gen", 0), ("gen", 1)])]
    finally:
        pool.close()
    assert [o.kind for o in outcomes] == [kind, kind]


def test_a_finding_prints_a_minimal_reproducer():
    case = mutate.generate(3, 0)
    case.args[0] = T((1,), "INT64")
    text = fcase.reproducer(case)
    assert f"args = baselines.{case.base}({case.soc!r})" in text and "args[0] = T((1,), 'INT64')" in text
    namespace = {}
    exec(compile(text.replace("print(", "outcome = ("), "<reproducer>", "exec"), namespace)
    assert not namespace["outcome"].bad


def test_a_short_seeded_run_finds_nothing_bad():
    result = driver.fuzz(CI_SEED, CI_CALLS, workers=2, timeout=20, seconds=CI_SECONDS, shrink_limit=3)
    assert result.calls >= 300, f"only {result.calls} calls in {CI_SECONDS} s"
    assert not result.findings, "\n\n".join(f.report() for f in result.findings) + "\n" + result.table()
