// The aclnn meta API of reference acl-abi.md §4.6-4.7: prints "<rule> <code>" for each case.
#include "aclnnop/aclnn_scatter_pa_kv_cache.h"
#include "common.h"

int main() {
    aclrtStream stream = nullptr;
    CHECK_OK(SetUp(&stream));
    void *data = nullptr;
    CHECK_OK(aclrtMalloc(&data, 4096, ACL_MEM_MALLOC_HUGE_FIRST));

    std::vector<int64_t> shape = {2, 3, 4}, strides = {12, 4, 1}, storage = {24};
    printf("create.null_view_dims %d\n", aclCreateTensor(nullptr, 3, ACL_FLOAT16, nullptr, 0, ACL_FORMAT_ND,
                                                         storage.data(), 1, data) == nullptr);
    printf("create.null_storage_dims %d\n", aclCreateTensor(shape.data(), 3, ACL_FLOAT16, nullptr, 0, ACL_FORMAT_ND,
                                                            nullptr, 1, data) == nullptr);
    printf("create.null_data_ok %d\n", aclCreateTensor(shape.data(), 3, ACL_FLOAT16, nullptr, 0, ACL_FORMAT_ND,
                                                       storage.data(), 1, nullptr) != nullptr);
    aclTensor *t = aclCreateTensor(shape.data(), 3, ACL_BF16, strides.data(), 5,
                                   aclFormat::ACL_FORMAT_FRACTAL_NZ, storage.data(), 1, data);
    printf("create.ok %d\n", t != nullptr);

    int64_t *dims = nullptr;
    uint64_t n = 0;
    REPORT("get.view_shape", aclGetViewShape(t, &dims, &n));
    printf("get.view_shape.value %d\n", n == 3 && dims[0] == 2 && dims[1] == 3 && dims[2] == 4);
    delete[] dims;
    REPORT("get.view_strides", aclGetViewStrides(t, &dims, &n));
    printf("get.view_strides.value %d\n", n == 3 && dims[0] == 12 && dims[2] == 1);
    delete[] dims;
    REPORT("get.storage_shape", aclGetStorageShape(t, &dims, &n));
    printf("get.storage_shape.value %d\n", n == 1 && dims[0] == 24);
    delete[] dims;
    int64_t offset = -1;
    REPORT("get.offset", aclGetViewOffset(t, &offset));
    printf("get.offset.value %lld\n", static_cast<long long>(offset));
    aclFormat format;
    REPORT("get.format", aclGetFormat(t, &format));
    printf("get.format.value %d\n", static_cast<int>(format));
    aclDataType dtype;
    REPORT("get.dtype", aclGetDataType(t, &dtype));
    printf("get.dtype.value %d\n", static_cast<int>(dtype));
    REPORT("get.view_shape.null_tensor", aclGetViewShape(nullptr, &dims, &n));
    REPORT("get.offset.null_tensor", aclGetViewOffset(nullptr, &offset));
    REPORT("get.format.null_tensor", aclGetFormat(nullptr, &format));
    REPORT("get.dtype.null_tensor", aclGetDataType(nullptr, &dtype));
    void *raw = nullptr;
    REPORT("raw.get", aclGetRawTensorAddr(t, &raw));
    printf("raw.get.value %d\n", raw == data);
    REPORT("raw.set.null", aclSetRawTensorAddr(nullptr, data));
    REPORT("raw.get.null", aclGetRawTensorAddr(nullptr, &raw));
    std::vector<int64_t> shape2 = {4};
    REPORT("init_tensor", aclInitTensor(t, shape2.data(), 1, ACL_INT32, nullptr, 0, ACL_FORMAT_ND, shape2.data(), 1, data));
    REPORT("get.dtype.after_init", aclGetDataType(t, &dtype));
    printf("get.dtype.after_init.value %d\n", static_cast<int>(dtype));

    // scalars and arrays
    float value = 2.5f;
    aclScalar *scalar = aclCreateScalar(&value, ACL_FLOAT);
    printf("scalar.ok %d\n", scalar != nullptr);
    printf("scalar.null_value %d\n", aclCreateScalar(nullptr, ACL_FLOAT) == nullptr);
    std::vector<int64_t> ints = {1, 2, 3};
    aclIntArray *int_array = aclCreateIntArray(ints.data(), ints.size());
    aclIntArray *empty_array = aclCreateIntArray(nullptr, 0);
    printf("int_array.empty_is_valid %d\n", empty_array != nullptr);
    uint64_t size = 0;
    REPORT("int_array.size", aclGetIntArraySize(int_array, &size));
    printf("int_array.size.value %llu\n", static_cast<unsigned long long>(size));
    std::vector<float> floats = {0.5f};
    aclFloatArray *float_array = aclCreateFloatArray(floats.data(), 1);
    bool bools[2] = {true, false};
    aclBoolArray *bool_array = aclCreateBoolArray(bools, 2);
    REPORT("bool_array.size", aclGetBoolArraySize(bool_array, &size));
    printf("bool_array.size.value %llu\n", static_cast<unsigned long long>(size));

    // tensor lists own their tensors
    aclTensor *a = aclCreateTensor(shape2.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape2.data(), 1, data);
    aclTensor *b = aclCreateTensor(shape2.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, shape2.data(), 1, data);
    const aclTensor *items[] = {a, b};
    aclTensorList *list = aclCreateTensorList(items, 2);
    REPORT("list.size", aclGetTensorListSize(list, &size));
    printf("list.size.value %llu\n", static_cast<unsigned long long>(size));
    REPORT("list.destroy", aclDestroyTensorList(list));
    REPORT("list.member_destroyed_with_list", aclGetDataType(a, &dtype));

    // destroys accept nullptr; a second destroy is reported, not a crash
    REPORT("destroy.tensor.null", aclDestroyTensor(nullptr));
    REPORT("destroy.scalar.null", aclDestroyScalar(nullptr));
    REPORT("destroy.int_array.null", aclDestroyIntArray(nullptr));
    REPORT("destroy.float_array.null", aclDestroyFloatArray(nullptr));
    REPORT("destroy.bool_array.null", aclDestroyBoolArray(nullptr));
    REPORT("destroy.tensor_list.null", aclDestroyTensorList(nullptr));
    REPORT("destroy.scalar_list.null", aclDestroyScalarList(nullptr));
    REPORT("destroy.tensor", aclDestroyTensor(t));
    REPORT("destroy.tensor.twice", aclDestroyTensor(t));
    REPORT("destroy.scalar", aclDestroyScalar(scalar));
    REPORT("destroy.int_array", aclDestroyIntArray(int_array));
    REPORT("destroy.int_array.empty", aclDestroyIntArray(empty_array));
    REPORT("destroy.float_array", aclDestroyFloatArray(float_array));
    REPORT("destroy.bool_array", aclDestroyBoolArray(bool_array));

    // executors (§4.7)
    REPORT("executor.repeatable.null", aclSetAclOpExecutorRepeatable(nullptr));
    REPORT("executor.destroy.null", aclDestroyAclOpExecutor(nullptr));
    REPORT("executor.set_input_addr.null", aclSetInputTensorAddr(nullptr, 0, nullptr, data));
    REPORT("executor.phase2.null", aclnnScatterPaKvCache(nullptr, 0, nullptr, stream));
    REPORT("executor.phase2.garbage", aclnnScatterPaKvCache(nullptr, 0, reinterpret_cast<aclOpExecutor *>(&stream), stream));

    aclrtFree(data);
    TearDown(stream);
    return 0;
}
