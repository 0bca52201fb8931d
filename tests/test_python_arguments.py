"""Python callers: `ae.run` names a wrong argument (TypeError/ValueError), `ae.raw` answers any value
with the status code C gets for the equivalent garbage."""

import ctypes
import re

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import status
from aclnn_emu.opdef.registry import by_name
from aclnn_emu.runtime.errors import take_recent

INVALID, NULLPTR = status.ACLNN_ERR_PARAM_INVALID, status.ACLNN_ERR_PARAM_NULLPTR


@pytest.fixture
def scatter_args():
    """A valid ScatterPaKvCache call (A2 chip) and the cache it writes."""
    ae.setup()
    key = ae.to_device(np.arange(32, dtype=np.float16).reshape(2, 1, 16))
    cache = ae.to_device(np.zeros((1, 4, 1, 16), np.float16))
    vcache = ae.to_device(np.zeros((1, 4, 1, 16), np.float16))
    slots = ae.to_device(np.array([2, 0], np.int32))
    yield [key, cache, slots, key, vcache, None, None, None, None, None, None, None], cache
    for t in (key, cache, vcache, slots):
        ae.free(t)


def pfa_args(layout):
    q = np.random.default_rng(0).standard_normal((1, 2, 8, 16)).astype(np.float16)
    out = ae.empty((1, 2, 8, 16), ae.DataType.ACL_FLOAT16)
    return [ae.to_device(q), ae.to_device(q), ae.to_device(q)] + [None] * 9 + [
        2,
        0.25,
        2147483647,
        0,
        layout,
        0,
        0,
        out,
    ], out


def test_bytes_and_str_are_the_same_string():
    results = []
    for layout in ("BNSD", b"BNSD", bytearray(b"BNSD")):
        args, out = pfa_args(layout)
        ae.run("PromptFlashAttentionV2", *args)
        results.append(ae.numpy(out))
    assert results[0].tobytes() == results[1].tobytes() == results[2].tobytes()


@pytest.mark.parametrize(
    "position, value, error, words",
    [
        (0, np.zeros((2, 1, 16), np.float16), TypeError, ["argument key", "aclnn_emu.Tensor", "numpy.ndarray"]),
        (2, [2, 0], TypeError, ["argument slotMapping", "aclnn_emu.Tensor", "got list"]),
        (8, 3, TypeError, ["argument cacheModeOptional", "str or bytes", "got int 3"]),
        (10, ("a", "b"), TypeError, ["argument stridesOptional", "integers", "got tuple"]),
        (10, "12", TypeError, ["argument stridesOptional", "got str"]),
    ],
)
def test_a_wrong_python_type_names_the_argument(scatter_args, position, value, error, words):
    args, _ = scatter_args
    args[position] = value
    with pytest.raises(error) as raised:
        ae.run("ScatterPaKvCache", *args)
    assert not isinstance(raised.value, ae.AclnnError)
    message = str(raised.value)
    assert message.startswith("aclnnScatterPaKvCacheGetWorkspaceSize: ") and all(w in message for w in words), message


def test_numbers_out_of_their_c_type_and_of_the_wrong_kind():
    args, _ = pfa_args("BNSD")
    for position, value, error, words in (
        (12, 1 << 63, ValueError, "argument numHeads must be an integer in the int64_t range"),
        (12, 2.0, TypeError, "argument numHeads must be an integer (int64_t), got float 2.0"),
        (13, "0.25", TypeError, "argument scaleValue must be a number"),
    ):
        wrong = list(args)
        wrong[position] = value
        with pytest.raises(error, match=re.escape(words)):
            ae.run("PromptFlashAttentionV2", *wrong)


def test_numpy_scalars_are_numbers():
    args, out = pfa_args("BNSD")
    ae.run("PromptFlashAttentionV2", *args)
    expected = ae.numpy(out).tobytes()
    args[12], args[13], args[15] = np.int32(2), np.float32(0.25), np.int64(0)
    ae.run("PromptFlashAttentionV2", *args)
    assert ae.numpy(out).tobytes() == expected


