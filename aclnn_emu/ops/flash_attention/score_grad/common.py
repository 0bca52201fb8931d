"""aclnnFlashAttentionScoreGradV2: what the op_api checks, the arch35 checks and the launch share (shape reading,
failure shapes, constants)."""

import math
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.failures import fail, mapped
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import shape_dim
from aclnn_emu.opdef.signature import OpError
from ..common import VALUE_ROWS
from .entry import OP


NULLPTR, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID


SOFTMAX_LANES = 8


COMPRESSED_MASK = {2: (2048, 2048), 3: (2048, 2048), 4: (2048, 2048), 6: (3072, 2048)}


ALIBI_ROWS = 1024


INT32_MAX = 2147483647


V2_SEED, V2_OFFSET = 0, 0  # what aclnnFlashAttentionScoreGradV2 passes to l0op::FlashAttentionScoreGrad


def seeds(a) -> tuple[int, int]:
    """The (seed, offset) the L0 op gets: V4's attributes, (0, 0) from the other entry points."""
    return getattr(a, "seed", V2_SEED), getattr(a, "offset", V2_OFFSET)


# Calls the Ascend910_95 (ARCH35) tiling accepts whose kernel behaviour the source does not settle.
UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "quant_query": "Ascend910_95: a HIFLOAT8/FLOAT8 query (registered; V2 passes no dequant scales and "
        "ProcessQuantInfo either runs the quantised kernel without them or, for FP8, returns no defined "
        "status)",
        "keep_prob": "Ascend910_95: keepProb <= 0 (the tiling has no range check; the kernel's 1/keepProb is not "
        "established)",
        "grad_shape": "Ascend910_95: dy, attentionInOptional or value shaped unlike query / keyIn (no shape check in the "
        "tiling; how the kernel indexes them is not established)",
        "grad_head_dim": "a dy or attentionInOptional shaped unlike query but for a last dimension of value's head dim (the "
        "tilings compare it with query's only: IsSameShapeButValueDLeEqD, CheckAttentionInShape): the kernels read "
        "value's head dim per row, past the rows of a smaller one and across the rows of a larger one",
        "value_rows": VALUE_ROWS,
        "mask_window": "Ascend910_95: an attenMask covering S1 x S2 in elements but not in rows and columns (the arch35 "
        "CheckAttenMaskShape accepts it; how its kernel reads it is not established)",
    },
)


def _names(dtypes) -> str:
    return "/".join(d.name for d in dtypes)


def _present(tensor):
    """Scalar (0-dim) optional tensors count as absent (ContiguousTensorWithCheck)."""
    return tensor if tensor is not None and tensor.ndim > 0 else None


# A tiling / infershape / kernel-selection failure: the op_api reports it as 161001. On the op's
# prepare and on its entry points' own checks.
tiling_failed = mapped(NULLPTR, suffix=" (FAG tiling failed; the op_api reports it as ACLNN_ERR_PARAM_NULLPTR)")


