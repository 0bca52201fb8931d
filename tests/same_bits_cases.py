"""Runs every entry point of ae.ops on inputs with awkward row and key counts and prints, as JSON, a
digest of each output's bytes per case. tests/test_native.py runs it once per ISA level and worker
count (ACLNN_EMU_ISA, ACLNN_EMU_THREADS) and compares the digests.

    python tests/same_bits_cases.py
"""

import dataclasses
import hashlib
import json
import pathlib
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import aclnn_emu as ae  # noqa: E402
from golden import lightning_indexer_grad as lig_golden  # noqa: E402
from golden import sparse_flash_attention_grad as sfag_golden  # noqa: E402

BF16 = ml_dtypes.bfloat16
F16 = np.float16


def _normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _train_step(forward, backward, q, k, v, dy, common, fwd_extra=None, grad_extra=None) -> dict:
    """{forward: its outputs, backward: the gradients it computes from the forward's statistics and output}."""
    fwd = getattr(ae.ops, forward)(q, key=k, value=v, **(fwd_extra or {}), **common)  # by name: rope comes 2nd
    grads = getattr(ae.ops, backward)(
        q,
        keyIn=k,
        value=v,
        dy=dy,
        softmaxMaxOptional=fwd.softmaxMaxOut,
        softmaxSumOptional=fwd.softmaxSumOut,
        attentionInOptional=fwd.attentionOutOut,
        **(grad_extra or {}),
        **common,
    )
    return {forward: list(fwd), backward: list(grads)}


def _fas(rng, dtype, sparse_mode, pre, nxt, specials=False):
    """FlashAttentionScoreV2 forward, then its gradient from the forward's outputs; with
    `specials`, a query row holds NaNs and a key an infinity."""
    b, n, s1, s2, d = 1, 2, 531, 333, 72
    q, dy = (_normal(rng, (b, n, s1, d), dtype) for _ in range(2))
    k, v = (_normal(rng, (b, n, s2, d), dtype) for _ in range(2))
    if specials:
        q[0, 0, 5, :3], k[0, 1, 7, 0] = np.nan, np.inf
    common = dict(scaleValue=0.118, preTokens=pre, nextTokens=nxt, headNum=n, inputLayout="BNSD", sparseMode=0)
    if sparse_mode:
        common.update(sparseMode=sparse_mode)
    fwd_extra = dict(keepProb=1.0, innerPrecise=0)
    return _train_step("FlashAttentionScoreV2", "FlashAttentionScoreGradV2", q, k, v, dy, common, fwd_extra)


def _fas_entries(rng):
    """FlashAttentionScore V1 and V3 (with a sink) and their gradients, dense BSND with grouped heads; the V3 step's
    gradient through FlashAttentionScoreGradV4 too."""
    b, n, n2, s1, s2, d = 1, 4, 2, 301, 277, 64
    q, dy = (_normal(rng, (b, s1, n, d), F16) for _ in range(2))
    k, v = (_normal(rng, (b, s2, n2, d), F16) for _ in range(2))
    sink = (rng.standard_normal(n) * 2).astype(np.float32)
    common = dict(scaleValue=0.125, preTokens=2147483647, nextTokens=0, headNum=n, inputLayout="BSND", sparseMode=0)
    results = {}
    for entry, grad, extra, grad_extra in (
        ("FlashAttentionScore", "FlashAttentionScoreGrad", {}, {}),
        ("FlashAttentionScoreV3", "FlashAttentionScoreGradV3", dict(sinkOptional=sink), dict(sinkInOptional=sink)),
    ):
        fwd_extra = dict(keepProb=1.0, innerPrecise=0, **extra)
        results.update(_train_step(entry, grad, q, k, v, dy, common, fwd_extra, grad_extra))
    smax, ssum, _, out = results["FlashAttentionScoreV3"]
    stats = dict(softmaxMaxOptional=smax, softmaxSumOptional=ssum, attentionInOptional=out)
    results["FlashAttentionScoreGradV4"] = _in_release("9.1.0", lambda: list(  # CANN 9.1.0 passes V4 the sink
        ae.ops.FlashAttentionScoreGradV4(q, keyIn=k, value=v, dy=dy, sinkInOptional=sink, **stats, **common)
    ))  # fmt: skip
    return results


