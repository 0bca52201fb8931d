"""npu_fusion_attention / _grad and npu_fusion_attention_v2 / _grad_v2 as op-plugin 26.1.0 writes them
(FlashAttentionKernelNpuOpApi.cpp and FlashAttentionV2KernelNpuOpApi.cpp, the torch >= 2.2 branch):
the TORCH_CHECKs in order, the outputs allocated as there, the dropout mask from dropout.py, and the
entry point chosen as there (A2/A3):

    npu_fusion_attention   sink, seq lens: VarLenScoreV5 | sink: ScoreV3
                           seq lens, softmax_layout TND: VarLenScoreV4 | seq lens: VarLenScore
                           else FlashAttentionScore
    npu_fusion_attention_grad   the same, with UnpaddingScoreGrad{V5,V4,} and ScoreGrad{V3,}
    npu_fusion_attention_v2     seq lens: VarLenScoreV2 | else FlashAttentionScoreV2 (no rope, no sink)
    npu_fusion_attention_grad_v2   seq lens: UnpaddingScoreGradV2 | else FlashAttentionScoreGradV2

"seq lens" is torch_npu's own test: both actual_seq_qlen and actual_seq_kvlen non-empty. Ascend910_95
goes through FlashAttentionScoreV4 / GradV4, which aclnn-emu does not emulate.
"""

import dataclasses

import torch

from . import aclnn, dropout
from .aclnn import call, check

SOFTMAX_LANES = 8
LAYOUTS = ("BSH", "SBH", "BNSD", "BSND", "TND")
PREFIX, PREFIX_COMPRESS, BAND_LEFT_UP_CAUSAL = 5, 6, 8


@dataclasses.dataclass
class Shapes:
    layout: str
    batch: int = 0
    s1: int = 0
    heads: int = 0
    tokens: int = 0
    out: tuple = ()


def _check_dims(**tensors) -> None:
    for name, t in tensors.items():
        check(
            t.dim() in (3, 4),
            f"The shapes of the input {name} should be 3 or 4 dimensional, but got ",
            t.dim(),
            "-dimensional",
        )


def _check_common(layout: str, keep_prob: float, sparse_mode: int, seq_lens=None) -> str:
    """keep_prob, the layout's presence, sparse_mode per layout, the layout's name; the layout upper-cased."""
    check(keep_prob > 0 and keep_prob <= 1, "The keep_prob value must be in range of (0, 1], but got ", keep_prob)
    check(layout != "", "input_layout is empty")
    if layout == "TND":
        check(
            0 <= sparse_mode < PREFIX or PREFIX < sparse_mode <= BAND_LEFT_UP_CAUSAL,
            "The sparse_mode value must be in range of [0,5) or (5,8], but got ",
            sparse_mode,
        )
        if seq_lens is not None:
            q, kv = seq_lens
            check(
                len(q) != 0 and len(kv) != 0 and len(q) == len(kv),
                "the size of actual_seq_qlen and actual_seq_kvlen must be the same and cannot be empty.",
            )
    else:
        check(
            0 <= sparse_mode <= PREFIX_COMPRESS,
            "The sparse_mode value must be in range of [0,6], but got ",
            sparse_mode,
        )
    upper = layout.upper()
    check(upper in LAYOUTS, "The input_layout should be BSH/SBH/BNSD/BSND/TND(case-insensitive), but got ", layout)
    return upper


def shapes(query, key, value, head_num: int, layout: str) -> Shapes:
    """B, S1, N, T and the attention score's shape per layout (npu_fusion_attention's switch)."""
    if layout in ("BSH", "SBH"):
        b, s0 = (query.size(0), query.size(1)) if layout == "BSH" else (query.size(1), query.size(0))
        d = query.size(2) // head_num
        divisor = key.size(2) // d if d else 0
        d2 = d if (d == 0 or key.size(2) == 0 or divisor == 0) else value.size(2) // divisor
        out = (b, s0, head_num * d2) if layout == "BSH" else (s0, b, head_num * d2)
        return Shapes(layout, b, s0, head_num, out=out)
    if layout == "BNSD":
        return Shapes(layout, query.size(0), query.size(2), query.size(1), out=(*query.shape[:3], value.size(3)))
    if layout == "BSND":
        return Shapes(layout, query.size(0), query.size(1), query.size(2), out=(*query.shape[:3], value.size(3)))
    return Shapes(layout, heads=query.size(1), tokens=query.size(0), out=(query.size(0), query.size(1), value.size(2)))


