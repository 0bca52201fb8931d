// aclnnIncreFlashAttention V1, V2 and V3 through the C ABI: what each entry point passes the generated
// inner op (aclnn_incre_flash_attention.cpp, _v2.cpp, _v3.cpp), one call per rule. Prints
// "<rule> <status>"; the pytest asserts every code per chip family.
#include <string>

#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "op_case.h"

// BNSD decode: B 2, N 4, N2 2, S2 16, D 32.
struct Case {
    Spec q{{2, 4, 1, 32}, ACL_FLOAT16}, out{{2, 4, 1, 32}, ACL_FLOAT16};
    Spec k{{2, 2, 16, 32}, ACL_FLOAT16}, v{{2, 2, 16, 32}, ACL_FLOAT16};
    Spec pse, mask, quantScale2, antiquantScale, blocktable;
    std::vector<int64_t> act;
    bool hasAct = false, nullKey = false;
    int64_t blockSize = 0, innerPrecise = 1;
    Case() { pse.null = mask.null = quantScale2.null = antiquantScale.null = blocktable.null = true; }
};

struct Args {
    Tensors t;
    aclTensor *q, *out, *pse, *mask, *quantScale2, *antiquantScale, *blocktable;
    aclTensorList *k = nullptr, *v = nullptr;
    aclIntArray *act;
    char layout[5] = "BNSD";

    explicit Args(const Case &c)
        : q(t.Make(c.q)), out(t.Make(c.out)), pse(t.Make(c.pse)), mask(t.Make(c.mask)),
          quantScale2(t.Make(c.quantScale2)), antiquantScale(t.Make(c.antiquantScale)),
          blocktable(t.Make(c.blocktable)), act(c.hasAct ? aclCreateIntArray(c.act.data(), c.act.size()) : nullptr) {
        if (!c.nullKey) k = List(c.k);
        v = List(c.v);
    }
    ~Args() {
        if (act) aclDestroyIntArray(act);
        if (k) aclDestroyTensorList(k);
        if (v) aclDestroyTensorList(v);
    }
    // A list owns its tensors: give it a handle of its own on a device tensor the pool keeps.
    aclTensorList *List(const Spec &s) {
        void *addr = nullptr;
        aclGetRawTensorAddr(t.Make(s), &addr);
        std::vector<int64_t> strides = ContiguousStrides(s.shape);
        aclTensor *own = aclCreateTensor(s.shape.data(), s.shape.size(), s.dtype, strides.data(), 0, s.format,
                                         s.shape.data(), s.shape.size(), addr);
        return aclCreateTensorList(&own, 1);
    }
};

static int V1(const Case &c, aclrtStream stream) {
    Args a(c);
    return RunPhases(
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnIncreFlashAttentionGetWorkspaceSize(a.q, a.k, a.v, a.pse, a.mask, a.act, 4, 0.125, a.layout,
                                                            2, a.out, ws, ex);
        },
        aclnnIncreFlashAttention, stream);
}

static int V2(const Case &c, aclrtStream stream) {
    Args a(c);
    return RunPhases(
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnIncreFlashAttentionV2GetWorkspaceSize(a.q, a.k, a.v, a.pse, a.mask, a.act, nullptr, nullptr,
                                                              nullptr, a.quantScale2, nullptr, 4, 0.125, a.layout,
                                                              2, a.out, ws, ex);
        },
        aclnnIncreFlashAttentionV2, stream);
}

static int V3(const Case &c, aclrtStream stream) {
    Args a(c);
    return RunPhases(
        [&](uint64_t *ws, aclOpExecutor **ex) {
            return aclnnIncreFlashAttentionV3GetWorkspaceSize(
                a.q, a.k, a.v, a.pse, a.mask, a.act, nullptr, nullptr, nullptr, a.quantScale2, nullptr,
                a.antiquantScale, nullptr, a.blocktable, 4, 0.125, a.layout, 2, c.blockSize, c.innerPrecise, a.out,
                ws, ex);
        },
        aclnnIncreFlashAttentionV3, stream);
}

static Case Pse(std::vector<int64_t> shape = {2, 4, 1, 16}, aclDataType dtype = ACL_FLOAT16) {
    Case c;
    c.pse = Spec(shape, dtype);
    return c;
}

static Case PostQuant() {
    Case c;
    c.out.dtype = ACL_INT8;
    c.quantScale2 = Spec({1}, ACL_FLOAT);
    return c;
}

int main(int, char **) {
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    typedef int (*Entry)(const Case &, aclrtStream);
    const std::pair<const char *, Entry> entries[] = {{"v1", V1}, {"v2", V2}, {"v3", V3}};
    for (const auto &e : entries) {
        std::string p = std::string(e.first) + ".";
        Case c;
        REPORT((p + "ok").c_str(), e.second(c, stream));
        c = Case(); c.q.null = true; REPORT((p + "null.query").c_str(), e.second(c, stream));
        c = Case(); c.nullKey = true; REPORT((p + "null.key").c_str(), e.second(c, stream));
        c = Case(); c.mask = Spec({2, 1, 1, 16}, ACL_INT8); REPORT((p + "mask").c_str(), e.second(c, stream));
        c = Case(); c.hasAct = true; c.act = {9, 16}; REPORT((p + "actual_seq").c_str(), e.second(c, stream));
        c = Case(); c.hasAct = true; c.act = {9, 17}; REPORT((p + "actual_seq_range").c_str(), e.second(c, stream));
        c = Pse(); REPORT((p + "pse").c_str(), e.second(c, stream));
        c = Pse({2, 4, 1, 16}, ACL_FLOAT); REPORT((p + "pse_dtype").c_str(), e.second(c, stream));
        c = Pse({4, 1, 16}); REPORT((p + "pse_rank").c_str(), e.second(c, stream));
    }
    Case c = PostQuant(); REPORT("v2.post_quant", V2(c, stream));
    c = PostQuant(); REPORT("v3.post_quant", V3(c, stream));
    c = Case(); c.k = c.v = Spec({2, 2, 16, 32}, ACL_INT8); c.antiquantScale = Spec({2, 2, 1, 32}, ACL_FLOAT16);
    REPORT("v3.int8_antiquant", V3(c, stream));
    // Page attention: 6 blocks of 16 tokens, (blocknum, KV_N, blocksize, D).
    c = Case(); c.k = c.v = Spec({6, 2, 16, 32}, ACL_FLOAT16); c.blocktable = Spec({2, 3}, ACL_INT32, {0, 1, 2, 3, 4, 5});
    c.blockSize = 16; c.hasAct = true; c.act = {40, 7}; REPORT("v3.paged", V3(c, stream));
    for (int64_t precise : {0, 2, 4}) {
        c = Case(); c.innerPrecise = precise;
        REPORT(("v3.inner_precise" + std::to_string(precise)).c_str(), V3(c, stream));
    }
    TearDown(stream);
    return 0;
}
