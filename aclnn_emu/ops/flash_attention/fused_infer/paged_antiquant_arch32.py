"""An INT8 key/value cache beside an fp16 query with a block table on the Atlas A2/A3 PFA route
(op_host/prompt_flash_attention_tiling.cpp; the KV antiquant of kv_antiquant_pfa with page
attention). enableKvAntiquant needs an fp16 query and an INT8 key without keyAntiquantScale /
valueAntiquantScale, or with them and query S > 16 (RunBigKernelTilingWithParams drops MSD then).

Its rules after the page-attention ones (paged_prompt_arch32), every failure 561002, in the
source's order:
- CheckAntiquantParamsShape: a 1-D combined antiquantScale is per tensor (its [2] rules as without a
  table); anything else, a NULL one included, is per channel, which beside a block table reads the
  key's and the value's own parameters: keyAntiquantMode and valueAntiquantMode 0, then
  CheckPerchannelAntiquantParamsShape on the key's scale (not NULL) and offset, then the value's,
  with the first axis 1;
- CheckPAAntiquantSupportScenarios: per channel; a BSH or BSND layout; innerPrecise 1 (high
  performance, its raw value); sparse mode 3 with a non-empty attenMask; no pseShift. (Its fp16 /
  INT8 rule cannot fail once enableKvAntiquant is on.)

The kernel (prompt_flash_attention_s1s2_bns1_x910.h Bmm1Antiquant / Bmm2Antiquant with
MM_PA_ANTIQUANT) copies each key/value tile row by row from the blocks of blockTable (the 3-D cache
[blocks, blockSize, H2] of a BSH/BSND query), dequantises it with AscendAntiQuant in fp16 with the
side's own per-channel row (KV head n / G) and its offset or 0, and runs the fp16 PFA kernels on
the tiles: the dense route's maths on the gathered cache (kv_antiquant_pfa.Dequantised).
"""

from aclnn_emu.opdef.generated import attr_int32

from . import antiquant_params_pfa
from .failure import tiling

HIGH_PERFORMANCE = 1
SPARSE_RIGHT_DOWN = 3
LAYOUTS = ("BSH", "BSND")


def params(a, row: int) -> tuple:
    """(scale, offset) the PA kernels read for the key (``row`` 0) or the value (row 1)."""
    if row == 0:
        return a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional
    return a.valueAntiquantScaleOptional, a.valueAntiquantOffsetOptional


def check_params(a) -> None:
    """CheckAntiquantParamsShape's per-channel branch beside a block table."""
    k_mode, v_mode = a.keyAntiquantMode, a.valueAntiquantMode
    if k_mode != 0 or v_mode != 0:
        raise tiling(
            "pfa_paged.antiquant_modes",
            f"keyAntiquantMode({k_mode}) or valueAntiquantMode({v_mode}) is not correct, keyAntiquantMode and "
            "valueAntiquantMode only support per-token and per-channel when keyAntiquantScale or valueAntiquantScale "
            "is enabled",
        )
    for row, side in enumerate(("key", "value")):
        scale, offset = params(a, row)
        outer = f"; {side} antiquant scale or offset shape is wrong"
        antiquant_params_pfa.check(a, scale, offset, 1, f"pfa_paged.{side}_", outer)


def check_scenarios(a) -> None:
    """CheckPAAntiquantSupportScenarios."""
    combined = a.antiquantScaleOptional
    if combined is not None and combined.ndim == 1:
        raise tiling(
            "pfa_paged.antiquant_per_tensor",
            "not support antiquant when blockTable is not null and antiquant mode is not perchannel",
        )
    if (a.inputLayout or "BSH") not in LAYOUTS:
        raise tiling("pfa_paged.antiquant_layout", "not support antiquant when layout is not BSH or BSND")
    if int(a.innerPrecise) != HIGH_PERFORMANCE:
        raise tiling("pfa_paged.antiquant_precise", "PA perchannel antiquant only support high performance")
    sparse = attr_int32(a.sparseMode)
    if sparse != SPARSE_RIGHT_DOWN:
        raise tiling(
            "pfa_paged.antiquant_sparse",
            f"PA perchannel antiquant only support sparse mode 3, but input sparseMode is ({sparse})",
        )
    mask = a.attenMaskOptional
    if mask is None or mask.is_empty:
        raise tiling(
            "pfa_paged.antiquant_mask", "PA perchannel antiquant only support sparse mode 3, maskShape is null"
        )
    if a.pseShiftOptional is not None:
        raise tiling("pfa_paged.antiquant_pse", "PA perchannel antiquant not support PSE")
