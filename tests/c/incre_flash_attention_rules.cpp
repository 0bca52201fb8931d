// aclnnIncreFlashAttentionV4 through the C ABI: one failing call per validation rule, plus valid
// baselines (layouts, tensor lists, page attention, int8 key/value, int8 output). Prints
// "<rule> <status>"; the pytest asserts every code, per chip (ACLNN_EMU_SOC).
#include <map>
#include <string>

#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "common.h"

struct Spec {
    std::vector<int64_t> shape;
    aclDataType dtype;
    aclFormat format;
    std::vector<int64_t> values;   // INT32 / INT64 contents (cycled); others are zero
};

static Spec T(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16, std::vector<int64_t> values = {},
              aclFormat format = ACL_FORMAT_ND) {
    return Spec{shape, dtype, format, values};
}

static const char *const OPTIONAL_NAMES[] = {"pseShift", "attenMask", "dequantScale1", "quantScale1",
                                             "dequantScale2", "quantScale2", "quantOffset2", "antiquantScale",
                                             "antiquantOffset", "blocktable", "kvPaddingSize"};

struct Case {
    bool hasQ = true, hasK = true, hasV = true, hasOut = true;
    Spec q = T({2, 4, 1, 32}), out = T({2, 4, 1, 32});
    std::vector<Spec> k = {T({2, 2, 16, 32})}, v = {T({2, 2, 16, 32})};
    std::map<std::string, Spec> opt;         // present optional tensors by name
    std::vector<int64_t> act;
    bool hasAct = false;
    int64_t heads = 4, kvHeads = 2, blockSize = 0, innerPrecise = 1;
    double scale = 0.125;
    const char *layout = "BNSD";
    bool run = false;                        // also run phase 2 and synchronise (valid baselines)
};

static int Call(const Case &c, aclrtStream stream) {
    TensorPool pool;
    auto make = [&](const Spec &s) { return pool(s.shape, s.dtype, s.values, s.format); };
    auto list = [&](const std::vector<Spec> &specs) {
        std::vector<aclTensor *> items;
        for (const Spec &s : specs) items.push_back(make(s));
        // aclDestroyTensorList destroys the tensors too: give the list its own handles.
        std::vector<aclTensor *> own;
        for (size_t i = 0; i < items.size(); i++) {
            const Spec &s = specs[i];
            std::vector<int64_t> strides = ContiguousStrides(s.shape);
            void *addr = nullptr;
            aclGetRawTensorAddr(items[i], &addr);
            own.push_back(aclCreateTensor(s.shape.data(), s.shape.size(), s.dtype, strides.data(), 0, s.format,
                                          s.shape.data(), s.shape.size(), addr));
        }
        return aclCreateTensorList(own.data(), own.size());
    };
    aclTensor *q = c.hasQ ? make(c.q) : nullptr;
    aclTensor *out = c.hasOut ? make(c.out) : nullptr;
    aclTensorList *k = c.hasK ? list(c.k) : nullptr;
    aclTensorList *v = c.hasV ? list(c.v) : nullptr;
    aclTensor *opt[11] = {};
    for (int i = 0; i < 11; i++) {
        auto found = c.opt.find(OPTIONAL_NAMES[i]);
        if (found != c.opt.end()) opt[i] = make(found->second);
    }
    aclIntArray *act = c.hasAct ? aclCreateIntArray(c.act.data(), c.act.size()) : nullptr;
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    char *layout = c.layout ? const_cast<char *>(c.layout) : nullptr;
    int ret = aclnnIncreFlashAttentionV4GetWorkspaceSize(
        q, k, v, opt[0], opt[1], act, opt[2], opt[3], opt[4], opt[5], opt[6], opt[7], opt[8], opt[9], opt[10],
        c.heads, c.scale, layout, c.kvHeads, c.blockSize, c.innerPrecise, out, &workspaceSize, &executor);
    if (c.run) ret = RunPhase2(stream, ret, workspaceSize, executor, aclnnIncreFlashAttentionV4);
    if (act) aclDestroyIntArray(act);
    if (k) aclDestroyTensorList(k);
    if (v) aclDestroyTensorList(v);
    return ret;
}

static Case Ok() {
    Case c;
    c.run = true;
    return c;
}

