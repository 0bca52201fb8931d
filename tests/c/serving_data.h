// Data of the serving-loop programs: reproducible fp16 values, raw dumps the pytest reads back, and
// one-tensor lists over device memory.
#ifndef ACLNN_EMU_TEST_SERVING_DATA_H_
#define ACLNN_EMU_TEST_SERVING_DATA_H_

#include <string>

#include "common.h"

// Values in [-1, 1] as fp16 bits, from a 32-bit LCG.
inline std::vector<uint16_t> Values(size_t n, uint32_t seed) {
    std::vector<uint16_t> out(n);
    for (auto &x : out) {
        seed = seed * 1103515245u + 12345u;
        x = aclFloatToFloat16(static_cast<float>(static_cast<int>((seed >> 8) % 2001) - 1000) / 1000.0f);
    }
    return out;
}

inline void Save(const std::string &dir, const std::string &name, const std::vector<uint16_t> &data) {
    FILE *f = fopen((dir + "/" + name).c_str(), "wb");
    fwrite(data.data(), sizeof(uint16_t), data.size(), f);
    fclose(f);
}

// A one-tensor fp16 list over device memory (destroying a list destroys its tensors: the list
// gets its own handle).
inline aclTensorList *ListOf(void *addr, const std::vector<int64_t> &shape, aclDataType dtype = ACL_FLOAT16) {
    std::vector<int64_t> strides = ContiguousStrides(shape);
    aclTensor *t = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                   shape.size(), addr);
    return aclCreateTensorList(&t, 1);
}

#endif  // ACLNN_EMU_TEST_SERVING_DATA_H_
