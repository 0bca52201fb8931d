"""aclnn_emu.ops: generated from every operator's signature, host data in and out, outputs allocated
by each op's rule, two phases as objects, typed errors, and the same codes and bytes as the device
tensor paths (ae.run / ae.raw) on the same inputs."""

import inspect

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import api, errors, status
from aclnn_emu.opdef.registry import all_ops
from aclnn_emu.opdef.signature import REQUIRED
from aclnn_emu.runtime import api as rt
from aclnn_emu.runtime.errors import take_recent

RNG = np.random.default_rng(7)


def _neutral(param):
    """A value of the parameter's C type that no rule turns into anything but a null check."""
    return {"int64": 1, "enum": 1, "double": 1.0, "bool": False, "string": "BSND"}.get(param.kind)


@pytest.mark.parametrize("op", all_ops(), ids=lambda op: op.name)
def test_every_operator_is_a_function_with_the_headers_names(op):
    fn = getattr(ae.ops, op.name)
    assert op.name in dir(ae.ops)
    assert list(inspect.signature(fn).parameters) == [p.name for p in op.params] + ["stream"]
    assert list(inspect.signature(fn.prepare).parameters) == [p.name for p in op.params] + ["repeatable"]
    text = fn.__doc__
    for p in op.params:
        assert p.doc, f"{op.name}.{p.name} has no doc= in its signature declaration"
        line = next(line for line in text.splitlines() if line.startswith(f"{p.name} : "))
        assert p.ctype in line and ("optional" in line) == p.optional, line
    for p in op.params:
        default = inspect.signature(fn).parameters[p.name].default
        if p.output:
            assert default is None
        elif p.optional:  # NULL, or the value the declaration gives (torch_npu's default)
            assert default == (None if p.default is REQUIRED else p.default)


@pytest.mark.parametrize("op", all_ops(), ids=lambda op: op.name)
def test_keywords_give_the_raw_c_paths_status(op):
    """Every tensor left out: the same status as the raw two-phase function with the same values."""
    ae.setup()
    values = [None if p.kind not in ("int64", "enum", "double", "bool", "string") else _neutral(p) for p in op.params]
    raw_code, _, _ = getattr(ae.raw, op.phase1)(*values)
    take_recent()
    keywords = {p.name: v for p, v in zip(op.params, values)}
    assert raw_code != 0
    with pytest.raises(ae.AclnnError) as raised:
        getattr(ae.ops, op.name)(**keywords)
    assert raised.value.status == raw_code
    assert type(raised.value) is errors.AclnnError.by_code.get(raw_code, ae.AclnnError)


def test_a_missing_required_value_names_it():
    with pytest.raises(TypeError, match="missing required argument.*headNum"):
        ae.ops.FlashAttentionScoreV2(
            np.zeros((1, 1, 1, 16), np.float16),
            np.zeros((1, 1, 1, 16), np.float16),
            np.zeros((1, 1, 1, 16), np.float16),
            inputLayout="BNSD",
        )


def test_every_status_code_has_a_class_of_its_own():
    codes = [code for code in status.NAMES if code]
    assert sorted(errors.CLASSES) == sorted(codes)
    assert len({name for name, _ in errors.CLASSES.values()}) == len(codes)
    for code in codes:
        error = ae.AclnnError(code, "m")
        assert type(error) is not ae.AclnnError and error.status == code and isinstance(error, ae.AclnnError)
    assert (ae.ParamNullptr.code, ae.ParamInvalid.code, ae.TilingError.code, ae.InnerNullptr.code) == (
        161001,
        161002,
        561002,
        561103,
    )
    assert type(ae.AclnnError(12345, "m")) is ae.AclnnError


# -- PromptFlashAttentionV2: host data against the device-tensor path -----------------------------------
def _pfa_inputs(dtype, shape=(1, 2, 32, 16)):
    return [RNG.standard_normal(shape).astype(dtype) for _ in range(3)]


