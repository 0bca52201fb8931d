"""IncreFlashAttentionV4 with a query S in [2, 16] on Atlas A2/A3: what the 8.5 source does with it.

IFATiling::GetRopeAndGqaFlag (incre_flash_attention_tiling.cpp) sets gqaMtpFlag_, the
speculative-decoding flag, for 1 < S <= 16 without query_rope (which V4 cannot pass). On V4's way
the flag changes three things:
  - CheckQKOutShapeBsh (incre_flash_attention_tiling_check.cpp) no longer requires S = 1;
  - ProcessAttenMask accepts a mask of any shape: with sparseMode 0 the [2048, 2048] check is
    skipped, and it returns before the batch and width checks and before setting attenMaskSize_,
    which stays 0;
  - SplitUnbalanced (IsFlashDecode is off) sets gMax_ = 256 (128 with int8 key/value) and splits the
    query rows: for the BSH_BSND input layout s1SplitSize = min(gMax / G, S), s1Outer = ceil(S /
    s1SplitSize); for BNSD groupSplitSize = gMax / S made even, at most G, gOuter = ceil(G /
    groupSplitSize). SplitBN then hands out B x N2 x outer loop indices.
The tiling key does not carry the flag: SetupPerfMode picks the kernels of S = 1 (AllVecNew,
SplitBbn2s2Us2 or Preload in op_kernel/incre_flash_attention_arch32.h). Of the arch32 kernels only the
GQA-KV-NZ one (incre_flash_attention_preload_dd.h) and the MLA one read qSeqSize, and V4 reaches
neither (a 5-D key always fails the tiling, see ifa_kv_nz; query_rope is not a V4 input). The S = 1
kernels address everything by (b, n2) = divmod(loop index, N2) and never look at S:
  query row   q_flat[(b N + n) D : +D]        output row   out_flat[(b N + n) D : +D]
  mask        mask_flat[start_b + j] for every batch (row stride attenMaskSize = 0)
So the first B N rows of the flat query are decoded as single tokens against batch b's keys, the
first B N D elements of attentionOut receive them in [B, N, D] order, and the rest of attentionOut
keeps what it held. With outer > 1 the loop index runs to B N2 outer: b passes the batch and the
kernels read key, value, actual lengths and block table past their ends. aclnn-emu runs the first
case as the hardware does, with a warning, and refuses the second (561003).
"""

G_MAX, G_MAX_INT8 = 256, 128


def outer_loops(bsh_split: bool, group: int, s_q: int, int8_kv: bool) -> int:
    """SplitUnbalanced's s1Outer (BSH_BSND input layout) or gOuter (BNSD) of a speculative call."""
    g_max = G_MAX_INT8 if int8_kv else G_MAX
    if bsh_split:
        rows = min(g_max // group, s_q)
        return -(-s_q // rows)
    split = g_max // s_q
    split = min(split - (split & 1), group)
    return -(-group // split)


def bsh_split(layout_base: str, paged: bool, kv_rank: int) -> bool:
    """Whether SplitUnbalanced sees the BSH_BSND input layout: the query's (BSH, BSND) without page
    attention; with it ProcessPageAttentionFlag sets the layout from the cache's rank (3-D: BSH_BSND)."""
    return kv_rank == 3 if paged else layout_base in ("BSH", "BSND")


def out_of_batch(outer: int, s_q: int, group: int) -> str:
    """The refusal's detail: why the kernels would read past the batch."""
    return (
        f"query S {s_q} with a group of {group} makes the tiling split the query rows {outer} ways "
        "(SplitUnbalanced); the S = 1 kernels it selects then count their batch index past B and read "
        "key, value, actualSeqLengths and blocktable past their ends"
    )


def warning(s_q: int, batch: int, heads: int, d: int) -> str:
    rows = batch * heads
    return (
        f"query S is {s_q}: the 8.5 tiling accepts S in [2, 16] (gqaMtpFlag_) but selects the S = 1 decode "
        f"kernels, which ignore S: they decode the first {rows} rows of D={d} of the flat query as single "
        f"tokens (row b*N+n against batch b's keys), every batch reads attenMask from its first row, and "
        f"only the first {rows * d} elements of attentionOut are written; the rest keep their contents. "
        "This is what the NPU computes; it is not speculative-decoding attention"
    )
