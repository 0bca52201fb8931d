"""The shared prefix (V2-V4: keySharedPrefix, valueSharedPrefix, actualSharedPrefixLen) on the IFA
and PFA routes; the FIA-V3 route's rules are FiaV3._system_prefix (checks.py).

Each tiling's rules, every failure 561002:
- Atlas A2/A3 IFA (incre_flash_attention_tiling.cpp ProcessOptionalTensors): ProcessGqaKvNz refuses
  any prefix input beside a 5-D (NZ) key without rope; then ProcessSharedPrefix
  (SharedPrefixCheckBasic: both tensors, no page attention, no kv padding; SharedPrefixCheckShapes:
  equal shapes of the query's rank, batch 1, H or N and D as the tiling read them off the query:
  a TND query's prefix is compared as BNSD, its missing dimension 3 against D, so it always fails)
  and ProcessSharedPrefixLen (a [1] length in [0, the prefix's S]). A tensor list is allowed: its kernels
  (incre_flash_attention_split_Bbn2s2_Us2.h) attend every batch to the prefix, then to its own
  tensor, and join the two by their softmax sums.
- Atlas A2/A3 PFA (prompt_flash_attention_tiling.cpp RunBigKernelTilingWithParams): both tensors, no
  tensor list (kv_list), no page attention, no left padding (padding.py), query and key not both
  INT8, the prefixes of the key's rank, no empty axis, alike; later the length ([1], at most the
  prefix's S: the tiling reads it as uint32, so a negative one fails and one of 2^32 or more would
  wrap, which is not replayed), batch 1, H or N and D as the key's. The length, batch and heads
  come after the tiling's empty-tensor path (an empty key, value or output: the kernel zeroes the
  output, no prefix read) and read the prefix by query layout: S and batch as BSH/BSND/BNSD, a 3-D
  (NSD) query no batch, a TND-like one neither, so those fail "prefix batch num(0)" (a length above
  0 first fails its range [0, 0]).
- Ascend910_95 PFA (prompt_flash_attention_tiling_v2.cpp): both tensors (DoOpTiling), then
  CheckPrefix: no TND, no tensor list (kv_list), no rope, no PFA MLA (192/128), no left padding
  (padding.py), not both INT8, batch 1 (GetAndCheckPrefixShape, which reads N, D and H off the key
  itself), the prefixes of the key's rank, no empty axis, alike (CheckKeyValuePrefixConsistency), the
  length [1] in [0, the prefix's S] (CheckActSharedPrefix). Page attention: paged_prompt.
  Its kernels (flash_attention_score_block_cube.h) address the prefix as [1, S, N2, D] in the key's
  layout with the key's N2 and D and the prefix's own S (an offset calculator Init(1, n2Size,
  kvPrefixSize, dSize)): a prefix of other heads is that memory read at the key's strides
  (KeyStrided), a read past its end refused.
- Ascend910_95 IFA: ConvertContextToParamsIFA (fused_infer_attention_score_tiling_v2.cpp) hands
  IFATilingV2 no prefix and IFATilingV2 sets enableKVPrefix false, so the antiquant kernels never
  read it: the call runs without it.
"""

import numpy as np

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import attr_uint32, shape_dim

from .entry import V4
from .failure import tiling
from .layouts import seq_len, split
from .route import qkv_d

S_AXIS = {"BSH": 1, "BSND": 1, "BNSD": 2}  # the S axis of a dense query, key or shared prefix
# Ascend910_95's PFA kernels walk prefix and keys in blocks of the tiling's sInner (64, 128 or 256 keys): a
# prefix length that is a multiple of each leaves the key's blocks whole (delegate INFERRED prefix_walk)
ARCH35_WHOLE_BLOCKS = 256

REFUSED = Gaps(
    V4,
    "refused",
    {
        "prefix_heads": "a shared prefix whose N, D or H differ from the key's on Ascend910_95's PFA route "
        "(GetAndCheckPrefixShape reads them off the key) and that holds fewer elements than its kernels read at "
        "the key's strides (rows [0, actualSharedPrefixLen) of every key head, the prefix's own S apart)"
    },
)


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


def _batch_one(batch: int) -> None:
    if batch != 1:
        raise tiling("prefix.batch", f"prefix batch num({batch}) only support 1!")