static Case Bsh() {
    Case c = Ok();
    c.layout = "BSH";
    c.q = c.out = T({2, 1, 128});
    c.k = c.v = {T({2, 16, 64})};
    return c;
}

// Page attention: 6 blocks of 16 tokens, (blocknum, blocksize, H) or (blocknum, KV_N, blocksize, D).
static Case Paged(bool headsMajor) {
    Case c = Ok();
    c.k = c.v = {headsMajor ? T({6, 2, 16, 32}) : T({6, 16, 64})};
    c.opt["blocktable"] = T({2, 3}, ACL_INT32, {0, 1, 2, 3, 4, 5});
    c.blockSize = 16;
    c.hasAct = true;
    c.act = {40, 7};
    return c;
}

static Case Listed() {
    Case c = Ok();
    c.k = c.v = {T({1, 2, 9, 32}), T({1, 2, 13, 32})};
    return c;
}

static Case Int8Kv() {
    Case c = Ok();
    c.k = c.v = {T({2, 2, 16, 32}, ACL_INT8)};
    c.opt["antiquantScale"] = T({2, 2, 1, 32});
    return c;
}

// Page attention over an int8 cache: 6 blocks of 32 tokens (blockSize a multiple of 32 for int8).
static Case Int8Paged() {
    Case c = Paged(true);
    c.k = c.v = {T({6, 2, 32, 32}, ACL_INT8)};
    c.opt["antiquantScale"] = T({2, 2, 1, 32});
    c.blockSize = 32;
    return c;
}

static Case PostQuant() {
    Case c = Ok();
    c.out.dtype = ACL_INT8;
    c.opt["quantScale2"] = T({1}, ACL_FLOAT);
    return c;
}

// Page attention over a GQA key/value NZ cache [blocks, N2, D/32, blockSize, 32] with everything
// CheckGqaIOTensor asks for (int8 cache, BF16 query and output, D = 64); V4 still cannot pass the
// key/value antiquant scales CheckGqaAntiquantTensor requires.
static Case KvNz() {
    Case c = Ok();
    c.q = c.out = T({2, 4, 1, 64}, ACL_BF16);
    c.k = c.v = {T({6, 2, 2, 32, 32}, ACL_INT8)};
    c.opt["antiquantScale"] = T({2, 2, 1, 64}, ACL_BF16);
    c.opt["blocktable"] = T({2, 3}, ACL_INT32, {0, 1, 2, 3, 4, 5});
    c.blockSize = 32;
    c.hasAct = true;
    c.act = {40, 7};
    return c;
}

