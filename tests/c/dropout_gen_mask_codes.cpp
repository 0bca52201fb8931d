// aclnnDropoutGenMask / V2 through the C ABI: one "<rule> <code>" line per CheckParams rule and path,
// then "mask <byte> ..." for one generated mask. The chip comes from ACLNN_EMU_SOC;
// tests/test_dropout_gen_mask_cabi.py holds the codes per chip.
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "common.h"

namespace {
TensorPool T;
aclrtStream g_stream;

// Both phases of V2 and a synchronisation; the first non-zero code.
int CallV2(const std::vector<int64_t> &shape, double prob, aclDataType probDtype, aclTensor *out,
           bool nullShape = false) {
    aclIntArray *array = nullShape ? nullptr : aclCreateIntArray(shape.data(), shape.size());
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnDropoutGenMaskV2GetWorkspaceSize(array, prob, 7, 12, probDtype, out, &size, &executor);
    ret = RunPhase2(g_stream, ret, size, executor, aclnnDropoutGenMaskV2);
    if (array) aclDestroyIntArray(array);
    return ret;
}

int CallV1(const std::vector<int64_t> &shape, double prob, aclTensor *out) {
    aclIntArray *array = aclCreateIntArray(shape.data(), shape.size());
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    int ret = aclnnDropoutGenMaskGetWorkspaceSize(array, prob, 7, 12, out, &size, &executor);
    ret = RunPhase2(g_stream, ret, size, executor, aclnnDropoutGenMask);
    aclDestroyIntArray(array);
    return ret;
}
}  // namespace

int main() {
    CHECK_OK(SetUp(&g_stream));
    aclTensor *mask = T({32}, ACL_UINT8);

    // CheckNotNull, CheckDtypeValid, CheckProbability, CheckShape (aclnn_dropout_gen_mask.cpp CheckParams)
    REPORT("null.shape", CallV2({200}, 0.1, ACL_FLOAT16, mask, true));
    REPORT("null.out", CallV2({200}, 0.1, ACL_FLOAT16, nullptr));
    REPORT("dtype.out", CallV2({200}, 0.1, ACL_FLOAT16, T({32}, ACL_INT8)));
    REPORT("prob.above_one", CallV2({200}, 1.5, ACL_FLOAT16, mask));
    REPORT("prob.negative", CallV2({200}, -0.5, ACL_FLOAT16, mask));
    REPORT("shape.out_size", CallV2({300}, 0.1, ACL_FLOAT16, mask));
    // FillScalar for prob 0 and 1 never reaches CreateDropout; ComputeMaskV2 does
    REPORT("ok.prob_zero_int32_dtype", CallV2({200}, 0.0, ACL_INT32, mask));
    REPORT("prob_dtype.int32", CallV2({200}, 0.1, ACL_INT32, mask));
    REPORT("ok.v1", CallV1({2, 100}, 0.1, mask));
    REPORT("ok.empty_out", CallV2({0}, 0.1, ACL_FLOAT16, T({0}, ACL_UINT8)));
    // one generated mask, printed for the golden comparison
    DeviceTensor out;
    CHECK_OK(out.Create({32}, ACL_UINT8));
    REPORT("ok.bf16", CallV2({10, 20}, 0.25, ACL_BF16, out.tensor));
    std::vector<uint8_t> host;
    CHECK_OK(out.Read(host));
    printf("mask");
    for (uint8_t byte : host) printf(" %d", byte);
    printf("\n");
    return 0;
}