def _pfa_device_path(q, k, v, heads, layout="BNSD"):
    """ae.run with device tensors made by hand: the bytes ae.ops must reproduce."""
    tensors = [ae.to_device(x) for x in (q, k, v)]
    out = ae.empty(q.shape, ae.DataType(tensors[0].dtype))
    ae.run("PromptFlashAttentionV2", *tensors, *[None] * 9, heads, 0.25, 2147483647, 0, layout, 0, 0, out)
    result = ae.numpy(out)
    for t in tensors + [out]:
        ae.free(t)
    return result


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["fp16", "bf16"])
def test_numpy_in_numpy_out_matches_the_device_path(dtype):
    q, k, v = _pfa_inputs(dtype)
    out = ae.ops.PromptFlashAttentionV2(
        query=q, key=k, value=v, numHeads=2, scaleValue=0.25, inputLayout="BNSD", preTokens=2147483647, nextTokens=0
    )
    assert isinstance(out, np.ndarray) and out.dtype == np.dtype(dtype) and out.shape == q.shape
    assert out.tobytes() == _pfa_device_path(q, k, v, 2).tobytes()


def test_positional_and_keyword_calls_agree_and_a_given_output_is_filled_in_place():
    q, k, v = _pfa_inputs(np.float16)
    given = np.full(q.shape, 7, np.float16)
    out = ae.ops.PromptFlashAttentionV2(
        q, k, v, None, None, None, None, None, None, None, None, None, 2, 0.25, 2147483647, 0, "BNSD", 0, 0, given
    )
    assert out is given
    assert (
        given.tobytes()
        == ae.ops.PromptFlashAttentionV2(
            query=q, key=k, value=v, numHeads=2, scaleValue=0.25, inputLayout="BNSD"
        ).tobytes()
    )


def test_automatic_output_takes_values_head_size_in_bsh():
    q = RNG.standard_normal((1, 32, 2 * 16)).astype(np.float16)
    v = RNG.standard_normal((1, 64, 2 * 8)).astype(np.float16)
    k = RNG.standard_normal((1, 64, 2 * 16)).astype(np.float16)
    out = ae.ops.PromptFlashAttentionV2(q, k, v, numHeads=2, inputLayout="BSH")
    assert out.shape == (1, 32, 16)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    q, k, v = _pfa_inputs(ml_dtypes.bfloat16)
    tq, tk, tv = (torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) for x in (q, k, v))
    out = ae.ops.PromptFlashAttentionV2(tq, tk, tv, numHeads=2, scaleValue=0.25, inputLayout="BNSD")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16 and tuple(out.shape) == q.shape
    assert out.view(torch.int16).numpy().tobytes() == _pfa_device_path(q, k, v, 2).tobytes()
    given = torch.zeros(q.shape, dtype=torch.bfloat16)
    assert (
        ae.ops.PromptFlashAttentionV2(tq, tk, tv, numHeads=2, scaleValue=0.25, inputLayout="BNSD", attentionOut=given)
        is given
    )
    assert torch.equal(given, out)


def test_device_tensors_in_device_tensor_out():
    q, k, v = _pfa_inputs(np.float16)
    tensors = [ae.to_device(x) for x in (q, k, v)]
    out = ae.ops.PromptFlashAttentionV2(*tensors, numHeads=2, scaleValue=0.25, inputLayout="BNSD")
    assert isinstance(out, ae.Tensor)
    assert ae.numpy(out).tobytes() == _pfa_device_path(q, k, v, 2).tobytes()
    for t in tensors + [out]:
        ae.free(t)


def test_a_rejected_call_has_the_raw_code_and_names_the_argument():
    q, k, v = _pfa_inputs(np.float16)
    with pytest.raises(ae.ParamInvalid, match="keyDataType"):
        ae.ops.PromptFlashAttentionV2(q, k.astype(np.float32), v, numHeads=2, inputLayout="BNSD")
    tensors = [ae.to_device(x) for x in (q, k.astype(np.float32), v)]
    out = ae.empty(q.shape, ae.DataType.ACL_FLOAT16)
    code, _, _ = ae.raw.aclnnPromptFlashAttentionV2GetWorkspaceSize(
        *tensors, *[None] * 9, 2, 1.0, 2147483647, 0, "BNSD", 0, 0, out
    )
    assert code == status.ACLNN_ERR_PARAM_INVALID and "keyDataType" in take_recent()
    for t in tensors + [out]:
        ae.free(t)


