"""Valid calls the fuzzer starts from: for every exported entry point, one or more functions of the
chip family returning the C arguments in order (see fuzz.case for T, L, Same).

A new entry point joins the fuzzer here and nowhere else: add its baselines under its name
(tests/test_fuzz.py fails while an exported entry point has none, or a baseline is refused on a
chip it names). Keep shapes small: the fuzzer makes hundreds of thousands of calls.
"""

from .case import L, Same, T

INT64_MAX = (1 << 63) - 1


def fas(soc):
    b, n, s, d = 1, 2, 8, 16
    qkv = [T((b, n, s, d)) for _ in range(3)]
    lanes = T((b, n, s, 8), "FLOAT")
    return [*qkv, *[None] * 7, 0.25, 1.0, 65536, 65536, n, "BNSD", 0, 0, 1, lanes, T((b, n, s, 8), "FLOAT"), None,
            T((b, n, s, d))]  # fmt: skip


def fas_causal_bsh(soc):
    b, n, s, d = 2, 2, 16, 16
    mask = T((s, s), "UINT8", fill=tuple(int(j > i) for i in range(s) for j in range(s)))
    qkv = [T((b, s, n * d), "BF16") for _ in range(3)]
    return [*qkv, None, None, None, mask, None, None, None, 0.25, 1.0, 65536, 0, n, "BSH", 0, 0, 1,
            T((b, n, s, 8), "FLOAT"), T((b, n, s, 8), "FLOAT"), None, T((b, s, n * d), "BF16")]  # fmt: skip


def fag(soc):
    b, n, s, d = 1, 2, 8, 16
    q, k, v, dy, attn = (T((b, n, s, d)) for _ in range(5))
    smax = T((b, n, s, 8), "FLOAT")
    ssum = T((b, n, s, 8), "FLOAT", fill=(1.0,))
    return [q, k, v, dy, None, None, None, None, smax, ssum, None, attn, None, None, None, 0.25, 1.0, 65536, 65536,
            n, "BNSD", 0, 0, 1, T((b, n, s, d)), T((b, n, s, d)), T((b, n, s, d)), None]  # fmt: skip


def pfa(soc):
    b, n, s, d = 1, 2, 16, 16
    qkv = [T((b, n, s, d)) for _ in range(3)]
    return [*qkv, *[None] * 9, n, 0.25, INT64_MAX >> 32, 0, "BNSD", 0, 0, T((b, n, s, d))]


def pfa_lengths_bsh(soc):
    b, n, s, d = 2, 2, 16, 16
    qkv = [T((b, s, n * d)), T((b, s, d)), T((b, s, d))]
    return [*qkv, None, None, (16, 9), (16, 11), *[None] * 5, n, 0.25, 2147483647, 0, "BSH", 1, 0, T((b, s, n * d))]


def ifa(soc):
    q = T((2, 4, 1, 16))
    k, v = (T((2, 2, 64, 16)) for _ in range(2))
    return [q, L([k]), L([v]), None, None, (64, 40), *[None] * 9, 4, 0.25, "BNSD", 2, 0, 1, T((2, 4, 1, 16))]


def ifa_paged(soc):
    """Two sequences over a block table of 128-token blocks (BSH cache: blocks, block size, H)."""
    q = T((2, 1, 64))
    cache = [T((4, 128, 32)) for _ in range(2)]
    table = T((2, 2), "INT32", fill=(0, 1, 2, 3))
    return [q, L([cache[0]]), L([cache[1]]), None, None, (200, 77), *[None] * 7, table, None, 4, 0.25, "BSH", 2, 128,
            1, T((2, 1, 64))]  # fmt: skip


def sfag(soc):
    b, s1, s2, n1, d, dr, topk = 1, 4, 96, 2, 512, 64, 2048
    q, d_out, out = (T((b, s1, n1, d), "BF16") for _ in range(3))
    kv = T((b, s2, 1, d), "BF16")
    indices = T((b, s1, 1, topk), "INT32", fill=tuple(range(s2)) + (-1,) * (topk - s2))
    smax = T((b, 1, s1, n1), "FLOAT", fill=(1.0,))
    ssum = T((b, 1, s1, n1), "FLOAT", fill=(50.0,))
    q_rope, k_rope = T((b, s1, n1, dr), "BF16"), T((b, s2, 1, dr), "BF16")
    return [q, kv, Same(1), indices, d_out, out, smax, ssum, None, None, q_rope, k_rope, 0.04, 1, "BSND", 3,
            INT64_MAX, INT64_MAX, False, T((b, s1, n1, d), "BF16"), T((b, s2, 1, d), "BF16"),
            T((b, s2, 1, d), "BF16"), T((b, s1, n1, dr), "BF16"), T((b, s2, 1, dr), "BF16")]  # fmt: skip


def lig(soc):
    b, s1, s2, heads, dim, topk = 1, 2, 16, 64, 128, 2048
    q, k = T((b, s1, heads, dim), "BF16"), T((b, s2, 1, dim), "BF16")
    dy = T((b, s1, topk), "BF16")
    indices = T((b, s1, topk), "INT32", fill=tuple(range(s2)) + (-1,) * (topk - s2))
    w = T((b, s1, heads), "BF16")
    return [q, k, dy, indices, w, None, None, heads, "BSND", 3, INT64_MAX, INT64_MAX, False,
            T((b, s1, heads, dim), "BF16"), T((b, s2, 1, dim), "BF16"), T((b, s1, heads), "BF16")]  # fmt: skip


def li(soc):
    q, k, w = T((1, 4, 8, 128)), T((1, 16, 1, 128)), T((1, 4, 8))
    return [q, k, w, None, None, None, "BSND", "BSND", 8, 3, INT64_MAX, INT64_MAX, True, T((1, 4, 1, 8), "INT32"),
            T((1, 4, 1, 8))]  # fmt: skip


def sfa(soc):
    q, q_rope = T((1, 4, 2, 512)), T((1, 4, 2, 64))
    k, k_rope = T((1, 8, 1, 512)), T((1, 8, 1, 64))
    indices = T((1, 4, 1, 2), "INT32", fill=(0, 1))
    lse = T((1, 1, 4, 2), "FLOAT")
    return [q, k, Same(1), indices, None, None, None, q_rope, k_rope, 0.0417, 4, "BSND", "BSND", 3, INT64_MAX,
            INT64_MAX, 2, True, T((1, 4, 2, 512)), lse, T((1, 1, 4, 2), "FLOAT")]  # fmt: skip


def scatter(soc):
    key = T((4, 2, 16))
    slots = T((4,), "INT32", fill=(0, 3, 5, 6))
    return [key, T((2, 4, 2, 16)), slots, T((4, 2, 16)), T((2, 4, 2, 16)), *[None] * 7]


def scatter_nz(soc):
    """PA_NZ: caches of 32-byte rows, [blocks, H / 16, block size, 16] for fp16."""
    key = T((8, 2, 16))
    slots = T((8,), "INT32", fill=(0, 5, 17, 18, 40, 47, -1, 33))
    return [key, T((3, 2, 16, 16)), slots, T((8, 2, 16)), T((3, 2, 16, 16)), None, None, None, "PA_NZ", *[None] * 3]


