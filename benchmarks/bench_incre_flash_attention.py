"""IncreFlashAttentionV4 and FusedInferAttentionScoreV4 decode: batch 16 x 32 query heads x D 128 over
4096 cached tokens each, fp16, GQA with 8 KV heads, page attention with block size 128 (the
(blocknum, KV_N, blocksize, D) cache, blocks scattered by a random block table), through the full
two-phase call on Atlas A2 (FusedInferAttentionScoreV4 takes its FIA-V3 route there), against
PyTorch CPU scaled_dot_product_attention over the already gathered cache.

It also reports the cache bytes read per second (key + value, 268 MB per call) against the
machine's copy bandwidth (np.copyto of as many bytes, counted as bytes read per second).
Goals: <= 1.0x PyTorch's time, and for IncreFlashAttentionV4 >= 30 % of the copy bandwidth
(FusedInferAttentionScoreV4's FIA-V3 kernels pack each head's keys and values into fp32 panels for
the matmuls' fixed summation order, which a decode reads once; its share is printed). The contenders take turns in every
round (best round counts), so a busy machine slows them alike.
Run: python benchmarks/bench_incre_flash_attention.py
"""

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
from aclnn_emu.meta import TensorList  # noqa: E402
import machine  # noqa: E402
from interleaved import best_times  # noqa: E402

BATCH, HEADS, KV_HEADS, HEAD, SEQ, BLOCK = 16, 32, 8, 128, 4096, 128
BLOCKS = BATCH * SEQ // BLOCK
ROUNDS = 5


def main():
    machine.start()
    rng = np.random.default_rng(0)
    caches = [rng.standard_normal((BLOCKS, KV_HEADS, BLOCK, HEAD), np.float32).astype(np.float16) for _ in range(2)]
    table = rng.permutation(BLOCKS).reshape(BATCH, SEQ // BLOCK).astype(np.int32)
    query = rng.standard_normal((BATCH, HEADS, 1, HEAD), np.float32).astype(np.float16)
    cache_bytes = 2 * caches[0].nbytes

    contenders = {"numpy copy (np.copyto)": numpy_copy(caches[0].size)}
    contenders.update(torch_call(query, caches, table))
    contenders["aclnn-emu IncreFlashAttentionV4"] = emulator_call(query, caches, table)
    contenders["aclnn-emu FusedInferAttentionScoreV4"] = fused_infer_call(query, caches, table)
    best = best_times(contenders, ROUNDS)

    print(
        f"IncreFlashAttentionV4 / FusedInferAttentionScoreV4 decode: B {BATCH} x N {HEADS} (KV {KV_HEADS}) x D {HEAD}, {SEQ} cached tokens each, "
        f"fp16, block size {BLOCK}; {cache_bytes / 1e9:.2f} GB of cache per call; best of {ROUNDS} interleaved rounds"
    )
    copy_rate = cache_bytes / best["numpy copy (np.copyto)"]
    torch_time = best.get("torch SDPA (gathered cache)")
    for name, seconds in best.items():
        line = f"{name:38s} {seconds * 1e3:8.1f} ms  {cache_bytes / seconds / 1e9:6.2f} GB/s read"
        if name.startswith("aclnn-emu"):
            share = cache_bytes / seconds / copy_rate
            line += f"  {share:4.0%} of copy bandwidth"
            if name.endswith("IncreFlashAttentionV4"):  # FIA-V3's decode packs K and V as panels first
                line += f" (goal >= 30%: {'met' if share >= 0.3 else 'MISSED'})"
            if torch_time:
                ratio = seconds / torch_time
                line += f"; {ratio:.2f}x torch SDPA (goal <= 1.0x: {'met' if ratio <= 1.0 else 'MISSED'})"
        print(line)


def numpy_copy(size):
    sources = [np.ones(size, np.float16) for _ in range(2)]
    copies = [np.empty_like(s) for s in sources]
    return lambda: [np.copyto(c, s) for c, s in zip(copies, sources)]


def torch_call(query, caches, table) -> dict:
    try:
        import torch
    except ImportError:
        print("(PyTorch is not installed: no torch comparison)")
        return {}
    q = torch.from_numpy(query)
    gathered = [
        torch.from_numpy(c)[torch.from_numpy(table.astype(np.int64))]  # [B, blocks, N2, bs, D]
        .permute(0, 2, 1, 3, 4)
        .reshape(BATCH, KV_HEADS, SEQ, HEAD)
        .contiguous()
        for c in caches
    ]

    def sdpa():
        torch.nn.functional.scaled_dot_product_attention(q, gathered[0], gathered[1], scale=HEAD**-0.5, enable_gqa=True)

    return {"torch SDPA (gathered cache)": sdpa}


def device_operands(query, caches, table):
    """(query, keys, values, block table, attentionOut) on the device."""
    ae.setup()
    keys, values = (TensorList([ae.to_device(c)]) for c in caches)
    return ae.to_device(query), keys, values, ae.to_device(table), ae.empty(query.shape, ae.DataType.ACL_FLOAT16)


def emulator_call(query, caches, table):
    q, keys, values, blocks, out = device_operands(query, caches, table)
    lengths = (SEQ,) * BATCH
    return lambda: ae.run(
        "IncreFlashAttentionV4",
        q,
        keys,
        values,
        None,
        None,
        lengths,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        blocks,
        None,
        HEADS,
        HEAD**-0.5,
        "BNSD",
        KV_HEADS,
        BLOCK,
        1,
        out,
    )


def fused_infer_call(query, caches, table):
    q, keys, values, blocks, out = device_operands(query, caches, table)
    return lambda: ae.ops.FusedInferAttentionScoreV4(
        q,
        keys,
        values,
        attentionOut=out,
        blockTableOptional=blocks,
        actualSeqLengthsKvOptional=[SEQ] * BATCH,
        numHeads=HEADS,
        scaleValue=HEAD**-0.5,
        inputLayout="BNSD",
        numKeyValueHeads=KV_HEADS,
        blockSize=BLOCK,
    )


if __name__ == "__main__":
    main()
