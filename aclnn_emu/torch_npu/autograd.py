"""The Autograd kernels of the `npu` ops: the backward formulas of op-plugin 26.1.0's derivatives.yaml,

npu_fusion_attention      query, key, value, pse, sink <- npu_fusion_attention_grad(..., dy = grad of
                          result0, softmax_max/sum/in = result1/2/3, attention_in = result0,
                          seed/offset/numels = result4/5/6, ...)
npu_fusion_attention_v2   query, key, value, pse, query_rope, key_rope, sink <- npu_fusion_attention_grad_v2
npu_lightning_indexer     query, key, weights <- npu_lightning_indexer_grad(query, key, grad of result1,
                          result0, weights, ...)  (result0, the indices, is not differentiable)
npu_sparse_flash_attention  query, key, value, query_rope, key_rope <- npu_sparse_flash_attention_grad(
                          ..., d_out = grad of result0, out = result0, softmax_max/sum = result1/2, ...)

and, for the other ops, what torchgen gives a function without a formula: a backward that raises
"the derivative for '<name>' is not implemented". (The in-place cache ops have no Autograd kernel.)
"""

import torch

from . import library
from .schemas import SCHEMAS

IN_PLACE = ("npu_scatter_pa_kv_cache", "npu_gather_pa_kv_cache")


def _arguments(packet, args, kwargs) -> dict:
    """Every argument of the op's schema by name, defaults filled in."""
    out = {}
    for i, arg in enumerate(packet._schema.arguments):
        out[arg.name] = args[i] if i < len(args) else kwargs.get(arg.name, arg.default_value)
    return out


class _Differentiable(torch.autograd.Function):
    """Runs the op below autograd and hands its arguments and result to the formula. (torch.library's
    register_autograd refuses the keyword-only tensors these schemas have, so the formulas are an
    Autograd kernel, the way torch_npu registers its own.)"""

    @staticmethod
    def forward(ctx, packet, backward, arguments, names, *tensors):
        with torch._C._AutoDispatchBelowAutograd():
            result = packet(**arguments)
        outputs = result if isinstance(result, tuple) else (result,)
        ctx.formula, ctx.arguments, ctx.result, ctx.names = backward, arguments, outputs, names
        ctx.mark_non_differentiable(*[r for r in outputs if isinstance(r, torch.Tensor) and not r.is_floating_point()])
        return result

    @staticmethod
    def backward(ctx, *grads):
        given = ctx.formula(ctx, *grads)
        return (None, None, None, None, *[given.get(name) for name in ctx.names])


def _kernel(packet, backward):
    def kernel(*args, **kwargs):
        arguments = _arguments(packet, args, kwargs)
        names = [name for name, value in arguments.items() if isinstance(value, torch.Tensor)]
        return _Differentiable.apply(packet, backward, arguments, names, *[arguments[n] for n in names])

    return kernel


def _not_implemented(name: str):
    def backward(ctx, *grads):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")

    return backward


def _grads(arguments: dict, given: dict) -> dict:
    """The gradients of the inputs that were given (a formula's output for an absent input is dropped)."""
    return {name: grad for name, grad in given.items() if arguments[name] is not None}


def _fusion_backward(ctx, grad, *unused):
    a, r = ctx.arguments, ctx.result
    dq, dk, dv, dpse, dsink = torch.ops.npu.npu_fusion_attention_grad(
        a["query"], a["key"], a["value"], grad, a["head_num"], a["input_layout"], pse=a["pse"],
        padding_mask=a["padding_mask"], atten_mask=a["atten_mask"], softmax_max=r[1], softmax_sum=r[2],
        softmax_in=r[3], attention_in=r[0], scale_value=a["scale"], keep_prob=a["keep_prob"],
        pre_tockens=a["pre_tockens"], next_tockens=a["next_tockens"], inner_precise=a["inner_precise"],
        seed=r[4], offset=r[5], numels=r[6], prefix=a["prefix"], actual_seq_qlen=a["actual_seq_qlen"],
        actual_seq_kvlen=a["actual_seq_kvlen"], sparse_mode=a["sparse_mode"],
        gen_mask_parallel=a["gen_mask_parallel"], sync=a["sync"], softmax_layout=a["softmax_layout"],
        sink=a["sink"],
    )  # fmt: skip
    given = {"query": dq, "key": dk, "value": dv, "pse": dpse, "sink": dsink}
    return _grads(a, given)