def li_tnd(soc):
    """Two sequences packed along T, with cumulative query and key lengths."""
    q, k, w = T((10, 16, 128), "BF16"), T((70, 1, 128), "BF16"), T((10, 16), "BF16")
    cu_q, cu_k = T((2,), "INT32", fill=(3, 10)), T((2,), "INT32", fill=(40, 70))
    return [q, k, w, cu_q, cu_k, None, "TND", "TND", 32, 3, INT64_MAX, INT64_MAX, True,
            T((10, 1, 32), "INT32"), T((10, 1, 32), "BF16")]  # fmt: skip


def gather(soc):
    caches = [T((4, 16, 2, 16)) for _ in range(2)]
    table = T((2, 2), "INT32", fill=(0, 1, 3, 2))
    lens = T((2,), "INT32", fill=(20, 9))
    return [*caches, table, lens, T((29, 2, 16)), T((29, 2, 16)), None, "Norm", False]


def as_entry(entry: str, source: str, args: list, **values) -> list:
    """`args` of the entry point `source` given to another entry point of the same operator by
    parameter name (its own parameters from `values`), for the entry points that only drop or add
    parameters (PromptFlashAttention V1/V3 beside V2, IncreFlashAttention V1-V3 beside V4)."""
    from aclnn_emu.opdef.registry import by_name

    given = dict(zip((p.name for p in by_name(source).params), args)) | values
    unset = {"int64": 0, "double": 0.0, "bool": False}  # pointers: NULL
    return [given[p.name] if p.name in given else unset.get(p.kind) for p in by_name(entry).params]


def _named(name: str, make):
    make.__name__ = name  # the reproducer calls baselines.<name>(soc)
    return make


def _fas_like(name: str, entry: str):
    return _named(name, lambda soc: as_entry(entry, "FlashAttentionScoreV2", fas(soc)))


def _fag_like(name: str, entry: str):
    return _named(name, lambda soc: as_entry(entry, "FlashAttentionScoreGradV2", fag(soc)))


def fas_tnd(soc, entry="FlashAttentionVarLenScoreV2"):
    """Two sequences packed along T (5 and 7 query rows, 7 and 9 keys), cumulative lengths."""
    q, k, v = T((12, 2, 16)), T((16, 2, 16)), T((16, 2, 16))
    lanes = [T((12, 2, 8), "FLOAT") for _ in range(2)]
    values = dict(query=q, key=k, value=v, inputLayout="TND", actualSeqQLenOptional=(5, 12),
                  actualSeqKvLenOptional=(7, 16), softmaxMaxOut=lanes[0], softmaxSumOut=lanes[1],
                  attentionOutOut=T((12, 2, 16)))  # fmt: skip
    return as_entry(entry, "FlashAttentionScoreV2", fas(soc), **values)


def fag_tnd(soc, entry="FlashAttentionUnpaddingScoreGradV2"):
    q, k, v, dy, attn = T((12, 2, 16)), T((16, 2, 16)), T((16, 2, 16)), T((12, 2, 16)), T((12, 2, 16))
    values = dict(query=q, keyIn=k, value=v, dy=dy, attentionInOptional=attn, inputLayout="TND",
                  softmaxMaxOptional=T((12, 2, 8), "FLOAT"), softmaxSumOptional=T((12, 2, 8), "FLOAT", fill=(1.0,)),
                  actualSeqQLenOptional=(5, 12), actualSeqKvLenOptional=(7, 16), dqOut=T((12, 2, 16)),
                  dkOut=T((16, 2, 16)), dvOut=T((16, 2, 16)), softmaxInLayout="")  # fmt: skip
    return as_entry(entry, "FlashAttentionScoreGradV2", fag(soc), **values)


def fas_tnd_pse(soc):
    """fas_tnd with a pse of one row per head and batch, [N1·ΣS2, 1]."""
    entry = "FlashAttentionVarLenScoreV2"
    return as_entry(entry, entry, fas_tnd(soc), realShiftOptional=T((32, 1)))


def fas_tnd_pse_1d(soc):
    """fas_tnd with the same pse 1-D, [N1·ΣS2] (Ascend910_95: the arch35 VarLen tiling checks no rank)."""
    entry = "FlashAttentionVarLenScoreV2"
    return as_entry(entry, entry, fas_tnd(soc), realShiftOptional=T((32,)))


def fag_tnd_pse(soc):
    """fag_tnd with the backward's packed pse, 1-D [N1·T2]."""
    entry = "FlashAttentionUnpaddingScoreGradV2"
    return as_entry(entry, entry, fag_tnd(soc), pseShiftOptional=T((32,)))


def fag_tnd_slopes_mode8(soc):
    """fag_tnd with pseType 2 slopes [N1], sparseMode 8 and no mask, equal lengths (the slopes' mode rules
    test the sparseMode attribute; the Atlas A2/A3 kernel restarts the distances after batch 0)."""
    entry = "FlashAttentionUnpaddingScoreGradV2"
    values = dict(pseShiftOptional=T((2,), "FLOAT"), pseType=2, sparseMode=8, nextTokens=0,
                  actualSeqKvLenOptional=(5, 12))  # fmt: skip
    return as_entry(entry, entry, fag_tnd(soc), **values)


def fag_tnd_prefix5(soc):
    """fag_tnd with batches of equal lengths (6 and 8), sparseMode 5, a [B, 1, 6, 8] mask and a prefix
    (Ascend910_95: the backward runs them as BSND, whose kernels skip blocks by prefixN)."""
    entry = "FlashAttentionUnpaddingScoreGradV2"
    values = dict(actualSeqQLenOptional=(6, 12), actualSeqKvLenOptional=(8, 16), sparseMode=5,
                  attenMaskOptional=T((2, 1, 6, 8), "UINT8"), prefixOptional=(4, 8))  # fmt: skip
    return as_entry(entry, entry, fag_tnd(soc), **values)


def fag_tnd_mask_wide(soc):
    """fag_tnd with a [B, 1, 7, 12] mask (Ascend910_95: the arch35 backward checks a 4-D mask's first two
    dimensions only and reads its rows 12 apart)."""
    entry = "FlashAttentionUnpaddingScoreGradV2"
    return as_entry(entry, entry, fag_tnd(soc), attenMaskOptional=T((2, 1, 7, 12), "UINT8"))


def _for_entry(name: str, make, entry: str):
    return _named(name, lambda soc: make(soc, entry))


fas_v1 = _fas_like("fas_v1", "FlashAttentionScore")
fas_v3 = _fas_like("fas_v3", "FlashAttentionScoreV3")
fag_v1 = _fag_like("fag_v1", "FlashAttentionScoreGrad")
fag_v3 = _fag_like("fag_v3", "FlashAttentionScoreGradV3")
FAS_VARLEN = {
    f"FlashAttentionVarLenScore{v}": _for_entry(f"fas_varlen{v.lower()}", fas_tnd, f"FlashAttentionVarLenScore{v}")
    for v in ("", "V2", "V3", "V4", "V5")
}
FAG_UNPADDING = {
    f"FlashAttentionUnpaddingScoreGrad{v}": _for_entry(
        f"fag_unpadding{v.lower()}", fag_tnd, f"FlashAttentionUnpaddingScoreGrad{v}"
    )
    for v in ("", "V2", "V3", "V4", "V5")
}
globals().update({fn.__name__: fn for fn in (*FAS_VARLEN.values(), *FAG_UNPADDING.values())})


