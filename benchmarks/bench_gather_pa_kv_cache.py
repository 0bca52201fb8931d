"""GatherPaKvCache bandwidth: 16 sequences x 4096 cached tokens x 8 KV heads x 128 fp16 (key and value)
gathered from a paged cache of block size 128 whose blocks a random block table scatters, in Norm
and PA_NZ mode, through the full two-phase call (aclnn_emu.run) on Atlas A2.

Bytes moved = what a copy must read and write: 2 x (key + value bytes). Goal: >= 50 % of numpy's
own copy bandwidth on this machine, measured in the same run. The contenders take turns in every
round (best round counts), so a busy machine slows them alike.
Run: python benchmarks/bench_gather_pa_kv_cache.py
"""

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from interleaved import best_times  # noqa: E402

BATCH, SEQ, HEADS, HEAD, BLOCK = 16, 4096, 8, 128, 128
BLOCKS = BATCH * SEQ // BLOCK
LAST = 16  # fp16 elements per 32-byte NZ piece
ND_SHAPE, NZ_SHAPE = (BLOCKS, BLOCK, HEADS, HEAD), (BLOCKS, HEADS * HEAD // LAST, BLOCK, LAST)
ROUNDS = 7


def main():
    machine.start()
    rng = np.random.default_rng(0)
    caches = [rng.standard_normal(ND_SHAPE, np.float32).astype(np.float16) for _ in range(2)]
    table = rng.permutation(BLOCKS).reshape(BATCH, SEQ // BLOCK).astype(np.int32)
    out_bytes = 2 * BATCH * SEQ * HEADS * HEAD * 2
    moved = 2 * out_bytes

    contenders = {"numpy copy (np.copyto)": numpy_copy()}
    contenders.update(emulator_calls(caches, table))
    best = best_times(contenders, ROUNDS)
    rate = {name: moved / seconds / 1e9 for name, seconds in best.items()}

    print(
        f"GatherPaKvCache: {BATCH} sequences x {SEQ} tokens x {HEADS} heads x {HEAD} fp16, key + value, from "
        f"{BLOCKS} blocks of {BLOCK}; {moved / 1e9:.2f} GB moved per call; best of {ROUNDS} interleaved rounds"
    )
    copy = rate["numpy copy (np.copyto)"]
    for name, gbs in rate.items():
        line = f"{name:36s} {gbs:7.1f} GB/s  {best[name] * 1e3:7.1f} ms"
        if name.startswith("aclnn-emu"):
            line += f"  {gbs / copy:4.0%} of numpy copy (goal >= 50%: {'met' if gbs >= 0.5 * copy else 'MISSED'})"
        print(line)


def numpy_copy():
    sources = [np.ones(BATCH * SEQ * HEADS * HEAD, np.float16) for _ in range(2)]
    copies = [np.empty_like(s) for s in sources]
    return lambda: [np.copyto(c, s) for c, s in zip(copies, sources)]


def emulator_calls(caches, table) -> dict:
    """Both modes read the same two device caches, described once as ND and once as NZ."""
    ae.setup()
    nd = [ae.to_device(c) for c in caches]
    nz = [ae.Tensor(NZ_SHAPE, ae.DataType.ACL_FLOAT16, None, 0, ae.Format.ACL_FORMAT_ND, None, t.addr) for t in nd]
    tables, lens = ae.to_device(table), ae.to_device(np.full(BATCH, SEQ, np.int32))
    outs = {
        "Norm": [ae.empty((BATCH * SEQ, HEADS, HEAD), ae.DataType.ACL_FLOAT16) for _ in range(2)],
        "PA_NZ": [ae.empty((BATCH * SEQ, HEADS * HEAD), ae.DataType.ACL_FLOAT16) for _ in range(2)],
    }

    def call(cache, mode):
        key, value = outs[mode]
        return lambda: ae.run("GatherPaKvCache", cache[0], cache[1], tables, lens, key, value, None, mode, False)

    return {"aclnn-emu Norm": call(nd, "Norm"), "aclnn-emu PA_NZ": call(nz, "PA_NZ")}


if __name__ == "__main__":
    main()
