"""aclnnLightningIndexerGrad (attention/lightning_indexer_grad, CANN 8.5; hand-written op_api).

Checks follow reference §1.A in the source's order. The op_api maps every failure of the l0op
(infershape, kernel lookup, tiling) to 561103 ACLNN_ERR_INNER_NULLPTR; only null tensors give
161001, and an empty query returns success before any other check, with nothing written.
The maths is in kernels/sparse_attention/lightning_indexer_grad; this module turns the tensors into the flat rows
the NPU kernel addresses (dy and sparseIndices with row stride topK = dy's last dimension, key as
rows of D) and hands undefined hardware behaviour to the sanitizer.
"""

from aclnn_emu import status
from aclnn_emu.formats import ND_LIKE
from aclnn_emu.opdef.failures import fail, mapped
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.signature import Launch, OpError
from .entry import FLOATS, INT32, LAYOUTS, MAX_TOPK, OP
from .launch import _run


INNER = status.ACLNN_ERR_INNER_NULLPTR  # what the op_api returns for any l0op failure
l0op_failed = mapped(INNER, "")  # on prepare: infershape, kernel lookup and tiling failures


HEAD_DIM, GROUP_NUM, HEAD_NUM_K = 128, 64, 1  # the only shape the tiling accepts


SOCS = ("Ascend910B", "Ascend910_93")  # OpDef AddConfig: ascend910b, ascend910_93


# (C parameter, name in the source's messages), in CheckParams order: inputs, then outputs.
REQUIRED = [
    ("query", "query"),
    ("key", "key"),
    ("dy", "dy"),
    ("spareIndices", "sparseIndices"),
    ("weights", "weights"),
    ("dQuery", "dqOut"),
    ("dKey", "dkOut"),
    ("dWeights", "dweightsOut"),
]


SEQ_LENGTHS = ("actucalSeqLengthsQuery", "actucalSeqLengthsKey")


OUTPUT_OF = {"dQuery": "query", "dKey": "key", "dWeights": "weights"}


INFERRED = Gaps(
    OP,
    "inferred",
    {
        "format": "a tensor with a private format (the registered kernel takes ND only; read here as ND)",
        "out_dtype": "a gradient whose dtype differs from its input's (the result is cast)",
        "out_shape": "a gradient shaped unlike its input but of its size (stored in element order)",
    },
    code=INNER,
)


def _check_not_null(a) -> None:
    for param, source_name in REQUIRED:
        if getattr(a, param) is None:
            raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{source_name} must not be nullptr.", rule=f"null.{param}")


def _check_infershape(a) -> None:
    """lightning_indexer_grad_infershape.cpp: layout, then the query rank it implies."""
    if a.layout is None:
        fail("layout.null", "layout must not be nullptr (CANN 8.5 does not check it and reads through it)")
    if a.layout not in LAYOUTS:
        fail("layout.value", f"The attr layout_query should be TND or BSND, but got {a.layout}.")
    rank = 4 if a.layout == "BSND" else 3
    if a.query.ndim != rank:
        fail("query.rank", f"Layout {a.layout}, queryDims ({a.query.ndim}) must be {rank}!")


def _check_kernel(a, env) -> None:
    """lightning_indexer_grad_def.cpp: SoCs, paired BF16/FP16 combos, INT32 indices, ND formats."""
    if env.soc not in SOCS:
        fail(
            "soc",
            f"LightningIndexerGrad has no kernel for {env.soc}; it is registered for {' and '.join(SOCS)} only",
            chips=SOCS,
        )
    if a.query.dtype not in FLOATS:
        fail("dtype.query", f"query dtype {a.query.dtype.short} is not supported; expected BF16 or FLOAT16")
    for name in ("key", "dy", "weights"):
        if getattr(a, name).dtype != a.query.dtype:
            fail(
                f"dtype.{name}",
                f"{name} dtype {getattr(a, name).dtype.short} must equal the query dtype "
                f"{a.query.dtype.short} (the registered kernels pair them)",
            )
    for name in ("spareIndices",) + SEQ_LENGTHS:
        tensor = getattr(a, name)
        if tensor is not None and tensor.dtype not in INT32:
            fail(
                f"dtype.{name}",
                f"{name} dtype {tensor.dtype.short} is not supported; the registered kernel takes INT32 only",
            )
    for p in OP.tensors:
        tensor = getattr(a, p.name)
        if tensor is not None and tensor.format not in ND_LIKE:
            INFERRED.warn(env, "format", f"{p.name} has format {tensor.format.short}")


