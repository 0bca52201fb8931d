// aclnnSparseFlashAttentionGrad status codes, one failing case per rule plus valid baselines.
// Prints "<rule> <code>" lines; tests/test_sparse_flash_attention_grad_cabi.py asserts each code.
// Usage: sparse_flash_attention_grad_rules [soc]   ("soc" prints only the chip-dependent cases)
#include <cstring>
#include <memory>
#include <string>

#include "aclnnop/aclnn_sparse_flash_attention_grad.h"
#include "op_case.h"

namespace {

struct Case {
    Spec q, k, v, idx, dout, out, smax, ssum, seqQ, seqKv, qRope, kRope, dq, dk, dv, dqRope, dkRope;
    double scale = 0.088;
    int64_t blockSize = 1;
    const char *layout = "BSND";
    int64_t sparseMode = 0;
};

std::vector<int32_t> Fill(int64_t n, int32_t value) { return std::vector<int32_t>(n, value); }

// BSND: B=1, S1=2, N1=2, D=Dv=128, S2=16; every sparse index row is -1 (nothing selected).
Case Bsnd() {
    Case c;
    c.q = Spec({1, 2, 2, 128});
    c.k = c.v = Spec({1, 16, 1, 128});
    c.idx = Spec({1, 2, 1, 2048}, ACL_INT32, Fill(2 * 2048, -1));
    c.dout = c.out = c.q;
    c.smax = c.ssum = Spec({1, 1, 2, 2}, ACL_FLOAT);
    c.seqQ.null = c.seqKv.null = c.qRope.null = c.kRope.null = c.dqRope.null = c.dkRope.null = true;
    c.dq = c.q;
    c.dk = c.k;
    c.dv = c.v;
    return c;
}

// TND: T1=2, N1=2, D=Dv=128, T2=16 in one batch; the sequence tensors hold cumulative offsets.
Case Tnd() {
    Case c = Bsnd();
    c.layout = "TND";
    c.q = c.dout = c.out = c.dq = Spec({2, 2, 128});
    c.k = c.v = c.dk = c.dv = Spec({16, 1, 128});
    c.idx = Spec({2, 1, 2048}, ACL_INT32, Fill(2 * 2048, -1));
    c.smax = c.ssum = Spec({1, 2, 2}, ACL_FLOAT);
    c.seqQ = Spec({1}, ACL_INT32, {2});
    c.seqKv = Spec({1}, ACL_INT32, {16});
    return c;
}

// BSND with N1 query heads and N2 key/value heads.
Case BsndHeads(int64_t n1, int64_t n2) {
    Case c = Bsnd();
    for (Spec *s : {&c.q, &c.dout, &c.out, &c.dq}) s->shape[2] = n1;
    for (Spec *s : {&c.k, &c.v, &c.dk, &c.dv}) s->shape[2] = n2;
    return c;
}

Case WithRope(Case c, int64_t qDr = 64, int64_t kDr = 64) {
    std::vector<int64_t> qs = c.q.shape, ks = c.k.shape;
    qs.back() = qDr;
    ks.back() = kDr;
    c.qRope = c.dqRope = Spec(qs);
    c.kRope = c.dkRope = Spec(ks);
    return c;
}

int Phase1(Tensors &t, const Case &c, uint64_t *workspaceSize, aclOpExecutor **executor) {
    char layout[16] = {0};
    if (c.layout) strncpy(layout, c.layout, sizeof(layout) - 1);
    return aclnnSparseFlashAttentionGradGetWorkspaceSize(
        t.Make(c.q), t.Make(c.k), t.Make(c.v), t.Make(c.idx), t.Make(c.dout), t.Make(c.out), t.Make(c.smax),
        t.Make(c.ssum), t.Make(c.seqQ), t.Make(c.seqKv), t.Make(c.qRope), t.Make(c.kRope), c.scale, c.blockSize,
        c.layout ? layout : nullptr, c.sparseMode, 2147483647, 2147483647, false, t.Make(c.dq), t.Make(c.dk),
        t.Make(c.dv), t.Make(c.dqRope), t.Make(c.dkRope), workspaceSize, executor);
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
                     aclnnSparseFlashAttentionGrad, stream);
}

void Nulls() {
    const char *names[] = {"query", "key", "value", "sparseIndices", "dOut", "out", "softmaxMax", "softmaxSum",
                           "dQueryOut", "dKeyOut", "dValueOut"};
    for (int i = 0; i < 11; i++) {
        Case c = Bsnd();
        Spec *specs[] = {&c.q, &c.k, &c.v, &c.idx, &c.dout, &c.out, &c.smax, &c.ssum, &c.dq, &c.dk, &c.dv};
        specs[i]->null = true;
        REPORT(("null." + std::string(names[i])).c_str(), Phase1(c));
    }
}

