"""Entry points that are thin adapters over another one's inner call (PromptFlashAttention V1/V3,
IncreFlashAttention V1-V3): their parameters are a selection of the base's, and the call runs the
base's shared path with the arguments the adapter fixes."""

import dataclasses
import types

from ..signature import Op, OpError


def entry(name: str, header: str, base: Op, names, added=(), docs=None, like=None) -> Op:
    """An Op whose parameters are ``names`` taken from ``base`` (in that order), plus ``added``
    Params placed before the base parameter they name ({before: Param}); ``docs`` rewrites the
    help of some ({name: doc}); ``like`` replaces an output's allocation rule ({name: fn})."""
    by_name = {p.name: p for p in base.params}
    before = dict(added)
    params = []
    for n in names:
        if n in before:
            params.append(before[n])
        p = by_name[n]
        if docs and n in docs:
            p = dataclasses.replace(p, doc=docs[n])
        if like and n in like:
            p = dataclasses.replace(p, like=like[n])
        params.append(p)
    return Op(name, header, params)


def forwarded(a, base: Op, **fixed) -> types.SimpleNamespace:
    """The base's arguments for this call: the adapter's own, every other base parameter set by
    ``fixed`` (the values the adapter passes the inner call)."""
    values = {p.name: fixed[p.name] if p.name in fixed else getattr(a, p.name) for p in base.params}
    extra = {k: v for k, v in fixed.items() if k not in values}
    return types.SimpleNamespace(**values, **extra)


def adapter(name: str, header: str, base: Op, run, fixed: dict, names=None, docs=None, base_like=None) -> Op:
    """An entry point with no checks of its own: ``names`` (default: every base parameter not in
    ``fixed``, pseShift kept when fixed, as the headers keep it) taken from ``base``; a call runs
    ``run(base arguments, env)`` with ``fixed`` filling the rest; ``base_like`` the base's output
    allocation rule."""
    if names is None:
        names = [p.name for p in base.params if p.name not in fixed or p.name == "pseShift"]
    like = None if base_like is None else {"attentionOut": attention_out_like(base_like, base, **fixed)}
    op = entry(name, header, base, names, docs=docs, like=like)
    op.prepare(lambda a, env: run(forwarded(a, base, **fixed), env))
    return op


def attention_out_like(base_like, base: Op, **fixed):
    """An adapter's rule for its output's allocation: the base's rule on the forwarded arguments."""

    def like(a):
        try:
            return base_like(forwarded(a, base, **fixed))
        except (AttributeError, OpError):
            return None

    return like
