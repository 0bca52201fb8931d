"""IFATilingV2's sparse rules for a query S above 1 with an INT8/INT4 key (Ascend910_95), and the
token window its antiquant kernels give each batch.

`ProcessAttenMaskSparsePFA` (incre_flash_attention_tiling_v2.cpp) runs for isPFAFlag_, mask or not:
`CheckMaskTypeAndShape` (a non-empty mask: dtypes only), then, outside GetMaxWorkspaceSize, `CheckSparseMode`
(`SetSparseModeData` first) and `CheckMaskCrossover` (`CheckMaskShapeCrossSparse`). Every failure is
GRAPH_FAILED. IncreFlashAttentionV4's context carries no sparse mode (nullptr: mode 0, tokens 0, the
default mode); FusedInferAttentionScore's hands its sparseMode, preTokens and nextTokens
(fused_infer_attention_score_tiling_v2.cpp, `ConvertContextToParamsIFA`).

`SetAttenMaskCompressMode` maps modes 0/1 to no compression (the user's mask read element by element
at its own rows and columns), 2 to left-up causal, 3 to right-down causal, 4 to band: those read the
2048 x 2048 template at the band's offsets (attenmask.h), which the emulator applies as the band
itself. `GetSparseParam` (infer_flash_attention_sparse.h) turns the tiling's tokens into each batch's:
right-down causal pre INT_MAX, next S2 - S1; band pre - S2 + S1, next + S2 - S1.
"""

from dataclasses import dataclass

INT_MAX = 2147483647  # SPARSE_MODE_INT_MAX (incre_flash_attention_tiling_v2.h)
MASK_TEMPLATE = 2048  # SPARSE_OPTIMIZE_ATTENTION_SIZE
NO_COMPRESS, LEFT_UP, RIGHT_DOWN, BAND = range(4)  # AttenMaskCompressMode
_COMPRESS = {0: NO_COMPRESS, 1: NO_COMPRESS, 2: LEFT_UP, 3: RIGHT_DOWN, 4: BAND}


@dataclass(frozen=True)
class Window:
    """The tiling's sparse mode and tokens as the kernel receives them."""

    mode: int = 0
    pre: int = 0
    nxt: int = 0

    @property
    def compress(self) -> int:
        return _COMPRESS.get(self.mode, NO_COMPRESS)

    def batch(self, act_s1: int, act_s2: int) -> tuple[int, int]:
        """GetSparseParam: (pre, next) of a batch of act_s1 query rows and act_s2 keys."""
        if self.compress == RIGHT_DOWN:
            return INT_MAX, act_s2 - act_s1
        if self.compress == BAND:
            return self.pre - act_s2 + act_s1, self.nxt + act_s2 - act_s1
        return self.pre, self.nxt


def check(a, fail, facts) -> Window:
    """ProcessAttenMaskSparsePFA; ``facts`` holds batch, s_q, s_max, has_mask, the output's dtype
    (out_int8) and max_workspace. The mask dtype rules (CheckMaskTypeAndShape, a FLOAT16 mask in
    CheckMaskCrossover) cannot fail: beside an INT8/INT4 key the OpDefs take bool/int8/uint8 masks only."""
    given = getattr(a, "sparseMode", None) is not None  # ifaContext_->sparseMode != nullptr
    mode = a.sparseMode if given else 0
    pre, nxt = (a.preTokens, a.nextTokens) if given else (0, 0)
    if facts.max_workspace:
        return Window(mode, pre, nxt)
    if given and mode not in _COMPRESS:
        fail("sparse.mode", f"sparse_mode = {mode} is out of range. Currently only 0,1,2,3,4 are supported.")
    pre, nxt = _mode_tokens(given, mode, pre, nxt, facts.has_mask)
    default = not given or mode == 0
    _token_rules(fail, facts, given and mode == 4 and facts.has_mask, default, pre, nxt)
    _crossover(a, fail, facts, given, mode, default)
    return Window(mode, pre, nxt)


