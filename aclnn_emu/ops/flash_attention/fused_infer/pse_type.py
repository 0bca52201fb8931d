"""FusedInferAttentionScoreV5's pseType and start indices (CANN 9.0.0 on), per release and chip family.

V5's op_api hands both to the inner operator unchecked (aclnn_fused_infer_attention_score_v5.cpp). What reads them:
- 9.0.0, Atlas A2/A3: nothing. No tiling of the A2/A3 routes (fused_infer_attention_score_tiling.cpp, arch32/,
  the PFA and IFA tilings) reads the pse_type attribute or the q/kv_start_idx inputs, so the call runs as V4's.
- 9.0.0, Ascend950: PromptFlashAttentionTilingV2::SetAttributeInfo (the PFA route, before its empty-tensor return)
  and IFATilingV2::ProcessPseShift (the IFA route, after ProcessActualSeqLen) refuse a pseType other than 0, 2 or 3;
  2 and 3 select the alibi kernels (pse.h), the only reader of the start indices (IFATilingV2::SetQKVStartIdx is
  called from CheckAlibiPseShift alone). pseType 0 leaves them unread.
- 9.1.0: FiaInfoParser::GetPseShiftFlag refuses a pseType other than 0, on every Ascend950 call
  (TilingFusedInferAttentionScoreV4 parses first) and on A2/A3's FIA-V3 route (TilingFusedInferAttentionScoreV3);
  A2/A3's IFA, split-fuse and PFA routes do not read it. The start indices reach Ascend950's tiling data
  (FusedInferAttentionScoreTilingImpl, ReadFirstTensorValue) but only the alibi kernels read them.
Every refusal is a tiling failure (561002).
"""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.gaps import Gaps

from .entry import V5
from .failure import tiling as failure

ALIBI = (2, 3)  # PSE_INNER_MUL_ADD_TYPE, PSE_INNER_MUL_ADD_SQRT_TYPE: slopes the kernels expand
TILING_V2_TYPES = (0, *ALIBI)  # what 9.0.0's arch35 tilings take
PARSER_ONLY_ZERO = "fia.v5_pse_type_zero_only"  # versions.RULES
V5_PATHS = Gaps(
    V5,
    "not_implemented",
    {
        "pse_type": "pseType 2 or 3 (the alibi) on Ascend950 under CANN 9.0.0, after the tiling's checks, on the IFA "
        "route (an INT8/INT4 key), with a TND/NTD query, a block table, a query S of 1 or softmaxLse"
    },
)


def _value(a) -> int:
    return getattr(a, "pseType", 0)  # V4's own call has no such parameter: its wrapper passes 0


def check_parser(a, env) -> None:
    """FiaInfoParser::GetPseShiftFlag (9.1.0)."""
    if env.version.has(PARSER_ONLY_ZERO) and _value(a) != 0:
        raise failure("v5.pse_type", f"pse_type {_value(a)}: The value of pse_type must be 0")


def check_tiling_v2(a) -> None:
    """9.0.0's arch35 PFA and IFA tilings take 0, 2 or 3 (under 9.1.0 the parser has refused every value but 0
    before, and V1-V4 pass 0)."""
    value = _value(a)
    if value not in TILING_V2_TYPES:
        raise failure("v5.pse_type_v2", f"PseType({value}) is not support, pseType must be 0/2/3.")


def check_ifa_route(a) -> None:
    """IFATilingV2::ProcessPseShift: the value, then the alibi's first rules (CheckAlibiPseShiftTypeAndShape: FLOAT
    slopes, which the OpDef registers beside no INT8/INT4 key, so the kernel key has refused them before); the rest
    is not emulated there."""
    check_tiling_v2(a)
    if _value(a) not in ALIBI:
        return
    slopes = a.pseShiftOptional
    if slopes is None:
        raise failure("v5.ifa_alibi_null", "When pseType = 2/3, pseShift shape is null.")
    if slopes.dtype != DataType.ACL_FLOAT:
        raise failure(
            "v5.ifa_alibi_dtype",
            f"When pseType = 2/3, pse shift type must be float, but pse shift type = DT_{slopes.dtype.short}.",
        )
    V5_PATHS.refuse("pse_type", f"pseType {_value(a)} on the IFA route (an INT8/INT4 key)")
