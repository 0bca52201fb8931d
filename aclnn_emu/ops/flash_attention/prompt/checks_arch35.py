"""PromptFlashAttentionV2 on Ascend910_95: where its path differs from Atlas A2/A3.

The tiling registry (`common/op_host/fia_tiling_templates_registry.h` `DoTilingImpl`) picks the
tiling by `PlatformAscendC::GetSocVersion`, which maps both "Ascend910B" and "Ascend910_93" to
SocVersion ASCEND910B: `prompt_flash_attention_tiling.cpp` (PromptFlashAttentionTiling, registered
for ASCEND910B) runs on Atlas A2 and A3, `prompt_flash_attention_tiling_v2.cpp`
(PromptFlashAttentionTilingV2, registered for ASCEND910_95; the arch35 "arch35" kernels) on
Ascend910_95. The differences reproduced here:
- op_api `AnalysisInputShapeInfo`: on ASCEND910_95 D is never padded, so the private-format check
  (`CheckTensorFormat`, 161002 on A2/A3 when D needs padding) never runs;
- TilingV2 `CheckIO` -> `SetInputLayout`: only BSH, TND, BSND, BNSD and BNSD_BSND, so SH and NSD
  fail with 561103 where the A2/A3 tiling runs them (SH never reaches TilingV2's key-rank bound
  INPUT_QKV_SHAPE_MIN_DIMS = 3, which would reject its 2-D key too);
- TilingV2 has no base-API path: `CheckSparseMode` calls sparseMode 20-22 "out of range"
  (561103) like any mode outside 0-4, where the A2/A3 tiling runs them;
- the shapes, key/value, query/output and TND rules below (`check_io`, `check_kv`,
  `check_query_and_key`, `tnd_lengths`), and a one-row query's mask read as the decode mask
  (`check_ifa_mask`);
- TilingV2 `CheckInnerPrecise` sets innerPrecise to high precision whatever V2 passes, so an fp16
  query takes no fp16 mask (`check_high_precision_mask`) and the kernels keep fp16 scores in fp32
  (the kernel's `Precision.high_precision`);
- `CheckQuant` (`check_quant`): only an fp16 query refuses deqScale1/quantScale1/deqScale2 with an
  INT8 output, and the post-quant scale is [1] or has qN x vD elements (no 32-element rule);
- `SetSparseModeData` (`sparse_tokens`): tokens clamp to +-2147483647, and a one-row query with a
  mask (enableIFA) has its window opened; no int8-output token or offset rule follows;
- the arch35 kernel templates (`check_kernel_template`): no INT8-in/INT8-out binary, no INT8
  decode config for Dv > 128, no bf16 TND config under the GQA merge for 128 < Dv <= 256.
The chain itself runs in prompt_flash_attention.`_tiling_v2_checks`, with the rules both tilings
share.
"""

from aclnn_emu import status
from aclnn_emu.opdef.gaps import Gaps
from ..common import (
    BF16,
    F16,
    FP32,
    I8,
    MLA_D,
    MLA_DV,
    check_layout,
    check_query_out,
    mode_tokens,
    per_batch,
    require_quant_scale2,
    require_tnd_lengths,
    shape_info,
    tiling,
)


# Calls TilingV2 accepts but whose tiling key has no arch35 kernel (check_kernel_config).
INFERRED = Gaps(
    "PromptFlashAttentionV2",
    "inferred",
    {
        "int8_int8_kernel": "Ascend910_95: an INT8 query with INT8 attentionOut (TilingV2 accepts it but the arch35 "
        "kernels have no binary for it)",
        "int8_decode_config": "Ascend910_95: an INT8 one-row query with value D > 128 (TilingV2 picks a tile shape, "
        "64 x 128, no arch35 kernel config covers)",
        "bf16_tnd_merge_config": "Ascend910_95: bf16 TND with equal batch lengths, no mask and value D in (128, 256] "
        "(TilingV2 merges the query heads into the rows and picks a config the arch35 bf16 "
        "kernels list for BSH only)",
    },
    code=status.ACLNN_ERR_INNER_NULLPTR,
)


SPARSE_MODES = (0, 1, 2, 3, 4)

# FusedInferAttentionScore's rope modes (TilingV2 CheckRope: enablePFARope, enableIFAMLA). The IFA
# MLA kernel's config S1Aligned64_S2Aligned128_DAligned576_DVAligned512 walks keys in blocks of 128.
PFA_ROPE, IFA_MLA = "pfa_rope", "ifa_mla"
IFA_MLA_KV_BLOCK = 128


def check_sparse_mode(a):
    """TilingV2 CheckSparseMode: no base-API modes."""
    if a.sparseMode not in SPARSE_MODES:
        tiling(
            "arch35.sparse_mode",
            f"sparse_mode = {a.sparseMode} is out of range. Currently only 0,1,2,3,4 are supported.",
        )


