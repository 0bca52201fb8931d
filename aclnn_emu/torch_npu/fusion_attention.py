"""npu_fusion_attention / _grad and npu_fusion_attention_v2 / _grad_v2 as op-plugin 26.1.0 writes them
(FlashAttentionKernelNpuOpApi.cpp and FlashAttentionV2KernelNpuOpApi.cpp, the torch >= 2.2 branch):
the TORCH_CHECKs in order, the outputs allocated as there, the dropout mask from dropout.py, and the
entry point chosen as there (A2/A3):

    npu_fusion_attention   sink, seq lens: VarLenScoreV5 | sink: ScoreV3
                           seq lens, softmax_layout TND: VarLenScoreV4 | seq lens: VarLenScore
                           else FlashAttentionScore
    npu_fusion_attention_grad   the same, with UnpaddingScoreGrad{V5,V4,} and ScoreGrad{V3,}
    npu_fusion_attention_v2     sink, seq lens: VarLenScoreV5 (with the ropes) | sink: ScoreV3
                                query_rope and key_rope: VarLenScoreV3 (key_rope needs seq lens)
                                seq lens: VarLenScoreV2 | else FlashAttentionScoreV2
    npu_fusion_attention_grad_v2   the same, with UnpaddingScoreGrad{V5,V3,V2} and ScoreGrad{V3,V2}; both
                                ropes without seq lens call nothing

The v2 functions pass their pse_type and start indices on every path; v1 passes pse_type 1 and no
start indices to the sink entry points.

"seq lens" is torch_npu's own test: both actual_seq_qlen and actual_seq_kvlen non-empty. Ascend910_95
goes through FlashAttentionScoreV4 / GradV4, which aclnn-emu does not emulate.
"""

import dataclasses
import warnings

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
    """The 3-or-4-dimensions check of each given tensor, in order (an absent optional one is skipped)."""
    for name, t in tensors.items():
        if t is not None:
            check(
                t.dim() in (3, 4),
                f"The shapes of the input {name} should be 3 or 4 dimensional, but got ",
                t.dim(),
                "-dimensional",
            )


def _check_keep_prob_and_layout(keep_prob: float, layout: str, empty: str = "input_layout is empty") -> None:
    """keep_prob in (0, 1] and a layout given (the v2 functions word the second "The input_layout is empty")."""
    check(keep_prob > 0 and keep_prob <= 1, "The keep_prob value must be in range of (0, 1], but got ", keep_prob)
    check(layout != "", empty)


def _check_sparse_mode(layout: str, sparse_mode: int, seq_lens=None) -> None:
    """sparse_mode per layout as given (an upper-case "TND" only), and for the forwards (seq_lens given)
    TND's sequence lengths."""
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


def _upper_layout(layout: str) -> str:
    upper = layout.upper()
    check(upper in LAYOUTS, "The input_layout should be BSH/SBH/BNSD/BSND/TND(case-insensitive), but got ", layout)
    return upper


def _check_softmax_layout(softmax_layout: str, layout: str) -> None:
    """The forwards' softmax_layout checks (v1 compares the layout as given, v2 the upper-cased one)."""
    check(softmax_layout in ("TND", ""), "only supported softmax_layout=TND")
    check(
        not (softmax_layout == "TND" and layout != "TND"), "softmax_layout=TND only supported when input_layout_str=TND"
    )


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
    _check_keep_prob_and_layout(keep_prob, input_layout)
    _check_softmax_layout(softmax_layout, input_layout)
    _check_sparse_mode(input_layout, sparse_mode, (seq_q, seq_kv))
    layout = _upper_layout(input_layout)
    _not_on_arch35("npu_fusion_attention")
    attention, smax, ssum, sout, count = _forward_outputs(query, key, value, head_num, layout, seq_q, seq_kv)
    mask, seed, offset = _forward_mask(query, keep_prob, dropout_mask, seed, offset, count)
    prefix_ = _seq(prefix)
    common = (scale, keep_prob, pre_tockens, next_tockens, head_num, layout, inner_precise, sparse_mode)
    outs = (smax, ssum, sout, attention)
    if sink is not None:  # pse_type 1, no rope and no start indices
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
        else:  # softmax_layout is "" here (checked above)
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
    _check_keep_prob_and_layout(keep_prob, input_layout)
    _check_sparse_mode(input_layout, sparse_mode)
    layout = _upper_layout(input_layout)
    _not_on_arch35("npu_fusion_attention_grad")
    mask = dropout.backward_mask(query, keep_prob, seed, offset, numels)
    seq_q, seq_kv, prefix_ = _seq(actual_seq_qlen), _seq(actual_seq_kvlen), _seq(prefix)
    dq, dk, dv, dpse, dsink = _grad_outputs(query, key, value, pse, sink)
    ins = (pse, mask, padding_mask, atten_mask, softmax_max, softmax_sum, softmax_in, attention_in)
    common = (scale_value, keep_prob, pre_tockens, next_tockens, head_num, layout, inner_precise, sparse_mode)
    if sink is not None:  # pse_type 1; the rope gradients are empty tensors
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
MAX_SEQUENCE_LENGTH = 1000000
V2_EMPTY_LAYOUT = "The input_layout is empty"


