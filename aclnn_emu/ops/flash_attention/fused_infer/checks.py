"""FusedInferAttentionScore's checks: the version wrappers, the generated inner entry point, and
the A2/A3 tiling's routing with the FIA-V3 route's own checks (checks_arch35 holds Ascend910_95's).

Sources (cannmirror/ops-transformer v8.5.0-beta.1, attention/fused_infer_attention_score/):
op_host/op_api/aclnn_fused_infer_attention_score{,_v2,_v3,_v4}.cpp and _inner.cpp (the wrappers:
softmaxLse placeholder, INT32 -> INT4 key/value in V2-V4), op_host/fused_infer_attention_score_def.cpp
(the generated entry point's kernel key), op_host/fused_infer_attention_score_tiling.cpp
(TilingFusedInferAttentionScore: RouteToFia, then IFA or PFA), op_host/arch32/
fused_infer_attention_score_tiling_v3.cpp (RouteToFia, CheckGqaConstrain) and
fused_infer_attention_score_tiling_check_*.cpp (the FIA-V3 route's TilingCheck). Every tiling
failure of the generated entry point is 561002.
"""

from types import SimpleNamespace

from aclnn_emu import status, versions
from aclnn_emu.dtypes import SIZE, DataType
from aclnn_emu.kernels.flash_attention.left_padding import LeftPadding
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.failures import mapped
from aclnn_emu.opdef.generated import attr_int32, attr_uint32, check_kernel_key, shape_dim
from aclnn_emu.opdef.outputs import Placeholder
from aclnn_emu.opdef.signature import Launch, Op, OpError, TensorIn, TensorOut
from aclnn_emu.runtime.errors import AclError

from ..common import on_arch35
from . import checks_arch35, delegate, launch, opdef_table, pse_type, route_9x, split_fuse
from .entry import V1, V2, V3, V4, V5, VERSIONS, inner_args
from .failure import tiling
from .launch import INT_MAX
from .layouts import PACKED, Axes, key_rows, query_axes, seq_len, shaped, split
from .route import Route, first, qkv_d

F16, BF16, I8, I32, FP32 = (
    DataType.ACL_FLOAT16,
    DataType.ACL_BF16,
    DataType.ACL_INT8,
    DataType.ACL_INT32,
    DataType.ACL_FLOAT,
)
COMBOS = {
    "Ascend910B": opdef_table.combos(opdef_table.A2),
    "Ascend910_93": opdef_table.combos(opdef_table.A2),
    "Ascend910_95": opdef_table.combos(opdef_table.ARCH35),
}
# The inner operator's tensors with the lists seen as their first tensor, for the kernel key.
# softmaxLse is a required output of the inner operator (the wrappers' placeholder stands in).
_KEYED = Op(
    V4.name,
    V4.header,
    [
        TensorIn(p.name) if p.kind == "tensor_list" else TensorOut(p.name) if p.name == "softmaxLse" else p
        for p in V4.params
    ],
)
FIA_V3_LAYOUTS = (
    "BSH", "BSND", "BNSD", "TND", "NTD", "BSH_NBSD", "BSND_NBSD", "BNSD_NBSD",
    "TND_NTD", "NTD_TND", "BSH_BNSD", "BSND_BNSD", "BNSD_BSND",
)  # fmt: skip
LEGACY_GQA = ("BSH", "BSND", "BNSD", "BNSD_BSND", "TND", "NSD")  # isNotLegacyGQA
GQA_LAYOUTS = ("BNSD_BSND", "BSND_BNSD", "BNSD", "BSND", "BSH_BNSD", "BSH", "TND", "NTD", "NTD_TND")
GQA_D = ((128, 0, 128), (64, 0, 64), (128, 64, 128), (192, 0, 128))  # CheckGqaDSupport (qD, ropeD, vD)
NZ_BYTES = 32  # an NZ cache's D0: the elements of 32 bytes of the key/value dtype
ROPE_SPLIT_ABSENT = (
    "quantScale2", "quantOffset2", "pseShift", "queryPaddingSize", "kvPaddingSize", "keySharedPrefix",
    "valueSharedPrefix",
)  # fmt: skip
PADDING_LAYOUTS = ("BSND", "BNSD", "BSH", "BNSD_BSND")  # CheckFeatureLeftPadding, CheckFeaturePSE
INFERRED = Gaps(
    V4,
    "inferred",
    {
        "split_fuse": "a TND call the tiling sends to the split-fuse kernels (IsUsingFAI: FAInferTiling, "
        "flash_attention_regular.h), whose roundings are not established here: it runs with the FIA-V3 "
        "kernels' maths"
    },
)


def _wrapper(op):
    @op.check
    def as_v4(a, env):
        """What the version's wrapper passes the inner operator (NULL or 0 for what it lacks)."""
        vars(a).update(vars(inner_args(a, op)))
        a.version = VERSIONS[op]

    return as_v4


for _op in (V1, V2, V3, V5):
    _wrapper(_op)


@V4.prepare
def prepare(a, env, max_workspace: bool = False):
    with mapped(status.ACLNN_ERR_INNER_TILING_ERROR, "FusedInferAttentionScore tiling failed: ", "tiling."):
        return prepare_inner(a, env, getattr(a, "version", 4), max_workspace)


