"""aclnnSparseFlashAttentionGrad (attention/sparse_flash_attention_grad, CANN 8.5; generated aclnn).

There is no hand-written op_api in 8.5: the entry point is generated from the OpDef, so the checks
are the framework's (required nulls, all-outputs-empty, kernel key) followed by the tiling function
``GetBaseShapeInfo`` + ``DoCastTiling`` (reference indexer-sparse §0.1, §2.A). Shapes are read the
way the tiling reads them: every "last dim" is taken at the *query's* last index.
"""

import numpy as np
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.failures import fail
from aclnn_emu.opdef.generated import tiling_failed
from aclnn_emu.opdef.generated import attr_int32, framework_checks
from aclnn_emu.opdef.signature import Launch
from .entry import LAYOUTS, OP
from .launch import Plan, SELECTED_BLOCK_COUNT, _run


SOCS = ("Ascend910B", "Ascend910_93")  # the OpDef registers ascend910b and ascend910_93 only


_HALF = {DataType.ACL_BF16: "bf16", DataType.ACL_FLOAT16: "fp16"}


_FLOAT_IO = (
    "query",
    "key",
    "value",
    "dOut",
    "out",
    "queryRopeOptional",
    "keyRopeOptional",
    "dQueryOut",
    "dKeyOut",
    "dValueOut",
    "dQueryRopeOutOptional",
    "dKeyRopeOutOptional",
)


# The OpDef's two paired combinations: every float tensor bf16, or every one fp16.
COMBOS = OP.kernels(
    [
        dict(
            {n: dt for n in _FLOAT_IO},
            sparseIndices=DataType.ACL_INT32,
            softmaxMax=DataType.ACL_FLOAT,
            softmaxSum=DataType.ACL_FLOAT,
            actualSeqLengthsQueryOptional=DataType.ACL_INT32,
            actualSeqLengthskvOptional=DataType.ACL_INT32,
        )
        for dt in _HALF
    ]
)


def _last(tensor, rank, name, what):
    """dim[rank - 1] of ``tensor``: tiling indexes every tensor with the query's rank."""
    if not 0 < rank <= tensor.ndim:
        fail(
            f"rank.{name}",
            f"{name} has {tensor.ndim} dims but query has {rank}: the tiling reads "
            f"{what} from {name}'s dim {rank - 1}, which it does not have",
        )
    return tensor.shape[rank - 1]


def _c_div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    return abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)


@OP.prepare
@tiling_failed
def prepare(a, env):
    if not framework_checks(a, OP, COMBOS, env, SOCS):
        return Launch.nothing()
    plan = _tiling(a, env.part)
    return Launch(workspace_size=workspace_size(plan, env.part), run=lambda workspace: _run(a, plan))


def _tiling(a, part) -> Plan:
    """GetBaseShapeInfo, then the zero checks of DoCastTiling, in the source's order (all 561002)."""
    q, k, v = a.query, a.key, a.value
    rank = q.ndim
    count = _last(a.sparseIndices, rank, "sparseIndices", "the selected block count")
    if count != SELECTED_BLOCK_COUNT:
        fail(
            "selected_block_count",
            f"SparseFlashAttentionGrad only support selected_block_count=2048 now, but got "
            f"selected_block_count={count} (last dim of sparseIndices)",
        )
    mode = attr_int32(a.sparseMode)
    if mode not in (0, 3):
        fail("sparse_mode", f"SparseFlashAttentionGrad only support sparse_mode=0 or 3, now sparse_mode={mode}")
    d, dk = _last(q, rank, "query", "head_dim"), _last(k, rank, "key", "head_dim")
    dv = _last(v, rank, "value", "head_dim")
    if d != dk:
        fail("head_dim_qk", f"head_dim of Query[{d}] should be equal to head_dim of Key[{dk}]")
    if d < dv:
        fail("head_dim_v", f"head_dim of Query[{d}] can not less than head_dim of Value[{dv}]")
    layout = "BSND" if a.layoutOptional is None else a.layoutOptional
    if layout not in LAYOUTS:
        fail("layout", f"SparseFlashAttentionGrad only support TND or BSND layout, now layout is {layout}")
    if rank != len(layout):
        fail(
            "layout_rank",
            f"SparseFlashAttentionGrad layout dims is not equal to the input's dim, now the query of dim is {rank}",
        )
    dr = _rope_dim(a, rank)
    if layout == "TND":
        if a.actualSeqLengthsQueryOptional is None:
            fail(
                "tnd_actual_seq_q_null",
                "layout TND needs actualSeqLengthsQueryOptional (CANN 8.5's tiling dereferences "
                "the missing tensor and crashes the process)",
            )
        seq = a.actualSeqLengthsQueryOptional
        b = seq.shape[0] if seq.ndim else 1
        t1, t2, n2 = q.shape[0], k.shape[0], k.shape[1]
        s1, s2 = t1, t2
        n1 = q.shape[1]
    else:
        b, s1, s2, n2, n1 = q.shape[0], q.shape[1], k.shape[1], k.shape[2], q.shape[2]
        t1, t2 = b * s1, b * s2
    if n2 == 0:
        fail("n2_zero", "key headNum is 0")
    g = _c_div(n1, n2)
    if g <= 0:
        fail("g", f"g (N1 / N2) should be larger than 0, but got g={g}")
    n1 = n2 * g
    if n2 != 1 or n1 > 128 or n1 & (n1 - 1):
        fail(
            "heads", f"SparseFlashAttentionGrad only support n2=1 and n1=1/2/4/8/16/32/64/128, but got n2={n2} n1={n1}"
        )
    # CheckDtypeValid (softmax dtypes, out dtype == query dtype) cannot fail here: the kernel-key
    # lookup before tiling already admits only the registered combinations.
    if layout == "TND":
        _check_tnd_shapes(a, t1, n1, d, dv, n2, g)
    _check_cast_tiling(d + dr, dv, part.ub_bytes)
    return Plan(
        layout, b, s1, s2, t1, t2, g, d, dv, dr, float(np.float32(a.scaleValue)), attr_int32(a.sparseBlockSize), mode
    )