def _fusion_v2_backward(ctx, grad, *unused):
    a, r = ctx.arguments, ctx.result
    dq, dk, dv, dpse, dq_rope, dk_rope, dsink = torch.ops.npu.npu_fusion_attention_grad_v2(
        a["query"], a["key"], a["value"], grad, a["head_num"], a["input_layout"], pse=a["pse"],
        padding_mask=a["padding_mask"], atten_mask=a["atten_mask"], softmax_max=r[1], softmax_sum=r[2],
        softmax_in=r[3], attention_in=r[0], query_rope=a["query_rope"], key_rope=a["key_rope"],
        scale_value=a["scale"], keep_prob=a["keep_prob"], pre_tokens=a["pre_tokens"], next_tokens=a["next_tokens"],
        inner_precise=a["inner_precise"], seed=r[4], offset=r[5], numels=r[6], prefix=a["prefix"],
        actual_seq_qlen=a["actual_seq_qlen"], actual_seq_kvlen=a["actual_seq_kvlen"], sparse_mode=a["sparse_mode"],
        gen_mask_parallel=a["gen_mask_parallel"], sync=a["sync"], pse_type=a["pse_type"],
        q_start_idx=a["q_start_idx"], kv_start_idx=a["kv_start_idx"], softmax_layout=a["softmax_layout"],
        sink=a["sink"],
    )  # fmt: skip
    given = {"query": dq, "key": dk, "value": dv, "pse": dpse, "query_rope": dq_rope, "key_rope": dk_rope,
             "sink": dsink}  # fmt: skip
    return _grads(a, given)


def _indexer_backward(ctx, grad_indices, grad_values):
    a, r = ctx.arguments, ctx.result
    dq, dk, dw = torch.ops.npu.npu_lightning_indexer_grad(
        a["query"], a["key"], grad_values, r[0], a["weights"], a["actual_seq_lengths_query"],
        a["actual_seq_lengths_key"], a["layout_query"], a["sparse_mode"], a["pre_tokens"], a["next_tokens"],
    )  # fmt: skip
    return _grads(a, {"query": dq, "key": dk, "weights": dw})


def _sparse_backward(ctx, grad, *unused):
    a, r = ctx.arguments, ctx.result
    dq, dk, dv, dq_rope, dk_rope = torch.ops.npu.npu_sparse_flash_attention_grad(
        a["query"], a["key"], a["value"], a["sparse_indices"], grad, r[0], r[1], r[2], a["scale_value"],
        a["sparse_block_size"], a["query_rope"], a["key_rope"], a["actual_seq_lengths_query"],
        a["actual_seq_lengths_kv"], a["layout_query"], a["sparse_mode"], a["pre_tokens"], a["next_tokens"],
        a["attention_mode"],
    )  # fmt: skip
    given = {"query": dq, "key": dk, "value": dv, "query_rope": dq_rope, "key_rope": dk_rope}
    return _grads(a, given)


FORMULAS = {
    "npu_fusion_attention": _fusion_backward,
    "npu_fusion_attention_v2": _fusion_v2_backward,
    "npu_lightning_indexer": _indexer_backward,
    "npu_sparse_flash_attention": _sparse_backward,
}


for _name in SCHEMAS:
    if _name not in IN_PLACE:
        _backward = FORMULAS.get(_name) or _not_implemented(_name)
        library.LIB.impl(_name, _kernel(getattr(torch.ops.npu, _name).default, _backward), "Autograd")
