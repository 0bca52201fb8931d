// aclnnLightningIndexer status codes, one failing case per rule plus valid baselines.
// Prints "<rule> <code>" lines; tests/test_lightning_indexer_cabi.py asserts each code.
// Usage: lightning_indexer_rules [soc]   ("soc" prints only the chip-dependent case)
#include <cstdint>
#include <cstring>
#include <string>

#include "aclnnop/aclnn_lightning_indexer.h"
#include "op_case.h"

namespace {

const int64_t kMax = INT64_MAX;

struct Case {
    Spec q, k, w, seqQ, seqK, table, idx, val;
    const char *layoutQ = "BSND";
    const char *layoutK = "BSND";
    int64_t count = 8, mode = 3, pre = kMax, next = kMax;
    bool values = false;
};

// BSND: B=1, S1=4, N1=2, D=128, S2=8, sparse_count 8.
Case Bsnd() {
    Case c;
    c.q = Spec({1, 4, 2, 128});
    c.k = Spec({1, 8, 1, 128});
    c.w = Spec({1, 4, 2});
    c.idx = Spec({1, 4, 1, 8}, ACL_INT32);
    c.val = Spec({1, 4, 1, 8});
    c.seqQ.null = c.seqK.null = c.table.null = true;
    return c;
}

// TND: two batches of 2 query rows and 3 + 5 keys (cumulative offsets).
Case Tnd() {
    Case c = Bsnd();
    c.layoutQ = c.layoutK = "TND";
    c.q = Spec({4, 2, 128});
    c.k = Spec({8, 1, 128});
    c.w = Spec({4, 2});
    c.idx = Spec({4, 1, 8}, ACL_INT32);
    c.val = Spec({4, 1, 8});
    c.seqQ = Spec({2}, ACL_INT32, {2, 4});
    c.seqK = Spec({2}, ACL_INT32, {3, 8});
    return c;
}

// PA_BSND keys: 2 cache blocks of 16, batch 0 uses blocks [1, 0] and 20 keys.
Case Paged() {
    Case c = Bsnd();
    c.layoutK = "PA_BSND";
    c.k = Spec({2, 16, 1, 128});
    c.table = Spec({1, 2}, ACL_INT32, {1, 0});
    c.seqK = Spec({1}, ACL_INT32, {20});
    return c;
}

// Phase 1 of case `c` with its tensors kept in `t`.
int Phase1(Tensors &t, const Case &c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    char lq[16] = {0}, lk[16] = {0};
    if (c.layoutQ) strncpy(lq, c.layoutQ, sizeof(lq) - 1);
    if (c.layoutK) strncpy(lk, c.layoutK, sizeof(lk) - 1);
    return aclnnLightningIndexerGetWorkspaceSize(
        t.Make(c.q), t.Make(c.k), t.Make(c.w), t.Make(c.seqQ), t.Make(c.seqK), t.Make(c.table),
        c.layoutQ ? lq : nullptr, c.layoutK ? lk : nullptr, c.count, c.mode, c.pre, c.next, c.values, t.Make(c.idx),
        t.Make(c.val), workspaceSize, executor);
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
                     aclnnLightningIndexer, stream);
}

void Nulls() {
    const char *names[] = {"query", "key", "weights", "sparseIndicesOut", "sparseValuesOut"};
    for (int i = 0; i < 5; i++) {
        Case c = Bsnd();
        Spec *specs[] = {&c.q, &c.k, &c.w, &c.idx, &c.val};
        specs[i]->null = true;
        REPORT(("null." + std::string(names[i])).c_str(), Phase1(c));
    }
    Case c = Tnd();
    c.values = true;
    c.val.null = true;
    REPORT("null.sparseValuesOut_returned", Phase1(c));
}

