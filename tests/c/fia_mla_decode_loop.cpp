// An MLA decode loop through the C ABI: the latent keys (D 512, which serve as the values too) and
// their rope parts (D 64) of a batch of prompts go into two paged caches with ScatterPaKvCache (key
// and value of one call), then each step scatters its new token and calls
// FusedInferAttentionScoreV3 with queryRope/keyRope over the caches (BSND, one KV head, 32 query
// heads, blockTable). argv[1] is a directory: the program writes the host inputs and every output
// there (bf16 bits, raw); tests/test_fia_mla_decode_loop.py checks each step against dense attention.
#include <string>

#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"
#include "serving_data.h"

namespace {
const int64_t B = 2, N = 32, D = 512, DR = 64, BLOCK = 16, STEPS = 3;
const int64_t LENS[B] = {37, 12};
const int64_t S_TOTAL = 37 + STEPS, MAX_BLOCKS = (S_TOTAL + BLOCK - 1) / BLOCK, BLOCKS = B * MAX_BLOCKS + 1;
const double SCALE = 0.041666666666666664;  // 1 / sqrt(D + DR)

// fp16 LCG values re-encoded as bf16 bits (the kernels take bf16).
std::vector<uint16_t> Bf16Values(size_t n, uint32_t seed) {
    std::vector<uint16_t> out = Values(n, seed);
    for (auto &x : out) {
        float f = aclFloat16ToFloat(x);
        uint32_t bits;
        memcpy(&bits, &f, 4);
        x = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    }
    return out;
}

// Batch b's j-th block is (5 * (b * MAX_BLOCKS + j) + 1) % BLOCKS: scattered, never the spare one.
int32_t BlockOf(int64_t b, int64_t position) {
    return static_cast<int32_t>((5 * (b * MAX_BLOCKS + position / BLOCK) + 1) % BLOCKS);
}

struct Caches {
    DeviceTensor latent, rope;  // [BLOCKS, BLOCK, D] and [BLOCKS, BLOCK, DR]
    aclTensor *latentRows = nullptr, *ropeRows = nullptr;  // the same memory as [BLOCKS, BLOCK, 1, *]

    int Create() {
        int ret = latent.Create(std::vector<uint16_t>(BLOCKS * BLOCK * D, 0), {BLOCKS, BLOCK, D}, ACL_BF16);
        if (ret == 0) ret = rope.Create(std::vector<uint16_t>(BLOCKS * BLOCK * DR, 0), {BLOCKS, BLOCK, DR}, ACL_BF16);
        latentRows = View(latent.addr, D);
        ropeRows = View(rope.addr, DR);
        return ret;
    }

    static aclTensor *View(void *addr, int64_t d) {
        std::vector<int64_t> shape = {BLOCKS, BLOCK, 1, d}, strides = ContiguousStrides(shape);
        return aclCreateTensor(shape.data(), 4, ACL_BF16, strides.data(), 0, ACL_FORMAT_ND, shape.data(), 4, addr);
    }

    // Tokens (b, position) of the whole-sequence arrays [B, S_TOTAL, D] / [B, S_TOTAL, DR].
    int Scatter(aclrtStream stream, const std::vector<uint16_t> &c, const std::vector<uint16_t> &r,
                const std::vector<std::pair<int64_t, int64_t>> &tokens) {
        std::vector<uint16_t> cRows, rRows;
        std::vector<int32_t> slots;
        for (auto &bp : tokens) {
            int64_t at = bp.first * S_TOTAL + bp.second;
            cRows.insert(cRows.end(), c.begin() + at * D, c.begin() + (at + 1) * D);
            rRows.insert(rRows.end(), r.begin() + at * DR, r.begin() + (at + 1) * DR);
            slots.push_back(BlockOf(bp.first, bp.second) * BLOCK + static_cast<int32_t>(bp.second % BLOCK));
        }
        int64_t t = static_cast<int64_t>(tokens.size());
        DeviceTensor ct, rt, st;
        int ret = ct.Create(cRows, {t, 1, D}, ACL_BF16);
        if (ret == 0) ret = rt.Create(rRows, {t, 1, DR}, ACL_BF16);
        if (ret == 0) ret = st.Create(slots, {t}, ACL_INT32);
        if (ret != 0) return ret;
        uint64_t size = 0;
        aclOpExecutor *executor = nullptr;
        ret = aclnnScatterPaKvCacheGetWorkspaceSize(ct.tensor, latentRows, st.tensor, rt.tensor, ropeRows, nullptr,
                                                    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &size,
                                                    &executor);
        return RunPhase2(stream, ret, size, executor, aclnnScatterPaKvCache);
    }

