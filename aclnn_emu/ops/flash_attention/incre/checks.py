"""aclnnIncreFlashAttentionV4 (attention/incre_flash_attention, CANN 8.5).

V4 (like V1-V3) only forwards to aclnnInnerIncreFlashAttention, which opbuild generates from the
OpDef (`ACLNNTYPE aclnn_inner`), so the codes are those of a generated entry point
(ops.generated): required NULLs (query, the key/value lists, attentionOut) -> 161001; an empty
attentionOut -> success; the (dtype, format) lookup over the OpDef's 22 combinations -> 161002
(required) / 561003 (optional only); then the tiling, whose every failure is 561002.
Atlas A2/A3 run IFATiling (incre_flash_attention_tiling.cpp, _tiling_check.cpp); its checks are
replayed in `_Tiling` in the source's order; a query S in [2, 16] and a 5-D key take the tiling
branches described in ifa_speculative and ifa_kv_nz. Ascend910_95 runs IFATilingV2, which hands a
FLOAT16/BF16 key to the PFA arch35 tiling and kernels (incre/checks_arch35) and runs an INT8 key itself
(incre/antiquant_arch35; a query S above 1 there is not emulated). Differences from the doc:
docs/divergences/incre_flash_attention.md.
"""

from aclnn_emu.opdef.failures import TilingFailure, mapped
from types import SimpleNamespace
import numpy as np
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.formats import Format
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import (
    all_outputs_empty,
    attr_uint32,
    check_kernel_key,
    check_required_not_null,
    shape_dim,
)
from aclnn_emu.opdef.signature import Launch, Op, OpError, TensorIn
from . import antiquant_arch35, checks_arch35
from ..common import on_arch35
from .entry import I8, OP, V1, V2, V3
from .kv_nz import failure, pse_failure
from .launch import REFUSED, _run, key_view_by_kv_heads
from .speculative import bsh_split, out_of_batch, outer_loops, warning


INFERRED = Gaps(
    OP,
    "inferred",
    {"out_size": "an attentionOut smaller than B x N x D (the kernel writes B x N x D elements, past its end)"},
    code=status.ACLNN_ERR_INNER_TILING_ERROR,
)

TND_RULE = "ifa.tnd_rope_check_d512_only"
NOT_EMULATED = Gaps(
    OP,
    "not_implemented",
    {
        "tnd_without_rope": "from CANN 9.0.0, a TND (or TND_NTD) query without rope inputs other than TND with D 512 "
        "passes the rope check and goes on to 9.x's TND tiling and kernels (KV-NZ antiquant, GQA), which aclnn-emu "
        "does not emulate"
    },
)

UNESTABLISHED = Gaps(
    OP,
    "unestablished",
    {
        "query_batch_negative": "a query whose batch (dimension 0) is negative and differs from the key's: the "
        "tiling's ConvertContext resizes its key and value lists to that batch, which throws in C++ before any check"
    },
)


# The same signature with the key/value lists seen as single tensors: the generated entry point
# checks and keys each list through its tensors (NnopbaseAppendDynamicTensorsKey).
_KEYED = Op(OP.name, OP.header, [TensorIn(p.name) if p.kind == "tensor_list" else p for p in OP.params])


F16, BF16, U8 = DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_UINT8


FP32, BOOL, I32, I64, U64 = (
    DataType.ACL_FLOAT,
    DataType.ACL_BOOL,
    DataType.ACL_INT32,
    DataType.ACL_INT64,
    DataType.ACL_UINT64,
)


def _column(spec: str) -> list:
    names = {"h": F16, "b": BF16, "i": I8, "u": U8, "B": BOOL, "L": I64, "U": U64, "f": FP32, "I": I32}
    return [names[c] for c in spec]


