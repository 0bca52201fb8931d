"""IncreFlashAttentionV4 with an INT8 key/value on Ascend910_95: IFATilingV2's own tiling.

`IFATilingV2::DoSubOpTiling` (incre_flash_attention_tiling_v2.cpp) sends an INT8 key to
`RunBigKernelTiling`: GetNpuInfo, then PreProcess (ProcessBaseTensors, ProcessOptionalTensors),
whose checks `_Tiling` replays in the source's order for what V4 can pass (no query lengths, no
lse, no pseType/antiquantMode/key-value antiquant inputs: antiquantMode 0, per tensor [2] or per
channel). Every failure is GRAPH_FAILED, 561002 behind the generated entry point. Checks that
cannot fail after the OpDef's kernel key (key vs value dtype, the (query, key, out) dtype triple,
mask, pse, antiquant and quant2 dtypes) are left out.

A query S above 1 sets `isPFAFlag_` (ProcessBaseTensors): innerPrecise 0-3, the PFA antiquant
parameter shapes, and `SetPFASparseType` picks IFA_BAND from V4's unset sparse mode and tokens (0).
Those tokens reach the kernel only with an attenMask: without one `GetSparseParam`
(infer_flash_attention_sparse.h) leaves each batch's tokens at MAX_PRE_NEXT_TOKENS, so
`ComputeS2LoopInfo` walks every key block [0, actual S2) for every query block and no element is
masked: each row sees all its batch's keys. With a mask the kernel walks launch_arch35.MaskBlocks. The tiling's band only shapes the core split
(`FlashAttentionCubeSplitBNSeq`): `FixParamWithRowInvalid` cuts a batch's rows to its key count,
and the kernel's last s1 block of a core comes from that split, so which rows are computed when a
batch has fewer keys than rows depends on the device's core count (unestablished here).

`SetfaRunFlag` then picks the common arch35 antiquant kernel (`faRunGS_`: one query row, no alibi):
`BaseApi::FlashAttentionScoreAntiquantKernel` (incre_flash_attention_entry_regbase.h), whose vector
block (flash_attention_score_antiquant_block_vec.h) dequantises each key/value block in the query's
dtype (kernels/flash_attention/antiquant_arch35) and runs the same softmax, division and post-quant
vector functions as the arch35 flash-attention kernels: the rest is incre/checks_arch35's run (pfa.ARCH35).
"""

from aclnn_emu.opdef.failures import TilingFailure, mapped
from types import SimpleNamespace
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.gaps import Gaps
from aclnn_emu.opdef.generated import attr_uint32, shape_dim
from . import sparse_arch35
from .checks_arch35 import check_quant2
from .launch_antiquant_arch35 import _run
from .launch_arch35 import MaskBlocks, kv_heads_view


F16, BF16, I8 = DataType.ACL_FLOAT16, DataType.ACL_BF16, DataType.ACL_INT8


MAX_BLOCK_SIZE, COPY_STRIDE_LIMIT, NZ_D0 = 512, 65535, 16  # incre_flash_attention_tiling_base.h (BLOCK_SIZE)
INT4_D_BLOCK = 64  # KVINT4_BYTE_BLOCK


MAX_BATCH, MAX_D, MAX_KV_HEADS, MAX_GROUP = 65536, 512, 256, 64


LAYOUTS = ("BSH", "BSND", "BNSD", "BNSD_BSND", "TND")


_PREFIX = "IncreFlashAttention tiling failed (IFATilingV2): "


PFA_MERGE_GS = 32  # pfaMergeGSLimit (tiling_v2.h)


S1_BASE = 16  # sOuterSize_ (SetfaRunBaseSize) when CheckPFAMerge refuses G·S merging, as with a mask


REFUSED = Gaps(
    "IncreFlashAttentionV4",
    "refused",
    {
        "soc_antiquant_h_params": "an INT8 key/value with a query S above 1 on Ascend910_95 with 1-D [N2·D] antiquant "
        "parameters: the kernel reads the value's from element N2·D on (InitQuant's "
        "antiValueOffsetInitPos), past the tensor's end"
    },
)


UNESTABLISHED = Gaps(
    "IncreFlashAttentionV4",
    "unestablished",
    {
        "soc_antiquant_short_kv": "an INT8 key/value with a query S above 1 on Ascend910_95, no attenMask, where a batch "
        "has fewer keys "
        "than query rows per block walk (S, or S·G when IFATilingV2 merges G and S): "
        "FixParamWithRowInvalid cuts the core split, so which rows the kernel computes depends "
        "on the device's core count"
    },
)


