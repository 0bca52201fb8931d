"""What the PromptFlashAttentionV2 checks share: dtype sets, limits and the two error shapes.

Failures of the op_api's own checks are 161002; a failure anywhere inside L0 (infershape, tiling,
kernel selection) makes the L0 wrapper return nullptr, which the op_api maps to 561103.
"""

from ... import status
from ...dtypes import DataType
from ...formats import Format
from ...kernels.flash_attention import prompt_flash_attention as pfa
from ..signature import OpError

F16, BF16, I8 = DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8
FP32, U8, BOOL, U64 = DataType.ACL_FLOAT, DataType.ACL_UINT8, DataType.ACL_BOOL, DataType.ACL_UINT64
QKV_DTYPES = (F16, BF16, I8)
QUANT_OUT_PAIRS = ((I8, F16), (F16, I8), (BF16, I8))  # (query, attentionOut) allowed to differ
MASK_DTYPES = (F16, I8, U8, BOOL)
BYTE_MASKS = (BOOL, I8, U8)
PRIVATE_FORMATS = (Format.ACL_FORMAT_NC1HWC0, Format.ACL_FORMAT_FRACTAL_NZ, Format.ACL_FORMAT_NDC1HWC0)
TILING_LAYOUTS = ("SH", "BSH", "NSD", "BSND", "BNSD", "BNSD_BSND", "TND", "NTD_TND")
BIG = pfa.SPARSE_INT_MAX
NZ_N0 = 16  # FRACTAL_NZ inner block
COMPRESSED_MASK = 2048  # modes 2-4 take the canonical 2048 x 2048 triangle
MAX_BATCH, MAX_HEADS, MAX_D, MAX_GROUP = 65536, 256, 512, 64
MAX_SH_BATCH = 128
BASE_API_MODES = (20, 21, 22)  # CheckBaseAPISupportScenarios: the base-API kernels, no mask
BASE_API_MAX_D = 256  # MLA_THRESHOLD: above it (or D != Dv) the base-API path takes the MLA kernels
MAX_VAR_LEN_BATCH = 4096  # MAX_VAR_LEN_SEQ_LEN: TND actual-length arrays
KV_MIN_RANK = 2  # prompt_flash_attention_tiling.cpp INPUT_QKV_SHAPE_MIN_DIMS (the A2/A3 tiling)


def invalid(rule, message):
    raise OpError(status.ACLNN_ERR_PARAM_INVALID, message, rule=rule)


def tiling(rule, message):
    """A failure inside L0 (infershape, tiling, kernel selection): the L2 code maps it to 561103."""
    raise OpError(status.ACLNN_ERR_INNER_NULLPTR, f"PromptFlashAttention tiling failed: {message}", rule=rule)


def name(t) -> str:
    return t.dtype.short


def mode_tokens(a, pre, nxt, has_mask, big):
    """The (pre, next) window a sparse mode keeps (SetSparseModeData in both tilings): with an
    attenMask given, mode 1 opens both sides, 2 is causal (next 0), 3 opens pre (the kernel
    derives next per batch); mode 0 without a non-empty mask opens both. ``big`` is the tiling's
    "infinite" token count."""
    mode = a.sparseMode
    if a.attenMask is not None:
        pre, nxt = {1: (big, big), 2: (big, 0), 3: (big, nxt)}.get(mode, (pre, nxt))
    if mode == 0 and not has_mask:
        pre, nxt = big, big
    return pre, nxt


def require_quant_scale2(a):
    """An INT8 output needs a non-empty quantScale2 (CheckPostQuantParams in both tilings)."""
    if a.quantScale2 is None:
        tiling("quant2.scale_null", "post quant scale (quantScale2) is nullptr when output type is int8.")
    if a.quantScale2.is_empty:
        tiling("quant2.scale_empty", "quant_scale2 is empty tensor when output type is int8.")
