"""Emulated AscendCL runtime: init state, devices, contexts, streams, events, device memory."""

from . import lifecycle  # noqa: F401  (registers what the runtime does at process exit and fork)
