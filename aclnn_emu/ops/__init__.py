"""The operators: one module per aclnn operator, each declaring `OP` (an ops.signature.Op)."""
import importlib

MODULES = ("flash_attention_score_grad", "prompt_flash_attention", "sparse_flash_attention_grad",
           "lightning_indexer_grad", "scatter_pa_kv_cache")


def all_ops():
    """Every operator's Op, in a fixed order (the shim exports them all)."""
    return [importlib.import_module(f"{__name__}.{name}").OP for name in MODULES]


def by_name(name: str):
    for op in all_ops():
        if name in (op.name, op.phase1, op.phase2):
            return op
    raise KeyError(f"unknown operator {name!r}; known: {', '.join(op.name for op in all_ops())}")