# incre_flash_attention_def.cpp, the 22 combinations of ascend910b / ascend910_93 (all ND).
_DEF = {
    "query": "hbhhhbhbhhhbhbhhhbbbbb",
    "key": "hbhiiihbhiiihbhiiiibib",
    "value": "hbhiiihbhiiihbhiiiibib",
    "pseShift": "hbhhhbhbhhhbhbhhhbbbbb",
    "attenMask": "BBBBBBiiiiiiuuuuuuBBBB",
    "dequantScale1": "UUUUUUUUUUUUUUUUUUffff",
    "quantScale1": "ffffffffffffffffffffff",
    "dequantScale2": "UUUUUUUUUUUUUUUUUUffff",
    "quantScale2": "ffffffffffffffffffbbff",
    "quantOffset2": "ffffffffffffffffffbbff",
    "antiquantScale": "hbhhhbhbhhhbhbhhhbbbbb",
    "antiquantOffset": "hbhhhbhbhhhbhbhhhbbbbb",
    "blocktable": "IIIIIIIIIIIIIIIIIIIIII",
    "kvPaddingSize": "LLLLLLLLLLLLLLLLLLLLLL",
    "attentionOut": "hbihibhbihibhbihibiiii",
}


COMBOS = OP.kernels([dict(zip(_DEF, row)) for row in zip(*(_column(spec) for spec in _DEF.values()))])


ORIGIN_FORMATS = (Format.ACL_FORMAT_ND, Format.ACL_FORMAT_NCHW, Format.ACL_FORMAT_NHWC, Format.ACL_FORMAT_NCDHW)


WORKSPACE = 16 * 1024 * 1024  # the AscendC system workspace (GetLibApiWorkSpaceSize)


MAX_BLOCK_SIZE, COPY_STRIDE_LIMIT = 512, 65535


MAX_BATCH, MAX_D, MAX_KV_HEADS, MAX_GROUP, MAX_QS = 65536, 512, 256, 64, 16


def _fail(rule: str, message: str):
    """A tiling check failed: GRAPH_FAILED, which the generated entry point returns as 561002 (`prepare`)."""
    raise TilingFailure(rule, message)


# What each older entry point passes the generated inner op in place of the parameters it lacks
# (aclnn_incre_flash_attention.cpp, _v2.cpp, _v3.cpp; V1 and V2 drop their pseShift, `(void) pseShift`).
_UNPAGED = dict(
    antiquantScale=None, antiquantOffset=None, blocktable=None, kvPaddingSize=None, blockSize=0, innerPrecise=1
)
FIXED = {
    V1: dict(
        pseShift=None,
        dequantScale1=None,
        quantScale1=None,
        dequantScale2=None,
        quantScale2=None,
        quantOffset2=None,
        **_UNPAGED,
    ),
    V2: dict(pseShift=None, **_UNPAGED),
    V3: dict(kvPaddingSize=None),
}


def _fix(op):
    @op.check
    def fixed(a, env):
        for name, value in FIXED[op].items():
            setattr(a, name, value)


for _op in FIXED:
    _fix(_op)


@OP.prepare
def prepare(a, env):
    keyed = _keyed_view(a)
    check_required_not_null(keyed, _KEYED)
    if all_outputs_empty(a, OP):
        return Launch.nothing()
    _check_lists_keyed(a)
    check_kernel_key(keyed, _KEYED, COMBOS)
    if on_arch35(env):
        if a.key.items[0].dtype == I8:
            return Launch(WORKSPACE, antiquant_arch35.tiling(a, env, ORIGIN_FORMATS))
        return Launch(WORKSPACE, checks_arch35.tiling(a, env))
    with mapped(status.ACLNN_ERR_INNER_TILING_ERROR, "IncreFlashAttention tiling failed: ", "tiling."):
        return Launch(WORKSPACE, _Tiling(a, env).run())


def _keyed_view(a):
    """The arguments with each list replaced by its first tensor (None for a NULL or empty list)."""
    view = SimpleNamespace(**vars(a))
    for name in ("key", "value"):
        items = getattr(a, name).items if getattr(a, name) is not None else []
        setattr(view, name, items[0] if items and items[0] is not None else None)
    return view


def _check_lists_keyed(a):
    """Every tensor of a list takes part in the kernel key: all must share the first one's dtype
    and format, or no combination matches (161002, a required input)."""
    for name in ("key", "value"):
        items = getattr(a, name).items
        first = items[0]
        for i, t in enumerate(items):
            if t is None:
                raise OpError(status.ACLNN_ERR_PARAM_NULLPTR, f"{name}[{i}] must not be nullptr", rule=f"null.{name}")
            if (t.dtype, t.format) != (first.dtype, first.format):
                raise OpError(
                    status.ACLNN_ERR_PARAM_INVALID,
                    f"{name}[{i}] has dtype {t.dtype.short} and format {t.format.short} but {name}[0] "
                    f"{first.dtype.short} and {first.format.short}; the registered kernels take one dtype "
                    "and format for the whole list",
                    rule=f"dtype.{name}",
                )


