"""ScatterPaKvCache bandwidth: Normal and PA_NZ scatter of 65536 tokens x 8 heads x 128 fp16 (key and
value) into a 4096-block cache of block size 128, through the full two-phase call (aclnn_emu.run), for
two slot patterns:
  block table   vLLM-style: each run of 128 tokens fills one block picked from a random block table;
  random        the slots are a random permutation of the cache's slots (every token on its own).

Bytes moved = what a copy must read and write: 2 x (key + value bytes). Goals against numpy's own copy
bandwidth on this machine: block table >= 80 % (both modes); random >= 50 % (Normal) and >= 30 %
(PA_NZ); and >= 1.0x PyTorch CPU (index_copy_ for Normal, index_put_ on the NZ view for PA_NZ) in
every pattern. The contenders take turns in every round (best round counts), so a busy machine slows
them alike. Run: python benchmarks/bench_scatter_pa_kv_cache.py [--isa avx2]
"""

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import aclnn_emu as ae  # noqa: E402
import machine  # noqa: E402
from interleaved import best_times  # noqa: E402

TOKENS, HEADS, HEAD, BLOCKS, BLOCK = 65536, 8, 128, 4096, 128
LAST = 16  # fp16 elements per 32-byte NZ piece
ND_SHAPE, NZ_SHAPE = (BLOCKS, BLOCK, HEADS, HEAD), (BLOCKS, HEADS * HEAD // LAST, BLOCK, LAST)
ROUNDS = 7


GOALS = {
    ("block table", "Normal"): 0.8,
    ("block table", "PA_NZ"): 0.8,
    ("random", "Normal"): 0.5,
    ("random", "PA_NZ"): 0.3,
}


def main():
    machine.start()
    rng = np.random.default_rng(0)
    key = rng.standard_normal((TOKENS, HEADS, HEAD), np.float32).astype(np.float16)
    value = rng.standard_normal((TOKENS, HEADS, HEAD), np.float32).astype(np.float16)
    table = rng.permutation(BLOCKS)[: TOKENS // BLOCK]
    patterns = {
        "block table": (table[:, None] * BLOCK + np.arange(BLOCK)).reshape(-1).astype(np.int32),
        "random": rng.permutation(BLOCKS * BLOCK)[:TOKENS].astype(np.int32),
    }
    moved = 2 * (key.nbytes + value.nbytes)

    contenders = {"numpy copy (np.copyto)": numpy_copy(key, value)}
    contenders.update(emulator_calls(key, value, patterns))
    contenders.update(torch_calls(key, value, patterns))
    best = best_times(contenders, ROUNDS)
    rate = {name: moved / seconds / 1e9 for name, seconds in best.items()}

    print(
        f"ScatterPaKvCache: {TOKENS} tokens x {HEADS} heads x {HEAD} fp16, key + value, {BLOCKS} blocks of "
        f"{BLOCK}; {moved / 1e9:.2f} GB moved per call; best of {ROUNDS} interleaved rounds"
    )
    copy = rate["numpy copy (np.copyto)"]
    for name, gbs in rate.items():
        line = f"{name:40s} {gbs:7.1f} GB/s"
        if name.startswith("aclnn-emu"):
            pattern, mode = name[len("aclnn-emu ") :].rsplit(" ", 1)
            goal = GOALS[pattern, mode]
            line += (
                f"  {gbs / copy:4.0%} of numpy copy (goal >= {goal:.0%}: {'met' if gbs >= goal * copy else 'MISSED'})"
            )
            torch_rate = rate.get(f"PyTorch {pattern} {mode}")
            if torch_rate:
                line += f"; {gbs / torch_rate:.2f}x PyTorch (goal >= 1.0x: {'met' if gbs >= torch_rate else 'MISSED'})"
        print(line)
    if not any(name.startswith("PyTorch") for name in rate):
        print("PyTorch is not installed: no PyTorch comparison")


def numpy_copy(key, value):
    copies = [np.empty_like(key), np.empty_like(value)]
    return lambda: (np.copyto(copies[0], key), np.copyto(copies[1], value))


def emulator_calls(key, value, patterns) -> dict:
    """Every pattern and mode writes into the same two device buffers, described once as ND and once as NZ."""
    ae.setup()
    dev_key, dev_value = ae.to_device(key), ae.to_device(value)
    nd = [ae.to_device(np.zeros(ND_SHAPE, np.float16)) for _ in range(2)]
    nz = [ae.Tensor(NZ_SHAPE, ae.DataType.ACL_FLOAT16, None, 0, ae.Format.ACL_FORMAT_ND, None, t.addr) for t in nd]

    def call(caches, slots, mode):
        return lambda: ae.run(
            "ScatterPaKvCache",
            dev_key,
            caches[0],
            slots,
            dev_value,
            caches[1],
            None,
            None,
            None,
            mode,
            None,
            None,
            None,
        )

    calls = {}
    for pattern, slots in patterns.items():
        dev_slots = ae.to_device(slots)
        calls[f"aclnn-emu {pattern} Normal"] = call(nd, dev_slots, "Norm")
        calls[f"aclnn-emu {pattern} PA_NZ"] = call(nz, dev_slots, "PA_NZ")
    return calls


def torch_calls(key, value, patterns) -> dict:
    """PyTorch CPU doing the same writes: index_copy_ into the flat ND cache, index_put_ into the NZ view."""
    try:
        import torch
    except ImportError:
        return {}
    sources = [torch.from_numpy(x).reshape(TOKENS, -1) for x in (key, value)]
    caches = [torch.zeros(BLOCKS * BLOCK, HEADS * HEAD, dtype=torch.float16) for _ in range(2)]

    def calls(slots):
        index = torch.from_numpy(slots.astype(np.int64))
        nz_index = (index[:, None] // BLOCK, torch.arange(NZ_SHAPE[1])[None, :], index[:, None] % BLOCK)

        def normal():
            for cache, src in zip(caches, sources):
                cache.index_copy_(0, index, src)

        def nz():
            for cache, src in zip(caches, sources):
                cache.view(NZ_SHAPE).index_put_(nz_index, src.reshape(TOKENS, -1, LAST))

        return normal, nz

    result = {}
    for pattern, slots in patterns.items():
        result[f"PyTorch {pattern} Normal"], result[f"PyTorch {pattern} PA_NZ"] = calls(slots)
    return result


if __name__ == "__main__":
    main()