def _var_len(rng):
    """VarLenScore V1-V5 and UnpaddingScoreGrad V1-V5 on a packed TND batch with an empty query batch;
    V3/V5 with the rope halves (bf16), V5 with a sink and token-major statistics."""
    cu_q, cu_kv, n, n2 = [16, 16, 53, 131], [24, 30, 67, 173], 4, 2
    mask = np.triu(np.ones((2048, 2048), np.uint8), 1)
    common = dict(
        attenMaskOptional=mask,
        actualSeqQLenOptional=cu_q,
        actualSeqKvLenOptional=cu_kv,
        scaleValue=0.1,
        keepProb=1.0,
        preTokens=2147483647,
        nextTokens=0,
        headNum=n,
        inputLayout="TND",
        innerPrecise=0,
        sparseMode=3,
    )
    results = {}
    for version, dtype in (("", F16), ("V2", F16), ("V3", BF16), ("V4", F16), ("V5", BF16)):
        q, dy = (_normal(rng, (cu_q[-1], n, 72), dtype) for _ in range(2))
        k, v = (_normal(rng, (cu_kv[-1], n2, 72), dtype) for _ in range(2))
        fwd_extra, grad_extra = {}, {}
        if version in ("V3", "V5"):
            qr, kr = _normal(rng, (cu_q[-1], n, 32), dtype), _normal(rng, (cu_kv[-1], n2, 32), dtype)
            fwd_extra, grad_extra = dict(queryRope=qr, keyRope=kr), dict(queryRope=qr, keyInRope=kr)
        if version == "V5":
            sink = (rng.standard_normal(n) * 2).astype(np.float32)
            fwd_extra.update(sinkOptional=sink, softmaxOutLayout="same_as_input")
            grad_extra.update(sinkInOptional=sink, softmaxInLayout="same_as_input")
        if version == "V4":
            fwd_extra, grad_extra = dict(softmaxOutLayout="same_as_input"), dict(softmaxInLayout="same_as_input")
        forward, backward = f"FlashAttentionVarLenScore{version}", f"FlashAttentionUnpaddingScoreGrad{version}"
        results.update(_train_step(forward, backward, q, k, v, dy, common, fwd_extra, grad_extra))
        if version == "V4":  # FlashAttentionScoreV4 (CANN 9.0.0 on) takes the same call
            results["FlashAttentionScoreV4"] = _in_release("9.0.0", lambda: list(
                ae.ops.FlashAttentionScoreV4(q, key=k, value=v, **fwd_extra, **common)
            ))  # fmt: skip
    return results


def _in_release(name, call):
    """`call()` with ACLNN_EMU_CANN_VERSION's setting at `name`."""
    from aclnn_emu import config

    saved = config.current
    config.current = dataclasses.replace(saved, cann_version=name)
    try:
        return call()
    finally:
        config.current = saved


def _fused_infer(rng, entry, dtype, s1):
    """FusedInferAttentionScore: grouped heads, awkward query and key counts, a causal window
    (prefill, s1 > 1) or one token (decode), with softmaxLse."""
    q = _normal(rng, (1, 4, s1, 128), dtype)
    k, v = (_normal(rng, (1, 2, 301, 128), dtype) for _ in range(2))
    out = getattr(ae.ops, entry)(
        q,
        [k],
        [v],
        numHeads=4,
        numKeyValueHeads=2,
        scaleValue=128**-0.5,
        inputLayout="BNSD",
        softmaxLseFlag=True,
        **(dict(nextTokens=0, sparseMode=0) if s1 > 1 else {}),
    )
    return list(out)


def _pfa(rng, dtype, pre, nxt, one_head=False, entry="PromptFlashAttentionV2", shape=(2, 4, 2, 301, 359)):
    """PromptFlashAttentionV2 on two batches of grouped heads [B, N, N2, S1, S2] (a short query's
    heads run stacked, as many as the worker count allows), or (`one_head`) on one long head, which
    the kernel cuts into row chunks per worker, with the band as attenMask."""
    b, n, kv_heads, s1, s2 = (1, 1, 1, 713, 659) if one_head else shape
    offset = np.arange(s2)[None, :] - np.arange(s1)[:, None]
    mask = ((offset < -pre) | (offset > nxt))[None, None] if one_head else None
    q = _normal(rng, (b, n, s1, 128), dtype)
    k, v = (_normal(rng, (b, kv_heads, s2, 128), dtype) for _ in range(2))
    kv_lengths = {} if entry == "PromptFlashAttention" else {"actualSeqLengthsKv": [s2, 211][:b]}
    out = getattr(ae.ops, entry)(
        q,
        k,
        v,
        attenMask=mask,
        actualSeqLengths=[s1, min(s1, 157)][:b],
        **kv_lengths,
        numHeads=n,
        scaleValue=0.09,
        preTokens=pre,
        nextTokens=nxt,
        inputLayout="BNSD",
        numKeyValueHeads=kv_heads,
    )
    return [out]