def check_io(a):
    """CheckIO: the layout, then the query and value shapes (GetAndCheckShape), then query vs output."""
    check_layout(a)
    query = shape_info(a, a.query, "query")
    value = shape_info(a, a.value, "value")
    mla = query[3] == MLA_D and value[3] == MLA_DV
    check_query_out(a, mla)
    return mla


def tnd_lengths(a, paged: bool = False):
    """CheckActSeq for TND: cumulative, non-decreasing, equally long, ending at T; per-batch lengths.
    With a block table (``paged``) the key lengths are each batch's own: neither cumulative nor
    compared with the key's T."""
    ends_q, ends_kv = a.actualSeqLengths, a.actualSeqLengthsKv
    require_tnd_lengths(a)
    if len(ends_q) != len(ends_kv):
        tiling(
            "arch35.tnd_batch",
            "When layout is TND, the batch size of actualSequenceLengthQ and "
            f"actualSequenceLengthKV must be equal, batch size of actualSequenceLengthQ = {len(ends_q)}, batch "
            f"size of actualSequenceLengthKV = {len(ends_kv)}",
        )
    for i, (eq, ekv) in enumerate(zip(ends_q, ends_kv)):
        if eq < 0:
            tiling("arch35.tnd_negative", f"actualSeqLengths[{i}] = {eq}, should >= 0")
        if i and eq < ends_q[i - 1]:
            tiling(
                "arch35.tnd_decreasing",
                f"When layout is TND, actualSeqLengths must not be decreasing, but "
                f"actSeqLen[{i}]={eq} is smaller than actSeqLen[{i - 1}]={ends_q[i - 1]}",
            )
        if ekv < 0:
            tiling("arch35.tnd_negative", f"actualSeqLengthsKv[{i}] = {ekv}, should >= 0")
        if i and ekv < ends_kv[i - 1] and not paged:
            tiling(
                "arch35.tnd_decreasing",
                f"When layout is TND, actualSeqLengthsKv must not be decreasing, but "
                f"actSeqLenKV[{i}]={ekv} is smaller than actSeqLenKV[{i - 1}]={ends_kv[i - 1]}",
            )
    if ends_q[-1] != a.query.shape[0]:
        tiling(
            "arch35.tnd_query_t",
            f"When layout is TND, the last element of Actual_seq_lengths({ends_q[-1]}) must "
            f"be equal to T({a.query.shape[0]})",
        )
    if paged:
        return per_batch(ends_q), list(ends_kv)
    if ends_kv[-1] != a.key.shape[0]:
        tiling(
            "arch35.tnd_key_t",
            f"When layout is TND, the last element of Actual_seq_lengths_kv({ends_kv[-1]}) "
            f"must be equal to T({a.key.shape[0]})",
        )
    return per_batch(ends_q), per_batch(ends_kv)


def check_high_precision_mask(a):
    """CheckMaskTypeAndShape under the forced high precision: fp16 input takes bool/int8/uint8 masks."""
    mask = a.attenMask
    if mask is not None and a.query.dtype == F16 and mask.dtype == F16:
        tiling(
            "arch35.fp16_mask",
            "maskType[FLOAT16] should be bool, int8 or uint8 when innerprecise = 0 and input type is fp16.",
        )


def check_quant(a):
    """CheckQuant after the per-tensor scales and the INT8-query/fp16-output rule (shared with A2):
    only an fp16 query refuses the int8 scales with an INT8 output (a bf16 query's are ignored),
    then CheckPostQuantParams / CheckPostQuantShape."""
    if a.attentionOut.dtype != I8:
        return
    if a.query.dtype == F16 and any(t is not None for t in (a.deqScale1, a.quantScale1, a.deqScale2)):
        tiling(
            "arch35.fp16_int8_out",
            "When input dtype is fp16 and postQuant is enable, dequantScale1, quantScale1 "
            "and dequantScale2 should be null.",
        )
    require_quant_scale2(a)
    scale, offset, q = a.quantScale2, a.quantOffset2, a.query.dtype
    if offset is not None and offset.dtype != scale.dtype:
        tiling(
            "quant2.offset_dtype",
            f"post quant scale dtype({scale.dtype.short}) and offset dtype({offset.dtype.short}) must be consistent.",
        )
    if scale.dtype not in (BF16, FP32):
        tiling("quant2.scale_dtype", f"post quant scale dtype({scale.dtype.short}) only support bf16 and fp32.")
    if q != BF16 and scale.dtype != FP32:
        tiling(
            "quant2.bf16_scale",
            f"invalid post quant scale dtype({scale.dtype.short}), when q is {q.short}, only support float32",
        )
    if offset is not None and offset.ndim != scale.ndim:
        tiling(
            "arch35.quant2_offset_rank",
            f"quant_scale2 dim num({scale.ndim}) do not equal quant_offset2 dim num({offset.ndim}).",
        )
    if offset is not None and offset.numel != scale.numel:
        tiling(
            "quant2.offset_size",
            f"quant_scale2 dimension multiply result({scale.numel}) do not equal "
            f"quant_offset2 dimension multiply result({offset.numel}).",
        )
    per_channel = a.numHeads * shape_info(a, a.value, "value")[3]
    if scale.ndim == 1 and scale.numel != 1:
        tiling(
            "arch35.quant2_per_tensor",
            f"for post quant per-tensor, quant scale/offset only support [1], now is [{scale.numel}]",
        )
    if scale.ndim != 1 and scale.numel != per_channel:
        tiling(
            "arch35.quant2_per_channel",
            f"for post quant per-channel, quant scale/offset dim multiply result only "
            f"support qN * vD({per_channel}), now is ({scale.numel}).",
        )