def _max_workspace(a, env):
    """aclnnFusedInferAttentionScoreV{2,3,4}GetMaxWorkspaceSize (op_api _v2/_v3/_v4.cpp: exported, in
    no header): the version's wrapper, then the generated entry point's Tensor twin with each
    IntArray an INT64 tensor without data (FakeArray). With an actual length given the A2/A3 parser
    sets isMaxWorkspace (FiaInfoParser::GetMaxWorkspaceFlag) and the FIA-V3 checks of the lengths'
    values are skipped (CheckFeatureActualSeqLens{Q,Kv}Data read no data). The executor is for
    aclDestroyAclOpExecutor: launched, the kernel would read lengths that have no data."""
    given = a.actualSeqLengthsOptional is not None or a.actualSeqLengthsKvOptional is not None
    planned = prepare(a, env, max_workspace=given)
    return planned if planned.run is None else Launch(planned.workspace_size, _lengths_without_data)


def _lengths_without_data(workspace):
    raise AclError(
        status.ACL_ERROR_RT_AICORE_EXCEPTION,
        "the executor of aclnnFusedInferAttentionScoreV*GetMaxWorkspaceSize was launched: its actual "
        "lengths are tensors without data (FakeArray), which the kernel would read; destroy it with "
        "aclDestroyAclOpExecutor and launch the executor of GetWorkspaceSize instead",
        rule="max_workspace.launched",
    )


for _op in (V2, V3, V4, V5):
    _op.undeclared("GetMaxWorkspaceSize")(_max_workspace)


def prepare_inner(a, env, version: int = 4, max_workspace: bool = False):
    """The wrappers' preprocessing, then aclnnInnerFusedInferAttentionScoreGetWorkspaceSize (its
    Tensor twin with ``max_workspace``: the lengths present, their values unread)."""
    a.max_workspace = max_workspace
    a.lse_wanted = bool(a.softmaxLseFlag)
    if not a.lse_wanted:  # FusedInferAttentionScoreProcessSoftmaxLse: a [0] FLOAT placeholder
        a.softmaxLse = _PLACEHOLDER
    a.int4 = version >= 2 and _lists_int32(a)
    keyed = _keyed_view(a)
    for name in ("query", "key", "value"):
        if getattr(keyed, name) is None:
            raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")
    for name in ("attentionOut", "softmaxLse"):
        if getattr(a, name) is None:
            raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name} must not be nullptr", rule=f"null.{name}")
    if a.attentionOut.is_empty and a.softmaxLse.is_empty:
        return Launch.nothing()
    _check_lists_keyed(a)
    check_kernel_key(keyed, _KEYED, COMBOS, env.soc)
    if on_arch35(env):
        return checks_arch35.tiling(a, env)
    return _tiling_a2(a, env)


_PLACEHOLDER = Placeholder(FP32)  # the wrappers' [0] FLOAT softmaxLse


def _lists_int32(a) -> bool:
    """TensorPreProcess: both lists' first tensors INT32 (re-typed INT4, last dim x 8)."""
    firsts = [t.items[0] if t is not None and t.items and t.items[0] is not None else None for t in (a.key, a.value)]
    return all(t is not None and t.dtype == I32 for t in firsts)


class _Retyped:
    def __init__(self, t, dtype):
        self.dtype, self.format, self.shape = dtype, t.format, t.shape


def _keyed_view(a):
    """The arguments with each list replaced by its first tensor, INT4 where the wrapper re-types it."""
    view = SimpleNamespace(**vars(a))
    for name in ("key", "value"):
        items = getattr(a, name).items if getattr(a, name) is not None else []
        first = items[0] if items and items[0] is not None else None
        setattr(view, name, _Retyped(first, DataType.ACL_INT4) if first is not None and a.int4 else first)
    for name in ("keySharedPrefixOptional", "valueSharedPrefixOptional"):
        t = getattr(a, name)
        if a.int4 and t is not None and t.dtype == I32:
            setattr(view, name, _Retyped(t, DataType.ACL_INT4))
    return view


def _check_lists_keyed(a):
    """Every tensor of a list joins the kernel key (NnopbaseAppendDynamicTensorsKey): one dtype and
    format per list, or no combination matches (161002)."""
    for name in ("key", "value"):
        items = getattr(a, name).items
        for i, t in enumerate(items):
            if t is None:
                raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name}[{i}] must not be nullptr", rule=f"null.{name}")
            if (t.dtype, t.format) != (items[0].dtype, items[0].format):
                raise OpError(
                    status.ACLNN_ERR_PARAM_INVALID,
                    f"{name}[{i}] is {t.dtype.short} {t.format.short} but {name}[0] {items[0].dtype.short} "
                    f"{items[0].format.short}; the kernels take one dtype and format per list",
                    rule=f"dtype.{name}",
                )


