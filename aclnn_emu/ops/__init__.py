"""The operators: one module per aclnn operator, each declaring `OP` (an ops.signature.Op).

`aclnn_emu.ops.<Op>` (an operator's own name) is its Python function, generated on first use from
the declaration (aclnn_emu/functions.py): every operator listed here has one.
"""

import functools
import importlib

MODULES = (
    "flash_attention.flash_attention_score",
    "flash_attention.flash_attention_score_grad",
    "flash_attention.prompt_flash_attention",
    "flash_attention.prompt_flash_attention_v1",
    "flash_attention.prompt_flash_attention_v3",
    "flash_attention.incre_flash_attention",
    "flash_attention.incre_flash_attention_v1",
    "flash_attention.incre_flash_attention_v2",
    "flash_attention.incre_flash_attention_v3",
    "sparse_attention.sparse_flash_attention_grad",
    "sparse_attention.lightning_indexer_grad",
    "sparse_attention.lightning_indexer",
    "sparse_attention.sparse_flash_attention",
    "kv_cache.scatter_pa_kv_cache",
    "kv_cache.gather_pa_kv_cache",
)


@functools.cache
def all_ops() -> tuple:
    """Every operator's Op, in a fixed order (the shim exports them all)."""
    return tuple(importlib.import_module(f"{__name__}.{name}").OP for name in MODULES)


@functools.cache
def _names() -> dict:
    return {name: op for op in all_ops() for name in (op.name, op.phase1, op.phase2)}


def by_name(name: str):
    """The Op called `name` (its own name or either phase's function name); ae.run looks it up per call."""
    try:
        return _names()[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(op.name for op in all_ops())}") from None


def __getattr__(name: str):
    op = _names().get(name)
    if op is None or name != op.name:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}; the operators are {', '.join(op.name for op in all_ops())}"
        )
    from .. import functions  # the layer above: imported when a function is first asked for

    fn = globals()[name] = functions.function(op)
    return fn


def __dir__() -> list:
    return sorted(set(globals()) | {op.name for op in all_ops()})
