"""The random operators (ops-math `random/`): dropout_gen_mask."""
