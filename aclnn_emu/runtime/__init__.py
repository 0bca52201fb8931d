"""Emulated AscendCL runtime: init state, devices, contexts, streams, events, device memory."""