def _rope_dim(a, rank) -> int:
    """Rope is on only when both rope inputs are given; their last dims must then agree."""
    qr, kr = a.queryRopeOptional, a.keyRopeOptional
    if qr is None or kr is None:
        return 0
    q_dim, k_dim = _last(qr, rank, "queryRopeOptional", "Dr"), _last(kr, rank, "keyRopeOptional", "Dr")
    if q_dim != k_dim:
        fail("rope_dim", f"SparseFlashAttentionGrad headDim of qRope and kRope should be equal ({q_dim} vs {k_dim})")
    return k_dim


def _check_tnd_shapes(a, t1, n1, d, dv, n2, g):
    """CheckTndShapeValid: no zero sizes; softmax stats [N2, T1, G]; out like query with value's D."""
    if 0 in (t1, n1, d, dv, n2):
        fail("tnd_zero", f"input shape error, got 0 in tnd({t1},{n1},{d}) or tnd({t1},{n1},{dv})")
    for name in ("softmaxMax", "softmaxSum"):
        shape = getattr(a, name).shape
        if len(shape) != 3:
            fail(f"tnd_{name}_rank", f"The shape of {name} is invalid, got {len(shape)} dimensions")
        if shape != (n2, t1, g):
            fail(f"tnd_{name}_shape", f"The shape of {name} is invalid, got {shape}, should be {(n2, t1, g)}")
    out, q, v = a.out.shape, a.query.shape, a.value.shape
    if len(out) != len(q) or len(out) != len(v):
        fail(
            "tnd_out_rank", f"The dimnum of attentionIn {len(out)} should be equal to query {len(q)} and value {len(v)}"
        )
    for i in range(len(q) - 1):
        if out[i] != q[i]:
            fail("tnd_out_shape", f"The dim {i} of attentionIn shape is invalid, got {out[i]}, should be {q[i]}")
    if out[-1] != v[-1]:
        fail("tnd_out_head_dim", f"The head_dim of attentionIn shape is invalid, got {out[-1]}, should be {v[-1]}")


def _check_cast_tiling(d_total, dv, ub_bytes):
    """DoCastTiling: the post (cast) step must fit at least one row of dq/dk and of dv in UB."""
    d_align, dv_align = -(-d_total // 16) * 16, -(-dv // 16) * 16
    reserved = d_align // 16 * 32
    ub_base = (ub_bytes - 2 * reserved) // 10 // 256 * 256
    if d_align <= 0 or ub_base // 2 // d_align * d_total == 0:
        fail("q_post_base", f"qPostBaseNum is 0 (head dim {d_total} does not fit the post step)")
    if dv_align <= 0 or ub_base // 2 // dv_align * dv == 0:
        fail("v_post_base", f"vPostBaseNum is 0 (value head dim {dv} does not fit the post step)")


def workspace_size(p: Plan, part) -> int:
    """The tiling's GetWorkspaceSize: 32 MiB reserved + per-core gather/matmul buffers + fp32 dq/dk/dv."""
    align = lambda n: -(-n // 512) * 512
    d_align, dv_align = -(-(p.d + p.dr) // 16) * 16, -(-p.dv // 16) * 16
    used_cores = min(p.t1 if p.layout == "TND" else p.b * p.s1, part.aic_cores)
    mm12 = align(p.g * 512 * 4) * 2
    selected = align(512 * (p.d + p.dr) * 2) * 3 + align(512 * p.dv * 2) * 2
    rows_k = p.t2 if p.layout == "TND" else p.b * p.s2
    dq = align((p.t1 if p.layout == "TND" else p.b * p.s1) * p.g * d_align * 4)
    dk = align(rows_k * d_align * 4)
    dv = align(rows_k * (p.dv if p.layout == "TND" else dv_align) * 4)
    return 32 * 1024 * 1024 + (selected + 2 * mm12) * used_cores + dq + dk + dv
