"""IncreFlashAttentionV4 on Ascend910_95: where its path differs from Atlas A2/A3.

Routing in 8.5.0-beta.1:
- `incre_flash_attention_def.cpp` registers ascend910_95 (aicore_config_910d, opFile
  incre_flash_attention_apt) with the op-level dtype/format lists, the same 22 ND combinations as
  ascend910b/ascend910_93: the generated entry point's NULL, empty-output and kernel-key codes are
  the A2/A3 ones.
- The tiling is picked by `FiaTilingRegistry::DoTilingImpl` from the SocVersion: IFATilingV2
  (`incre_flash_attention_tiling_v2.cpp`, registered for ASCEND910_95). `IFATilingV2::DoOpTiling`
  converts the context (no check can fail there) and `IFATilingV2::DoSubOpTiling` splits on the
  key dtype:
  * FLOAT16/BF16 key: `PFAConvertContext` hands the call to PromptFlashAttentionTilingV2
    (`prompt_flash_attention_tiling_v2.cpp`, the PFA arch35 tiling) with actualSeqLengths as the
    key/value lengths, no query lengths, sparseMode 0, pre/next tokens 2147483647, innerPrecise
    read as int64, the key list's first tensor as key (isKvContinuous = 1, so no tensor-list form),
    and the arch35 flash-attention kernels compute it (the PromptFlashAttention arch35 kernel,
    `pfa.ARCH35` roundings, with pseShift and kv left padding). Replayed here by `tiling`, check by
    check in `RunBigKernelTilingWithParams`' order; a failure is GRAPH_FAILED, which the generated
    entry point returns as 561002.
  * INT8 key (antiquant): IFATilingV2::RunBigKernelTiling and the arch35 antiquant kernel
    (incre/antiquant_arch35, which runs the dequantised key/value through `_run` here).
The rule ids of the shared PFA arch35 checks (prompt/checks_arch35) keep their names; their code is 561002
here (`mapped` in `tiling`). Differences: docs/divergences/incre_flash_attention.md.
"""

from aclnn_emu.opdef.failures import TilingFailure, mapped
from types import SimpleNamespace
import numpy as np
from aclnn_emu import status
from aclnn_emu.dtypes import DataType
from aclnn_emu.opdef.generated import attr_int32, shape_dim
from ..common import (
    MLA_D,
    MLA_DV,
    check_ifa_mask,
    check_kv,
    check_layout,
    check_query_and_key,
    check_query_out,
    shape_info,
)
from .launch_arch35 import TOKENS_MAX, _run, kv_heads_view


F16, I8, I64 = DataType.ACL_FLOAT16, DataType.ACL_INT8, DataType.ACL_INT64


MAX_HEADS, MAX_GROUP = 256, 64


PA_BLOCK_MAX, PA_BLOCK_PFA = 512, 128  # BLOCK_SIZE_MAX, BLOCK_SIZE_BASE


PA_BLOCK_IFA = 32 // 2  # ifaBlockSizeBase (32 bytes) / the fp16/bf16 element size; also the


# NZ cache's D0 (BYTE_BLOCK / the element size)
PA_MAX_H = 65535  # HLIMIT: a (blocks, blockSize, H) cache's H


_PREFIX = "IncreFlashAttention tiling failed (PromptFlashAttentionTilingV2): "


def _fail(rule: str, message: str):
    raise TilingFailure(rule, message)  # mapped to 561002 in `tiling`


