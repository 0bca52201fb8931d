"""Typed errors for Python callers: one `AclnnError` subclass per status code, named by its meaning,
so a test writes `pytest.raises(aclnn_emu.ParamInvalid)`.

The numbers live in status.py; this module only gives them class names. `AclnnError` itself (in
runtime/errors.py, so the runtime's own AclError is one too) makes the subclass of a code:
`AclnnError(code, message)` is a ParamInvalid for 161002 (a code without a class stays a plain
AclnnError), so every place that turns a status into an exception gets the typed one.
"""

import contextlib

from . import status
from .runtime.errors import AclError, AclnnError

# status code -> (class name, what it means). Every code of status.py has one (tests/test_python_ops.py).
CLASSES = {
    status.ACL_ERROR_INVALID_PARAM: ("InvalidParam", "an ACL runtime argument is invalid"),
    status.ACL_ERROR_UNINITIALIZE: ("Uninitialized", "aclInit has not been called"),
    status.ACL_ERROR_REPEAT_INITIALIZE: ("RepeatInitialize", "aclInit was called twice"),
    status.ACL_ERROR_INVALID_FILE: ("InvalidFile", "a configuration file does not exist or is invalid"),
    status.ACL_ERROR_REPEAT_FINALIZE: ("RepeatFinalize", "aclFinalize was called twice"),
    status.ACL_ERROR_BAD_ALLOC: ("BadAlloc", "host memory could not be allocated"),
    status.ACL_ERROR_API_NOT_SUPPORT: ("ApiNotSupported", "the API is not supported"),
    status.ACL_ERROR_FEATURE_UNSUPPORTED: ("FeatureUnsupported", "the feature is not supported (or not emulated)"),
    status.ACL_ERROR_INTERNAL_ERROR: ("InternalError", "an internal error of the runtime"),
    status.ACL_ERROR_FAILURE: ("Failure", "a general failure"),
    status.ACL_ERROR_RT_PARAM_INVALID: ("RtParamInvalid", "a runtime argument (address, size, kind) is invalid"),
    status.ACL_ERROR_RT_INVALID_DEVICEID: ("InvalidDevice", "no such device"),
    status.ACL_ERROR_RT_CONTEXT_NULL: ("ContextNull", "no current context (aclrtSetDevice first)"),
    status.ACL_ERROR_RT_STREAM_CONTEXT: ("StreamContext", "the stream belongs to another context"),
    status.ACL_ERROR_RT_STREAM_SUBSCRIBE: ("StreamSubscribe", "the stream's callback subscription is wrong"),
    status.ACL_ERROR_RT_THREAD_SUBSCRIBE: ("ThreadSubscribe", "the thread's callback subscription is wrong"),
    status.ACL_ERROR_RT_STREAM_NO_CB_REG: ("StreamNoCallback", "no thread subscribed the stream's callbacks"),
    status.ACL_ERROR_RT_INVALID_HANDLE: ("InvalidHandle", "a stream or event handle is not live"),
    status.ACL_ERROR_RT_WAIT_TIMEOUT: ("WaitTimeout", "a wait on the stream timed out"),
    status.ACL_ERROR_RT_STREAM_ABORT: ("StreamAborted", "the stream was torn down with work in flight"),
    status.ACL_ERROR_RT_MODEL_CAPTURED: ("ModelCaptured", "the model is still being captured"),
    status.ACL_ERROR_RT_STREAM_CAPTURED: ("StreamCaptured", "the stream is capturing"),
    status.ACL_ERROR_RT_STREAM_NOT_CAPTURED: ("StreamNotCaptured", "the stream is not capturing"),
    status.ACL_ERROR_RT_FEATURE_NOT_SUPPORT: ("RtFeatureNotSupported", "the runtime does not support (or emulate) it"),
    status.ACL_ERROR_RT_MEMORY_ALLOCATION: ("DeviceOutOfMemory", "device memory is exhausted"),
    status.ACL_ERROR_RT_MEMORY_FREE: ("MemoryFree", "device memory could not be freed"),
    status.ACL_ERROR_RT_INTERNAL_ERROR: ("RtInternalError", "an internal error of the runtime"),
    status.ACL_ERROR_RT_EVENT_NOT_COMPLETE: ("EventNotComplete", "the event has not completed"),
    status.ACL_ERROR_RT_REPORT_TIMEOUT: ("ReportTimeout", "no callback was reported in time"),
    status.ACL_ERROR_RT_AICORE_EXCEPTION: ("AicoreException", "a kernel faulted on the device"),
    status.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: ("StreamSyncTimeout", "synchronising the stream timed out"),
    status.ACLNN_ERR_PARAM_NULLPTR: ("ParamNullptr", "a required argument is NULL"),
    status.ACLNN_ERR_PARAM_INVALID: ("ParamInvalid", "an argument's value, dtype, format or shape is not allowed"),
    status.ACLNN_ERR_RUNTIME_ERROR: ("RuntimeFailure", "the runtime failed underneath the operator"),
    status.ACLNN_ERR_INNER: ("InnerError", "an internal error of the operator library"),
    status.ACLNN_ERR_INNER_INFERSHAPE_ERROR: ("InferShapeError", "the operator's shape inference rejected the call"),
    status.ACLNN_ERR_INNER_TILING_ERROR: ("TilingError", "the operator's tiling rejected the call"),
    status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR: ("KernelNotFound", "no kernel is registered for the call"),
    status.ACLNN_ERR_INNER_CREATE_EXECUTOR: ("CreateExecutorError", "the executor could not be created"),
    status.ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR: ("NotTransExecutor", "the executor was not handed over"),
    status.ACLNN_ERR_INNER_NULLPTR: (
        "InnerNullptr",
        "an internal step got NULL (the op_api's catch-all for a rejected call, or an executor that is not live)",
    ),
    status.GRAPH_FAILED: ("GraphFailed", "a hand-written op_api returned ge::GRAPH_FAILED (-1)"),
}


def _make(code: int, name: str, meaning: str) -> type:
    cls = type(
        name,
        (AclnnError,),
        {"__doc__": f"{code} {status.name_of(code)}: {meaning}.", "__module__": __name__, "code": code},
    )
    AclnnError.by_code[code] = cls
    return cls


globals().update({name: _make(code, name, meaning) for code, (name, meaning) in CLASSES.items()})
__all__ = ["AclnnError"] + [name for name, _ in CLASSES.values()]


@contextlib.contextmanager
def typed():
    """Turn the runtime's AclError into the AclnnError subclass of its code."""
    try:
        yield
    except AclError as exc:
        raise AclnnError(exc.code, exc.message) from None