def settled_memory() -> tuple[int, int]:
    """rt.mem_info() once the tensors Python already dropped (an earlier test's too) are freed: the
    Python API frees them at its next allocation, which would otherwise land inside a measurement."""
    api.collect(full=True)
    return rt.mem_info()


def test_host_copies_are_freed():
    q, k, v = _pfa_inputs(np.float16)
    ae.setup()
    before = settled_memory()
    for _ in range(3):
        ae.ops.PromptFlashAttentionV2(q, k, v, numHeads=2, inputLayout="BNSD")
    with pytest.raises(ae.ParamInvalid):
        ae.ops.PromptFlashAttentionV2(q, k.astype(np.float32), v, numHeads=2, inputLayout="BNSD")
    assert rt.mem_info() == before


# -- gradients: every output allocated like its input ------------------------------------------------
def test_flash_attention_grad_allocates_its_outputs_like_the_inputs():
    b, n, s, d = 1, 2, 32, 16
    q, k, v, dy, attn = (RNG.standard_normal((b, n, s, d)).astype(np.float16) for _ in range(5))
    softmax = np.zeros((b, n, s, 8), np.float32)
    grads = ae.ops.FlashAttentionScoreGradV2(
        q,
        k,
        v,
        dy,
        softmaxMaxOptional=softmax,
        softmaxSumOptional=softmax + 1,
        attentionInOptional=attn,
        scaleValue=0.25,
        preTokens=65536,
        nextTokens=65536,
        headNum=n,
        inputLayout="BNSD",
    )
    assert grads._fields == ("dqOut", "dkOut", "dvOut", "dpseOut")
    assert [g.shape for g in grads[:3]] == [q.shape, k.shape, v.shape] and grads.dpseOut is None
    assert all(g.dtype == np.float16 for g in grads[:3])


# -- KV cache: ref tensors updated in place -----------------------------------------------------------
def test_scatter_updates_the_callers_caches_like_the_device_path():
    key = RNG.standard_normal((4, 2, 16)).astype(np.float16)
    slots = np.array([0, 3, 5, 6], np.int32)
    cache, vcache = np.zeros((2, 4, 2, 16), np.float16), np.zeros((2, 4, 2, 16), np.float16)
    result = ae.ops.ScatterPaKvCache(
        key=key, keyCacheRef=cache, slotMapping=slots, value=key, valueCacheRef=vcache, cacheModeOptional="Norm"
    )
    assert result.keyCacheRef is cache and result.valueCacheRef is vcache
    device = [ae.to_device(x) for x in (key, np.zeros_like(cache), slots, np.zeros_like(vcache))]
    ae.run("ScatterPaKvCache", device[0], device[1], device[2], device[0], device[3], *[None] * 7)
    assert cache.tobytes() == ae.numpy(device[1]).tobytes() and vcache.tobytes() == ae.numpy(device[3]).tobytes()
    assert (cache.reshape(8, 2, 16)[slots] == key).all()
    for t in device:
        ae.free(t)


# -- two phases -------------------------------------------------------------------------------------
def test_prepare_run_result_on_a_stream_and_a_repeatable_executor():
    q, k, v = _pfa_inputs(np.float16)
    expected = _pfa_device_path(q, k, v, 2)
    stream = ae.Stream(ae.setup())
    ex = ae.ops.PromptFlashAttentionV2.prepare(
        q, k, v, numHeads=2, scaleValue=0.25, inputLayout="BNSD", repeatable=True
    )
    handle = ex.executor
    with ex:
        assert ex.workspace_size >= 0
        ex.run(stream=stream)
        stream.synchronize()
        assert ex.result().tobytes() == expected.tobytes()
        assert ex.run(stream=stream).result().tobytes() == expected.tobytes()
    # closed: aclDestroyAclOpExecutor ran, so the handle is no executor any more
    assert ae.raw.aclnnPromptFlashAttentionV2(0, 0, handle, 0) == status.ACLNN_ERR_INNER_NULLPTR
    take_recent()


