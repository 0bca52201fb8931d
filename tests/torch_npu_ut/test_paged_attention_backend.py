"""A vllm-ascend-style attention backend run against the torch_npu stand-in (installed by this folder's
conftest.py, as a unit-test lane would install a MagicMock): it writes each step's keys and values
into a paged cache with npu_scatter_pa_kv_cache, attends with npu_fused_infer_attention_score (or,
in a build without FusedInferAttentionScoreV3, npu_prompt_flash_attention for prefill and
npu_incre_flash_attention for decode), and is compared with dense SDPA in float64."""

import math

import pytest
import torch
import torch_npu  # the stand-in, from conftest.py

import aclnn_emu.ops
import precision

HEADS, KV_HEADS, HEAD_DIM, BLOCK, BLOCKS = 4, 2, 64, 16, 12
FIA = hasattr(aclnn_emu.ops, "FusedInferAttentionScoreV3")
CAUSAL_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


class PagedBackend:
    """The shape of vllm-ascend's AscendAttentionBackendImpl: BSH query, paged caches, block tables."""

    def __init__(self):
        self.key_cache = torch.zeros(BLOCKS, BLOCK, KV_HEADS, HEAD_DIM, dtype=torch.float16)
        self.value_cache = torch.zeros_like(self.key_cache)
        self.scale = 1 / math.sqrt(HEAD_DIM)

    def write(self, key, value, slots):
        torch_npu.npu_scatter_pa_kv_cache(key, value, self.key_cache, self.value_cache, slots, cache_mode="Norm")

    def prefill(self, query, key, value):
        """One sequence's prompt: query/key/value [T, N, D]; causal attention over its own tokens."""
        t = query.size(0)
        if FIA:
            out, _ = torch_npu.npu_fused_infer_attention_score(
                query[None], key[None], value[None], atten_mask=CAUSAL_2048, num_heads=HEADS,
                num_key_value_heads=KV_HEADS, input_layout="BSND", scale=self.scale, sparse_mode=3,
                next_tokens=0,
            )  # fmt: skip
        else:
            out = torch_npu.npu_prompt_flash_attention(
                query[None], key[None], value[None], atten_mask=CAUSAL_2048, num_heads=HEADS,
                num_key_value_heads=KV_HEADS, input_layout="BSND", scale_value=self.scale, sparse_mode=3,
                next_tokens=0,
            )  # fmt: skip
        return out[0].reshape(t, HEADS, HEAD_DIM)

    def decode(self, query, block_tables, seq_lens):
        """One new token per sequence: query [B, N, D] over the cached tokens."""
        b = query.size(0)
        key = self.key_cache.view(BLOCKS, BLOCK, KV_HEADS * HEAD_DIM)
        value = self.value_cache.view(BLOCKS, BLOCK, KV_HEADS * HEAD_DIM)
        q = query.reshape(b, 1, HEADS * HEAD_DIM)
        common = dict(block_table=block_tables, num_heads=HEADS, num_key_value_heads=KV_HEADS, input_layout="BSH",
                      block_size=BLOCK)  # fmt: skip
        if FIA:
            out, _ = torch_npu.npu_fused_infer_attention_score(
                q, key, value, actual_seq_lengths_kv=seq_lens, scale=self.scale, **common
            )
        else:
            out = torch_npu.npu_incre_flash_attention(
                q, key, value, actual_seq_lengths=seq_lens, scale_value=self.scale, **common
            )
        return out.reshape(b, HEADS, HEAD_DIM)


def dense(query, key, value, causal):
    """SDPA in float64, GQA by repeating the key/value heads: [T, N, D] in, [T, N, D] out."""
    group = HEADS // KV_HEADS
    q = query.double().transpose(0, 1)
    k = key.double().repeat_interleave(group, dim=1).transpose(0, 1)
    v = value.double().repeat_interleave(group, dim=1).transpose(0, 1)
    if not causal:  # the one query row attends to every key
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(0, 1)
    s1, s2 = q.size(1), k.size(1)
    mask = torch.ones(s1, s2, dtype=torch.bool).tril(diagonal=s2 - s1)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(0, 1)


