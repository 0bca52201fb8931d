"""SparseFlashAttention speed and memory at SparseFlashAttentionGrad's benchmark shape, both measured
in this run: bf16 TND, T1=512 S2=4096 N1=128 D=512 Drope=64 K=2048, block size 1, sparse mode 3,
softmax statistics returned.

  aclnn-emu: the full two-phase call (aclnn_emu.run: phase 1, workspace, phase 2, stream sync);
  PyTorch:   the same forward on CPU in fp32: gather of the selected keys and values, matmuls,
             softmax, in chunks of 64 query rows so its memory stays near the inputs'.

Goals: emulator time / PyTorch time <= 1.0 (best of ROUNDS alternated calls after one untimed round,
benchmarks/interleaved.py) and the emulator's peak RSS growth during its first call within 2x the
inputs' size. Run: python benchmarks/bench_sparse_flash_attention.py
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

T1, S2, N1, D, DR, K = 512, 4096, 128, 512, 64, 2048
SCALE = float(1.0 / np.sqrt(D + DR))
ROUNDS, TORCH_ROWS = 2, 64
INT64_MAX = (1 << 63) - 1


def make_inputs(rows=T1):
    rng = np.random.default_rng(0)
    bf16 = lambda *shape: rng.standard_normal(shape, np.float32).astype(ml_dtypes.bfloat16)  # noqa: E731
    x = dict(
        query=bf16(rows, N1, D),
        key=bf16(S2, 1, D),
        value=bf16(S2, 1, D),
        queryRope=bf16(rows, N1, DR),
        keyRope=bf16(S2, 1, DR),
    )
    # mode 3, causal from the indices: row s1 sees keys <= s1 + S2 - T1 (always >= K of them)
    x["sparseIndices"] = (
        np.stack([rng.permutation(s1 + S2 - rows + 1)[:K] for s1 in range(rows)]).astype(np.int32).reshape(rows, 1, K)
    )
    return x


def emulator_step(x):
    """The two-phase call on device copies of ``x``; also returns a function freeing them."""
    ae.setup()
    rows = x["query"].shape[0]
    dev = {n: ae.to_device(a) for n, a in x.items()}
    seq = [ae.to_device(np.array([n], np.int32)) for n in (rows, S2)]
    outs = [ae.empty((rows, N1, D), ae.DataType.ACL_BF16)] + [
        ae.empty((1, rows, N1), ae.DataType.ACL_FLOAT) for _ in range(2)
    ]
    step = lambda: ae.run(
        "SparseFlashAttention",
        dev["query"],
        dev["key"],
        dev["value"],  # noqa: E731
        dev["sparseIndices"],
        None,
        *seq,
        dev["queryRope"],
        dev["keyRope"],
        SCALE,
        1,
        "TND",
        "TND",
        3,
        INT64_MAX,
        INT64_MAX,
        2,
        True,
        *outs,
    )
    return step, lambda: [ae.free(t) for t in list(dev.values()) + seq + outs]


def pytorch_step(torch, x):
    t = {n: torch.from_numpy(x[n].astype(np.float32)) for n in ("query", "key", "value", "queryRope", "keyRope")}
    index = torch.from_numpy(x["sparseIndices"].reshape(T1, K).astype(np.int64))

    def step():
        for r0 in range(0, T1, TORCH_ROWS):
            rows = slice(r0, r0 + TORCH_ROWS)
            q = torch.cat([t["query"][rows], t["queryRope"][rows]], -1)
            k = torch.cat([t["key"][:, 0][index[rows]], t["keyRope"][:, 0][index[rows]]], -1)
            p = torch.softmax(SCALE * q @ k.transpose(-1, -2), -1)
            p @ t["value"][:, 0][index[rows]]

    return step


def main():
    machine.start()
    import torch

    x = make_inputs()
    compare(
        f"SparseFlashAttention bf16 TND T1={T1} S2={S2} N1={N1} D={D} Drope={DR} K={K} block size 1, sparse mode 3",
        sum(a.nbytes for a in x.values()),
        emulator_step(x),
        emulator_step(make_inputs(rows=4)),
        pytorch_step(torch, x),
        f"PyTorch CPU fp32 gather + matmul, {torch.get_num_threads()} threads",
        ROUNDS,
    )


if __name__ == "__main__":
    main()