def _mode_tokens(given, mode, pre, nxt, has_mask):
    """SetSparseModeData: the tokens clamped to +-INT_MAX, then the mode's window (a non-empty mask)."""
    pre, nxt = (max(-INT_MAX, min(t, INT_MAX)) for t in (pre, nxt))
    if has_mask and given:
        pre, nxt = {1: (INT_MAX, INT_MAX), 2: (INT_MAX, 0), 3: (INT_MAX, nxt)}.get(mode, (pre, nxt))
    if given and mode == 0 and not has_mask:
        pre, nxt = INT_MAX, INT_MAX
    return pre, nxt


def _token_rules(fail, facts, band, default, pre, nxt):
    """CheckSparseMode after SetSparseModeData (``band``: isBandMode, mode 4 with a mask)."""
    if band and pre < 0 and nxt < 0:
        fail(
            "sparse.band_negative",
            f"preTokens and nextTokens must not be negative in band mode, preTokens = {pre}, nextTokens = {nxt}.",
        )
    if pre < 0 and nxt < 0:
        fail(
            "sparse.both_negative",
            f"preTokens and nextTokens cannot neither be negative number, preTokens = {pre}, nextTokens = {nxt}.",
        )
    if -nxt > pre:
        fail(
            "sparse.token_order",
            f"nexttoken line should be higher than pretoken line, preTokens = {pre}, nextTokens = {nxt}.",
        )
    if default and nxt < 0 and -nxt >= facts.s_q:
        fail(
            "sparse.next_vs_s1",
            f"nextTokens absolute value should be smaller than length of q, nextTokens = {nxt}, length of q = "
            f"{facts.s_q}.",
        )
    if default and pre < 0 and -pre >= facts.s_max:
        fail(
            "sparse.pre_vs_s2",
            "preToken absolute value should be smaller than length of k and v (length of k and v + length of "
            f"prefix when enable prefix), preTokens = {pre}, seqLengthKV = {facts.s_max}, actualSharedPrefixLen = 0",
        )
    if facts.out_int8 and band and (pre < 0 or nxt < 0):
        fail(
            "sparse.int8_band_negative",
            f"When output type is int8, sparse mode = 4, preTokens ({pre}) or nextTokens ({nxt}) cannot be negative.",
        )


def _crossover(a, fail, facts, given, mode, default):
    """CheckMaskCrossover, then CheckMaskShapeCrossSparse."""
    if given and mode in (1, 2, 3, 4) and not facts.has_mask:
        fail("sparse.mask_required", f"attenMask should not be null when sparse_mode is {mode}.")
    if not facts.has_mask:
        return
    shape = tuple(a.attenMask.shape)
    if len(shape) not in (2, 3, 4):
        fail("pfa_mask_rank", f"attenMask dim({len(shape)}) must be 2 or 3 or 4!")
    batch = 1 if len(shape) == 2 else shape[0]
    heads = shape[1] if len(shape) == 4 else 1
    if default or mode == 1:
        if not (shape[-2] >= facts.s_q and shape[-1] >= facts.s_max and batch in (1, facts.batch) and heads == 1):
            fail(
                "pfa_mask_shape",
                f"attenMask batch({batch}) must be 1 or {facts.batch}, attenMask Q_S({shape[-2]}) "
                f"must be larger than or equal to sQ({facts.s_q}),attenMask KV_S({shape[-1]}) must be larger than "
                f"or equal to sK({facts.s_max}), please check",
            )
    elif (batch, heads, shape[-2], shape[-1]) != (1, 1, MASK_TEMPLATE, MASK_TEMPLATE):
        fail(
            "sparse.mask_template",
            f"attenMask shape must be (2048, 2048) or (1, 2048, 2048) or (1, 1, 2048, 2048) when sparse mode = {mode}.",
        )
