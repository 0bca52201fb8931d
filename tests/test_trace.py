"""Traces: ACLNN_EMU_TRACE writes a Chrome trace-event file, checked here against the format (every
duration and instant event has ph, ts, pid and tid; slices nest per track; every track is named;
every flow arrow has both ends, each inside a slice of its track) and against what the program did;
the file is complete however the program ends; `aclnn-emu trace` counts what was called.

Every program runs in its own process with a time limit (tests/c/trace_program.cpp)."""

import collections
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import cabi
from aclnn_emu import config, toolkit

PROGRAM = "trace_program.cpp"
TIMEOUT = 300
PFA, SCATTER = "PromptFlashAttentionV2", "ScatterPaKvCache"


# -- the format -----------------------------------------------------------------------------------
def _ns(us) -> int:
    return round(us * 1000)


def check_format(doc) -> list[dict]:
    """Assert that `doc` is a valid trace-event document as Perfetto and chrome://tracing read it."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    events = doc["traceEvents"]
    names = {}
    for e in events:
        assert "ph" in e, e
        if e["ph"] in "XBEiIsf":
            for key in ("ts", "pid", "tid"):
                assert key in e, (key, e)
            assert isinstance(e["ts"], (int, float)) and isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    tracks = collections.defaultdict(list)
    for e in events:
        if e["ph"] in "XBEi":
            assert (e["pid"], e["tid"]) in names, f"track {e['tid']} has no thread_name: {e}"
            tracks[(e["pid"], e["tid"])].append(e)
    slices = {}
    for track, track_events in tracks.items():
        open_b = []
        for e in sorted((e for e in track_events if e["ph"] in "BE"), key=lambda e: e["ts"]):
            if e["ph"] == "B":
                open_b.append(e["name"])
            else:
                assert open_b and open_b.pop() == e["name"], f"E without its B on {track}: {e}"
        assert not open_b, f"B without E on {track}: {open_b}"
        spans = sorted(
            ((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), e["name"]) for e in track_events if e["ph"] == "X"),
            key=lambda s: (s[0], -s[1]),
        )
        stack = []
        for start, end, name in spans:
            while stack and stack[-1][1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1][1], f"{name} overlaps {stack[-1][2]} on track {track}"
            stack.append((start, end, name))
        slices[track] = spans
    flows = collections.defaultdict(list)
    for e in events:
        if e["ph"] in "sf":
            flows[e["id"]].append(e)
    for flow, ends in flows.items():
        assert sorted(e["ph"] for e in ends) == ["f", "s"], f"flow {flow} does not pair up: {ends}"
        start, finish = sorted(ends, key=lambda e: e["ph"] == "f")
        assert (start["name"], start["cat"]) == (finish["name"], finish["cat"]) and finish["ts"] >= start["ts"]
        assert finish.get("bp") == "e"
        for end in ends:
            inside = [s for s in slices.get((end["pid"], end["tid"]), ()) if s[0] <= _ns(end["ts"]) <= s[1]]
            assert inside, f"flow end outside every slice of its track: {end}"
    return events


def test_the_format_check_can_fail():
    ok = {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "t"}}

    def x(name, ts, dur):
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 1}

    check_format({"traceEvents": [ok, x("a", 0, 10), x("b", 2, 3)]})
    bad = [
        [ok, x("a", 0, 10), x("b", 5, 10)],  # overlapping slices on one track
        [ok, {"name": "a", "ph": "X", "ts": 0, "dur": 1, "pid": 1}],  # no tid
        [x("a", 0, 1)],  # an unnamed track
        [ok, x("a", 0, 10), {"name": "l", "cat": "l", "ph": "s", "id": 1, "ts": 1, "pid": 1, "tid": 1}],
        [ok, {"name": "a", "ph": "B", "ts": 0, "pid": 1, "tid": 1}],
    ]
    for events in bad:
        with pytest.raises(AssertionError):
            check_format({"traceEvents": events})


# -- a traced program -----------------------------------------------------------------------------
def traced(tmp_path, ending, attention=2, scatter=3, env=None):
    path = tmp_path / "trace.json"
    result = cabi.compile_and_run(
        PROGRAM, ending, attention, scatter, timeout=TIMEOUT, env={"ACLNN_EMU_TRACE": str(path), **(env or {})}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return cabi.rule_codes(result.stdout), check_format(json.loads(path.read_text()))


def slices(events, cat=None, name=None):
    return [e for e in events if e["ph"] == "X" and cat in (None, e["cat"]) and name in (None, e["name"])]


def track_names(events):
    return {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}


@pytest.mark.parametrize("sync", ("0", "1"))
def test_the_trace_shows_calls_streams_kernels_copies_and_events(tmp_path, sync):
    printed, events = traced(tmp_path, "finalize", env={"ACLNN_EMU_SYNC": sync})
    pid = events[0]["pid"]
    assert {e["pid"] for e in events} == {pid}
    names = track_names(events)

    # runtime calls: every C ABI call on the host thread, with what it returned
    calls = collections.Counter(e["name"] for e in slices(events, "runtime"))
    assert calls[f"aclnn{PFA}GetWorkspaceSize"] == calls[f"aclnn{PFA}"] == 2
    assert calls[f"aclnn{SCATTER}GetWorkspaceSize"] == calls[f"aclnn{SCATTER}"] == 3
    assert calls["aclInit"] == calls["aclFinalize"] == calls["aclrtRecordEvent"] == 1
    assert {e["tid"] for e in slices(events, "runtime")} == {pid} and names[pid].startswith("host thread")
    (failed,) = [e for e in slices(events, "runtime") if "returned" in e["args"]]
    assert failed["name"] == "aclrtSetDevice" and failed["args"]["returned"] == printed["bad_device"] == 107001
    assert "99" in failed["args"]["error"]
    uploads = [
        e["args"]["bytes"]
        for e in slices(events, "runtime", "aclrtMemcpy")
        if e["args"]["direction"] == "HOST_TO_DEVICE"
    ]
    assert uploads.count(printed["bytes.attention_tensor"]) == 2  # q and out of the attention

    # kernels on one track per stream, named by operator, with dtypes, shapes and workspace
    kernels = slices(events, "kernel")
    by_op = collections.defaultdict(list)
    for e in kernels:
        by_op[e["args"]["op"]].append(e)
    assert {op: len(es) for op, es in by_op.items()} == {PFA: 2, SCATTER: 3}
    (pfa_track,) = {e["tid"] for e in by_op[PFA]}
    (scatter_track,) = {e["tid"] for e in by_op[SCATTER]}
    assert len({pid, pfa_track, scatter_track}) == 3
    assert names[pfa_track].startswith("stream 0") and names[scatter_track].startswith("stream 1")
    pfa = by_op[PFA][0]["args"]
    assert pfa["inputs"]["query"] == pfa["outputs"]["attentionOut"] == "FLOAT16[1, 2, 64, 128]"
    assert pfa["attrs"]["inputLayout"] == "BNSD" and pfa["attrs"]["numHeads"] == 2
    scatter = by_op[SCATTER][0]["args"]
    assert scatter["inputs"]["slotMapping"] == "INT32[1]"
    assert scatter["outputs"]["keyCacheRef"] == "FLOAT16[2, 4, 1, 16]"
    assert scatter["workspace_bytes"] == printed["bytes.scatter_workspace"] > 0
    assert all(e["dur"] > 0 for e in kernels)

    # the asynchronous copy is a task of the second stream, with its bytes
    (copy,) = slices(events, "copy")
    assert (copy["name"], copy["tid"]) == ("memcpy", scatter_track)
    assert copy["args"] == {"bytes": 4, "direction": "HOST_TO_DEVICE"}

    # every stream task has an arrow from the call that submitted it
    tasks = [e for e in slices(events) if e["cat"] != "runtime"]
    launches = [e for e in events if e["ph"] == "f" and e["name"] == "launch"]
    assert sorted((e["tid"], e["ts"]) for e in launches) == sorted((e["tid"], e["ts"]) for e in tasks)

    # the event: recorded on the first stream after both attention kernels, waited for by the second
    # stream and by the host (aclrtSynchronizeEvent)
    (record,) = slices(events, "event", "event record")
    (wait,) = slices(events, "event", "wait event")
    assert record["tid"] == pfa_track and wait["tid"] == scatter_track
    assert _ns(record["ts"]) >= max(_ns(e["ts"]) + _ns(e["dur"]) for e in by_op[PFA])
    assert min(_ns(e["ts"]) for e in by_op[SCATTER]) >= _ns(wait["ts"]) + _ns(wait["dur"])
    flows = collections.defaultdict(dict)
    for e in events:
        if e["ph"] in "sf" and e["name"] == "event":
            flows[e["id"]][e["ph"]] = e
    assert sorted((f["s"]["tid"], f["f"]["tid"]) for f in flows.values()) == sorted(
        [(pfa_track, scatter_track), (pfa_track, pid)]
    )
    (host_wait,) = [f["f"] for f in flows.values() if f["f"]["tid"] == pid]
    (sync_event,) = slices(events, "runtime", "aclrtSynchronizeEvent")
    assert sync_event["ts"] <= host_wait["ts"] <= sync_event["ts"] + sync_event["dur"]


def test_each_host_thread_has_its_own_track(tmp_path):
    printed, events = traced(tmp_path, "threads", attention=3, scatter=1)
    assert printed["other_thread"] == 0
    pid = events[0]["pid"]
    names = track_names(events)
    launches = collections.Counter(e["tid"] for e in slices(events, "runtime", f"aclnn{PFA}"))
    (other,) = set(launches) - {pid}
    assert launches == {pid: 6, other: 3}
    assert names[pid] == f"host thread {pid} (main)" and names[other] == f"host thread {other}"
    tracks = collections.Counter(e["tid"] for e in slices(events, "kernel") if e["args"]["op"] == PFA)
    assert sorted(tracks.values()) == [3, 6] and not set(tracks) & {pid, other}
    assert all(names[tid].startswith("stream ") for tid in tracks)


def test_exit_without_finalize_leaves_a_complete_trace(tmp_path):
    """exit(0) with a launch still queued and no aclFinalize: the C atexit handler writes the file."""
    _, events = traced(tmp_path, "exit")
    calls = collections.Counter(e["name"] for e in slices(events, "runtime"))
    assert calls[f"aclnn{PFA}"] == 3 and calls["aclFinalize"] == 0
    assert calls[f"aclnn{SCATTER}"] == 3
    assert len(slices(events, "kernel")) >= 5  # the queued one ran or was cancelled at exit


def test_a_forked_child_writes_its_own_file(tmp_path):
    printed, events = traced(tmp_path, "fork")
    assert printed["child"] == 0
    child_pid = printed["child.pid"]
    assert {e["pid"] for e in events} == {events[0]["pid"]} != {child_pid}
    assert collections.Counter(e["args"]["op"] for e in slices(events, "kernel")) == {PFA: 2, SCATTER: 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["trace.json", f"trace-{child_pid}.json"])
    child = check_format(json.loads((tmp_path / f"trace-{child_pid}.json").read_text()))
    assert {e["pid"] for e in child} == {child_pid}
    assert [e["args"]["op"] for e in slices(child, "kernel")] == [PFA]
    calls = collections.Counter(e["name"] for e in slices(child, "runtime"))
    assert calls["aclInit"] == calls["aclFinalize"] == calls[f"aclnn{PFA}"] == 1
    assert calls[f"aclnn{SCATTER}"] == 0  # nothing of the parent's


PYTHON = """
import os
import sys
import numpy as np
import aclnn_emu as ae
from aclnn_emu.runtime import api as rt

