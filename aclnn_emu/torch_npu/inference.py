"""npu_prompt_flash_attention, npu_incre_flash_attention, npu_fused_infer_attention_score and its
_get_max_workspace helper as op-plugin 26.1.0 writes them (FlashAttentionKernelNpuOpApi.cpp,
FusedInferAttentionScoreKernelNpuOpApi.cpp): outputs allocated as there, then PromptFlashAttentionV3
(sparse_mode 10-14 become innerPrecise 0 with sparse_mode - 10, else innerPrecise 1),
IncreFlashAttentionV4 (key and value as one-tensor lists) and FusedInferAttentionScoreV3 (A2/A3; V5 on
Ascend910_95, which CANN 9.x names Ascend950).
"""

import torch

from aclnn_emu.opdef.registry import by_name

from . import aclnn
from .aclnn import call, check

PFA_HIGH_PRECISION = range(10, 15)
FIA_LAYOUTS = {  # input_layout -> (query layout, attention_out layout, query rank)
    "BSH": ("BSH", "BSH", 3), "BSND": ("BSND", "BSND", 4), "BNSD": ("BNSD", "BNSD", 4), "TND": ("TND", "TND", 3),
    "NTD": ("NTD", "NTD", 3), "BNSD_BSND": ("BNSD", "BSND", 4), "BSH_BNSD": ("BSH", "BNSD", 3),
    "BSND_BNSD": ("BSND", "BNSD", 4), "NTD_TND": ("NTD", "TND", 3), "BSH_NBSD": ("BSH", "NBSD", 3),
    "BSND_NBSD": ("BSND", "NBSD", 4), "BNSD_NBSD": ("BNSD", "NBSD", 4), "TND_NTD": ("TND", "NTD", 3),
    "NSD": ("NSD", "NSD", 3),
}  # fmt: skip


def _no_arch35(function: str) -> None:
    check(aclnn.soc() != aclnn.ARCH35, f"Interface {function} is no longer supported on Ascend950.")


def _out_dtype(query, quant_scale2, low=(torch.int8,), rope=None):
    """int8 with a quant_scale2; for a query dtype in `low` (PFA, IFA and FIA: int8; FIA v2 also
    float8_e4m3fn) the rope's dtype or float16; else the query's."""
    if quant_scale2 is not None:
        return torch.int8
    if query.dtype in low:
        return rope.dtype if rope is not None else torch.float16
    return query.dtype


def npu_prompt_flash_attention(
    query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None, actual_seq_lengths=None,
    deq_scale1=None, quant_scale1=None, deq_scale2=None, quant_scale2=None, quant_offset2=None, num_heads=1,
    scale_value=1.0, pre_tokens=2147483647, next_tokens=0, input_layout="BSH", num_key_value_heads=0,
    actual_seq_lengths_kv=None, sparse_mode=0,
):  # fmt: skip
    _no_arch35("npu_prompt_flash_attention")
    check(input_layout != "", "input_layout is empty")
    shape = tuple(query.shape)
    if input_layout == "BNSD_BSND":
        shape = (query.size(0), query.size(2), query.size(1), query.size(3))
    elif input_layout == "TND":
        shape = (query.size(0), query.size(1), value.size(2))
    output = torch.empty(shape, dtype=_out_dtype(query, quant_scale2))
    inner_precise = 1
    if sparse_mode in PFA_HIGH_PRECISION:
        inner_precise, sparse_mode = 0, sparse_mode - 10
    call("PromptFlashAttentionV3", query, key, value, pse_shift, atten_mask, tuple(actual_seq_lengths or ()),
         tuple(actual_seq_lengths_kv or ()), deq_scale1, quant_scale1, deq_scale2, quant_scale2, quant_offset2,
         num_heads, scale_value, pre_tokens, next_tokens, input_layout, num_key_value_heads, sparse_mode,
         inner_precise, output)  # fmt: skip
    return output


def _optional_ints(values):
    return None if values is None else tuple(int(v) for v in values)


def npu_incre_flash_attention(
    query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None, actual_seq_lengths=None,
    antiquant_scale=None, antiquant_offset=None, block_table=None, dequant_scale1=None, quant_scale1=None,
    dequant_scale2=None, quant_scale2=None, quant_offset2=None, kv_padding_size=None, num_heads=1,
    scale_value=1.0, input_layout="BSH", num_key_value_heads=0, block_size=0, inner_precise=1,
):  # fmt: skip
    _no_arch35("npu_incre_flash_attention")
    output = torch.empty(query.shape, dtype=_out_dtype(query, quant_scale2))
    check(input_layout != "", "input_layout is empty")
    call("IncreFlashAttentionV4", query, [key], [value], pse_shift, atten_mask, _optional_ints(actual_seq_lengths),
         dequant_scale1, quant_scale1, dequant_scale2, quant_scale2, quant_offset2, antiquant_scale,
         antiquant_offset, block_table, kv_padding_size, num_heads, scale_value, input_layout,
         num_key_value_heads, block_size, inner_precise, output)  # fmt: skip
    return output