class _Shape:
    """B, N1, N2, S1, S2, D of the call, read the way GetInputShapeInfo and the tiling read them."""

    def __init__(self, a, layout):
        q, k, v = a.query.shape, a.keyIn.shape, a.value.shape
        self.layout = layout
        if layout in ("BSH", "SBH"):
            self.d = q[2] // a.headNum
            if self.d == 0:
                raise OpError(
                    INVALID,
                    f"The dimension of D is zero: query H {q[2]} // headNum {a.headNum} is 0; "
                    "query H must be at least headNum",
                    rule="shape.d_zero",
                )
            self.n1, self.n2 = a.headNum, k[2] // self.d
            if self.n2 == 0:  # CANN divides by N2 here (SIGFPE); reject as a head-dim mismatch instead
                raise OpError(
                    INVALID, f"qD and kD should be same, but got qD={self.d} and key H {k[2]} < qD", rule="shape.qd_kd"
                )
            self.kd, self.vd = k[2] // self.n2, v[2] // self.n2
            self.b, self.s1, self.s2 = (q[0], q[1], k[1]) if layout == "BSH" else (q[1], q[0], k[0])
        elif layout == "TND":
            self.d, self.n1, self.n2, self.kd, self.vd = q[2], q[1], k[1], k[2], v[2]
        elif len(q) > 3:  # the key and value may have 3 dims: past their rank gert::Shape reads 0
            self.d, self.kd, self.vd = q[3], shape_dim(k, 3), shape_dim(v, 3)
            bnsd = layout == "BNSD"
            self.b, self.n1, self.s1 = q[0], q[1 if bnsd else 2], q[2 if bnsd else 1]
            self.n2, self.s2 = k[1 if bnsd else 2], k[2 if bnsd else 1]
        else:
            raise OpError(
                INVALID,
                f"The dimension of the tensor whose input is BNSD/BSND is less than 4: query has "
                f"{len(q)} dims with inputLayout {layout!r}; expected 4 dims, or layout BSH/SBH",
                rule="shape.rank4",
            )
        if self.d != self.kd:
            raise OpError(INVALID, f"qD and kD should be same, but got qD={self.d} kD={self.kd}", rule="shape.qd_kd")
        if self.d < self.vd:
            raise OpError(
                INVALID,
                f"The headDim of value should be smaller than headDim of key: got vD={self.vd}, kD={self.kd}",
                rule="shape.vd",
            )


def _check_drop_mask(a, s, keep):
    drop = _present(a.dropMaskOptional)
    if drop is None:
        fail("tiling.drop_null", f"FAG keepProb [{keep:f}], dropMask can not be nullptr")
    if drop.dtype != DataType.ACL_UINT8:
        fail("tiling.drop_dtype", f"dropMask dtype {drop.dtype.name}: only support uint8")
    need = math.ceil(s.b * s.n1 * s.s1 * s.s2 / 8)
    if drop.numel < need:
        fail(
            "tiling.drop_size",
            f"FAG Input dropMask shapeSize is invalid, it should not be less than {need}: got "
            f"{drop.numel} bytes for B*N1*S1*S2 = {s.b * s.n1 * s.s1 * s.s2} bits",
        )


def _check_softmax_shapes(a, s):
    """CheckSoftmaxMaxShape / CheckSoftmaxSumShape (the same in arch32 and arch35)."""
    lanes = [s.b, a.headNum, s.s1, SOFTMAX_LANES]
    for name, tensor in (("softmaxMax", a.softmaxMaxOptional), ("softmaxSum", a.softmaxSumOptional)):
        if list(tensor.shape) != lanes:
            fail(
                f"tiling.{name}_shape",
                f"The shape of {name} is invalid, got {tuple(tensor.shape)}, should be (b,n1,s1,8) = {tuple(lanes)}",
            )


def _check_atten_mask_info(a, s):
    """The attenMask's rank and leading dims (SetAttenMaskShapeType in both tilings)."""
    mask = _present(a.attenMaskOptional)
    if mask is None:
        return
    if mask.ndim == 4:
        lead = tuple(mask.shape[:2])
        if lead not in ((s.b, a.headNum), (s.b, 1), (1, 1)):
            fail(
                "tiling.mask_lead",
                f"not support attenMaskShape dim0: {lead[0]}, dim1: {lead[1]}; expected [B,N1,..], "
                f"[B,1,..] or [1,1,..] with B={s.b}, N1={a.headNum}",
            )
    elif mask.ndim != 2:
        fail("tiling.mask_rank", f"not support attenMaskShape dim num: {mask.ndim}; expected 2 or 4")


def _check_prefix(a, s):
    """Mode 6 needs B prefix values (SetPrefixSparseParams); A2/A3 ask only with an attenMask."""
    prefix = a.prefixOptional
    if prefix is None or len(prefix) != s.b:
        fail(
            "tiling.prefix",
            "Sparse capability must be supported under prefix compress mode, pls check input params: "
            f"prefixOptional must hold B={s.b} values, got {None if prefix is None else len(prefix)}",
        )