# -- A2/A3: TilingFusedInferAttentionScore ----------------------------------------------------------
def _tiling_a2(a, env):
    route = _route(a)
    _warn_if_rerouted(a, env, route)
    if route == "FIA-V3":
        pse_type.check_parser(a, env)
        return FiaV3(a, env).run()
    if route == "split-fuse":
        INFERRED.warn(env, "split_fuse", f"inputLayout {a.inputLayout}")
        return split_fuse.run(a, env)
    if route == "IFA":
        return delegate.incre(a, env)
    return delegate.prompt(a, env)


def _route(a) -> str:
    """The tiling 8.5 sends an A2/A3 call to: RouteToFia, IsUsingFAI and IsUsingIFA in turn, else PFA."""
    base = split(a.inputLayout)[0]
    if route_to_fia(a):
        return "FIA-V3"
    if is_using_fai(a, base):
        return "split-fuse"
    return "IFA" if is_using_ifa(a, base) else "PFA"


def _warn_if_rerouted(a, env, route: str) -> None:
    """9.0.0 rewrote the routing (route_9x); a call it routes otherwise runs 8.5's route here, and says so."""
    release = env.version.name
    if release not in versions.since("9.0.0"):
        return
    route_9 = route_9x.route(a, release, lambda a: is_using_ifa(a, split(a.inputLayout)[0]))
    if route_9 != route:
        env.warn(
            f"portability: CANN {release} routes this call to its {route_9} tiling and kernels; aclnn-emu runs "
            f"CANN 8.5's route ({route}), whose checks and roundings may differ (listed in `aclnn-emu coverage "
            "--version`)"
        )


def _not_legacy_gqa(a) -> bool:
    layout = a.inputLayout or "BSH"
    if layout not in LEGACY_GQA:
        return True
    dims = qkv_d(a)
    if dims is None:
        return False
    qd, _, vd = dims
    if qd != vd or a.queryRopeOptional is not None or a.keyRopeOptional is not None:
        return True
    if layout == "TND" and vd == 192:
        return False
    return first(a.key).ndim not in (3, 4) or first(a.value).ndim not in (3, 4)


def _gqa_constrain(a) -> bool:
    """CheckGqaConstrain: a non-legacy call, or a legacy one of the supported layouts, head sizes
    and features (no pse, padding, shared prefix or output quantisation), nothing empty."""
    if _not_legacy_gqa(a):
        return True
    features = (
        a.pseShiftOptional, a.queryPaddingSizeOptional, a.kvPaddingSizeOptional, a.keySharedPrefixOptional,
        a.valueSharedPrefixOptional, a.actualSharedPrefixLenOptional, a.quantScale2Optional, a.quantOffset2Optional,
    )  # fmt: skip
    empty = a.query.is_empty or a.attentionOut.is_empty
    empty |= a.lse_wanted and a.softmaxLse.is_empty
    empty |= any(t.is_empty for lst in (a.key, a.value) for t in lst.items)
    return (
        (a.inputLayout or "BSH") in GQA_LAYOUTS and qkv_d(a) in GQA_D and all(x is None for x in features) and not empty
    )