def _ifa(rng, d, groups, entry="IncreFlashAttentionV4"):
    kv_heads, s2 = 2, 413
    q = _normal(rng, (3, kv_heads * groups, 1, d), F16)
    k, v = (_normal(rng, (3, kv_heads, s2, d), F16) for _ in range(2))
    out = getattr(ae.ops, entry)(
        q,
        [k],
        [v],
        actualSeqLengths=[413, 77, 250],
        numHeads=kv_heads * groups,
        scaleValue=0.1,
        inputLayout="BNSD",
        numKeyValueHeads=kv_heads,
    )
    return [out]


def _sparse_flash_attention(rng):
    q = _normal(rng, (1, 7, 2, 512), F16)
    k, v = (_normal(rng, (1, 37, 1, 512), F16) for _ in range(2))
    q_rope, k_rope = _normal(rng, (1, 7, 2, 64), F16), _normal(rng, (1, 37, 1, 64), F16)
    indices = rng.integers(0, 9, (1, 7, 1, 5)).astype(np.int32)
    out = ae.ops.SparseFlashAttention(
        q,
        k,
        v,
        indices,
        queryRope=q_rope,
        keyRope=k_rope,
        scaleValue=1 / np.sqrt(576),
        sparseBlockSize=4,
        sparseMode=3,
        attentionMode=2,
        returnSoftmaxLse=True,
    )
    return list(out)


def _sparse_flash_attention_grad(rng):
    case, attrs = sfag_golden.make_case(
        rng, dtype=BF16, layout="TND", q_lens=[21, 35], kv_lens=[333, 259], n1=8, d=128, dr=64, nsel=150
    )
    grads = ae.ops.SparseFlashAttentionGrad(
        case["query"],
        case["key"],
        case["value"],
        case["sparseIndices"],
        case["dOut"],
        case["out"],
        case["softmaxMax"],
        case["softmaxSum"],
        case["actualSeqLengthsQuery"],
        case["actualSeqLengthsKv"],
        case["queryRope"],
        case["keyRope"],
        scaleValue=attrs["scale"],
        sparseBlockSize=attrs["block_size"],
        layoutOptional="TND",
        sparseMode=attrs["sparse_mode"],
        preTokens=2147483647,
        nextTokens=2147483647,
        deterministic=False,
    )
    return list(grads)


def _lightning_indexer(rng):
    q = _normal(rng, (2, 13, 8, 128), F16)
    k = _normal(rng, (2, 47, 1, 128), F16)
    w = _normal(rng, (2, 13, 8), F16)
    return list(ae.ops.LightningIndexer(q, k, w, sparseCount=16, sparseMode=3, returnValues=True))


def _lightning_indexer_grad(rng):
    case = lig_golden.make_case(rng, BF16, "BSND", 3, batch=2, seq_q=13, seq_k=71, top_k=24)
    grads = ae.ops.LightningIndexerGrad(
        case["query"],
        case["key"],
        case["dy"],
        case["indices"],
        case["weights"],
        headNum=64,
        layout="BSND",
        sparseMode=3,
        preTokens=65536,
        nextTokens=65536,
        determinstic=False,
    )
    return list(grads)


def _paged_caches(rng):
    blocks, block, heads, d = 9, 16, 2, 40
    key = _normal(rng, (37, heads, d), F16)
    slots = rng.permutation(blocks * block)[:37].astype(np.int32)
    caches = [np.zeros((blocks, block, heads, d), F16) for _ in range(2)]
    scattered = ae.ops.ScatterPaKvCache(key, caches[0], slots, key, caches[1], cacheModeOptional="Norm")
    tables = rng.permutation(blocks)[:6].reshape(2, 3).astype(np.int32)
    lens = np.array([41, 30], np.int32)
    key_out, value_out = (np.zeros((71, heads, d), F16) for _ in range(2))
    gathered = ae.ops.GatherPaKvCache(
        caches[0], caches[1], tables, lens, key_out, value_out, cacheMode="Norm", isSeqLensCumsum=False
    )
    return {"ScatterPaKvCache": list(scattered), "GatherPaKvCache": list(gathered)}