INT_MAX = 2147483647  # SPARSE_MODE_INT_MAX of TilingV2 (the A2/A3 tiling: 214748647)


def sparse_tokens(a, has_mask, one_row):
    """SetSparseModeData: the tokens clamped to +-INT_MAX, the mode's window; with a mask given, a
    one-row query (enableIFA) opens both sides whatever the tokens."""
    pre, nxt = (max(-INT_MAX, min(t, INT_MAX)) for t in (a.preTokens, a.nextTokens))
    pre, nxt = mode_tokens(a, pre, nxt, has_mask, INT_MAX)
    if one_row and a.attenMask is not None:
        pre, nxt = INT_MAX, INT_MAX
    return pre, nxt


def kernel_window(a, env, tokens, has_mask, one_row):
    """The (pre, next) the kernel computes with: TilingV2's. Under modes 2 and 4 a one-row query with a
    mask gets the opened window but keeps the compressed-mask mode, reading its [B, S2] mask as the
    2048 x 2048 template; that outcome is not established, so the mode's own window is used."""
    if one_row and has_mask and a.sparseMode in (2, 4):
        env.warn(
            f"portability: sparseMode {a.sparseMode} with a one-row query and a mask: TilingV2 opens the token "
            "window (enableIFA) but keeps the compressed-mask mode; what the arch35 kernel computes is not "
            "established, the emulator applies the mode's window"
        )
        return a.preTokens, a.nextTokens
    return tokens


def check_kernel_template(a, env, one_row, act_q, has_mask, mla):
    """Kernel selection among the arch35 binaries (`prompt_flash_attention_template_tiling_key.h`),
    where the tiling key TilingV2 builds has none; how the launch fails then is not established:
    - INT8 query with INT8 output: no binary at all;
    - INT8 one-row query with Dv > 128: `AdjustCVTilingCVDiff` picks sOuter 64 x sInner 128, a
      config `UpdateTilingKeyConfig` does not know;
    - bf16 TND with the GQA merge (`CheckPFAMerge`, `CheckInputDimAndHeadNum`, `CheckActSeqLen`)
      and 128 < Dv <= 256: config S1 64 / S2 256 / D 256, listed for BSH only."""
    q, out = a.query.dtype, a.attentionOut.dtype
    dv = shape_info(a, a.value, "value")[3]
    if q == I8 and out == I8:
        INFERRED.warn(env, "int8_int8_kernel")
    elif q == I8 and one_row and dv > 128:
        INFERRED.warn(env, "int8_decode_config", f"value D {dv}")
    elif q == out == BF16 and a.inputLayout == "TND" and _gqa_merge(a, act_q, has_mask, mla) and 128 < dv <= 256:
        INFERRED.warn(env, "bf16_tnd_merge_config", f"value D {dv}")


PFA_MERGE_G, PFA_MERGE_QS = 16, 4  # pfaMergeGLimit, pfaMergeQsLimit (prompt_flash_attention_tiling_v2.h)


def _gqa_merge(a, act_q, has_mask, mla):
    """enablePFAMerge for an fp16/bf16 call without post-quant: S1 > 1, G <= 16 and (with
    numKeyValueHeads given) G x S1 <= 64, no mask, not BNSD_BSND, not MLA, no batch shorter than S1."""
    s1, kv_heads = max(act_q), a.numKeyValueHeads
    group = a.numHeads // (kv_heads or a.numHeads)
    return (
        s1 > 1
        and not has_mask
        and not mla
        and a.inputLayout != "BNSD_BSND"
        and group <= PFA_MERGE_G
        and (kv_heads == 0 or group * s1 <= PFA_MERGE_G * PFA_MERGE_QS)
        and min(act_q) == s1
    )