def test_a_missing_argument_is_named(scatter_args):
    args, _ = scatter_args
    with pytest.raises(
        TypeError,
        match=r"takes 12 arguments \(key, .*offsetsOptional\), got 10: "
        r"stridesOptional, offsetsOptional missing",
    ):
        ae.run("ScatterPaKvCache", *args[:10])
    with pytest.raises(TypeError, match="got 13"):
        ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*args, None)


def test_a_destroyed_tensor_is_the_c_code_not_a_python_error(scatter_args):
    args, _ = scatter_args
    gone = ae.to_device(np.zeros((2, 1, 16), np.float16))
    gone.destroy()
    args[0] = gone
    with pytest.raises(ae.AclnnError) as raised:
        ae.run("ScatterPaKvCache", *args)
    assert raised.value.status == INVALID and "key" in raised.value.message


def test_a_wrong_stream_for_run_is_a_type_error(scatter_args):
    args, _ = scatter_args
    with pytest.raises(TypeError, match="stream must be an aclrtStream handle"):
        ae.run("ScatterPaKvCache", *args, stream="default")


# -- raw: a status for any value --------------------------------------------------------------------
GARBAGE = [object(), "text", 1.5, np.zeros(3), [1, "x"], {"a": 1}, -7]


@pytest.mark.parametrize("garbage", GARBAGE, ids=lambda g: type(g).__name__)
def test_raw_phase1_answers_garbage_in_every_position_with_161002(scatter_args, garbage):
    args, _ = scatter_args
    for i, param in enumerate(by_name("ScatterPaKvCache").params):
        if param.kind == "string" and isinstance(garbage, str):
            continue  # a string is a valid mode name to check, not garbage
        wrong = list(args)
        wrong[i] = garbage
        result = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*wrong)
        assert result == (INVALID, 0, 0), (param.name, result)
        assert param.name in take_recent()


@pytest.mark.parametrize("garbage", GARBAGE, ids=lambda g: type(g).__name__)
def test_raw_phase2_answers_garbage_like_c(scatter_args, garbage):
    args, cache = scatter_args
    stream = ae.setup()

    def fresh():
        code, size, executor = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*args)
        assert code == 0
        return size, executor

    assert ae.raw.aclnnScatterPaKvCache(0, 0, garbage, stream) == status.ACLNN_ERR_INNER_NULLPTR
    assert "is not a live aclOpExecutor" in take_recent()
    size, executor = fresh()
    workspace = ae.api.rt.malloc(size)
    assert ae.raw.aclnnScatterPaKvCache(workspace, size, executor, garbage) == status.ACL_ERROR_RT_INVALID_HANDLE
    assert "is not a live aclrtStream" in take_recent()
    size, executor = fresh()
    if not isinstance(garbage, int):
        assert ae.raw.aclnnScatterPaKvCache(workspace, garbage, executor, stream) == INVALID
        assert "workspaceSize must be an integer" in take_recent()
    ae.api.rt.free(workspace)


def test_raw_and_c_agree_on_the_same_garbage(scatter_args, libacl):
    """A host pointer where a tensor is expected, and an executor pointer to nothing."""
    args, _ = scatter_args
    host = np.zeros(64, np.uint8)
    raw_tensor = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(host.ctypes.data, *args[1:])[0]
    ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
    c_handles = [ctypes.c_void_p(host.ctypes.data)] + [ctypes.c_void_p(t.handle if t else None) for t in args[1:5]]
    c_tensor = libacl.aclnnScatterPaKvCacheGetWorkspaceSize(*c_handles, *[None] * 7, ctypes.byref(ws), ctypes.byref(ex))
    assert raw_tensor == c_tensor == INVALID
    raw_executor = ae.raw.aclnnScatterPaKvCache(None, 0, host.ctypes.data, None)
    c_executor = libacl.aclnnScatterPaKvCache(None, ctypes.c_uint64(0), ctypes.c_void_p(host.ctypes.data), None)
    assert raw_executor == c_executor == status.ACLNN_ERR_INNER_NULLPTR


def test_unknown_raw_names_are_attribute_errors():
    assert not hasattr(ae.raw, "aclnnNoSuchOp")
