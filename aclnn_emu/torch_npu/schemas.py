"""The schemas of the emulated torch_npu functions, as op-plugin branch 26.1.0 publishes them
(`op_plugin/config/op_plugin_functions.yaml`; Ascend Extension for PyTorch 26.1.0, torch_npu for
torch 2.7.1-2.10; the 26.0.0 branch has the same schemas). One string per function, unchanged; the two
npu_fused_infer_attention_score_v2 functions are built from their shared parameter list."""

PINNED = "op-plugin 26.1.0"

_FIA_V2_PARAMETERS = (
    "Tensor query, Tensor key, Tensor value, *, Tensor? query_rope=None, Tensor? key_rope=None, "
    "Tensor? pse_shift=None, Tensor? atten_mask=None, SymInt[]? actual_seq_qlen=None, "
    "SymInt[]? actual_seq_kvlen=None, Tensor? block_table=None, Tensor? dequant_scale_query=None, "
    "Tensor? dequant_scale_key=None, Tensor? dequant_offset_key=None, "
    "Tensor? dequant_scale_value=None, Tensor? dequant_offset_value=None, "
    "Tensor? dequant_scale_key_rope=None, Tensor? quant_scale_out=None, "
    "Tensor? quant_offset_out=None, Tensor? quant_scale_p=None, Tensor? learnable_sink=None, "
    "int num_query_heads=1, int num_key_value_heads=0, float softmax_scale=1.0, "
    'int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout="BSH", '
    "int sparse_mode=0, int block_size=0, int query_quant_mode=0, int key_quant_mode=0, "
    "int value_quant_mode=0, int inner_precise=0, bool return_softmax_lse=False, "
    "int? query_dtype=None, int? key_dtype=None, int? value_dtype=None, int? query_rope_dtype=None, "
    "int? key_rope_dtype=None, int? key_shared_prefix_dtype=None, "
    "int? value_shared_prefix_dtype=None, int? dequant_scale_query_dtype=None, "
    "int? dequant_scale_key_dtype=None, int? dequant_scale_value_dtype=None, "
    "int? dequant_scale_key_rope_dtype=None, int? out_dtype=None"
)

