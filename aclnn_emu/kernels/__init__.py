"""The operators' maths: no ACL types, no device memory, no status codes. numpy, plus the fused
inner loops of native.c where one numpy pass per operation is too slow (see native.py).

Every kernel takes numpy arrays in their storage dtype (np.float16, ml_dtypes.bfloat16, np.float32,
np.int8, ...) plus plain Python attributes, and returns numpy arrays. The op modules in
``aclnn_emu.ops`` validate arguments and move data between device tensors and these functions.
"""
