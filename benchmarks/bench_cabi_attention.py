"""FlashAttentionScoreGradV2 and PromptFlashAttentionV2 through the C ABI against the Python API.

A C++ program (attention_cabi.cpp, built with the official recipe) times phase 1 + phase 2 + stream
sync as a user's program would; this script times the same calls through aclnn_emu.run on the
shapes of bench_flash_attention_score_grad.py and bench_prompt_flash_attention.py. The two take
turns `--rounds` times (each keeps its best), so their difference is the C ABI's own cost, which
should be lost in the noise. `--isa avx2` measures as an AVX2 machine would.
"""

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import machine  # noqa: E402
from aclnn_emu import process, toolkit  # noqa: E402
from bench_flash_attention_score_grad import fag_call  # noqa: E402
from bench_prompt_flash_attention import B, D, N, S, pfa_call  # noqa: E402


def cabi_times(exe, repeat) -> dict:
    result = process.run([str(exe), str(repeat)], toolkit.environment(), 1800, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"{exe.name} failed with status {result.returncode}:\n{result.stdout}")
    return {line.split()[0]: float(line.split()[1]) / 1e3 for line in result.stdout.splitlines()}


def best_seconds(call, repeat) -> float:
    call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="turns of the C++ program and the Python API")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per turn")
    args = machine.start(parser)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, N, S, D)).astype(np.float16) for _ in range(3))
    python = {"FAG_ms": fag_call(2048), "PFA_ms": pfa_call(q, k, v)}
    best = {(side, name): float("inf") for side in ("C ABI", "Python") for name in python}
    with tempfile.TemporaryDirectory(prefix="aclnn-emu-bench-") as tmp:
        exe = pathlib.Path(tmp) / "attention_cabi"
        built = toolkit.compile(pathlib.Path(__file__).with_name("attention_cabi.cpp"), exe)
        if built.returncode != 0:
            sys.exit(f"compiling attention_cabi.cpp failed:\n{built.stdout}{built.stderr}")
        for _ in range(args.rounds):
            for name, seconds in cabi_times(exe, args.repeat).items():
                best["C ABI", name] = min(best["C ABI", name], seconds)
            for name, call in python.items():
                best["Python", name] = min(best["Python", name], best_seconds(call, args.repeat))
    for name, label in (
        ("FAG_ms", "FlashAttentionScoreGradV2 fp16 B1 N8 S2048 D128"),
        ("PFA_ms", f"PromptFlashAttentionV2 fp16 B{B} N{N} S{S} D{D}"),
    ):
        cabi, py = best["C ABI", name], best["Python", name]
        print(f"{label}: C ABI {cabi * 1e3:.0f} ms, Python API {py * 1e3:.0f} ms, C ABI / Python {cabi / py:.2f}")


if __name__ == "__main__":
    main()
