// aclnnLightningIndexerGrad status codes: one failing case per rule plus valid baselines.
// Prints "<rule> <code>" lines; tests/test_lightning_indexer_grad_cabi.py asserts each code
// (also under ACLNN_EMU_STRICT=1 and ACLNN_EMU_SOC=Ascend910_95).
#include <cstring>
#include <memory>

#include "aclnnop/aclnn_lightning_indexer_grad.h"
#include "common.h"

namespace {

struct Arg {
    Arg() : null(true) {}
    Arg(std::vector<int64_t> s, aclDataType d = ACL_BF16, std::vector<int32_t> v = {})
        : shape(s), dtype(d), values(v) {}
    std::vector<int64_t> shape;
    aclDataType dtype = ACL_BF16;
    aclFormat format = ACL_FORMAT_ND;
    bool null = false;
    std::vector<int32_t> values;  // int32 contents (indices, offsets); other tensors are zero
};

struct Case {
    Arg q, k, dy, idx, w, seqQ, seqK, dq, dk, dw;
    const char *layout = "BSND";
    int64_t sparseMode = 3;
};

// BSND: B=1, S1=4, N1=64, D=128, S2=16, topK=8; every index is key 0.
Case Bsnd() {
    Case c;
    c.q = c.dq = Arg({1, 4, 64, 128});
    c.k = c.dk = Arg({1, 16, 1, 128});
    c.dy = Arg({1, 4, 8});
    c.idx = Arg({1, 4, 8}, ACL_INT32, std::vector<int32_t>(32, 0));
    c.w = c.dw = Arg({1, 4, 64});
    return c;
}

// TND: two batches of 2 query tokens and 8 keys each; the offsets are cumulative.
Case Tnd() {
    Case c = Bsnd();
    c.layout = "TND";
    c.q = c.dq = Arg({4, 64, 128});
    c.k = c.dk = Arg({16, 1, 128});
    c.dy = Arg({4, 8});
    c.idx = Arg({4, 8}, ACL_INT32, std::vector<int32_t>(32, 0));
    c.w = c.dw = Arg({4, 64});
    c.seqQ = Arg({2}, ACL_INT32, {2, 4});
    c.seqK = Arg({2}, ACL_INT32, {8, 16});
    return c;
}

Case WithDtype(Case c, aclDataType dtype) {
    for (Arg *a : {&c.q, &c.k, &c.dy, &c.w, &c.dq, &c.dk, &c.dw}) a->dtype = dtype;
    return c;
}

struct Call {
    std::vector<std::unique_ptr<DeviceTensor>> owned;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;

    aclTensor *Make(const Arg &a) {
        if (a.null) return nullptr;
        owned.emplace_back(new DeviceTensor());
        DeviceTensor &t = *owned.back();
        if (!a.values.empty() && a.dtype == ACL_INT64) {
            std::vector<int64_t> wide(a.values.begin(), a.values.end());
            if (t.Create(wide, a.shape, a.dtype, a.format) != 0) return nullptr;
        } else if (!a.values.empty()) {
            if (t.Create(a.values, a.shape, a.dtype, a.format) != 0) return nullptr;
        } else {
            std::vector<uint8_t> zeros(ShapeSize(a.shape) * aclDataTypeSize(a.dtype), 0);
            if (t.Create(zeros, a.shape, a.dtype, a.format) != 0) return nullptr;
        }
        return t.tensor;
    }

    int Phase1(const Case &c) {
        aclTensor *q = Make(c.q), *k = Make(c.k), *dy = Make(c.dy), *idx = Make(c.idx), *w = Make(c.w);
        aclTensor *seqQ = Make(c.seqQ), *seqK = Make(c.seqK);
        aclTensor *dq = Make(c.dq), *dk = Make(c.dk), *dw = Make(c.dw);
        return aclnnLightningIndexerGradGetWorkspaceSize(q, k, dy, idx, w, seqQ, seqK, 64, const_cast<char *>(c.layout),
                                                         c.sparseMode, 65536, 65536, false, dq, dk, dw,
                                                         &workspaceSize, &executor);
    }

    // Phase 2 and the stream's result; prints "<rule>.run" and "<rule>.sync".
    void Phase2(const char *rule, aclrtStream stream) {
        void *workspace = nullptr;
        if (workspaceSize > 0 && aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) != 0) return;
        printf("%s.run %d\n", rule, aclnnLightningIndexerGrad(workspace, workspaceSize, executor, stream));
        printf("%s.sync %d\n", rule, aclrtSynchronizeStream(stream));
        if (workspace) aclrtFree(workspace);
    }
};

void Check(const char *rule, const Case &c) {
    Call call;
    REPORT(rule, call.Phase1(c));
}

void CheckNull(const char *rule, Arg Case::*member) {
    Case c = Bsnd();
    c.*member = Arg();
    Check(rule, c);
}

void Baseline(const char *rule, const Case &c, aclrtStream stream) {
    Call call;
    int ret = call.Phase1(c);
    REPORT(rule, ret);
    printf("%s.workspace %llu\n", rule, static_cast<unsigned long long>(call.workspaceSize));
    if (ret == 0) call.Phase2(rule, stream);
}