def test_a_spent_executor_is_refused_with_the_raw_code():
    q, k, v = _pfa_inputs(np.float16)
    ex = ae.ops.PromptFlashAttentionV2.prepare(q, k, v, numHeads=2, inputLayout="BNSD")
    ex.run().result()
    with pytest.raises(ae.InnerNullptr):
        ex.run()


def test_the_workspace_can_be_the_callers():
    key = RNG.standard_normal((2, 1, 16)).astype(np.float16)
    cache = np.zeros((1, 4, 1, 16), np.float16)
    ex = ae.ops.ScatterPaKvCache.prepare(
        key, cache, np.array([2, 0], np.int32), key, cache.copy(), cacheModeOptional="Norm"
    )
    assert ex.workspace_size == 16 * 1024 * 1024  # ASCENDC_TOOLS_WORKSPACE on Atlas A2
    workspace = ae.empty((ex.workspace_size,), ae.DataType.ACL_UINT8)
    ex.run(workspace=workspace).result()
    assert (cache[0, 2] == key[0]).all() and (cache[0, 0] == key[1]).all()
    ae.free(workspace)


# -- the device-tensor doors point host data to ae.ops -------------------------------------------------
def test_run_and_raw_send_host_arrays_to_ops():
    ae.setup()
    args = [np.zeros((2, 1, 16), np.float16)] + [None] * 11
    with pytest.raises(TypeError, match="aclnn_emu.ops.*aclnn_emu.to_device"):
        ae.run("ScatterPaKvCache", *args)
    code, _, _ = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*args)
    assert code == status.ACLNN_ERR_PARAM_INVALID and "aclnn_emu.ops" in take_recent()


def test_required_marker_reads_as_required():
    assert repr(REQUIRED) == "<required>"
    assert "headNum=<required>" in str(inspect.signature(ae.ops.FlashAttentionScoreV2))


def test_a_host_array_without_an_acl_dtype_names_its_argument():
    q, k, v = _pfa_inputs(np.float16)
    with pytest.raises(ValueError, match="argument key: no aclDataType for numpy dtype complex256"):
        ae.ops.PromptFlashAttentionV2(q, k.astype(np.clongdouble), v, numHeads=2, inputLayout="BNSD")


DEVICE_SCRIPT = """
import numpy as np, aclnn_emu as ae
from aclnn_emu.runtime import api as rt

q = np.random.default_rng(0).standard_normal((1, 2, 16, 16)).astype(np.float16)
with ae.Device(0) as dev:
    assert rt.initialized()
    stream, event = dev.stream(), dev.event()
    ex = ae.ops.PromptFlashAttentionV2.prepare(q, q, q, numHeads=2, inputLayout="BNSD").run(stream=stream)
    event.record(stream)
    event.synchronize()
    assert event.done
    out = ex.result()
    leaked = ae.empty((8,), ae.DataType.ACL_FLOAT)
assert not rt.initialized()                       # the Device started the runtime, so it finalized it
assert [kind for kind, _ in ae.sanitizer_reports()] == ["leak"]
try:
    stream.synchronize()
except ae.InvalidHandle as error:                 # destroyed with its device
    assert error.status == 107017
else:
    raise AssertionError("a destroyed stream synchronised")
print(out.shape)
"""