    ~Caches() {
        if (latentRows) aclDestroyTensor(latentRows);
        if (ropeRows) aclDestroyTensor(ropeRows);
    }
};

int Decode(aclrtStream stream, Caches &caches, const std::vector<uint16_t> &q, const std::vector<uint16_t> &qr,
           int64_t step, std::vector<uint16_t> &out) {
    std::vector<int32_t> table;
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < MAX_BLOCKS; j++) table.push_back(BlockOf(b, j * BLOCK));
    DeviceTensor qt, qrt, ot, tt;
    int ret = qt.Create(q, {B, 1, N, D}, ACL_BF16);
    if (ret == 0) ret = qrt.Create(qr, {B, 1, N, DR}, ACL_BF16);
    if (ret == 0) ret = ot.Create({B, 1, N, D}, ACL_BF16);
    if (ret == 0) ret = tt.Create(table, {B, MAX_BLOCKS}, ACL_INT32);
    if (ret != 0) return ret;
    aclTensorList *keys = ListOf(caches.latent.addr, {BLOCKS, BLOCK, D}, ACL_BF16);
    aclTensorList *values = ListOf(caches.latent.addr, {BLOCKS, BLOCK, D}, ACL_BF16);
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < B; b++) lens.push_back(LENS[b] + step + 1);
    aclIntArray *act = aclCreateIntArray(lens.data(), B);
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    ret = aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
        qt.tensor, keys, values, nullptr, nullptr, nullptr, act, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
        nullptr, tt.tensor, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, qrt.tensor,
        caches.rope.tensor, nullptr, N, SCALE, 2147483647, 2147483647, const_cast<char *>("BSND"), 1, 0, 1, BLOCK, 0,
        false, 0, 0, ot.tensor, nullptr, &size, &executor);
    ret = RunPhase2(stream, ret, size, executor, aclnnFusedInferAttentionScoreV3);
    aclDestroyIntArray(act);
    aclDestroyTensorList(keys);
    aclDestroyTensorList(values);
    return ret ? ret : ot.Read(out);
}
}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    aclrtStream stream;
    CHECK_OK(SetUp(&stream));
    {
        std::vector<uint16_t> c = Bf16Values(B * S_TOTAL * D, 7), r = Bf16Values(B * S_TOTAL * DR, 8), out;
        Save(dir, "latent.bin", c);
        Save(dir, "rope.bin", r);
        Caches caches;
        CHECK_OK(caches.Create());
        std::vector<std::pair<int64_t, int64_t>> tokens;
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < LENS[b]; s++) tokens.push_back({b, s});
        CHECK_OK(caches.Scatter(stream, c, r, tokens));
        for (int64_t step = 0; step < STEPS; step++) {
            tokens.clear();
            for (int64_t b = 0; b < B; b++) tokens.push_back({b, LENS[b] + step});
            CHECK_OK(caches.Scatter(stream, c, r, tokens));
            std::vector<uint16_t> q = Bf16Values(B * N * D, 50 + static_cast<uint32_t>(step));
            std::vector<uint16_t> qr = Bf16Values(B * N * DR, 60 + static_cast<uint32_t>(step));
            Save(dir, "q_step" + std::to_string(step) + ".bin", q);
            Save(dir, "qr_step" + std::to_string(step) + ".bin", qr);
            CHECK_OK(Decode(stream, caches, q, qr, step, out));
            Save(dir, "out_step" + std::to_string(step) + ".bin", out);
        }
    }
    TearDown(stream);
    printf("done\n");
    return 0;
}
