"""The paged KV-cache operators (ScatterPaKvCache, GatherPaKvCache) and what their op modules share
(`common`); their kernels live in `aclnn_emu.kernels.kv_cache`."""
