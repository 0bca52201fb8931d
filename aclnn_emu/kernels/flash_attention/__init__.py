"""The dense flash-attention family: FlashAttentionScoreGrad, PromptFlashAttention and its decode
member IncreFlashAttention.

`pse` (the position term) and `sparse_modes` (which scores a sparse mode masks) are shared by the
operators of the family; `quant` is the int8 output path of PromptFlashAttention and IncreFlashAttention."""
