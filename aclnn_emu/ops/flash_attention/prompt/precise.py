"""pseShift and innerPrecise: what PromptFlashAttentionV3 adds to the shared PFA path.

V1 and V2 pass the inner op no pseShift and innerPrecise 1 (`aclnn_prompt_flash_attention.cpp`,
`_v2.cpp`), so these rules run only for V3, at the places the source runs them:
- op_api `CheckTensorDataType`: the pse dtype follows the query (FLOAT16 -> FLOAT16, BF16 -> BF16,
  INT8 -> FLOAT16), 161002; `CheckTensorFormat` (D padded only) takes no private pse format
  (prompt_flash_attention._check_formats);
- A2/A3 tiling (`prompt_flash_attention_tiling.cpp` RunBigKernelTilingWithParams): the base-API
  modes take innerPrecise 0 or 1 only (bf16 forced to 0; CheckBaseApiOptionalInput); elsewhere
  bit 1 asks for the row-invalid correction and bit 0 picks high performance (1) or high precision
  (0), 4 (approximate) is refused on Ascend910B-class parts, TND takes no pse, an fp16 pse forces
  high precision; `CheckMaskType` refuses an fp16 mask in fp16 high precision and with the
  correction; `CheckPseShiftTypeAndShape` after the mask shape;
- Ascend910_95 TilingV2 (`CheckSingleAttribute`): `CheckPseShiftTypeAndShape` (a non-empty pse
  only) after the actual lengths, then `CheckInnerPrecise` (0-3; the kernels always run high
  precision); `CheckTNDLayoutCrossover` refuses a TND pse.
All tiling failures are 561103. The kernels then add the pse after the scale
(kernels/flash_attention/prompt_flash_attention.py) and apply the correction (launch.py).
"""

from dataclasses import dataclass

from aclnn_emu.kernels.flash_attention import prompt_flash_attention as pfa
from aclnn_emu.kernels.flash_attention.pse import PseSource
from ..common import BF16, BYTE_MASKS, F16, I8, dtype_name as name, invalid, tiling

PSE_DTYPE = {F16: F16, BF16: BF16, I8: F16}  # query dtype -> the pse dtype the op takes
HIGH_PRECISION, HIGH_PERFORMANCE, APPROXIMATE = 0, 1, 4
UINT64 = 1 << 64


@dataclass(frozen=True)
class Precise:
    """What the tiling made of innerPrecise (and the pse): the fp16 high-precision template and the
    row-invalid correction."""

    high_precision: bool = False
    row_invalid: bool = False


DEFAULT = Precise()  # innerPrecise 1, no pse: what V1 and V2 pass


def pse_of(a):
    """The call's pseShift (None for V1 and V2, which drop it)."""
    return getattr(a, "pseShift", None)


def inner_precise(a) -> int:
    return getattr(a, "innerPrecise", HIGH_PERFORMANCE)


def check_pse_dtype(a):
    """op_api CheckTensorDataType, after the query/key/value dtype rules."""
    pse = pse_of(a)
    want = PSE_DTYPE.get(a.query.dtype)
    if pse is not None and want is not None and pse.dtype != want:
        invalid(
            "dtype.pseShift",
            f"pseShift dataType({name(pse)}) is invalid, should be {want.short} when q/k/v is {a.query.dtype.short}",
        )


def check_base_api(a):
    """CheckBaseApiOptionalInput's innerPrecise rule, and what the emulator does not model there."""
    precise = HIGH_PRECISION if a.query.dtype == BF16 else inner_precise(a)
    if precise not in (HIGH_PRECISION, HIGH_PERFORMANCE):
        tiling("base_api.inner_precise", "innerPrecise need to be HIGH_PRECISION or HIGH_PERFORMANCE")
    return precise


def base_api_precision(a, precise, tokens: bool):
    """The base-API kernels' roundings: an fp16 query with innerPrecise 0 runs the high-precision
    kernels (TilingGetBaseApiTilingKeyAttentionAscendC: key + 2000000000, or the MLA high-precision
    one), the rest the high-performance fp16 / the bf16 kernels. With a pseShift the key drops its
    + 2000000000 and fp16 innerPrecise 0 and bf16 run `PromptFlashAttentionBaseApiHighPrecisionV`
    instead of `…HighPrecisionNoMask`, whose P and output casts are the same."""
    if a.query.dtype == F16 and precise == HIGH_PRECISION:
        return pfa.BASE_API_HIGH_PRECISION
    return pfa.BASE_API_MLA if tokens else pfa.BASE_API


