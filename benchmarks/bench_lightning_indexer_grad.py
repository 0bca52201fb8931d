"""LightningIndexerGrad speed and memory: bf16 BSND, B=1 S1=1024 S2=4096 N1=64 D=128 topK=2048,
sparse mode 3, through the full two-phase call (aclnn_emu.run), against PyTorch CPU autograd of the
same forward (gather of the top-K keys + matmuls, fp32), both measured in this run.

Goals: emulator time / PyTorch time <= 0.5, and the emulator's peak RSS growth during the call
within 2x the inputs' size. Peak RSS growth is VmHWM after the call minus VmRSS before it, with
the high-water mark reset first (/proc/self/clear_refs). Run: python benchmarks/bench_lightning_indexer_grad.py
"""

import pathlib
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from rss import first_call_growth  # noqa: E402

B, S1, S2, N1, D, TOPK = 1, 1024, 4096, 64, 128, 2048
SPARSE_MODE = 3  # with S2 - S1 >= TOPK every row uses all topK entries, so no mask is needed below
REPEATS = 2
MIB = 1 << 20


def rss_growth(fn) -> tuple[float, int]:
    """(seconds, peak RSS growth in bytes) of one call."""
    start = time.perf_counter()
    growth = first_call_growth(fn)
    return time.perf_counter() - start, growth


def measure(fn) -> tuple[float, int]:
    """(best seconds after a warm-up call, largest peak-RSS growth of any call, the first included:
    later calls reuse memory the allocator kept)."""
    runs = [rss_growth(fn) for _ in range(1 + REPEATS)]
    return min(seconds for seconds, _ in runs[1:]), max(growth for _, growth in runs)


def make_inputs(rng):
    bf16 = ml_dtypes.bfloat16
    normal = lambda *shape: rng.standard_normal(shape, np.float32)  # noqa: E731
    indices = np.argsort(rng.random((B * S1, S2), np.float32), axis=1)[:, :TOPK].astype(np.int32)
    return dict(
        query=normal(B, S1, N1, D).astype(bf16),
        key=normal(B, S2, 1, D).astype(bf16),
        dy=normal(B, S1, TOPK).astype(bf16),
        indices=indices.reshape(B, S1, TOPK),
        weights=(normal(B, S1, N1) * np.float32(0.1)).astype(bf16),
    )


def emulator(inputs):
    ae.setup()
    # A tiny call first: one-time process costs (importing every op module) stay out of the numbers.
    tiny = {n: a[:, :1] for n, a in inputs.items()}
    tiny["indices"] = np.zeros_like(tiny["indices"])
    tiny_args = [ae.to_device(tiny[n]) for n in ("query", "key", "dy", "indices", "weights")]
    tiny_outs = [ae.empty(tiny[n].shape, ae.DataType.ACL_BF16) for n in ("query", "key", "weights")]
    ae.run("LightningIndexerGrad", *tiny_args, None, None, N1, "BSND", SPARSE_MODE, 0, 0, False, *tiny_outs)
    for t in tiny_args + tiny_outs:
        ae.free(t)

    args = [ae.to_device(inputs[n]) for n in ("query", "key", "dy", "indices", "weights")]
    outs = [ae.empty(inputs[n].shape, ae.DataType.ACL_BF16) for n in ("query", "key", "weights")]
    call = lambda: ae.run(
        "LightningIndexerGrad",
        *args,
        None,
        None,
        N1,
        "BSND",
        SPARSE_MODE,  # noqa: E731
        65536,
        65536,
        False,
        *outs,
    )
    result = measure(call)
    for t in args + outs:
        ae.free(t)
    return result


def pytorch(inputs):
    import torch

    to32 = lambda name: torch.from_numpy(inputs[name].astype(np.float32))  # noqa: E731
    query, key, weights = (to32(n).requires_grad_() for n in ("query", "key", "weights"))
    dy, indices = to32("dy"), torch.from_numpy(inputs["indices"].astype(np.int64))

    def step():
        for t in (query, key, weights):
            t.grad = None
        gathered = torch.stack([key[b, :, 0][indices[b]] for b in range(B)])  # [B, S1, topK, D]
        scores = torch.relu(torch.matmul(query, gathered.transpose(-1, -2)))  # [B, S1, N1, topK]
        index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)  # [B, S1, topK]
        index_scores.backward(dy)

    return measure(step), torch.get_num_threads()


def main():
    machine.start()
    inputs = make_inputs(np.random.default_rng(0))
    input_bytes = sum(a.nbytes for a in inputs.values())
    emu_seconds, emu_growth = emulator(inputs)
    (torch_seconds, torch_growth), torch_threads = pytorch(inputs)

    ratio = emu_seconds / torch_seconds
    print(
        f"LightningIndexerGrad bf16 BSND B={B} S1={S1} S2={S2} N1={N1} D={D} topK={TOPK} sparseMode={SPARSE_MODE}; "
        f"inputs {input_bytes / MIB:.1f} MiB"
    )
    print(
        f"{'aclnn-emu (aclnn_emu.run, both phases)':44s} {emu_seconds:7.2f} s   peak RSS growth "
        f"{emu_growth / MIB:7.1f} MiB"
    )
    print(
        f"{f'PyTorch CPU autograd, fp32 ({torch_threads} threads)':44s} {torch_seconds:7.2f} s   peak RSS growth "
        f"{torch_growth / MIB:7.1f} MiB"
    )
    print(f"time emulator/PyTorch = {ratio:.2f}  (goal <= 0.5: {'met' if ratio <= 0.5 else 'MISSED'})")
    print(
        f"emulator peak RSS growth / inputs = {emu_growth / input_bytes:.2f}  "
        f"(goal <= 2.0: {'met' if emu_growth <= 2 * input_bytes else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
