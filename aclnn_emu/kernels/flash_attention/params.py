"""The attributes a FlashAttentionScore call (forward or backward) hands its kernel."""

from dataclasses import dataclass

INT32_MAX = 2147483647
SOFTMAX_LANES = 8  # softmaxMax/Sum hold 8 replicated floats per row; the backward reads lane j % 8


@dataclass(frozen=True)
class FaParams:
    scale: float
    keep_prob: float
    head_num: int
    layout: str
    pre_tokens: int = INT32_MAX
    next_tokens: int = INT32_MAX
    sparse_mode: int = 0
    pse_type: int = 1
    prefix: tuple | None = None
    q_start_idx: tuple | None = None
    kv_start_idx: tuple | None = None
    # Forward only: rows whose every score is masked output 0 and store sum = FLT_MAX
    # (AA_INVALID_LINE_HIGH_PRECISION); otherwise they average V with P = 1 (sum = key count).
    invalid_line: bool = False
    # (seed, offset) when the kernel generates its keep mask itself (Ascend910_95 with keepProb < 1
    # and no dropMask; dropout.PhiloxDropMask); None reads the dropMask tensor.
    generated_dropout: tuple | None = None
    # Forward only: the output cast saturates (the arch35 kernels' SatMode::SAT): finite values beyond
    # the output dtype's range become its largest value instead of inf.
    saturate: bool = False
