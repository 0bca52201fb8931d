"""What the torch_npu fusion-attention tests share: inputs, a dense float64 reference written in torch
(so torch.autograd gives the reference gradients), the dropout bits rebuilt from a returned (seed,
offset), CANN's precision check against torch, and a recorder of the aclnn entry points called."""

import math
import zlib

import numpy as np
import pytest
import torch

import aclnn_emu.torch_npu.fusion_attention as fusion_attention
from golden import dropout_gen_mask as golden_mask
import precision

B, S, N1, N2, D = 1, 64, 4, 2, 32
SCALE = 1 / math.sqrt(D)
CAUSAL = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # sparse_mode 2/3's compressed mask


@pytest.fixture(autouse=True)
def own_dropout_bits(request):
    """Each test its own torch seed, so the stand-in generator starts it at offset 0: the dropout bits do
    not depend on which tests ran before in the process (nor on how xdist shares tests out). The
    gradients' share of elements outside the bound varies with the bits (0 to 5 of 4096 in dk over 40
    seeds, allowed 4), so unseeded bits made a test pass or fail by its neighbours. (A row with one
    visible key has a golden dq of exactly 0 that the fp16 D = rowsum(dy * out) misses by a
    cancellation error; how many such elements a mask keeps is then fixed per test.)
    Test modules import it to use it."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def inputs(seed, dtype=torch.float16, s1=S, s2=S, d=D):
    """query, key, value, dy in BSND with N1 query heads over N2 kv heads."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, s1, N1, d, generator=g).to(dtype)
    k = torch.randn(B, s2, N2, d, generator=g).to(dtype)
    v = torch.randn(B, s2, N2, d, generator=g).to(dtype)
    dy = torch.randn(B, s1, N1, d, generator=g).to(dtype)
    return q, k, v, dy


def sink_logits(seed, heads=N1):
    """A learnable sink: one fp32 logit per query head, around the scores' size."""
    return torch.randn(heads, generator=torch.Generator().manual_seed(seed)) * 2


def reference(q, k, v, scale, causal, keep=None, keep_prob=1.0, sink=None, q_rope=None, k_rope=None):
    """Dense attention, BSND with GQA, in the inputs' dtype (float64 for a reference); keep: [B, N1, S1,
    S2] 0/1; sink: [N1], one more logit per softmax row that weighs no value; q_rope/k_rope: a second
    head dimension joining the scores only."""
    group = q.size(2) // k.size(2)
    k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
    scores = torch.einsum("bqnd,bknd->bnqk", q, k)
    if q_rope is not None:
        scores = scores + torch.einsum("bqnd,bknd->bnqk", q_rope, k_rope.repeat_interleave(group, dim=2))
    scores = scores * scale
    if causal:
        scores = scores.masked_fill(CAUSAL[: q.size(1), : k.size(1)], float("-inf"))
    if sink is None:
        p = torch.softmax(scores, dim=-1)
    else:
        column = sink.view(1, -1, 1, 1).expand(*scores.shape[:3], 1)
        p = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)[..., :-1]
    if keep is not None:
        p = p * keep / keep_prob
    return torch.einsum("bnqk,bknd->bqnd", p, v)


def tnd_reference(seq, tensors, scale, causal, bits=None, keep_prob=1.0, sink=None, ropes=(None, None)):
    """The reference of a TND call with equal query and key lengths `seq` (cumulative), one sequence after
    another; tensors: query, key, value [T, N, D] (float64 leaves); the dropout bits run sequence after
    sequence as the mask does."""
    outs, first_bit, lo = [], 0, 0
    for hi in seq:
        n = hi - lo
        keep = None if bits is None else bits[first_bit : first_bit + N1 * n * n].reshape(1, N1, n, n)
        first_bit += N1 * n * n
        q, k, v, qr, kr = (None if t is None else t[lo:hi].unsqueeze(0) for t in (*tensors, *ropes))
        outs.append(reference(q, k, v, scale, causal, keep, keep_prob, sink, qr, kr)[0])
        lo = hi
    return torch.cat(outs)


def keep_bits(seed, offset, keep_prob, count, shape):
    """The 0/1 keep mask aclnnDropoutGenMaskV2 makes for (seed, offset), from tests/golden."""
    nbytes = (count + 127) // 128 * 16
    raw = golden_mask.mask(seed, offset, float(np.float32(1) - np.float32(keep_prob)), "float16", nbytes)
    bits = np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")[:count]
    return torch.from_numpy(bits.astype(np.float64)).reshape(shape)


def check(actual, golden, what, dtype="float16"):
    """CANN's standard against torch float64 (precision.TORCH_BOUND, the mean-magnitude floor); `dtype`
    is the inputs' dtype, which sets the bound (a float32 dsink from fp16 inputs is held to fp16's)."""
    g = golden.detach().numpy()
    failure = precision.failure(actual.detach().double().numpy(), g, dtype, bound=precision.TORCH_BOUND[dtype],
                                floor=precision.torch_floor(g))  # fmt: skip
    assert failure is None, f"{what}: {failure}"


def record_entries(monkeypatch) -> list:
    """The aclnn entry points the fusion-attention functions call, in order."""
    called = []
    real = fusion_attention.call

    def recording(entry, *args):
        called.append(entry)
        return real(entry, *args)

    monkeypatch.setattr(fusion_attention, "call", recording)
    return called