class _Tiling:
    """IFATiling::RunBigKernelTiling up to the kernel selection (PreProcess), check by check.

    The tiling's dtype checks of key vs value, pseShift, attenMask, quantScale2/quantOffset2 and the
    antiquant parameters never fail here: every combination they reject has no kernel key, so the
    generated entry point has already returned 161002 or 561003. The same holds for the BSH check
    of query S (the S check of GetRopeAndGqaFlag comes first)."""

    def __init__(self, a, env):
        self.a, self.env = a, env
        self.layout = "BSH" if a.inputLayout is None else a.inputLayout
        self.q = a.query
        self.keys, self.values = a.key.items, a.value.items
        self.batch = shape_dim(self.q.shape, 0)
        self.paged = a.blocktable is not None

    def run(self):
        self._base_inputs()
        self._optional_tensors()
        return self._launch()

    # -- ProcessBaseInputs ---------------------------------------------------------------------
    def _base_inputs(self):
        q = self.q
        # ConvertContext: a key batch that differs from the query's means one tensor per batch.
        self.listed = self.batch != shape_dim(self.keys[0].shape, 0)
        if self.listed and self.batch < 0:
            UNESTABLISHED.refuse("query_batch_negative", f"query {list(q.shape)}")
        count = self.batch if self.listed else 1
        self.k_cache = [self.keys[i] if i < len(self.keys) else None for i in range(count)]
        self.v_cache = [self.values[i] if i < len(self.values) else None for i in range(count)]
        if q.numel == 0:
            _fail("query_empty", "Tensor query is empty cause shapesize is 0.")
        self._qkv_preprocess()
        self._attrs_preprocess()
        self._kv_shapes()
        self._qk_out_shape()
        self._formats_and_limits()

    def _qkv_preprocess(self):
        a, q, k0 = self.a, self.q, self.keys[0]
        self.antiquant = q.dtype != k0.dtype and k0.dtype == I8
        heads, kv = attr_uint32(a.numHeads), attr_uint32(a.numKeyValueHeads)
        if heads == 0:
            _fail("heads_zero", "the query's heads num is zero")
        kv = kv or heads
        if kv > heads or heads % kv:
            _fail("kv_heads", f"Attr num_key_value_heads is invalid, n: {heads}, the key/value's heads num: {kv}")
        self.heads, self.kv_heads, self.group = heads, kv, heads // kv
        layout, qs, k_rank = self.layout, q.shape, k0.ndim
        if layout in ("BSH", "BSH_NBSD"):
            if shape_dim(qs, 2) % heads:
                _fail("bsh_h", "H should be an interger multiple of numHeads")
            s_q, d, q_heads = shape_dim(qs, 1), shape_dim(qs, 2) // heads, heads
            if attr_uint32(a.numKeyValueHeads) != 0 and k_rank == 3:
                if shape_dim(k0.shape, 2) == 0:
                    # D N N2 / 0: an integer division by zero in GetInOutLayout4BSH. x86 hosts die of
                    # SIGFPE; aarch64 hosts (sdiv gives 0) fail the heads check below. aclnn-emu does the latter.
                    _fail(
                        "bsh_h_zero",
                        "the query's heads num should be equal to qOfHeadnum (the key's H is 0: "
                        "the tiling divides D x numHeads x numKeyValueHeads by it, which kills x86 hosts with "
                        "SIGFPE; aarch64 hosts read 0 heads and fail here)",
                    )
                q_heads = d * heads * kv // shape_dim(k0.shape, 2)
        elif layout in ("BSND", "BSND_NBSD"):
            s_q, d, q_heads = shape_dim(qs, 1), shape_dim(qs, 3), shape_dim(qs, 2)
        elif layout in ("BNSD", "BNSD_NBSD"):
            s_q, d, q_heads = shape_dim(qs, 2), shape_dim(qs, 3), shape_dim(qs, 1)
        elif layout in ("TND", "TND_NTD"):
            s_q, d, q_heads = shape_dim(qs, 0), shape_dim(qs, 2), shape_dim(qs, 1)
        else:
            _fail("layout", f"Only support input_layout(BSH, BNSD, BSND, TND), actually is {layout}")
        self.s_q, self.d = s_q, d
        if heads != q_heads:
            _fail(
                "query_heads",
                f"the query's heads num should be equal to qOfHeadnum (numHeads {heads}, heads of query {q_heads})",
            )
        self.mtp = 1 < s_q <= MAX_QS  # gqaMtpFlag_ (ifa_speculative)
        self.kv_nz = k_rank == 5  # gqaKvNZFlag_ (ifa_kv_nz)
        if not self.mtp and s_q != 1:
            _fail(
                "query_s",
                f"In case where MLA is not applied, S of Query:{s_q} is invalid. It should be in range [1, 16]",
            )
        if layout in ("TND", "TND_NTD"):
            if self.env.version.has(TND_RULE) and not (layout == "TND" and d == 512):
                NOT_EMULATED.refuse("tnd_without_rope", f"inputLayout {layout}, D {d}")
            _fail("tnd_rope", f"When D is 512, inputlayout {layout} q_rope and k_rope should not be null!")

    def _attrs_preprocess(self):
        a = self.a
        self.inner_precise = attr_uint32(a.innerPrecise)
        if self.inner_precise not in (0, 1):
            _fail("inner_precise", f"precision mode[{self.inner_precise}] should be 0 or 1")
        if self.paged and a.blocktable.numel == 0:
            _fail("blocktable_empty", "check blockTable shape failed, blockTable shapeSize is zero.")
        self.batch_continuous = not self.paged and self.batch == shape_dim(self.keys[0].shape, 0)

    def _kv_shapes(self):
        """KvShapePostProcess: the paged cache's sMax, or each key tensor's S."""
        a, k0 = self.a, self.keys[0]
        self.block_size = attr_uint32(a.blockSize)
        if self.paged:
            self.max_blocks = shape_dim(a.blocktable.shape, 1)
            self.s_max = self.max_blocks * self.block_size
            self.kv_lens = []
            if k0.ndim == 4 and self.layout not in ("BNSD", "TND", "TND_NTD", "BNSD_NBSD"):
                _fail(
                    "pa_bnbd_layout",
                    "when Page Attention scene, kvcache is BNBD, query layout must be BNSD, "
                    f"BNSD_NBSD, TND, TND_NTD or BNSD_BSND (inputLayout is {self.layout})",
                )
            return
        lens = []
        for i, (k, v) in enumerate(zip(self.k_cache, self.v_cache)):
            if k is None or v is None:
                _fail(
                    "kv_list_short",
                    "kv tensor list length should be greater than or equal to q batch, "
                    f"kv tensor list index[{i}] is null, q batch: {self.batch}",
                )
            if k.shape != v.shape:
                _fail("kv_shape_same", f"k v shape shoud be same (key {list(k.shape)}, value {list(v.shape)})")
            if self.listed:
                self._list_entry(i, k, v)
            self._same_but_s(i, k)
            s = shape_dim(k.shape, 2 if self.layout in ("BNSD", "BNSD_NBSD") else 1)
            lens.append(0 if k.numel == 0 else s)
        self.kv_lens = lens
        self.s_max = max(lens)

    def _list_entry(self, i, k, v):
        """CheckKVShape: a tensor-list entry holds one batch, with the key/value head count."""
        layout = self.layout
        rank = {"BSH": 3, "BNSD": 4, "BSND": 4}.get(layout)
        if rank is not None and (k.ndim != rank or v.ndim != rank):
            _fail(
                "kv_list_rank",
                f"IFA check input param failed, tensor in list dim num should be {rank}, k: {k.ndim}, v: {v.ndim}.",
            )
        if shape_dim(k.shape, 0) != 1:
            _fail(
                "kv_list_batch",
                "IFA check input param failed, b of tensor in tensor list should be 1, now b is: "
                f"{shape_dim(k.shape, 0)}, list index: {i}",
            )
        for t in (k, v):
            found = {
                "BSH": shape_dim(t.shape, 2) // self.d if self.d else 0,
                "BNSD": shape_dim(t.shape, 1),
                "BSND": shape_dim(t.shape, 2),
            }.get(layout, 0)
            if found != self.kv_heads:
                _fail(
                    "kv_list_heads",
                    f"IFA check input param failed, tensor in list head num({found}) should be {self.kv_heads}.",
                )

    def _same_but_s(self, i, k):
        """CheckKeyShapeTensor: every key tensor equals the first in all dimensions but S."""
        s_axis = {"BNSD": 2, "BSND": 1, "BSH": 1}.get(self.layout)
        first = self.k_cache[0].shape
        for idx in range(k.ndim):
            if idx != s_axis and shape_dim(first, idx) != k.shape[idx]:
                _fail(
                    "kv_list_same",
                    "IFA check input param failed, tensor in keyShape except S must be same, "
                    f"index:[{idx}] is not same, k0: {shape_dim(first, idx)}, k: {k.shape[idx]} (list index {i})",
                )

    def _qk_out_shape(self):
        """CheckQKOutShape (not for page attention)."""
        if self.paged:
            return
        q, k, out, layout = self.q, self.k_cache[0], self.a.attentionOut, self.layout
        if layout in ("BSH", "BSH_NBSD"):
            want_out = 3 if layout == "BSH" else 4
            if q.ndim != 3 or k.ndim != 3 or out.ndim != want_out:
                _fail(
                    "bsh_dims",
                    f"When input layout is BSH/BSH_NBSD, the dimension should be 3, the dimOfOut "
                    f"should be {want_out}, dimOfQ: {q.ndim}, dimOfK: {k.ndim}, dimOfOut: {out.ndim}",
                )
            if q.shape[2] // self.heads != k.shape[2] // self.kv_heads:
                _fail(
                    "bsh_d",
                    f"When input layout is BSH,the 3rd dimOfQ/numHeads({q.shape[2] // self.heads}) should "
                    f"be equal to the 3rd dimOfK/numKvHeads({k.shape[2] // self.kv_heads})",
                )
            return
        if q.ndim != 4 or k.ndim != 4 or out.ndim != 4:
            _fail(
                "bnsd_dims",
                f"When input layout is BNSD/BSND, the dim should be 4, 4th dimOfQ: {q.ndim}, "
                f"4th dimOfK: {k.ndim}, fourth dimOfOut: {out.ndim}",
            )
        if q.shape[3] != k.shape[3]:
            _fail(
                "bnsd_d",
                "When input layout is BNSD/BSND, the 4th dimOfQ not be equal the 4th dimOfK, "
                f"dimOfQ: {q.shape[3]}, dimOfK: {k.shape[3]}",
            )

    def _formats_and_limits(self):
        """CheckInputFormatAndLimits (Atlas A2/A3 branch)."""
        a = self.a
        for name, t in (
            ("Query", self.q),
            ("Key", self.keys[0]),
            ("Value", self.values[0]),
            ("atten_mask", a.attenMask),
            ("padding_size", a.kvPaddingSize),
            ("antiquantScale", a.antiquantScale),
            ("antiquantOffset", a.antiquantOffset),
        ):
            if t is not None and t.format not in ORIGIN_FORMATS:
                _fail("format", f"{name} format {t.format.short} should be ND/NCHW/NHWC/NCDHW")
        if self.group > MAX_GROUP:
            _fail(
                "group",
                f"the query's heads num divided by the key/value's heads num = {self.group}, cannot be greater than 64",
            )
        if self.paged:
            kv_dtype = self.keys[0].dtype
            if kv_dtype in (F16, BF16) and self.block_size % 16:
                _fail(
                    "pa_block_align16", f"blockSize={self.block_size}, it need align to 16 when kv dtype is fp16/bf16."
                )
            if kv_dtype == I8 and self.block_size % 32:
                _fail("pa_block_align32", f"blockSize={self.block_size}, it need align to 32 when kv dtype is int8.")
        if self.batch > MAX_BATCH:
            _fail("batch", f"batch size:{self.batch} cannot be greater than 65536.")
        if self.d > MAX_D:
            _fail("head_dim", f"headDim:{self.d} cannot be greater than 512.")
        if self.kv_heads > MAX_KV_HEADS:
            _fail("kv_heads_max", f"numHead of key and value:{self.kv_heads} cannot be greater than 256.")

    # -- ProcessOptionalTensors ----------------------------------------------------------------
    def _optional_tensors(self):
        self._actual_seq_lengths()
        self._pse_shift()
        self._atten_mask()
        self._quant1()
        self._quant2()
        self._antiquant()
        self._block_table()
        self._kv_padding()
        if self.kv_nz:
            _fail(*failure(self.a, self.antiquant, self.d))

    def _actual_seq_lengths(self):
        values, paged = self.a.actualSeqLengths, self.paged
        self.has_actual = values is not None
        self.max_actual = self.s_max
        self.actual = None
        if values is None:
            if paged:
                _fail(
                    "actual_seq_null",
                    "the key/value's actual sequence lengths is null, it must exist in pageAttention scene",
                )
            return
        if len(values) == 0:
            if paged:
                self.env.warn(
                    "actualSeqLengths is empty in a page attention call: every batch reads "
                    f"maxBlockNumPerBatch * blockSize = {self.s_max} tokens through its block table"
                )
            return
        if len(values) != 1 and len(values) < self.batch:
            _fail(
                "actual_seq_len",
                f"the key/value's actual sequence lengths size[{len(values)}] should be greater "
                f"than q batch[{self.batch}] or equal to 1.",
            )
        loop = 1 if len(values) == 1 and len(self.k_cache) == 1 else self.batch
        self.max_actual = 0
        for i in range(loop):
            act = values[0] if len(values) == 1 else values[i]
            if act < 0:
                _fail(
                    "actual_seq_negative",
                    f"the value of the key/value's actual sequence lengths[{i}] must be "
                    f"greater than or equal to 0, but it is {act}",
                )
            if not paged:
                seq = self.kv_lens[0] if len(self.kv_lens) == 1 else self.kv_lens[i]
                if attr_uint32(act) > seq:
                    _fail(
                        "actual_seq_range",
                        f"the key/value's actual sequence lengths[{i}]({act}) cannot be "
                        f"greater than seq_length({seq}) in input key.",
                    )
            self.max_actual = max(self.max_actual, attr_uint32(act))
        self.actual = [values[0] if len(values) == 1 else values[i] for i in range(self.batch)]

    def _pse_shift(self):
        pse = self.a.pseShift
        if pse is None:
            return
        if self.kv_nz:
            _fail(*pse_failure())
        if pse.ndim != 4:
            _fail("pse_rank", f"The input shape of pse shift must have 4 dims, current dim num is {pse.ndim}.")
        b, n, s0, s1 = pse.shape
        if b not in (1, self.batch) or n != self.heads or s0 != 1:
            _fail(
                "pse_shape",
                f"The shape of pse shift is ({b}, {n}, {s0}, {s1}), which does not match (B, N, 1, S) or (1, N, 1, S).",
            )
        if s1 < self.s_max:
            _fail(
                "pse_s",
                f"The shape of pse shift is ({b}, {n}, {s0}, {s1}), the 3rd dim S[{s1}] shouldn't be less "
                f"than sMax[{self.s_max}].When Page Attention is enabled, sMax is maxBlockNumPerBatch * blockSize.",
            )

    def _atten_mask(self):
        mask = self.a.attenMask
        self.has_mask = mask is not None and mask.numel != 0
        if not self.has_mask:
            if mask is not None:
                self.env.warn("attenMask has 0 elements: no mask is applied")
            return
        if self.mtp:
            return
        if shape_dim(mask.shape, 0) != self.batch:
            _fail(
                "mask_batch",
                f"batchSize[{shape_dim(mask.shape, 0)}] of atten_mask must be equal to batchSize"
                f"[{self.batch}] of query.",
            )
        need = self.s_max if self.paged else self.max_actual
        if mask.shape[-1] < need:
            _fail("mask_s", f"s Size[{mask.shape[-1]}] of atten_mask must be greater than or equal to sMax[{need}].")

    def _quant1(self):
        for name, label in (
            ("dequantScale1", "dqtScale1"),
            ("quantScale1", "qtScale1"),
            ("dequantScale2", "dqtScale2"),
        ):
            if getattr(self.a, name) is not None:
                _fail(f"quant1.{name}", f"when input type is not int8, {label} should be null ({name})")

    def _quant2(self):
        a = self.a
        scale, offset = a.quantScale2, a.quantOffset2
        self.out_int8 = a.attentionOut.dtype == I8
        if not self.out_int8:
            if scale is not None:
                _fail(
                    "quant2.scale_present",
                    "the output's dequant scale exist, output data type should be INT8, "
                    f"but now it's {a.attentionOut.dtype.short} (quantScale2)",
                )
            if offset is not None:
                _fail(
                    "quant2.offset_present",
                    "the output's dequant offset exist, output data type should be INT8, "
                    f"but now it's {a.attentionOut.dtype.short} (quantOffset2)",
                )
            return
        if scale is None:
            _fail(
                "quant2.scale_null",
                "output data type is int8, but input tensor of the output's dequant scale (quantScale2) is null",
            )
        if scale.numel != 1:
            self._quant2_shape(scale.shape, "quantScale2")
        if offset is not None and offset.numel != 1:
            self._quant2_shape(offset.shape, "quantOffset2")

    def _quant2_shape(self, shape, name):
        """CheckQuant2Shape: the per-channel shapes of N x D (N the query's heads)."""
        n, d = self.heads, self.d
        valid = {(1, n, 1, d), (n, 1, d), (n, d), (1, 1, n, d), (1, n, d), (1, n * d), (1, 1, n * d), (n * d,)}
        if tuple(shape) in valid:
            return
        expect = {
            4: f"[1, {n}, 1, {d}] or [1, 1, {n}, {d}]",
            3: f"[{n}, 1, {d}], [1, {n}, {d}] or [1, 1, {n * d}]",
            2: f"[1, {n * d}] or [{n}, {d}]",
            1: f"[{n * d}]",
        }.get(len(shape))
        if expect is None:  # rank 5+: no message and no failure; the kernel reads N x D values
            if int(np.prod(shape)) < n * d:
                REFUSED.refuse("quant2_rank", f"{name} {list(shape)} holds fewer than {n} x {d} values")
            return
        _fail(
            f"quant2.shape_{name}",
            f"The shape of postquant parameter{list(shape)} is not expected shape. Expect {expect} ({name}).",
        )

    def _antiquant(self):
        a = self.a
        scale, offset = a.antiquantScale, a.antiquantOffset
        if not self.antiquant:
            if scale is not None or offset is not None:
                _fail(
                    "antiquant.unenabled",
                    "KV antiquant is unenabled, but antiquant antiquantScale/antiquantOffset exist",
                )
            return
        if scale is None:
            _fail("antiquant.scale_null", "KV antiquant is enabled, but the input antiquant scale is NULL")
        if offset is not None and scale.ndim != offset.ndim:
            _fail(
                "antiquant.rank_differ",
                "KV antiquant is enabled, but antiquant params have different "
                f"layouts[scale: {scale.ndim}, offset: {offset.ndim}].",
            )
        self._antiquant_shape(scale, "antiquantScale")
        if offset is not None:
            self._antiquant_shape(offset, "antiquantOffset")

    def _antiquant_shape(self, t, name):
        """CheckKVAntiQuantParaShapeLegal, per-channel mode (the only one V4 can select)."""
        n, d, shape = self.kv_heads, self.d, tuple(t.shape)
        if len(shape) == 1:
            if shape != (2,):
                _fail(
                    f"antiquant.per_tensor_{name}",
                    f"The shape of antiquant parameter[{shape[0]}] is not "
                    f"expected. Expect[2] When per_tensor mode ({name}).",
                )
            return
        if len(shape) not in (2, 3, 4):
            _fail(
                f"antiquant.rank_{name}",
                f"The layout[{len(shape)}] does not match the dim of antiquant, When per_channel mode ({name}).",
            )
        if shape not in {(2, n, 1, d), (2, 1, n, d), (2, n, d), (2, n * d)}:
            _fail(
                f"antiquant.per_channel_{name}",
                f"The shape of antiquant parameter{list(shape)} is not expected. "
                f"Expect [2, {n}, 1, {d}] or [2, {n}, {d}] or [2, {n * d}] when per_channel mode ({name}).",
            )

    def _block_table(self):
        if not self.paged:
            return
        k0, bs = self.keys[0], self.block_size
        # The kernel's input layout: the cache's rank decides it, except for an NZ cache (the query's).
        bsh = self.layout.split("_")[0] in ("BSH", "BSND") if self.kv_nz else k0.ndim == 3
        if bsh and self.kv_heads * self.d > COPY_STRIDE_LIMIT:
            _fail(
                "pa_nd_stride",
                f"When input kvcache layout is BSH, the N * D of kvcache is "
                f"{self.kv_heads * self.d}, exceeds the maximum limit (65535) of the datacopy instruction.",
            )
        if bs == 0:
            _fail("pa_block_zero", "When Page Attention is enabled, input attribute blocksize can not be 0.")
        if bs > MAX_BLOCK_SIZE:
            _fail(
                "pa_block_max",
                f"When Page Attention is enabled, input attribute blocksize {bs} can not be larger than 512.",
            )
        if self.max_actual > bs * self.max_blocks:
            _fail(
                "pa_actual_seq",
                f"Invalid actual seq length for PA, max actual seq length({self.max_actual}) is "
                f"larger than blocksize({bs}) * max block num per batch({self.max_blocks})",
            )

    def _kv_padding(self):
        pad = self.a.kvPaddingSize
        self.left_padding = pad is not None and pad.numel != 0 and self.batch_continuous and self.has_actual
        if pad is not None and pad.numel != 0 and not self.left_padding:
            self.env.warn(
                "kvPaddingSize is ignored: the kernel applies it only without page attention, with "
                "key/value batched in one tensor and with actualSeqLengths"
            )

    # -- the kernel ----------------------------------------------------------------------------
    def _launch(self):
        a, base = self.a, self.layout.split("_")[0]
        long = [(i, n) for i, n in enumerate(self.actual or ()) if n != attr_uint32(n)]
        if long:
            i, n = long[0]
            REFUSED.refuse("actual_seq_uint32", f"actualSeqLengths[{i}] = {n} passes as {attr_uint32(n)}")
        if self.mtp:
            self._speculative(base)
        kv_shape = None
        if not self.paged and not self.listed:
            k0 = self.keys[0]
            n_found = shape_dim(k0.shape, {"BNSD": 1, "BSND": 2}.get(base, 2)) // (self.d if base == "BSH" else 1)
            if n_found != self.kv_heads or (base == "BSH" and k0.shape[2] != self.kv_heads * self.d):
                kv_shape = self._key_by_kv_heads(k0, base)
        out, expect = a.attentionOut, self.batch * self.heads * self.d
        if out.numel < expect:
            INFERRED.warn(self.env, "out_size", f"attentionOut holds {out.numel} elements, the kernel writes {expect}")
        plan = SimpleNamespace(
            base=base,
            heads=self.heads,
            kv_heads=self.kv_heads,
            d=self.d,
            kv_shape=kv_shape,
            batch=self.batch,
            paged=self.paged,
            listed=self.listed,
            kv_lens=self.kv_lens,
            actual=self.actual,
            block_size=self.block_size,
            max_blocks=self.max_blocks if self.paged else 0,
            mtp=self.mtp,
            has_mask=self.has_mask,
            left_padding=self.left_padding,
            scale=a.scaleValue,
        )
        return lambda workspace: _run(a, plan)

    def _speculative(self, base):
        """Query S in [2, 16]: refused where the tiling's split takes the kernels past the batch,
        otherwise run as the S = 1 kernels run it (ifa_speculative)."""
        split = bsh_split(base, self.paged, self.keys[0].ndim)
        outer = outer_loops(split, self.group, self.s_q, self.antiquant)
        if outer > 1:
            REFUSED.refuse("mtp", out_of_batch(outer, self.s_q, self.group))
        self.env.warn(warning(self.s_q, self.batch, self.heads, self.d))

    def _key_by_kv_heads(self, k0, base):
        """A batched key whose heads (or H) differ from numKeyValueHeads passes the tiling (only D is
        compared); the kernels address it by numKeyValueHeads and key's S (incre_flash_attention_preload.h,
        tensorBCorePreOffset): `key_view_by_kv_heads`."""
        ends = [
            self.kv_lens[0] if self.left_padding or self.actual is None else int(self.actual[b])
            for b in range(self.batch)
        ]
        return key_view_by_kv_heads(k0, base, self.batch, self.kv_lens[0], self.kv_heads, self.d, ends, self.env)
