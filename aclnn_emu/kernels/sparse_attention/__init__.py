"""The DeepSeek sparse-attention family: SparseFlashAttentionGrad and LightningIndexerGrad.

`select` turns top-k indices into key spans per query row (parallel.OrderedCommit makes the
gradients' accumulation order deterministic across threads), and `lightning_indexer_plan` gives
each query row its batch and key range."""
