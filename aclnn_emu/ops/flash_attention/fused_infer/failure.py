"""The operator's one tiling failure: every check of its tilings returns GRAPH_FAILED, which the
generated entry point reports as 561002 (`checks.prepare` maps it)."""

from aclnn_emu.opdef.failures import TilingFailure


def tiling(rule: str, message: str) -> TilingFailure:
    return TilingFailure(rule, message)
