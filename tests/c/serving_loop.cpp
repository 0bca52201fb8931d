// An LLM serving loop through the C ABI: prefill a batch of prompts of different lengths with
// PromptFlashAttentionV2, scatter their keys and values into a paged cache with ScatterPaKvCache,
// then decode several steps with IncreFlashAttentionV4, scattering each new token first; with
// argv[3] "fia" both attention steps call FusedInferAttentionScoreV4 instead (on Atlas A2/A3 its
// FIA-V3 kernels: D 64, fp16, query dtype = key dtype), and on Atlas A2/A3 a last prefix-cache
// prefill follows: a chunk of new tokens per batch, scattered, then attended by a packed TND query
// (causal, sparse mode 3) over the paged cache, whose key lengths are each batch's own.
// argv[1] is the cache layout: "blocks_h" (blocknum, blocksize, H), scattered as [T, N2, D] rows, or
// "blocks_n_d" (blocknum, KV_N, blocksize, D), scattered as [T * N2, 1, D] rows into the cache seen
// as [blocknum * KV_N, blocksize, 1, D]. argv[2] is a directory; the program writes the host inputs
// and every output there (fp16, raw) and tests/test_serving_loop.py checks each against dense
// attention over the full sequence.
#include <algorithm>
#include <string>

#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"
#include "serving_data.h"

namespace {
const int64_t B = 3, N = 4, N2 = 2, D = 64, BLOCK = 16, STEPS = 4;
const int64_t LENS[B] = {5, 23, 12};
const int64_t CHUNK[B] = {3, 6, 2}, S_CHUNK = 6, T_CHUNK = 11;  // the chunked prefill's new tokens per batch
const int64_t S_PROMPT = 23, S_TOTAL = S_PROMPT + STEPS + S_CHUNK, MAX_BLOCKS = (S_TOTAL + BLOCK - 1) / BLOCK;
const int64_t BLOCKS = B * MAX_BLOCKS + 1;            // one spare block nobody uses
const double SCALE = 0.125;                            // 1 / sqrt(D)
bool g_fia = false;                                   // attention through FusedInferAttentionScoreV4

// FusedInferAttentionScoreV4 with the parameters a serving stack sets; no softmaxLse.
int Fia(aclrtStream stream, aclTensor *q, aclTensorList *keys, aclTensorList *values, aclTensor *mask,
        aclIntArray *actQ, aclIntArray *actKv, aclTensor *table, int64_t nextTokens, const char *layout,
        int64_t blockSize, aclTensor *out, int64_t sparseMode = 0) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
        q, keys, values, nullptr, mask, actQ, actKv, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        table, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, N, SCALE, 2147483647, nextTokens, const_cast<char *>(layout), N2, sparseMode, 1, blockSize,
        0, false, 0, 0, 0, out, nullptr, &size, &executor);
    return RunPhase2(stream, ret, size, executor, aclnnFusedInferAttentionScoreV4);
}

struct Cache {
    bool headsMajor;
    DeviceTensor key, value;                 // the caches in the IFA layout
    aclTensor *scatterKey = nullptr, *scatterValue = nullptr;   // the same memory as scatter sees it
    std::vector<int32_t> table;              // [B, MAX_BLOCKS]

