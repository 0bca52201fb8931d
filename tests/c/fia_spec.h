// The tensor specs of the FusedInferAttentionScore status programs: shape, dtype and int64 contents
// (lengths, block tables; empty: zeros). Shared by fused_infer_attention_score_rules.cpp and
// fused_infer_attention_score_prefix.cpp.
#ifndef ACLNN_EMU_TEST_FIA_SPEC_H_
#define ACLNN_EMU_TEST_FIA_SPEC_H_

#include <vector>

#include "common.h"

struct Spec {
    std::vector<int64_t> shape;
    aclDataType dtype;
    std::vector<int64_t> values;
};

static Spec T(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16, std::vector<int64_t> values = {}) {
    return Spec{shape, dtype, values};
}

#endif  // ACLNN_EMU_TEST_FIA_SPEC_H_