# -- npu_fused_infer_attention_score ----------------------------------------------------------------
def _b_n_s_d(query, layout: str, num_heads: int):
    if layout == "BSH":
        return query.size(0), num_heads, query.size(1), query.size(2) // num_heads
    if layout == "BSND":
        return query.size(0), query.size(2), query.size(1), query.size(3)
    if layout == "BNSD":
        return query.size(0), query.size(1), query.size(2), query.size(3)
    check(layout == "NSD", "It is not supported in get_query_b_n_s_d function, layout ", layout)
    return 1, query.size(0), query.size(1), query.size(2)


def _t_n_d(query, layout: str):
    check(layout in ("TND", "NTD"), "It is not supported in get_query_t_n_d function, layout ", layout)
    return (
        (query.size(0), query.size(1), query.size(2))
        if layout == "TND"
        else (query.size(1), query.size(0), query.size(2))
    )


def _value_d(block_table, query, value, query_layout: str, kv_heads: int) -> int:
    if block_table is not None:
        check(
            value.dim() in (3, 4, 5), "when Page Attention enabled, value's dim should be 3/4/5, but got ", value.dim()
        )
        return {3: lambda: value.size(2) // kv_heads, 4: lambda: value.size(3),
                5: lambda: value.size(2) * value.size(4)}[value.dim()]()  # fmt: skip
    check(value.dim() == query.dim(), "when Page Attention not enabled, value'dim should equal to query's dim!")
    if query_layout == "BSH":
        return value.size(2) // kv_heads
    return value.size(3) if query_layout in ("BSND", "BNSD") else value.size(2)


def fia_outputs(
    query, value, input_layout, quant_scale2, block_table, num_heads, kv_heads, lse_flag, query_rope, low=(torch.int8,)
):
    """construct_fia_output_tensor(_v2): attention_out and softmax_lse ([B,N,S,1] / [T,N,1] float, or [0]);
    `low`: the query dtypes whose output is query_rope's dtype or FLOAT16."""
    check(num_heads > 0, "num_heads should be greater than 0, but the actual value is", num_heads)
    kv_heads = kv_heads or num_heads
    known = FIA_LAYOUTS.get(input_layout)
    check(
        known is not None,
        "layout only support BSH, BSND, TND, NTD, BNSD_BSND, BSH_BNSD, BSND_BNSD, NTD_TND, ",
        "BSH_NBSD, BSND_NBSD, BNSD_NBSD, TND_NTD, but got BSH",
    )
    q_layout, out_layout, rank = known
    check(query.dim() == rank, "query's dim should be consistent with that of Layout")
    value_d = _value_d(block_table, query, value, q_layout, kv_heads) * (8 if value.dtype == torch.int32 else 1)
    if out_layout in ("TND", "NTD"):
        t, n, d = _t_n_d(query, q_layout)
        d = d if value_d == 0 or d == 0 else value_d
        shape = (t, n, d) if out_layout == "TND" else (n, t, d)
    else:
        b, n, s, d = _b_n_s_d(query, q_layout, num_heads)
        d_out = d if value_d == 0 or d == 0 else value_d
        shape = {
            "BSH": (b, s, query.size(2) if num_heads * value_d == 0 or query.size(2) == 0 else num_heads * value_d),
            "BSND": (b, s, n, d_out), "BNSD": (b, n, s, d_out), "NBSD": (n, b, s, d_out), "NSD": (n, s, d_out),
        }[out_layout]  # fmt: skip
    output = torch.empty(shape, dtype=_out_dtype(query, quant_scale2, low, query_rope))
    if not lse_flag:
        return output, torch.empty(0, dtype=torch.float32)
    if input_layout in ("TND", "NTD", "TND_NTD", "NTD_TND"):
        t, n, _ = _t_n_d(query, q_layout)
        return output, torch.empty((t, n, 1), dtype=torch.float32)
    b, n, s, _ = _b_n_s_d(query, q_layout, num_heads)
    return output, torch.empty((b, n, s, 1), dtype=torch.float32)


