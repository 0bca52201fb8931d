"""The shared prefix (V2-V4: keySharedPrefix, valueSharedPrefix, actualSharedPrefixLen) on the IFA
and PFA routes; the FIA-V3 route's rules are FiaV3._system_prefix (checks.py).

Each tiling's rules, every failure 561002:
- Atlas A2/A3 IFA (incre_flash_attention_tiling.cpp ProcessOptionalTensors): ProcessGqaKvNz refuses
  any prefix input beside a 5-D (NZ) key without rope; then ProcessSharedPrefix
  (SharedPrefixCheckBasic: both tensors, no page attention, no kv padding; SharedPrefixCheckShapes:
  equal shapes of the query's rank, batch 1, H or N and D as the key's) and ProcessSharedPrefixLen
  (a [1] length in [0, the prefix's S]). A tensor list is allowed: its kernels
  (incre_flash_attention_split_Bbn2s2_Us2.h) attend every batch to the prefix, then to its own
  tensor, and join the two by their softmax sums.
- Atlas A2/A3 PFA (prompt_flash_attention_tiling.cpp RunBigKernelTilingWithParams): both tensors, no
  tensor list (kv_list), no page attention, no left padding (padding.py), query and key not both
  INT8, the prefixes of the key's rank, no empty axis, alike; later the length ([1], at most the
  prefix's S: the tiling reads it as uint32, so a negative one fails and one of 2^32 or more would
  wrap, which is not replayed), batch 1, H or N and D as the key's. Its shape read sets the prefix's
  batch for BSH/BSND/BNSD only (NSD: S alone, the TND-like layouts neither), so with an NSD or TND
  query every prefix fails there: its length beyond that S (0 for TND), else "prefix batch num(0)".
- Ascend910_95 PFA (prompt_flash_attention_tiling_v2.cpp): both tensors (DoOpTiling), then
  CheckPrefix: no TND, no tensor list (kv_list), no rope, no PFA MLA (192/128), no left padding
  (padding.py), not both INT8, batch 1 (GetAndCheckPrefixShape, which reads N, D and H off the key
  itself), the prefixes of the key's rank, no empty axis, alike (CheckKeyValuePrefixConsistency), the
  length [1] in [0, the prefix's S] (CheckActSharedPrefix). Page attention: paged_prompt.
- Ascend910_95 IFA: ConvertContextToParamsIFA (fused_infer_attention_score_tiling_v2.cpp) hands
  IFATilingV2 no prefix and IFATilingV2 sets enableKVPrefix false, so the antiquant kernels never
  read it: the call runs without it.
"""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_uint32, shape_dim

from .failure import tiling
from .layouts import seq_len, split
from .route import qkv_d

S_AXIS = {"BSH": 1, "BSND": 1, "BNSD": 2}  # the S axis of a dense query, key or shared prefix
# the prefix axis the A2/A3 PFA tiling reads as its S (RunBigKernelTilingWithParams); a TND-like
# layout reads none (0)
_PFA_PREFIX_S_AXIS = {**S_AXIS, "NSD": 1}


def present(a) -> bool:
    return a.keySharedPrefixOptional is not None or a.valueSharedPrefixOptional is not None


def rows(a) -> int:
    """The prefix rows each batch attends to first: actualSharedPrefixLen, else the prefix's S."""
    if a.actualSharedPrefixLenOptional:
        return int(a.actualSharedPrefixLenOptional[0])
    return seq_len(a.keySharedPrefixOptional.shape, split(a.inputLayout)[0])


def ignored(env, why: str) -> None:
    env.warn(f"the shared prefix is ignored: {why} (CANN 8.5), so the output is that without a prefix")


def _key_h_n_d(a) -> tuple[int, int, int]:
    """The key's H, N2 and D (BSH: D = H / N2)."""
    key, base = a.key.items[0], split(a.inputLayout)[0]
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    if base == "BSH":
        h = shape_dim(key.shape, 2)
        return h, kv_heads, h // kv_heads if kv_heads else 0
    n, d = shape_dim(key.shape, 2 if base == "BSND" else 1), shape_dim(key.shape, 3)
    return n * d, n, d


def _both(a, message: str) -> None:
    if a.keySharedPrefixOptional is None or a.valueSharedPrefixOptional is None:
        raise tiling("prefix.both", message)


def _length(a, s: int) -> None:
    """A given actualSharedPrefixLen: one value (an aclIntArray is 1-D) within [0, s]."""
    lengths = a.actualSharedPrefixLenOptional
    if not lengths or a.max_workspace:
        return
    if len(lengths) != 1:
        raise tiling("prefix.length_count", f"actualSharedPrefixLen holds {len(lengths)} values, it must hold 1")
    if not 0 <= int(lengths[0]) <= s:
        raise tiling("prefix.length_range", f"actualSharedPrefixLen {int(lengths[0])} must be in [0, {s}]")


def _kv_like(a) -> None:
    """The prefixes of the key's rank and of one shape, with no empty axis (PFA tilings)."""
    k, v = a.keySharedPrefixOptional, a.valueSharedPrefixOptional
    if not k.ndim == v.ndim == a.key.items[0].ndim:
        raise tiling(
            "prefix.rank", f"keySharedPrefix {k.ndim}-D, valueSharedPrefix {v.ndim}-D, key {a.key.items[0].ndim}-D"
        )
    if 0 in tuple(k.shape) or 0 in tuple(v.shape):
        raise tiling("prefix.empty", "key_shared_prefix and value_shared_prefix not support empty tensor")
    if tuple(k.shape) != tuple(v.shape):
        raise tiling("prefix.shapes", f"keySharedPrefix {list(k.shape)}, valueSharedPrefix {list(v.shape)}")


