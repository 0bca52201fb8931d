"""queryPaddingSize / kvPaddingSize on the PFA route: the FIA tilings' rules, the PFA tilings'
crossings with padding, and the padding the PFA kernels read (kernels/flash_attention/left_padding)."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.left_padding import LeftPadding
from aclnn_emu.opdef.generated import attr_int32

from .failure import tiling

INT_MAX = 2147483647


def padded(a) -> bool:
    return a.queryPaddingSizeOptional is not None or a.kvPaddingSizeOptional is not None


def check_arch32(a) -> None:
    """CheckParamsPFA's list and left-padding rules (after CheckKvPFA, not replayed): no tensor list
    with TND; no padding with TND, a tensor list or a paged cache; each padding size a [1] tensor;
    padding needs the matching actual lengths."""
    listed, tnd = len(a.key.items) > 1, a.inputLayout == "TND"
    if listed and tnd:
        raise tiling("pfa.tnd_list", "a key/value tensor list is not supported with TND")
    if padded(a) and tnd:
        raise tiling("pfa.tnd_padding", "left padding is not supported with TND")
    if padded(a) and listed:
        raise tiling("pfa.list_padding", "left padding is not supported with a key/value tensor list")
    _check_sizes(a, "pfa.padding_shape")
    if padded(a) and a.blockTableOptional is not None:
        raise tiling("pfa.paged_padding", "left padding is not supported with a paged cache")
    _check_lengths(a, "pfa")


def check_arch35(a) -> None:
    """ConvertContextToParamsPFA (fused_infer_attention_score_tiling_v2.cpp): a key/value tensor
    list refuses padding, then CheckKVPaddingCrossover: [1] sizes, no paged cache, the matching
    actual lengths."""
    if padded(a) and len(a.key.items) > 1:
        raise tiling("arch35.list_padding", "When tensorlist is used, left padding is not supported!")
    _check_sizes(a, "arch35.padding_shape")
    if padded(a) and a.blockTableOptional is not None:
        raise tiling("arch35.paged_padding", "When page attention is used, left padding is not supported!")
    _check_lengths(a, "arch35")


def _check_sizes(a, rule):
    for name, pad in (("queryPaddingSize", a.queryPaddingSizeOptional), ("kvPaddingSize", a.kvPaddingSizeOptional)):
        if pad is not None and (pad.ndim != 1 or pad.numel != 1):
            raise tiling(rule, f"{name} {list(pad.shape)} must be a [1] tensor")


def _check_lengths(a, route):
    if a.queryPaddingSizeOptional is not None and a.actualSeqLengthsOptional is None:
        raise tiling(f"{route}.padding_q_lengths", "queryPaddingSize needs actualSeqLengths")
    if a.kvPaddingSizeOptional is not None and a.actualSeqLengthsKvOptional is None:
        raise tiling(f"{route}.padding_kv_lengths", "kvPaddingSize needs actualSeqLengthsKv")


def check_pfa_tiling(a, arch35: bool) -> None:
    """The PFA tilings' refusals of padding beside other features, checked before the rest of
    their rules (every one is 561002): a shared prefix (A2/A3 RunBigKernelTilingWithParams,
    Ascend910_95 CheckPrefix); A2/A3 an INT8 output quantised per channel (CheckPostQuantParams);
    Ascend910_95 TND (CheckTNDLayoutCrossover)."""
    if not padded(a):
        return
    if a.keySharedPrefixOptional is not None and a.valueSharedPrefixOptional is not None:
        raise tiling("pfa.prefix_padding", "when system prefix is used, leftpadding is not supported!")
    scale2 = a.quantScale2Optional
    per_channel = scale2 is not None and scale2.numel != 1 and a.attentionOut.dtype == DataType.ACL_INT8
    if not arch35 and per_channel:
        raise tiling("pfa.post_quant_padding", "post quant per-channel do not support left padding.")
    if arch35 and a.inputLayout == "TND":
        raise tiling("arch35.tnd_padding", "When layout is TND, left padding is not supported!")


def kernel_args(a, arch35: bool) -> dict:
    """What the PFA tiling hands its kernels for padding: the two sizes (a length that does not fit
    beside its padding reads from row 0 on A2/A3, is taken as 0 on Ascend910_95), and with
    sparseMode 0 the whole window (preTokens = nextTokens = INT_MAX: the attenMask alone decides;
    A2/A3 SetSparseModeData, Ascend910_95 the same in TilingV2), which its token rules then see."""
    if not padded(a):
        return dict(left_padding=None, preTokens=a.preTokens, nextTokens=a.nextTokens)
    window = (INT_MAX, INT_MAX) if attr_int32(a.sparseMode) == 0 else (a.preTokens, a.nextTokens)
    left = LeftPadding(a.queryPaddingSizeOptional, a.kvPaddingSizeOptional, overflow_empty=arch35)
    return dict(left_padding=left, preTokens=window[0], nextTokens=window[1])


def ifa_keys(a):
    """The key padding the IFA kernels apply (A2/A3 CheckSupportKVLeftPadding, IFATilingV2
    ProcessKVPaddingSize): one batched key/value with actualSeqLengthsKv and no block table; a
    batch whose keys do not fit before it has none (InitKVLeftPaddingSize)."""
    kv = a.kvPaddingSizeOptional
    if kv is None or a.actualSeqLengthsKvOptional is None or a.blockTableOptional is not None or len(a.key.items) > 1:
        return None
    return LeftPadding(None, kv, overflow_empty=True)