// An empty query returns success at once and writes nothing: the outputs keep their 0x7f bytes.
void EmptyQuery(aclrtStream stream) {
    Case c = Bsnd();
    c.q = Arg({1, 0, 64, 128});
    c.layout = nullptr;  // not even the layout is looked at
    Call call;
    REPORT("empty.query", call.Phase1(c));
    printf("empty.query.workspace %llu\n", static_cast<unsigned long long>(call.workspaceSize));
    DeviceTensor &dq = *call.owned[5];  // q, k, dy, idx, w, then dq (the null offsets own nothing)
    std::vector<uint8_t> marks(dq.bytes, 0x7f), after;
    aclrtMemcpy(dq.addr, dq.bytes, marks.data(), dq.bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    call.Phase2("empty.query", stream);
    dq.Read(after);
    printf("empty.query.untouched %d\n", after == marks);
}

}  // namespace

int main(int argc, char **argv) {
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    if (argc > 1 && strcmp(argv[1], "soc") == 0) {
        Check("soc.bsnd", Bsnd());
        TearDown(stream);
        return 0;
    }

    CheckNull("null.query", &Case::q);
    CheckNull("null.key", &Case::k);
    CheckNull("null.dy", &Case::dy);
    CheckNull("null.spareIndices", &Case::idx);
    CheckNull("null.weights", &Case::w);
    CheckNull("null.dQuery", &Case::dq);
    CheckNull("null.dKey", &Case::dk);
    CheckNull("null.dWeights", &Case::dw);
    {
        Case c = Bsnd();  // nulls come before the empty-query return
        c.q = Arg({1, 0, 64, 128});
        c.dw = Arg();
        Check("null.before_empty", c);
    }
    EmptyQuery(stream);
    {
        Case c = WithDtype(Bsnd(), ACL_FLOAT);  // from 9.0.0 the dtypes come before the empty-query return
        c.q = Arg({1, 0, 64, 128}, ACL_FLOAT);
        Check("dtype.before_empty", c);
        c = Bsnd();  // ... and before the outputs' null checks
        c.k.dtype = ACL_FLOAT16;
        c.dw = Arg();
        Check("dtype.before_null_out", c);
    }

    Case c = Bsnd();
    c.layout = nullptr;
    Check("layout.null", c);
    c.layout = "SBH";
    Check("layout.value", c);
    c = Bsnd();
    c.q = Arg({4, 64, 128});
    Check("query.rank.bsnd", c);
    c = Tnd();
    c.q = Arg({1, 4, 64, 128});
    Check("query.rank.tnd", c);

    Check("dtype.query", WithDtype(Bsnd(), ACL_FLOAT));
    const struct {
        const char *rule;
        Case (*base)();
        Arg Case::*arg;
        aclDataType dtype;
    } dtypes[] = {{"dtype.key", Bsnd, &Case::k, ACL_FLOAT16},
                  {"dtype.dy", Bsnd, &Case::dy, ACL_FLOAT16},
                  {"dtype.weights", Bsnd, &Case::w, ACL_FLOAT16},
                  {"dtype.spareIndices", Bsnd, &Case::idx, ACL_INT64},
                  {"dtype.actucalSeqLengthsQuery", Tnd, &Case::seqQ, ACL_INT64},
                  {"dtype.actucalSeqLengthsKey", Tnd, &Case::seqK, ACL_INT64}};
    for (const auto &d : dtypes) {
        c = d.base();
        (c.*d.arg).dtype = d.dtype;
        Check(d.rule, c);
    }

    c = Bsnd();
    c.k = c.dk = Arg({16, 128});
    Check("key.rank", c);
    c = Tnd();
    c.seqQ = Arg();
    Check("tnd.actual_seq_query", c);
    c = Bsnd();
    c.q = c.dq = Arg({1, 4, 32, 128});
    c.w = c.dw = Arg({1, 4, 32});
    Check("tiling.n1", c);
    c = Bsnd();
    c.q = c.dq = Arg({1, 4, 64, 64});
    Check("tiling.d", c);
    c = Bsnd();
    c.q = c.dq = Arg({1, 4, 128, 128});
    c.k = c.dk = Arg({1, 16, 2, 128});
    c.w = c.dw = Arg({1, 4, 128});
    Check("tiling.n2", c);

    // Inferred rules: accepted with a portability warning unless ACLNN_EMU_STRICT=1.
    c = Bsnd();
    c.q.format = ACL_FORMAT_FRACTAL_NZ;
    Check("format.query", c);
    c = Bsnd();
    c.dq.dtype = ACL_FLOAT16;
    Check("out.dtype.dQuery", c);
    c = Bsnd();
    c.dq = Arg({4, 64, 128});
    Check("out.shape.dQuery", c);
    c = Bsnd();
    c.dk = Arg({1, 8, 1, 128});
    Check("out.shape.dKey.numel", c);

    // Not validated by CANN 8.5: accepted.
    c = Bsnd();
    c.sparseMode = 5;
    Check("unchecked.sparse_mode", c);
    c = Bsnd();
    c.dy = Arg({1, 4, 64, 128});  // the doc's dy shape: topK becomes 128
    Check("unchecked.dy_shape", c);

    Baseline("baseline.bsnd", Bsnd(), stream);
    Baseline("baseline.bsnd.fp16", WithDtype(Bsnd(), ACL_FLOAT16), stream);
    Baseline("baseline.tnd", Tnd(), stream);
    c = Tnd();
    c.seqK = Arg();  // the kernel reads the key offsets through a null pointer
    Baseline("tnd.actual_seq_key", c, stream);

    TearDown(stream);
    return 0;
}
