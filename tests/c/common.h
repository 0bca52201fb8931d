// Helpers for the C++ tests: status printing and device tensors built the way the spec samples do.
#ifndef ACLNN_EMU_TEST_COMMON_H_
#define ACLNN_EMU_TEST_COMMON_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

// Print "<rule> <code>" so the pytest side can assert each code.
#define REPORT(rule, expr) printf("%s %d\n", rule, static_cast<int>(expr))
#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        int _ret = (expr);                                                               \
        if (_ret != 0) {                                                                 \
            printf("FAILED %s -> %d: %s\n", #expr, _ret, aclGetRecentErrMsg());          \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

inline int64_t ShapeSize(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

inline std::vector<int64_t> ContiguousStrides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    return strides;
}

// A device buffer plus the aclTensor describing it; released in the destructor.
struct DeviceTensor {
    void *addr = nullptr;
    aclTensor *tensor = nullptr;
    size_t bytes = 0;

    DeviceTensor() = default;
    DeviceTensor(const DeviceTensor &) = delete;
    DeviceTensor &operator=(const DeviceTensor &) = delete;

    template <typename T>
    int Create(const std::vector<T> &host, const std::vector<int64_t> &shape, aclDataType dtype,
               aclFormat format = ACL_FORMAT_ND) {
        bytes = ShapeSize(shape) * aclDataTypeSize(dtype);
        size_t alloc = bytes > 0 ? bytes : 1;
        int ret = aclrtMalloc(&addr, alloc, ACL_MEM_MALLOC_HUGE_FIRST);
        if (ret != 0) return ret;
        if (bytes > 0 && !host.empty()) {
            ret = aclrtMemcpy(addr, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
            if (ret != 0) return ret;
        }
        std::vector<int64_t> strides = ContiguousStrides(shape);
        tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, format, shape.data(),
                                 shape.size(), addr);
        return tensor == nullptr ? -1 : 0;
    }

    int Create(const std::vector<int64_t> &shape, aclDataType dtype, aclFormat format = ACL_FORMAT_ND) {
        return Create(std::vector<uint8_t>(), shape, dtype, format);
    }

    template <typename T>
    int Read(std::vector<T> &host) const {
        host.resize(bytes / sizeof(T));
        return bytes ? aclrtMemcpy(host.data(), bytes, addr, bytes, ACL_MEMCPY_DEVICE_TO_HOST) : 0;
    }

    ~DeviceTensor() {
        if (tensor) aclDestroyTensor(tensor);
        if (addr) aclrtFree(addr);
    }
};

// Deterministic fp16 bit patterns, the same as tests/cabi.py's lcg_fp16: a 32-bit LCG, 16 bits
// per value, the exponent kept finite.
inline std::vector<uint16_t> LcgFp16(size_t n, uint32_t seed) {
    std::vector<uint16_t> v(n);
    for (auto &x : v) {
        seed = seed * 1103515245u + 12345u;
        x = static_cast<uint16_t>((seed >> 16) & 0x7BFF);
    }
    return v;
}

// Append a 16-bit tensor's device contents to a file.
inline int Dump(FILE *out, const DeviceTensor &t) {
    std::vector<uint16_t> host;
    int ret = t.Read(host);
    fwrite(host.data(), sizeof(uint16_t), host.size(), out);
    return ret;
}

// Device tensors made in one call each and kept until Clear(): INT32/INT64 tensors hold `values`
// (cycled; default 0, 1, 2, ...), others zeros.
class TensorPool {
public:
    aclTensor *operator()(const std::vector<int64_t> &shape, aclDataType dtype, const std::vector<int64_t> &values = {},
                          aclFormat format = ACL_FORMAT_ND) {
        tensors_.emplace_back(new DeviceTensor());
        DeviceTensor &t = *tensors_.back();
        int64_t n = ShapeSize(shape);
        int ret;
        if (dtype == ACL_INT32 || dtype == ACL_INT64) {
            std::vector<int64_t> v(n);
            for (int64_t i = 0; i < n; i++) v[i] = values.empty() ? i : values[i % values.size()];
            if (dtype == ACL_INT32) {
                ret = t.Create(std::vector<int32_t>(v.begin(), v.end()), shape, dtype, format);
            } else {
                ret = t.Create(v, shape, dtype, format);
            }
        } else {
            ret = t.Create(std::vector<uint8_t>(n * aclDataTypeSize(dtype), 0), shape, dtype, format);
        }
        if (ret != 0) printf("FAILED to create a tensor: %d\n", ret);
        return t.tensor;
    }

    // A tensor list over new tensors of the pool, one per (shape, dtype): the list owns descriptors of
    // their memory (aclDestroyTensorList frees those), the pool keeps the memory.
    aclTensorList *List(const std::vector<std::pair<std::vector<int64_t>, aclDataType>> &specs) {
        std::vector<aclTensor *> own;
        for (const auto &spec : specs) {
            const std::vector<int64_t> &shape = spec.first;
            void *addr = nullptr;
            aclGetRawTensorAddr((*this)(shape, spec.second), &addr);
            std::vector<int64_t> strides = ContiguousStrides(shape);
            own.push_back(aclCreateTensor(shape.data(), shape.size(), spec.second, strides.data(), 0, ACL_FORMAT_ND,
                                          shape.data(), shape.size(), addr));
        }
        return aclCreateTensorList(own.data(), own.size());
    }

    void Clear() { tensors_.clear(); }

private:
    std::vector<std::unique_ptr<DeviceTensor>> tensors_;
};

// Phase 2 after a phase 1 that returned `status` (call phase 1 first: C++ leaves the order in which
// arguments are evaluated open): a workspace of `size`, the launch, a synchronize; the first failure.
inline int RunPhase2(aclrtStream stream, int status, uint64_t size, aclOpExecutor *executor,
                     aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream)) {
    if (status != 0) return status;
    void *workspace = nullptr;
    int ret = size > 0 ? aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) : 0;
    if (ret == 0) ret = phase2(workspace, size, executor, stream);
    if (ret == 0) ret = aclrtSynchronizeStream(stream);
    if (workspace) aclrtFree(workspace);
    return ret;
}

// Whether the emulated chip is an Atlas A2/A3 part (not Ascend910_95), once aclInit has run.
inline bool OnA2() {
    const char *soc = aclrtGetSocName();
    return soc != nullptr && std::strncmp(soc, "Ascend910_95", 12) != 0;
}

// aclInit + device 0 + a stream, as every sample does.
inline int SetUp(aclrtStream *stream) {
    int ret = aclInit(nullptr);
    if (ret != 0) return ret;
    ret = aclrtSetDevice(0);
    if (ret != 0) return ret;
    return aclrtCreateStream(stream);
}

inline void TearDown(aclrtStream stream) {
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
}

#endif  // ACLNN_EMU_TEST_COMMON_H_
