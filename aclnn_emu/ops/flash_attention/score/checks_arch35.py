"""FlashAttentionScoreV2 on Ascend910_95: where its path differs from Atlas A2/A3.

`op_host/flash_attention_score_tiling.cpp` `TilingFlashAttentionScore` runs the shared
`CheckParams`, then picks by SocVersion: on ASCEND910_95 the empty-input check
`IsEmptyInputRegbase` and the templates registered for that SocVersion alone, in priority order
`FlashAttentionScoreTilingDropMaskRegbase` (81, declines unless a dropMask needs its bit-to-byte
pass), `FlashAttentionScoreTilingVarLen` (82, TND only) and `FlashAttentionScoreTilingBasic` (83,
everything else); all share `op_host/arch35/flash_attention_score_tiling_regbase.cpp`
(`GetShapeAttrsInfo`, `DoOpTiling`). The op_api differs only in skipping CheckFormat there, and the
ascend910_95 OpDef registers for fp16/bf16/fp32 queries exactly the A2/A3 combinations (its
HIFLOAT8/FP8 ones are out of V2's reach in 8.5: InputDtypeCheck takes fp16/bf16/fp32 only). All tiling
failures are 161001, as on A2/A3. What differs, each with its deciding function:
- `IsEmptyInputRegbase`: an empty value (Dv = 0) also takes the empty-input tiling (zeros out);
- `GetSparseInfo` (arch35): sparseMode > 6 fails before the "no attenMask" early return;
- `AnalyzePseOptionalInput` has no "pse is nullptr but pseType is not 1" check: pseType 0 without
  pse runs; the Basic template's `SetPseAlibiParamsRegbase` returns early for pseType 2/3, so
  inner pse needs no S1 = S2;
- `SetQKVStartIdx` (arch35) reads qStartIdx and kvStartIdx each on its own (the arch32 tiling
  only both together) and fails when kvStartIdx - qStartIdx leaves int32;
- `AnalyzeDropOptionalInput`: a dropMask needs keepProb < 1; without one the kernel generates the
  keep mask (`attention/common/op_kernel/arch35/dropmask.h`, kernels/flash_attention/dropout.py);
- the arch35 kernels cast P and the output with `castTraitZero` (`vf/vf_basic_block_utils.h`:
  CAST_ROUND with SatMode::SAT, used by `vf_div_cast.h`): a finite output beyond the dtype's range
  saturates to its largest value instead of becoming inf.
Everything else the V2 interface reaches (layout and shape analysis, keepProb and pseType ranges,
pse and attenMask shapes, sparse-mode token handling, prefix, the alibi-compressed pse's causal
rule, D <= 768, the scale applied after QKᵀ, the fp32 softmax and its 8-lane buffers, CAST_ROUND of
P) reads the same in the arch35 source and the arch32 one; see docs/divergences/flash_attention_score.md.
"""

import numpy as np
from aclnn_emu.kernels.flash_attention.dropout import INTERLEAVE_ORDER


INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


V2_SEED_OFFSET = (0, 0)  # the seed and offset attributes aclnnFlashAttentionScoreV2 passes to L0


MAX_SPARSE_MODE = 6  # SparseMode::PREFIX_COMPRESS


TND_UNDEFINED = (
    "inputLayout TND without actual sequence lengths (V2 cannot pass them): the Ascend910_95 tiling "
    "(AnalyzeTndLayout) then reads the maximum of an empty length list, which is undefined; "
    "aclnn-emu fails it as the Atlas A2/A3 tiling does"
)


def on_arch35(env) -> bool:
    """The call runs on an Ascend910_95 part (the arch35 tiling and kernels)."""
    return env.soc == "Ascend910_95"


def empty_inputs(a) -> bool:
    """IsEmptyInputRegbase: query, key or value without elements (A2/A3's IsEmptyInput: query or key)."""
    return a.query.is_empty or a.key.is_empty or a.value.is_empty


def sparse_mode_error(a):
    """GetSparseInfo (arch35) checks the mode first, with or without an attenMask: (message, rule) or None."""
    if a.sparseMode > MAX_SPARSE_MODE:
        return f"Not support sparse mode of {a.sparseMode}.", "tiling.arch35.sparse_mode"
    return None


def start_indices(a):
    """SetQKVStartIdx (arch35): element 0 of each of qStartIdx and kvStartIdx, independently (0 when absent
    or empty). Returns ((qStartIdx,), (kvStartIdx,)) as the kernel's pse shift reads them, and an error
    (message, rule) when their difference leaves int32 (checked with or without pse)."""
    q = int(a.qStartIdxOptional[0]) if a.qStartIdxOptional else 0
    kv = int(a.kvStartIdxOptional[0]) if a.kvStartIdxOptional else 0
    error = None
    if not INT32_MIN <= kv - q <= INT32_MAX:
        error = (
            f"kvStartIdx - qStartIdx should >= {INT32_MIN} and <= {INT32_MAX}, but qStartIdx = {q}, kvStartIdx = {kv}.",
            "tiling.start_idx_range",
        )
    return ((q,), (kv,)), error


def dropout(drop, keep_prob, env, seeds=V2_SEED_OFFSET):
    """AnalyzeDropOptionalInput: (error or None, (seed, offset) of a kernel-generated keep mask or None).
    A dropMask needs keepProb < 1; without one, keepProb < 1 makes the kernel generate the mask from
    the seed and offset the entry point passes (`seeds`: V1-V3 pass (0, 0), V4 the caller's), with a portability
    warning for what is inferred of it."""
    dropout_on = bool(np.float32(keep_prob) < 1)
    if drop is not None and not dropout_on:
        return (
            "Dropmask parameter is invalid, please check keepProb: a dropMask needs keepProb < 1 on Ascend910_95",
            "tiling.arch35.drop_keep_prob",
        ), None
    if drop is not None or not dropout_on:
        return None, None
    env.warn(
        f"portability: keepProb {keep_prob:g} with no dropMask: on Ascend910_95 the kernel generates the "
        f"keep mask (Philox-4x32-7 of dropmask.h, seed {seeds[0]}, offset {seeds[1]}, as the entry point "
        f"passes them); the emulator follows dropmask.h but infers {INTERLEAVE_ORDER}, so the mask may differ "
        "bit for bit from the device's (its keep rate does not)"
    )
    return None, seeds