def _check_tiling(a) -> tuple[int, int]:
    """lightning_indexer_grad_tiling.cpp DoTiling; returns (seqlenK, topK)."""
    key_dims = 3 if a.layout == "BSND" else 2  # tiling reads key dims 1-2 (BSND) or 0-1 (TND)
    if a.key.ndim < key_dims:
        fail(
            "key.rank",
            f"Layout {a.layout} needs key with at least {key_dims} dims, got {a.key.ndim} "
            "(CANN 8.5 would divide by a zero headNumK)",
        )
    if a.layout == "TND" and a.actucalSeqLengthsQuery is None:
        fail(
            "tnd.actual_seq_query",
            "Layout TND needs actualSeqLengthsQuery (CANN 8.5 reads its size through a null pointer)",
        )
    head_dim, head_num_q = a.query.shape[-1], a.query.shape[-2]
    seq_k, head_num_k = a.key.shape[key_dims - 2], a.key.shape[key_dims - 1]
    group_num = head_num_q // head_num_k if head_num_k else 0
    if (head_dim, group_num, head_num_k) != (HEAD_DIM, GROUP_NUM, HEAD_NUM_K):
        fail(
            "tiling.shape",
            f"only support headDim is {HEAD_DIM}, groupNum is {GROUP_NUM}, headNumK is "
            f"{HEAD_NUM_K}, but current headDim is {head_dim}, groupNum is {group_num}, "
            f"headNumK is {head_num_k}",
        )
    return seq_k, a.dy.shape[-1] if a.dy.ndim else 0


def _check_outputs(a, env) -> None:
    """The l0op computes into tensors shaped and typed like query/key/weights, then ViewCopy's them
    into the caller's outputs; what ViewCopy rejects is not in the reference."""
    for out_name, in_name in OUTPUT_OF.items():
        out, like = getattr(a, out_name), getattr(a, in_name)
        if out.dtype != like.dtype:
            INFERRED.warn(env, "out_dtype", f"{out_name} is {out.dtype.short}, {in_name} {like.dtype.short}")
        if out.shape != like.shape:
            if out.numel != like.numel:
                fail(
                    f"out.shape.{out_name}",
                    f"{out_name} shape {list(out.shape)} cannot hold the gradient "
                    f"of {in_name}, shape {list(like.shape)}",
                )
            INFERRED.warn(env, "out_shape", f"{out_name} {list(out.shape)}, {in_name} {list(like.shape)}")


def _warn_ignored(a, env) -> None:
    if a.sparseMode not in (0, 3):
        env.warn(
            f"sparseMode {a.sparseMode} is not 0 or 3; CANN 8.5 does not check it and applies the "
            "causal rule of mode 3 to every non-zero value"
        )
    if a.layout == "BSND" and any(getattr(a, name) is not None for name in SEQ_LENGTHS):
        env.warn("actualSeqLengths are ignored in layout BSND")


def workspace_size(dk_elements: int, aic_cores: int) -> int:
    """The tiling's workspace: library reserve, fp32 dk, four per-core ping-pong buffers, a reserve.

    The library reserve (16 MiB) is the platform's; `aic_cores` is the part's cube-core count.
    """
    mib, aic, align = 1 << 20, aic_cores, 512
    per_core = [
        HEAD_DIM * MAX_TOPK * 2 * 2,
        GROUP_NUM * MAX_TOPK * 4 * 2,
        GROUP_NUM * MAX_TOPK * 2 * 2,
        HEAD_DIM * MAX_TOPK * 4 * 2,
    ]
    offset = (16 * mib + dk_elements * 4 + align) // align * align
    for size in per_core:
        offset = (offset + aic * size + align) // align * align
    return offset + 16 * mib


@OP.prepare
@l0op_failed
def prepare(a, env):
    _check_not_null(a)
    if a.query.is_empty:
        return Launch.nothing()
    _check_infershape(a)
    _check_kernel(a, env)
    seq_k, top_k = _check_tiling(a)
    _check_outputs(a, env)
    _warn_ignored(a, env)
    if a.layout == "BSND":
        dk_elements = a.query.shape[0] * seq_k * HEAD_NUM_K * HEAD_DIM
    else:
        dk_elements = a.key.shape[0] * HEAD_NUM_K * HEAD_DIM
    return Launch(workspace_size(dk_elements, env.part.aic_cores), lambda workspace: _run(a, seq_k, top_k, dk_elements))