def _mla_constrain(a) -> bool:
    """CheckMlaConstrain: non-legacy, or an MLA layout with D 512, rope 64, value D 512."""
    mla_layouts = ("BSH", "BNSD", "BSND", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD", "TND", "TND_NTD")
    return _not_legacy_gqa(a) or ((a.inputLayout or "BSH") in mla_layouts and qkv_d(a) == (512, 64, 512))


def _spec_conditions(a) -> bool:
    """CheckSpecConditions: the TND calls the split-fuse kernels take."""
    return is_using_fai(a, a.inputLayout or "BSH", exact=True)


def _covers(rows, s1: int, s2: int) -> bool:
    """A [.., >= S1, >= S2] tensor's last two axes."""
    return rows[0] >= s1 and rows[1] >= s2


def route_to_fia(a) -> bool:
    """RouteToFia: FLOAT16/BF16 query with the key's dtype, then the GQA/MLA constraints."""
    q_dtype, k_dtype = a.query.dtype, first(a.key).dtype
    if q_dtype not in (F16, BF16) or q_dtype != k_dtype:
        return False
    if a.queryRopeOptional is not None and a.keyRopeOptional is not None:
        return _gqa_constrain(a) or _mla_constrain(a)
    return not _spec_conditions(a) and _gqa_constrain(a)


def is_using_fai(a, layout: str, exact: bool = False) -> bool:
    """IsUsingFAI / CheckSpecConditions: TND without sink or rope, sparse 0/3, MHA fp16 without
    mask (innerPrecise 1, not paged) or GQA with innerPrecise 0, D <= 256 equal for q/k/v (paged:
    a 3-D cache, block size a multiple of 16 up to 512; CheckSpecConditions: exactly 128)."""
    if (a.inputLayout or "BSH") != "TND" or a.learnableSinkOptional is not None:
        return False
    if a.queryRopeOptional is not None and a.keyRopeOptional is not None:
        return False
    heads, kv_heads = attr_int32(a.numHeads), attr_int32(a.numKeyValueHeads)
    mha = kv_heads in (0, heads)
    paged = a.blockTableOptional is not None
    precise = attr_int32(a.innerPrecise)
    mha_ok = mha and a.attenMaskOptional is None and a.query.dtype == F16 and precise == 1 and not paged
    if attr_int32(a.sparseMode) not in (0, 3) or not (mha_ok or (not mha and precise == 0)):
        return False
    k, v, qd = first(a.key), first(a.value), a.query.shape[2] if a.query.ndim == 3 else 0
    if not paged:
        return k.ndim == 3 and v.ndim == 3 and qd <= 256 and qd == k.shape[2] == v.shape[2]
    if k.ndim != 3 or not kv_heads:
        return False
    kd, vd, bs = k.shape[2] // kv_heads, shape_dim(v.shape, 2) // kv_heads, k.shape[1]
    block_ok = bs == 128 if exact else bs % 16 == 0 and bs <= 512
    return qd <= 256 and qd == kd == vd and block_ok


def is_using_ifa(a, layout: str) -> bool:
    """IsUsingIFA: the decode shapes (GQA S = 1, KV-NZ MTP, ATB int8 paged TND, MLA decode/MTP,
    sliding MLA) the IFA tiling takes."""
    rope = a.queryRopeOptional is not None
    ifa_layouts = ("BSH", "BNSD", "BSND", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD")
    full = a.inputLayout or "BSH"
    dims = qkv_d(a)
    qd = dims[0] if dims else 0
    try:
        s = query_axes(a.query.shape, layout, attr_uint32(a.numHeads)).s
    except (ValueError, IndexError, ZeroDivisionError):
        s = 0
    packed = full in ("TND", "TND_NTD")
    if not rope and ((packed and qd == 512) or (full in ifa_layouts and s == 1)):
        return True
    if not rope and full in ifa_layouts and 1 < s <= 16 and first(a.key).ndim == 5:
        return True
    if packed and first(a.key).dtype == I8 and a.query.dtype != I8 and a.blockTableOptional is not None:
        scale, offset = a.antiquantScaleOptional, a.antiquantOffsetOptional
        if qd != 512 and scale is not None and offset is not None and scale.dtype == offset.dtype == FP32:
            return True
    if rope and ((packed and qd == 512) or (full in ifa_layouts and (s == 1 or (1 < s <= 16 and qd == 512)))):
        return True
    return rope and full in ifa_layouts and qd == 512 and attr_uint32(a.sparseMode) == 4


# -- the FIA-V3 route: TilingFusedInferAttentionScoreV3 ---------------------------------------------
class FiaV3(Route):
    """FiaInfoParser + TilingCheck::Check (single parameters, existence, features) in the source's
    order, then the kernel plan."""

    def run(self):
        a = self.a
        self._parse()
        axes, (qd, rd, vd) = self.shape_facts()
        self._single_para()
        self._existence()
        self._feature(axes, qd, rd, vd)
        self._consistency(axes, qd, rd, vd)
        if a.max_workspace:  # no lengths to plan the kernel with
            return Launch(launch.WORKSPACE, _lengths_without_data)
        return launch.fia_v3(a, self.env, self, axes, qd, vd, left=self._left_padding())

    def _left_padding(self):
        """The sizes the FIA-V3 kernels read (fia_kernel_nonquant.h): the query's only outside the
        legacy IFA shape (GetPaddingSizeFlag); a batch whose length and padding exceed S is 0
        (DEAL_ZERO)."""
        a = self.a
        q_pad = None if self.legacy_ifa else a.queryPaddingSizeOptional
        if q_pad is None and a.kvPaddingSizeOptional is None:
            return None
        return LeftPadding(q_pad, a.kvPaddingSizeOptional, overflow_empty=True)

    def _parse(self):
        """FiaInfoParser::Parse's own failures (fused_infer_attention_score_tiling_info_parser.cpp):
        the list lengths (GetKvCache), a paged key of rank 3, 4 or 5 (GetKvLayout), then
        numHeads > 0, numKeyValueHeads >= 0 and G whole (GetN1Size, GetN2Size, GetGSize), a 2-D
        blockTable (GetS2Size: GetMaxBlockNumPerBatch), an actualSharedPrefixLen of shape [1]
        (GetSystemPrefix)."""
        a = self.a
        if len(a.key.items) != len(a.value.items):
            raise tiling("list_lengths", f"key has {len(a.key.items)} tensors, value {len(a.value.items)}")
        paged = self.paged and len(a.key.items) == 1  # GetKvStorageMode: a list of several is a list
        if paged and a.key.items[0].ndim not in (3, 4, 5):
            raise tiling("paged_key_rank", f"a paged key has {a.key.items[0].ndim} dims; 3, 4 or 5 are supported")
        heads, kv_heads = attr_int32(a.numHeads), attr_int32(a.numKeyValueHeads)
        if heads <= 0:
            raise tiling("heads", f"numHeads is {heads}, it should be greater than 0")
        if kv_heads < 0:
            raise tiling("kv_heads", f"numKeyValueHeads is {kv_heads}, it should not be negative")
        if heads % (kv_heads or heads):
            raise tiling("group", f"numHeads ({heads}) should be a multiple of numKeyValueHeads ({kv_heads})")
        if paged and a.blockTableOptional.ndim != 2:
            raise tiling("block_table_rank", f"blockTable has {a.blockTableOptional.ndim} dims, it should be 2")
        prefix_len = a.actualSharedPrefixLenOptional
        if a.keySharedPrefixOptional is not None and a.valueSharedPrefixOptional is not None and prefix_len:
            if len(prefix_len) != 1:  # GetSystemPrefix
                raise tiling(
                    "prefix_len_shape", f"actualSharedPrefixLen holds {len(prefix_len)} values; it must be [1]"
                )

    def _single_para(self):
        a = self.a
        if self.layout not in FIA_V3_LAYOUTS:
            raise tiling("layout", f"input layout {self.layout} is not one of {', '.join(FIA_V3_LAYOUTS)}")
        if attr_int32(a.innerPrecise) not in (0, 1, 2, 3):
            raise tiling("inner_precise", f"innerPrecise {a.innerPrecise} is not 0, 1, 2 or 3")
        if a.antiquantMode not in (0, 1):
            raise tiling("antiquant_mode", f"antiquantMode {a.antiquantMode} is not 0 or 1")
        for name in ("keyAntiquantMode", "valueAntiquantMode"):
            if getattr(a, name) not in range(6):
                raise tiling(f"{name}", f"{name} {getattr(a, name)} is not in 0-5")
        if self.sparse not in range(5):
            raise tiling("sparse_mode", f"sparseMode only supports 0/1/2/3/4, but got {a.sparseMode}")

    def _existence(self):
        """CheckRopeExistence, then CheckParaExistenceGqaNoquant / MlaNoquant: no antiquant or query
        quantisation parameter, default modes."""
        a = self.a
        if (a.queryRopeOptional is None) != (a.keyRopeOptional is None):
            raise tiling("rope_pair", "queryRope and keyRope must be given together")
        absent = {
            "antiquantScale": a.antiquantScaleOptional,
            "antiquantOffset": a.antiquantOffsetOptional,
            "dequantScaleQuery": a.dequantScaleQueryOptional,
            "keyAntiquantOffset": a.keyAntiquantOffsetOptional,
            "keyAntiquantScale": a.keyAntiquantScaleOptional,
            "keyRopeAntiquantScale": a.keyRopeAntiquantScaleOptional,
            "valueAntiquantOffset": a.valueAntiquantOffsetOptional,
            "valueAntiquantScale": a.valueAntiquantScaleOptional,
        }
        for name, t in absent.items():
            if t is not None:
                raise tiling(f"exists.{name}", f"{name} is not supported without quantisation; pass nullptr")
        for name in ("antiquantMode", "keyAntiquantMode", "valueAntiquantMode", "queryQuantMode"):
            if getattr(a, name) != 0:
                raise tiling(f"default.{name}", f"{name} must be 0 without quantisation, got {getattr(a, name)}")
        for name in ("deqScale1Optional", "quantScale1Optional", "deqScale2Optional"):
            if getattr(a, name) is not None:
                raise tiling(f"exists.{name}", f"{name.removesuffix('Optional')} needs an INT8 query; pass nullptr")
        if self.rope:
            self._rope_split_absent()

    def _rope_split_absent(self):
        """CheckParaExistenceMlaNoquant's further rules: every rope pair of the query's head size is
        ROPE_SPLIT (FiaInfoParser::GetRopeMode), D 128 as well as 512, and takes no output
        quantisation, pseShift, left padding or shared prefix (the feature checks after it never
        see them)."""
        a = self.a
        for name in ROPE_SPLIT_ABSENT:
            if getattr(a, name + "Optional") is not None:
                raise tiling(f"exists.rope.{name}", f"{name} should be null with queryRope and keyRope")
        if a.actualSharedPrefixLenOptional:
            raise tiling("exists.rope.actualSharedPrefixLen", "actualSharedPrefixLen should be null with a rope")

    def _feature(self, axes, qd, rd, vd):
        """CheckFeatureGqaNoquant / CheckFeatureMlaNoquant, in their order."""
        a = self.a
        if self.rope:
            if qd != vd:
                raise tiling("head_dim", f"rope given: query D {qd} must equal value D {vd}")
            if qd not in (128, 512) or rd != 64:
                raise tiling("head_dim", f"rope given: D must be 128 or 512 and rope D 64, got {qd} / {rd}")
        elif qd == vd and qd not in (64, 128):
            raise tiling("head_dim", f"head dim only supports 128 and 64 without rope, got {qd}")
        elif qd != vd and (qd, vd) != (192, 128):
            raise tiling("head_dim", f"query D {qd} / value D {vd}: only 192 / 128 when they differ")
        if a.attentionOut.dtype == I8:
            raise tiling("postquant", "an INT8 attentionOut (post quantisation) is not supported here")
        block = a.blockSize
        if block % 16 or block > 1024 or (self.paged and block == 0):
            raise tiling("block_size", f"blockSize {block}: a multiple of 16, at most 1024, not 0 when paged")
        if (a.query.dtype, a.attentionOut.dtype) not in ((F16, F16), (BF16, BF16)):
            raise tiling("in_out_dtype", f"query {a.query.dtype.short} with attentionOut {a.attentionOut.dtype.short}")
        if self.base in ("TND", "NTD") and (a.actualSeqLengthsOptional is None or a.actualSeqLengthsKvOptional is None):
            raise tiling("actual_seq_required", f"layout {self.base} needs actualSeqLengths and actualSeqLengthsKv")
        if self.paged and a.actualSeqLengthsKvOptional is None:
            raise tiling("actual_seq_kv_paged", "a paged cache needs actualSeqLengthsKv")
        if not a.max_workspace:  # GetMaxWorkspaceSize's lengths have no values to check
            if not self.legacy_ifa:  # GetUpdateInfo drops the query lengths of the legacy IFA shape
                packed = self.base in PACKED
                self._lengths(a.actualSeqLengthsOptional, "actualSeqLengths", axes.b, axes.s, axes.s, packed)
            s2 = key_rows(a, self.base)
            # a paged cache's lengths are each batch's own (the parser's kvLayout is the cache's)
            kv_packed = self.base in PACKED and not self.paged
            batch = len(a.actualSeqLengthsOptional or ()) if self.base in PACKED else axes.b  # bSize_
            self._lengths(
                a.actualSeqLengthsKvOptional, "actualSeqLengthsKv", batch, s2, None if self.paged else s2, kv_packed
            )
        if a.attenMaskOptional is None and self.sparse != 0:
            raise tiling("mask_required", f"sparseMode {a.sparseMode} needs attenMask")
        sink = a.learnableSinkOptional
        if sink is not None:
            if self.rope and vd == 512:
                raise tiling("sink_mla", "learnableSink is not supported with MLA (value D 512)")
            if sink.ndim != 1 or sink.shape[0] != self.heads:
                raise tiling("sink_shape", f"learnableSink {list(sink.shape)} must be [{self.heads}] (numHeads)")
        if a.keySharedPrefixOptional is not None and self.paged:
            raise tiling("prefix_paged", "a shared prefix is not supported with a paged cache")
        if not self.rope:  # CheckFeatureGqaNoquant only
            self._feature_padding(axes)
            self._feature_pse()

    def _feature_padding(self, axes):
        """CheckFeatureLeftPadding: BSH/BSND/BNSD/BNSD_BSND, one batched key/value (no tensor list,
        no paged cache, no shared prefix); a query padding needs S > 1 and actualSeqLengths, a key
        padding actualSeqLengthsKv."""
        a = self.a
        q_pad = a.queryPaddingSizeOptional is not None and not self.legacy_ifa  # GetPaddingSizeFlag
        kv_pad = a.kvPaddingSizeOptional is not None
        if q_pad or kv_pad:
            if self.layout not in PADDING_LAYOUTS:
                raise tiling("padding_layout", f"left padding takes BSH, BSND, BNSD and BNSD_BSND, got {self.layout}")
            if len(a.key.items) > 1:
                raise tiling("padding_list", "left padding is not supported with a key/value tensor list")
            if self.paged:
                raise tiling("padding_paged", "left padding is not supported with a paged cache")
            if a.keySharedPrefixOptional is not None or a.valueSharedPrefixOptional is not None:
                raise tiling("padding_prefix", "left padding is not supported with a shared prefix")
        if q_pad and axes.s <= 1:
            raise tiling("padding_query_s", f"queryPaddingSize needs query S > 1, got {axes.s}")
        if q_pad and not a.actualSeqLengthsOptional:
            raise tiling("padding_q_lengths", "queryPaddingSize needs actualSeqLengths")
        if kv_pad and not a.actualSeqLengthsKvOptional:
            raise tiling("padding_kv_lengths", "kvPaddingSize needs actualSeqLengthsKv")

    def _feature_pse(self):
        """CheckFeaturePSE: a non-empty pseShift takes BSH/BSND/BNSD/BNSD_BSND and no 5-D (NZ) cache."""
        pse = self.a.pseShiftOptional
        if pse is None or pse.is_empty:
            return
        if self.layout not in PADDING_LAYOUTS:
            raise tiling("pse_layout", f"pseShift takes BSH, BSND, BNSD and BNSD_BSND, got {self.layout}")
        if self.paged and first(self.a.key).ndim == 5:
            raise tiling("pse_nz", "pseShift is not supported with a 5-D (NZ) paged cache")

    def _lengths(self, values, name, batch, limit, total, packed):
        """CheckFeatureActualSeqLensQData / KvData: a non-empty array of at most 64K entries; in
        the packed layouts (``packed``) cumulative, non-negative and non-decreasing; each batch's
        length in [0, limit]; TND's last query entry equal to T (``total``)."""
        if values is None:
            return
        if not values or len(values) > 64 * 1024:
            raise tiling(f"{name}.size", f"{name} holds {len(values)} values; 1 to 64K are allowed")
        batch = len(values) if packed else batch
        for i, value in enumerate(values[:batch]):
            if packed and (value < 0 or (i and value < values[i - 1])):
                raise tiling(f"{name}.cumulative", f"{name}[{i}] = {value}: cumulative lengths must not decrease")
            length = value - values[i - 1] if packed and i else value
            if not 0 <= length <= limit:
                raise tiling(f"{name}.range", f"{name}[{i}] computed is {length}, it should be in range [0, {limit}]")
        if packed and total is not None and self.base == "TND" and values[-1] != total:
            raise tiling(f"{name}.total", f"T ({total}) should equal the last element of {name} ({values[-1]})")

    def _consistency(self, axes, qd, rd, vd):
        """CheckMultiParaConsistency (…_tiling_check_consistency.cpp), in its order: the lengths'
        sizes, blockTable, queryRope, key/value/keyRope shapes (FiaTilingShapeCompare: batch
        continuous B, N2 and D as the query says; a tensor list batch 1 each; a paged cache
        [blocks, blockSize, N2 * D] or [blocks, N2, blockSize, D]), attentionOut, pseShift, the
        mask and tokens, softmaxLse, the shared prefix."""
        a = self.a
        batch = len(a.actualSeqLengthsOptional or ()) if self.base in PACKED else axes.b
        if not a.max_workspace:  # CheckActualSeqLensQ / Kv read the lengths' data
            self._length_sizes(batch)
        self._block_table(batch)
        if self.rope and tuple(a.queryRopeOptional.shape) != shaped(axes, self.base, rd):
            raise tiling("consistency.query_rope", f"queryRope {list(a.queryRopeOptional.shape)}, expected "
                         f"{list(shaped(axes, self.base, rd))}")  # fmt: skip
        parts = [("key", a.key.items, qd), ("value", a.value.items, vd)]
        if self.rope:
            parts.append(("keyRope", [a.keyRopeOptional], rd))
        for name, items, d in parts:
            for t in items:
                if not self._kv_shape_ok(t.shape, axes, d, len(a.key.items) > 1):
                    raise tiling(f"consistency.{name}", f"{name} {list(t.shape)} does not fit {self.layout} with "
                                 f"numKeyValueHeads {self.kv_heads} and D {d}")  # fmt: skip
        if not self.paged:  # each value holds as many key rows as its key (the shapes compared but D)
            for k, v in zip(a.key.items, a.value.items):
                if seq_len(k.shape, self.base) != seq_len(v.shape, self.base):
                    raise tiling("consistency.value_rows", f"value {list(v.shape)} and key {list(k.shape)} differ in S")
        want = shaped(axes, self.out_layout, vd)
        if tuple(a.attentionOut.shape) != want:
            raise tiling(
                "consistency.attention_out", f"attentionOut {list(a.attentionOut.shape)}, expected {list(want)}"
            )
        s2 = key_rows(a, self.base)
        self._pse_shift(axes, s2)
        self._mask(axes, s2)
        if a.lse_wanted:  # CheckSoftmaxLseShape: TN1 for a TND/NTD output, else BNS11
            packed = self.out_layout in ("TND", "NTD")
            want = (axes.s, axes.n, 1) if packed else (axes.b, axes.n, axes.s, 1)
            if tuple(a.softmaxLse.shape) != want:
                raise tiling("consistency.softmax_lse", f"softmaxLse {list(a.softmaxLse.shape)}, expected {list(want)}")
        self._system_prefix(qd)

    def _length_sizes(self, batch):
        """CheckActualSeqLensQ / CheckActualSeqLensKv: TND takes B entries (or 1), the key lengths as
        many as the query's; the other layouts at least B (or 1)."""
        a, tnd = self.a, self.base == "TND"
        q_lengths = None if self.legacy_ifa else a.actualSeqLengthsOptional
        for name, values in (("actualSeqLengths", q_lengths), ("actualSeqLengthsKv", a.actualSeqLengthsKvOptional)):
            if values is None:
                continue
            n = len(values)
            if name == "actualSeqLengthsKv" and tnd and q_lengths is not None and n != len(q_lengths):
                raise tiling(f"consistency.{name}.size", f"{name} holds {n} values, actualSeqLengths {len(q_lengths)}")
            if n != 1 and (n != batch if tnd else n < batch):
                raise tiling(f"consistency.{name}.size", f"{name} holds {n} values for batch size {batch}")

    def _block_table(self, batch):
        """CheckBlockTable: not empty; with a TND query one row per batch."""
        table = self.a.blockTableOptional
        if table is None:
            return
        if table.numel == 0:
            raise tiling("consistency.block_table_empty", "blockTable is empty")
        rows = shape_dim(table.shape, 0)
        if self.base == "TND" and rows != batch:
            raise tiling("consistency.block_table_batch", f"blockTable has {rows} rows for batch {batch}")

    def _pse_shift(self, axes, s2):
        """CheckPseShift's shape, [B or 1, N, >= S1, >= S2] (not read by GetMaxWorkspaceSize); its
        dtype check cannot fail here: the kernel key binds pseShift's dtype to the query's."""
        a, pse = self.a, self.a.pseShiftOptional
        if pse is None or a.max_workspace:
            return
        shape = tuple(pse.shape)
        if len(shape) != 4 or shape[0] not in (1, axes.b) or shape[1] != axes.n or not _covers(shape[2:], axes.s, s2):
            raise tiling("consistency.pse_shape", f"pseShift {list(shape)} does not cover [{axes.b} or 1, {axes.n}, "
                         f"{axes.s}, {s2}]")  # fmt: skip

    def _mask(self, axes, s2):
        """CheckMask (SetAttenMaskCompare, CheckAttentionMask, CheckTokens): sparse 0/1 take [S1, S2]
        ([B, S2] when S1 is 1), [B or 1, S1, S2] or [B or 1, 1, S1, S2] covering the query's S1 and
        the keys' S2; sparse 2-4 a 2048 x 2048 mask with leading 1s; then the tokens' window."""
        mask = self.a.attenMaskOptional
        if mask is None:
            return
        shape = tuple(mask.shape)
        if len(shape) not in (2, 3, 4):
            raise tiling("consistency.mask_rank", f"attenMask has {len(shape)} dims; 2, 3 or 4 are supported")
        if self.sparse in (0, 1):
            lead, rows = shape[:-2], shape[-2:]
            if self.a.max_workspace:  # GetMaxWorkspaceSize compares no shape here, the tokens still
                ok = True
            elif len(shape) == 2 and axes.s == 1:
                ok = shape[0] == axes.b and shape[1] >= s2
            else:
                ok = _covers(rows, axes.s, s2) and (not lead or (lead[0] in (1, axes.b) and lead[1:] in ((), (1,))))
        else:
            ok = shape[-2:] == (2048, 2048) and all(x == 1 for x in shape[:-2])
        if not ok:
            raise tiling("consistency.mask_shape", f"attenMask {list(shape)} does not fit sparseMode {self.sparse}, "
                         f"S1 {axes.s}, S2 {s2}")  # fmt: skip
        pre, nxt = self._tokens()
        if pre < 0 and nxt < 0:
            raise tiling("consistency.tokens_negative", f"preTokens ({pre}) and nextTokens ({nxt}) are both negative")
        if -nxt > pre:
            raise tiling("consistency.tokens_window", f"nextTokens ({nxt}) is below preTokens ({pre})")

    def _tokens(self) -> tuple[int, int]:
        """FiaInfoParser::GetPreNextToken (with a mask): INT_MAX for sparse 1, for sparse 0 with left
        padding and for the legacy IFA shape, (INT_MAX, 0) for 2/3, both clamped to +-INT_MAX."""
        a = self.a
        padded = a.queryPaddingSizeOptional is not None or a.kvPaddingSizeOptional is not None
        unbounded = self.legacy_ifa or (self.sparse == 0 and padded)
        pre, nxt = (INT_MAX, INT_MAX) if unbounded else (a.preTokens, a.nextTokens)
        pre, nxt = {1: (INT_MAX, INT_MAX), 2: (INT_MAX, 0), 3: (INT_MAX, 0)}.get(self.sparse, (pre, nxt))
        return max(-INT_MAX, min(pre, INT_MAX)), max(-INT_MAX, min(nxt, INT_MAX))

    def _system_prefix(self, qd):
        """CheckSystemPrefixShape: the valid length within the prefix, both prefix tensors of one
        shape, batch 1, N2 and D as the key's in the key's layout (CheckSystemPrefixDtype cannot fail
        here: the kernel key binds the prefixes' dtype to the key's)."""
        a = self.a
        k, v = a.keySharedPrefixOptional, a.valueSharedPrefixOptional
        if k is None or v is None:
            return
        rows = seq_len(k.shape, self.base)
        if a.actualSharedPrefixLenOptional and not a.max_workspace and a.actualSharedPrefixLenOptional[0] > rows:
            raise tiling(
                "consistency.prefix_len", f"actualSharedPrefixLen {a.actualSharedPrefixLenOptional[0]} > {rows}"
            )
        if tuple(k.shape) != tuple(v.shape):
            raise tiling(
                "consistency.prefix_shapes", f"keySharedPrefix {list(k.shape)}, valueSharedPrefix {list(v.shape)}"
            )
        if shape_dim(k.shape, 0) != 1:
            raise tiling("consistency.prefix_batch", f"keySharedPrefix batch is {shape_dim(k.shape, 0)}, it must be 1")
        want = shaped(Axes(1, self.kv_heads, rows, qd), self.base, qd)
        if tuple(k.shape) != want:
            raise tiling("consistency.prefix_shape", f"keySharedPrefix {list(k.shape)}, expected {list(want)}")

    def _kv_shape_ok(self, shape, axes, d, listed) -> bool:
        n2, block = self.kv_heads, self.a.blockSize
        if self.paged:  # BnBsH, BnNBsD or NZ [Bn, N2, D / D0, Bs, D0] (fia_tiling_shape.cpp GetExpectedShape)
            d0 = NZ_BYTES // SIZE[first(self.a.key).dtype]  # blockSize % D0: CheckFeature's % 16 decides it
            return tuple(shape[1:]) in ((block, n2 * d), (n2, block, d), (n2, d // d0, block, d0))
        batch = 1 if listed else axes.b
        base = self.base
        if base in ("TND", "NTD"):
            heads = shape[1] if base == "TND" else shape[0]
            return len(shape) == 3 and heads == n2 and shape[2] == d
        if base == "BSH":
            return len(shape) == 3 and shape[0] == batch and shape[2] == n2 * d
        heads_axis = 1 if base == "BNSD" else 2
        return len(shape) == 4 and shape[0] == batch and shape[heads_axis] == n2 and shape[3] == d
