"""Ascend910_95: TilingFusedInferAttentionScoreV2 (op_host/arch35/fused_infer_attention_score_tiling_v2.cpp
DoOpTiling): numHeads not 0, a query that is empty only with an empty output, softmaxLse [B, N, S, 1]
([T, N, 1] for TND) when requested, then a query whose dtype differs from the key's (antiquant) to
IFATilingV2 and every other call, S = 1 included, to PromptFlashAttentionTilingV2; every failure is
561002."""

from aclnn_emu.opdef.generated import attr_uint32

from . import delegate, pse_type
from .failure import tiling as failure


def tiling(a, env):
    pse_type.check_parser(a, env)  # 9.1.0's TilingFusedInferAttentionScoreV4 parses before DoOpTiling
    if attr_uint32(a.numHeads) == 0:
        raise failure("arch35.heads", "numHeads is 0")
    if a.query.is_empty and not a.attentionOut.is_empty:
        raise failure("arch35.empty_query", "query is empty but attentionOut is not")
    if a.query.dtype != a.key.items[0].dtype:
        return delegate.incre(a, env)
    return delegate.prompt(a, env)