def numels(query, key, head_num: int, layout: str, seq_q, seq_kv) -> int:
    """The score count the dropout mask covers ([B,N,S1,S2], or N * sum(Sq_i * Skv_i) for TND)."""
    if layout == "TND":
        total, prev_q, prev_kv = 0, 0, 0
        for q, kv in zip(seq_q, seq_kv):
            total += (q - prev_q) * (kv - prev_kv)
            prev_q, prev_kv = q, kv
        return query.size(1) * total
    if layout == "BSH":
        return query.size(0) * head_num * query.size(1) * key.size(1)
    if layout == "SBH":
        return query.size(1) * head_num * query.size(0) * key.size(0)
    if layout == "BNSD":
        return query.size(0) * query.size(1) * query.size(2) * key.size(2)
    return query.size(0) * query.size(2) * query.size(1) * key.size(1)


def softmax_stats(query, s: Shapes, head_num: int):
    """softmax_max and softmax_sum: float32 [B, N, S1, 8], or [T, N, 8] for TND."""
    shape = (s.tokens, s.heads, SOFTMAX_LANES) if s.layout == "TND" else (s.batch, head_num, s.s1, SOFTMAX_LANES)
    return torch.empty(shape, dtype=torch.float32), torch.empty(shape, dtype=torch.float32)


def _seq(values) -> tuple:
    return tuple(values or ())


def _same_as_input(softmax_layout: str) -> str:
    return "same_as_input" if softmax_layout == "TND" else softmax_layout


def _not_on_arch35(function: str) -> None:
    if aclnn.soc() == aclnn.ARCH35:
        raise NotImplementedError(
            f"torch_npu.{function} on Ascend910_95 calls aclnnFlashAttentionScoreV4 / GradV4, which aclnn-emu "
            "does not emulate"
        )


def _forward_outputs(query, key, value, head_num: int, layout: str, seq_q, seq_kv):
    """attention_score, softmax_max, softmax_sum, softmax_out (empty) as torch_npu allocates them, and
    the score count."""
    s = shapes(query, key, value, head_num, layout)
    smax, ssum = softmax_stats(query, s, head_num)
    attention, sout = torch.empty(s.out, dtype=query.dtype), torch.empty(0, dtype=query.dtype)
    return attention, smax, ssum, sout, numels(query, key, head_num, layout, seq_q, seq_kv)


def _forward_mask(query, keep_prob: float, dropout_mask, seed: int, offset: int, count: int):
    """The caller's dropout_mask (seed and offset as given), or the one dropout.py makes."""
    if dropout_mask is not None:
        return dropout_mask, seed, offset
    return dropout.forward_mask(query, keep_prob, seed, offset, count)


