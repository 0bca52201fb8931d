"""The meta API and the two-phase contract (reference acl-abi.md §4.6-4.7)."""

import ctypes

import numpy as np
import pytest

import aclnn_emu as ae
import cabi
from aclnn_emu import status
from aclnn_emu.opdef import calls
from aclnn_emu.opdef.signature import Launch, Op, OpError, TensorIn, TensorOut

EXPECTED = {
    "create.null_view_dims": 1,
    "create.null_storage_dims": 1,
    "create.null_data_ok": 1,
    "create.ok": 1,
    "get.view_shape": 0,
    "get.view_shape.value": 1,
    "get.view_strides": 0,
    "get.view_strides.value": 1,
    "get.storage_shape": 0,
    "get.storage_shape.value": 1,
    "get.offset": 0,
    "get.offset.value": 5,
    "get.format": 0,
    "get.format.value": 29,
    "get.dtype": 0,
    "get.dtype.value": 27,
    "get.view_shape.null_tensor": 161001,
    "get.offset.null_tensor": 161001,
    "get.format.null_tensor": 161001,
    "get.dtype.null_tensor": 161001,
    "raw.get": 0,
    "raw.get.value": 1,
    "raw.set.null": 161001,
    "raw.get.null": 161001,
    "init_tensor": 0,
    "get.dtype.after_init": 0,
    "get.dtype.after_init.value": 3,
    "scalar.ok": 1,
    "scalar.null_value": 1,
    "int_array.empty_is_valid": 1,
    "int_array.size": 0,
    "int_array.size.value": 3,
    "bool_array.size": 0,
    "bool_array.size.value": 2,
    "list.size": 0,
    "list.size.value": 2,
    "list.destroy": 0,
    "list.member_destroyed_with_list": 161002,
    "destroy.tensor.null": 0,
    "destroy.scalar.null": 0,
    "destroy.int_array.null": 0,
    "destroy.float_array.null": 0,
    "destroy.bool_array.null": 0,
    "destroy.tensor_list.null": 0,
    "destroy.scalar_list.null": 0,
    "destroy.tensor": 0,
    "destroy.tensor.twice": 161002,
    "destroy.scalar": 0,
    "destroy.int_array": 0,
    "destroy.int_array.empty": 0,
    "destroy.float_array": 0,
    "destroy.bool_array": 0,
    "executor.repeatable.null": 561103,
    "executor.destroy.null": 561103,
    "executor.set_input_addr.null": 561103,
    "executor.phase2.null": 161001,
    "executor.phase2.garbage": 561103,
}


def test_meta_rules_through_c(family):
    result = cabi.compile_and_run("meta_rules.cpp", env={"ACLNN_EMU_SOC": family})
    assert result.returncode == 0, result.stdout + result.stderr
    assert cabi.rule_codes(result.stdout) == EXPECTED
    assert "already destroyed Tensor" in result.stderr


# -- the two-phase contract, on a small operator defined here -------------------------------------
def copy_op(workspace_size=64, fail=None):
    """out = x + workspace check; prepare may fail on purpose."""
    op = Op("TestCopy", "none.h", [TensorIn("x"), TensorOut("out")])

    @op.prepare
    def prepare(a, env):
        if fail is not None:
            raise fail

        def run(workspace):
            assert workspace is None or workspace.size == workspace_size
            with np.errstate(over="ignore"):  # a view past its allocation reads whatever bytes lie there
                a.out.write(a.x.read() * 2)

        return Launch(workspace_size, run)

    return op


def phase1(op, *args):
    return calls.get_workspace_size(op, list(args))


@pytest.fixture
def tensors():
    stream = ae.setup()
    x = ae.to_device(np.arange(8, dtype=np.float32))
    out = ae.empty((8,), ae.DataType.ACL_FLOAT)
    yield stream, x, out
    ae.free(x), ae.free(out)


def test_two_phases_run_on_the_stream(tensors):
    stream, x, out = tensors
    op = copy_op()
    code, size, executor = phase1(op, x, out)
    assert (code, size) == (0, 64) and executor
    workspace = ae.api.rt.malloc(size)
    assert calls.run(op.name, workspace, size, executor, stream) == 0
    ae.api.rt.synchronize_stream(stream)
    np.testing.assert_array_equal(ae.numpy(out), np.arange(8) * 2)
    # the executor was single-use: a second phase 2 is an error and a sanitizer report
    assert calls.run(op.name, workspace, size, executor, stream) == status.ACLNN_ERR_INNER_NULLPTR
    assert any(kind == "executor-reuse" for kind, _ in ae.sanitizer_reports())
    ae.api.rt.free(workspace)


def test_null_workspace_with_size_is_161001_and_smaller_is_161002(tensors):
    stream, x, out = tensors
    op = copy_op()
    _, size, executor = phase1(op, x, out)
    assert calls.run(op.name, 0, size, executor, stream) == status.ACLNN_ERR_PARAM_NULLPTR
    _, size, executor = phase1(op, x, out)
    workspace = ae.api.rt.malloc(size)
    assert calls.run(op.name, workspace, size - 32, executor, stream) == status.ACLNN_ERR_PARAM_INVALID
    ae.api.rt.free(workspace)


