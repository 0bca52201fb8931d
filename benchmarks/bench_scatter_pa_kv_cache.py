"""ScatterPaKvCache bandwidth: Normal and PA_NZ scatter of 65536 tokens x 8 heads x 128 fp16 (key and
value) into a 4096-block cache of block size 128, through the full two-phase call (aclnn_emu.run).

Bytes moved = what a copy must read and write: 2 x (key + value bytes). Goals: >= 50 % of numpy's own
copy bandwidth on this machine and >= 1.0x PyTorch CPU (index_copy_ for Normal, index_put_ on the
NZ view for PA_NZ). The contenders take turns in every round (best round counts), so a busy machine
slows them alike. Run: python benchmarks/bench_scatter_pa_kv_cache.py
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from interleaved import best_times  # noqa: E402

TOKENS, HEADS, HEAD, BLOCKS, BLOCK = 65536, 8, 128, 4096, 128
LAST = 16                                   # fp16 elements per 32-byte NZ piece
ND_SHAPE, NZ_SHAPE = (BLOCKS, BLOCK, HEADS, HEAD), (BLOCKS, HEADS * HEAD // LAST, BLOCK, LAST)
ROUNDS = 7


def main():
    machine.start()
    rng = np.random.default_rng(0)
    key = rng.standard_normal((TOKENS, HEADS, HEAD), np.float32).astype(np.float16)
    value = rng.standard_normal((TOKENS, HEADS, HEAD), np.float32).astype(np.float16)
    # vLLM-style slots: each run of 128 tokens fills one block picked from a random block table
    table = rng.permutation(BLOCKS)[:TOKENS // BLOCK]
    slots = (table[:, None] * BLOCK + np.arange(BLOCK)).reshape(-1).astype(np.int32)
    moved = 2 * (key.nbytes + value.nbytes)

    contenders = {"numpy copy (np.copyto)": numpy_copy(key, value)}
    contenders.update(emulator_calls(key, value, slots))
    contenders.update(torch_calls(key, value, slots))
    best = best_times(contenders, ROUNDS)
    rate = {name: moved / seconds / 1e9 for name, seconds in best.items()}

    print(f"ScatterPaKvCache: {TOKENS} tokens x {HEADS} heads x {HEAD} fp16, key + value, {BLOCKS} blocks of "
          f"{BLOCK}; {moved / 1e9:.2f} GB moved per call; best of {ROUNDS} interleaved rounds")
    copy = rate["numpy copy (np.copyto)"]
    for name, gbs in rate.items():
        line = f"{name:36s} {gbs:7.1f} GB/s"
        if name.startswith("aclnn-emu"):
            mode = name.split()[-1]
            line += f"  {gbs / copy:4.0%} of numpy copy (goal >= 50%: {'met' if gbs >= 0.5 * copy else 'MISSED'})"
            torch_rate = rate.get(f"PyTorch {mode}")
            if torch_rate:
                line += f"; {gbs / torch_rate:.2f}x PyTorch (goal >= 1.0x: {'met' if gbs >= torch_rate else 'MISSED'})"
        print(line)
    if not any(name.startswith("PyTorch") for name in rate):
        print("PyTorch is not installed: no PyTorch comparison")


def numpy_copy(key, value):
    copies = [np.empty_like(key), np.empty_like(value)]
    return lambda: (np.copyto(copies[0], key), np.copyto(copies[1], value))


def emulator_calls(key, value, slots) -> dict:
    """Both modes write into the same two device buffers, described once as ND and once as NZ."""
    ae.setup()
    dev_key, dev_value, dev_slots = ae.to_device(key), ae.to_device(value), ae.to_device(slots)
    nd = [ae.to_device(np.zeros(ND_SHAPE, np.float16)) for _ in range(2)]
    nz = [ae.Tensor(NZ_SHAPE, ae.DataType.ACL_FLOAT16, None, 0, ae.Format.ACL_FORMAT_ND, None, t.addr) for t in nd]

    def call(caches, mode):
        return lambda: ae.run("ScatterPaKvCache", dev_key, caches[0], dev_slots, dev_value, caches[1], None, None,
                              None, mode, None, None, None)
    return {"aclnn-emu Normal": call(nd, "Norm"), "aclnn-emu PA_NZ": call(nz, "PA_NZ")}


def torch_calls(key, value, slots) -> dict:
    """PyTorch CPU doing the same writes: index_copy_ into the flat ND cache, index_put_ into the NZ view."""
    try:
        import torch
    except ImportError:
        return {}
    sources = [torch.from_numpy(x).reshape(TOKENS, -1) for x in (key, value)]
    index = torch.from_numpy(slots.astype(np.int64))
    caches = [torch.zeros(BLOCKS * BLOCK, HEADS * HEAD, dtype=torch.float16) for _ in range(2)]
    nz_index = (index[:, None] // BLOCK, torch.arange(NZ_SHAPE[1])[None, :], index[:, None] % BLOCK)

    def normal():
        for cache, src in zip(caches, sources):
            cache.index_copy_(0, index, src)

    def nz():
        for cache, src in zip(caches, sources):
            cache.view(NZ_SHAPE).index_put_(nz_index, src.reshape(TOKENS, -1, LAST))
    return {"PyTorch Normal": normal, "PyTorch PA_NZ": nz}


if __name__ == "__main__":
    main()