def pfa_v1(soc):
    return as_entry("PromptFlashAttention", "PromptFlashAttentionV2", pfa_lengths_bsh(soc))


def pfa_v3(soc):
    return as_entry("PromptFlashAttentionV3", "PromptFlashAttentionV2", pfa(soc), innerPrecise=1)


def pfa_v3_base_api_mask(soc):
    """SH with two packed batches (6 + 10 query, 5 + 11 key rows) in sparseMode 22: the pse is the
    base-API kernels' alibi mask [N, >= maxSeqLen, >= maxKvSeqLen]."""
    qkv = [T((16, 64)) for _ in range(3)]
    return named_args("PromptFlashAttentionV3", query=qkv[0], key=qkv[1], value=qkv[2], pseShift=T((2, 10, 11)),
                      actualSeqLengths=(6, 10), actualSeqLengthsKv=(5, 11), numHeads=2, scaleValue=0.125,
                      preTokens=2147483647, inputLayout="SH", sparseMode=22, innerPrecise=1,
                      attentionOut=T((16, 64)))  # fmt: skip


def ifa_v1(soc):
    return as_entry("IncreFlashAttention", "IncreFlashAttentionV4", ifa(soc))


def ifa_v2(soc):
    return as_entry("IncreFlashAttentionV2", "IncreFlashAttentionV4", ifa(soc))


def ifa_v3_paged(soc):
    return as_entry("IncreFlashAttentionV3", "IncreFlashAttentionV4", ifa_paged(soc))


def named_args(entry: str, **values) -> list:
    """The C arguments of `entry` from the parameters named; the others NULL, 0 or false."""
    return as_entry(entry, entry, [], **values)


def fia(soc, entry="FusedInferAttentionScoreV4", s1=16):
    """Prefill (or decode, s1 1) with grouped heads and softmaxLse over one dense key/value."""
    q, out = T((1, 4, s1, 64)), T((1, 4, s1, 64))
    k, v = T((1, 2, 40, 64)), T((1, 2, 40, 64))
    return named_args(entry, query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125, preTokens=2147483647,
                      nextTokens=0 if s1 > 1 else 2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      softmaxLseFlag=True, attentionOut=out, softmaxLse=T((1, 4, s1, 1), "FLOAT"))  # fmt: skip


