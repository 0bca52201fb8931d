"""The ops in torch's `npu` namespace: each schema (schemas.py) defined once, its CPU kernel, its fake
(shapes only, for torch.compile and FakeTensor) and, where torch_npu's derivatives.yaml (26.1.0)
gives one, its autograd formula."""

import inspect

import torch

from . import fusion_attention as fa
from . import inference, kv_cache, sparse_attention
from .schemas import SCHEMAS

LIB = torch.library.Library("npu", "DEF")


def _define(name: str, kernel, fake) -> None:
    LIB.define(SCHEMAS[name])
    LIB.impl(name, kernel, "CPU")
    torch.library.register_fake(f"npu::{name}", fake, lib=LIB)


# -- fakes: the kernels' own output rules, without a call -------------------------------------------
def _fusion_fake(function):
    """The fake of npu_fusion_attention or _v2: the outputs as the function allocates them."""

    def fake(query, key, value, head_num, input_layout, *args, **kwargs):
        bound = _bind(function, (query, key, value, head_num, input_layout, *args), kwargs)
        s = fa.shapes(query, key, value, head_num, input_layout.upper())
        smax, ssum = fa.softmax_stats(query, s, head_num)
        count = fa.numels(query, key, head_num, s.layout, tuple(bound["actual_seq_qlen"] or ()),
                          tuple(bound["actual_seq_kvlen"] or ()))  # fmt: skip
        return (query.new_empty(s.out), smax, ssum, query.new_empty(0), int(bound["seed"]), int(bound["offset"]),
                count)  # fmt: skip

    return fake


def _bind(fn, args, kwargs) -> dict:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _grad_fake(query, key, value, dy, head_num, input_layout, *, pse=None, sink=None, **kwargs):
    dq, dk, dv, dpse, dsink = fa._grad_outputs(query, key, value, pse, sink)
    return dq, dk, dv, (dpse if pse is not None else None), dsink


def _grad_v2_fake(query, key, value, dy, head_num, input_layout, *, pse=None, query_rope=None, key_rope=None,
                  sink=None, **kwargs):  # fmt: skip
    dq, dk, dv, dpse, dq_rope, dk_rope, dsink = fa.grad_v2_outputs(query, key, value, pse, query_rope, key_rope, sink)
    return dq, dk, dv, (dpse if pse is not None else None), dq_rope, dk_rope, dsink


def _pfa_fake(query, key, value, **kwargs):
    layout = kwargs.get("input_layout", "BSH")
    shape = tuple(query.shape)
    if layout == "BNSD_BSND":
        shape = (query.size(0), query.size(2), query.size(1), query.size(3))
    elif layout == "TND":
        shape = (query.size(0), query.size(1), value.size(2))
    return query.new_empty(shape, dtype=inference._out_dtype(query, kwargs.get("quant_scale2")))


def _ifa_fake(query, key, value, **kwargs):
    return query.new_empty(query.shape, dtype=inference._out_dtype(query, kwargs.get("quant_scale2")))


def _fia_fake(query, key, value, **kwargs):
    k = {**inference.FIA_DEFAULTS, **kwargs}
    return inference.fia_outputs(query, value, k["input_layout"], k["quant_scale2"], k["block_table"], k["num_heads"],
                                 k["num_key_value_heads"], k["softmax_lse_flag"], k["query_rope"])  # fmt: skip


def _fia_v2_fake(query, key, value, **kwargs):
    return inference._fia_v4_call_args("npu_fused_infer_attention_score_v2", query, key, value, kwargs)[:2]


def _workspace_fake(query, key, value, **kwargs):
    """The workspace size is phase 1's answer: a size only the real call knows."""
    return query.new_empty(torch.library.get_ctx().new_dynamic_size())


def _nothing(*args, **kwargs):
    return None


def _li_fake(query, key, weights, *, layout_query="BSND", layout_key="BSND", sparse_count=2048,
             return_value=False, **kwargs):  # fmt: skip
    if layout_query == "BSND":
        shape = (query.size(0), query.size(1), key.size(2), sparse_count)
    else:
        shape = (query.size(0), key.size(1 if layout_key == "TND" else 2), sparse_count)
    return query.new_empty(shape, dtype=torch.int32), query.new_empty(shape if return_value else (0,))


def _li_grad_fake(query, key, dy, sparse_indices, weights, *args, **kwargs):
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(weights)


def _sfa_fake(query, key, value, sparse_indices, scale_value, *, return_softmax_lse=False, **kwargs):
    if not return_softmax_lse:
        lse = (0,)
    elif query.dim() == 3:
        lse = (key.size(1), query.size(0), query.size(1) // key.size(1))
    else:
        lse = (query.size(0), key.size(2), query.size(1), query.size(2) // key.size(2))
    return (torch.empty_like(query), query.new_empty(lse, dtype=torch.float32),
            query.new_empty(lse, dtype=torch.float32))  # fmt: skip


def _sfa_grad_fake(query, key, value, sparse_indices, d_out, out, softmax_max, softmax_sum, scale_value,
                   sparse_block_size, query_rope=None, key_rope=None, *args, **kwargs):  # fmt: skip
    rope = [torch.empty_like(r) if r is not None else base.new_empty(0) for r, base in ((query_rope, query),
                                                                                           (key_rope, key))]  # fmt: skip
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value), *rope


KERNELS = {  # op -> (CPU kernel, fake)
    "npu_fusion_attention": (fa.npu_fusion_attention, _fusion_fake(fa.npu_fusion_attention)),
    "npu_fusion_attention_grad": (fa.npu_fusion_attention_grad, _grad_fake),
    "npu_fusion_attention_v2": (fa.npu_fusion_attention_v2, _fusion_fake(fa.npu_fusion_attention_v2)),
    "npu_fusion_attention_grad_v2": (fa.npu_fusion_attention_grad_v2, _grad_v2_fake),
    "npu_prompt_flash_attention": (inference.npu_prompt_flash_attention, _pfa_fake),
    "npu_incre_flash_attention": (inference.npu_incre_flash_attention, _ifa_fake),
    "npu_fused_infer_attention_score": (inference.npu_fused_infer_attention_score, _fia_fake),
    "_npu_fused_infer_attention_score_get_max_workspace": (
        inference.npu_fused_infer_attention_score_get_max_workspace,
        _workspace_fake,
    ),
    "npu_fused_infer_attention_score_v2": (inference.npu_fused_infer_attention_score_v2, _fia_v2_fake),
    "_npu_fused_infer_attention_score_v2_get_max_workspace": (
        inference.npu_fused_infer_attention_score_v2_get_max_workspace,
        _workspace_fake,
    ),
    "npu_scatter_pa_kv_cache": (kv_cache.npu_scatter_pa_kv_cache, _nothing),
    "npu_gather_pa_kv_cache": (kv_cache.npu_gather_pa_kv_cache, _nothing),
    "npu_lightning_indexer": (sparse_attention.npu_lightning_indexer, _li_fake),
    "npu_lightning_indexer_grad": (sparse_attention.npu_lightning_indexer_grad, _li_grad_fake),
    "npu_sparse_flash_attention": (sparse_attention.npu_sparse_flash_attention, _sfa_fake),
    "npu_sparse_flash_attention_grad": (sparse_attention.npu_sparse_flash_attention_grad, _sfa_grad_fake),
}

for _name, (_kernel, _fake) in KERNELS.items():
    _define(_name, _kernel, _fake)
