"""The dense flash-attention family: FlashAttentionScore (forward), FlashAttentionScoreGrad,
PromptFlashAttention and its decode member IncreFlashAttention.

Shared by the operators of the family: `params` (the attributes a FlashAttentionScore kernel
takes), `pse` (the position term), `sparse_modes` (which scores a sparse mode masks) and `dropout`
(the keep-bit mask both directions read); `quant` is the int8 output path of PromptFlashAttention
and IncreFlashAttention."""
