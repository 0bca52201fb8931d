"""npu_scatter_pa_kv_cache and npu_gather_pa_kv_cache as op-plugin 26.1.0 writes them
(ScatterPaKvCacheNpuOpApi.cpp, GatherPaKvCacheKernelNpuOpApi.cpp): in place on the caller's cache
(scatter) or key/value (gather) tensors. Scatter passes cache_mode as given (default 'PA_NZ'),
scatter_mode "None", strides [1, 1] and offsets [0, 0]; gather passes "PA_NZ" only for a FRACTAL_NZ
key cache, which a CPU tensor never is, so "Norm".
"""

from .aclnn import call


def npu_scatter_pa_kv_cache(
    key, value, key_cache, value_cache, slot_mapping, *, compress_lens=None, compress_seq_offsets=None,
    seq_lens=None, cache_mode="PA_NZ",
):  # fmt: skip
    call("ScatterPaKvCache", key, key_cache, slot_mapping, value, value_cache, compress_lens, compress_seq_offsets,
         seq_lens, cache_mode, "None", (1, 1), (0, 0))  # fmt: skip


def npu_gather_pa_kv_cache(
    key_cache, value_cache, block_tables, seq_lens, key, value, *, seq_offset=None, is_seq_lens_cumsum=False
):
    call("GatherPaKvCache", key_cache, value_cache, block_tables, seq_lens, key, value, seq_offset, "Norm",
         is_seq_lens_cumsum)  # fmt: skip
