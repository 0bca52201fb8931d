"""LightningIndexer speed and memory at LightningIndexerGrad's benchmark shape, both measured in this
run: bf16 BSND, B=1 S1=1024 S2=4096 N1=64 D=128, sparse_count 2048, sparse mode 3, values returned.

  aclnn-emu: the full two-phase call (aclnn_emu.run: phase 1, workspace, phase 2, stream sync);
  PyTorch:   the same scores on CPU in fp32 (q.k matmul, relu, weighted sum over heads) and topk,
             in chunks of 64 query rows so its memory stays near the inputs'.

Goals: emulator time / PyTorch time <= 1.0 (best of ROUNDS alternated calls after one untimed round,
benchmarks/interleaved.py) and the emulator's peak RSS growth during its first call within 2x the
inputs' size. Run: python benchmarks/bench_lightning_indexer.py
"""

import pathlib
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from versus import compare  # noqa: E402

B, S1, S2, N1, D, TOPK = 1, 1024, 4096, 64, 128, 2048
MODE, ROUNDS, TORCH_ROWS = 3, 2, 64
INT64_MAX = (1 << 63) - 1


def make_inputs():
    rng = np.random.default_rng(0)
    bf16 = lambda *shape, s=1.0: (rng.standard_normal(shape, np.float32) * s).astype(ml_dtypes.bfloat16)  # noqa
    return dict(query=bf16(B, S1, N1, D), key=bf16(B, S2, 1, D), weights=bf16(B, S1, N1, s=0.1))


def emulator_step(x, rows=S1):
    """The two-phase call on device copies of the first `rows` query rows; also returns a function
    freeing them."""
    ae.setup()
    dev = [
        ae.to_device(np.ascontiguousarray(x[n][:, :rows] if n != "key" else x[n])) for n in ("query", "key", "weights")
    ]
    idx = ae.empty((B, rows, 1, TOPK), ae.DataType.ACL_INT32)
    val = ae.empty((B, rows, 1, TOPK), ae.DataType.ACL_BF16)
    step = lambda: ae.run(
        "LightningIndexer",
        *dev,
        None,
        None,
        None,
        "BSND",
        "BSND",
        TOPK,
        MODE,  # noqa: E731
        INT64_MAX,
        INT64_MAX,
        True,
        idx,
        val,
    )
    return step, lambda: [ae.free(t) for t in dev + [idx, val]]


def pytorch_step(torch, x):
    q = torch.from_numpy(x["query"].astype(np.float32))[0]
    k = torch.from_numpy(x["key"].astype(np.float32))[0, :, 0]
    w = torch.from_numpy(x["weights"].astype(np.float32))[0]
    valid = S2 - S1 + torch.arange(S1)[:, None] + 1  # mode 3: bottom-right causal

    def step():
        for r0 in range(0, S1, TORCH_ROWS):
            rows = slice(r0, r0 + TORCH_ROWS)
            scores = torch.einsum("rh,rhk->rk", w[rows], torch.relu(q[rows] @ k.T))
            scores.masked_fill_(torch.arange(S2)[None, :] >= valid[rows], float("-inf"))
            torch.topk(scores, TOPK, dim=-1)

    return step


def main():
    machine.start()
    import torch

    x = make_inputs()
    compare(
        f"LightningIndexer bf16 BSND B={B} S1={S1} S2={S2} N1={N1} D={D} sparse_count={TOPK}, sparse mode {MODE}",
        sum(a.nbytes for a in x.values()),
        emulator_step(x),
        emulator_step(x, rows=8),
        pytorch_step(torch, x),
        f"PyTorch CPU fp32 matmul + topk, {torch.get_num_threads()} threads",
        ROUNDS,
    )


if __name__ == "__main__":
    main()
