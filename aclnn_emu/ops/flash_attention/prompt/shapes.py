"""aclnnPromptFlashAttentionV2: the shapes the op_api reads from its inputs, shared by the declaration (output
allocation), the checks and the launch."""

from dataclasses import dataclass
from ..common import NZ_N0, invalid


@dataclass
class Shapes:
    """AnalysisInputShapeInfo of the op_api: axes as the layout string reads them, and D padding."""

    layout: str  # what the op_api recognised: SH, BSH, TND, BSND, NSD, BNSD, BNSD_BSND (9.x: NTD)
    n2: int = 0
    s2: int = 0
    d: int = 0
    dv: int = 0
    pad: int = 0
    pad_v: int = 0
    need_pad: bool = False


def _axes(layout, q, k, v, heads, kv_heads, ntd=False) -> Shapes:
    """AnalysisAxis: later matches override earlier ones, as in the source. `ntd`: the 9.x op_api, which also
    reads a 3-D layout starting with NTD (versions.RULES "pfa.ntd_layout_in_op_api")."""
    found = None
    if len(q) == 2 and layout.startswith("SH"):
        d = q[1] // heads
        if d == 0:
            invalid(
                "shape.d_zero",
                f"Input query shape is (S[{q[0]}], H[{q[1]}]), input num_head N is {heads}, "
                f"corresponding headsize D = H/N = 0, is invalid.",
            )
        found = Shapes("SH", k[1] // d, k[0], d, v[1] // (kv_heads or heads))
    if layout.startswith("BSH"):
        nz = len(q) == 4 and q[3] == NZ_N0
        # A 4-D BSH query with dim 3 == 16 is read as FRACTAL_NZ [B, H/16, S, 16] for D; n2 and s2
        # are then taken from the ND positions regardless (AnalysisAxis overwrites them).
        hidden_q, hidden_v = (q[1] * NZ_N0, v[1] * NZ_N0) if nz else (q[2], v[2]) if len(q) >= 3 else (0, 0)
        d = hidden_q // heads
        if d == 0:
            invalid(
                "shape.d_zero",
                f"Input query shape is {list(q)}, input num_head N is {heads}, "
                "corresponding headsize D = H/N = 0, is invalid.",
            )
        found = Shapes("BSH", k[2] // d, k[1], d, hidden_v // (kv_heads or heads))
    if len(q) == 3 and layout.startswith("TND"):
        found = Shapes("TND", k[1], 1, q[2], v[2])
    if ntd and len(q) == 3 and layout.startswith("NTD"):
        found = Shapes("NTD", k[0], 1, q[2], v[2])
    if len(q) == 4 and layout.startswith("BSND"):
        found = Shapes("BSND", k[2], k[1], q[3], v[3])
    if len(q) == 3 and layout.startswith("NSD"):
        found = Shapes("NSD", k[0], k[1], q[2], v[2])
    if len(q) == 4 and layout.startswith("BNSD"):
        found = Shapes("BNSD_BSND" if layout[:9] == "BNSD_BSND" else "BNSD", k[1], k[2], q[3], v[3])
    if found is None:
        invalid(
            "shape.layout", f"PFA inputLayout only supports BSH, BNSD, BSND, BNSD_BSND, TND, current layout: {layout}"
        )
    return found


def _expected_out_shape(a, shapes):
    q, heads = a.query.shape, a.numHeads
    layout = a.inputLayout
    if layout == "BNSD":
        return (q[0], q[1], q[2], shapes.dv)
    if layout in ("BSND", "BNSD_BSND"):
        return (q[0], q[2], q[1], shapes.dv) if layout == "BNSD_BSND" else (q[0], q[1], q[2], shapes.dv)
    if layout == "BSH":
        return (q[0], q[1], shapes.dv * heads)
    if layout == "TND":
        return (q[0], q[1], shapes.dv)
    return q