    int Create(bool major) {
        headsMajor = major;
        std::vector<int64_t> shape = major ? std::vector<int64_t>{BLOCKS, N2, BLOCK, D}
                                           : std::vector<int64_t>{BLOCKS, BLOCK, N2 * D};
        std::vector<uint16_t> zeros(BLOCKS * BLOCK * N2 * D, 0);
        int ret = key.Create(zeros, shape, ACL_FLOAT16);
        if (ret == 0) ret = value.Create(zeros, shape, ACL_FLOAT16);
        std::vector<int64_t> view = major ? std::vector<int64_t>{BLOCKS * N2, BLOCK, 1, D}
                                          : std::vector<int64_t>{BLOCKS, BLOCK, N2, D};
        std::vector<int64_t> strides = ContiguousStrides(view);
        scatterKey = aclCreateTensor(view.data(), 4, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, view.data(), 4,
                                     key.addr);
        scatterValue = aclCreateTensor(view.data(), 4, ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, view.data(), 4,
                                       value.addr);
        // Blocks handed out in a scrambled order: batch b's j-th block is (3 * (b * MAX_BLOCKS + j) + 2) % BLOCKS.
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < MAX_BLOCKS; j++)
                table.push_back(static_cast<int32_t>((3 * (b * MAX_BLOCKS + j) + 2) % BLOCKS));
        return ret;
    }

    // Scatter rows [T, N2, D] of keys and values for (batch, position) pairs.
    int Scatter(aclrtStream stream, const std::vector<uint16_t> &k, const std::vector<uint16_t> &v,
                const std::vector<std::pair<int64_t, int64_t>> &tokens) {
        int64_t t = static_cast<int64_t>(tokens.size());
        std::vector<int32_t> slots;
        for (auto &bp : tokens) {
            int64_t block = table[bp.first * MAX_BLOCKS + bp.second / BLOCK], offset = bp.second % BLOCK;
            if (headsMajor) {
                for (int64_t n = 0; n < N2; n++) slots.push_back(static_cast<int32_t>((block * N2 + n) * BLOCK + offset));
            } else {
                slots.push_back(static_cast<int32_t>(block * BLOCK + offset));
            }
        }
        std::vector<int64_t> rows = headsMajor ? std::vector<int64_t>{t * N2, 1, D} : std::vector<int64_t>{t, N2, D};
        DeviceTensor keyRows, valueRows, slotTensor;
        int ret = keyRows.Create(k, rows, ACL_FLOAT16);
        if (ret == 0) ret = valueRows.Create(v, rows, ACL_FLOAT16);
        if (ret == 0) ret = slotTensor.Create(slots, {static_cast<int64_t>(slots.size())}, ACL_INT32);
        if (ret != 0) return ret;
        uint64_t size = 0;
        aclOpExecutor *executor = nullptr;
        ret = aclnnScatterPaKvCacheGetWorkspaceSize(keyRows.tensor, scatterKey, slotTensor.tensor, valueRows.tensor,
                                                    scatterValue, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                    nullptr, nullptr, &size, &executor);
        return RunPhase2(stream, ret, size, executor, aclnnScatterPaKvCache);
    }

    ~Cache() {
        if (scatterKey) aclDestroyTensor(scatterKey);
        if (scatterValue) aclDestroyTensor(scatterValue);
    }
};

// Element [b][s][n][d] of a BSND host array.
uint16_t At(const std::vector<uint16_t> &x, int64_t s_len, int64_t heads, int64_t b, int64_t s, int64_t n, int64_t d) {
    return x[((b * s_len + s) * heads + n) * D + d];
}

int Prefill(aclrtStream stream, const std::vector<uint16_t> &q, const std::vector<uint16_t> &k,
            const std::vector<uint16_t> &v, std::vector<uint16_t> &out) {
    // BSND: query [B, S, N, D], key/value [B, S, N2, D] (the first S_PROMPT positions of the sequence).
    std::vector<uint16_t> kp, vp;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S_PROMPT; s++)
            for (int64_t n = 0; n < N2; n++)
                for (int64_t d = 0; d < D; d++) {
                    kp.push_back(At(k, S_TOTAL, N2, b, s, n, d));
                    vp.push_back(At(v, S_TOTAL, N2, b, s, n, d));
                }
    std::vector<uint8_t> mask(S_PROMPT * S_PROMPT);
    for (int64_t i = 0; i < S_PROMPT; i++)
        for (int64_t j = 0; j < S_PROMPT; j++) mask[i * S_PROMPT + j] = j > i;
    DeviceTensor qt, kt, vt, mt, ot;
    int ret = qt.Create(q, {B, S_PROMPT, N, D}, ACL_FLOAT16);
    if (ret == 0) ret = kt.Create(kp, {B, S_PROMPT, N2, D}, ACL_FLOAT16);
    if (ret == 0) ret = vt.Create(vp, {B, S_PROMPT, N2, D}, ACL_FLOAT16);
    if (ret == 0) ret = mt.Create(mask, {S_PROMPT, S_PROMPT}, ACL_BOOL);
    if (ret == 0) ret = ot.Create({B, S_PROMPT, N, D}, ACL_FLOAT16);
    if (ret != 0) return ret;
    std::vector<int64_t> lens(LENS, LENS + B);
    aclIntArray *act = aclCreateIntArray(lens.data(), B);
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    if (g_fia) {
        aclTensorList *keys = ListOf(kt.addr, {B, S_PROMPT, N2, D}), *values = ListOf(vt.addr, {B, S_PROMPT, N2, D});
        ret = Fia(stream, qt.tensor, keys, values, mt.tensor, act, act, nullptr, 0, "BSND", 0, ot.tensor);
        aclDestroyTensorList(keys);
        aclDestroyTensorList(values);
    } else {
        ret = aclnnPromptFlashAttentionV2GetWorkspaceSize(qt.tensor, kt.tensor, vt.tensor, nullptr, mt.tensor, act,
                                                          act, nullptr, nullptr, nullptr, nullptr, nullptr, N, SCALE,
                                                          2147483647, 0, const_cast<char *>("BSND"), N2, 0, ot.tensor,
                                                          &size, &executor);
        ret = RunPhase2(stream, ret, size, executor, aclnnPromptFlashAttentionV2);
    }
    aclDestroyIntArray(act);
    return ret ? ret : ot.Read(out);
}