def _fia_v3_args(
    query, key, value, pse_shift, atten_mask, actual_seq_lengths, actual_seq_lengths_kv, dequant_scale1,
    quant_scale1, dequant_scale2, quant_scale2, quant_offset2, antiquant_scale, antiquant_offset,
    key_antiquant_scale, key_antiquant_offset, value_antiquant_scale, value_antiquant_offset, block_table,
    query_padding_size, kv_padding_size, key_shared_prefix, value_shared_prefix, actual_shared_prefix_len,
    query_rope, key_rope, key_rope_antiquant_scale, num_heads, scale, pre_tokens, next_tokens, input_layout,
    num_key_value_heads, sparse_mode, inner_precise, block_size, antiquant_mode, key_antiquant_mode,
    value_antiquant_mode, softmax_lse_flag,
):  # fmt: skip
    """The outputs and FusedInferAttentionScoreV3's arguments in its header's order."""
    output, lse = fia_outputs(query, value, input_layout, quant_scale2, block_table, num_heads,
                              num_key_value_heads, softmax_lse_flag, query_rope)  # fmt: skip
    args = (query, [key], [value], pse_shift, atten_mask, _optional_ints(actual_seq_lengths),
            _optional_ints(actual_seq_lengths_kv), dequant_scale1, quant_scale1, dequant_scale2, quant_scale2,
            quant_offset2, antiquant_scale, antiquant_offset, block_table, query_padding_size, kv_padding_size,
            key_antiquant_scale, key_antiquant_offset, value_antiquant_scale, value_antiquant_offset,
            key_shared_prefix, value_shared_prefix, _optional_ints(actual_shared_prefix_len), query_rope, key_rope,
            key_rope_antiquant_scale, num_heads, scale, pre_tokens, next_tokens, input_layout, num_key_value_heads,
            sparse_mode, inner_precise, block_size, antiquant_mode, softmax_lse_flag, key_antiquant_mode,
            value_antiquant_mode, output, lse)  # fmt: skip
    return output, lse, args


FIA_DEFAULTS = dict(
    pse_shift=None, atten_mask=None, actual_seq_lengths=None, actual_seq_lengths_kv=None, dequant_scale1=None,
    quant_scale1=None, dequant_scale2=None, quant_scale2=None, quant_offset2=None, antiquant_scale=None,
    antiquant_offset=None, key_antiquant_scale=None, key_antiquant_offset=None, value_antiquant_scale=None,
    value_antiquant_offset=None, block_table=None, query_padding_size=None, kv_padding_size=None,
    key_shared_prefix=None, value_shared_prefix=None, actual_shared_prefix_len=None, query_rope=None,
    key_rope=None, key_rope_antiquant_scale=None, num_heads=1, scale=1.0, pre_tokens=2147483647,
    next_tokens=2147483647, input_layout="BSH", num_key_value_heads=0, sparse_mode=0, inner_precise=0,
    block_size=0, antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0, softmax_lse_flag=False,
)  # fmt: skip


def _fia_call_args(query, key, value, kwargs):
    unknown = set(kwargs) - set(FIA_DEFAULTS)
    if unknown:
        raise TypeError(f"npu_fused_infer_attention_score got unexpected keyword arguments {sorted(unknown)}")
    return _fia_v3_args(query, key, value, **{**FIA_DEFAULTS, **kwargs})


def _fia_entry(entry: str, args) -> tuple[str, list]:
    """The entry point torch_npu calls and its arguments: on Ascend910_95 (Ascend950) FusedInferAttentionScoreV5,
    once the outputs are built, with `entry`'s arguments by name and NULL, NULL and 0 for what V5 adds (op-plugin
    26.0.0 FusedInferAttentionScore*KernelNpuOpApi.cpp; CANN 9.x withdraws V1-V4 there, and CANN 8.5 has no V5)."""
    if aclnn.soc() != aclnn.ARCH35:
        return entry, list(args)
    given = dict(zip((p.name for p in by_name(entry).params), args))
    v5 = "FusedInferAttentionScoreV5"
    return v5, [given.get(p.name, 0 if p.kind == "int64" else None) for p in by_name(v5).params]


def npu_fused_infer_attention_score(query, key, value, **kwargs):
    output, lse, args = _fia_call_args(query, key, value, kwargs)
    entry, args = _fia_entry("FusedInferAttentionScoreV3", args)
    call(entry, *args)
    return output, lse


