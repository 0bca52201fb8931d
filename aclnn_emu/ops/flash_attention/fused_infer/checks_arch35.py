"""Ascend910_95: TilingFusedInferAttentionScoreV2 (op_host/arch35/fused_infer_attention_score_tiling_v2.cpp
DoOpTiling): numHeads not 0, a query that is empty only with an empty output, softmaxLse [B, N, S, 1]
([T, N, 1] for TND) when requested, then a query whose dtype differs from the key's (antiquant) to
IFATilingV2 and every other call, S = 1 included, to PromptFlashAttentionTilingV2; every failure is
561002. softmaxLse on the PFA route: the PromptFlashAttentionV2 launch writes attentionOut, a second
pass of the FIA-V3 kernel maths (fp32 scores, as the arch35 kernels) writes softmaxLse."""

from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import attr_uint32
from aclnn_emu.opdef.signature import Launch

from . import delegate, launch
from .entry import V4
from .failure import tiling as failure
from .route import Route

INFERRED = Gaps(
    V4,
    "inferred",
    {
        "arch35_lse": "softmaxLse on Ascend910_95 is log(sum exp) + max of the fp32 scores; the arch35 kernels' "
        "value for rows without keys or with every key masked is not established here (the FIA-V3 kernels' "
        "values are written)"
    },
)


def tiling(a, env):
    if attr_uint32(a.numHeads) == 0:
        raise failure("arch35.heads", "numHeads is 0")
    if a.query.is_empty and not a.attentionOut.is_empty:
        raise failure("arch35.empty_query", "query is empty but attentionOut is not")
    if a.query.dtype != a.key.items[0].dtype:
        return delegate.incre(a, env)
    if not a.lse_wanted:
        return delegate.prompt(a, env)
    route = Route(a, env)
    axes, (qd, _, vd) = route.shape_facts()
    want = (axes.s, axes.n, 1) if route.base == "TND" else (axes.b, axes.n, axes.s, 1)
    if tuple(a.softmaxLse.shape) != want:
        raise failure("arch35.softmax_lse", f"softmaxLse {list(a.softmaxLse.shape)} does not match {list(want)}")
    out = delegate.prompt(a, env, lse_elsewhere=True)
    INFERRED.warn(env, "arch35_lse")
    lse = launch.fia_v3(a, env, route, axes, qd, vd, write_out=False)

    def run(workspace):
        if out.run is not None:
            out.run(workspace)
        lse.run(workspace)

    return Launch(out.workspace_size, run)
