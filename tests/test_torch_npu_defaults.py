"""aclnn_emu.ops takes the defaults of torch_npu's Python function of each operator, and says so in
help(). The expected values are read from torch_npu's op plugin (Ascend/op-plugin, branch 26.1.0,
op_plugin/config/op_plugin_functions.yaml: the `func:` line of each function), written here with
the aclnn parameter each torch_npu argument is passed as (op_plugin/ops/opapi/*KernelNpuOpApi.cpp).
A call with the defaults is checked against the same call with the values spelled out, and against
what the defaults mean (float64)."""

import inspect

import numpy as np
import pytest

import aclnn_emu as ae

INT32_MAX, INT64_MAX = 2147483647, 9223372036854775807

FUSION_ATTENTION = dict(
    scaleValue=1.0, keepProb=1.0, preTokens=INT32_MAX, nextTokens=INT32_MAX, innerPrecise=0, sparseMode=0
)

# operator -> (torch_npu function, {aclnn parameter: torch_npu default})
TORCH_NPU = {
    "FlashAttentionScoreV2": (
        "npu_fusion_attention_v2",  # scale=1., keep_prob=1., pre_tokens, next_tokens, inner_precise, sparse_mode, pse_type
        dict(
            scaleValue=1.0,
            keepProb=1.0,
            preTokens=INT32_MAX,
            nextTokens=INT32_MAX,
            innerPrecise=0,
            sparseMode=0,
            pseType=1,
        ),
    ),
    "FlashAttentionScoreGradV2": (
        "npu_fusion_attention_grad_v2",  # scale_value=1., keep_prob=1., ...
        dict(
            scaleValue=1.0,
            keepProb=1.0,
            preTokens=INT32_MAX,
            nextTokens=INT32_MAX,
            innerPrecise=0,
            sparseMode=0,
            pseType=1,
        ),
    ),
    "PromptFlashAttentionV2": (
        "npu_prompt_flash_attention",
        dict(
            numHeads=1,
            scaleValue=1.0,
            preTokens=INT32_MAX,
            nextTokens=0,
            inputLayout="BSH",
            numKeyValueHeads=0,
            sparseMode=0,
        ),
    ),
    # It calls aclnnPromptFlashAttentionV3 (innerPrecise 1; 0 for its sparse modes 10-14); V1 shares
    # the defaults of the parameters it has.
    "PromptFlashAttention": (
        "npu_prompt_flash_attention",
        dict(numHeads=1, scaleValue=1.0, preTokens=INT32_MAX, nextTokens=0, inputLayout="BSH", numKeyValueHeads=0),
    ),
    "PromptFlashAttentionV3": (
        "npu_prompt_flash_attention",
        dict(
            numHeads=1,
            scaleValue=1.0,
            preTokens=INT32_MAX,
            nextTokens=0,
            inputLayout="BSH",
            numKeyValueHeads=0,
            sparseMode=0,
            innerPrecise=1,
        ),
    ),
    # It calls aclnnIncreFlashAttentionV4; V1-V3 share the defaults of the parameters they have.
    "IncreFlashAttention": (
        "npu_incre_flash_attention",
        dict(numHeads=1, scaleValue=1.0, inputLayout="BSH", numKeyValueHeads=0),
    ),
    "IncreFlashAttentionV2": (
        "npu_incre_flash_attention",
        dict(numHeads=1, scaleValue=1.0, inputLayout="BSH", numKeyValueHeads=0),
    ),
    "IncreFlashAttentionV3": (
        "npu_incre_flash_attention",
        dict(numHeads=1, scaleValue=1.0, inputLayout="BSH", numKeyValueHeads=0, blockSize=0, innerPrecise=1),
    ),
    "IncreFlashAttentionV4": (
        "npu_incre_flash_attention",
        dict(numHeads=1, scaleValue=1.0, inputLayout="BSH", numKeyValueHeads=0, blockSize=0, innerPrecise=1),
    ),
    **{
        name: (
            "npu_fused_infer_attention_score",
            dict(
                numHeads=1,
                scaleValue=1.0,
                preTokens=INT32_MAX,
                nextTokens=INT32_MAX,
                inputLayout="BSH",
                numKeyValueHeads=0,
                sparseMode=0,
                innerPrecise=0,
                blockSize=0,
                antiquantMode=0,
                softmaxLseFlag=False,
                **({} if name == "FusedInferAttentionScore" else dict(keyAntiquantMode=0, valueAntiquantMode=0)),
            ),
        )
        for name in (
            "FusedInferAttentionScore",
            "FusedInferAttentionScoreV2",
            "FusedInferAttentionScoreV3",
            "FusedInferAttentionScoreV4",
            "FusedInferAttentionScoreV5",  # on Ascend950, from op-plugin branch 26.0.0 (pseType 0, no start indices)
        )
    },
    "ScatterPaKvCache": ("npu_scatter_pa_kv_cache", dict(cacheModeOptional="PA_NZ")),
    "GatherPaKvCache": ("npu_gather_pa_kv_cache", dict(isSeqLensCumsum=False)),
    "LightningIndexer": (
        "npu_lightning_indexer",
        dict(
            layoutQueryOptional="BSND",
            layoutKeyOptional="BSND",
            sparseCount=2048,
            sparseMode=3,
            preTokens=INT64_MAX,
            nextTokens=INT64_MAX,
            returnValues=False,
        ),
    ),
    "LightningIndexerGrad": (
        "npu_lightning_indexer_grad",
        dict(layout="BSND", sparseMode=3, preTokens=INT64_MAX, nextTokens=INT64_MAX),
    ),
    "SparseFlashAttention": (
        "npu_sparse_flash_attention",
        dict(
            sparseBlockSize=1,
            layoutQuery="BSND",
            layoutKv="BSND",
            sparseMode=3,
            preTokens=INT64_MAX,
            nextTokens=INT64_MAX,
            attentionMode=0,
            returnSoftmaxLse=False,
        ),
    ),
    "SparseFlashAttentionGrad": (
        "npu_sparse_flash_attention_grad",
        dict(layoutOptional="BSND", sparseMode=3, preTokens=INT64_MAX, nextTokens=INT64_MAX),
    ),
    # npu_fusion_attention / _grad call FlashAttentionScore(Grad) V1, V3 (with a sink), VarLenScore /
    # UnpaddingScoreGrad (V4 with softmax_layout "TND", V5 with a sink) (FlashAttentionKernelNpuOpApi.cpp):
    # scale=1., keep_prob=1., pre_tockens=next_tockens=2147483647, inner_precise=0, sparse_mode=0,
    # softmax_layout="" (passed as softmaxOutLayout / softmaxInLayout). From op-plugin branch 26.0.0 it also calls
    # FlashAttentionScoreV4 (the same attributes; outDtype and pseType its DEFAULT_OUT_DTYPE / DEFAULT_PSE_TYPE, seed
    # and offset from the generator).
    **{
        name: (function, dict(FUSION_ATTENTION, **({layout: ""} if layout else {})))
        for function, names, layout in (
            ("npu_fusion_attention", ("FlashAttentionScore", "FlashAttentionScoreV3"), None),
            ("npu_fusion_attention", [f"FlashAttentionVarLenScore{v}" for v in ("", "V2", "V3")], None),
            (
                "npu_fusion_attention",
                ("FlashAttentionVarLenScoreV4", "FlashAttentionVarLenScoreV5", "FlashAttentionScoreV4"),
                "softmaxOutLayout",
            ),
            ("npu_fusion_attention_grad", ("FlashAttentionScoreGrad", "FlashAttentionScoreGradV3"), None),
            ("npu_fusion_attention_grad", [f"FlashAttentionUnpaddingScoreGrad{v}" for v in ("", "V2", "V3")], None),
            (
                "npu_fusion_attention_grad",
                ("FlashAttentionUnpaddingScoreGradV4", "FlashAttentionUnpaddingScoreGradV5"),
                "softmaxInLayout",
            ),
        )
        for name in names
    },
    # size, p, seed and offset are required in both (op-plugin DropoutGenMaskKernelNpuOpApi.cpp)
    "DropoutGenMaskV2": ("_npu_dropout_gen_mask", {}),
    "DropoutGenMask": ("npu_dropout_gen_mask", {}),
}
# From op-plugin branch 26.0.0 npu_fusion_attention_grad_v2 calls FlashAttentionScoreGradV4 for non-FP8 queries
# (FlashAttentionV2KernelNpuOpApi.cpp): V2's defaults, and softmax_layout="", seed=0, offset=0.
TORCH_NPU["FlashAttentionScoreGradV4"] = (
    "npu_fusion_attention_grad_v2",
    dict(TORCH_NPU["FlashAttentionScoreGradV2"][1], softmaxInLayout="", seed=0, offset=0),
)