def _check_v2_dims(query, query_rope, key, key_rope, seq_q, seq_kv, forward: bool, **rest) -> None:
    """The v2 dimension checks in their order; on A2/A3 the forward takes key_rope only with sequence
    lengths (VarLenScoreV3 is the only rope path there)."""
    _check_dims(query=query, query_rope=query_rope, key=key, key_rope=key_rope)
    if forward and key_rope is not None and aclnn.soc() != aclnn.ARCH35:
        check(len(seq_q) != 0 and len(seq_kv) != 0, "the size of actual_seq_qlen and actual_seq_kvlen cannot be empty.")
    _check_dims(**rest)


def _check_sequence_lengths(seq_q, seq_kv) -> None:
    """No sequence longer than 1M (torch_npu reads actual_seq_kvlen at each index of actual_seq_qlen)."""
    for q, kv in zip(seq_q, seq_kv):
        check(
            q <= MAX_SEQUENCE_LENGTH and kv <= MAX_SEQUENCE_LENGTH,
            "The sequence length should not greater than 1M, but got q",
            q,
            "kv",
            kv,
        )


def _nothing_launched(function: str) -> None:
    """query_rope and key_rope without sequence lengths: torch_npu's grad calls no aclnn and returns its
    outputs unwritten."""
    warnings.warn(
        f"torch_npu.{function} with query_rope and key_rope but no actual_seq_qlen/kvlen calls no aclnn "
        "function: its gradients are uninitialised memory, as on the NPU",
        RuntimeWarning,
        stacklevel=3,
    )


def npu_fusion_attention_v2(
    query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, query_rope=None,
    key_rope=None, scale=1.0, keep_prob=1.0, pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0,
    prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="", sink=None, dropout_mask=None, seed=0,
    offset=0,
):  # fmt: skip
    seq_q, seq_kv = _seq(actual_seq_qlen), _seq(actual_seq_kvlen)
    check(head_num > 0, "head_num must > 0, but got ", head_num)
    _check_v2_dims(query, query_rope, key, key_rope, seq_q, seq_kv, True, value=value)
    _check_keep_prob_and_layout(keep_prob, input_layout, V2_EMPTY_LAYOUT)
    _check_sparse_mode(input_layout, sparse_mode, (seq_q, seq_kv))
    layout = _upper_layout(input_layout)
    _check_softmax_layout(softmax_layout, layout)
    attention, smax, ssum, sout, count = _forward_outputs(query, key, value, head_num, layout, seq_q, seq_kv)
    _check_sequence_lengths(seq_q, seq_kv)
    _not_on_arch35("npu_fusion_attention_v2")
    mask, seed, offset = _forward_mask(query, keep_prob, dropout_mask, seed, offset, count)
    prefix_, starts = _seq(prefix), (_seq(q_start_idx), _seq(kv_start_idx))
    common = (scale, keep_prob, pre_tokens, next_tokens, head_num, layout, inner_precise, sparse_mode, pse_type)
    masks, outs = (pse, mask, padding_mask, atten_mask), (smax, ssum, sout, attention)
    if sink is not None:
        if seq_q and seq_kv:
            call("FlashAttentionVarLenScoreV5", query, query_rope, key, key_rope, value, *masks, sink, prefix_, seq_q,
                 seq_kv, *starts, *common, _same_as_input(softmax_layout), *outs)  # fmt: skip
        else:
            call("FlashAttentionScoreV3", query, key, value, *masks, sink, prefix_, *starts, *common, *outs)
    elif query_rope is not None and key_rope is not None:  # key_rope has the sequence lengths here
        call("FlashAttentionVarLenScoreV3", query, query_rope, key, key_rope, value, *masks, prefix_, seq_q, seq_kv,
             *starts, *common, *outs)  # fmt: skip
    elif seq_q and seq_kv:
        call("FlashAttentionVarLenScoreV2", query, key, value, *masks, prefix_, seq_q, seq_kv, *starts, *common, *outs)
    else:
        call("FlashAttentionScoreV2", query, key, value, *masks, prefix_, *starts, *common, *outs)
    return attention, smax, ssum, sout, int(seed), int(offset), int(count)


