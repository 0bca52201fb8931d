"""TilingFusedInferAttentionScore's routing as CANN 9.0.0 rewrote it (Atlas A2/A3), to name the
calls it routes otherwise than 8.5.

aclnn-emu runs 8.5's routing and the 8.5 FIA-V3 checks and kernels under every release
(versions.UNEMULATED). From 9.0.0 on, RouteToFia (op_host/arch32/ at 9.0.0, arch22/ at 9.1.0,
fused_infer_attention_score_tiling_v3.cpp) sends every FLOAT16/BF16 call whose query and value head
sizes it can read to the FIA-V3 kernels, except:
- IsLegacyTemplatePreferred: S 1 in BNSD/BSND/BSH, MHA, not paged, no rope, qD = vD, and D 256
  without a shared prefix or D 80 with one;
- CheckSpecConditions, without rope: the TND calls of the split-fuse kernels. 9.x widens 8.5's
  condition (sparse mode 4, a learnable sink unless D 64 with a BF16 sink, MHA in BF16 or with a
  mask in modes 3/4, any block size that is a multiple of 16 up to 512); 9.1.0 adds 5-D (NZ) caches
  of D other than 64/128 and leaves calls with a quantScale2 on the FIA-V3 route;
- NSD, whose head sizes GetQkvD does not read (it returns false before the layout test).
8.5 instead routes there only what CheckGqaConstrain / CheckMlaConstrain take: in the legacy layouts,
head sizes 64, 128, 192/128, 128 + rope 64 or 512 + rope 64, without pse, padding, shared prefix or
output quantisation (checks.route_to_fia).
The calls left then go to the split-fuse kernels where IsUsingFAI takes them (fused_infer_attention_
score_tiling.cpp: CheckSpecConditions' rules without the quantScale2 one), to the IFA tiling where
IsUsingIFA does (9.x: IsGqaMtp adds TND over a 5-D INT8 cache with a BF16 query of D 128 and at most
16 rows per batch), else to the PFA tiling.
"""

from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_int32, shape_dim

from .route import first, qkv_d

F16, BF16, I8 = DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8
LEGACY_LAYOUTS = ("BNSD", "BSND", "BSH")
_S_AXIS = {"BNSD": (4, 2), "BSND": (4, 1), "BSH": (3, 1)}  # GetQS: (rank, axis of S)


def route(a, release: str, is_using_ifa_85) -> str:
    """The tiling `release` (9.0.0 or later) sends an Atlas A2/A3 call to: "FIA-V3", "split-fuse",
    "IFA" or "PFA"; `is_using_ifa_85` 8.5's IsUsingIFA (checks.is_using_ifa), which 9.x extends."""
    if routes_to_fia(a, release):
        return "FIA-V3"
    if spec_conditions(a, release, fai=True):
        return "split-fuse"
    return "IFA" if is_using_ifa_85(a) or _tnd_kv_nz_mtp(a) else "PFA"


def _tnd_kv_nz_mtp(a) -> bool:
    """IsGqaMtp's TND branch (9.x): no queryRope, a 5-D key, a BF16 query of D 128 over INT8 keys and
    values, and the longest batch (GetTndQueryS over the block table's B rows) 1 to 16 rows."""
    k, v = first(a.key), first(a.value)
    if (a.inputLayout or "BSH") != "TND" or a.queryRopeOptional is not None or k.ndim != 5 or a.query.ndim != 3:
        return False
    if a.query.shape[2] != 128 or (a.query.dtype, k.dtype, v.dtype) != (BF16, I8, I8):
        return False
    table, ends = a.blockTableOptional, a.actualSeqLengthsOptional
    batch = shape_dim(table.shape, 0) if table is not None else 0
    if batch == 0:
        return False
    if ends is None or a.actualSeqLengthsKvOptional is None:  # no data: the tiling's even split
        longest = -(-a.query.shape[0] // batch)
    else:
        ends = [int(x) for x in ends[:batch]]
        longest = max((e1 - e0 for e0, e1 in zip([0, *ends[:-1]], ends)), default=0)  # none: no rows
    return 1 <= longest <= 16


def routes_to_fia(a, release: str) -> bool:
    """RouteToFia of `release` (9.0.0 or later) for an Atlas A2/A3 call."""
    q_dtype = a.query.dtype
    if q_dtype not in (F16, BF16) or q_dtype != first(a.key).dtype:
        return False
    dims = qkv_d(a)
    layout = a.inputLayout or "BSH"
    s = _query_s(a.query, layout)
    if dims is None or s is None:
        return False
    heads, kv_heads = a.numHeads, a.numKeyValueHeads  # int64 attributes, read whole from 9.0.0 on
    mha = kv_heads in (0, heads)
    paged = a.blockTableOptional is not None
    prefix = a.keySharedPrefixOptional is not None or a.valueSharedPrefixOptional is not None
    qd, rd, vd = dims
    if qd == vd and rd == 0 and s == 1 and layout in LEGACY_LAYOUTS and mha and not paged:
        if (qd == 256 and not prefix) or (qd == 80 and prefix):
            return False
    rope = a.queryRopeOptional is not None and a.keyRopeOptional is not None
    return rope or not spec_conditions(a, release)


def _query_s(query, layout: str) -> int | None:
    """GetQS: the query's S in BNSD/BSND/BSH (None for another rank), 0 in the other layouts."""
    if layout not in _S_AXIS:
        return 0
    rank, axis = _S_AXIS[layout]
    return query.shape[axis] if query.ndim == rank else None


def spec_conditions(a, release: str, fai: bool = False) -> bool:
    """CheckSpecConditions of `release` (9.0.0 or later): the TND calls the split-fuse kernels take;
    with `fai` IsUsingFAI, the same rules but the quantScale2 one."""
    if (a.inputLayout or "BSH") != "TND" or a.query.ndim != 3:
        return False
    qd = a.query.shape[2]
    sink = a.learnableSinkOptional
    if sink is not None and qd == 64 and sink.dtype == BF16:
        return False
    if a.queryRopeOptional is not None and a.keyRopeOptional is not None:
        return False
    heads, kv_heads = a.numHeads, a.numKeyValueHeads
    sparse, precise = attr_int32(a.sparseMode), attr_int32(a.innerPrecise)
    mha = kv_heads in (0, heads)
    mha_ok = (
        mha and not (a.query.dtype == BF16 and precise == 1) and not (sparse == 0 and a.attenMaskOptional is not None)
    )
    if sparse not in (0, 3, 4) or not (mha_ok or (not mha and precise == 0)):
        return False
    if release != "9.0.0" and a.quantScale2Optional is not None and not fai:
        return False
    k, v = first(a.key), first(a.value)
    if a.blockTableOptional is None:
        return _fai_d(qd, shape_dim(k.shape, 2), shape_dim(v.shape, 2))
    if k.ndim == 3 and kv_heads:
        # a KV head count of 0 divides by zero in the source; such a call fails its later checks anyway
        return _fai_d(qd, k.shape[2] // kv_heads, shape_dim(v.shape, 2) // kv_heads) and _block_ok(k.shape[1])
    if k.ndim == 5 and release != "9.0.0":
        kd, vd = k.shape[2] * 16, shape_dim(v.shape, 2) * 16
        return _fai_d(qd, kd, vd) and qd % 16 == 0 and qd not in (64, 128) and _block_ok(k.shape[3])
    return False


def _fai_d(qd, kd, vd) -> bool:
    return qd <= 256 and kd <= 256 and vd <= 256 and qd == kd == vd


def _block_ok(block_size: int) -> bool:
    return block_size % 16 == 0 and block_size <= 512