# -- npu_fusion_attention ----------------------------------------------------------------------------
def npu_fusion_attention(
    query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
    keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None, dropout_mask=None, seed=0, offset=0,
):  # fmt: skip
    seq_q, seq_kv = _seq(actual_seq_qlen), _seq(actual_seq_kvlen)
    check(head_num > 0, "head_num must > 0, but got ", head_num)
    _check_dims(query=query, key=key, value=value)
    check(keep_prob > 0 and keep_prob <= 1, "The keep_prob value must be in range of (0, 1], but got ", keep_prob)
    check(input_layout != "", "input_layout is empty")
    check(softmax_layout in ("TND", ""), "only supported softmax_layout=TND")
    check(
        not (softmax_layout == "TND" and input_layout != "TND"),
        "softmax_layout=TND only supported when input_layout_str=TND",
    )
    layout = _check_common(input_layout, keep_prob, sparse_mode, (seq_q, seq_kv) if input_layout == "TND" else None)
    _not_on_arch35("npu_fusion_attention")
    attention, smax, ssum, sout, count = _forward_outputs(query, key, value, head_num, layout, seq_q, seq_kv)
    mask, seed, offset = _forward_mask(query, keep_prob, dropout_mask, seed, offset, count)
    prefix_ = _seq(prefix)
    common = (scale, keep_prob, pre_tockens, next_tockens, head_num, layout, inner_precise, sparse_mode)
    outs = (smax, ssum, sout, attention)
    if sink is not None:
        if seq_q and seq_kv:
            call("FlashAttentionVarLenScoreV5", query, None, key, None, value, pse, mask, padding_mask, atten_mask,
                 sink, prefix_, seq_q, seq_kv, (), (), *common, 1, _same_as_input(softmax_layout), *outs)  # fmt: skip
        else:
            call("FlashAttentionScoreV3", query, key, value, pse, mask, padding_mask, atten_mask, sink, prefix_,
                 (), (), *common, 1, *outs)  # fmt: skip
    elif seq_q and seq_kv:
        if softmax_layout == "TND":
            call("FlashAttentionVarLenScoreV4", query, key, value, pse, mask, padding_mask, atten_mask, prefix_,
                 seq_q, seq_kv, *common, "same_as_input", *outs)  # fmt: skip
        else:
            check(softmax_layout == "", "The param softmax_layout is not supported")
            call("FlashAttentionVarLenScore", query, key, value, pse, mask, padding_mask, atten_mask, prefix_,
                 seq_q, seq_kv, *common, *outs)  # fmt: skip
    else:
        call("FlashAttentionScore", query, key, value, pse, mask, padding_mask, atten_mask, prefix_, *common, *outs)
    return attention, smax, ssum, sout, int(seed), int(offset), int(count)


def _grad_outputs(query, key, value, pse, sink):
    dpse = torch.empty_like(pse) if pse is not None else torch.empty(0, dtype=query.dtype)
    dsink = torch.empty_like(sink) if sink is not None else torch.empty(0, dtype=torch.float32)
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value), dpse, dsink


def npu_fusion_attention_grad(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0, keep_prob=1.0,
    pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):  # fmt: skip
    _check_dims(query=query, key=key, value=value, dy=dy)
    layout = _check_common(input_layout, keep_prob, sparse_mode)
    _not_on_arch35("npu_fusion_attention_grad")
    mask = dropout.backward_mask(query, keep_prob, seed, offset, numels)
    seq_q, seq_kv, prefix_ = _seq(actual_seq_qlen), _seq(actual_seq_kvlen), _seq(prefix)
    dq, dk, dv, dpse, dsink = _grad_outputs(query, key, value, pse, sink)
    ins = (pse, mask, padding_mask, atten_mask, softmax_max, softmax_sum, softmax_in, attention_in)
    common = (scale_value, keep_prob, pre_tockens, next_tockens, head_num, layout, inner_precise, sparse_mode)
    if sink is not None:
        if seq_q and seq_kv:
            call("FlashAttentionUnpaddingScoreGradV5", query, None, key, None, value, dy, *ins, sink, prefix_, seq_q,
                 seq_kv, (), (), *common, 1, _same_as_input(softmax_layout), dq, torch.empty(0, dtype=query.dtype),
                 dk, torch.empty(0, dtype=key.dtype), dv, dpse, dsink)  # fmt: skip
        else:
            call("FlashAttentionScoreGradV3", query, key, value, dy, *ins, sink, prefix_, (), (), *common, 1, dq, dk,
                 dv, dpse, dsink)  # fmt: skip
    elif seq_q and seq_kv:
        if softmax_layout == "TND":
            call("FlashAttentionUnpaddingScoreGradV4", query, key, value, dy, *ins, prefix_, seq_q, seq_kv, *common,
                 dq, dk, dv, dpse, "same_as_input")  # fmt: skip
        else:
            check(softmax_layout == "", "The param softmax_layout is not supported")
            call("FlashAttentionUnpaddingScoreGrad", query, key, value, dy, *ins, prefix_, seq_q, seq_kv, *common,
                 dq, dk, dv, dpse)  # fmt: skip
    else:
        call("FlashAttentionScoreGrad", query, key, value, dy, *ins, prefix_, *common, dq, dk, dv, dpse)
    return dq, dk, dv, (dpse if pse is not None else None), dsink