def _both_int8(a) -> None:
    if a.query.dtype == DataType.ACL_INT8 and a.key.items[0].dtype == DataType.ACL_INT8:
        raise tiling("prefix.int8", "when system prefix is used, query and key/value should not both be int8!")


def _batch_one(k) -> None:
    if shape_dim(k.shape, 0) != 1:
        raise tiling("prefix.batch", f"prefix batch num({shape_dim(k.shape, 0)}) only support 1!")


def check_ifa_arch32(a) -> None:
    """The A2/A3 IFA tiling's rules (ProcessGqaKvNz, ProcessSharedPrefix, ProcessSharedPrefixLen)."""
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None
    prefix_len = a.actualSharedPrefixLenOptional is not None
    if a.key.items[0].ndim == 5 and not rope and (present(a) or prefix_len):
        raise tiling("prefix.kv_nz", "keySharedPrefix not support for IFA GQA with KV NZ!")
    if not present(a):
        return
    _both(a, "SharedPrefixCheckBasic: tensor of key_shared_prefix / value_shared_prefix is null.")
    if a.blockTableOptional is not None:
        raise tiling("prefix.paged", "shared prefix with page attention is not supported")
    if a.kvPaddingSizeOptional is not None:
        raise tiling("prefix.kv_padding", "shared prefix with kv padding is not supported")
    k, v = a.keySharedPrefixOptional, a.valueSharedPrefixOptional
    if tuple(k.shape) != tuple(v.shape):
        raise tiling("prefix.shapes", "tensor shape of key_shared_prefix and value_shared_prefix not equal.")
    if k.ndim != a.query.ndim:
        raise tiling("prefix.rank", f"tensor shape dim of key_shared_prefix[{k.ndim}] is not compatable with query")
    _batch_one(k)
    h, n, d = _key_h_n_d(a)
    base = split(a.inputLayout)[0]
    dim = lambda i: shape_dim(k.shape, i)  # noqa: E731 - gert::Shape reads 0 past its rank
    if base in ("BSH", "BSND"):
        wrong = dim(2) != h if k.ndim == 3 else k.ndim == 4 and (dim(2) != n or dim(3) != d)
    else:
        wrong = dim(1) != n or dim(3) != d
    if wrong:
        raise tiling("prefix.heads", f"keySharedPrefix {list(k.shape)}: H, N or D is not the key's ({h}, {n}, {d})")
    _length(a, 0 if k.numel == 0 else dim(1 if base in ("BSH", "BSND") else 2))


def check_pfa_arch32(a) -> None:
    """The A2/A3 PFA tiling's rules after its tensor-list one (kv_list.check), but its left padding
    one (padding.check_pfa_tiling)."""
    if not present(a):
        return
    _both(a, "when system prefix is used, key_shared_prefix and value_shared_prefix are required!")
    if a.blockTableOptional is not None:
        raise tiling("prefix.paged", "when system prefix is used, page attention is not supported!")
    _both_int8(a)
    _kv_like(a)
    k = a.keySharedPrefixOptional
    base = split(a.inputLayout)[0]
    _length(a, shape_dim(k.shape, _PFA_PREFIX_S_AXIS[base]) if base in _PFA_PREFIX_S_AXIS else 0)
    if base not in S_AXIS:  # NSD, TND, NTD: the tiling's shape read never sets the prefix's batch
        raise tiling("prefix.batch", "prefix batch num(0) only support 1!")
    _batch_one(k)
    h, n, d = _key_h_n_d(a)
    if base == "BSH" and shape_dim(k.shape, 2) != h:
        raise tiling("prefix.heads", f"prefix H({shape_dim(k.shape, 2)}) should be same with KV H({h})!")
    if base in ("BSND", "BNSD"):
        pn, pd = shape_dim(k.shape, 2 if base == "BSND" else 1), shape_dim(k.shape, 3)
        if (pn, pd) != (n, d):
            raise tiling("prefix.heads", f"prefix N({pn}) and D({pd}) should be same with KV N({n}) and D({d})!")


def check_pfa_arch35(a, rope: bool) -> None:
    """Ascend910_95's PFA tiling: both tensors, then CheckPrefix but for its tensor-list and left
    padding rules (kv_list, padding.py); ``rope``: the call's PFARope or IFA MLA."""
    if not present(a):
        return
    _both(a, "when system prefix is used, key_shared_prefix and value_shared_prefix are required!")
    if split(a.inputLayout)[0] == "TND":
        raise tiling("prefix.tnd", "when TND is used, system prefix is not supported!")
    if rope:
        raise tiling("prefix.rope", "when system prefix is used, rope is not supported!")
    dims = qkv_d(a)
    if dims is not None and dims[0] != dims[2]:
        raise tiling("prefix.mla", "when system prefix is used, query, key and value D should be the same")
    _both_int8(a)
    k = a.keySharedPrefixOptional
    _batch_one(k)
    _kv_like(a)
    _length(a, shape_dim(k.shape, S_AXIS.get(split(a.inputLayout)[0], 1)))


def heads_unread(a) -> bool:
    """Ascend910_95's PFA tiling reads the prefix's N, D and H off the key (GetAndCheckPrefixShape),
    so a prefix whose heads differ passes it; what its kernels then read is not established."""
    k, base = a.keySharedPrefixOptional, split(a.inputLayout)[0]
    h, n, d = _key_h_n_d(a)
    if base == "BSH":
        return shape_dim(k.shape, 2) != h
    return (shape_dim(k.shape, 2 if base == "BSND" else 1), shape_dim(k.shape, 3)) != (n, d)