void KernelKey() {
    Case c = Bsnd();
    c.q.dtype = ACL_FLOAT;
    REPORT("dtype.query_fp32", Phase1(c));
    c = Bsnd();
    c.w.dtype = ACL_FLOAT;  // the doc allows FLOAT weights; the 8.5 OpDef does not
    REPORT("dtype.weights_fp32", Phase1(c));
    c = Bsnd();
    c.w.dtype = ACL_FLOAT16;  // fp16 is registered, but not together with bf16 query
    REPORT("dtype.weights_mixed", Phase1(c));
    c = Bsnd();
    c.idx.dtype = ACL_INT64;
    REPORT("dtype.sparseIndicesOut_int64", Phase1(c));
    c = Bsnd();
    c.val.dtype = ACL_FLOAT16;
    REPORT("dtype.sparseValuesOut_mixed", Phase1(c));
    c = Bsnd();
    c.k.format = ACL_FORMAT_FRACTAL_NZ;
    REPORT("format.key_nz", Phase1(c));
    c = Tnd();
    c.seqQ = Spec({2}, ACL_INT64);
    c.seqK = Spec({2}, ACL_INT64);
    REPORT("optional.actual_seq_int64", Phase1(c));
}

void Tiling() {
    Case c = Bsnd();
    c.layoutK = "TND";
    REPORT("tiling.layout_mismatch", Phase1(c));
    c = Bsnd();
    c.layoutQ = c.layoutK = "BNSD";
    REPORT("tiling.layout_key", Phase1(c));
    c = Paged();
    c.layoutQ = "BNSD";
    REPORT("tiling.layout_query", Phase1(c));
    c = Bsnd();
    c.layoutQ = c.layoutK = nullptr;  // the OpDef defaults: BSND
    REPORT("tiling.layout_null_ok", Phase1(c));
    c = Bsnd();
    c.count = 0;
    REPORT("tiling.sparse_count_0", Phase1(c));
    c = Bsnd();
    c.count = 2049;
    REPORT("tiling.sparse_count_2049", Phase1(c));
    c = Bsnd();
    c.count = 3072;  // a multiple of 1024
    c.idx.shape = c.val.shape = {1, 4, 1, 3072};
    REPORT("tiling.sparse_count_3072", Phase1(c));
    c = Bsnd();
    c.q.shape = {1, 4, 65, 128};
    c.w.shape = {1, 4, 65};
    REPORT("tiling.heads_65", Phase1(c));
    c = Bsnd();
    c.values = true;
    c.val.shape = {1, 4, 8};
    REPORT("tiling.values_rank", Phase1(c));
    c = Bsnd();
    c.values = true;
    c.val.shape = {1, 4, 1, 16};
    REPORT("tiling.values_sparse_count", Phase1(c));
    c = Tnd();
    c.values = true;
    c.val.shape = {3, 1, 8};
    REPORT("tiling.tnd_values_t", Phase1(c));
    c = Bsnd();
    c.count = (int64_t(1) << 32) + 8;  // read through an int32 pointer: the low word, 8
    REPORT("tiling.sparse_count_low_word_ok", Phase1(c));
    c = Bsnd();
    c.mode = 1;
    REPORT("tiling.sparse_mode_1", Phase1(c));
    c = Bsnd();
    c.pre = 2048;
    REPORT("tiling.pre_tokens", Phase1(c));
    c = Bsnd();
    c.next = 0;
    REPORT("tiling.next_tokens", Phase1(c));
    c = Paged();
    c.values = true;
    REPORT("tiling.return_values_pa", Phase1(c));
    c = Paged();
    c.table.null = true;
    REPORT("tiling.pa_block_table_null", Phase1(c));
    c = Paged();
    c.seqK.null = true;
    REPORT("tiling.pa_actual_seq_k_null", Phase1(c));
    c = Tnd();
    c.seqK.null = true;
    REPORT("tiling.tnd_actual_seq_k_null", Phase1(c));
    c = Tnd();
    c.seqQ.null = true;
    REPORT("tiling.tnd_actual_seq_q_null", Phase1(c));
    c = Bsnd();
    c.table = Spec({1, 2}, ACL_INT32, {0, 1});
    REPORT("tiling.block_table_not_pa", Phase1(c));
    c = Paged();
    c.table = Spec({2}, ACL_INT32, {1, 0});
    REPORT("tiling.block_table_rank", Phase1(c));
    c = Bsnd();
    c.k.shape = {8, 1, 128};
    REPORT("tiling.rank.key", Phase1(c));
    c = Bsnd();
    c.q.shape = {4, 2, 128};
    REPORT("tiling.rank.query", Phase1(c));
    c = Bsnd();
    c.idx.shape = {1, 4, 8};
    REPORT("tiling.rank.sparse_indices", Phase1(c));
    c = Bsnd();
    c.w.shape = {4, 2};
    REPORT("tiling.rank.weights", Phase1(c));
    c = Bsnd();
    c.k.shape = {1, 8, 2, 128};
    REPORT("tiling.n2", Phase1(c));
    c = Tnd();
    c.seqQ = Spec({0}, ACL_INT32);
    REPORT("tiling.actual_seq_q_size", Phase1(c));
    c = Bsnd();
    c.q.shape = {1, 4, 2, 64};
    REPORT("tiling.head_dim", Phase1(c));
    c = Paged();
    c.k.shape = {4, 8, 1, 128};
    REPORT("tiling.block_size", Phase1(c));
    c = Paged();
    c.k.shape = {0, 16, 1, 128};
    REPORT("tiling.block_count", Phase1(c));
    c = Tnd();
    c.seqK = Spec({1}, ACL_INT32, {8});
    REPORT("tiling.tnd_batch", Phase1(c));
    c = Tnd();
    c.w.shape = {3, 2};
    REPORT("tiling.tnd_t", Phase1(c));
    c = Bsnd();
    c.k.shape = {2, 8, 1, 128};
    REPORT("tiling.bsnd_batch", Phase1(c));
    c = Bsnd();
    c.seqK = Spec({2}, ACL_INT32, {8, 8});
    REPORT("tiling.bsnd_actual_seq_k", Phase1(c));
    c = Bsnd();
    c.w.shape = {2, 4, 2};
    REPORT("tiling.bsnd_weights_out_batch", Phase1(c));
    c = Bsnd();
    c.seqQ = Spec({2}, ACL_INT32, {4, 4});
    REPORT("tiling.bsnd_actual_seq_q", Phase1(c));
    c = Bsnd();
    c.w.shape = {1, 3, 2};
    REPORT("tiling.bsnd_s1", Phase1(c));
    c = Bsnd();
    c.w.shape = {1, 4, 3};
    REPORT("tiling.weights_n1", Phase1(c));
    c = Bsnd();
    c.k.shape = {1, 8, 1, 64};
    REPORT("tiling.key_head_dim", Phase1(c));
    c = Bsnd();
    c.idx.shape = {1, 4, 2, 8};
    REPORT("tiling.out_n2", Phase1(c));
    c = Bsnd();
    c.idx.shape = {1, 4, 1, 16};
    REPORT("tiling.out_sparse_count", Phase1(c));
}

void EmptyAndRuns(aclrtStream stream) {
    Case c = Bsnd();
    c.idx.shape = c.val.shape = {0};
    c.count = 0;  // would fail tiling; all outputs empty returns first
    REPORT("empty.all_outputs_ok", Run(c, stream));
    REPORT("run.bsnd_ok", Run(Bsnd(), stream));
    c = Tnd();
    c.values = true;
    REPORT("run.tnd_values_ok", Run(c, stream));
    REPORT("run.paged_ok", Run(Paged(), stream));
    c = Bsnd();
    c.val.null = true;
    REPORT("run.null_values", Run(c, stream));
    c = Tnd();
    c.values = true;
    c.w.dtype = ACL_FLOAT;
    REPORT("run.weights_fp32", Run(c, stream));

    Tensors t;
    Case base = Bsnd();
    ReportPhase2Rules([&](uint64_t *size, aclOpExecutor **e) { return Phase1(t, base, size, e); },
                      aclnnLightningIndexer, stream);
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