void KernelKey() {
    Case c = Bsnd();
    c.q.dtype = ACL_FLOAT;
    REPORT("dtype.query_fp32", Phase1(c));
    c = Bsnd();
    c.out.dtype = ACL_FLOAT16;  // fp16 is registered, but not together with bf16 query
    REPORT("dtype.out_mixed", Phase1(c));
    c = Bsnd();
    c.idx.dtype = ACL_INT64;
    c.idx.values.clear();
    REPORT("dtype.sparseIndices_int64", Phase1(c));
    c = Bsnd();
    c.smax.dtype = ACL_FLOAT16;
    REPORT("dtype.softmaxMax_fp16", Phase1(c));
    c = Bsnd();
    c.dv.dtype = ACL_FLOAT16;
    REPORT("dtype.dValueOut_mixed", Phase1(c));
    c = Bsnd();
    c.k.format = ACL_FORMAT_FRACTAL_NZ;
    REPORT("format.key_nz", Phase1(c));
    c = Bsnd();
    c.k.format = ACL_FORMAT_NCHW;  // treated as ND by the generated path
    REPORT("format.key_nchw_ok", Phase1(c));
    c = Tnd();
    c.seqQ = Spec({1}, ACL_INT64);
    c.seqKv = Spec({1}, ACL_INT64);
    REPORT("optional.actual_seq_int64", Phase1(c));
    c = WithRope(Bsnd());
    c.qRope.dtype = ACL_FLOAT16;
    REPORT("optional.query_rope_fp16", Phase1(c));
}

void Tiling() {
    Case c = Bsnd();
    c.idx.shape.back() = 1024;
    c.idx.values = Fill(2 * 1024, -1);
    REPORT("tiling.selected_block_count", Phase1(c));
    c = Bsnd();
    c.sparseMode = 1;
    REPORT("tiling.sparse_mode_1", Phase1(c));
    c = Bsnd();
    c.sparseMode = (int64_t(1) << 32) + 3;  // read through an int pointer: the low word, 3
    REPORT("tiling.sparse_mode_low_word_ok", Phase1(c));
    c = Bsnd();
    c.k.shape.back() = c.v.shape.back() = c.dk.shape.back() = c.dv.shape.back() = 64;
    REPORT("tiling.head_dim_qk", Phase1(c));
    c = Bsnd();
    c.v.shape.back() = c.dv.shape.back() = 256;
    REPORT("tiling.head_dim_v", Phase1(c));
    c = Bsnd();
    c.layout = "BNSD";
    REPORT("tiling.layout", Phase1(c));
    c = Bsnd();
    c.layout = nullptr;  // the OpDef default is BSND
    REPORT("tiling.layout_null_ok", Phase1(c));
    c = Bsnd();
    c.layout = "TND";
    REPORT("tiling.layout_rank", Phase1(c));
    c = WithRope(Bsnd(), 64, 32);
    REPORT("tiling.rope_dim", Phase1(c));
    c = WithRope(Bsnd(), 64, 32);
    c.kRope.null = true;  // one rope input alone turns rope off: not checked
    REPORT("tiling.rope_one_side_ok", Phase1(c));
    c = Tnd();
    c.seqQ.null = true;
    REPORT("tiling.tnd_actual_seq_q_null", Phase1(c));
    REPORT("tiling.n2_zero", Phase1(BsndHeads(2, 0)));
    REPORT("tiling.n2_two", Phase1(BsndHeads(2, 2)));
    REPORT("tiling.n1_not_power_of_two", Phase1(BsndHeads(3, 1)));
    REPORT("tiling.n1_over_128", Phase1(BsndHeads(256, 1)));
    REPORT("tiling.g_zero", Phase1(BsndHeads(0, 1)));
    c = Tnd();
    c.q.shape[0] = c.dout.shape[0] = c.out.shape[0] = c.dq.shape[0] = c.idx.shape[0] = 0;
    c.smax.shape[1] = c.ssum.shape[1] = 0;
    REPORT("tiling.tnd_zero", Phase1(c));
    c = Tnd();
    c.smax.shape = {1, 2, 4};
    REPORT("tiling.tnd_softmaxMax_shape", Phase1(c));
    c = Tnd();
    c.ssum.shape = {2, 2};
    REPORT("tiling.tnd_softmaxSum_rank", Phase1(c));
    c = Tnd();
    c.out.shape = {2, 1, 256};
    REPORT("tiling.tnd_out_shape", Phase1(c));
    c = Tnd();
    c.v.shape.back() = c.dv.shape.back() = 64;  // Dv = 64 <= D is allowed; out must then end in 64
    REPORT("tiling.tnd_out_head_dim", Phase1(c));
    c = Bsnd();
    c.q.shape.back() = c.dout.shape.back() = c.out.shape.back() = c.dq.shape.back() = 10240;
    c.k.shape.back() = c.v.shape.back() = c.dk.shape.back() = c.dv.shape.back() = 10240;
    REPORT("tiling.q_post_base", Phase1(c));
    c = Bsnd();
    c.smax.shape = {3, 7};  // BSND gets no shape checks on the softmax statistics
    REPORT("tiling.bsnd_softmax_shape_unchecked_ok", Phase1(c));
}

void EmptyAndRuns(aclrtStream stream) {
    Case c = Bsnd();
    c.dq.shape = c.dk.shape = c.dv.shape = {0};
    c.idx.shape.back() = 7;  // would fail tiling; all outputs empty returns first
    c.idx.values.clear();
    REPORT("empty.all_outputs_ok", Run(c, stream));
    c = Bsnd();
    REPORT("run.bsnd_ok", Run(c, stream));
    c = WithRope(Tnd());
    REPORT("run.tnd_rope_ok", Run(c, stream));
    c = Bsnd();
    c.blockSize = 0;  // unchecked by tiling; the kernel would divide by zero
    REPORT("run.block_size_zero", Run(c, stream));

    Tensors t;
    Case base = Bsnd();
    ReportPhase2Rules([&](uint64_t *size, aclOpExecutor **e) { return Phase1(t, base, size, e); },
                      aclnnSparseFlashAttentionGrad, stream);
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
