"""aclnnFlashAttentionScoreGradV2 speed and memory, measured in one run.

1. FAG V2 fp16 BNSD B=1 N=8 S=2048 D=128 through aclnn_emu.run (both phases, synchronised) against
   PyTorch CPU scaled_dot_product_attention (fp32, same shape), like with like twice: the backward
   alone (PyTorch's forward + backward less its forward with autograd on), and a whole training
   step (FlashAttentionScoreV2 + FlashAttentionScoreGradV2 against PyTorch's forward + backward).
   Goal: ratios <= 1.0.
2. The achieved GFLOP/s of FAG (5 matmuls: 10*B*N*S^2*D flops) against numpy's sgemm rate on a
   2048^3 fp32 matmul (all cores). Goal: >= 70 %. And the time of its matmuls alone (the kernel's
   blocks on its workers), the floor the elementwise steps add to; and the share of the cores' FMA
   peak each reaches (machine.peak_line).
3. Peak RSS of a fresh process running FAG at S=16384, N=8 (everything else as in 1). Goal: <= 4 GiB.
The three timings run in turns and each keeps its best, so the ratios compare like with like
even when other load on the machine makes single runs noisy. `--isa avx2` measures as an AVX2
machine would (benchmarks/machine.py).
"""

import argparse
import json
import pathlib
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import machine  # noqa: E402
from rss import rss_kib  # noqa: E402
from interleaved import best_times  # noqa: E402
from bench_flash_attention_score import fa_call  # noqa: E402

B, N, D = 1, 8, 128
INT32_MAX = 2147483647


def fag_inputs(s, seed=0):
    """fp16 q/k/v/dy and a matching forward (fp32 maths, chunked so it never holds S x S)."""
    rng = np.random.default_rng(seed)
    q, k, v, dy = (rng.standard_normal((B, N, s, D), np.float32).astype(np.float16) for _ in range(4))
    scale = 1 / np.sqrt(D)
    kf, vf = k.astype(np.float32), v.astype(np.float32)
    out = np.empty_like(q)
    smax, ssum = np.empty((B, N, s, 8), np.float32), np.empty((B, N, s, 8), np.float32)
    for n in range(N):
        for i in range(0, s, 1024):
            scores = q[0, n, i : i + 1024].astype(np.float32) @ kf[0, n].T * np.float32(scale)
            row_max = scores.max(axis=1, keepdims=True)
            np.exp(scores - row_max, out=scores)
            row_sum = scores.sum(axis=1, keepdims=True)
            out[0, n, i : i + 1024] = (scores @ vf[0, n] / row_sum).astype(np.float16)
            smax[0, n, i : i + 1024] = row_max
            ssum[0, n, i : i + 1024] = row_sum
    return q, k, v, dy, out, smax, ssum, scale


def fag_call(s):
    """A callable running FAG V2 through the Python API on device tensors prepared once."""
    import aclnn_emu as ae

    ae.setup()
    q, k, v, dy, out, smax, ssum, scale = fag_inputs(s)
    args = (
        [ae.to_device(x) for x in (q, k, v, dy)]
        + [None, None, None, None]
        + [
            ae.to_device(smax),
            ae.to_device(ssum),
            None,
            ae.to_device(out),
            None,
            None,
            None,
            float(scale),
            1.0,
            INT32_MAX,
            INT32_MAX,
            N,
            "BNSD",
            0,
            0,
            1,
        ]
        + [ae.empty(x.shape, ae.DataType.ACL_FLOAT16) for x in (q, k, v)]
        + [None]
    )
    return lambda: ae.run("FlashAttentionScoreGradV2", *args)