def test_every_exported_operator_has_its_torch_npu_function():
    """A new entry point: find torch_npu's function that calls it (op_plugin/ops/opapi), declare its
    defaults and `defaults_from`, and list them here (docs/design/checklist.md)."""
    assert set(ae.ops.__all__) - set(TORCH_NPU) == set(), "entry points whose torch_npu defaults are not listed"
    assert set(TORCH_NPU) - set(ae.ops.__all__) == set()


@pytest.mark.parametrize("name", sorted(TORCH_NPU))
def test_the_defaults_are_torch_npus_and_help_says_so(name):
    function, defaults = TORCH_NPU[name]
    fn = getattr(ae.ops, name)
    assert fn.op.defaults_from == f"torch_npu.{function}"
    signature = inspect.signature(fn).parameters
    assert {p: signature[p].default for p in defaults} == defaults
    assert f"Defaults: torch_npu.{function}'s" in fn.__doc__


def _float64_attention(q, k, v, scale):
    s = np.einsum("...qd,...kd->...qk", q.astype(np.float64), k.astype(np.float64)) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


RNG = np.random.default_rng(30)


def test_flash_attention_score_defaults_mean_no_mask_no_dropout_no_scale():
    q, k, v = (RNG.standard_normal((1, 2, 64, 16)).astype(np.float16) * np.float16(0.3) for _ in range(3))
    defaults = ae.ops.FlashAttentionScoreV2(q, k, v, headNum=2, inputLayout="BNSD")
    spelled = ae.ops.FlashAttentionScoreV2(
        q,
        k,
        v,
        scaleValue=1.0,
        keepProb=1.0,
        preTokens=INT32_MAX,
        nextTokens=INT32_MAX,
        headNum=2,
        inputLayout="BNSD",
        innerPrecise=0,
        sparseMode=0,
        pseType=1,
    )
    for got, want in zip(defaults, spelled):
        assert (got is None and want is None) or got.tobytes() == want.tobytes()
    # every query sees every key (no causal band, no mask), nothing dropped, scores unscaled
    assert np.abs(defaults.attentionOutOut - _float64_attention(q, k, v, 1.0)).max() < 2e-3
    assert np.abs(defaults.attentionOutOut - _float64_attention(q, k, v, 0.25)).max() > 1e-2  # the check can fail


