"""aclnnFlashAttentionScoreV2 speed and memory, measured in one run.

1. FA V2 fp16 BNSD B=1 N=8 S=2048 D=128 through aclnn_emu.run (both phases, synchronised) against
   PyTorch CPU scaled_dot_product_attention forward (fp16 inputs as given, same shape; and fp32,
   where PyTorch's CPU kernel is fastest). Goal: emulator / PyTorch <= 1.0.
2. The achieved GFLOP/s of the forward (2 matmuls: 4*B*N*S^2*D flops) against numpy's sgemm rate
   on a 2048^3 fp32 matmul; and the time of its matmuls alone (the kernel's blocks on its workers),
   the floor the elementwise steps add to; and the share of the cores' FMA peak each reaches
   (machine.peak_line), which bounds how far below PyTorch the forward can get.
3. Peak RSS of a fresh process running the forward at S=16384, N=8, against twice the bytes of its
   inputs and outputs (goal: within 2x).
Contenders take turns (benchmarks/interleaved.py), so the ratios compare like with like even
when other load makes single runs noisy.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402
from rss import rss_kib  # noqa: E402
from interleaved import best_times  # noqa: E402

B, N, D = 1, 8, 128
INT32_MAX = 2147483647


def fa_call(s):
    """A callable running FA V2 through the Python API on device tensors prepared once; the input bytes."""
    import aclnn_emu as ae

    ae.setup()
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, N, s, D), np.float32).astype(np.float16) for _ in range(3))
    lanes = (B, N, s, 8)
    args = [ae.to_device(x) for x in (q, k, v)] + [
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        float(1 / np.sqrt(D)),
        1.0,
        INT32_MAX,
        INT32_MAX,
        N,
        "BNSD",
        0,
        0,
        1,
        ae.empty(lanes, ae.DataType.ACL_FLOAT),
        ae.empty(lanes, ae.DataType.ACL_FLOAT),
        None,
        ae.empty(q.shape, ae.DataType.ACL_FLOAT16),
    ]
    data_bytes = 4 * q.nbytes + 2 * 4 * int(np.prod(lanes))
    return (lambda: ae.run("FlashAttentionScoreV2", *args)), data_bytes


def torch_forward(s, dtype_name):
    import torch

    gen = torch.Generator().manual_seed(0)
    dtype = getattr(torch, dtype_name)
    q, k, v = (torch.randn(B, N, s, D, generator=gen).to(dtype) for _ in range(3))

    def run():
        with torch.no_grad():
            torch.nn.functional.scaled_dot_product_attention(q, k, v)

    return run


def matmuls_alone(s):
    """Only the forward's matmuls: Q Kᵀ and P V per row block and key block of the kernel, on its
    workers, with its packed-panel kernel (K and V packed once per head, as there). What the
    elementwise steps add on top of the matmuls."""
    from aclnn_emu.kernels import native
    from aclnn_emu.kernels.flash_attention.flash_attention_score import KEY_BLOCK, ROW_BLOCK
    from aclnn_emu.kernels.parallel import map_ordered

    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((N, s, D), np.float32) for _ in range(3))

    def head(n):
        scores, pv = np.empty((ROW_BLOCK, KEY_BLOCK), np.float32), np.empty((ROW_BLOCK, D), np.float32)
        keys, values = native.pack_panels(k[n].T), native.pack_panels(v[n])
        for i0 in range(0, s, ROW_BLOCK):
            for c0 in range(0, s, KEY_BLOCK):
                native.matmul_panels(scores, q[n, i0 : i0 + ROW_BLOCK], keys, c0)
                native.matmul_panels(pv, scores, values.rows(c0, c0 + KEY_BLOCK))

    return lambda: map_ordered(head, range(N))


def sgemm():
    a = np.random.default_rng(1).standard_normal((2048, 2048), np.float32)
    return lambda: a @ a


def peak_rss_child(s):
    """Runs in a subprocess: one forward at sequence length s; prints the peak RSS, the RSS before
    the call (interpreter, library, device tensors) and the bytes of its inputs and outputs."""
    call, data = fa_call(s)
    before = rss_kib("VmRSS") * 1024
    call()
    print(json.dumps({"peak_rss": rss_kib("VmHWM") * 1024, "data": data, "baseline": before}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory-s", type=int, default=16384, help="sequence length of the memory run")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    if "--child" in sys.argv:
        peak_rss_child(int(parser.parse_args().child))
        return
    args = machine.start(parser)

    s = 2048
    flops = 4 * B * N * s * s * D
    contenders = {"emulator": fa_call(s)[0], "matmuls alone": matmuls_alone(s), "sgemm": sgemm()}
    try:
        contenders["torch fp16"] = torch_forward(s, "float16")
        contenders["torch fp32"] = torch_forward(s, "float32")
    except ImportError:
        pass
    best = best_times(contenders, args.repeat)
    fa = best["emulator"]
    rate = 2 * 2048**3 / best["sgemm"] / 1e9
    print(f"FA V2 fp16 BNSD B={B} N={N} S={s} D={D}: {fa * 1e3:.0f} ms, {flops / fa / 1e9:.1f} GFLOP/s")
    for name in ("torch fp16", "torch fp32"):
        if name in best:
            print(
                f"PyTorch CPU SDPA forward ({name[6:]}): {best[name] * 1e3:.0f} ms; emulator / PyTorch: "
                f"{fa / best[name]:.2f}  (goal <= 1.0)"
            )
    print(f"numpy sgemm 2048^3: {rate:.1f} GFLOP/s; the forward reaches {flops / fa / 1e9 / rate:.0%} of it")
    if "torch fp32" in best:
        print(
            f"its matmuls alone (same blocks, same workers): {best['matmuls alone'] * 1e3:.0f} ms, "
            f"{best['matmuls alone'] / best['torch fp32']:.2f} of PyTorch fp32"
        )
        print(
            machine.peak_line(
                flops, {"PyTorch fp32": best["torch fp32"], "FA": fa, "its matmuls": best["matmuls alone"]}
            )
        )

    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, __file__, "--child", str(args.memory_s)], capture_output=True, text=True, check=True
    )
    got = json.loads(child.stdout.strip().splitlines()[-1])
    grown = got["peak_rss"] - got["baseline"]
    print(
        f"FA at S={args.memory_s} N={N}: peak RSS {got['peak_rss'] / 2**30:.2f} GiB; the call adds "
        f"{grown / 2**30:.2f} GiB to the {got['baseline'] / 2**30:.2f} GiB holding its inputs and outputs "
        f"({got['data'] / 2**30:.2f} GiB); peak / data = {got['peak_rss'] / got['data']:.2f} (goal <= 2, "
        "the interpreter included)"
    )
    print(f"  memory run {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
