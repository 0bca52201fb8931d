// aclnnFusedInferAttentionScoreV{2,3,4}GetMaxWorkspaceSize through the C ABI: the library exports
// them though no header declares them, so this program declares their prototypes itself, as a
// user does. Prints "<rule> <status>"; the pytest asserts every code, per chip (ACLNN_EMU_SOC).
#include <vector>

#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "common.h"

#define FIA_MAX_WORKSPACE_PARAMS                                                                                  \
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,      \
        const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,  \
        const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2,                    \
        const aclTensor *quantScale2, const aclTensor *quantOffset2, const aclTensor *antiquantScale,            \
        const aclTensor *antiquantOffset, const aclTensor *blockTable, const aclTensor *queryPaddingSize,        \
        const aclTensor *kvPaddingSize, const aclTensor *keyAntiquantScale, const aclTensor *keyAntiquantOffset, \
        const aclTensor *valueAntiquantScale, const aclTensor *valueAntiquantOffset,                             \
        const aclTensor *keySharedPrefix, const aclTensor *valueSharedPrefix,                                    \
        const aclIntArray *actualSharedPrefixLen

extern "C" {
aclnnStatus aclnnFusedInferAttentionScoreV2GetMaxWorkspaceSize(
    FIA_MAX_WORKSPACE_PARAMS, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode, int64_t valueAntiquantMode,
    const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFusedInferAttentionScoreV3GetMaxWorkspaceSize(
    FIA_MAX_WORKSPACE_PARAMS, const aclTensor *queryRope, const aclTensor *keyRope,
    const aclTensor *keyRopeAntiquantScale, int64_t numHeads, double scaleValue, int64_t preTokens,
    int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize,
    aclOpExecutor **executor);
aclnnStatus aclnnFusedInferAttentionScoreV4GetMaxWorkspaceSize(
    FIA_MAX_WORKSPACE_PARAMS, const aclTensor *queryRope, const aclTensor *keyRope,
    const aclTensor *keyRopeAntiquantScale, const aclTensor *dequantScaleQuery, const aclTensor *learnableSink,
    int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout,
    int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode,
    bool softmaxLseFlag, int64_t keyAntiquantMode, int64_t valueAntiquantMode, int64_t queryQuantMode,
    const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);
}

// Prefill, BNSD, D 128, GQA 8/2 (the FIA-V3 route on Atlas A2/A3), or decode over a paged cache.
struct Case {
    int version = 4;  // 0: V4's GetWorkspaceSize, for comparison
    bool paged = false, hasQ = true, hasWs = true;
    bool perBlock = false;  // FP8 E4M3 query, key and value with per-block scales (the quant modes 7)
    std::vector<int64_t> actQ, actKv;
    bool hasActQ = false, hasActKv = false;
    std::vector<int64_t> mask;  // attenMask's shape (BOOL), none when empty
    int64_t heads = 8, preTokens = 2147483647, nextTokens = 2147483647;
    int64_t blocks = 8;  // the paged cache's
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
};

// A one-tensor list over a pool tensor's memory (the list owns its own aclTensor, as it destroys it).
static aclTensorList *ListOf(aclTensor *t, const std::vector<int64_t> &shape, aclDataType dtype) {
    void *addr = nullptr;
    aclGetRawTensorAddr(t, &addr);
    std::vector<int64_t> strides = ContiguousStrides(shape);
    aclTensor *own = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND,
                                     shape.data(), shape.size(), addr);
    return aclCreateTensorList(&own, 1);
}

static int Call(Case &c, TensorPool &pool) {
    int64_t s1 = c.paged ? 1 : 64;
    aclDataType dtype = c.perBlock ? ACL_FLOAT8_E4M3FN : ACL_FLOAT16;
    aclTensor *q = c.hasQ ? pool({2, 8, s1, 128}, dtype) : nullptr;
    aclTensor *out = pool({2, 8, s1, 128}, ACL_FLOAT16);
    std::vector<int64_t> kvShape = c.paged ? std::vector<int64_t>{c.blocks, 2, 128, 128} : std::vector<int64_t>{2, 2, 80, 128};
    aclTensor *kv = pool(kvShape, dtype);
    aclTensor *qScale = c.perBlock ? pool({2, 8, 1, 1}, ACL_FLOAT) : nullptr;
    aclTensor *kvScale = c.perBlock ? pool({2, 2, 1, 1}, ACL_FLOAT) : nullptr;
    int64_t mode = c.perBlock ? 7 : 0;
    aclTensor *table = c.paged ? pool({2, 4}, ACL_INT32, {0, 1, 2, 3, 4, 5, 6, 7}) : nullptr;
    aclTensor *mask = c.mask.empty() ? nullptr : pool(c.mask, ACL_BOOL);
    aclTensorList *k = ListOf(kv, kvShape, dtype);
    aclTensorList *v = ListOf(kv, kvShape, dtype);
    aclIntArray *actQ = c.hasActQ ? aclCreateIntArray(c.actQ.data(), c.actQ.size()) : nullptr;
    aclIntArray *actKv = c.hasActKv ? aclCreateIntArray(c.actKv.data(), c.actKv.size()) : nullptr;
    char layout[] = "BNSD";
    int64_t block = c.paged ? 128 : 0;
    uint64_t *ws = c.hasWs ? &c.ws : nullptr;
    int ret;
    if (c.version == 2) {
        ret = aclnnFusedInferAttentionScoreV2GetMaxWorkspaceSize(
            q, k, v, nullptr, mask, actQ, actKv, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            table, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, c.heads, 0.088,
            c.preTokens, c.nextTokens, layout, 2, 0, 1, block, 0, false, 0, 0, out, nullptr, ws, &c.ex);
    } else if (c.version == 3) {
        ret = aclnnFusedInferAttentionScoreV3GetMaxWorkspaceSize(
            q, k, v, nullptr, mask, actQ, actKv, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            table, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
            nullptr, c.heads, 0.088, c.preTokens, c.nextTokens, layout, 2, 0, 1, block, 0, false, 0, 0, out, nullptr, ws,
            &c.ex);
    } else {
        auto phase1 = c.version == 4 ? aclnnFusedInferAttentionScoreV4GetMaxWorkspaceSize
                                     : aclnnFusedInferAttentionScoreV4GetWorkspaceSize;
        ret = phase1(q, k, v, nullptr, mask, actQ, actKv, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                     nullptr, table, nullptr, nullptr, kvScale, nullptr, kvScale, nullptr, nullptr, nullptr, nullptr,
                     nullptr, nullptr, nullptr, qScale, nullptr, c.heads, 0.088, c.preTokens, c.nextTokens, layout, 2,
                     0, 1, block, 0, false, mode, mode, mode, out, nullptr, ws, &c.ex);
    }
    if (actQ) aclDestroyIntArray(actQ);
    if (actKv) aclDestroyIntArray(actKv);
    aclDestroyTensorList(k);
    aclDestroyTensorList(v);
    return ret;
}

