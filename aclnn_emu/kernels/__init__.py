"""Pure numpy maths for the operators: no ACL types, no device memory, no status codes.

Every kernel takes numpy arrays in their storage dtype (np.float16, ml_dtypes.bfloat16, np.float32,
np.int8, ...) plus plain Python attributes, and returns numpy arrays. The op modules in
``aclnn_emu.ops`` validate arguments and move data between device tensors and these functions.
"""
