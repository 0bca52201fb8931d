"""Every operator package, in a fixed order: each exports OPS, the Ops its entry.py declares."""

import functools
import importlib

PACKAGES = (
    "flash_attention.score",
    "flash_attention.score_grad",
    "flash_attention.prompt",
    "flash_attention.incre",
    "flash_attention.fused_infer",
    "sparse_attention.sparse_flash_attention_grad",
    "sparse_attention.lightning_indexer_grad",
    "sparse_attention.lightning_indexer",
    "sparse_attention.sparse_flash_attention",
    "kv_cache.scatter",
    "kv_cache.gather",
    "random.dropout_gen_mask",
)


@functools.cache
def all_ops() -> tuple:
    """Every entry point's Op, in a fixed order (the shim exports them all)."""
    return tuple(op for name in PACKAGES for op in importlib.import_module(f"aclnn_emu.ops.{name}").OPS)


@functools.cache
def _names() -> dict:
    return {name: op for op in all_ops() for name in (op.name, op.phase1, op.phase2, *op.undeclared_phase1)}


def by_name(name: str):
    """The Op called `name` (its own name, either phase's function name or an undeclared phase 1's);
    ae.run looks it up per call."""
    try:
        return _names()[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(op.name for op in all_ops())}") from None