def matmuls_alone(s):
    """Only the backward's five matmuls per block of the kernel (S = Q Kᵀ, dP = dY Vᵀ, dV += Pᵀ dY,
    dQ += dS K, dK += dSᵀ Q), on its workers, with its packed-panel kernel and block sizes: the
    floor the elementwise steps add to."""
    from aclnn_emu.kernels import native
    from aclnn_emu.kernels.flash_attention.flash_attention_score_grad import KEY_BLOCK, ROW_BLOCK
    from aclnn_emu.kernels.parallel import map_ordered

    rng = np.random.default_rng(2)
    q, k, v, dy = (rng.standard_normal((N, s, D), np.float32) for _ in range(4))

    def head(n):
        kt, kp, vt = native.pack_panels(k[n].T), native.pack_panels(k[n]), native.pack_panels(v[n].T)
        q_rows, dy_rows = native.pack_panels(q[n]), native.pack_panels(dy[n])
        # rows of P and dS padded as the kernel's (ROW_PAD), so their columns do not share L1 sets
        p, ds = (np.empty((ROW_BLOCK, KEY_BLOCK + native.ROW_PAD), np.float32)[:, :KEY_BLOCK] for _ in range(2))
        dq, dk, dv = np.zeros((ROW_BLOCK, D), np.float32), np.zeros((s, D), np.float32), np.zeros((s, D), np.float32)
        for i0 in range(0, s, ROW_BLOCK):
            rows = slice(i0, i0 + ROW_BLOCK)
            for c0 in range(0, s, KEY_BLOCK):
                keys = slice(c0, c0 + KEY_BLOCK)
                native.matmul_panels(p, q[n, rows], kt, c0)
                native.matmul_panels(ds, dy[n, rows], vt, c0)
                native.matmul_panels(dv[keys], p.T, dy_rows.rows(i0, i0 + ROW_BLOCK), accumulate=True)
                native.matmul_panels(dq, ds, kp.rows(c0, c0 + KEY_BLOCK), accumulate=True)
                native.matmul_panels(dk[keys], ds.T, q_rows.rows(i0, i0 + ROW_BLOCK), accumulate=True)

    return lambda: map_ordered(head, range(N))


def torch_step(s, backward=True):
    """PyTorch SDPA forward with autograd on, and its backward if `backward`."""
    import torch

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, N, s, D, generator=gen, requires_grad=True) for _ in range(3))
    grad = torch.randn(B, N, s, D, generator=gen)

    def run():
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        if backward:
            out.backward(grad)

    return run


def sgemm():
    a = np.random.default_rng(1).standard_normal((2048, 2048), np.float32)
    return lambda: a @ a


def peak_rss_child(s):
    """Runs in a subprocess: one FAG call at sequence length s; prints the peak RSS in bytes (VmHWM:
    this process image's own peak, where ru_maxrss would carry the parent's across fork and exec)."""
    fag_call(s)()
    print(json.dumps({"peak_rss": rss_kib("VmHWM") * 1024}))


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
    flops = 10 * B * N * s * s * D
    try:
        torch_runs = {"torch step": torch_step(s), "torch forward": torch_step(s, backward=False)}
    except ImportError:
        torch_runs = {}
    runs = {"fag": fag_call(s), "matmuls alone": matmuls_alone(s), "fas": fa_call(s)[0], "sgemm": sgemm(), **torch_runs}
    best = best_times(runs, args.repeat)
    fag, gemm = best["fag"], best["sgemm"]
    rate = 2 * 2048**3 / gemm / 1e9
    print(f"FAG V2 fp16 BNSD B={B} N={N} S={s} D={D}: {fag * 1e3:.0f} ms, {flops / fag / 1e9:.1f} GFLOP/s")
    if torch_runs:
        step, forward = best["torch step"], best["torch forward"]
        print(
            f"PyTorch CPU SDPA fp32, same shape: forward + backward {step * 1e3:.0f} ms, forward "
            f"{forward * 1e3:.0f} ms, backward alone {(step - forward) * 1e3:.0f} ms"
        )
        print(f"backward alone, emulator / PyTorch: {fag / (step - forward):.2f}  (goal <= 1.0)")
        print(
            f"its matmuls alone (same blocks, same workers): {best['matmuls alone'] * 1e3:.0f} ms, "
            f"{best['matmuls alone'] / (step - forward):.2f} of PyTorch's backward"
        )
        print(
            machine.peak_line(
                flops, {"PyTorch's backward": step - forward, "FAG": fag, "its matmuls": best["matmuls alone"]}
            )
        )
        print(
            f"training step (FAS V2 {best['fas'] * 1e3:.0f} ms + FAG V2), emulator / PyTorch: "
            f"{(best['fas'] + fag) / step:.2f}  (goal <= 1.0)"
        )
    print(f"numpy sgemm 2048^3: {rate:.1f} GFLOP/s; FAG reaches {flops / fag / 1e9 / rate:.0%} of it (goal >= 70 %)")

    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, __file__, "--child", str(args.memory_s)], capture_output=True, text=True, check=True
    )
    peak = json.loads(child.stdout.strip().splitlines()[-1])["peak_rss"]
    print(
        f"FAG at S={args.memory_s} N={N}: peak RSS {peak / 2**30:.2f} GiB (goal <= 4 GiB), "
        f"{time.perf_counter() - start:.0f} s including the forward that makes its inputs"
    )


if __name__ == "__main__":
    main()