int main() {
    aclrtStream stream = nullptr;
    if (SetUp(&stream) != 0) return 1;
    Case c;
    // Valid calls.
    c = Ok(); REPORT("ok.BNSD", Call(c, stream));
    c = Ok(); c.layout = "BSND"; c.q = c.out = T({2, 1, 4, 32}); c.k = c.v = {T({2, 16, 2, 32})}; REPORT("ok.BSND", Call(c, stream));
    c = Bsh(); REPORT("ok.BSH", Call(c, stream));
    c = Bsh(); c.layout = "BSH_NBSD"; c.out = T({4, 2, 1, 32}); REPORT("ok.BSH_NBSD", Call(c, stream));
    c = Paged(false); REPORT("ok.paged_blocks_h", Call(c, stream));
    c = Paged(true); REPORT("ok.paged_blocks_n_d", Call(c, stream));
    c = Paged(false); c.layout = "BSH"; c.q = c.out = T({2, 1, 128}); REPORT("ok.paged_bsh", Call(c, stream));
    c = Listed(); REPORT("ok.tensor_list", Call(c, stream));
    c = Int8Kv(); REPORT("ok.int8_antiquant", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantScale"] = T({2}); c.opt["antiquantOffset"] = T({2}); REPORT("ok.int8_per_tensor", Call(c, stream));
    c = Int8Paged(); REPORT("ok.int8_paged", Call(c, stream));
    c = PostQuant(); REPORT("ok.post_quant", Call(c, stream));
    c = PostQuant(); c.opt["quantScale2"] = c.opt["quantOffset2"] = T({4, 32}, ACL_FLOAT); REPORT("ok.post_quant_per_channel", Call(c, stream));
    c = Ok(); c.opt["attenMask"] = T({2, 1, 1, 16}, ACL_BOOL); c.opt["pseShift"] = T({1, 4, 1, 16}); REPORT("ok.mask_pse", Call(c, stream));
    c = Ok(); c.opt["attenMask"] = T({2, 10}, ACL_UINT8); c.hasAct = true; c.act = {9, 3}; REPORT("ok.mask_covers_actual", Call(c, stream));
    c = Ok(); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {3}); c.hasAct = true; c.act = {5, 13}; REPORT("ok.kv_padding", Call(c, stream));
    c = Ok(); c.q.dtype = ACL_FLOAT; c.out = T({2, 4, 0, 32}); REPORT("ok.empty_out_before_dtype", Call(c, stream));
    // Generated entry point: NULLs (161001), kernel key (161002 required / 561003 optional).
    c = Ok(); c.hasQ = false; REPORT("null.query", Call(c, stream));
    c = Ok(); c.hasK = false; REPORT("null.key", Call(c, stream));
    c = Ok(); c.hasV = false; REPORT("null.value", Call(c, stream));
    c = Ok(); c.hasOut = false; REPORT("null.attentionOut", Call(c, stream));
    c = Ok(); c.q.dtype = c.out.dtype = ACL_FLOAT; REPORT("dtype.query", Call(c, stream));
    c = Ok(); c.out.dtype = ACL_FLOAT; REPORT("dtype.attentionOut", Call(c, stream));
    c = Listed(); c.k[1].dtype = ACL_INT8; REPORT("dtype.key_list_mixed", Call(c, stream));
    c = Ok(); c.k[0].format = ACL_FORMAT_FRACTAL_NZ; REPORT("dtype.key_format", Call(c, stream));
    c = Ok(); c.opt["pseShift"] = T({1, 4, 1, 16}, ACL_FLOAT); REPORT("kernel.pse_dtype", Call(c, stream));
    c = Ok(); c.opt["attenMask"] = T({2, 16}, ACL_FLOAT16); REPORT("kernel.mask_dtype", Call(c, stream));
    c = Paged(false); c.opt["blocktable"] = T({2, 3}, ACL_INT64); REPORT("kernel.blocktable_dtype", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantScale"] = T({2, 2, 1, 32}, ACL_FLOAT); REPORT("kernel.antiquant_fp32", Call(c, stream));
    c = PostQuant(); c.opt["quantScale2"] = T({1}, ACL_BF16); REPORT("kernel.quant2_bf16_fp16_query", Call(c, stream));
    // Query S in [2, 16] (GetRopeAndGqaFlag's gqaMtpFlag_): the S = 1 kernels run; ProcessAttenMask
    // checks no mask shape. SplitUnbalanced splitting the rows (S x G past 256) is refused (561003).
    c = Ok(); c.q = c.out = T({2, 4, 2, 32}); REPORT("ok.mtp", Call(c, stream));
    c = Bsh(); c.q = c.out = T({2, 3, 128}); c.opt["attenMask"] = T({1, 7}, ACL_BOOL); c.hasAct = true; c.act = {7, 5};
    REPORT("ok.mtp_bsh_any_mask", Call(c, stream));
    c = Ok(); c.heads = 64; c.q = c.out = T({2, 64, 16, 32}); REPORT("refused.mtp", Call(c, stream));
    c = Int8Kv(); c.heads = 64; c.q = c.out = T({2, 64, 8, 32}); REPORT("refused.mtp_int8", Call(c, stream));
    c = Ok(); c.heads = 64; c.q = c.out = T({2, 64, 8, 32}); REPORT("ok.mtp_g32_s8", Call(c, stream));
    // A batched key whose heads differ from numKeyValueHeads: CheckQKOutShape compares D only; the
    // kernel reads it by numKeyValueHeads, past its end when it is smaller (561003).
    c = Ok(); c.k = c.v = {T({2, 4, 16, 32})}; REPORT("ok.kv_heads_more", Call(c, stream));
    c = Ok(); c.k = c.v = {T({2, 1, 16, 32})}; REPORT("refused.kv_heads", Call(c, stream));
    // quantScale2 of rank 5+: CheckQuant2Shape has no rule for it; the kernel reads N x D values.
    c = PostQuant(); c.opt["quantScale2"] = T({1, 1, 1, 4, 32}, ACL_FLOAT); REPORT("ok.quant2_rank5", Call(c, stream));
    c = PostQuant(); c.opt["quantScale2"] = T({1, 1, 1, 4, 16}, ACL_FLOAT); REPORT("refused.quant2_rank", Call(c, stream));
    // The tiling (561002), in the source's order.
    c = Ok(); c.q = T({0, 4, 1, 32}); REPORT("tiling.query_empty", Call(c, stream));
    c = Ok(); c.heads = 0; REPORT("tiling.heads_zero", Call(c, stream));
    c = Ok(); c.kvHeads = 3; REPORT("tiling.kv_heads", Call(c, stream));
    c = Bsh(); c.heads = 3; c.kvHeads = 1; REPORT("tiling.bsh_h", Call(c, stream));
    c = Ok(); c.layout = "SBH"; REPORT("tiling.layout", Call(c, stream));
    c = Ok(); c.heads = 8; c.kvHeads = 2; REPORT("tiling.query_heads", Call(c, stream));
    c = Ok(); c.q = c.out = T({2, 4, 17, 32}); REPORT("tiling.query_s", Call(c, stream));
    c = Ok(); c.layout = "TND"; c.q = c.out = T({1, 4, 32}); c.k = c.v = {T({16, 2, 32})}; REPORT("tiling.tnd_rope", Call(c, stream));
    c = Ok(); c.layout = "TND"; c.q = c.out = T({1, 4, 512}); c.k = c.v = {T({16, 2, 512})}; REPORT("tiling.tnd_rope_d512", Call(c, stream));
    c = Ok(); c.innerPrecise = 2; REPORT("tiling.inner_precise", Call(c, stream));
    c = Paged(false); c.opt["blocktable"] = T({2, 0}, ACL_INT32); REPORT("tiling.blocktable_empty", Call(c, stream));
    c = Paged(true); c.layout = "BSND"; c.q = c.out = T({2, 1, 4, 32}); REPORT("tiling.pa_bnbd_layout", Call(c, stream));
    c = Listed(); c.q = c.out = T({3, 4, 1, 32}); REPORT("tiling.kv_list_short", Call(c, stream));
    c = Listed(); c.v[1] = T({1, 2, 12, 32}); REPORT("tiling.kv_shape_same", Call(c, stream));
    c = Listed(); c.layout = "BSH"; c.q = c.out = T({2, 1, 128}); c.k = c.v = {T({1, 9, 64}), T({1, 13, 2, 32})};
    REPORT("tiling.kv_list_rank", Call(c, stream));
    c = Listed(); c.k[1] = c.v[1] = T({2, 2, 13, 32}); c.q = c.out = T({3, 4, 1, 32});
    c.k.push_back(T({1, 2, 5, 32})); c.v.push_back(T({1, 2, 5, 32})); REPORT("tiling.kv_list_batch", Call(c, stream));
    c = Listed(); c.k[0] = c.v[0] = T({1, 4, 9, 32}); c.k[1] = c.v[1] = T({1, 4, 13, 32}); REPORT("tiling.kv_list_heads", Call(c, stream));
    c = Listed(); c.k[1] = c.v[1] = T({1, 2, 13, 16}); REPORT("tiling.kv_list_same", Call(c, stream));
    c = Bsh(); c.k = c.v = {T({2, 16, 2, 32})}; REPORT("tiling.bsh_dims", Call(c, stream));
    c = Bsh(); c.kvHeads = 0; c.k = c.v = {T({2, 16, 32})}; REPORT("tiling.bsh_d", Call(c, stream));
    // GetInOutLayout4BSH divides by the key's H (UB: SIGFPE on x86 hosts, 0 heads and 561002 on aarch64).
    c = Bsh(); c.k = c.v = {T({2, 16, 0})}; REPORT("tiling.bsh_h_zero", Call(c, stream));
    c = Ok(); c.out = T({2, 4, 32}); REPORT("tiling.bnsd_dims", Call(c, stream));
    c = Ok(); c.k = c.v = {T({2, 2, 16, 16})}; REPORT("tiling.bnsd_d", Call(c, stream));
    c = Ok(); c.q.format = ACL_FORMAT_NCL; REPORT("tiling.format", Call(c, stream));
    c = Ok(); c.heads = 130; c.kvHeads = 2; c.q = c.out = T({2, 130, 1, 32}); REPORT("tiling.group", Call(c, stream));
    c = Paged(false); c.blockSize = 24; REPORT("tiling.pa_block_align16", Call(c, stream));
    c = Paged(false); c.k = c.v = {T({6, 16, 64}, ACL_INT8)}; c.opt["antiquantScale"] = T({2, 64}); REPORT("tiling.pa_block_align32", Call(c, stream));
    c = Ok(); c.heads = c.kvHeads = 1; c.q = c.out = T({65537, 1, 1, 16}); c.k = c.v = {T({65537, 1, 1, 16})}; REPORT("tiling.batch", Call(c, stream));
    c = Ok(); c.q = c.out = T({2, 4, 1, 528}); c.k = c.v = {T({2, 2, 2, 528})}; REPORT("tiling.head_dim", Call(c, stream));
    c = Ok(); c.heads = c.kvHeads = 257; c.q = c.out = T({1, 257, 1, 16}); c.k = c.v = {T({1, 257, 2, 16})}; REPORT("tiling.kv_heads_max", Call(c, stream));
    c = Paged(false); c.hasAct = false; REPORT("tiling.actual_seq_null", Call(c, stream));
    c = Ok(); c.q = c.out = T({3, 4, 1, 32}); c.k = c.v = {T({3, 2, 16, 32})}; c.hasAct = true; c.act = {4, 4}; REPORT("tiling.actual_seq_len", Call(c, stream));
    c = Ok(); c.hasAct = true; c.act = {4, -1}; REPORT("tiling.actual_seq_negative", Call(c, stream));
    c = Ok(); c.hasAct = true; c.act = {17}; REPORT("tiling.actual_seq_range", Call(c, stream));
    c = Ok(); c.opt["pseShift"] = T({4, 1, 16}); REPORT("tiling.pse_rank", Call(c, stream));
    c = Ok(); c.opt["pseShift"] = T({1, 2, 1, 16}); REPORT("tiling.pse_shape", Call(c, stream));
    c = Ok(); c.opt["pseShift"] = T({2, 4, 1, 15}); REPORT("tiling.pse_s", Call(c, stream));
    c = Ok(); c.opt["attenMask"] = T({1, 16}, ACL_BOOL); REPORT("tiling.mask_batch", Call(c, stream));
    c = Ok(); c.opt["attenMask"] = T({2, 1, 1, 8}, ACL_BOOL); c.hasAct = true; c.act = {9, 3}; REPORT("tiling.mask_s", Call(c, stream));
    c = Ok(); c.opt["dequantScale1"] = T({1}, ACL_UINT64); REPORT("tiling.quant1.dequantScale1", Call(c, stream));
    c = Ok(); c.opt["quantScale1"] = T({1}, ACL_FLOAT); REPORT("tiling.quant1.quantScale1", Call(c, stream));
    c = Ok(); c.opt["dequantScale2"] = T({1}, ACL_UINT64); REPORT("tiling.quant1.dequantScale2", Call(c, stream));
    c = Ok(); c.opt["quantScale2"] = T({1}, ACL_FLOAT); REPORT("tiling.quant2.scale_present", Call(c, stream));
    c = Ok(); c.opt["quantOffset2"] = T({1}, ACL_FLOAT); REPORT("tiling.quant2.offset_present", Call(c, stream));
    c = PostQuant(); c.opt.erase("quantScale2"); REPORT("tiling.quant2.scale_null", Call(c, stream));
    c = PostQuant(); c.opt["quantScale2"] = T({4, 16}, ACL_FLOAT); REPORT("tiling.quant2.shape_quantScale2", Call(c, stream));
    c = PostQuant(); c.opt["quantOffset2"] = T({1, 2}, ACL_FLOAT); REPORT("tiling.quant2.shape_quantOffset2", Call(c, stream));
    c = Ok(); c.opt["antiquantScale"] = T({2}); REPORT("tiling.antiquant.unenabled", Call(c, stream));
    c = Int8Kv(); c.opt.erase("antiquantScale"); REPORT("tiling.antiquant.scale_null", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantOffset"] = T({2, 64}); REPORT("tiling.antiquant.rank_differ", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantScale"] = T({3}); REPORT("tiling.antiquant.per_tensor_antiquantScale", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantScale"] = T({1, 2, 2, 1, 32}); REPORT("tiling.antiquant.rank_antiquantScale", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantScale"] = T({2, 2, 32, 1}); REPORT("tiling.antiquant.per_channel_antiquantScale", Call(c, stream));
    c = Int8Kv(); c.opt["antiquantOffset"] = T({2, 4, 1, 16}); REPORT("tiling.antiquant.per_channel_antiquantOffset", Call(c, stream));
    c = Paged(false); c.heads = c.kvHeads = 256; c.q = c.out = T({2, 256, 1, 512}); c.k = c.v = {T({6, 16, 131072})};
    REPORT("tiling.pa_nd_stride", Call(c, stream));
    c = Paged(false); c.blockSize = 0; REPORT("tiling.pa_block_zero", Call(c, stream));
    c = Paged(false); c.blockSize = 528; REPORT("tiling.pa_block_max", Call(c, stream));
    c = Paged(false); c.act = {49, 7}; REPORT("tiling.pa_actual_seq", Call(c, stream));
    // Cases where Ascend910_95 (IFATilingV2 -> PromptFlashAttentionTilingV2) differs from Atlas A2/A3.
    c = Ok(); c.k = c.v = {T({2, 2, 0, 32})}; REPORT("arch35.empty_kv", Call(c, stream));
    c = Ok(); c.innerPrecise = 3; REPORT("arch35.inner_precise_3", Call(c, stream));
    c = Ok(); c.innerPrecise = 4; REPORT("arch35.inner_precise_4", Call(c, stream));
    c = PostQuant(); c.opt["quantScale2"] = T({128}, ACL_FLOAT); REPORT("arch35.quant2_rank1_per_channel", Call(c, stream));
    c = PostQuant(); c.opt["quantScale2"] = T({4, 32}, ACL_FLOAT); c.opt["quantOffset2"] = T({4, 16}, ACL_FLOAT);
    REPORT("arch35.quant2_offset_size", Call(c, stream));
    c = Paged(false); c.act = {40, -7}; REPORT("arch35.pa_actual_negative", Call(c, stream));
    c = Paged(true); c.q = c.out = T({2, 4, 2, 32}); REPORT("arch35.pa_block_multiple_128", Call(c, stream));
    c = Paged(true); c.k = c.v = {T({6, 2, 16, 16})}; REPORT("arch35.pa_cache_bnsd", Call(c, stream));
    c = Paged(false); c.opt["blocktable"] = T({2, 3, 1}, ACL_INT32, {0, 1, 2, 3, 4, 5}); REPORT("arch35.pa_table_rank", Call(c, stream));
    c = Paged(true); c.k = c.v = {T({6, 2, 2, 16, 16})}; REPORT("arch35.pa_nz", Call(c, stream));
    c = Paged(true); c.k = c.v = {T({6, 2, 4, 16, 16})}; REPORT("arch35.pa_nz_shape", Call(c, stream));
    c = Paged(false); c.act = {7}; REPORT("arch35.pa_one_length", Call(c, stream));
    c = Ok(); c.q = c.out = T({2, 4, 2, 32}); c.opt["attenMask"] = T({2, 1, 1, 16}, ACL_BOOL); REPORT("arch35.mask_rows", Call(c, stream));
    c = Ok(); c.kvHeads = -1; REPORT("arch35.heads_negative", Call(c, stream));
    c = Ok(); c.opt["pseShift"] = T({2, 4, 1, 16}); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {2});
    c.hasAct = true; c.act = {15, 4}; REPORT("arch35.kv_padding_no_room", Call(c, stream));
    c = Int8Kv(); c.innerPrecise = 2; REPORT("arch35.int8_inner_precise_2", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); REPORT("arch35.int8_query_s2", Call(c, stream));
    // A query S above 1 with an INT8 key on Ascend910_95 (isPFAFlag_): every row sees all its keys
    // unless a batch has fewer keys than the rows the core split walks (S, or S x G merged).
    c = Int8Kv(); c.q = c.out = T({2, 4, 8, 32}); c.hasAct = true; c.act = {16, 15};
    REPORT("arch35.int8_s8_merged_short", Call(c, stream));
    c = Int8Kv(); c.heads = 8; c.q = c.out = T({2, 8, 9, 32}); c.hasAct = true; c.act = {16, 9};
    REPORT("arch35.int8_s9_unmerged_fits", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.innerPrecise = 3; REPORT("arch35.int8_s2_inner_precise_3", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["antiquantScale"] = T({2, 1, 2, 32});
    REPORT("arch35.int8_s2_antiquant_1nd", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["attenMask"] = T({2, 2, 16}, ACL_BOOL);
    REPORT("arch35.int8_s2_mask", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["attenMask"] = T({2, 1, 16}, ACL_BOOL);
    REPORT("arch35.int8_s2_mask_rows", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["attenMask"] = T({2, 2, 2, 16}, ACL_BOOL);
    REPORT("arch35.int8_s2_mask_heads", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["pseShift"] = T({1, 4, 2, 16});
    REPORT("arch35.int8_s2_pse", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["pseShift"] = T({1, 4, 1, 16});
    REPORT("arch35.int8_s2_pse_rows", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {3}); c.hasAct = true;
    c.act = {5, 13}; REPORT("arch35.int8_s2_kv_padding", Call(c, stream));
    c = Int8Kv(); c.q = c.out = T({2, 4, 2, 32}); c.opt["antiquantScale"] = T({64});
    REPORT("arch35.int8_s2_antiquant_h", Call(c, stream));
    c = Int8Paged(); c.k = c.v = {T({6, 2, 2, 32, 16}, ACL_INT8)}; REPORT("arch35.int8_pa_nz", Call(c, stream));
    c = Int8Paged(); c.opt["kvPaddingSize"] = T({1}, ACL_INT64, {1}); REPORT("arch35.int8_pa_kv_padding", Call(c, stream));
    c = Int8Paged(); c.opt["blocktable"] = T({1, 6}, ACL_INT32, {0, 1, 2, 3, 4, 5}); REPORT("arch35.int8_pa_table_batch", Call(c, stream));
    c = Bsh(); c.k = c.v = {T({2, 16, 65})}; REPORT("arch35.bsh_h_remainder", Call(c, stream));
    c = Int8Kv(); c.k = c.v = {T({2, 3, 16, 32}, ACL_INT8)}; REPORT("arch35.int8_kv_heads_more", Call(c, stream));
    c = Int8Kv(); c.k = c.v = {T({2, 1, 16, 32}, ACL_INT8)}; REPORT("arch35.int8_kv_heads_fewer", Call(c, stream));
    // A 5-D key (gqaKvNZFlag_): CheckQKOutShape without page attention, then ProcessPseShift and
    // ProcessGqaKvNz (incre_flash_attention_tiling_check.cpp: CheckGqaIOTensor, CheckGqaAntiquantTensor).
    c = Ok(); c.k = c.v = {T({2, 2, 2, 16, 16})}; REPORT("tiling.kv_nz_not_paged", Call(c, stream));
    c = KvNz(); c.opt["pseShift"] = T({1, 4, 1, 32}, ACL_BF16); REPORT("tiling.kv_nz.pse", Call(c, stream));
    c = KvNz(); c.k = c.v = {T({6, 2, 2, 32, 32}, ACL_BF16)}; c.opt.erase("antiquantScale"); REPORT("tiling.kv_nz.antiquant", Call(c, stream));
    c = KvNz(); c.q.dtype = c.out.dtype = ACL_FLOAT16; c.opt["antiquantScale"].dtype = ACL_FLOAT16;
    REPORT("tiling.kv_nz.query_dtype", Call(c, stream));
    c = KvNz(); c.k = c.v = {T({6, 2, 1, 32, 32}, ACL_INT8)}; REPORT("tiling.kv_nz.shape", Call(c, stream));
    c = KvNz(); REPORT("tiling.kv_nz.antiquant_scale", Call(c, stream));
    TearDown(stream);
    return 0;
}