def _fail(rule: str, message: str):
    raise TilingFailure(rule, message)  # mapped to 561002 in `tiling`


def tiling(a, env, origin_formats):
    """RunBigKernelTiling's checks for an INT8 key, then the phase-2 work."""
    with mapped(status.ACLNN_ERR_INNER_TILING_ERROR, _PREFIX, "tiling.v2."):
        return _Tiling(a, env, origin_formats).run()


class _Tiling:
    def __init__(self, a, env, origin_formats):
        self.a, self.env, self.origin_formats = a, env, origin_formats
        self.q, self.k0, self.v0 = a.query, a.key.items[0], a.value.items[0]
        self.layout = "BSH" if a.inputLayout is None else a.inputLayout
        self.batch = shape_dim(self.q.shape, 0)
        self.paged = a.blocktable is not None
        self.int4 = getattr(self.k0, "int4", False)  # FusedInferAttentionScore's INT32 list read as INT4

    def run(self):
        self._base_tensors()
        self._optional_tensors()
        self._warn_ignored()
        return self._launch()

    # -- ProcessBaseTensors --------------------------------------------------------------------
    def _base_tensors(self):
        a, q, k0 = self.a, self.q, self.k0
        if q.numel == 0:
            _fail("query_empty", "Tensor query is empty cause shapesize is 0.")
        heads, kv = attr_uint32(a.numHeads), attr_uint32(a.numKeyValueHeads)
        if heads == 0:
            _fail("heads_zero", "NumHeads is zero.")
        kv = kv or heads
        if kv > heads or heads % kv:
            _fail("kv_heads", f"Attribute numKvHeads is invalid, numHeads:{heads}, numKvHeads:{kv}.")
        self.heads, self.kv_heads, self.group = heads, kv, heads // kv
        self.block_size = attr_uint32(a.blockSize)
        if not self.paged:
            self.batch_continuous = self.batch == shape_dim(k0.shape, 0)
        else:
            self.batch_continuous = False
            self._pa_block_size()
        self._layout_dims()
        if not self.paged and (self.d_key != self.d_out or self.d_value != self.d_out):
            _fail(
                "kv_d",
                f"When not in pageAttention scenario, Dim of Out[{self.d_out}] should be equal to Dim of "
                f"Key[{self.d_key}] and Dim of Value[{self.d_value}]",
            )
        if self.int4 and self.d % INT4_D_BLOCK:
            _fail(
                "int4_d",
                f"When the KV_dtype is int4(int32)/fp4_e1m2/fp4_e2m1, headDims must be a multiple of {INT4_D_BLOCK}, "
                f"current dim of D is {self.d}.",
            )
        if self.q_heads != heads:
            _fail("query_heads", f"N of query[{self.q_heads}] should be equal to numHeads[{heads}]")
        self._kv_shapes()  # KvShapePostProcess
        self.pfa = self.s_q != 1  # isPFAFlag_
        precise = attr_uint32(a.innerPrecise)
        if self.pfa and precise not in (0, 1, 2, 3):
            _fail("inner_precise", f"Precision mode[{precise}] should be 0 or 1 or 2 or 3.")
        if not self.pfa and precise not in (0, 1):
            _fail("inner_precise", f"Precision mode[{precise}] should be 0 or 1.")
        if not self.paged:
            self._qk_out_shape()
        self._formats_and_limits()

    def _pa_block_size(self):
        """CheckPABlockSize for an INT8 (or INT4) cache."""
        bs = self.block_size
        if bs == 0:
            _fail("pa_block_zero", "When page attention is enabled, input attribute blocksize can not be 0.")
        if bs >> 31:
            _fail(
                "pa_block_negative",
                f"When page attention is enabled, input attribute blocksize[{bs - (1 << 32)}] can not be less than 0.",
            )
        if bs > MAX_BLOCK_SIZE:
            _fail(
                "pa_block_max",
                f"When page attention is enabled, input attribute blocksize[{bs}] can not be greater "
                f"than {MAX_BLOCK_SIZE}.",
            )
        if self.int4 and bs % 64:
            _fail(
                "pa_block_align64",
                "When page attention is enabled, if kvCache datatype is int4(int32)/fp4_e1m2/fp4_e2m1, "
                f"input attribute blocksize[{bs}] should be 64 aligned.",
            )
        if not self.int4 and bs % 32:
            _fail(
                "pa_block_align32",
                "When page attention is enabled, if kvCache datatype is int8/hif8/fp8_e4m3fn, "
                f"input attribute blocksize[{bs}] should be 32 aligned.",
            )

    def _layout_dims(self):
        """ProcessBaseTensors' layout branch: S, D of query, key, value and out, N of query."""
        layout, heads, kv = self.layout, self.heads, self.kv_heads
        qs, ks, vs, outs = self.q.shape, self.k0.shape, self.v0.shape, self.a.attentionOut.shape
        if layout == "BSH":
            if shape_dim(qs, 2) % heads:
                _fail("bsh_h", f"H[{shape_dim(qs, 2)}] should be an interger multiple of numHeads[{heads}].")
            self.s_q, self.d, self.q_heads = shape_dim(qs, 1), shape_dim(qs, 2) // heads, heads
            self.d_key, self.d_value, self.d_out = (
                shape_dim(ks, 2) // kv,
                shape_dim(vs, 2) // kv,
                shape_dim(outs, 2) // heads,
            )
        elif layout in ("BSND", "BNSD", "BNSD_BSND"):
            n_axis, s_axis = (2, 1) if layout == "BSND" else (1, 2)
            self.s_q, self.q_heads = shape_dim(qs, s_axis), shape_dim(qs, n_axis)
            self.d, self.d_key, self.d_value, self.d_out = (
                shape_dim(qs, 3),
                shape_dim(ks, 3),
                shape_dim(vs, 3),
                shape_dim(outs, 3),
            )
        elif layout == "TND":
            _fail("tnd_actual_q", "TND the query's actual sequence lengths should not be null!")  # CheckActualSeqLens
        else:
            _fail("layout", f"Only support inputLayout(BSH, BNSD, BSND, BNSD_BSND, TND), actually is {layout}.")
        if self.d != self.d_out:
            _fail("out_d", f"Dim of Out[{self.d_out}] should be equal to Dim of Query[{self.d}]")

    def _kv_shapes(self):
        """KvShapePostProcess: CheckKvCache with page attention, else the key/value tensors."""
        if self.paged:
            self._kv_cache()
            return
        items_k, items_v = self.a.key.items, self.a.value.items
        self.listed = not self.batch_continuous
        # batchSize_ is a uint32; past the list's end the loop below fails at its first missing tensor
        count = min(self.batch % 2**32, len(items_k) + 1, len(items_v) + 1) if self.listed else 1
        self.k_cache = [items_k[i] if i < len(items_k) else None for i in range(count)]
        self.v_cache = [items_v[i] if i < len(items_v) else None for i in range(count)]
        lens = []
        for i, (k, v) in enumerate(zip(self.k_cache, self.v_cache)):
            if k is None or v is None:
                _fail("kv_list_null", f"Tensor shape of list[{i}] is null.")
            if k.shape != v.shape:
                _fail("kv_shape_same", "Key and value shape shoud be same.")
            if self.listed:
                self._kv_list()
            self._key_same_but_s(i, k)
            s = shape_dim(k.shape, 1 if self.layout in ("BSH", "BSND") else 2)
            lens.append(0 if k.numel == 0 else s)
        self.kv_lens, self.s_max = lens, max(lens)

    def _kv_list(self):
        """CheckKVShape: one tensor per batch (a batch of 1, the layout's rank, numKvHeads heads)."""
        rank = 3 if self.layout == "BSH" else 4
        for i, (k, v) in enumerate(zip(self.k_cache, self.v_cache)):
            if k is None or v is None:
                _fail(
                    "kv_list_short",
                    "IFA check input param failed, key/value tensor list length should be greater "
                    "than or equal to query batch.",
                )
            if k.ndim != rank or v.ndim != rank:
                _fail(
                    "kv_list_rank",
                    f"IFA check input param failed, the dimension of tensor in tensorList should be "
                    f"{rank}, key:{k.ndim}, value:{v.ndim}.",
                )
            if shape_dim(k.shape, 0) != 1:
                _fail(
                    "kv_list_batch",
                    "IFA check input param failed, the batch of tensor in tensorList should be 1, now "
                    f"batch is:{shape_dim(k.shape, 0)}, list index:{i}.",
                )
            for t in (k, v):
                found = {"BSH": shape_dim(t.shape, 2) // self.d if self.d else 0, "BSND": shape_dim(t.shape, 2)}.get(
                    self.layout, shape_dim(t.shape, 1)
                )
                if found != self.kv_heads:
                    _fail(
                        "kv_list_heads",
                        f"IFA check input param failed, tensor in list numHeads[{found}] should be {self.kv_heads}.",
                    )

    def _key_same_but_s(self, i, k):
        """CheckKeyShapeTensor: batch, heads (H) and D as the first key tensor's."""
        axes = {"BSH": (0, 2), "BSND": (0, 2, 3)}.get(self.layout, (0, 1, 3))
        first = self.k_cache[0].shape
        for axis in axes:
            if shape_dim(first, axis) != shape_dim(k.shape, axis):
                _fail(
                    "kv_list_same",
                    f"IFA check input param failed, dim {axis} in keyShape must be same, keyShape[0] "
                    f"has {shape_dim(first, axis)}, keyShape[{i}] has {shape_dim(k.shape, axis)}.",
                )

    def _kv_cache(self):
        """CheckKvCache / CheckKvCacheValue."""
        table, k, v = self.a.blocktable, self.k0.shape, self.v0.shape
        if table.ndim != 2:
            _fail(
                "pa_table_rank", f"When Page Attention is enabled, input blockTable dimension[{table.ndim}] should be 2"
            )
        self.max_blocks = attr_uint32(table.shape[1])
        if self.max_blocks == 0:
            _fail(
                "pa_table_blocks",
                "When Page Attention is enabled, maxBlockNumPerSeq should be larger than 0, actual "
                f"is {self.max_blocks}.",
            )
        self.s_max = attr_uint32(self.max_blocks * self.block_size)
        rank = len(k)
        if rank not in (3, 4, 5):
            _fail("pa_cache_rank", f"When Page Attention is enabled, kvCache dimensions[{rank}] should be 3 or 4 or 5")
        if rank == 4 and self.layout not in ("BNSD", "BNSD_BSND", "TND"):
            _fail(
                "pa_bnsd_layout",
                "When Page Attention is enabled, and KV cache dimensions are 4-dimensional, "
                "inputlayout must be BNSD or BNSD_BSND or TND",
            )
        if tuple(k) != tuple(v):
            _fail("pa_kv_same", f"Key shape{list(k)} and value shape{list(v)} should be same.")
        bs, n2, d = self.block_size, self.kv_heads, self.d
        cache_bs = {3: 1, 4: 2, 5: 3}[rank]
        if rank == 5 and k[1] != n2:
            _fail("pa_cache_heads", f"When Page Attention is enabled, numHeads of kvCache[{k[1]}] should be {n2}")
        if k[cache_bs] != bs:
            _fail(
                "pa_cache_block", f"When Page Attention is enabled, blockSize of kvCache[{k[cache_bs]}] should be {bs}"
            )
        if rank == 3 and k[2] != n2 * d:
            _fail("pa_cache_h", f"When Page Attention is enabled, H of kvCache[{k[2]}] should be {n2 * d}")
        if rank == 4 and k[1] != n2:
            _fail("pa_cache_heads", f"When Page Attention is enabled, numHeads of kvCache[{k[1]}] should be {n2}")
        if rank == 4 and k[3] != d:
            _fail("pa_cache_d", f"When Page Attention is enabled, headDim of kvCache[{k[3]}] should be {d}")
        if rank == 5:
            if k[4] != NZ_D0:
                _fail("pa_nz_d0", f"When PA_NZ is enabled, the last dim (D0) of kvCache[{k[4]}] should be {NZ_D0}")
            if k[2] != d // NZ_D0:
                _fail(
                    "pa_nz_d1",
                    f"When Page Attention NZ is enabled, the third dim (D1) of kvCache[{k[2]}] should be {d // NZ_D0}",
                )
            if k[2] * k[4] != d:
                _fail("pa_cache_d", f"When Page Attention is enabled, headDim of kvCache[{k[2] * k[4]}] should be {d}")
        self.kv_lens = []

    def _qk_out_shape(self):
        """CheckQKOutShape (without page attention)."""
        q, k, out = self.q, self.k_cache[0], self.a.attentionOut
        if self.layout == "BSH":
            if q.ndim != 3 or k.ndim != 3 or out.ndim != 3:
                _fail(
                    "bsh_dims",
                    f"When inputLayout is BSH, the dimension should be 3, dimOfQ:{q.ndim}, dimOfK:{k.ndim}, "
                    f"dimOfOut:{out.ndim}.",
                )
            if q.shape[2] // self.heads != k.shape[2] // self.kv_heads:
                _fail("bsh_d", "When inputLayout is BSH, the 3rd dimOfQ/numHeads not equal the 3rd dimOfK/numKvHeads.")
            return
        if q.ndim != 4 or k.ndim != 4 or out.ndim != 4:
            _fail(
                "bnsd_dims",
                f"When inputLayout is BNSD/BSND, the dimension should be 4, dimOfQ:{q.ndim}, "
                f"dimOfK:{k.ndim}, dimOfOut:{out.ndim}.",
            )
        if q.shape[3] != k.shape[3]:
            _fail(
                "bnsd_d",
                f"When inputLayout is BNSD/BSND, the headDims in queryShape[{q.shape[3]}] is not equal to "
                f"the headDims in keyShape[{k.shape[3]}].",
            )

    def _formats_and_limits(self):
        """CheckInputFormatAndLimits, then CheckInputAntiquantFormat."""
        a = self.a
        for name, t in (
            ("Query", self.q),
            ("Key", self.k0),
            ("Value", self.v0),
            ("AttenMask", a.attenMask),
            ("PseShift", a.pseShift),
        ):
            self._format(name, t)
        if self.group > MAX_GROUP:
            _fail("group", f"numHeads / numKvHeads = {self.group}, cannot be greater than 64.")
        if self.batch > MAX_BATCH:
            _fail("batch", f"Batch size:{self.batch} cannot be greater than 65536.")
        if self.d > MAX_D:
            _fail("head_dim", f"HeadDims:{self.d} cannot be greater than NUM512.")
        if self.kv_heads > MAX_KV_HEADS:
            _fail("kv_heads_max", f"NumHeads of key and value:{self.kv_heads} cannot be greater than 256.")
        self._format("AntiquantScale", a.antiquantScale)
        self._format("AntiquantOffset", a.antiquantOffset)

    def _format(self, name, t):
        if t is not None and t.format not in self.origin_formats:
            _fail("format", f"{name} format should be ND/NCHW/NHWC/NCDHW.")

    # -- ProcessOptionalTensors ----------------------------------------------------------------
    def _optional_tensors(self):
        self._actual_seq_len()
        self._pse_shift()
        self._atten_mask()
        self._quant2()
        self._antiquant()
        self._block_table()
        self._q_padding()
        self._kv_padding()

    def _actual_seq_len(self):
        """ProcessActualSeqLen: the query's lengths (FusedInferAttentionScore's; V4 passes none), then
        the key's."""
        self._query_lengths()
        values = self.a.actualSeqLengths
        self.actual_flag = values is not None
        self.max_actual, self.need_blocks, self.actual = self.s_max, 0, None
        if values is None:
            if self.paged:
                _fail("pa_actual_null", "When page attention scene, actualSeqLengthsKv must exist.")
            return
        if len(values) == 0:
            if self.paged:
                _fail("pa_actual_empty", "When page attention scene, size of actualSeqLengths can not be zero.")
            return
        if len(values) != 1 and len(values) < self.batch:
            _fail(
                "actual_seq_len",
                f"ActualSeqLengthsKv size[{len(values)}] should be greater than or equal to query "
                f"batch[{self.batch}] or equal to 1.",
            )
        loop = 1 if len(values) == 1 and len(self.kv_lens) == 1 else self.batch
        self.max_actual = 0
        for i in range(loop):
            act = values[0] if len(values) == 1 else values[i]
            if act < 0:
                _fail("actual_seq_negative", "ActualSeqLengthsKv must be greater than or equal to 0.")
            if not self.paged:
                seq = self.kv_lens[0] if len(self.kv_lens) == 1 else self.kv_lens[i]
                if attr_uint32(act) > seq:
                    _fail(
                        "actual_seq_range",
                        f"ActualSeqLengthsKv[{i}]({act}) cannot be greater than seqLength({seq}) in input key.",
                    )
            else:
                self.need_blocks += -(-act // self.block_size)
            self.max_actual = max(self.max_actual, attr_uint32(act))
        self.actual = [values[0] if len(values) == 1 else values[i] for i in range(self.batch)]

    def _query_lengths(self):
        """Outside TND (whose lengths the IFA route does not take): at most B values or one, each in
        [0, S]. Only the query-S > 1 kernels read them (ProcessOptionalTensors drops them for S 1):
        batch b computes its first act_q[b] rows, the rest stay 0 (needInit)."""
        values = getattr(self.a, "actualSeqLengthsQ", None)
        self.act_q = [self.s_q] * self.batch
        self.act_q_flag = bool(values)  # actualSeqLenQFlag_: a tensor with data
        if not values:
            return
        if len(values) != 1 and len(values) < self.batch:
            _fail(
                "actual_q_size",
                f"ActualSeqLengths size[{len(values)}] of query should be greater than or equal to query "
                f"batch[{self.batch}] or equal to 1.",
            )
        for i, value in enumerate(values[: self.batch]):
            if not 0 <= value <= self.s_q:
                _fail("actual_q_range", f"ActualSeqLengthsQ[{i}]({value}) must be in range[0, {self.s_q}]!")
        if self.pfa:
            self.act_q = [int(values[0] if len(values) == 1 else values[b]) for b in range(self.batch)]

    def _pse_shift(self):
        """ProcessPseShift (FusedInferAttentionScoreV5's pseType first) / CheckPseShiftShape (pseType 0, a
        one-row query)."""
        check_pse_type = getattr(self.a, "check_pse_type", None)
        if check_pse_type is not None:
            check_pse_type()
        pse = self.a.pseShift
        if pse is None:
            return
        if pse.ndim != 4:
            _fail("pse_rank", f"The dimension of pseShift must be 4, current dimension num is {pse.ndim}.")
        b, n, s0, s1 = pse.shape
        if self.pfa:
            if b not in (1, self.batch) or n != self.heads or s0 < self.s_q or s1 < self.s_max:
                # the source prints the shape's own B and N where it means the expected ones
                _fail(
                    "pfa_pse_shape",
                    f"pseShift shape must be (1 or {b}, {n}, >={self.s_q}, >={self.s_max}), but "
                    f"now it is ({b}, {n}, {s0}, {s1})",
                )
            return
        if b not in (1, self.batch) or n != self.heads or s0 != 1:
            _fail(
                "pse_shape",
                f"The shape of pseShift is ({b}, {n}, {s0}, {s1}), which does not match (B, N, 1, S) or (1, N, 1, S).",
            )
        if s1 < self.s_max:
            _fail(
                "pse_s",
                f"The shape of pseShift is ({b}, {n}, {s0}, {s1}), pseShiftS[{s1}] shouldn't be less than "
                f"sMax[{self.s_max}]. When page attention is enabled, sMax is the second dimension of blockTable * "
                "blockSize.",
            )

    def _atten_mask(self):
        """ProcessAttenMask (a one-row query), ProcessAttenMaskSparsePFA (isPFAFlag_, mask or not)."""
        mask = self.a.attenMask
        self.has_mask = mask is not None and mask.numel != 0
        self.window = sparse_arch35.Window()
        if self.pfa:
            facts = SimpleNamespace(
                batch=self.batch, s_q=self.s_q, s_max=self.s_max, has_mask=self.has_mask,
                out_int8=self.a.attentionOut.dtype == I8, max_workspace=getattr(self.a, "max_workspace", False),
            )  # fmt: skip
            self.window = sparse_arch35.check(self.a, _fail, facts)
            return
        if not self.has_mask:
            return
        if shape_dim(mask.shape, 0) != self.batch:
            _fail(
                "mask_batch",
                f"BatchSize[{shape_dim(mask.shape, 0)}] of attenMask must be equal to batchSize"
                f"[{self.batch}] of query.",
            )
        need = self.s_max if self.paged else self.max_actual
        if mask.shape[-1] < need:
            _fail(
                "mask_s",
                f"S Size[{mask.shape[-1]}] of attenMask must be greater than or equal to the second "
                f"dimension of blockTable * blockSize([{need}]).",
            )

    def _quant2(self):
        """ProcessQuant2 / ProcessQuant2Attribute for an INT8 output."""
        a = self.a
        if a.attentionOut.dtype != I8:
            return
        check_quant2(a.quantScale2, a.quantOffset2, self.heads, self.d, _fail)

    def _antiquant(self):
        """ProcessAntiQuant / CheckAntiQuantParam with antiquantMode 0 (V4 has no mode attribute);
        FusedInferAttentionScore's separate key/value parameters run their own split-mode rules here."""
        scale, offset = self.a.antiquantScale, self.a.antiquantOffset
        split = getattr(scale, "split_check", None)
        if split is not None:  # fused_infer/kv_antiquant_arch35.Split
            split(self.batch, self.kv_heads, self.d, self.s_max, self.pfa, self.paged)
            return
        if scale is None:
            _fail("antiquant_scale_null", "Antiquant is enabled, but the input antiquantScale is null.")
        if offset is not None and offset.ndim != scale.ndim:
            _fail(
                "antiquant_rank_differ",
                f"Antiquant is enabled, but antiquant params have different layouts[scale: "
                f"{scale.ndim}, offset: {offset.ndim}].",
            )
        if offset is not None and offset.shape != scale.shape:
            _fail("antiquant_shape_differ", "antiquantScaleTensor and antiquantOffsetTensor should have the same shape")
        self._antiquant_shape(scale)
        if offset is not None:
            self._antiquant_shape(offset)

    def _antiquant_shape(self, t):
        """CheckKVAntiQuantParaShapeLegal, mode 0, not split: [2] per tensor, or per channel."""
        n, d, shape = self.kv_heads, self.d, tuple(t.shape)
        if len(shape) == 1:
            if shape == (2,):
                return
            if not self.pfa:
                _fail(
                    "antiquant_per_tensor",
                    f"The shape of antiquant parameter[{shape[0]}] is not expected. Expect[2] when per-tensor mode.",
                )
            if shape == (n * d,):  # "PFA PerChannel可能输入shape为H"
                REFUSED.refuse("soc_antiquant_h_params", f"antiquant parameters of shape [{n * d}]")
            _fail(
                "antiquant_per_tensor",
                f"The shape of antiquant parameter[{shape[0]}] is not expected.Expect[2] "
                f"when per-tensor mode or expect[{n * d}] when per-channel mode.",
            )
        check_per_channel(shape, 2, n, d, self.pfa, split=False)

    def _block_table(self):
        """ProcessBlockTable."""
        if not self.paged:
            return
        table, bs = self.a.blocktable, self.block_size
        if table.shape[0] != self.batch:
            _fail(
                "pa_table_batch",
                f"The first dimension of blockTable is {table.shape[0]}, and it should be equal "
                f"to batch[{self.batch}].",
            )
        most = -(-self.max_actual // bs)
        if table.shape[1] < most:
            _fail(
                "pa_table_blocks_short",
                f"The second dimension of blockTable is {table.shape[1]}, and it should be "
                f"greater than or equal to maxBlockNumPerSeq[{most}].",
            )
        if self.k0.ndim == 3 and self.kv_heads * self.d > COPY_STRIDE_LIMIT:
            _fail(
                "pa_nd_stride",
                f"When input kvcache layout is BSH, the N * D of kvcache is {self.kv_heads * self.d}, "
                f"exceeds the maximum limit ({COPY_STRIDE_LIMIT}) of the datacopy instruction.",
            )
        if self.k0.shape[0] < self.need_blocks:
            _fail(
                "pa_blocks",
                f"blockNum[{self.k0.shape[0]}] cannot be less than the sum of blocks in each batch "
                f"calculated based on actualSeqLenKv and blockSize[{self.need_blocks}]",
            )
        paged_params = getattr(self.a.antiquantScale, "split_paged", None)
        if paged_params is not None:  # fused_infer/kv_antiquant_arch35.Split: modes 4/5
            paged_params(self.k0.shape[0], bs, self.kv_heads)

    def _q_padding(self):
        """ProcessQPaddingSize / CheckSupportQLeftPadding (FusedInferAttentionScore's queryPaddingSize;
        IncreFlashAttentionV4 has none): a query S of 1 ignores it; else a paged cache fails, and
        each batch's rows end queryPaddingSize rows before S1 only with a batched key/value and the
        query's actualSeqLengths (ProcessAttenMaskSparsePFA ran before the flag is set, so its
        sparse-mode-0 rule for padding never applies)."""
        pad = getattr(self.a, "queryPaddingSize", None)
        self.q_padding = None
        if pad is None or not self.pfa:
            return
        if self.paged:
            _fail("pa_q_padding", "When page attention is used, left padding is not supported!")
        if pad.numel == 0:
            return
        if self.batch_continuous and self.act_q_flag and self.layout != "TND":
            self.q_padding = pad
        else:
            self.env.warn(
                "queryPaddingSize is ignored: IFATilingV2 applies it only with key/value batched in one tensor, "
                "with the query's actualSeqLengths and outside TND"
            )

    def _kv_padding(self):
        """ProcessKVPaddingSize / CheckSupportKVLeftPadding."""
        pad = self.a.kvPaddingSize
        self.left_padding = False
        if pad is None:
            return
        if self.paged:
            _fail("pa_kv_padding", "When page attention is used, left padding is not supported!")
        self.left_padding = pad.numel != 0 and self.batch_continuous and self.actual_flag
        if pad.numel != 0 and not self.left_padding:
            self.env.warn(
                "kvPaddingSize is ignored: IFATilingV2 applies it only with key/value batched in one tensor "
                "and with actualSeqLengths"
            )

    def _warn_ignored(self):
        """Inputs IFATilingV2 does not read with an INT8 key (ProcessQuant2Dtype is never called)."""
        a = self.a
        ignored = [n for n in ("dequantScale1", "quantScale1", "dequantScale2") if getattr(a, n) is not None]
        if a.attentionOut.dtype != I8:
            ignored += [n for n in ("quantScale2", "quantOffset2") if getattr(a, n) is not None]
        if ignored:
            self.env.warn(
                f"{', '.join(ignored)} ignored: IFATilingV2 does not read them for an INT8 key on "
                "Ascend910_95 (Atlas A2/A3 reject the call)"
            )

    # -- the kernel ----------------------------------------------------------------------------
    def _launch(self):
        a = self.a
        done = getattr(a.antiquantScale, "split_done", None)
        if done is not None:  # fused_infer/kv_antiquant_arch35.Split: its gaps, after every check
            done()
        s2 = self.s_max
        plan = SimpleNamespace(
            b=self.batch,
            s1=self.s_q,
            s2=s2,
            d=self.d,
            value_d=self.d,
            heads=self.heads,
            kv_heads=self.kv_heads,
            layout=self.layout,
            paged=self.paged,
            padding=a.kvPaddingSize if self.left_padding else None,
            has_mask=self.has_mask,
            act_q=self.act_q,
            q_padding=self.q_padding,
            has_pse=a.pseShift is not None and a.pseShift.numel > 0,
            lengths=[
                self.actual[b] if self.actual else (self.kv_lens[b] if self.listed else s2) for b in range(self.batch)
            ],
            block_size=self.block_size if self.paged else 0,
            max_blocks=self.max_blocks if self.paged else 0,
            kv_shape=None,
        )
        blocks = None
        if self.pfa and self.has_mask:
            row_invalid = bool(attr_uint32(a.innerPrecise) >> 1 & 1)
            blocks = MaskBlocks(S1_BASE, _s2_base(self.d, plan.has_pse), row_invalid, self.window)
        elif self.pfa:
            self._rows_covered(plan.lengths)
        listed = not self.paged and self.listed
        if not self.paged and not listed:
            found = self.k0.shape[2] if self.layout in ("BSH", "BSND") else self.k0.shape[1]
            if found != (self.kv_heads * self.d if self.layout == "BSH" else self.kv_heads):
                # ProcessBaseTensors and CheckQKOutShape compare D alone (H / numKvHeads for BSH).
                plan.kv_shape = kv_heads_view(self.k0, plan, self.env)
        return lambda workspace: _run(a, plan, listed, blocks)

    def _rows_covered(self, lengths):
        """The core split (FlashAttentionCubeSplitBNSeq) counts min(rows, keys) rows per batch
        (FixParamWithRowInvalid with the tokens 0); with no batch short of keys it covers every
        s1 block the kernel walks. Rows are S·G when SetfaRunFlag merges G and S (CheckPFAMerge)."""
        merged = (
            self.group * self.s_q <= PFA_MERGE_GS
            and not self.paged
            and self.layout != "BNSD_BSND"
            and self.a.attentionOut.dtype != I8
            and self.a.pseShift is None
            and getattr(self.a, "softmaxLse", None) is None  # FusedInferAttentionScore's softmaxLseFlag
        )
        rows = self.s_q * (self.group if merged else 1)
        short = [b for b, n in enumerate(lengths) if n < rows]
        if short:
            UNESTABLISHED.refuse(
                "soc_antiquant_short_kv", f"batch {short[0]} has {lengths[short[0]]} keys for {rows} query rows"
            )


def _s2_base(d: int, pse: bool) -> int:
    """SetfaRunBaseSize's s2 base (sInnerSize_, the kernel config's S2 alignment through
    UpdateTilingKeyConfig) without G·S merging."""
    return (512 if pse else 1024) if d <= 64 else 512 if d <= 128 else 256 if d <= 256 else 128


def check_per_channel(shape, num: int, n: int, d: int, pfa: bool, split: bool) -> None:
    """CheckKVAntiQuantPerChannel (parameters of rank 2 or more; ``num`` antiquantNum_, 2 for the
    combined antiquantScale, 1 for separate key/value ones): [num, N, 1, D], [num, N, D], [num, H],
    and [num, 1, N, D] outside the PFA mode (query S > 1); separate parameters in the PFA mode
    (``split``) also [N, 1, D], [N, D] and not [1, 1, N, D]."""
    valid = {(num, n, 1, d), (num, n, d), (num, n * d)}
    if split and pfa:
        valid |= {(n, 1, d), (n, d)}
    elif not pfa:
        valid.add((num, 1, n, d))
    if shape in valid:
        return
    if len(shape) in (2, 3, 4):
        _fail(
            "antiquant_per_channel",
            f"The shape of antiquant parameter{list(shape)} is not expected. Expect "
            f"[{num}, {n}, 1, {d}] or [{num}, {n}, {d}] or [{num}, {n * d}] when per_channel mode.",
        )
    ranks = "1, 2, 3 or 4" if split and pfa else "2, 3 or 4"
    _fail(
        "antiquant_rank",
        f"The layout[{len(shape)}] does not match the dimension of antiquant, when per_channel mode, it should "
        f"be {ranks}.",
    )
