"""The one failure tiling code raises, and the one place each operator gives it a status code.

A tiling check fails with GRAPH_FAILED inside L0; what the caller sees depends on the entry point
around it (PromptFlashAttention's op_api returns 561103, a generated entry point 561002). So the
checks raise `TilingFailure(rule, message)`, free of codes, and each operator wraps its tiling in
`mapped(code, prefix)`, which turns it into the OpError the caller sees.
"""

from contextlib import contextmanager

from .signature import OpError


class TilingFailure(Exception):
    """A tiling check failed: `rule` names the check, `message` says what the source's log says."""

    def __init__(self, rule: str, message: str, chips=()):
        super().__init__(message)
        self.rule, self.message, self.chips = rule, message, tuple(chips)


def fail(rule: str, message: str, chips=()):
    """Raise the tiling failure (`chips`: the other chips on which the rejected value is registered)."""
    raise TilingFailure(rule, message, chips)


@contextmanager
def mapped(code: int, prefix: str, rule_prefix: str = ""):
    """Run a tiling (a `with` block, or a decorator on the tiling function); its TilingFailure becomes
    OpError(code, prefix + message, rule_prefix + rule)."""
    try:
        yield
    except TilingFailure as failure:
        raise OpError(code, prefix + failure.message, rule=rule_prefix + failure.rule, chips=failure.chips) from None