def _check_pse(a, s, tokens):
    """`tokens`: (preTokens, nextTokens) as the tiling sees them when it checks the alibi pse shape."""
    pse = _present(a.pseShiftOptional)
    if pse is None:
        if a.pseType != 1:
            fail("tiling.pse_null", f"Get PseInput is nullptr, but pseType is not default=1, now pseType={a.pseType}.")
        return
    if a.pseType in (0, 1):
        if pse.dtype != a.query.dtype:
            fail(
                "tiling.pse_dtype",
                f"FAG invalid pse dtype[{pse.dtype.name}], should be same with query's dtype {a.query.dtype.name}",
            )
        shape = tuple(pse.shape)
        full = {(s.b, s.n1, s.s1, s.s2), (s.b, s.n1, 1, s.s2), (1, s.n1, s.s1, s.s2)}
        alibi = {(s.b, s.n1, ALIBI_ROWS, s.s2), (1, s.n1, ALIBI_ROWS, s.s2)}
        causal = s.s1 == s.s2 >= ALIBI_ROWS and tokens[0] >= s.s1 and tokens[1] == 0
        if shape not in full and not (shape in alibi and causal):
            fail(
                "tiling.pse_shape",
                f"The shape of pse{list(shape)} is invalid or tocken[{a.preTokens},{a.nextTokens}] not "
                f"casual; expected [B,N1,S1,S2], [B,N1,1,S2], [1,N1,S1,S2], or [B|1,N1,1024,S2] with "
                "S1 == S2 >= 1024, preTokens >= S1 and nextTokens == 0",
            )
        return
    if pse.dtype != DataType.ACL_FLOAT or tuple(pse.shape) not in ((s.n1,), (s.b, s.n1)):
        fail(
            "tiling.pse_inner",
            f"pse inner mode, unsupported pse shape {list(pse.shape)} / dtype {pse.dtype.name}: pseType "
            f"{a.pseType} takes FLOAT slopes [N1] or [B,N1] = [{s.b},{s.n1}]",
        )


def _check_atten_mask_shape(a, s, mode, arch35: bool = False):
    """CheckAttenMaskShape of the template that finally runs. ARCH35 (arch35 CheckAttenMaskShape):
    an uncompressed mask needs only rows x columns >= S1 x S2."""
    mask = _present(a.attenMaskOptional)
    if mask is None:
        return
    last = tuple(mask.shape[-2:])
    need = COMPRESSED_MASK.get(mode, (s.s1, s.s2))
    if arch35 and mode not in COMPRESSED_MASK and last[0] * last[1] >= s.s1 * s.s2:
        if last[0] < s.s1 or last[1] < s.s2:
            UNESTABLISHED.refuse("mask_window", f"attenMask [{last[0]},{last[1]}] against S1 x S2 = [{s.s1},{s.s2}]")
    elif last != need:
        fail(
            "tiling.mask_shape",
            f"atten mask shape [{last[0]},{last[1]}] is invalid: sparseMode {mode} needs the last two "
            f"dims {list(need)}",
        )


def refuse_grad_head_dim(a, s) -> None:
    """dy and attentionIn rows of value's head dim, as the kernels read them (UNESTABLISHED grad_head_dim)."""
    row = s.vd * s.n1 if s.layout in ("BSH", "SBH") else s.vd  # dy and attentionIn are query-shaped
    for name, tensor in (("dy", a.dy), ("attentionInOptional", a.attentionInOptional)):
        if tensor.ndim and (tensor.shape[-1] != row or tuple(tensor.shape[:-1]) != tuple(a.query.shape[:-1])):
            UNESTABLISHED.refuse("grad_head_dim", f"{name} {list(tensor.shape)}, value head dim {s.vd}")