def test_incre_flash_attention_defaults_mean_one_head_bsh_no_scale():
    q = RNG.standard_normal((2, 1, 32)).astype(np.float16)  # BSH, H = 1 head of 32
    k, v = (RNG.standard_normal((2, 40, 32)).astype(np.float16) * np.float16(0.2) for _ in range(2))
    defaults = ae.ops.IncreFlashAttentionV4(q, [k], [v])
    spelled = ae.ops.IncreFlashAttentionV4(
        q, [k], [v], numHeads=1, scaleValue=1.0, inputLayout="BSH", numKeyValueHeads=0, blockSize=0, innerPrecise=1
    )
    assert defaults.tobytes() == spelled.tobytes()
    assert np.abs(defaults - _float64_attention(q, k, v, 1.0)).max() < 2e-3
    assert np.abs(defaults - _float64_attention(q, k, v, 0.25)).max() > 1e-2


def test_scatter_defaults_to_the_nz_cache_as_torch_npu_does():
    """PA_NZ: element h of a token's [N·D] row lands at [block, h // 16, offset, h % 16] (fp16)."""
    key = RNG.standard_normal((3, 2, 16)).astype(np.float16)
    blocks, block_size = 2, 4
    slots = np.array([5, 0, 3], np.int32)
    caches = [np.zeros((blocks, 2 * 16 // 16, block_size, 16), np.float16) for _ in range(4)]
    ae.ops.ScatterPaKvCache(key, caches[0], slots, key, caches[1])
    ae.ops.ScatterPaKvCache(key, caches[2], slots, key, caches[3], cacheModeOptional="PA_NZ")
    assert all(c.tobytes() == caches[2].tobytes() for c in caches[:2] + caches[3:])
    expected = np.zeros_like(caches[0])
    for token, slot in enumerate(slots):
        row = key[token].reshape(-1)
        for h in range(row.size):
            expected[slot // block_size, h // 16, slot % block_size, h % 16] = row[h]
    assert caches[0].tobytes() == expected.tobytes()
