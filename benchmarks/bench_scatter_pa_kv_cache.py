"""ScatterPaKvCache bandwidth: Normal and PA_NZ scatter of 65536 tokens x 8 heads x 128 fp16 (key and
value) into a 4096-block cache of block size 128, through the full two-phase call (aclnn_emu.run).

Bytes moved = what a copy must read and write: 2 x (key + value bytes). Goals: >= 50 % of numpy's own
copy bandwidth on this machine and >= 1.0x PyTorch CPU (index_copy_ for Normal, index_put_ on the
NZ view for PA_NZ), all measured in this run. Run: python benchmarks/bench_scatter_pa_kv_cache.py
"""
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402

TOKENS, HEADS, HEAD, BLOCKS, BLOCK = 65536, 8, 128, 4096, 128
LAST = 16                                   # fp16 elements per 32-byte NZ piece
REPEATS = 5


def best_seconds(fn, repeats=REPEATS) -> float:
    fn()                                    # warm-up (first touch, thread pools)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    rng = np.random.default_rng(0)
    key = rng.standard_normal((TOKENS, HEADS, HEAD), np.float32).astype(np.float16)
    value = rng.standard_normal((TOKENS, HEADS, HEAD), np.float32).astype(np.float16)
    # vLLM-style slots: each run of 128 tokens fills one block picked from a random block table
    table = rng.permutation(BLOCKS)[:TOKENS // BLOCK]
    slots = (table[:, None] * BLOCK + np.arange(BLOCK)).reshape(-1).astype(np.int32)
    moved = 2 * (key.nbytes + value.nbytes)
    rate = lambda seconds: moved / seconds / 1e9    # noqa: E731

    copies = [np.empty_like(key), np.empty_like(value)]
    numpy_copy = rate(best_seconds(lambda: (np.copyto(copies[0], key), np.copyto(copies[1], value))))
    del copies

    ae.setup()
    dev_key, dev_value, dev_slots = ae.to_device(key), ae.to_device(value), ae.to_device(slots)
    results = {}
    for mode, shape in (("Norm", (BLOCKS, BLOCK, HEADS, HEAD)), ("PA_NZ", (BLOCKS, HEADS * HEAD // LAST, BLOCK, LAST))):
        caches = [ae.to_device(np.zeros(shape, np.float16)) for _ in range(2)]
        seconds = best_seconds(lambda: ae.run("ScatterPaKvCache", dev_key, caches[0], dev_slots, dev_value, caches[1],
                                              None, None, None, mode, None, None, None))
        results[mode] = rate(seconds)
        for cache in caches:
            ae.free(cache)

    torch_rates = torch_baselines(key, value, slots)
    print(f"ScatterPaKvCache: {TOKENS} tokens x {HEADS} heads x {HEAD} fp16, key + value, {BLOCKS} blocks of "
          f"{BLOCK}; {moved / 1e9:.2f} GB moved per call")
    print(f"{'numpy copy (np.copyto)':34s} {numpy_copy:7.1f} GB/s")
    for mode, name in (("Norm", "Normal"), ("PA_NZ", "PA_NZ")):
        line = f"{'aclnn-emu ' + name:34s} {results[mode]:7.1f} GB/s  {results[mode] / numpy_copy:5.0%} of numpy copy" \
               f" (goal >= 50%: {'met' if results[mode] >= 0.5 * numpy_copy else 'MISSED'})"
        if torch_rates:
            ratio = results[mode] / torch_rates[mode]
            line += f"; {ratio:.2f}x PyTorch {torch_rates[mode]:.1f} GB/s (goal >= 1.0x: " \
                    f"{'met' if ratio >= 1.0 else 'MISSED'})"
        print(line)
    if not torch_rates:
        print("PyTorch is not installed: no PyTorch comparison")


def torch_baselines(key, value, slots) -> dict:
    """PyTorch CPU doing the same writes: index_copy_ into the flat ND cache, index_put_ into the NZ view."""
    try:
        import torch
    except ImportError:
        return {}
    moved = 2 * (key.nbytes + value.nbytes)
    k, v = torch.from_numpy(key).reshape(TOKENS, -1), torch.from_numpy(value).reshape(TOKENS, -1)
    index = torch.from_numpy(slots.astype(np.int64))
    nd = [torch.zeros(BLOCKS * BLOCK, HEADS * HEAD, dtype=torch.float16) for _ in range(2)]
    normal = best_seconds(lambda: (nd[0].index_copy_(0, index, k), nd[1].index_copy_(0, index, v)))
    del nd
    nz = [torch.zeros(BLOCKS, HEADS * HEAD // LAST, BLOCK, LAST, dtype=torch.float16) for _ in range(2)]
    block, offset = index // BLOCK, index % BLOCK
    pieces = [x.reshape(TOKENS, -1, LAST) for x in (k, v)]
    nz_seconds = best_seconds(lambda: [c.index_put_((block[:, None], torch.arange(c.shape[1])[None, :], offset[:, None]), p)
                                       for c, p in zip(nz, pieces)])
    return {"Norm": moved / normal / 1e9, "PA_NZ": moved / nz_seconds / 1e9}


if __name__ == "__main__":
    main()