x = np.ones((1, 2, 64, 128), np.float16)
q, out = ae.to_device(x), ae.empty(x.shape, ae.DataType.ACL_FLOAT16)
for _ in range(int(sys.argv[1])):
    ae.run("PromptFlashAttentionV2", q, q, q, *[None] * 9, 2, 0.088, 2147483647, 0, "BNSD", 0, 0, out)
small = ae.to_device(np.zeros(4, np.float16))
host = np.zeros(64, np.uint8)
rt.memcpy(host.ctypes.data, 64, small.addr, 64, 2)     # reads past the 8-byte allocation: a sanitizer report
quiet = os.fork()
if quiet == 0:
    sys.exit(0)                    # a child that makes no traced call
os.waitpid(quiet, 0)
busy = os.fork()
if busy == 0:                      # a child with work of its own, in a fresh runtime
    q, out = ae.to_device(x), ae.empty(x.shape, ae.DataType.ACL_FLOAT16)
    ae.run("PromptFlashAttentionV2", q, q, q, *[None] * 9, 2, 0.088, 2147483647, 0, "BNSD", 0, 0, out)
    sys.exit(0)
print(quiet, busy, os.waitpid(busy, 0)[1])
"""


def test_a_python_program_is_traced_too(tmp_path):
    path = tmp_path / "python.json"
    env = toolkit.environment()
    env["ACLNN_EMU_TRACE"] = str(path)
    result = subprocess.run(
        [sys.executable, "-c", PYTHON, "3"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    quiet, busy, busy_status = map(int, result.stdout.split())
    x = np.ones((1, 2, 64, 128), np.float16)
    assert busy_status == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["python.json", f"python-{busy}.json"])
    child = check_format(json.loads((tmp_path / f"python-{busy}.json").read_text()))
    assert [(e["pid"], e["args"]["op"]) for e in slices(child, "kernel")] == [(busy, PFA)]
    events = check_format(json.loads(path.read_text()))
    assert [e["args"]["op"] for e in slices(events, "kernel")] == [PFA] * 3
    (report,) = [e for e in events if e["ph"] == "i"]
    assert report["name"] == "sanitizer: out-of-bounds" and "memcpy source" in report["args"]["message"]
    copies = [(e["name"], e["args"]["direction"], e["args"]["bytes"]) for e in slices(events, "runtime")]
    to_device = ("aclnn_emu.to_device", "HOST_TO_DEVICE")
    assert copies == [(*to_device, x.nbytes), (*to_device, 8)]  # the Python API's copies, as C's aclrtMemcpy


def test_a_program_may_turn_tracing_on_before_aclinit(tmp_path):
    """Settings are read again at aclInit: a setenv before it starts the trace."""
    script = (
        "import os, sys, numpy as np, aclnn_emu as ae\n"
        "os.environ['ACLNN_EMU_TRACE'] = sys.argv[1]\n"
        "ae.setup()\n"
        "q = ae.to_device(np.ones((1, 1, 16, 128), np.float16))\n"
        "out = ae.empty((1, 1, 16, 128), ae.DataType.ACL_FLOAT16)\n"
        "ae.run('PromptFlashAttentionV2', q, q, q, *[None] * 9, 1, 0.088, 2147483647, 0, 'BNSD', 0, 0, out)\n"
    )
    env = toolkit.environment()
    env.pop("ACLNN_EMU_TRACE", None)
    path = tmp_path / "late.json"
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    assert [e["args"]["op"] for e in slices(check_format(json.loads(path.read_text())), "kernel")] == [PFA]


def test_off_by_default_and_a_bad_value_is_refused(tmp_path):
    env = toolkit.environment()
    env.pop("ACLNN_EMU_TRACE", None)
    result = subprocess.run(
        [str(cabi.build(PROGRAM)), "finalize", "1", "1"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0 and list(tmp_path.iterdir()) == [], result.stdout + result.stderr
    _, errors, _ = config.check({"ACLNN_EMU_TRACE": str(tmp_path / "missing" / "t.json")})
    assert errors == [
        f"ACLNN_EMU_TRACE={str(tmp_path / 'missing' / 't.json')!r} is not allowed: use "
        f"{config.BY_VARIABLE['ACLNN_EMU_TRACE'].allowed}"
    ]
    assert config.check({"ACLNN_EMU_TRACE": str(tmp_path)})[1]  # a directory is no file
    assert config.check({"ACLNN_EMU_TRACE": "t.json"})[0].trace == os.path.abspath("t.json")


# -- aclnn-emu trace ------------------------------------------------------------------------------
def summary_rows(output: str) -> dict[str, list[str]]:
    """The operator table printed after the program: operator -> its cells."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("operator "))
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize("attention, scatter", ((1, 4), (3, 2)))
@pytest.mark.parametrize("given", ("source", "executable"))
def test_the_trace_command_counts_the_calls_per_operator(tmp_path, attention, scatter, given):
    program = cabi.C_DIR / PROGRAM if given == "source" else cabi.build(PROGRAM)
    output = tmp_path / "out.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aclnn_emu.cli",
            "trace",
            "-o",
            str(output),
            str(program),
            "finalize",
            str(attention),
            str(scatter),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=toolkit.environment(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished 1" in result.stdout  # the program's own output comes first
    rows = summary_rows(result.stdout)
    assert {op: int(cells[0]) for op, cells in rows.items()} == {PFA: attention, SCATTER: scatter}
    events = check_format(json.loads(output.read_text()))
    for op, (calls, total, mean, low, high, share) in rows.items():
        durations = [e["dur"] for e in slices(events, "kernel") if e["args"]["op"] == op]
        assert float(total) == pytest.approx(sum(durations), abs=0.1)
        assert float(mean) == pytest.approx(sum(durations) / len(durations), abs=0.1)
        assert (float(low), float(high)) == pytest.approx((min(durations), max(durations)), abs=0.1)
    assert sum(float(cells[-1].rstrip("%")) for cells in rows.values()) == pytest.approx(100, abs=0.2)
    assert re.search(r"^aclrtMemcpy HOST_TO_DEVICE\s+\d+\s+\d+", result.stdout, re.M)
    assert re.search(r"^memcpy on a stream HOST_TO_DEVICE\s+1\s+4\s", result.stdout, re.M)


def test_the_trace_command_passes_on_the_programs_exit_status(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aclnn_emu.cli",
            "trace",
            "-o",
            str(tmp_path / "t.json"),
            str(cabi.build(PROGRAM)),
            "wrong",
            "usage",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=toolkit.environment(),
    )
    assert result.returncode == 2 and "left no trace" in result.stderr, result.stdout + result.stderr


SCRIPT = """
import sys
import numpy as np
import aclnn_emu as ae

print("python", sys.executable, sys.argv[1:])
q = np.ones((1, 2, 64, 128), np.float16)
for _ in range(2):
    ae.ops.PromptFlashAttentionV2(q, q, q, numHeads=2, inputLayout="BNSD")
"""


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "aclnn_emu.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=toolkit.environment(),
        cwd=cwd,
    )