def npu_fused_infer_attention_score_get_max_workspace(query, key, value, **kwargs):
    """_npu_fused_infer_attention_score_get_max_workspace: a tensor of `workspace size` elements of the
    query's dtype, the size from aclnnFusedInferAttentionScoreV3GetMaxWorkspaceSize (V5 on Ascend910_95)."""
    _, _, args = _fia_call_args(query, key, value, kwargs)
    entry, args = _fia_entry("FusedInferAttentionScoreV3", args)
    return torch.empty(aclnn.max_workspace_size(entry, *args), dtype=query.dtype)


# -- npu_fused_infer_attention_score_v2 -------------------------------------------------------------
FIA_V2_DEFAULTS = dict(
    query_rope=None, key_rope=None, pse_shift=None, atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None,
    block_table=None, dequant_scale_query=None, dequant_scale_key=None, dequant_offset_key=None,
    dequant_scale_value=None, dequant_offset_value=None, dequant_scale_key_rope=None, quant_scale_out=None,
    quant_offset_out=None, quant_scale_p=None, learnable_sink=None, num_query_heads=1, num_key_value_heads=0,
    softmax_scale=1.0, pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH", sparse_mode=0,
    block_size=0, query_quant_mode=0, key_quant_mode=0, value_quant_mode=0, inner_precise=0,
    return_softmax_lse=False, query_dtype=None, key_dtype=None, value_dtype=None, query_rope_dtype=None,
    key_rope_dtype=None, key_shared_prefix_dtype=None, value_shared_prefix_dtype=None,
    dequant_scale_query_dtype=None, dequant_scale_key_dtype=None, dequant_scale_value_dtype=None,
    dequant_scale_key_rope_dtype=None, out_dtype=None,
)  # fmt: skip


def _fia_v4_call_args(function: str, query, key, value, kwargs):
    """The outputs and FusedInferAttentionScoreV4's arguments (npu_fused_infer_attention_score_v2's order:
    the V1-only quant and antiquant tensors, padding sizes and shared prefixes NULL, antiquant_mode 0)."""
    unknown = set(kwargs) - set(FIA_V2_DEFAULTS)
    if unknown:
        raise TypeError(f"{function} got unexpected keyword arguments {sorted(unknown)}")
    k = {**FIA_V2_DEFAULTS, **kwargs}
    output, lse = fia_outputs(query, value, k["input_layout"], k["quant_scale_out"], k["block_table"],
                              k["num_query_heads"], k["num_key_value_heads"], k["return_softmax_lse"], k["query_rope"],
                              low=(torch.int8, torch.float8_e4m3fn))  # fmt: skip
    reinterpreted = [name for name in FIA_V2_DEFAULTS if name.endswith("_dtype") and k[name] is not None]
    if reinterpreted:
        raise NotImplementedError(
            f"torch_npu.{function} with {', '.join(reinterpreted)} (a tensor read as another dtype) is not "
            "emulated by aclnn-emu"
        )
    args = (query, [key], [value], k["pse_shift"], k["atten_mask"], _optional_ints(k["actual_seq_qlen"]),
            _optional_ints(k["actual_seq_kvlen"]), None, None, None, k["quant_scale_out"], k["quant_offset_out"],
            None, None, k["block_table"], None, None, k["dequant_scale_key"], k["dequant_offset_key"],
            k["dequant_scale_value"], k["dequant_offset_value"], None, None, None, k["query_rope"], k["key_rope"],
            k["dequant_scale_key_rope"], k["dequant_scale_query"], k["learnable_sink"], k["num_query_heads"],
            k["softmax_scale"], k["pre_tokens"], k["next_tokens"], k["input_layout"], k["num_key_value_heads"],
            k["sparse_mode"], k["inner_precise"], k["block_size"], 0, k["return_softmax_lse"], k["key_quant_mode"],
            k["value_quant_mode"], k["query_quant_mode"], output, lse)  # fmt: skip
    return output, lse, args


def npu_fused_infer_attention_score_v2(query, key, value, **kwargs):
    output, lse, args = _fia_v4_call_args("npu_fused_infer_attention_score_v2", query, key, value, kwargs)
    entry, args = _fia_entry("FusedInferAttentionScoreV4", args)
    call(entry, *args)
    return output, lse


def npu_fused_infer_attention_score_v2_get_max_workspace(query, key, value, **kwargs):
    """_npu_fused_infer_attention_score_v2_get_max_workspace: as the V1 helper, through
    aclnnFusedInferAttentionScoreV4GetMaxWorkspaceSize."""
    function = "_npu_fused_infer_attention_score_v2_get_max_workspace"
    _, _, args = _fia_v4_call_args(function, query, key, value, kwargs)
    entry, args = _fia_entry("FusedInferAttentionScoreV4", args)
    return torch.empty(aclnn.max_workspace_size(entry, *args), dtype=query.dtype)