int Decode(aclrtStream stream, Cache &cache, const std::vector<uint16_t> &q, int64_t step, std::vector<uint16_t> &out) {
    DeviceTensor qt, ot, table;
    int ret = qt.Create(q, {B, N, 1, D}, ACL_FLOAT16);
    if (ret == 0) ret = ot.Create({B, N, 1, D}, ACL_FLOAT16);
    if (ret == 0) ret = table.Create(cache.table, {B, MAX_BLOCKS}, ACL_INT32);
    if (ret != 0) return ret;
    std::vector<int64_t> shape = cache.headsMajor ? std::vector<int64_t>{BLOCKS, N2, BLOCK, D}
                                                  : std::vector<int64_t>{BLOCKS, BLOCK, N2 * D};
    aclTensorList *keys = ListOf(cache.key.addr, shape), *values = ListOf(cache.value.addr, shape);
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < B; b++) lens.push_back(LENS[b] + step + 1);
    aclIntArray *act = aclCreateIntArray(lens.data(), B);
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    if (g_fia) {
        ret = Fia(stream, qt.tensor, keys, values, nullptr, nullptr, act, table.tensor, 2147483647, "BNSD", BLOCK,
                  ot.tensor);
    } else {
        ret = aclnnIncreFlashAttentionV4GetWorkspaceSize(qt.tensor, keys, values, nullptr, nullptr, act, nullptr,
                                                         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                         table.tensor, nullptr, N, SCALE, const_cast<char *>("BNSD"),
                                                         N2, BLOCK, 1, ot.tensor, &size, &executor);
        ret = RunPhase2(stream, ret, size, executor, aclnnIncreFlashAttentionV4);
    }
    aclDestroyIntArray(act);
    aclDestroyTensorList(keys);
    aclDestroyTensorList(values);
    return ret ? ret : ot.Read(out);
}

