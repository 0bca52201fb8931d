"""The operators: `aclnn_emu.ops.<Op>` is each entry point's Python function (aclnn_emu/functions.py,
generated from its declaration), and the subpackages are the operator families, one package per
operator (`ops/<family>/<operator>/`: entry.py, checks.py, launch.py). The framework they use is
aclnn_emu.opdef; tests/test_python_ops.py checks that this list matches its registry.
"""

from ..functions import function
from ..opdef.registry import by_name

FlashAttentionScoreV2 = function(by_name("FlashAttentionScoreV2"))
FlashAttentionScore = function(by_name("FlashAttentionScore"))
FlashAttentionScoreV3 = function(by_name("FlashAttentionScoreV3"))
FlashAttentionVarLenScore = function(by_name("FlashAttentionVarLenScore"))
FlashAttentionVarLenScoreV2 = function(by_name("FlashAttentionVarLenScoreV2"))
FlashAttentionVarLenScoreV3 = function(by_name("FlashAttentionVarLenScoreV3"))
FlashAttentionVarLenScoreV4 = function(by_name("FlashAttentionVarLenScoreV4"))
FlashAttentionVarLenScoreV5 = function(by_name("FlashAttentionVarLenScoreV5"))
FlashAttentionScoreV4 = function(by_name("FlashAttentionScoreV4"))
FlashAttentionScoreGradV2 = function(by_name("FlashAttentionScoreGradV2"))
FlashAttentionScoreGrad = function(by_name("FlashAttentionScoreGrad"))
FlashAttentionScoreGradV3 = function(by_name("FlashAttentionScoreGradV3"))
FlashAttentionScoreGradV4 = function(by_name("FlashAttentionScoreGradV4"))
FlashAttentionUnpaddingScoreGrad = function(by_name("FlashAttentionUnpaddingScoreGrad"))
FlashAttentionUnpaddingScoreGradV2 = function(by_name("FlashAttentionUnpaddingScoreGradV2"))
FlashAttentionUnpaddingScoreGradV3 = function(by_name("FlashAttentionUnpaddingScoreGradV3"))
FlashAttentionUnpaddingScoreGradV4 = function(by_name("FlashAttentionUnpaddingScoreGradV4"))
FlashAttentionUnpaddingScoreGradV5 = function(by_name("FlashAttentionUnpaddingScoreGradV5"))
PromptFlashAttention = function(by_name("PromptFlashAttention"))
PromptFlashAttentionV2 = function(by_name("PromptFlashAttentionV2"))
PromptFlashAttentionV3 = function(by_name("PromptFlashAttentionV3"))
IncreFlashAttention = function(by_name("IncreFlashAttention"))
IncreFlashAttentionV2 = function(by_name("IncreFlashAttentionV2"))
IncreFlashAttentionV3 = function(by_name("IncreFlashAttentionV3"))
IncreFlashAttentionV4 = function(by_name("IncreFlashAttentionV4"))
FusedInferAttentionScore = function(by_name("FusedInferAttentionScore"))
FusedInferAttentionScoreV2 = function(by_name("FusedInferAttentionScoreV2"))
FusedInferAttentionScoreV3 = function(by_name("FusedInferAttentionScoreV3"))
FusedInferAttentionScoreV4 = function(by_name("FusedInferAttentionScoreV4"))
FusedInferAttentionScoreV5 = function(by_name("FusedInferAttentionScoreV5"))
SparseFlashAttentionGrad = function(by_name("SparseFlashAttentionGrad"))
LightningIndexerGrad = function(by_name("LightningIndexerGrad"))
LightningIndexer = function(by_name("LightningIndexer"))
SparseFlashAttention = function(by_name("SparseFlashAttention"))
ScatterPaKvCache = function(by_name("ScatterPaKvCache"))
GatherPaKvCache = function(by_name("GatherPaKvCache"))
DropoutGenMask = function(by_name("DropoutGenMask"))
DropoutGenMaskV2 = function(by_name("DropoutGenMaskV2"))

__all__ = [
    "FlashAttentionScoreV2",
    "FlashAttentionScore",
    "FlashAttentionScoreV3",
    "FlashAttentionVarLenScore",
    "FlashAttentionVarLenScoreV2",
    "FlashAttentionVarLenScoreV3",
    "FlashAttentionVarLenScoreV4",
    "FlashAttentionVarLenScoreV5",
    "FlashAttentionScoreV4",
    "FlashAttentionScoreGradV2",
    "FlashAttentionScoreGrad",
    "FlashAttentionScoreGradV3",
    "FlashAttentionScoreGradV4",
    "FlashAttentionUnpaddingScoreGrad",
    "FlashAttentionUnpaddingScoreGradV2",
    "FlashAttentionUnpaddingScoreGradV3",
    "FlashAttentionUnpaddingScoreGradV4",
    "FlashAttentionUnpaddingScoreGradV5",
    "PromptFlashAttention",
    "PromptFlashAttentionV2",
    "PromptFlashAttentionV3",
    "IncreFlashAttention",
    "IncreFlashAttentionV2",
    "IncreFlashAttentionV3",
    "IncreFlashAttentionV4",
    "FusedInferAttentionScore",
    "FusedInferAttentionScoreV2",
    "FusedInferAttentionScoreV3",
    "FusedInferAttentionScoreV4",
    "FusedInferAttentionScoreV5",
    "SparseFlashAttentionGrad",
    "LightningIndexerGrad",
    "LightningIndexer",
    "SparseFlashAttention",
    "ScatterPaKvCache",
    "GatherPaKvCache",
    "DropoutGenMask",
    "DropoutGenMaskV2",
]