def test_the_trace_command_runs_a_python_script_with_this_python_and_summarises_a_trace_file(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(SCRIPT)
    result = _cli("trace", str(script), "one", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"python {sys.executable} ['one']" in result.stdout
    assert {op: int(cells[0]) for op, cells in summary_rows(result.stdout).items()} == {PFA: 2}
    nbytes = 2 * 64 * 128 * 2  # q, k and v copied in, the output copied back, per call
    assert re.search(rf"^aclnn_emu.to_device HOST_TO_DEVICE\s+6\s+{6 * nbytes}\s", result.stdout, re.M)
    assert re.search(rf"^aclnn_emu.numpy DEVICE_TO_HOST\s+2\s+{2 * nbytes}\s", result.stdout, re.M)
    written = tmp_path / "step.trace.json"
    again = _cli("trace", str(written))
    assert again.returncode == 0, again.stderr
    summary = result.stdout[result.stdout.index("aclnn-emu trace: ") :].split("\n", 1)[1]
    assert again.stdout == f"aclnn-emu trace: {written}\n{summary}"


def test_the_trace_command_says_what_is_wrong_with_a_trace_file(tmp_path):
    (tmp_path / "not.json").write_text('{"other": 1}')
    for name, words in (("missing.json", "No such file"), ("not.json", "is not a trace file")):
        result = _cli("trace", str(tmp_path / name))
        assert result.returncode == 2 and words in result.stderr and not result.stdout, result.stderr