def test_a_device_owns_what_it_started(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", DEVICE_SCRIPT], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0 and done.stdout.strip() == "(1, 2, 16, 16)", done.stderr


def test_a_finished_run_holds_none_of_its_tensors():
    """Once a run has been synchronised, the stream keeps nothing of it: tensors Python drops are
    freed without waiting for the stream's next task."""
    q, k, v = _pfa_inputs(np.float16)
    ae.setup()
    free = settled_memory()
    tensors = [ae.to_device(x) for x in (q, k, v)]
    out = ae.empty(q.shape, ae.DataType(tensors[0].dtype))
    ae.run("PromptFlashAttentionV2", *tensors, *[None] * 9, 2, 0.25, 2147483647, 0, "BNSD", 0, 0, out)
    del tensors, out  # not freed by hand: Python's collection frees them
    assert settled_memory() == free


def test_closing_waits_for_a_run_still_on_its_stream():
    q, k, v = _pfa_inputs(np.float16, (1, 8, 512, 64))
    stream = ae.Stream(ae.setup())
    before, free = len(ae.sanitizer_reports()), settled_memory()
    with ae.ops.PromptFlashAttentionV2.prepare(q, k, v, numHeads=8, inputLayout="BNSD", repeatable=True) as ex:
        ex.run(stream=stream)  # left without a synchronisation: closing must wait before freeing
    stream.synchronize()
    assert ae.sanitizer_reports()[before:] == [] and rt.mem_info() == free


@pytest.mark.soc("Ascend910_95")
def test_fp8_caches_round_trip_bit_exact_as_numpy_and_torch(aclnn_soc):
    fp8 = ml_dtypes.float8_e4m3fn
    key = RNG.standard_normal((2, 1, 32)).astype(fp8)
    slots = np.array([3, 0], np.int32)
    cache = np.zeros((1, 4, 1, 32), fp8)
    ae.ops.ScatterPaKvCache(key, cache, slots, key, np.zeros_like(cache), cacheModeOptional="Norm")
    assert cache[0, 3].tobytes() == key[0].tobytes() and cache[0, 0].tobytes() == key[1].tobytes()
    torch = pytest.importorskip("torch")
    tkey = torch.from_numpy(key.view(np.uint8)).view(torch.float8_e4m3fn)
    tcache = torch.zeros((1, 4, 1, 32), dtype=torch.float8_e4m3fn)
    result = ae.ops.ScatterPaKvCache(
        tkey, tcache, torch.from_numpy(slots), tkey, tcache.clone(), cacheModeOptional="Norm"
    )
    assert result.keyCacheRef is tcache and tcache.view(torch.uint8).numpy().tobytes() == cache.tobytes()


# -- the forward attention operators: numpy in, numpy out, the device path's bytes ------------------
def _device_path(name, *args):
    """ae.run on device tensors made by hand: an array becomes a device copy, a list of arrays an
    aclTensorList of them, ("out", shape, DataType) a new output. Returns the outputs as numpy."""
    made, outputs = [], []

    def device(value):
        if isinstance(value, np.ndarray):
            made.append(ae.to_device(value))
            return made[-1]
        if isinstance(value, list) and all(isinstance(item, np.ndarray) for item in value):
            return ae.tensor_list([device(item) for item in value])
        if isinstance(value, tuple) and value[:1] == ("out",):
            outputs.append(ae.empty(value[1], value[2]))
            made.append(outputs[-1])
            return outputs[-1]
        return value

    ae.run(name, *[device(a) for a in args])
    result = [ae.numpy(t) for t in outputs]
    for t in made:
        ae.free(t)
    return result


def _same_bytes(got, expected):
    assert [g.shape for g in got] == [e.shape for e in expected]
    assert [g.dtype for g in got] == [e.dtype for e in expected]
    assert all(g.tobytes() == e.tobytes() for g, e in zip(got, expected))


def test_flash_attention_score_round_trip():
    q, k, v = (RNG.standard_normal((1, 2, 32, 16)).astype(np.float16) for _ in range(3))
    got = ae.ops.FlashAttentionScoreV2(
        q,
        k,
        v,
        scaleValue=0.25,
        keepProb=1.0,
        preTokens=65536,
        nextTokens=65536,
        headNum=2,
        inputLayout="BNSD",
        innerPrecise=0,
        sparseMode=0,
    )
    assert got._fields == ("softmaxMaxOut", "softmaxSumOut", "softmaxOutOut", "attentionOutOut")
    assert got.softmaxOutOut is None
    lanes = ("out", (1, 2, 32, 8), ae.DataType.ACL_FLOAT)
    expected = _device_path(
        "FlashAttentionScoreV2",
        q,
        k,
        v,
        *[None] * 7,
        0.25,
        1.0,
        65536,
        65536,
        2,
        "BNSD",
        0,
        0,
        1,
        lanes,
        lanes,
        None,
        ("out", q.shape, ae.DataType.ACL_FLOAT16),
    )
    _same_bytes([got.softmaxMaxOut, got.softmaxSumOut, got.attentionOutOut], expected)


def test_incre_flash_attention_round_trip_with_a_list_of_arrays():
    q = RNG.standard_normal((2, 4, 1, 16)).astype(np.float16)
    k, v = (RNG.standard_normal((2, 2, 64, 16)).astype(np.float16) for _ in range(2))
    ae.setup()
    before = settled_memory()
    got = ae.ops.IncreFlashAttentionV4(
        q, [k], (v,), actualSeqLengths=[64, 40], numHeads=4, scaleValue=0.25, inputLayout="BNSD", numKeyValueHeads=2
    )
    assert rt.mem_info() == before
    expected = _device_path(
        "IncreFlashAttentionV4",
        q,
        [k],
        [v],
        None,
        None,
        [64, 40],
        *[None] * 9,
        4,
        0.25,
        "BNSD",
        2,
        0,
        1,
        ("out", q.shape, ae.DataType.ACL_FLOAT16),
    )
    _same_bytes([got], expected)


def test_lightning_indexer_round_trip():
    q = RNG.standard_normal((1, 4, 8, 128)).astype(np.float16)
    k = RNG.standard_normal((1, 16, 1, 128)).astype(np.float16)
    w = RNG.standard_normal((1, 4, 8)).astype(np.float16)
    got = ae.ops.LightningIndexer(q, k, w, sparseCount=8, sparseMode=3, returnValues=True)
    expected = _device_path(
        "LightningIndexer",
        q,
        k,
        w,
        None,
        None,
        None,
        "BSND",
        "BSND",
        8,
        3,
        (1 << 63) - 1,
        (1 << 63) - 1,
        True,
        ("out", (1, 4, 1, 8), ae.DataType.ACL_INT32),
        ("out", (1, 4, 1, 8), ae.DataType.ACL_FLOAT16),
    )
    _same_bytes(list(got), expected)
    assert (0 <= got.sparseIndicesOut[0, 0, 0]).all() and (got.sparseIndicesOut[0, 0, 0] < 13).all()  # causal: 13 keys


def test_sparse_flash_attention_round_trip():
    q = RNG.standard_normal((1, 4, 2, 512)).astype(np.float16)
    k, v = (RNG.standard_normal((1, 8, 1, 512)).astype(np.float16) for _ in range(2))
    q_rope = RNG.standard_normal((1, 4, 2, 64)).astype(np.float16)
    k_rope = RNG.standard_normal((1, 8, 1, 64)).astype(np.float16)
    indices = np.array([0, 1] * 4, np.int32).reshape(1, 4, 1, 2)
    scale = 1 / np.sqrt(576)
    got = ae.ops.SparseFlashAttention(
        q,
        k,
        v,
        indices,
        queryRope=q_rope,
        keyRope=k_rope,
        scaleValue=scale,
        sparseBlockSize=4,
        sparseMode=3,
        attentionMode=2,
        returnSoftmaxLse=True,
    )
    lse = ("out", (1, 1, 4, 2), ae.DataType.ACL_FLOAT)
    expected = _device_path(
        "SparseFlashAttention",
        q,
        k,
        v,
        indices,
        None,
        None,
        None,
        q_rope,
        k_rope,
        scale,
        4,
        "BSND",
        "BSND",
        3,
        (1 << 63) - 1,
        (1 << 63) - 1,
        2,
        True,
        ("out", q.shape, ae.DataType.ACL_FLOAT16),
        lse,
        lse,
    )
    _same_bytes(list(got), expected)
    assert np.isfinite(got.softmaxSumOut).all() and (got.softmaxSumOut > 0).all()


def test_the_namespace_names_every_registered_entry_point():
    """ae.ops lists its functions by name (so IDEs and type checkers see them); the registry decides."""
    assert sorted(ae.ops.__all__) == sorted(op.name for op in all_ops())
    assert all(getattr(ae.ops, op.name).__name__ == op.name for op in all_ops())