def fia_paged(soc):
    """Prefill over a paged cache (blocks, N2, block size, D): Ascend910_95's PFA route, the A2/A3 FIA-V3 one."""
    q, out = T((1, 4, 16, 64)), T((1, 4, 16, 64))
    k, v = T((4, 2, 128, 64)), T((4, 2, 128, 64))
    table = T((1, 2), "INT32", fill=(2, 0))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsKvOptional=(200,), blockTableOptional=table, blockSize=128,
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out, softmaxLse=T((1, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_paged_nz(soc):
    """Prefill over a 5-D (NZ) paged cache [blocks, N2, D / 16, block size, 16]: Ascend910_95's PFA route, the
    A2/A3 FIA-V3 one."""
    q, out = T((1, 4, 16, 64)), T((1, 4, 16, 64))
    k, v = T((4, 2, 4, 128, 16)), T((4, 2, 4, 128, 16))
    table = T((1, 2), "INT32", fill=(3, 1))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsKvOptional=(150,), blockTableOptional=table, blockSize=128,
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out, softmaxLse=T((1, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_paged_tnd(soc):
    """Packed prefill (TND, two batches) over a paged cache with softmaxLse: on Ascend910_95 the key lengths are
    each batch's own (PromptFlashAttentionTilingV2 with a block table)."""
    q, out = T((24, 4, 64)), T((24, 4, 64))
    k, v = T((4, 2, 128, 64)), T((4, 2, 128, 64))
    table = T((2, 2), "INT32", fill=(2, 0, 1, 3))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsOptional=(8, 24), actualSeqLengthsKvOptional=(100, 200),
                      blockTableOptional=table, blockSize=128, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="TND", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((24, 4, 1), "FLOAT"))  # fmt: skip


def fia_paged_pfa(soc):
    """Prefill with D 32 over a paged cache: the PFA tiling's page-attention rules on Atlas A2/A3."""
    q, out = T((2, 4, 16, 32)), T((2, 4, 16, 32))
    k, v = T((6, 2, 128, 32)), T((6, 2, 128, 32))
    table = T((2, 3), "INT32", fill=(5, 0, 3, 1, 2, 4))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsKvOptional=(300, 140), blockTableOptional=table, blockSize=128,
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      softmaxLseFlag=True, attentionOut=out, softmaxLse=T((2, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_paged_pfa_tnd(soc):
    """Packed prefill (TND bf16, D 192, MHA) over a paged cache with softmaxLse: the A2/A3 PFA tiling's TND
    page-attention rules (CheckPASparseMode, CheckPAWhenBaseApi), key lengths each batch's own."""
    q, out = T((24, 2, 192), "BF16"), T((24, 2, 192), "BF16")
    k, v = T((4, 2, 128, 192), "BF16"), T((4, 2, 128, 192), "BF16")
    table = T((2, 2), "INT32", fill=(2, 0, 1, 3))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=2, scaleValue=0.125,
                      actualSeqLengthsOptional=(8, 24), actualSeqLengthsKvOptional=(200, 100),
                      blockTableOptional=table, blockSize=128, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="TND", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((24, 2, 1), "FLOAT"))  # fmt: skip


def fia_paged_nsd(soc):
    """An NSD query (one batch, D 32) over a paged cache: the A2/A3 PFA tiling's CheckPATypeAndShape."""
    q, out = T((4, 16, 32)), T((4, 16, 32))
    k, v = T((3, 2, 128, 32)), T((3, 2, 128, 32))
    table = T((1, 3), "INT32", fill=(2, 0, 1))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsKvOptional=(300,), blockTableOptional=table, blockSize=128,
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="NSD", numKeyValueHeads=2,
                      softmaxLseFlag=True, attentionOut=out, softmaxLse=T((1, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_split_fuse_paged(soc):
    """Packed prefill (TND fp16, D 96, GQA, innerPrecise 0) over a [blocks, 16, H] cache: the A2/A3 split-fuse
    route (IsUsingFAI) and its CheckFAIAvailability rules."""
    q, out = T((24, 4, 96)), T((24, 4, 96))
    k, v = T((8, 16, 192)), T((8, 16, 192))
    table = T((2, 4), "INT32", fill=(7, 0, 5, 1, 2, 6, 3, 4))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsOptional=(8, 24), actualSeqLengthsKvOptional=(60, 40),
                      blockTableOptional=table, blockSize=16, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="TND", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((24, 4, 1), "FLOAT"))  # fmt: skip


def fia_padded(soc):
    """Query and key left padding (D 32: the PFA route on every chip) with softmaxLse."""
    q, out = T((1, 4, 16, 32)), T((1, 4, 16, 32))
    k, v = T((1, 2, 40, 32)), T((1, 2, 40, 32))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      actualSeqLengthsOptional=(12,), actualSeqLengthsKvOptional=(30,),
                      queryPaddingSizeOptional=T((1,), "INT64", fill=(2,)),
                      kvPaddingSizeOptional=T((1,), "INT64", fill=(3,)), preTokens=2147483647, nextTokens=0,
                      inputLayout="BNSD", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((1, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_kv_antiquant(soc):
    """Decode over an INT8 key/value with separate per-channel key and value scales (V2+): the
    A2/A3 IFA route, whose ProcessAntiQuant checks the pair (Ascend910_95: IFATilingV2's split mode)."""
    q, out = T((1, 4, 1, 32)), T((1, 4, 1, 32))
    k, v = T((1, 2, 40, 32), "INT8"), T((1, 2, 40, 32), "INT8")
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      keyAntiquantScaleOptional=T((1, 2, 1, 32)), valueAntiquantScaleOptional=T((1, 2, 1, 32)),
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out, softmaxLse=T((1, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_sink(soc):
    """Decode with a learnable sink: the FIA-V3 kernels take it on Atlas A2/A3, Ascend910_95's ignore it."""
    return as_entry("FusedInferAttentionScoreV4", "FusedInferAttentionScoreV4", fia(soc, s1=1),
                    learnableSinkOptional=T((4,), "BF16"))  # fmt: skip


def fia_sink_tnd(soc):
    """TND bf16 with quantScale2 and a sink: the A2/A3 PFA route's TND kernels, which take the sink."""
    q, out = T((48, 4, 64), "BF16"), T((48, 4, 64), "BF16")
    k, v = T((48, 2, 64), "BF16"), T((48, 2, 64), "BF16")
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]),
                      quantScale2Optional=T((1,), "FLOAT"), learnableSinkOptional=T((4,), "BF16"),
                      actualSeqLengthsOptional=(16, 48), actualSeqLengthsKvOptional=(16, 48), numHeads=4,
                      scaleValue=0.125, preTokens=2147483647, nextTokens=2147483647, inputLayout="TND",
                      numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out, softmaxLse=T((48, 4, 1), "FLOAT"))  # fmt: skip


def fia_rope(soc):
    """Prefill with rope, D 128 + 64: the FIA-V3 kernels on Atlas A2/A3, PFARope on Ascend910_95."""
    q, out = T((1, 4, 16, 128)), T((1, 4, 16, 128))
    k, v = T((1, 2, 40, 128)), T((1, 2, 40, 128))
    return named_args("FusedInferAttentionScoreV3", query=q, key=L([k]), value=L([v]), queryRopeOptional=T((1, 4, 16, 64)),
                      keyRopeOptional=T((1, 2, 40, 64)), numHeads=4, scaleValue=0.072, preTokens=2147483647,
                      nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2, softmaxLseFlag=True,
                      attentionOut=out, softmaxLse=T((1, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_mla(soc):
    """MLA decode, D 512 + rope 64, 32 query heads on one KV head, over a paged cache of 16-token blocks:
    the FIA-V3 MLA kernels on Atlas A2/A3, IFA MLA on Ascend910_95."""
    q, out = T((2, 1, 32 * 512)), T((2, 1, 32 * 512))
    k, v, k_rope = T((6, 16, 512)), T((6, 16, 512)), T((6, 16, 64))
    table = T((2, 3), "INT32", fill=(0, 1, 2, 3, 4, 5))
    return named_args("FusedInferAttentionScoreV3", query=q, key=L([k]), value=L([v]), queryRopeOptional=T((2, 1, 32 * 64)),
                      keyRopeOptional=k_rope, blockTableOptional=table, actualSeqLengthsKvOptional=(40, 33),
                      numHeads=32, scaleValue=0.0417, preTokens=2147483647, nextTokens=2147483647, inputLayout="BSH",
                      numKeyValueHeads=1, blockSize=16, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((2, 32, 1, 1), "FLOAT"))  # fmt: skip


def fia_rope_pfa(soc):
    """An INT8 query with INT8 ropes and S 32: off RouteToFia and IsUsingIFA, the A2/A3 PFA route, whose
    x910 kernels read no rope (CheckInputLayout's MLA rules first)."""
    q, out = T((1, 4, 32, 64), "INT8"), T((1, 4, 32, 64))
    k, v = T((1, 2, 40, 64), "INT8"), T((1, 2, 40, 64), "INT8")
    scale = T((1,), "FLOAT", fill=(0.01,))
    return named_args("FusedInferAttentionScoreV3", query=q, key=L([k]), value=L([v]),
                      queryRopeOptional=T((1, 4, 32, 64), "INT8"), keyRopeOptional=T((1, 2, 40, 64), "INT8"),
                      deqScale1Optional=scale, quantScale1Optional=T((1,), "FLOAT", fill=(100.0,)),
                      deqScale2Optional=scale, numHeads=4, scaleValue=0.125, preTokens=2147483647,
                      nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((1, 4, 32, 1), "FLOAT"))  # fmt: skip


def fia_list(soc):
    """Prefill over a key/value tensor list (one [1, N2, S, D] tensor per batch): the PFA route (D 32)."""
    q, out = T((2, 4, 16, 32)), T((2, 4, 16, 32))
    keys, values = (L([T((1, 2, 40, 32)), T((1, 2, 70, 32))]) for _ in range(2))
    return named_args("FusedInferAttentionScoreV4", query=q, key=keys, value=values, numHeads=4, scaleValue=0.125,
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out, softmaxLse=T((2, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_prefix_list(soc):
    """Decode over a key/value tensor list with a shared prefix (V2+), D 32: the A2/A3 IFA route puts
    the prefix's first 12 rows in front of each batch's tensor."""
    q, out = T((2, 4, 1, 32)), T((2, 4, 1, 32))
    keys, values = (L([T((1, 2, 40, 32)), T((1, 2, 70, 32))]) for _ in range(2))
    return named_args("FusedInferAttentionScoreV2", query=q, key=keys, value=values, numHeads=4, scaleValue=0.125,
                      keySharedPrefixOptional=T((1, 2, 16, 32)), valueSharedPrefixOptional=T((1, 2, 16, 32)),
                      actualSharedPrefixLenOptional=(12,), preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((2, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_prefix_antiquant(soc, per_token=False):
    """The INT8 decode (per channel, or per token on Ascend910_95) with an INT8 shared prefix: the
    A2/A3 IFA route attends to it first, Ascend910_95's IFA kernels never receive it."""
    base = fia_kv_antiquant_per_token(soc) if per_token else fia_kv_antiquant(soc)
    return as_entry("FusedInferAttentionScoreV2", "FusedInferAttentionScoreV2", base,
                    keySharedPrefixOptional=T((1, 2, 16, 32), "INT8"),
                    valueSharedPrefixOptional=T((1, 2, 16, 32), "INT8"))  # fmt: skip


def fia_prefix_per_token(soc):
    return fia_prefix_antiquant(soc, per_token=True)


def fia_prefix_heads(soc):
    """Prefill (S 16, D 32) beside a prefix of 4 heads where the key has 2: Ascend910_95's PFA kernels
    read it at the key's strides."""
    q, out = T((2, 4, 16, 32)), T((2, 4, 16, 32))
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([T((2, 2, 40, 32))]), value=L([T((2, 2, 40, 32))]),
                      numHeads=4, scaleValue=0.125, keySharedPrefixOptional=T((1, 4, 16, 32)),
                      valueSharedPrefixOptional=T((1, 4, 16, 32)), actualSharedPrefixLenOptional=(12,),
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out, softmaxLse=T((1,), "FLOAT"))  # fmt: skip


def fia_prefix_nsd_empty(soc):
    """An NSD prefill over an empty key beside a prefix: the A2/A3 PFA tiling's empty-tensor path, before
    the prefix's batch (which it reads as 0 for NSD) fails."""
    q, out = T((4, 16, 32)), T((4, 16, 32))
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([T((2, 0, 32))]), value=L([T((2, 0, 32))]),
                      numHeads=4, scaleValue=0.125, keySharedPrefixOptional=T((1, 16, 32)),
                      valueSharedPrefixOptional=T((1, 16, 32)), preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="NSD", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((1,), "FLOAT"))  # fmt: skip


def fia_pfa_kv_antiquant(soc, params="FLOAT16"):
    """Prefill (S 20, D 32) over an INT8 key/value with per-channel antiquantScale/Offset: the PFA
    tiling's KV antiquant on Atlas A2/A3 (Ascend910_95: IFATilingV2)."""
    q, out = T((1, 4, 20, 32)), T((1, 4, 20, 32))
    k, v = T((1, 2, 40, 32), "INT8"), T((1, 2, 40, 32), "INT8")
    scale, offset = T((2, 2, 1, 32), params), T((2, 2, 1, 32), params)
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      antiquantScaleOptional=scale, antiquantOffsetOptional=offset,
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out, softmaxLse=T((1, 4, 20, 1), "FLOAT"))  # fmt: skip


def fia_pfa_kv_antiquant_float(soc):
    """The same with FLOAT parameters, which the A2/A3 PFA antiquant kernels read as fp16 elements."""
    return fia_pfa_kv_antiquant(soc, params="FLOAT")


def fia_pfa_msd(soc, per_token=False):
    """Query S 8 over an INT8 key/value with separate BF16 per-channel scales and offsets [N2, D]
    beside a BF16 query, softmaxLse wanted: the A2/A3 PFA tiling's MSD kernels (per token: FLOAT
    [B, S2] beside fp16)."""
    dtype, params, shape = ("FLOAT16", "FLOAT", (1, 40)) if per_token else ("BF16", "BF16", (2, 32))
    q, out = T((1, 4, 8, 32), dtype), T((1, 4, 8, 32), dtype)
    k, v = T((1, 2, 40, 32), "INT8"), T((1, 2, 40, 32), "INT8")
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      keyAntiquantScaleOptional=T(shape, params), valueAntiquantScaleOptional=T(shape, params),
                      keyAntiquantOffsetOptional=T(shape, params), valueAntiquantOffsetOptional=T(shape, params),
                      keyAntiquantMode=int(per_token), valueAntiquantMode=int(per_token),
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      softmaxLseFlag=True, attentionOut=out, softmaxLse=T((1, 4, 8, 1), "FLOAT"))  # fmt: skip


def fia_pfa_msd_per_token(soc):
    return fia_pfa_msd(soc, per_token=True)


def fia_pfa_prefix_antiquant_lse(soc):
    """The INT8 prefill of fia_pfa_kv_antiquant with an INT8 shared prefix and softmaxLse: on Atlas A2/A3
    the PFA prefix kernels, softmaxLse from the second pass over the dequantised prefix and keys."""
    return as_entry("FusedInferAttentionScoreV4", "FusedInferAttentionScoreV4", fia_pfa_kv_antiquant(soc),
                    keySharedPrefixOptional=T((1, 2, 16, 32), "INT8"),
                    valueSharedPrefixOptional=T((1, 2, 16, 32), "INT8"), softmaxLseFlag=True)  # fmt: skip


def fia_paged_pfa_antiquant(soc):
    """Prefill (S 20, D 32, BSH) over a paged INT8 cache [blocks, blockSize, H2] with the key's and the
    value's own per-channel scales, causal sparse mode 3: the PA antiquant kernels of the Atlas A2/A3
    PFA tiling."""
    q, out = T((1, 20, 128)), T((1, 20, 128))
    k, v = T((2, 128, 64), "INT8"), T((2, 128, 64), "INT8")
    mask = T((2048, 2048), "BOOL")  # sparse mode 3 reads the template's causal corner only
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      attenMaskOptional=mask, actualSeqLengthsKvOptional=(200,),
                      keyAntiquantScaleOptional=T((1, 64)), valueAntiquantScaleOptional=T((1, 64)),
                      blockTableOptional=T((1, 2), "INT32", fill=(1, 0)), blockSize=128, sparseMode=3, innerPrecise=1,
                      preTokens=2147483647, nextTokens=0, inputLayout="BSH", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((1, 4, 20, 1), "FLOAT"))  # fmt: skip


def fia_kv_antiquant_per_token(soc, key_mode=1):
    """The same decode with FLOAT per-token value parameters [1, B, S] (offsets too), and the key per
    token (modes 1) or, with key_mode 0, per channel (the key-per-channel/value-per-token pair)."""
    q, out = T((1, 4, 1, 32)), T((1, 4, 1, 32))
    k, v = T((1, 2, 40, 32), "INT8"), T((1, 2, 40, 32), "INT8")
    key = (T((1, 2, 1, 32)), T((1, 2, 1, 32))) if key_mode == 0 else (T((1, 1, 40), "FLOAT"), T((1, 1, 40), "FLOAT"))
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      keyAntiquantScaleOptional=key[0], keyAntiquantOffsetOptional=key[1],
                      valueAntiquantScaleOptional=T((1, 1, 40), "FLOAT"),
                      valueAntiquantOffsetOptional=T((1, 1, 40), "FLOAT"), keyAntiquantMode=key_mode,
                      valueAntiquantMode=1, preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD",
                      numKeyValueHeads=2, attentionOut=out, softmaxLse=T((1, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_kv_antiquant_paged_nz(soc):
    """Per-token key and value parameters [B, sMax] over an INT8 5-D (NZ) paged cache (Ascend910_95)."""
    q, out = T((1, 4, 1, 32)), T((1, 4, 1, 32))
    k, v = T((4, 2, 2, 128, 16), "INT8"), T((4, 2, 2, 128, 16), "INT8")
    table = T((1, 2), "INT32", fill=(3, 1))
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      keyAntiquantScaleOptional=T((1, 256), "FLOAT"), valueAntiquantScaleOptional=T((1, 256), "FLOAT"),
                      keyAntiquantMode=1, valueAntiquantMode=1, actualSeqLengthsKvOptional=(150,),
                      blockTableOptional=table, blockSize=128, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((1, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_kv_antiquant_channel_token(soc):
    return fia_kv_antiquant_per_token(soc, key_mode=0)


def fia_kv_antiquant_paged_params(soc, mode=4):
    """Modes 4 / 5: FLOAT per-token parameters [blocks, (N2,) blockSize] beside a paged BSH cache."""
    q, out = T((2, 1, 128)), T((2, 1, 128))
    cache = [T((4, 32, 64), "INT8") for _ in range(2)]
    params = [T((4, 32) if mode == 4 else (4, 2, 32), "FLOAT") for _ in range(4)]
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([cache[0]]), value=L([cache[1]]), numHeads=4,
                      scaleValue=0.125, actualSeqLengthsKvOptional=(64, 40),
                      blockTableOptional=T((2, 2), "INT32", fill=(0, 1, 2, 3)),
                      keyAntiquantScaleOptional=params[0], keyAntiquantOffsetOptional=params[1],
                      valueAntiquantScaleOptional=params[2], valueAntiquantOffsetOptional=params[3],
                      keyAntiquantMode=mode, valueAntiquantMode=mode, preTokens=2147483647,
                      nextTokens=2147483647, inputLayout="BSH", numKeyValueHeads=2, blockSize=32, attentionOut=out,
                      softmaxLse=T((2, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_kv_antiquant_paged_params_per_head(soc):
    return fia_kv_antiquant_paged_params(soc, mode=5)


def fia_kv_antiquant_per_token_head(soc):
    """Modes 3: FLOAT parameters per batch, KV head and position [B, N2, S]."""
    q, out = T((1, 4, 1, 32)), T((1, 4, 1, 32))
    k, v = T((1, 2, 40, 32), "INT8"), T((1, 2, 40, 32), "INT8")
    params = [T((1, 2, 40), "FLOAT") for _ in range(4)]
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      keyAntiquantScaleOptional=params[0], keyAntiquantOffsetOptional=params[1],
                      valueAntiquantScaleOptional=params[2], valueAntiquantOffsetOptional=params[3],
                      keyAntiquantMode=3, valueAntiquantMode=3, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((1, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_antiquant_lse(soc):
    """Decode over an INT8 key/value (per-channel antiquantScale/Offset [2, N2, 1, D]) with softmaxLse,
    which the IFA antiquant kernels write (A2/A3 and Ascend910_95)."""
    q, out = T((2, 4, 1, 32)), T((2, 4, 1, 32))
    k, v = T((2, 2, 40, 32), "INT8"), T((2, 2, 40, 32), "INT8")
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      antiquantScaleOptional=T((2, 2, 1, 32)), antiquantOffsetOptional=T((2, 2, 1, 32)),
                      actualSeqLengthsKvOptional=(40, 0), preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((2, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_antiquant_mask(soc):
    """Speculative decode over an INT8 key/value: 4 draft tokens under an attenMask [B, S, S2], with
    softmaxLse (Ascend910_95: IFATilingV2's sparse rules and the antiquant kernels' row windows)."""
    q, out = T((2, 4, 4, 32)), T((2, 4, 4, 32))
    k, v = T((2, 2, 40, 32), "INT8"), T((2, 2, 40, 32), "INT8")
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      attenMaskOptional=T((2, 4, 40), "BOOL"), antiquantScaleOptional=T((2, 2, 1, 32)),
                      antiquantOffsetOptional=T((2, 2, 1, 32)), actualSeqLengthsKvOptional=(40, 23),
                      preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD", numKeyValueHeads=2,
                      softmaxLseFlag=True, attentionOut=out, softmaxLse=T((2, 4, 4, 1), "FLOAT"))  # fmt: skip


def fia_antiquant_mask_padding(soc):
    """The speculative decode above with the query's lengths and queryPaddingSize (Ascend910_95: each
    batch's draft rows end a row before S1)."""
    entry = "FusedInferAttentionScoreV4"
    return as_entry(entry, entry, fia_antiquant_mask(soc), actualSeqLengthsOptional=(3, 2),
                    queryPaddingSizeOptional=T((1,), "INT64", fill=(1,)))  # fmt: skip


def fia_antiquant_paged_nz_lse(soc):
    """Decode over an INT8 5-D (NZ) paged cache with softmaxLse: Ascend910_95's antiquant kernel writes it
    as for ND (the A2/A3 IFA tiling refuses softmaxLse with an NZ cache)."""
    q, out = T((1, 4, 1, 64)), T((1, 4, 1, 64))
    k, v = T((4, 2, 4, 128, 16), "INT8"), T((4, 2, 4, 128, 16), "INT8")
    table = T((1, 2), "INT32", fill=(3, 1))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      antiquantScaleOptional=T((2, 2, 1, 64)), actualSeqLengthsKvOptional=(150,),
                      blockTableOptional=table, blockSize=128, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((1, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_kv_antiquant_per_token_lse(soc):
    """The per-token decode with softmaxLse (A2/A3: the offsets enter the scores; Ascend910_95: the
    lse of the dequantised key)."""
    return as_entry("FusedInferAttentionScoreV2", "FusedInferAttentionScoreV2", fia_kv_antiquant_per_token(soc),
                    softmaxLseFlag=True)  # fmt: skip


def fia_int4(soc):
    """Decode over an INT32 key/value list read as INT4 (V2+), D 64: the A2/A3 IFA route and IFATilingV2."""
    q, out = T((1, 4, 1, 64)), T((1, 4, 1, 64))
    k, v = T((1, 2, 40, 8), "INT32"), T((1, 2, 40, 8), "INT32")
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      antiquantScaleOptional=T((2, 2, 1, 64)), preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, softmaxLseFlag=True, attentionOut=out,
                      softmaxLse=T((1, 4, 1, 1), "FLOAT"))  # fmt: skip


def fia_int4_pfa_empty(soc):
    """Prefill (S 20) over an empty INT32 key/value read as INT4: on Atlas A2/A3 the PFA tiling's
    empty-tensor kernel, the one PFA kernel an INT4 key has, zeroes the output; its mutations reach
    the tiling's INT4 rules (MSD) and the kernels it lacks."""
    q, out = T((1, 4, 20, 64)), T((1, 4, 20, 64))
    k, v = T((1, 2, 0, 8), "INT32"), T((1, 2, 0, 8), "INT32")
    return named_args("FusedInferAttentionScoreV2", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      antiquantScaleOptional=T((2,)), preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BNSD", numKeyValueHeads=2, attentionOut=out,
                      softmaxLse=T((0,), "FLOAT"))  # fmt: skip


def fia_per_block(soc, dtype="FLOAT8_E4M3FN"):
    """Ascend910_95's per-block full quant: an 8-bit float query, key and value with FLOAT scales per
    128 query rows and per 256 keys (the three quant modes 7)."""
    q, out = T((1, 4, 16, 64), dtype), T((1, 4, 16, 64))
    k, v = T((1, 2, 40, 64), dtype), T((1, 2, 40, 64), dtype)
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]), numHeads=4, scaleValue=0.125,
                      dequantScaleQueryOptional=T((1, 4, 1, 1), "FLOAT"),
                      keyAntiquantScaleOptional=T((1, 2, 1, 1), "FLOAT"),
                      valueAntiquantScaleOptional=T((1, 2, 1, 1), "FLOAT"), queryQuantMode=7, keyAntiquantMode=7,
                      valueAntiquantMode=7, preTokens=2147483647, nextTokens=2147483647, inputLayout="BNSD",
                      numKeyValueHeads=2, attentionOut=out, softmaxLse=T((1, 4, 16, 1), "FLOAT"))  # fmt: skip


def fia_per_block_hif8(soc):
    return fia_per_block(soc, "HIFLOAT8")


def fia_mla_full_quant(soc):
    """Ascend910_95's MLA full quant: the DeepSeek FP8 decode over a paged cache of 32-token blocks."""
    return _fia_mla_quant("FLOAT8_E4M3FN", 32, (70, 33))


def fia_mla_int8_quant(soc):
    """Atlas A2/A3's MLA full quant: the DeepSeek INT8 decode over a paged cache of 16-token blocks (the
    IFA tiling's quantFlag_ with ropeFlag_)."""
    return _fia_mla_quant("INT8", 16, (40, 33))


def _fia_mla_quant(dtype, block, lengths):
    """An 8-bit query (D 512, 32 heads), key and value with BF16 ropes, FLOAT scales per token + head
    ([B, S, N]) and per tensor ([1])."""
    q, out = T((2, 1, 32 * 512), dtype), T((2, 1, 32 * 512), "BF16")
    k, v, k_rope = T((6, block, 512), dtype), T((6, block, 512), dtype), T((6, block, 64), "BF16")
    table = T((2, 3), "INT32", fill=(0, 1, 2, 3, 4, 5))
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]),
                      queryRopeOptional=T((2, 1, 32 * 64), "BF16"), keyRopeOptional=k_rope, blockTableOptional=table,
                      actualSeqLengthsKvOptional=lengths, dequantScaleQueryOptional=T((2, 1, 32), "FLOAT"),
                      keyAntiquantScaleOptional=T((1,), "FLOAT"), valueAntiquantScaleOptional=T((1,), "FLOAT"),
                      queryQuantMode=3, numHeads=32, scaleValue=0.0417, preTokens=2147483647, nextTokens=2147483647,
                      inputLayout="BSH", numKeyValueHeads=1, blockSize=block, attentionOut=out,
                      softmaxLse=T((2, 32, 1, 1), "FLOAT"))  # fmt: skip


def fia_mla_full_quant_kv_padding(soc):
    """MLA full quant over a dense BNSD cache with kvPaddingSize (each batch's keys end 3 rows before S2),
    causal with two query rows: the key-row offsets of the full-quant kernel."""
    q, out = T((2, 32, 2, 512), "FLOAT8_E4M3FN"), T((2, 32, 2, 512), "BF16")
    k, v, k_rope = T((2, 1, 80, 512), "FLOAT8_E4M3FN"), T((2, 1, 80, 512), "FLOAT8_E4M3FN"), T((2, 1, 80, 64), "BF16")
    return named_args("FusedInferAttentionScoreV4", query=q, key=L([k]), value=L([v]),
                      queryRopeOptional=T((2, 32, 2, 64), "BF16"), keyRopeOptional=k_rope,
                      attenMaskOptional=T((2048, 2048), "BOOL"), actualSeqLengthsKvOptional=(70, 33),
                      kvPaddingSizeOptional=T((1,), "INT64", fill=(3,)),
                      dequantScaleQueryOptional=T((2, 32, 2), "FLOAT"), keyAntiquantScaleOptional=T((1,), "FLOAT"),
                      valueAntiquantScaleOptional=T((1,), "FLOAT"), queryQuantMode=3, numHeads=32, scaleValue=0.0417,
                      preTokens=2147483647, nextTokens=0, inputLayout="BNSD", numKeyValueHeads=1, sparseMode=3,
                      attentionOut=out, softmaxLseFlag=True, softmaxLse=T((2, 32, 2, 1), "FLOAT"))  # fmt: skip


def gen_mask(soc, entry="DropoutGenMaskV2"):
    """A 100-element mask (16 bytes) at keep probability 0.9 from an fp16 probability."""
    return named_args(entry, shape=(100,), prob=0.1, seed=1, offset=0, out=T((16,), "UINT8"),
                      **({"probDataType": 1} if entry == "DropoutGenMaskV2" else {}))  # fmt: skip


def fia_v1(soc):
    return fia(soc, "FusedInferAttentionScore", 1)


def fia_v2(soc):
    return fia(soc, "FusedInferAttentionScoreV2")


def fia_v3(soc):
    return fia(soc, "FusedInferAttentionScoreV3", 1)


def fia_max_workspace(soc, entry="aclnnFusedInferAttentionScoreV4GetMaxWorkspaceSize"):
    """GetMaxWorkspaceSize of V2-V5 (exported in no header) over V4's baseline, the key lengths given."""
    return as_entry(entry, "FusedInferAttentionScoreV4", fia(soc), actualSeqLengthsKvOptional=(40,))


FIA_MAX_WORKSPACE = {
    f"aclnnFusedInferAttentionScore{v}GetMaxWorkspaceSize": _for_entry(
        f"fia_max_workspace_{v.lower()}", fia_max_workspace, f"aclnnFusedInferAttentionScore{v}GetMaxWorkspaceSize"
    )
    for v in ("V2", "V3", "V4", "V5")
}
globals().update({fn.__name__: fn for fn in FIA_MAX_WORKSPACE.values()})


def fia_v5(soc):
    """V4's baseline through V5 (CANN 9.0.0 on; run under the first release that has it), pseType 0."""
    return as_entry("FusedInferAttentionScoreV5", "FusedInferAttentionScoreV4", fia(soc))


def fia_v5_sink(soc):
    return as_entry("FusedInferAttentionScoreV5", "FusedInferAttentionScoreV4", fia_sink(soc))


def fia_v5_starts(soc):
    """Start indices beside pseType 0 (read by the alibi kernels alone), on every chip."""
    return as_entry(
        "FusedInferAttentionScoreV5", "FusedInferAttentionScoreV4", fia(soc),
        qStartIdxOptional=(5,), kvStartIdxOptional=(-3,),
    )  # fmt: skip


def fia_v5_pse_type1(soc):
    """pseType 1 with start indices under 9.0.0, whose Atlas A2/A3 tilings read neither."""
    return as_entry(
        "FusedInferAttentionScoreV5", "FusedInferAttentionScoreV4", fia(soc),
        qStartIdxOptional=(5,), kvStartIdxOptional=(-3,), pseType=1,
    )  # fmt: skip


def fia_v5_alibi(soc):
    """Ascend950's alibi under 9.0.0 (pseType 3, FLOAT slopes [N], start indices): S1 = S2 = 24, no softmaxLse."""
    q, out = T((1, 4, 24, 64)), T((1, 4, 24, 64))
    k, v = T((1, 2, 24, 64)), T((1, 2, 24, 64))
    return named_args("FusedInferAttentionScoreV5", query=q, key=L([k]), value=L([v]),
                      pseShiftOptional=T((4,), "FLOAT", fill=(0.5, 0.25, 0.125, 0.0625)), pseType=3,
                      qStartIdxOptional=(2,), kvStartIdxOptional=(5,), numHeads=4, scaleValue=0.125,
                      preTokens=2147483647, nextTokens=0, inputLayout="BNSD", numKeyValueHeads=2,
                      attentionOut=out)  # fmt: skip


def gen_mask_v1(soc):
    return gen_mask(soc, "DropoutGenMask")


ALL = ("Ascend910B", "Ascend910_93", "Ascend910_95")
A2_A3 = ("Ascend910B", "Ascend910_93")

# entry point (or undeclared phase 1, by its C name) -> its baselines, each with the chip families
# it is valid on
BASELINES = {
    "FlashAttentionScoreV2": ((fas, ALL), (fas_causal_bsh, ALL)),
    "FlashAttentionScoreGradV2": ((fag, ALL),),
    "FlashAttentionScore": ((fas_v1, ALL),),
    "FlashAttentionScoreV3": ((fas_v3, ALL),),
    "FlashAttentionScoreGrad": ((fag_v1, ALL),),
    "FlashAttentionScoreGradV3": ((fag_v3, ALL),),
    **{name: ((fn, ALL),) for name, fn in (*FAS_VARLEN.items(), *FAG_UNPADDING.items())},
    "PromptFlashAttentionV2": ((pfa, ALL), (pfa_lengths_bsh, ALL)),
    "PromptFlashAttention": ((pfa_v1, ALL),),
    "PromptFlashAttentionV3": ((pfa_v3, ALL), (pfa_v3_base_api_mask, A2_A3)),
    "IncreFlashAttentionV4": ((ifa, ALL), (ifa_paged, ALL)),
    "IncreFlashAttention": ((ifa_v1, ALL),),
    "IncreFlashAttentionV2": ((ifa_v2, ALL),),
    "IncreFlashAttentionV3": ((ifa_v3_paged, ALL),),
    "SparseFlashAttentionGrad": ((sfag, A2_A3),),
    "LightningIndexerGrad": ((lig, A2_A3),),
    "LightningIndexer": ((li, A2_A3), (li_tnd, A2_A3)),
    "SparseFlashAttention": ((sfa, ("Ascend910B",)),),
    "ScatterPaKvCache": ((scatter, ALL), (scatter_nz, A2_A3)),
    "GatherPaKvCache": ((gather, ALL),),
    "FusedInferAttentionScoreV4": (
        (fia, ALL),
        (fia_paged, ALL),
        (fia_paged_nz, ALL),
        (fia_paged_tnd, ALL),
        (fia_paged_pfa, A2_A3),
        (fia_paged_pfa_tnd, A2_A3),
        (fia_paged_nsd, A2_A3),
        (fia_split_fuse_paged, A2_A3),
        (fia_padded, ALL),
        (fia_sink, ALL),
        (fia_sink_tnd, A2_A3),
        (fia_list, ALL),
        (fia_antiquant_lse, ALL),
        (fia_antiquant_mask, ("Ascend910_95",)),
        (fia_antiquant_mask_padding, ("Ascend910_95",)),
        (fia_antiquant_paged_nz_lse, ("Ascend910_95",)),
        (fia_pfa_kv_antiquant, ALL),
        (fia_pfa_kv_antiquant_float, A2_A3),
        (fia_pfa_msd, A2_A3),
        (fia_pfa_msd_per_token, A2_A3),
        (fia_paged_pfa_antiquant, A2_A3),
        (fia_pfa_prefix_antiquant_lse, A2_A3),
        (fia_per_block, ("Ascend910_95",)),
        (fia_per_block_hif8, ("Ascend910_95",)),
        (fia_mla_full_quant, ("Ascend910_95",)),
        (fia_mla_full_quant_kv_padding, ("Ascend910_95",)),
        (fia_mla_int8_quant, A2_A3),
    ),
    "FusedInferAttentionScore": ((fia_v1, ALL),),
    "FusedInferAttentionScoreV5": (
        (fia_v5, ALL),
        (fia_v5_sink, ALL),
        (fia_v5_starts, ALL),
        (fia_v5_pse_type1, A2_A3),
        (fia_v5_alibi, ("Ascend910_95",)),
    ),
    "FusedInferAttentionScoreV2": (
        (fia_v2, ALL),
        (fia_kv_antiquant, ALL),
        (fia_kv_antiquant_per_token, ALL),
        (fia_kv_antiquant_channel_token, ALL),
        (fia_kv_antiquant_per_token_head, ALL),
        (fia_kv_antiquant_paged_params, ALL),
        (fia_kv_antiquant_paged_nz, ("Ascend910_95",)),
        (fia_kv_antiquant_paged_params_per_head, ALL),
        (fia_kv_antiquant_per_token_lse, ALL),
        (fia_int4, ALL),
        (fia_int4_pfa_empty, A2_A3),
        (fia_prefix_list, A2_A3),
        (fia_prefix_antiquant, ALL),
        (fia_prefix_per_token, ("Ascend910_95",)),
        (fia_prefix_heads, ("Ascend910_95",)),
        (fia_prefix_nsd_empty, A2_A3),
    ),
    "FusedInferAttentionScoreV3": ((fia_v3, ALL), (fia_rope, ALL), (fia_mla, ALL), (fia_rope_pfa, A2_A3)),
    **{entry: ((fn, ALL),) for entry, fn in FIA_MAX_WORKSPACE.items()},
    "DropoutGenMaskV2": ((gen_mask, A2_A3),),
    "DropoutGenMask": ((gen_mask_v1, A2_A3),),
}


def fas_v4(soc):
    """V4 (CANN 9.0.0 on; the fuzzer runs it under the first release that has it): TND with lengths, a
    same_as_input softmax layout, outDtype 1 and a seeded dropout."""
    t, n, d = 16, 2, 16
    qkv = [T((t, n, d)) for _ in range(3)]
    lanes = [T((t, n, 8), "FLOAT") for _ in range(2)]
    return [*qkv, *[None] * 11, (8, 16), (8, 16), None, None, 0.25, 0.5, 65536, 65536, n, "TND", 0, 0, 1, 1,
            "same_as_input", 7, 16, *lanes, None, T((t, n, d))]  # fmt: skip


BASELINES["FlashAttentionScoreV4"] = ((fas_v4, ALL),)


def fag_v4(soc):
    """FlashAttentionScoreGradV4 (CANN 9.0.0 on; run under the first release that has it): fag's dense call."""
    return as_entry("FlashAttentionScoreGradV4", "FlashAttentionScoreGradV2", fag(soc), softmaxInLayout="")


def fag_v4_tnd(soc):
    """fag_tnd through V4, with a seed and offset."""
    entry = "FlashAttentionScoreGradV4"
    return as_entry(entry, "FlashAttentionUnpaddingScoreGradV2", fag_tnd(soc), softmaxInLayout="", seed=7, offset=16)


BASELINES["FlashAttentionScoreGradV4"] = ((fag_v4, ALL), (fag_v4_tnd, ALL))
# the TND pse forms
BASELINES["FlashAttentionVarLenScoreV2"] += ((fas_tnd_pse, ALL), (fas_tnd_pse_1d, ("Ascend910_95",)))
BASELINES["FlashAttentionUnpaddingScoreGradV2"] += (
    (fag_tnd_pse, ALL),
    (fag_tnd_slopes_mode8, ALL),
    (fag_tnd_mask_wide, ("Ascend910_95",)),
    (fag_tnd_prefix5, ("Ascend910_95",)),
)