SCHEMAS = {
    "npu_fusion_attention": (
        "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., "
        "float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, "
        "int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, "
        'bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None, '
        "Tensor? dropout_mask=None, int seed=0, int offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, "
        "int)"
    ),
    "npu_fusion_attention_grad": (
        "npu_fusion_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
        "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
        "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, "
        "Tensor? attention_in=None, float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, "
        "int next_tockens=2147483647, int inner_precise=0, int seed=0, int offset=0, int numels=0, "
        "int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, "
        'bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None) -> (Tensor, '
        "Tensor, Tensor, Tensor, Tensor)"
    ),
    "npu_fusion_attention_v2": (
        "npu_fusion_attention_v2(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, *, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? query_rope=None, "
        "Tensor? key_rope=None, float scale=1., float keep_prob=1., int pre_tokens=2147483647, "
        "int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, int[]? actual_seq_qlen=None, "
        "int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, "
        'int pse_type=1, int[]? q_start_idx=None, int[]? kv_start_idx=None, str softmax_layout="", '
        "Tensor? sink=None, Tensor? dropout_mask=None, int seed=0, int offset=0) -> (Tensor, Tensor, Tensor, "
        "Tensor, int, int, int)"
    ),
    "npu_fusion_attention_grad_v2": (
        "npu_fusion_attention_grad_v2(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, "
        "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
        "Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, "
        "Tensor? attention_in=None, Tensor? query_rope=None, Tensor? key_rope=None, float scale_value=1., "
        "float keep_prob=1., int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, "
        "int seed=0, int offset=0, int numels=0, int[]? prefix=None, int[]? actual_seq_qlen=None, "
        "int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, "
        'int pse_type=1, int[]? q_start_idx=None, int[]? kv_start_idx=None, str softmax_layout="", '
        "Tensor? sink=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"
    ),
    "npu_prompt_flash_attention": (
        "npu_prompt_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, "
        "Tensor? atten_mask=None, Tensor? pse_shift=None, int[]? actual_seq_lengths=None, "
        "Tensor? deq_scale1=None, Tensor? quant_scale1=None, Tensor? deq_scale2=None, "
        "Tensor? quant_scale2=None, Tensor? quant_offset2=None, int num_heads=1, float scale_value=1.0, "
        'int pre_tokens=2147483647, int next_tokens=0, str input_layout="BSH", int num_key_value_heads=0, '
        "int[]? actual_seq_lengths_kv=None, int sparse_mode=0) -> Tensor"
    ),
    "npu_incre_flash_attention": (
        "npu_incre_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, "
        "Tensor? atten_mask=None, Tensor? pse_shift=None, SymInt[]? actual_seq_lengths=None, "
        "Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, Tensor? block_table=None, "
        "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
        "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? kv_padding_size=None, "
        'int num_heads=1, float scale_value=1.0, str input_layout="BSH", int num_key_value_heads=0, '
        "int block_size=0, int inner_precise=1) -> Tensor"
    ),
    "npu_fused_infer_attention_score": (
        "npu_fused_infer_attention_score(Tensor query, Tensor key, Tensor value, *, Tensor? pse_shift=None, "
        "Tensor? atten_mask=None, SymInt[]? actual_seq_lengths=None, SymInt[]? actual_seq_lengths_kv=None, "
        "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
        "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? antiquant_scale=None, "
        "Tensor? antiquant_offset=None, Tensor? key_antiquant_scale=None, Tensor? key_antiquant_offset=None, "
        "Tensor? value_antiquant_scale=None, Tensor? value_antiquant_offset=None, Tensor? block_table=None, "
        "Tensor? query_padding_size=None, Tensor? kv_padding_size=None, Tensor? key_shared_prefix=None, "
        "Tensor? value_shared_prefix=None, SymInt[]? actual_shared_prefix_len=None, Tensor? query_rope=None, "
        "Tensor? key_rope=None, Tensor? key_rope_antiquant_scale=None, int num_heads=1, float scale=1.0, "
        'int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout="BSH", '
        "int num_key_value_heads=0, int sparse_mode=0, int inner_precise=0, int block_size=0, "
        "int antiquant_mode=0, int key_antiquant_mode=0, int value_antiquant_mode=0, "
        "bool softmax_lse_flag=False) -> (Tensor, Tensor)"
    ),
    "_npu_fused_infer_attention_score_get_max_workspace": (
        "_npu_fused_infer_attention_score_get_max_workspace(Tensor query, Tensor key, Tensor value, *, "
        "Tensor? pse_shift=None, Tensor? atten_mask=None, SymInt[]? actual_seq_lengths=None, "
        "SymInt[]? actual_seq_lengths_kv=None, Tensor? dequant_scale1=None, Tensor? quant_scale1=None, "
        "Tensor? dequant_scale2=None, Tensor? quant_scale2=None, Tensor? quant_offset2=None, "
        "Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, Tensor? key_antiquant_scale=None, "
        "Tensor? key_antiquant_offset=None, Tensor? value_antiquant_scale=None, "
        "Tensor? value_antiquant_offset=None, Tensor? block_table=None, Tensor? query_padding_size=None, "
        "Tensor? kv_padding_size=None, Tensor? key_shared_prefix=None, Tensor? value_shared_prefix=None, "
        "SymInt[]? actual_shared_prefix_len=None, Tensor? query_rope=None, Tensor? key_rope=None, "
        "Tensor? key_rope_antiquant_scale=None, int num_heads=1, float scale=1.0, int pre_tokens=2147483647, "
        'int next_tokens=2147483647, str input_layout="BSH", int num_key_value_heads=0, int sparse_mode=0, '
        "int inner_precise=0, int block_size=0, int antiquant_mode=0, int key_antiquant_mode=0, "
        "int value_antiquant_mode=0, bool softmax_lse_flag=False) -> Tensor"
    ),
    "npu_scatter_pa_kv_cache": (
        "npu_scatter_pa_kv_cache(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, "
        "Tensor slot_mapping, *, Tensor? compress_lens=None, Tensor? compress_seq_offsets=None, "
        "Tensor? seq_lens=None, str? cache_mode='PA_NZ') -> ()"
    ),
    "npu_gather_pa_kv_cache": (
        "npu_gather_pa_kv_cache(Tensor key_cache, Tensor value_cache, Tensor block_tables, Tensor seq_lens, "
        "Tensor(a!) key, Tensor(b!) value, *, Tensor? seq_offset=None, bool is_seq_lens_cumsum=False) -> ()"
    ),
    "npu_lightning_indexer": (
        "npu_lightning_indexer(Tensor query, Tensor key, Tensor weights, *, "
        "Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_key=None, "
        'Tensor? block_table=None, str layout_query="BSND", str layout_key="BSND", int sparse_count=2048, '
        "int sparse_mode=3, int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, "
        "bool return_value=False) -> (Tensor, Tensor)"
    ),
    "npu_lightning_indexer_grad": (
        "npu_lightning_indexer_grad(Tensor query, Tensor key, Tensor dy, Tensor sparse_indices, "
        "Tensor weights, Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_key=None, "
        'str? layout="BSND", int? sparse_mode=3, int? pre_tokens=9223372036854775807, '
        "int? next_tokens=9223372036854775807) -> (Tensor, Tensor, Tensor)"
    ),
    "npu_sparse_flash_attention": (
        "npu_sparse_flash_attention(Tensor query, Tensor key, Tensor value, Tensor sparse_indices, "
        "float scale_value, *, Tensor? block_table=None, Tensor? actual_seq_lengths_query=None, "
        "Tensor? actual_seq_lengths_kv=None, Tensor? query_rope=None, Tensor? key_rope=None, "
        'int sparse_block_size=1, str layout_query="BSND", str layout_kv="BSND", int sparse_mode=3, '
        "int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, int attention_mode=0, "
        "bool return_softmax_lse=False) -> (Tensor, Tensor, Tensor)"
    ),
    "npu_sparse_flash_attention_grad": (
        "npu_sparse_flash_attention_grad(Tensor query, Tensor key, Tensor value, Tensor sparse_indices, "
        "Tensor d_out, Tensor out, Tensor softmax_max, Tensor softmax_sum, float scale_value, "
        "int sparse_block_size, Tensor? query_rope=None, Tensor? key_rope=None, "
        'Tensor? actual_seq_qlen=None, Tensor? actual_seq_kvlen=None, str? layout="BSND", '
        "int? sparse_mode=3, int? pre_tokens=9223372036854775807, int? next_tokens=9223372036854775807, "
        "int? attention_mode=0) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"
    ),
    "npu_fused_infer_attention_score_v2": (
        f"npu_fused_infer_attention_score_v2({_FIA_V2_PARAMETERS}) -> (Tensor, Tensor)"
    ),
    "_npu_fused_infer_attention_score_v2_get_max_workspace": (
        f"_npu_fused_infer_attention_score_v2_get_max_workspace({_FIA_V2_PARAMETERS}) -> Tensor"
    ),
}
