"""The DeepSeek sparse-attention operators (generated entry points in CANN); kernels in
`aclnn_emu.kernels.sparse_attention`."""
