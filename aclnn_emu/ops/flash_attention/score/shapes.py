"""aclnnFlashAttentionScoreV2: the shapes the op_api reads from its inputs, shared by the declaration (output
allocation), the checks and the launch."""

from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.params import SOFTMAX_LANES
from aclnn_emu.opdef.signature import OpError


NULLPTR, INVALID = status.ACLNN_ERR_PARAM_NULLPTR, status.ACLNN_ERR_PARAM_INVALID


FLOAT = (DataType.ACL_FLOAT,)


LAYOUT_RANKS = {"BSH": 3, "SBH": 3, "BSND": 4, "BNSD": 4, "TND": 3}


HEAD_DIM_MAX = 768


def _present(tensor):
    """Optional tensors with no dims count as absent (the tiling tests GetDimNum() == 0)."""
    return tensor if tensor is not None and tensor.ndim > 0 else None


class _Axes:
    """B, N1, N2, S1, S2, D, Dv as AnalysisAxis reads them (BSH/SBH: D = H1 / headNum)."""

    def __init__(self, a, layout):
        q, k, v = a.query.shape, a.key.shape, a.value.shape
        self.layout, self.n1 = layout, a.headNum
        if not len(q) == len(k) == len(v):  # AnalysisAxis would read dims the key or value lacks
            raise OpError(
                INVALID,
                f"query, key and value must have the rank of inputLayout {layout}: got {list(q)}, {list(k)}, {list(v)}",
                rule="shape.kv_rank",
            )
        if layout in ("BSH", "SBH"):
            self.d = q[2] // a.headNum
            if self.d == 0:  # AnalysisAxisForBsh returns with the other axes unset
                raise OpError(
                    INVALID,
                    f"qD and kD should be same, but got qD=0: query H {q[2]} < headNum {a.headNum}",
                    rule="shape.d_zero",
                )
            self.n2 = k[2] // self.d
            if self.n2 == 0:  # CANN divides by N2 here (SIGFPE); reject as a head-dim mismatch instead
                raise OpError(
                    INVALID, f"qD and kD should be same, but got qD={self.d} and key H {k[2]} < qD", rule="shape.qd_kd"
                )
            self.dk, self.dv = k[2] // self.n2, v[2] // self.n2
            self.b, self.s1, self.s2 = (q[0], q[1], k[1]) if layout == "BSH" else (q[1], q[0], k[0])
        elif layout == "TND":
            self.n2, self.d, self.dk, self.dv = k[1], q[2], k[2], v[2]
            self.b = self.s1 = self.s2 = 0
        else:
            bnsd = layout == "BNSD"
            self.b, self.n2 = q[0], k[1 if bnsd else 2]
            self.s1, self.s2 = q[2 if bnsd else 1], k[2 if bnsd else 1]
            self.d, self.dk, self.dv = q[3], k[3], v[3]
            self.query_heads = q[1 if bnsd else 2]
        if self.d != self.dk:
            raise OpError(INVALID, f"qD and kD should be same, but got qD={self.d} kD={self.dk}", rule="shape.qd_kd")
        if self.d < self.dv:
            raise OpError(INVALID, f"only support kD >= vD, but got kD={self.d} vD={self.dv}", rule="shape.vd")
        if self.d > HEAD_DIM_MAX:
            raise OpError(INVALID, f"Head dim must <= 768, but got {self.d}", rule="shape.d_max")


def _analyse_input(a, release) -> _Axes:
    """AnalysisInput of the op_api for `release` (a versions.Release)."""
    if a.headNum <= 0:
        raise OpError(INVALID, f"head_num must > 0, but got {a.headNum}", rule="head_num")
    layout = a.inputLayout
    if layout and release.has("fas.layout_upper_cased"):
        layout = layout.upper()
    if LAYOUT_RANKS.get(layout) != a.query.ndim:
        raise OpError(
            INVALID,
            f"not support input_layout {layout} with dim_num {a.query.ndim} (query); expected "
            "BSH/SBH/TND with 3 dims or BSND/BNSD with 4"
            + ("" if release.has("fas.layout_upper_cased") else ", upper case"),
            rule="shape.layout",
        )
    return _Axes(a, layout)


def _results(a, x: _Axes) -> dict:
    """Each result's (shape, dtype) as the L0 op infers them: softmax statistics [B,N1,S1,8] ([T1,N1,8] for
    TND) FLOAT,
    attentionOutOut query's shape with value's head size (BSH/SBH: H = N1 x Dv) and query's dtype."""
    lanes = (a.query.shape[0], x.n1, SOFTMAX_LANES) if x.layout == "TND" else (x.b, x.n1, x.s1, SOFTMAX_LANES)
    out = list(a.query.shape)
    out[-1] = x.n1 * x.dv if x.layout in ("BSH", "SBH") else x.dv
    return {
        "softmaxMaxOut": (lanes, DataType.ACL_FLOAT),
        "softmaxSumOut": (lanes, DataType.ACL_FLOAT),
        "attentionOutOut": (tuple(out), a.query.dtype),
    }