def _dropout_masks() -> dict:
    """DropoutGenMask / V2 over 1000 elements (eight 128-bit rows less 24): the mask's bytes."""
    v1 = ae.ops.DropoutGenMask((1000,), 0.3, 5, 8, out=np.zeros(128, np.uint8))
    v2 = ae.ops.DropoutGenMaskV2((1000,), 0.3, 5, 8, int(ae.DataType.ACL_BF16), out=np.zeros(128, np.uint8))
    return {"DropoutGenMask": [v1], "DropoutGenMaskV2": [v2]}


def cases() -> dict:
    """{case name: the outputs}, each case named after its operator."""
    rng = np.random.default_rng(31)
    results = {}
    for dtype, mode, pre, nxt, specials in (
        (F16, 0, 65536, 65536, False),
        (BF16, 0, 65536, 65536, False),
        (F16, 4, 200, 17, False),
        (F16, 0, 65536, 65536, True),
    ):
        for op, outputs in _fas(rng, dtype, mode, pre, nxt, specials).items():
            results[f"{op} {np.dtype(dtype).name} sparse {mode}{' NaN/inf' if specials else ''}"] = outputs
    for entries in (_fas_entries(rng), _var_len(rng)):
        results.update({f"{op} float16/bfloat16": outputs for op, outputs in entries.items()})
    for dtype, pre, nxt in ((F16, 2147483647, 0), (BF16, 2147483647, 0), (F16, 123, 5)):
        results[f"PromptFlashAttentionV2 {np.dtype(dtype).name} band {pre} {nxt}"] = _pfa(rng, dtype, pre, nxt)
    results["PromptFlashAttentionV2 one head band 100 0"] = _pfa(rng, F16, 100, 0, one_head=True)
    results["PromptFlashAttentionV2 short query, 8 heads per kv head"] = _pfa(
        rng, F16, 65536, 65536, shape=(2, 16, 2, 3, 1100)
    )
    for entry in ("PromptFlashAttention", "PromptFlashAttentionV3"):
        results[f"{entry} float16"] = _pfa(rng, F16, 2147483647, 0, entry=entry)
    for d, groups in ((128, 4), (64, 3), (72, 5)):
        results[f"IncreFlashAttentionV4 d {d} groups {groups}"] = _ifa(rng, d, groups)
    for entry, d, groups in (
        ("IncreFlashAttention", 72, 5),
        ("IncreFlashAttentionV2", 64, 3),
        ("IncreFlashAttentionV3", 128, 4),
    ):
        results[f"{entry} d {d} groups {groups}"] = _ifa(rng, d, groups, entry=entry)
    for entry, dtype, s1 in (
        ("FusedInferAttentionScore", F16, 77),
        ("FusedInferAttentionScoreV2", BF16, 1),
        ("FusedInferAttentionScoreV3", F16, 1),
        ("FusedInferAttentionScoreV4", BF16, 203),
    ):
        results[f"{entry} {np.dtype(dtype).name} s1 {s1}"] = _fused_infer(rng, entry, dtype, s1)
    # FusedInferAttentionScoreV5 (CANN 9.0.0 on): V4's inner call
    entry = "FusedInferAttentionScoreV5"
    results[f"{entry} float16 s1 45"] = _in_release("9.0.0", lambda: _fused_infer(rng, entry, F16, 45))
    results["SparseFlashAttention"] = _sparse_flash_attention(rng)
    results["SparseFlashAttentionGrad"] = _sparse_flash_attention_grad(rng)
    results["LightningIndexer"] = _lightning_indexer(rng)
    results["LightningIndexerGrad"] = _lightning_indexer_grad(rng)
    for op, outputs in _paged_caches(rng).items():
        results[op] = outputs
    results.update(_dropout_masks())
    return results


def digests(results: dict) -> dict:
    return {
        name: [hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest() for x in outputs if x is not None]
        for name, outputs in results.items()
    }


if __name__ == "__main__":
    from aclnn_emu.kernels import native, parallel

    print(json.dumps({"isa": native.isa(), "workers": parallel.workers(), "digests": digests(cases())}))