def _check(actual, golden, what):
    failure = precision.failure(actual.double().numpy(), golden.numpy(), "float16",
                                bound=precision.TORCH_BOUND["float16"], floor=precision.torch_floor(golden.numpy()))  # fmt: skip
    assert failure is None, f"{what}: {failure}"


def test_the_stand_in_is_what_import_torch_npu_gives():
    assert torch_npu.__name__ == "aclnn_emu.torch_npu"
    assert torch_npu.npu_fusion_attention.__doc__.startswith("torch_npu.npu_fusion_attention (op-plugin 26.1.0)")
    with pytest.raises(AttributeError, match="torch_npu.npu_rotary_mul is not emulated"):
        torch_npu.npu_rotary_mul  # noqa: B018


def test_prefill_then_decode_over_the_paged_cache_matches_dense_sdpa():
    g = torch.Generator().manual_seed(11)
    backend = PagedBackend()
    prompts = [21, 37]
    tables = torch.tensor([[3, 7, 1, 0], [5, 2, 9, 11]], dtype=torch.int32)
    history = []
    for seq, length in enumerate(prompts):  # prefill, sequence by sequence
        q, k, v = (torch.randn(length, n, HEAD_DIM, generator=g).half() for n in (HEADS, KV_HEADS, KV_HEADS))
        slots = torch.tensor([int(tables[seq, i // BLOCK]) * BLOCK + i % BLOCK for i in range(length)],
                             dtype=torch.int32)  # fmt: skip
        backend.write(k, v, slots)
        _check(backend.prefill(q, k, v), dense(q, k, v, causal=True), f"prefill {seq}")
        history.append((k, v))
    lens = list(prompts)
    for step in range(3):  # decode: one token per sequence per step
        q = torch.randn(2, HEADS, HEAD_DIM, generator=g).half()
        k = torch.randn(2, KV_HEADS, HEAD_DIM, generator=g).half()
        v = torch.randn(2, KV_HEADS, HEAD_DIM, generator=g).half()
        slots = torch.tensor([int(tables[s, lens[s] // BLOCK]) * BLOCK + lens[s] % BLOCK for s in range(2)],
                             dtype=torch.int32)  # fmt: skip
        backend.write(k, v, slots)
        history = [(torch.cat([hk, k[s : s + 1]]), torch.cat([hv, v[s : s + 1]])) for s, (hk, hv) in enumerate(history)]
        lens = [n + 1 for n in lens]
        out = backend.decode(q, tables, lens)
        for s, (hk, hv) in enumerate(history):
            _check(out[s : s + 1], dense(q[s : s + 1], hk, hv, causal=False), f"decode step {step} sequence {s}")


def test_the_cache_holds_exactly_the_written_rows():
    backend = PagedBackend()
    k = torch.randn(5, KV_HEADS, HEAD_DIM).half()
    v = torch.randn(5, KV_HEADS, HEAD_DIM).half()
    slots = torch.tensor([17, 3, 40, 41, 190], dtype=torch.int32)
    backend.write(k, v, slots)
    flat_k = backend.key_cache.view(-1, KV_HEADS, HEAD_DIM)
    assert torch.equal(flat_k[slots.long()], k) and torch.equal(
        backend.value_cache.view(-1, KV_HEADS, HEAD_DIM)[slots.long()], v
    )
    assert int((flat_k != 0).any(dim=(1, 2)).sum()) == 5
    key, value = torch.zeros(5, KV_HEADS, HEAD_DIM).half(), torch.zeros(5, KV_HEADS, HEAD_DIM).half()
    torch_npu.npu_gather_pa_kv_cache(backend.key_cache, backend.value_cache, torch.tensor([[1, 2]], dtype=torch.int32),
                                     torch.tensor([5], dtype=torch.int32), key, value)  # fmt: skip
    assert torch.equal(key[:3], flat_k[16:19]) and torch.equal(key[3:], flat_k[19:21])