def check_quant2(scale, offset, n, d, fail):
    """The INT8-output scales, as PromptFlashAttentionTilingV2 (CheckPostQuantParams/Shape) and
    IFATilingV2 (ProcessQuant2/ProcessQuant2Attribute) both check them: scale given and not empty,
    an offset of the same rank and size, rank 1 per tensor ([1]), any other rank N x D values. The
    dtype rules (offset like scale, FLOAT32 or BF16 and BF16 only for a BF16 query) cannot fail: the
    OpDef has no kernel for any combination they reject."""
    if scale is None:
        fail("quant2_null", "quant_scale2_shape is nullptr in post quant scenario.")
    if scale.numel == 0:
        fail("quant2_empty", "quant_scale2 is empty tensor in post quant scenario.")
    if offset is not None:
        if offset.ndim != scale.ndim:
            fail(
                "quant2_offset_rank",
                f"quant_scale2 dim num({scale.ndim}) do not equal quant_offset2 dim num({offset.ndim}).",
            )
        if offset.numel != scale.numel:
            fail(
                "quant2_offset_size",
                f"quant_scale2 dimension multiply result({scale.numel}) do not equal "
                f"quant_offset2 dimension multiply result({offset.numel}).",
            )
    if scale.ndim == 1 and scale.numel != 1:
        fail(
            "quant2_per_tensor",
            f"for post quant per-tensor, quant scale/offset only support [1], now is [{scale.numel}]",
        )
    if scale.ndim != 1 and scale.numel != n * d:
        fail(
            "quant2_per_channel",
            f"for post quant per-channel, quant scale/offset dim multiply result only "
            f"support qN * vD({n} * {d} = {n * d}), now is ({scale.numel}).",
        )


def tiling(a, env):
    """PromptFlashAttentionTilingV2 for a FLOAT16/BF16 key: its checks, then the phase-2 work."""
    # The shared PFA checks' GRAPH_FAILED is 561002 behind the generated IFA entry point.
    with mapped(status.ACLNN_ERR_INNER_TILING_ERROR, _PREFIX, "tiling."):
        return _Tiling(a, env).run()


