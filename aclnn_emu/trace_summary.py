"""What `aclnn-emu trace` prints after the program: a per-operator summary of its trace file, like an NPU
profiler's op summary (calls, total, mean, min, max, share of kernel time), and the copies by direction."""

import dataclasses
import json


@dataclasses.dataclass
class Row:
    name: str
    calls: int = 0
    total_us: float = 0.0
    min_us: float = float("inf")
    max_us: float = 0.0
    bytes: int = 0
    failed: int = 0

    def add(self, event: dict) -> None:
        self.calls += 1
        self.total_us += event["dur"]
        self.min_us = min(self.min_us, event["dur"])
        self.max_us = max(self.max_us, event["dur"])
        self.bytes += event["args"].get("bytes", 0)
        self.failed += "error" in event["args"]


def load(path) -> list[dict]:
    with open(path) as f:
        return json.load(f)["traceEvents"]


def _slices(events):
    return (e for e in events if e.get("ph") == "X")


def operators(events) -> list[Row]:
    """One row per operator over its kernels on every stream, the longest total first."""
    rows = {}
    for event in _slices(events):
        if event.get("cat") == "kernel":
            name = event["args"].get("op", event["name"])
            rows.setdefault(name, Row(name)).add(event)
    return sorted(rows.values(), key=lambda r: -r.total_us)


def copies(events) -> list[Row]:
    """One row per copying call or stream task and direction: "aclrtMemcpy HOST_TO_DEVICE" (the call
    copied), "memcpy on a stream HOST_TO_DEVICE" (an aclrtMemcpyAsync's task)."""
    rows = {}
    for event in _slices(events):
        direction = event["args"].get("direction")
        if direction is not None:
            where = "" if event.get("cat") == "runtime" else " on a stream"
            name = f"{event['name']}{where} {direction}"
            rows.setdefault(name, Row(name)).add(event)
    return sorted(rows.values(), key=lambda r: r.name)


def _table(header, rows) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    return [
        "  ".join(str(cell).ljust(w) if i == 0 else str(cell).rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
        for line in (header, *rows)
    ]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def summary(events) -> str:
    ops, moved = operators(events), copies(events)
    kernel_us = sum(r.total_us for r in ops)
    streams = {e["tid"] for e in _slices(events) if e.get("cat") != "runtime"}
    calls = sum(1 for e in _slices(events) if e.get("cat") == "runtime")
    lines = [
        f"{_count(sum(r.calls for r in ops), 'kernel')} of {_count(len(ops), 'operator')} on "
        f"{_count(len(streams), 'stream')}, {_count(calls, 'runtime call')}"
    ]
    if ops:
        lines += [""] + _table(
            ("operator", "calls", "total us", "mean us", "min us", "max us", "share"),
            [
                (
                    r.name,
                    r.calls,
                    f"{r.total_us:.1f}",
                    f"{r.total_us / r.calls:.1f}",
                    f"{r.min_us:.1f}",
                    f"{r.max_us:.1f}",
                    f"{100 * r.total_us / kernel_us:.1f}%" if kernel_us else "-",
                )
                for r in ops
            ],
        )
        failed = sum(r.failed for r in ops)
        if failed:
            lines.append(f"({failed} of these kernels failed or were cancelled: their slices say why)")
    if moved:
        lines += [""] + _table(
            ("copy", "calls", "bytes", "total us"), [(r.name, r.calls, r.bytes, f"{r.total_us:.1f}") for r in moved]
        )
    return "\n".join(lines)