// The chunked prefill: TND query [T_CHUNK, N, D] (batch b's CHUNK[b] rows after those of the batches
// before it), key lengths LENS[b] + STEPS + CHUNK[b] per batch, the 2048 x 2048 causal mask.
int ChunkPrefill(aclrtStream stream, Cache &cache, const std::vector<uint16_t> &q, std::vector<uint16_t> &out) {
    DeviceTensor qt, ot, table, mt;
    std::vector<uint8_t> mask(2048 * 2048);
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t j = 0; j < 2048; j++) mask[i * 2048 + j] = j > i;
    int ret = qt.Create(q, {T_CHUNK, N, D}, ACL_FLOAT16);
    if (ret == 0) ret = ot.Create({T_CHUNK, N, D}, ACL_FLOAT16);
    if (ret == 0) ret = table.Create(cache.table, {B, MAX_BLOCKS}, ACL_INT32);
    if (ret == 0) ret = mt.Create(mask, {2048, 2048}, ACL_BOOL);
    if (ret != 0) return ret;
    std::vector<int64_t> shape = cache.headsMajor ? std::vector<int64_t>{BLOCKS, N2, BLOCK, D}
                                                  : std::vector<int64_t>{BLOCKS, BLOCK, N2 * D};
    aclTensorList *keys = ListOf(cache.key.addr, shape), *values = ListOf(cache.value.addr, shape);
    std::vector<int64_t> ends, lens;
    for (int64_t b = 0, end = 0; b < B; b++) {
        ends.push_back(end += CHUNK[b]);
        lens.push_back(LENS[b] + STEPS + CHUNK[b]);
    }
    aclIntArray *actQ = aclCreateIntArray(ends.data(), B), *actKv = aclCreateIntArray(lens.data(), B);
    ret = Fia(stream, qt.tensor, keys, values, mt.tensor, actQ, actKv, table.tensor, 0, "TND", BLOCK, ot.tensor, 3);
    aclDestroyIntArray(actQ);
    aclDestroyIntArray(actKv);
    aclDestroyTensorList(keys);
    aclDestroyTensorList(values);
    return ret ? ret : ot.Read(out);
}
}  // namespace

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) return 2;
    const std::string layout = argv[1], dir = argv[2];
    g_fia = argc == 4 && std::string(argv[3]) == "fia";
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    printf("soc %s\n", aclrtGetSocName());
    {
        // The whole sequence's keys and values [B, S_TOTAL, N2, D]; prompts use the first LENS[b].
        std::vector<uint16_t> k = Values(B * S_TOTAL * N2 * D, 1), v = Values(B * S_TOTAL * N2 * D, 2);
        std::vector<uint16_t> qPrompt = Values(B * S_PROMPT * N * D, 3), out;
        Save(dir, "k.bin", k);
        Save(dir, "v.bin", v);
        Save(dir, "q_prefill.bin", qPrompt);
        CHECK_OK(Prefill(stream, qPrompt, k, v, out));
        Save(dir, "out_prefill.bin", out);

        Cache cache;
        CHECK_OK(cache.Create(layout == "blocks_n_d"));
        std::vector<uint16_t> kRows, vRows;
        std::vector<std::pair<int64_t, int64_t>> tokens;
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < LENS[b]; s++) {
                tokens.push_back({b, s});
                for (int64_t n = 0; n < N2; n++)
                    for (int64_t d = 0; d < D; d++) {
                        kRows.push_back(At(k, S_TOTAL, N2, b, s, n, d));
                        vRows.push_back(At(v, S_TOTAL, N2, b, s, n, d));
                    }
            }
        CHECK_OK(cache.Scatter(stream, kRows, vRows, tokens));

        for (int64_t step = 0; step < STEPS; step++) {
            kRows.clear();
            vRows.clear();
            tokens.clear();
            for (int64_t b = 0; b < B; b++) {
                tokens.push_back({b, LENS[b] + step});
                for (int64_t n = 0; n < N2; n++)
                    for (int64_t d = 0; d < D; d++) {
                        kRows.push_back(At(k, S_TOTAL, N2, b, LENS[b] + step, n, d));
                        vRows.push_back(At(v, S_TOTAL, N2, b, LENS[b] + step, n, d));
                    }
            }
            CHECK_OK(cache.Scatter(stream, kRows, vRows, tokens));
            std::vector<uint16_t> q = Values(B * N * D, 100 + static_cast<uint32_t>(step));
            Save(dir, "q_step" + std::to_string(step) + ".bin", q);
            CHECK_OK(Decode(stream, cache, q, step, out));
            Save(dir, "out_step" + std::to_string(step) + ".bin", out);
        }
        if (g_fia && OnA2()) {  // Ascend910_95's PFA tiling wants blocks of 128 to 512 tokens for S > 1
            kRows.clear();
            vRows.clear();
            tokens.clear();
            for (int64_t b = 0; b < B; b++)
                for (int64_t i = 0; i < CHUNK[b]; i++) {
                    tokens.push_back({b, LENS[b] + STEPS + i});
                    for (int64_t n = 0; n < N2; n++)
                        for (int64_t d = 0; d < D; d++) {
                            kRows.push_back(At(k, S_TOTAL, N2, b, LENS[b] + STEPS + i, n, d));
                            vRows.push_back(At(v, S_TOTAL, N2, b, LENS[b] + STEPS + i, n, d));
                        }
                }
            CHECK_OK(cache.Scatter(stream, kRows, vRows, tokens));
            std::vector<uint16_t> q = Values(T_CHUNK * N * D, 200);
            Save(dir, "q_chunk.bin", q);
            CHECK_OK(ChunkPrefill(stream, cache, q, out));
            Save(dir, "out_chunk.bin", out);
            printf("chunk\n");
        }
    }
    TearDown(stream);
    printf("done\n");
    return 0;
}
