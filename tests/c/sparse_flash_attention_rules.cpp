// aclnnSparseFlashAttention status codes, one failing case per rule plus valid baselines.
// Prints "<rule> <code>" lines; tests/test_sparse_flash_attention_cabi.py asserts each code.
// Usage: sparse_flash_attention_rules [soc]   ("soc" prints only the chip-dependent case)
#include <cstdint>
#include <cstring>
#include <string>

#include "aclnnop/aclnn_sparse_flash_attention.h"
#include "op_case.h"

namespace {

const int64_t kMax = INT64_MAX;

struct Case {
    Spec q, k, v, idx, table, seqQ, seqKv, qRope, kRope, out, smax, ssum;
    double scale = 0.04;
    int64_t blockSize = 1;
    const char *layoutQ = "BSND";
    const char *layoutKv = "BSND";
    int64_t mode = 3, pre = kMax, next = kMax, attentionMode = 2;
    bool lse = true;
};

// BSND: B=1, S1=2, N1=2, D=512, Dr=64, S2=16, four selected keys per row (0, 1, -1, -1).
Case Bsnd() {
    Case c;
    c.q = Spec({1, 2, 2, 512});
    c.k = c.v = Spec({1, 16, 1, 512});
    c.idx = Spec({1, 2, 1, 4}, ACL_INT32, {0, 1, -1, -1, 0, 1, -1, -1});
    c.qRope = Spec({1, 2, 2, 64});
    c.kRope = Spec({1, 16, 1, 64});
    c.out = c.q;
    c.smax = c.ssum = Spec({1, 1, 2, 2}, ACL_FLOAT);
    c.table.null = c.seqQ.null = c.seqKv.null = true;
    return c;
}

// TND: two batches of 1 query row over 6 + 10 keys (cumulative offsets).
Case Tnd() {
    Case c = Bsnd();
    c.layoutQ = c.layoutKv = "TND";
    c.q = c.out = Spec({2, 2, 512});
    c.k = c.v = Spec({16, 1, 512});
    c.idx = Spec({2, 1, 4}, ACL_INT32, {0, 1, -1, -1, 2, 3, 4, -1});
    c.qRope = Spec({2, 2, 64});
    c.kRope = Spec({16, 1, 64});
    c.smax = c.ssum = Spec({1, 2, 2}, ACL_FLOAT);
    c.seqQ = Spec({2}, ACL_INT32, {1, 2});
    c.seqKv = Spec({2}, ACL_INT32, {6, 16});
    return c;
}

// PA_BSND keys: 2 cache blocks of 16; batch 0 reads blocks [1, 0] and 20 keys.
Case Paged() {
    Case c = Bsnd();
    c.layoutKv = "PA_BSND";
    c.lse = false;
    c.k = c.v = Spec({2, 16, 1, 512});
    c.kRope = Spec({2, 16, 1, 64});
    c.table = Spec({1, 2}, ACL_INT32, {1, 0});
    c.seqKv = Spec({1}, ACL_INT32, {20});
    return c;
}

// Phase 1 of case `c` with its tensors kept in `t`.
int Phase1(Tensors &t, const Case &c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    char lq[16] = {0}, lk[16] = {0};
    if (c.layoutQ) strncpy(lq, c.layoutQ, sizeof(lq) - 1);
    if (c.layoutKv) strncpy(lk, c.layoutKv, sizeof(lk) - 1);
    return aclnnSparseFlashAttentionGetWorkspaceSize(
        t.Make(c.q), t.Make(c.k), t.Make(c.v), t.Make(c.idx), t.Make(c.table), t.Make(c.seqQ), t.Make(c.seqKv),
        t.Make(c.qRope), t.Make(c.kRope), c.scale, c.blockSize, c.layoutQ ? lq : nullptr, c.layoutKv ? lk : nullptr,
        c.mode, c.pre, c.next, c.attentionMode, c.lse, t.Make(c.out), t.Make(c.smax), t.Make(c.ssum), workspaceSize,
        executor);
}

int Phase1(const Case &c) {
    Tensors t;
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    return Phase1(t, c, &size, &executor);
}

int Run(const Case &c, aclrtStream stream) {
    Tensors t;
    return RunPhases([&](uint64_t *size, aclOpExecutor **e) { return Phase1(t, c, size, e); },
                     aclnnSparseFlashAttention, stream);
}

void Nulls() {
    const char *names[] = {"query", "key", "value", "sparseIndices", "attentionOutOut", "softmaxMaxOut",
                           "softmaxSumOut"};
    for (int i = 0; i < 7; i++) {
        Case c = Bsnd();
        Spec *specs[] = {&c.q, &c.k, &c.v, &c.idx, &c.out, &c.smax, &c.ssum};
        specs[i]->null = true;
        REPORT(("null." + std::string(names[i])).c_str(), Phase1(c));
    }
    Case c = Bsnd();
    c.lse = false;
    c.smax.null = true;
    REPORT("null.softmaxMaxOut_without_lse", Phase1(c));
    c.ssum.null = true;
    REPORT("null.softmax_both_without_lse", Phase1(c));
}

void KernelKey() {
    Case c = Bsnd();
    c.q.dtype = ACL_FLOAT;
    REPORT("dtype.query_fp32", Phase1(c));
    c = Bsnd();
    c.v.dtype = ACL_FLOAT16;
    REPORT("dtype.value_mixed", Phase1(c));
    c = Bsnd();
    c.idx = Spec({1, 2, 1, 4}, ACL_INT64);
    REPORT("dtype.sparseIndices_int64", Phase1(c));
    c = Bsnd();
    c.smax.dtype = ACL_FLOAT16;
    REPORT("dtype.softmaxMaxOut_fp16", Phase1(c));
    c = Bsnd();
    c.out.dtype = ACL_FLOAT16;
    REPORT("dtype.attentionOutOut_mixed", Phase1(c));
    c = Bsnd();
    c.qRope.dtype = ACL_FLOAT16;
    REPORT("optional.query_rope_fp16", Phase1(c));
    c = Tnd();
    c.seqQ = Spec({2}, ACL_INT64);
    c.seqKv = Spec({2}, ACL_INT64);
    REPORT("optional.actual_seq_int64", Phase1(c));
}

void Tiling() {
    Case c = Bsnd();
    c.qRope.null = true;
    REPORT("tiling.query_rope_null", Phase1(c));
    c = Bsnd();
    c.layoutQ = "BNSD";
    REPORT("tiling.layout_query", Phase1(c));
    c = Bsnd();
    c.layoutKv = "BNSD";
    REPORT("tiling.layout_kv", Phase1(c));
    c = Bsnd();
    c.layoutKv = "TND";
    REPORT("tiling.layout_mismatch", Phase1(c));
    c = Bsnd();
    c.layoutQ = c.layoutKv = nullptr;  // the OpDef defaults: BSND
    REPORT("tiling.layout_null_ok", Phase1(c));
    c = Paged();
    c.k.shape = {32, 1, 512};
    REPORT("tiling.pa_key_rank", Phase1(c));
    c = Paged();
    c.lse = true;
    REPORT("tiling.lse_pa", Phase1(c));
    c = Tnd();
    c.seqQ.null = true;
    REPORT("tiling.tnd_actual_seq_q_null", Phase1(c));
    c = Tnd();
    c.seqQ = Spec({0}, ACL_INT32);
    REPORT("tiling.actual_seq_q_size", Phase1(c));
    c = Bsnd();
    c.qRope.shape = {2, 2, 64};
    REPORT("tiling.query_rope_rank", Phase1(c));
    c = Paged();
    c.table.null = true;
    REPORT("tiling.pa_block_table_null", Phase1(c));
    c = Paged();
    c.table = Spec({2}, ACL_INT32, {1, 0});
    REPORT("tiling.block_table_rank", Phase1(c));
    c = Paged();
    c.table = Spec({1, 0}, ACL_INT32);
    REPORT("tiling.block_table_dim1", Phase1(c));
    c = Bsnd();
    c.q.shape = c.out.shape = {2, 1024};
    c.qRope.shape = {2, 128};
    REPORT("tiling.rank.query", Phase1(c));
    c = Tnd();
    c.q.shape = c.out.shape = {1, 2, 2, 512};
    c.qRope.shape = {1, 2, 2, 64};
    REPORT("tiling.layout_rank.query", Phase1(c));
    c = Bsnd();
    c.k.shape = {16, 512};
    REPORT("tiling.rank.key", Phase1(c));
    c = Bsnd();
    c.k.shape = {16, 1, 512};
    REPORT("tiling.layout_rank.key", Phase1(c));
    c = Bsnd();
    c.mode = 1;
    REPORT("tiling.sparse_mode", Phase1(c));
    c = Bsnd();
    c.blockSize = 3;
    REPORT("tiling.sparse_block_size_3", Phase1(c));
    c = Bsnd();
    c.blockSize = 256;
    REPORT("tiling.sparse_block_size_256", Phase1(c));
    c = Bsnd();
    c.pre = 0;
    REPORT("tiling.pre_tokens", Phase1(c));
    c = Bsnd();
    c.next = 2048;
    REPORT("tiling.next_tokens", Phase1(c));
    c = Bsnd();
    c.attentionMode = 0;
    REPORT("tiling.attention_mode_0", Phase1(c));
    c = Bsnd();
    c.attentionMode = 1;
    REPORT("tiling.attention_mode", Phase1(c));
    c = Bsnd();
    c.kRope.null = true;
    REPORT("tiling.key_rope_null", Phase1(c));
    c = Paged();
    c.seqKv.null = true;
    REPORT("tiling.pa_actual_seq_kv_null", Phase1(c));
    c = Bsnd();
    c.q.shape = c.out.shape = {0, 2, 2, 512};
    c.qRope.shape = {0, 2, 2, 64};
    REPORT("tiling.batch", Phase1(c));
    c = Bsnd();
    c.k.shape = c.v.shape = {1, 16, 2, 512};
    c.kRope.shape = {1, 16, 2, 64};
    REPORT("tiling.n2", Phase1(c));
    c = Bsnd();
    c.q.shape = c.out.shape = {1, 2, 3, 512};
    c.qRope.shape = {1, 2, 3, 64};
    REPORT("tiling.g", Phase1(c));
    c = Bsnd();
    c.q.shape = c.out.shape = {1, 2, 2, 256};
    c.k.shape = c.v.shape = {1, 16, 1, 256};
    REPORT("tiling.head_dim", Phase1(c));
    c = Bsnd();
    c.v.shape = {1, 16, 1, 256};
    REPORT("tiling.head_dim_v", Phase1(c));
    c = Bsnd();
    c.qRope.shape = {1, 2, 2, 32};
    REPORT("tiling.rope_dim", Phase1(c));
    c = Paged();
    c.k.shape = c.v.shape = {4, 8, 1, 512};
    c.kRope.shape = {4, 8, 1, 64};
    REPORT("tiling.block_size_align", Phase1(c));
    c = Paged();
    c.blockSize = 32;
    REPORT("tiling.block_size_sparse", Phase1(c));
    c = Bsnd();
    c.k.shape = {2, 16, 1, 512};
    REPORT("tiling.shape.key", Phase1(c));
    c = Bsnd();
    c.v.shape = {1, 8, 1, 512};
    REPORT("tiling.shape.value", Phase1(c));
    c = Bsnd();
    c.kRope.shape = {1, 8, 1, 64};
    REPORT("tiling.shape.key_rope", Phase1(c));
    c = Bsnd();
    c.qRope.shape = {1, 3, 2, 64};
    REPORT("tiling.shape.query_rope", Phase1(c));
    c = Bsnd();
    c.idx = Spec({1, 3, 1, 4}, ACL_INT32);
    REPORT("tiling.shape.sparse_indices", Phase1(c));
    c = Bsnd();
    c.out.shape = {1, 2, 4, 512};
    REPORT("tiling.shape.attention_out", Phase1(c));
    c = Bsnd();
    c.seqQ = Spec({2}, ACL_INT32, {2, 2});
    REPORT("tiling.actualSeqLengthsQ_batch", Phase1(c));
    c = Tnd();
    c.seqKv.null = true;
    REPORT("tiling.tnd_actual_seq_kv_null", Phase1(c));
    c = Bsnd();
    c.seqKv = Spec({2}, ACL_INT32, {16, 16});
    REPORT("tiling.actualSeqLengths_batch", Phase1(c));
    c = Bsnd();
    c.table = Spec({1, 2}, ACL_INT32, {0, 1});
    REPORT("tiling.block_table_not_pa", Phase1(c));
    c = Paged();
    c.table = Spec({2, 2}, ACL_INT32, {1, 0, 0, 1});
    REPORT("tiling.block_table_batch", Phase1(c));
    c = Bsnd();
    c.smax.shape = {3, 7};  // the 8.5 tiling never looks at the softmax outputs' shapes
    REPORT("tiling.softmax_shape_unchecked_ok", Phase1(c));
    c = Tnd();
    c.ssum.shape = {2, 2};
    REPORT("tiling.tnd_softmax_shape", Phase1(c));
    c = Tnd();
    c.k = c.v = Spec({0, 1, 512});
    c.kRope = Spec({0, 1, 64});
    c.seqKv = Spec({2}, ACL_INT32, {0, 0});
    REPORT("tiling.tnd_empty_key", Phase1(c));
}

void EmptyAndRuns(aclrtStream stream) {
    Case c = Bsnd();
    c.out.shape = c.smax.shape = c.ssum.shape = {0};
    c.mode = 1;  // would fail tiling; all outputs empty returns first
    REPORT("empty.all_outputs_ok", Run(c, stream));
    REPORT("run.bsnd_ok", Run(Bsnd(), stream));
    REPORT("run.tnd_ok", Run(Tnd(), stream));
    REPORT("run.paged_ok", Run(Paged(), stream));
    c = Bsnd();
    c.lse = false;
    c.smax.null = c.ssum.null = true;
    REPORT("run.null_softmax", Run(c, stream));
    c = Bsnd();
    c.v.null = true;
    REPORT("run.null_value", Run(c, stream));

    Tensors t;
    Case base = Bsnd();
    ReportPhase2Rules([&](uint64_t *size, aclOpExecutor **e) { return Phase1(t, base, size, e); },
                      aclnnSparseFlashAttention, stream);
}

}  // namespace

int main(int argc, char **argv) {
    return RulesMain(argc, argv, [] { REPORT("soc.bsnd", Phase1(Bsnd())); }, [](aclrtStream stream) {
        Nulls();
        KernelKey();
        Tiling();
        EmptyAndRuns(stream);
    });
}