class _Tiling:
    def __init__(self, a, env):
        self.a, self.env = a, env
        self.paged = a.blocktable is not None
        self.heads, self.kv_attr = attr_int32(a.numHeads), attr_int32(a.numKeyValueHeads)
        self.kv_heads = self.kv_attr or self.heads
        self.lengths = a.actualSeqLengths if a.actualSeqLengths else None  # enableActSeqLenKV
        # The arguments as PFAConvertContext hands them on, named as the shared PFA checks read them.
        self.view = SimpleNamespace(
            query=a.query,
            key=a.key.items[0],
            value=a.value.items[0],
            attentionOut=a.attentionOut,
            attenMask=a.attenMask,
            inputLayout="BSH" if a.inputLayout is None else a.inputLayout,
            numHeads=self.heads,
            numKeyValueHeads=self.kv_attr,
            actualSeqLengths=None,
            actualSeqLengthsKv=a.actualSeqLengths,
            sparseMode=0,
            preTokens=TOKENS_MAX,
            nextTokens=TOKENS_MAX,
        )

    def run(self):
        a, v = self.a, self.view
        if a.query.is_empty:  # CheckTensorInvalid
            _fail("arch35.query_empty", "Query input is empty and output is not empty!")
        if v.key.is_empty or v.value.is_empty:  # CheckEmptyTensor: zeros, nothing checked
            out = a.attentionOut
            return lambda workspace: out.write(np.zeros(out.shape, out.np_dtype))
        self._single_attributes()
        self._crossover()
        self._warn_ignored()
        return self._launch()

    # -- CheckSingleAttribute ------------------------------------------------------------------
    def _single_attributes(self):
        v = self.view
        check_layout(v)  # CheckIO
        self.b, self.n, self.s1, self.d = shape_info(v, v.query, "query")
        self.value_d = self._pa_value_d() if self.paged else shape_info(v, v.value, "value")[3]
        self.mla = self.d == MLA_D and self.value_d == MLA_DV
        check_query_out(v, self.mla)
        check_kv(v, self.mla, paged=self.paged)  # CheckKV
        self._heads()  # CheckQueryAndKey
        if not self.paged:
            check_query_and_key(v)
            self.s2 = shape_info(v, v.key, "key")[2]
        self._post_quant()  # CheckQuant
        self._actual_lengths()  # CheckActSeqLen
        if self.paged:
            self._page_attention()  # CheckPATypeAndShape
        self._pse()  # CheckPseShiftTypeAndShape
        precise = self.a.innerPrecise  # CheckInnerPrecise (int64)
        if not 0 <= precise < 4:
            _fail("arch35.inner_precise", f"innerPrecise [{precise}] should be 0,1,2,3, please check.")

    def _pa_value_d(self):
        """SetShape of a page-attention value: D of (blocks, blockSize, H) or (blocks, N, blockSize, D)."""
        shape = self.view.value.shape
        if len(shape) == 3:
            return shape[2] // self.kv_heads if self.kv_heads > 0 else 0
        return shape[3] if len(shape) == 4 else shape_dim(shape, 2) * shape_dim(shape, 4)

    def _heads(self):
        """SetAndCheckHeadNumRatio / CheckInputDimAndHeadNum."""
        v, layout = self.view, self.view.inputLayout
        n_q, n_kv = self.heads, self.kv_attr
        if n_q < 0 or n_kv < 0:
            _fail("arch35.heads_negative", f"numHeads({n_q}) or numKeyValueHeads({n_kv}) is negative!")
        found = (n_q, self.kv_heads, self.kv_heads)
        if layout in ("BNSD", "BNSD_BSND", "BSND") and not self.paged:
            if not v.query.ndim == v.key.ndim == v.value.ndim == 4:
                _fail(
                    "arch35.heads_rank",
                    f"input dim of q({v.query.ndim}), k({v.key.ndim}), v({v.value.ndim}) must "
                    "be 4 for BNSD or BSND format!",
                )
            axis = 2 if layout == "BSND" else 1
            found = tuple(t.shape[axis] for t in (v.query, v.key, v.value))
        if n_q > MAX_HEADS:
            _fail("arch35.heads_max", f"numHeads({n_q}) should not be more than 256!")
        if found[0] != n_q:
            _fail(
                "arch35.query_heads", f"numHeads({found[0]}) in query shape must be equal to numHeads({n_q}) in attr!"
            )
        for name, heads in (("key", found[1]), ("value", found[2])):
            if heads != self.kv_heads:
                _fail(
                    f"arch35.{name}_heads",
                    f"numHeads({heads}) in {name} shape do not match numKeyValueHeads({self.kv_heads}) in attr!",
                )
        if n_kv and n_q % n_kv:
            _fail("arch35.heads_divisible", f"numHeads({n_q}) must be divisible by numKeyValueHeads({n_kv})!")
        if n_kv and n_q // n_kv > MAX_GROUP:
            _fail("arch35.group", f"numHeads / numKeyValueHeads = {n_q // n_kv}, cannot be larger than 64.")

    def _post_quant(self):
        """CheckQuant for a FLOAT16/BF16 query: CheckPostQuantParams / CheckPostQuantShape."""
        a = self.a
        if a.attentionOut.dtype != I8:
            return
        if a.query.dtype == F16 and any(t is not None for t in (a.dequantScale1, a.quantScale1, a.dequantScale2)):
            _fail(
                "arch35.quant_scales",
                "When input dtype is fp16 and postQuant is enable, dequantScale1, "
                "quantScale1 and dequantScale2 should be null.",
            )
        check_quant2(
            a.quantScale2, a.quantOffset2, self.n, self.value_d, lambda rule, message: _fail(f"arch35.{rule}", message)
        )

    def _actual_lengths(self):
        """CheckActSeqLen for the key/value lengths (1 value, or at least B; in [0, S2] without PA)."""
        lengths = self.lengths
        if lengths is None:
            return
        if 1 < len(lengths) < self.b:
            _fail(
                "arch35.actual_seq_len",
                f"Dim({len(lengths)}) of actSeqLen kv must equal to 1 or greater than or "
                f"equal to batch size({self.b})!",
            )
        if self.paged:
            return
        for i, value in enumerate(lengths[: self.b]):
            if not 0 <= value <= self.s2:
                _fail("arch35.actual_seq_range", f"Actual_seq_lengths_kv[{i}]({value}) must be in range[0, {self.s2}]!")

    def _page_attention(self):
        """CheckPATypeAndShape and CheckBlockTableShape; S2 becomes maxBlockNumPerBatch * blockSize."""
        a, v = self.a, self.view
        if self.lengths is None:
            _fail("arch35.pa_actual_null", "actual seq length kv can't be null when blockTable is not null")
        table = a.blocktable
        if table.numel == 0:
            _fail("arch35.pa_table_empty", f"blockTable each dim can't be 0, blockTable Shape {list(table.shape)}.")
        bs = attr_int32(a.blockSize)
        base = PA_BLOCK_IFA if self.s1 == 1 else PA_BLOCK_PFA  # enableIFA: a one-row query
        if bs % base or not base <= bs <= PA_BLOCK_MAX:
            _fail(
                "arch35.pa_block_size",
                f"block size({bs}) should be a multiple of {base}, and should be in range "
                f"of [{base}, {PA_BLOCK_MAX}] when PA enable",
            )
        per_batch = [int((self._length(i) + bs - 1) / bs) for i in range(self.b)]  # C division
        valid, most = sum(per_batch), max(per_batch + [0])
        k, val = v.key.shape, v.value.shape
        rank = len(k)
        mla_dims = {3: (2,), 4: (3,), 5: (2, 4)}.get(rank, ()) if self.mla else ()  # Dv may differ
        if any(
            shape_dim(k, i) != shape_dim(val, i) for i in range(rank if rank in (3, 4, 5) else 0) if i not in mla_dims
        ):
            _fail(
                "arch35.pa_kv_shape",
                f"the dim num of key and value are inconsistent when PA enable. key shape "
                f"{list(k)}, value shape {list(val)}.",
            )
        ranks = (3, 4, 5) if v.inputLayout in ("BNSD", "BNSD_BSND") else (3, 5)
        if rank not in ranks:
            _fail(
                "arch35.pa_kv_rank",
                f"the layout of query is {v.inputLayout}, key and value rank should be "
                f"{' or '.join(map(str, ranks))} when PA enable, now key shape {list(k)}.",
            )
        ratio, h = self.heads // self.kv_heads, self.n * self.d
        if rank == 3 and (k[0] < valid or k[1] != bs or k[2] * ratio != h):
            _fail(
                "arch35.pa_cache_bsh",
                f"the shape of key {list(k)} is wrong, which should be [>={valid}, {bs}, "
                f"{h // ratio}] when PA BnBsH enable",
            )
        if rank == 3 and k[2] > PA_MAX_H:
            _fail(
                "arch35.pa_cache_h", f"layout of key/value is BSH, the key h({k[2]}) should not > 65535 when PA enable"
            )
        if rank == 4 and (k[0] < valid or k[1] * ratio != self.n or k[2] != bs or k[3] != self.d):
            _fail(
                "arch35.pa_cache_bnsd",
                f"the shape of key {list(k)} is wrong, which should be [>={valid}, "
                f"{self.n // ratio}, {bs}, {self.d}] when PA BnNBsD enable!",
            )
        if rank == 5 and (
            k[0] < valid or k[1] * ratio != self.n or k[3] != bs or k[2] * k[4] != self.d or k[4] != PA_BLOCK_IFA
        ):
            _fail(
                "arch35.pa_cache_nz",
                f"the shape of key {list(k)} is wrong, which should be [>={valid}, "
                f"{self.n // ratio}, {self.d // PA_BLOCK_IFA}, {bs}, {PA_BLOCK_IFA}] when PA NZ enable!",
            )
        if table.ndim != 2:
            _fail(
                "arch35.pa_table_rank",
                f"the dim of block table must be 2 when PA enable! blockTable dims "
                f"[{table.ndim}], Shape {list(table.shape)}.",
            )
        if table.shape[0] != self.b or table.shape[1] < most:
            _fail(
                "arch35.pa_table_shape",
                f"block table shape should be [{self.b}, >={most}], now is {list(table.shape)} when PA enable!",
            )
        self.block_size, self.max_blocks, self.s2 = bs, table.shape[1], most * bs

    def _length(self, b: int) -> int:
        lengths = self.lengths
        return lengths[0] if len(lengths) == 1 else lengths[b]

    def _pse(self):
        """CheckPseShiftTypeAndShape: [1 or B, N, >= S1, >= S2] (its dtype is the query's by the OpDef)."""
        pse = self.a.pseShift
        self.has_pse = pse is not None and pse.numel > 0
        if not self.has_pse:
            return
        if pse.ndim != 4:
            _fail("arch35.pse_rank", f"pse shift shape must be 4 dimension, rather than {pse.ndim} dimension")
        b, n, s1, s2 = pse.shape
        if b not in (1, self.b) or n != self.n or s1 < self.s1 or s2 < self.s2:
            _fail(
                "arch35.pse_shape",
                f"pse shift shape must be [1 or {self.b}, {self.n}, >={self.s1}, >={self.s2}], "
                f"but now it is {list(pse.shape)}, the layout is {self.view.inputLayout}",
            )

    # -- CheckCrossoverAttribute -----------------------------------------------------------------
    def _crossover(self):
        if self.paged:  # CheckPACrossover
            for i, value in enumerate(self.lengths[: self.b]):
                if value < 0:
                    _fail("arch35.pa_actual_negative", f"Actual_seq_lengths_kv[{i}]({value}) must >= 0")
        mask = self.a.attenMask
        self.has_mask = mask is not None and mask.numel != 0
        if not self.has_mask:  # CheckMaskShapeCrossSparse
            return
        if self.s1 == 1:
            check_ifa_mask(self.view, self.b, self.s2)
            return
        shape = mask.shape
        if len(shape) not in (2, 3, 4):
            _fail("arch35.mask_rank", f"attenMask dim({len(shape)}) must be 2 or 3 or 4!")
        batch = 1 if len(shape) == 2 else shape[0]
        if shape[-2] < self.s1 or shape[-1] < self.s2 or batch not in (1, self.b):
            _fail(
                "arch35.mask_shape",
                f"attenMask batch({batch}) must be 1 or {self.b}, attenMask Q_S({shape[-2]}) "
                f"must be larger than or equal to sQ({self.s1}),attenMask KV_S({shape[-1]}) must be larger than or "
                f"equal to sK({self.s2}), please check",
            )

    def _warn_ignored(self):
        """Inputs the A2/A3 tiling rejects but PromptFlashAttentionTilingV2 never reads."""
        a = self.a
        ignored = [name for name in ("antiquantScale", "antiquantOffset") if getattr(a, name) is not None]
        if a.attentionOut.dtype != I8:
            ignored += [
                name
                for name in ("dequantScale1", "quantScale1", "dequantScale2", "quantScale2", "quantOffset2")
                if getattr(a, name) is not None
            ]
        if ignored:
            self.env.warn(
                f"{', '.join(ignored)} ignored: on Ascend910_95 a FLOAT16/BF16 key runs "
                "PromptFlashAttentionTilingV2, which does not read them (Atlas A2/A3 reject the call)"
            )

    # -- the kernel ----------------------------------------------------------------------------
    def _launch(self):
        v = self.view
        padding = self.a.kvPaddingSize
        if padding is not None and self.paged:
            self.env.warn(
                "kvPaddingSize with page attention: how the arch35 kernels combine them is not established "
                "in the source (the dense-cache offset, infer_flash_attention_kvcache.h, does not apply to "
                "blocks); the padding is ignored here"
            )
            padding = None
        plan = SimpleNamespace(
            b=self.b,
            s1=self.s1,
            s2=self.s2,
            d=self.d,
            value_d=self.value_d,
            heads=self.heads,
            kv_heads=self.kv_heads,
            layout=v.inputLayout,
            paged=self.paged,
            padding=padding,
            has_mask=self.has_mask,
            has_pse=self.has_pse,
            act_q=[self.s1] * self.b,
            q_padding=None,
            lengths=[self._length(b) if self.lengths else self.s2 for b in range(self.b)],
            block_size=getattr(self, "block_size", 0),
            max_blocks=getattr(self, "max_blocks", 0),
        )
        plan.kv_shape = None
        if v.inputLayout == "BSH" and not self.paged and v.key.shape[2] != self.kv_heads * self.d:
            # GetAndCheckShape takes the key's D as H / numKeyValueHeads: a remainder passes.
            plan.kv_shape = kv_heads_view(v.key, plan, self.env)
        return lambda workspace: _run(self.a, v, plan)
