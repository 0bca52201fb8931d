"""PromptFlashAttentionV2 on Ascend910_95: where its path differs from Atlas A2/A3.

The tiling registry (`common/op_host/fia_tiling_templates_registry.h` `DoTilingImpl`) picks the
tiling by `PlatformAscendC::GetSocVersion`, which maps both "Ascend910B" and "Ascend910_93" to
SocVersion ASCEND910B: `prompt_flash_attention_tiling.cpp` (PromptFlashAttentionTiling, registered
for ASCEND910B) runs on Atlas A2 and A3, `prompt_flash_attention_tiling_v2.cpp`
(PromptFlashAttentionTilingV2, registered for ASCEND910_95; the arch35 "regbase" kernels) on
Ascend910_95. The differences reproduced here:
- op_api `AnalysisInputShapeInfo`: on ASCEND910_95 D is never padded, so the private-format check
  (`CheckTensorFormat`, 161002 on A2/A3 when D needs padding) never runs;
- TilingV2 `CheckIO` -> `SetInputLayout`: only BSH, TND, BSND, BNSD and BNSD_BSND, so SH and NSD
  fail with 561103 where the A2/A3 tiling runs them (SH never reaches TilingV2's key-rank bound
  INPUT_QKV_SHAPE_MIN_DIMS = 3, which would reject its 2-D key too);
- TilingV2 has no base-API path: `CheckSparseMode` calls sparseMode 20-22 "out of range"
  (561103) like any mode outside 0-4, where the A2/A3 tiling runs them.
"""
from .pfa_common import tiling

LAYOUTS = ("BSH", "TND", "BSND", "BNSD", "BNSD_BSND")
SPARSE_MODES = (0, 1, 2, 3, 4)


def on_regbase(env) -> bool:
    """The call runs on an Ascend910_95 part (TilingV2 and the arch35 kernels)."""
    return env.soc.startswith("Ascend910_95")


def check_layout(a):
    """TilingV2 CheckIO: the layouts it knows (its first shape check)."""
    if a.inputLayout not in LAYOUTS:
        tiling("regbase.layout", f"Invalid input layout:{a.inputLayout}. Currently only TND/BSH/BNSD/BSND/BSND_BNSD "
               "layout are supported.")


def check_sparse_mode(a):
    """TilingV2 CheckSparseMode: no base-API modes."""
    if a.sparseMode not in SPARSE_MODES:
        tiling("regbase.sparse_mode", f"sparse_mode = {a.sparseMode} is out of range. Currently only 0,1,2,3,4 "
               "are supported.")
