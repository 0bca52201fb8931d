"""npu_lightning_indexer / _grad and npu_sparse_flash_attention / _grad as op-plugin 26.1.0 writes them
(LightningIndexer(Grad)KernelNpuOpApi.cpp, SparseFlashAttention(Grad)KernelNpuOpApi.cpp)."""

import torch

from .aclnn import call, check

INT64_MAX = 9223372036854775807


def _positive_dims(name: str, t) -> None:
    for i, size in enumerate(t.shape):
        check(size > 0, f"All values within {name}'s shape should be greater than 0, but shape[", i, "] is ", size)


def npu_lightning_indexer(
    query, key, weights, *, actual_seq_lengths_query=None, actual_seq_lengths_key=None, block_table=None,
    layout_query="BSND", layout_key="BSND", sparse_count=2048, sparse_mode=3, pre_tokens=INT64_MAX,
    next_tokens=INT64_MAX, return_value=False,
):  # fmt: skip
    check(query.numel() > 0, "Tensor query is empty.")
    check(key.numel() > 0, "Tensor key is empty.")
    _positive_dims("query", query)
    _positive_dims("key", key)
    check(sparse_count > 0, "sparse count should be greater than 0, but now is ", sparse_count)
    if layout_query == "BSND":
        shape = (query.size(0), query.size(1), key.size(2), sparse_count)
    else:
        shape = (query.size(0), key.size(1 if layout_key == "TND" else 2), sparse_count)
    indices = torch.empty(shape, dtype=torch.int32)
    values = torch.empty(shape if return_value else (0,), dtype=query.dtype)
    call("LightningIndexer", query, key, weights, actual_seq_lengths_query, actual_seq_lengths_key, block_table,
         layout_query, layout_key, sparse_count, sparse_mode, pre_tokens, next_tokens, return_value, indices,
         values)  # fmt: skip
    return indices, values


def npu_lightning_indexer_grad(
    query, key, dy, sparse_indices, weights, actual_seq_lengths_query=None, actual_seq_lengths_key=None,
    layout="BSND", sparse_mode=3, pre_tokens=INT64_MAX, next_tokens=INT64_MAX,
):  # fmt: skip
    d_query, d_key, d_weights = torch.empty_like(query), torch.empty_like(key), torch.empty_like(weights)
    call("LightningIndexerGrad", query, key, dy, sparse_indices, weights, actual_seq_lengths_query,
         actual_seq_lengths_key, 0, "BSND" if layout is None else layout, 0 if sparse_mode is None else sparse_mode,
         INT64_MAX if pre_tokens is None else pre_tokens, INT64_MAX if next_tokens is None else next_tokens,
         torch.are_deterministic_algorithms_enabled(), d_query, d_key, d_weights)  # fmt: skip
    return d_query, d_key, d_weights


def npu_sparse_flash_attention(
    query, key, value, sparse_indices, scale_value, *, block_table=None, actual_seq_lengths_query=None,
    actual_seq_lengths_kv=None, query_rope=None, key_rope=None, sparse_block_size=1, layout_query="BSND",
    layout_kv="BSND", sparse_mode=3, pre_tokens=INT64_MAX, next_tokens=INT64_MAX, attention_mode=0,
    return_softmax_lse=False,
):  # fmt: skip
    check(query.numel() > 0, "Tensor query is empty.")
    check(key.numel() > 0, "Tensor key is empty.")
    check(sparse_indices.numel() > 0, "Tensor sparse_indices is empty.")
    check(layout_query in ("BSND", "TND"), "The layout of query only support BSND and TND, but got ", layout_query)
    _positive_dims("query", query)
    rank = 3 if layout_query == "TND" else 4
    check(
        query.dim() == rank,
        f"When the layout of query is {layout_query}, the query dimension must be {rank}, but got ",
        query.dim(),
    )
    output = torch.empty(query.shape, dtype=query.dtype)
    if not return_softmax_lse:
        lse_shape = (0,)
    elif query.dim() == 3:
        lse_shape = (key.size(1), query.size(0), query.size(1) // key.size(1))
    else:
        lse_shape = (query.size(0), key.size(2), query.size(1), query.size(2) // key.size(2))
    smax, ssum = torch.empty(lse_shape, dtype=torch.float32), torch.empty(lse_shape, dtype=torch.float32)
    # torch_npu passes scale_value fifth; aclnn_emu's declaration of the 8.5 header has it after keyRope
    call("SparseFlashAttention", query, key, value, sparse_indices, block_table, actual_seq_lengths_query,
         actual_seq_lengths_kv, query_rope, key_rope, scale_value, sparse_block_size, layout_query,
         layout_kv, sparse_mode, pre_tokens, next_tokens, attention_mode, return_softmax_lse, output, smax,
         ssum)  # fmt: skip
    return output, smax, ssum


def npu_sparse_flash_attention_grad(
    query, key, value, sparse_indices, d_out, out, softmax_max, softmax_sum, scale_value, sparse_block_size,
    query_rope=None, key_rope=None, actual_seq_qlen=None, actual_seq_kvlen=None, layout="BSND", sparse_mode=3,
    pre_tokens=INT64_MAX, next_tokens=INT64_MAX, attention_mode=0,
):  # fmt: skip
    for name, t in (("query", query), ("query_rope", query_rope), ("key", key), ("key_rope", key_rope),
                    ("value", value)):  # fmt: skip
        if t is not None:
            check(t.dim() in (3, 4), f"The shapes of the input {name} should be 3 or 4 dimensional, but got ",
                  t.dim(), "-dimensional")  # fmt: skip
    dq, dk, dv = torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)
    dq_rope = torch.empty_like(query_rope) if query_rope is not None else torch.empty(0, dtype=query.dtype)
    dk_rope = torch.empty_like(key_rope) if key_rope is not None else torch.empty(0, dtype=key.dtype)
    call("SparseFlashAttentionGrad", query, key, value, sparse_indices, d_out, out, softmax_max, softmax_sum,
         actual_seq_qlen, actual_seq_kvlen, query_rope, key_rope, scale_value, sparse_block_size,
         "BSND" if layout is None else layout, 3 if sparse_mode is None else sparse_mode,
         INT64_MAX if pre_tokens is None else pre_tokens, INT64_MAX if next_tokens is None else next_tokens, True,
         dq, dk, dv, dq_rope, dk_rope)  # fmt: skip
    return dq, dk, dv, dq_rope, dk_rope