# -- npu_fusion_attention_v2 -------------------------------------------------------------------------
def _v2_unsupported(function: str, query_rope, key_rope, sink) -> None:
    for name, value, entry in (
        ("query_rope/key_rope", query_rope if query_rope is not None else key_rope, "VarLenScoreV3 / ScoreGradV3 rope paths"),
        ("sink", sink, "ScoreV3 / VarLenScoreV5 from the v2 function"),
    ):  # fmt: skip
        if value is not None:
            raise NotImplementedError(f"torch_npu.{function} with {name} ({entry}) is not emulated by aclnn-emu")


def npu_fusion_attention_v2(
    query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, query_rope=None,
    key_rope=None, scale=1.0, keep_prob=1.0, pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0,
    prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="", sink=None, dropout_mask=None, seed=0,
    offset=0,
):  # fmt: skip
    seq_q, seq_kv = _seq(actual_seq_qlen), _seq(actual_seq_kvlen)
    check(head_num > 0, "head_num must > 0, but got ", head_num)
    _check_dims(query=query, key=key, value=value)
    layout = _check_common(input_layout, keep_prob, sparse_mode, (seq_q, seq_kv) if input_layout == "TND" else None)
    _not_on_arch35("npu_fusion_attention_v2")
    _v2_unsupported("npu_fusion_attention_v2", query_rope, key_rope, sink)
    attention, smax, ssum, sout, count = _forward_outputs(query, key, value, head_num, layout, seq_q, seq_kv)
    mask, seed, offset = _forward_mask(query, keep_prob, dropout_mask, seed, offset, count)
    starts = (_seq(q_start_idx), _seq(kv_start_idx))
    common = (scale, keep_prob, pre_tokens, next_tokens, head_num, layout, inner_precise, sparse_mode, pse_type)
    ins = (query, key, value, pse, mask, padding_mask, atten_mask, _seq(prefix))
    if seq_q and seq_kv:
        call("FlashAttentionVarLenScoreV2", *ins, seq_q, seq_kv, *starts, *common, smax, ssum, sout, attention)
    else:
        call("FlashAttentionScoreV2", *ins, *starts, *common, smax, ssum, sout, attention)
    return attention, smax, ssum, sout, int(seed), int(offset), int(count)


def npu_fusion_attention_grad_v2(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, query_rope=None, key_rope=None,
    scale_value=1.0, keep_prob=1.0, pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0, seed=0,
    offset=0, numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
    gen_mask_parallel=True, sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="",
    sink=None,
):  # fmt: skip
    _check_dims(query=query, key=key, value=value, dy=dy)
    layout = _check_common(input_layout, keep_prob, sparse_mode)
    _not_on_arch35("npu_fusion_attention_grad_v2")
    _v2_unsupported("npu_fusion_attention_grad_v2", query_rope, key_rope, sink)
    mask = dropout.backward_mask(query, keep_prob, seed, offset, numels)
    seq_q, seq_kv = _seq(actual_seq_qlen), _seq(actual_seq_kvlen)
    dq, dk, dv, dpse, dsink = _grad_outputs(query, key, value, pse, sink)
    ins = (query, key, value, dy, pse, mask, padding_mask, atten_mask, softmax_max, softmax_sum, softmax_in,
           attention_in, _seq(prefix))  # fmt: skip
    starts = (_seq(q_start_idx), _seq(kv_start_idx))
    common = (scale_value, keep_prob, pre_tokens, next_tokens, head_num, layout, inner_precise, sparse_mode, pse_type)
    if seq_q and seq_kv:
        call("FlashAttentionUnpaddingScoreGradV2", *ins, seq_q, seq_kv, *starts, *common, dq, dk, dv, dpse)
    else:
        call("FlashAttentionScoreGradV2", *ins, *starts, *common, dq, dk, dv, dpse)
    return dq, dk, dv, (dpse if pse is not None else None), None, None, dsink
