"""The dense flash-attention family: FlashAttentionScoreGrad and PromptFlashAttention.

`pse` (the position term) and `sparse_modes` (which scores a sparse mode masks) are shared by the
operators of the family; `quant` is PromptFlashAttention's int8 output path."""