def _ifa_heads(a) -> tuple[int, int]:
    """The IFA tiling's numKvHeads_ and headDim_ (GetInOutLayoutAndProcessQInfo reads D off the
    query: BSH H / numHeads, BSND/BNSD dimension 3, TND dimension 2)."""
    heads = attr_uint32(a.numHeads)
    kv_heads = attr_uint32(a.numKeyValueHeads) or heads
    base, q = split(a.inputLayout)[0], a.query.shape
    if base == "BSH":
        return kv_heads, shape_dim(q, 2) // heads if heads else 0
    return kv_heads, shape_dim(q, 2 if base == "TND" else 3)


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
    _batch_one(shape_dim(k.shape, 0))
    n, d = _ifa_heads(a)
    base = split(a.inputLayout)[0]
    shape = list(k.shape)
    if a.int4 and k.dtype == DataType.ACL_INT32:  # PrefixTensorPreProcess: read as INT4, 8 per word
        shape[-1] *= 8
    dim = lambda i: shape_dim(shape, i)  # noqa: E731 - gert::Shape reads 0 past its rank
    if base in ("BSH", "BSND"):
        wrong = dim(2) != n * d if k.ndim == 3 else k.ndim == 4 and (dim(2) != n or dim(3) != d)
    else:  # BNSD, and TND read alike: a 3-D prefix's dimension 3 reads 0
        wrong = dim(1) != n or dim(3) != d
    if wrong:
        raise tiling("prefix.heads", f"keySharedPrefix {shape}: H, N or D is not the query's ({n}, {d})")
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
    if pfa_arch32_empty(a):  # the empty-tensor path returns before the rest
        return
    s, batch, pn, pd = _pfa_arch32_reads(a)
    _length(a, s)
    _batch_one(batch)
    h, n, d = _key_h_n_d(a)
    if split(a.inputLayout)[0] == "BSH":
        if pn != h:
            raise tiling("prefix.heads", f"prefix H({pn}) should be same with KV H({h})!")
    elif (pn, pd) != (n, d):
        raise tiling("prefix.heads", f"prefix N({pn}) and D({pd}) should be same with KV N({n}) and D({d})!")


def pfa_arch32_empty(a) -> bool:
    """The A2/A3 PFA tiling's empty-tensor path (an empty key, value or output): its kernel zeroes
    the output and reads no prefix."""
    return a.key.items[0].is_empty or a.value.items[0].is_empty or a.attentionOut.is_empty


def _pfa_arch32_reads(a) -> tuple[int, int, int, int]:
    """(S, batch, N or H, D) the A2/A3 PFA tiling reads off the prefix by query layout and rank
    (RunBigKernelTilingWithParams); what a branch does not read stays 0."""
    k, base, rank = a.keySharedPrefixOptional.shape, split(a.inputLayout)[0], a.query.ndim
    dim = lambda i: shape_dim(k, i)  # noqa: E731
    if base in ("BNSD", "NSD"):
        return (dim(1), 0, 0, 0) if rank == 3 else (dim(2), dim(0), dim(1), dim(3))
    if base in ("BSH", "BSND"):
        if rank == 2:
            return dim(0), 0, 0, 0
        return (dim(1), dim(0), dim(2), 0) if rank == 3 else (dim(1), dim(0), dim(2), dim(3))
    return 0, 0, 0, 0  # TND / NTD_TND


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
    _batch_one(shape_dim(k.shape, 0))
    _kv_like(a)
    _length(a, shape_dim(k.shape, S_AXIS.get(split(a.inputLayout)[0], 1)))


def _arch35_geometry(a) -> tuple[int, ...]:
    """The prefix as Ascend910_95's kernels address it: [1, S, N2, D] in the key's layout (BSH
    [1, S, H]) with the key's heads and the prefix's own S."""
    k, base = a.keySharedPrefixOptional, split(a.inputLayout)[0]
    h, n, d = _key_h_n_d(a)
    s = shape_dim(k.shape, S_AXIS[base])
    return {"BSH": (1, s, h), "BSND": (1, s, n, d), "BNSD": (1, n, s, d)}[base]


def arch35_last_read(a) -> int:
    """One past the last prefix element the kernels read: rows [0, rows(a)) of every head (BNSD:
    the last head's rows follow the others' whole S; BSH/BSND: the rows hold every head)."""
    shape, used = _arch35_geometry(a), rows(a)
    if not used:
        return 0
    if len(shape) == 4 and split(a.inputLayout)[0] == "BNSD":
        _, n, s, d = shape
        return ((n - 1) * s + used) * d
    return used * int(np.prod(shape[2:]))


def arch35_strided(a) -> bool:
    """A prefix whose shape is not the one the kernels address: read at the key's strides."""
    return tuple(a.keySharedPrefixOptional.shape) != _arch35_geometry(a)


def check_arch35_reads(a) -> None:
    if present(a) and arch35_last_read(a) > a.keySharedPrefixOptional.numel:
        REFUSED.refuse(
            "prefix_heads",
            f"keySharedPrefix {list(a.keySharedPrefixOptional.shape)} read as {list(_arch35_geometry(a))}: "
            f"element {arch35_last_read(a) - 1} of {a.keySharedPrefixOptional.numel}",
        )


class KeyStrided:
    """A prefix tensor as Ascend910_95's kernels read it: its memory at the key's strides (the
    elements past its end are never read, check_arch35_reads)."""

    def __init__(self, a, t):
        self.t, self.shape = t, _arch35_geometry(a)
        self.dtype, self.format, self.ndim = t.dtype, t.format, len(self.shape)

    def read(self, what: str = "tensor"):
        flat = self.t.read(what).reshape(-1)
        size = int(np.prod(self.shape))
        return np.pad(flat[:size], (0, max(0, size - flat.size))).reshape(self.shape)