def test_repeatable_executor_runs_many_times_until_destroyed(tensors, libacl):
    stream, x, out = tensors
    op = copy_op(workspace_size=0)
    _, _, executor = phase1(op, x, out)
    assert libacl.aclSetAclOpExecutorRepeatable(ctypes.c_void_p(executor)) == 0
    for _ in range(3):
        assert calls.run(op.name, 0, 0, executor, stream) == 0
    ae.api.rt.synchronize_stream(stream)
    assert libacl.aclDestroyAclOpExecutor(ctypes.c_void_p(executor)) == 0
    assert calls.run(op.name, 0, 0, executor, stream) == status.ACLNN_ERR_INNER_NULLPTR


def test_updated_tensor_address_is_used_at_launch(tensors, libacl):
    stream, x, out = tensors
    other = ae.to_device(np.full(8, 5, np.float32))
    own = x.addr
    op = copy_op(workspace_size=0)
    _, _, executor = phase1(op, x, out)
    assert (
        libacl.aclSetInputTensorAddr(
            ctypes.c_void_p(executor), 0, ctypes.c_void_p(x.handle), ctypes.c_void_p(other.addr)
        )
        == 0
    )
    assert calls.run(op.name, 0, 0, executor, stream) == 0
    ae.api.rt.synchronize_stream(stream)
    np.testing.assert_array_equal(ae.numpy(out), np.full(8, 10))
    x.addr = own
    ae.free(other)


def test_op_error_becomes_its_status_and_message(tensors):
    _, x, out = tensors
    op = copy_op(fail=OpError(161002, "x has dtype INT8; expected FLOAT", rule="dtype.x"))
    assert phase1(op, x, out) == (161002, 0, 0)
    message = ae.api.take_recent()
    assert "ACLNN_ERR_PARAM_INVALID(161002)" in message and "x has dtype INT8; expected FLOAT" in message


def test_unimplemented_operator_returns_561003_not_success(tensors):
    _, x, out = tensors
    op = Op("TestMissing", "none.h", [TensorIn("x"), TensorOut("out")])
    assert phase1(op, x, out) == (status.ACLNN_ERR_INNER_FIND_KERNEL_ERROR, 0, 0)
    assert "is not implemented in aclnn-emu" in ae.api.take_recent()


def test_kernel_exception_surfaces_at_synchronize(tensors):
    stream, x, out = tensors
    op = Op("TestBroken", "none.h", [TensorIn("x"), TensorOut("out")])

    @op.prepare
    def prepare(a, env):
        return Launch(0, lambda ws: 1 / 0)

    _, _, executor = phase1(op, x, out)
    assert calls.run(op.name, 0, 0, executor, stream) == 0
    with pytest.raises(ae.api.AclError) as err:
        ae.api.rt.synchronize_stream(stream)
    assert err.value.code == status.ACL_ERROR_RT_AICORE_EXCEPTION


def test_c_and_python_return_the_same_codes(libacl):
    ae.setup()
    args = [None] * 12
    expected = ae.raw.aclnnScatterPaKvCacheGetWorkspaceSize(*args)[0]
    ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
    got = libacl.aclnnScatterPaKvCacheGetWorkspaceSize(
        *([None] * 8), None, None, None, None, ctypes.byref(ws), ctypes.byref(ex)
    )
    assert got == expected != 0


def test_tensor_view_past_its_allocation_is_reported(tensors):
    stream, x, out = tensors
    sanitizer_before = len(ae.sanitizer_reports())
    wide = ae.Tensor((64,), ae.DataType.ACL_FLOAT, addr=x.addr)  # 256 bytes over a 32-byte block
    op = copy_op(workspace_size=0)
    wide_out = ae.empty((64,), ae.DataType.ACL_FLOAT)
    _, _, executor = phase1(op, wide, wide_out)
    assert calls.run(op.name, 0, 0, executor, stream) == 0
    ae.api.rt.synchronize_stream(stream)
    found = ae.sanitizer_reports()[sanitizer_before:]
    assert any(
        kind == "out-of-bounds" and "224 bytes past the end of the 32-byte allocation" in text for kind, text in found
    ), found
    wide.destroy(), ae.free(wide_out)


def test_an_entry_point_runs_its_own_checks_then_its_base_prepare():
    """A second entry point of one operator (Op(..., base=OP)) shares OP's prepare; checks of its own
    op_api (`@V1.check`) run first, in registration order."""
    import types

    base = Op("Shared", "aclnn_shared.h", [TensorIn("x")])
    v1 = Op("SharedV1", "aclnn_shared.h", [TensorIn("x")], base=base)
    seen = []

    @base.prepare
    def prepare(a, env):
        seen.append("prepare")
        return Launch.nothing()

    assert v1.prepare_fn is prepare  # no checks of its own: the base's prepare as is

    @v1.check
    def not_null(a, env):
        seen.append("check")
        if a.x is None:
            raise OpError(161001, "x is null", rule="v1.x_null")

    v1.prepare_fn(types.SimpleNamespace(x=1), None)
    assert seen == ["check", "prepare"]
    with pytest.raises(OpError, match="x is null"):
        v1.prepare_fn(types.SimpleNamespace(x=None), None)
    assert seen == ["check", "prepare", "check"] and base.prepare_fn is prepare
