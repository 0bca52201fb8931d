"""PromptFlashAttentionV2 speed, measured in one run on this machine.

- emulator: aclnnPromptFlashAttentionV2 fp16 BNSD, B=1 N=32 S=2048 D=128, both phases (aclnn_emu.run);
- PyTorch: CPU scaled_dot_product_attention forward, fp32, same shape;
- numpy sgemm rate: a 2048 x 2048 x 2048 float32 matmul.
Each timing is the best of ``--repeat`` runs, interleaved so machine load hits all three alike.
Goals: emulator / PyTorch <= 1.0 and emulator GFLOP/s >= 70 % of the sgemm rate (all cores).
Last, the share of the cores' FMA peak each reaches (machine.peak_line).
`--isa avx2` measures as an AVX2 machine would (benchmarks/machine.py).
"""

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from interleaved import best_times  # noqa: E402

B, N, S, D = 1, 32, 2048, 128
FLOPS = 4 * B * N * S * S * D  # Q K^T and P V


def pfa_call(q, k, v):
    """A callable running PFA V2 through the Python API on device copies of q, k, v made once."""
    ae.setup()
    tensors = [ae.to_device(x) for x in (q, k, v)]
    out = ae.empty((B, N, S, D), ae.DataType.ACL_FLOAT16)
    return lambda: ae.run(
        "PromptFlashAttentionV2",
        *tensors,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        N,
        D**-0.5,
        2147483647,
        0,
        "BNSD",
        0,
        0,
        out,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = machine.start(parser)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, N, S, D)).astype(np.float16) for _ in range(3))
    emulator = pfa_call(q, k, v)

    a = rng.standard_normal((2048, 2048)).astype(np.float32)
    sgemm = lambda: a @ a  # noqa: E731
    try:
        import torch

        tq, tk, tv = (torch.from_numpy(x.astype(np.float32)) for x in (q, k, v))
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)  # noqa: E731
    except ImportError:
        sdpa = None
    best = best_times({"emulator": emulator, "sgemm": sgemm, **({"torch": sdpa} if sdpa else {})}, args.repeat)
    emu, gemm_rate = best["emulator"], 2 * 2048**3 / best["sgemm"] / 1e9
    emu_rate = FLOPS / emu / 1e9
    print(f"PromptFlashAttentionV2 fp16 B={B} N={N} S={S} D={D}")
    print(f"  emulator            {emu * 1e3:9.1f} ms   {emu_rate:7.1f} GFLOP/s")
    print(f"  numpy sgemm rate                  {gemm_rate:7.1f} GFLOP/s")
    print(f"  emulator / sgemm    {emu_rate / gemm_rate:9.2f}   (goal >= 0.70)")
    if sdpa:
        torch_time = best["torch"]
        print(f"  torch SDPA fp32     {torch_time * 1e3:9.1f} ms   {FLOPS / torch_time / 1e9:7.1f} GFLOP/s")
        print(f"  emulator / torch    {emu / torch_time:9.2f}   (goal <= 1.00)")
        print("  " + machine.peak_line(FLOPS, {"torch SDPA fp32": torch_time, "emulator": emu}))
    else:
        print("  torch not installed: no PyTorch comparison")


if __name__ == "__main__":
    main()
