"""The dense flash-attention operators (hand-written op_api in CANN); kernels in
`aclnn_emu.kernels.flash_attention`."""
