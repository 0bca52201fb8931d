"""Random-number kernels: the dropout bit masks of CANN's random operators."""