// The status of a call whose executor is then destroyed, as op-plugin's EXEC_GET_MAX_WORKSPACE_CMD does.
static int Status(Case c) {
    TensorPool pool;
    int ret = Call(c, pool);
    if (ret == 0 && aclDestroyAclOpExecutor(c.ex) != 0) return -1;
    return ret;
}

int main() {
    aclrtStream stream = nullptr;
    if (SetUp(&stream) != 0) return 1;
    Case c;
    REPORT("ok.v4", Status(c));
    c = Case(); c.version = 3; REPORT("ok.v3", Status(c));
    c = Case(); c.version = 2; REPORT("ok.v2", Status(c));
    {  // the same workspace as GetWorkspaceSize asks for the same call
        TensorPool pool;
        Case max, plain;
        plain.version = 0;
        int ret = Call(max, pool) | Call(plain, pool);
        REPORT("ok.same_size", ret != 0 ? ret : max.ws == plain.ws ? 0 : -1);
        aclDestroyAclOpExecutor(max.ex);
        aclDestroyAclOpExecutor(plain.ex);
    }
    // Launched, the executor would read lengths without data (FakeArray): the stream fails.
    {
        TensorPool pool;
        c = Case(); c.hasActKv = true; c.actKv = {80, 80};
        int ret = Call(c, pool);
        REPORT("launched", RunPhase2(stream, ret, c.ws, c.ex, aclnnFusedInferAttentionScoreV4));
    }
    // The generated entry point's NULL checks.
    c = Case(); c.hasQ = false; REPORT("null.query", Status(c));
    c = Case(); c.hasWs = false; REPORT("null.workspaceSize", Status(c));
    c = Case(); c.heads = 0; REPORT("tiling.heads_zero", Status(c));
    if (!OnA2()) {
        // PromptFlashAttentionTilingV2::CheckPATypeAndShape under isMaxWorkspace (a length given without
        // data, GetMaxWorkspaceFlag): S2 is the table's capacity, CheckBlockTableShape is skipped.
        c = Case(); c.paged = true; c.hasActKv = true; c.actKv = {300, 90}; REPORT("arch35.ok.paged", Status(c));
        c.blocks = 2; REPORT("arch35.ok.paged_blocks_unread", Status(c));
        c.version = 0; REPORT("arch35.tiling.paged_blocks_plain", Status(c));  // CheckPACacheShape
        // no length at all: isMaxWorkspace is false and CheckPATypeAndShape wants the key lengths
        c = Case(); c.paged = true; REPORT("arch35.tiling.paged_no_kv_lengths", Status(c));
        // per-block full quant: CheckPerblockCrossover refuses actual lengths only when they hold data
        c = Case(); c.perBlock = true; c.hasActKv = true; c.actKv = {80, 80}; REPORT("arch35.ok.per_block_lengths", Status(c));
        c.version = 0; REPORT("arch35.tiling.per_block_lengths_plain", Status(c));
    }
    if (OnA2()) {
        // isMaxWorkspace: the lengths are there, their values unread (CheckFeatureActualSeqLens{Q,Kv}Data).
        c = Case(); c.hasActKv = true; c.actKv = {81, -1}; REPORT("a2.ok.kv_lengths_unread", Status(c));
        c.version = 0; REPORT("a2.tiling.kv_lengths_plain", Status(c));
        c = Case(); c.hasActQ = true; c.actQ = {65, 64}; REPORT("a2.ok.q_lengths_unread", Status(c));
        c = Case(); c.paged = true; c.hasActKv = true; c.actKv = {600, 90}; REPORT("a2.ok.paged", Status(c));
        // CheckAttentionMask compares no sparse 0/1 mask shape then; CheckTokens still runs.
        c = Case(); c.hasActKv = true; c.actKv = {80, 80}; c.mask = {2, 32, 80};
        REPORT("a2.ok.mask_shape_unread", Status(c));
        c.mask = {64, 80}; c.preTokens = -10; c.nextTokens = 5; REPORT("a2.tiling.tokens_window", Status(c));
        // CheckFeatureActualSeqLensExistence still wants the key lengths of a paged cache.
        c = Case(); c.paged = true; REPORT("a2.tiling.paged_no_kv_lengths", Status(c));
    }
    return 0;
}