def grad_v2_outputs(query, key, value, pse, query_rope, key_rope, sink):
    """dq, dk, dv, dpse ([0] without pse), dq_rope and dk_rope (None without their rope), dsink."""
    dq, dk, dv, dpse, dsink = _grad_outputs(query, key, value, pse, sink)
    ropes = [torch.empty_like(r) if r is not None else None for r in (query_rope, key_rope)]
    return dq, dk, dv, dpse, *ropes, dsink


def npu_fusion_attention_grad_v2(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, query_rope=None, key_rope=None,
    scale_value=1.0, keep_prob=1.0, pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0, seed=0,
    offset=0, numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
    gen_mask_parallel=True, sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="",
    sink=None,
):  # fmt: skip
    seq_q, seq_kv = _seq(actual_seq_qlen), _seq(actual_seq_kvlen)
    _check_v2_dims(query, query_rope, key, key_rope, seq_q, seq_kv, False, value=value, dy=dy)
    _check_keep_prob_and_layout(keep_prob, input_layout, V2_EMPTY_LAYOUT)
    _check_sparse_mode(input_layout, sparse_mode)
    layout = _upper_layout(input_layout)
    _not_on_arch35("npu_fusion_attention_grad_v2")
    mask = dropout.backward_mask(query, keep_prob, seed, offset, numels)
    dq, dk, dv, dpse, dq_rope, dk_rope, dsink = grad_v2_outputs(query, key, value, pse, query_rope, key_rope, sink)
    ins = (query, key, value, dy, pse, mask, padding_mask, atten_mask, softmax_max, softmax_sum, softmax_in,
           attention_in)  # fmt: skip
    rope_ins = (query, query_rope, key, key_rope, value, *ins[3:])
    prefix_, starts = _seq(prefix), (_seq(q_start_idx), _seq(kv_start_idx))
    common = (scale_value, keep_prob, pre_tokens, next_tokens, head_num, layout, inner_precise, sparse_mode, pse_type)
    if sink is not None:
        if seq_q and seq_kv:
            call("FlashAttentionUnpaddingScoreGradV5", *rope_ins, sink, prefix_, seq_q, seq_kv, *starts, *common,
                 _same_as_input(softmax_layout), dq, dq_rope, dk, dk_rope, dv, dpse, dsink)  # fmt: skip
        else:
            call("FlashAttentionScoreGradV3", *ins, sink, prefix_, *starts, *common, dq, dk, dv, dpse, dsink)
    elif query_rope is not None and key_rope is not None:
        if seq_q and seq_kv:
            call("FlashAttentionUnpaddingScoreGradV3", *rope_ins, prefix_, seq_q, seq_kv, *starts, *common, dq,
                 dq_rope, dk, dk_rope, dv, dpse)  # fmt: skip
        else:
            _nothing_launched("npu_fusion_attention_grad_v2")
    elif seq_q and seq_kv:
        call("FlashAttentionUnpaddingScoreGradV2", *ins, prefix_, seq_q, seq_kv, *starts, *common, dq, dk, dv, dpse)
    else:
        call("FlashAttentionScoreGradV2", *ins, prefix_, *starts, *common, dq, dk, dv, dpse)
    return dq, dk, dv, (dpse if pse is not None else None), dq_rope, dk_rope, dsink