def check_a2(a, env) -> Precise:
    """The A2/A3 tiling's innerPrecise block (after the base-API branch), in the source's order."""
    precise = inner_precise(a) % UINT64  # the tiling holds it as uint64
    if precise > APPROXIMATE:
        env.warn(f"innerPrecise [{precise}] should be 0,1,2,3,4 (the tiling logs this and reads its bits)")
    row_invalid = bool(precise >> 1 & 1)
    if precise != APPROXIMATE:
        precise = HIGH_PERFORMANCE if precise & 1 else HIGH_PRECISION
    pse = pse_of(a)
    if a.inputLayout == "TND" and pse is not None:
        tiling("pse.tnd", "When Layout is TND, not support PSE")
    if pse is not None and a.query.dtype == F16 and precise == HIGH_PERFORMANCE:
        precise = HIGH_PRECISION  # "the mode is forcibly switched to high-precision"
    if precise == APPROXIMATE:
        tiling("inner_precise.approximate", "not support APPROXIMATE_COMPUTATION when curShortSocName is Atlas A2")
    return Precise(high_precision=a.query.dtype == F16 and precise == HIGH_PRECISION, row_invalid=row_invalid)


def check_a2_mask(a, precise: Precise):
    """CheckMaskType's rules beyond V2's, in its order around the bf16 rule (``bf16_rule``)."""
    mask = a.attenMask
    if mask is None:
        return
    if precise.high_precision and mask.dtype not in BYTE_MASKS:
        tiling(
            "mask.fp16_high_precision",
            f"invalid maskType dtype[{name(mask)}], maskType should be bool, int8 or uint8 when fp16 high-precision mode",
        )


def check_row_invalid_mask(a, precise: Precise):
    """CheckMaskType, last: the correction takes no fp16 mask."""
    mask = a.attenMask
    if mask is not None and precise.row_invalid and mask.dtype == F16:
        tiling(
            "mask.row_invalid_fp16",
            f"invalid maskType dtype[{name(mask)}], maskType should not be float16 when innerPrecise = 2 or 3",
        )


def check_pse_shape(a, batch, heads, s1, s2, arch35=False):
    """CheckPseShiftTypeAndShape of either tiling: dtype against the query, rank 4, [1|B, N, >=S1, >=S2].
    A2/A3 checks the dtype of an empty pse too; TilingV2 skips an empty pse altogether."""
    pse = pse_of(a)
    if pse is None or (arch35 and pse.is_empty):
        return
    q = a.query.dtype
    if PSE_DTYPE.get(q) is not None and pse.dtype != PSE_DTYPE[q]:
        tiling(
            "pse.dtype",
            f"q type is {q.short.lower()}, but pse shift type is not {PSE_DTYPE[q].short.lower()}, "
            f"pse shift type = {name(pse)}",
        )
    if not arch35 and heads == 0:
        tiling("pse.heads_zero", "num head is zero")
    if pse.is_empty:
        return
    if pse.ndim != 4:
        tiling("pse.rank", f"pse shift shape must be 4 dimension, rather than {pse.ndim} dimension")
    pb, pn, ps1, ps2 = pse.shape
    if pb not in (1, batch) or pn != heads or ps1 < s1 or ps2 < s2:
        tiling(
            "pse.shape",
            f"pse shift shape must be [1 or {batch}, {heads}, >={s1}, >={s2}], but now it is [{pb}, {pn}, {ps1}, {ps2}]",
        )


def check_arch35(a) -> Precise:
    """TilingV2 CheckInnerPrecise: 0-3 only; bit 1 is the correction; the kernels are high precision."""
    precise = inner_precise(a)
    if precise >= APPROXIMATE or precise < 0:
        tiling("regbase.inner_precise", f"innerPrecise [{precise}] should be 0,1,2,3, please check.")
    return Precise(high_precision=True, row_invalid=bool(precise >> 1 & 1))


def check_arch35_tnd(a):
    """CheckTNDLayoutCrossover (CheckCrossoverAttribute, after the mask crossover)."""
    pse = pse_of(a)
    if a.inputLayout == "TND" and pse is not None and not pse.is_empty:
        tiling("regbase.pse_tnd", "When layout is TND, pse is not supported!")


def kernel_inputs(a, precise: Precise, precision):
    """(precision, reader of the PseSource, row_invalid) for the kernel call. The arch35 correction
    runs only with a user mask outside band mode (`RowInvalid`: isHasAtten, not isBand); the A2/A3
    var-len (TND) kernel has none."""
    arch35 = precision == pfa.ARCH35
    if precise.high_precision and not arch35:
        precision = pfa.X910_HIGH_PRECISION
    row_invalid = (
        precise.row_invalid and a.sparseMode != 4 if arch35 else precise.row_invalid and a.inputLayout != "TND"
    )
    pse = pse_of(a)
    if pse is None or pse.is_empty:
        return precision, None, row_invalid

    def read():
        values = pse.read("pseShift")  # [1|B, N, >=S1, >=S2]: read at [b, n, i, j]
        return PseSource(values, 0, values.shape[2], values.shape[3])

    return precision, read, row_invalid
