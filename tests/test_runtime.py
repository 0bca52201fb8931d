"""Runtime rules of reference acl-abi.md §4, asserted through a compiled C++ program."""

import pytest

import cabi
from aclnn_emu import platform

EXPECTED = {
    # §4.1
    "init.first": 0,
    "init.repeat": 100002,
    "finalize": 0,
    "finalize.repeat": 100037,
    "init.after_finalize": 0,
    "finalize.second_cycle": 0,
    # §4.2 devices, contexts, streams
    "device.count": 0,
    "device.count.value": 1,
    "device.bad_id": 107001,
    "device.negative_id": 107001,
    "context.none.malloc": 107002,
    "context.none.memcpy": 107002,
    "context.none.create_stream": 107002,
    "device.set": 0,
    "device.get": 0,
    "device.get.value": 0,
    "run_mode": 0,
    "run_mode.value": 1,
    "context.create.null": 100000,
    "context.create.bad_device": 107001,
    "context.get_current": 0,
    "context.create": 0,
    "context.set_current": 0,
    "context.set_current.null": 100000,
    "context.destroy.null": 100000,
    "context.destroy.garbage": 107002,
    "context.destroy.primary": 107002,
    "context.set_primary": 0,
    "context.destroy": 0,
    "context.destroy.again": 107002,
    "stream.create.null": 100000,
    "stream.create": 0,
    "stream.destroy.null": 100000,
    "stream.destroy.garbage": 107017,
    "stream.sync.null": 0,
    "stream.sync": 0,
    "stream.sync.garbage": 107017,
    "stream.destroy": 0,
    "stream.destroy.again": 107017,
    "device.reset": 0,
    # §4.3 malloc: ALIGN_UP(100, 32) + 32 = 160 bytes, next block at the next 64-byte boundary
    "malloc.zero": 100000,
    "malloc.null_out": 100000,
    "malloc.ok": 0,
    "malloc.ok2": 0,
    "malloc.align64": 0,
    "malloc.padded_gap": 192,
    # §4.5 memcpy, in CANN's order
    "memcpy.count0_nulls": 0,
    "memcpy.null_dst": 100000,
    "memcpy.null_src": 100000,
    "memcpy.kind_inner_d2d": 100000,
    "memcpy.kind_out_of_range": 100000,
    "memcpy.dest_max0": 107000,
    "memcpy.count_gt_dest_max": 107000,
    "memcpy.same_pointer": 0,
    "memcpy.h2d": 0,
    "memcpy.d2d": 0,
    "memcpy.d2h": 0,
    "memcpy.roundtrip_equal": 1,
    "memcpy.d2h_small": 0,
    "memcpy.d2d_equal": 1,
    "memcpy.overread": 0,
    "memcpy.default_kind": 0,
    "memcpy.kind_mismatch": 107000,
    "memset.count0": 0,
    "memset.null": 100000,
    "memset.count_gt_max": 107000,
    "memset.ok": 0,
    "memset.value": 1,
    "memcpy_async.count0": 0,
    "memcpy_async.null": 100000,
    "memcpy_async.bad_kind": 100000,
    "memcpy_async.h2d": 0,
    "memset_async.ok": 0,
    "memcpy_async.bad_stream": 107017,
    "stream.sync_after_async": 0,
    "memcpy_async.equal": 1,
    # events
    "event.create.null": 100000,
    "event.create": 0,
    "event.create_with_flag": 0,
    "event.query.unrecorded": 0,
    "event.query.unrecorded.value": 0,
    "event.elapsed.unrecorded": 507006,
    "event.record": 0,
    "event.record_end": 0,
    "event.sync": 0,
    "event.query": 0,
    "event.query.value": 1,
    "event.elapsed": 0,
    "event.elapsed.nonnegative": 1,
    "event.wait": 0,
    "event.wait.default_stream": 0,
    "event.reset": 0,
    "event.destroy.null": 100000,
    "event.destroy.garbage": 107017,
    "event.destroy": 0,
    "device.synchronize": 0,
    # §4.4 free
    "free.null": 100000,
    "free.host_pointer": 107000,
    "free.ok": 0,
    "free.double": 107000,
    "memcpy.use_after_free": 0,
    "malloc_host.zero": 100000,
    "malloc_host.ok": 0,
    "free_host.null": 100000,
    "free_host.ok": 0,
    "mem_info": 0,
    "mem_info.consistent": 1,
    "errmsg.after_error": 1,
    "version": 0,
}


@pytest.fixture(scope="module")
def runtime_run(family):
    """The runtime's status suite on each chip family: no runtime rule depends on the chip."""
    return cabi.compile_and_run("runtime_rules.cpp", env={"ACLNN_EMU_SOC": family})


def test_runtime_program_completes(runtime_run):
    assert runtime_run.returncode == 0, runtime_run.stdout + runtime_run.stderr


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_runtime_rule(runtime_run, rule):
    codes = cabi.rule_codes(runtime_run.stdout)
    assert codes.get(rule) == EXPECTED[rule], f"{rule}: got {codes.get(rule)}, expected {EXPECTED[rule]}"


def test_every_printed_rule_is_asserted(runtime_run):
    assert set(cabi.rule_codes(runtime_run.stdout)) == set(EXPECTED)


def test_sanitizer_reports_overread_double_free_and_use_after_free(runtime_run):
    err = runtime_run.stderr
    assert "out-of-bounds: memcpy source" in err and "256 bytes past the end of the 256-byte allocation" in err
    assert "double-free" in err
    assert "use-after-free: memcpy destination" in err


def test_soc_name_is_the_part_the_family_name_means(runtime_run, family):
    assert f"errmsg.soc {platform.part(family).name}\n" in runtime_run.stdout


def test_a_wrapped_handle_counter_never_hands_out_a_live_handle(monkeypatch):
    """After 2**36 registrations the handle range wraps; a handle still live is skipped, not overwritten."""
    import itertools
    from aclnn_emu.runtime import handles

    live = object()
    handle = handles.register(live)
    slot = (handle - handles._base) // handles._STEP
    monkeypatch.setattr(handles, "_counter", itertools.count(slot + handles._SPAN // handles._STEP))
    other = handles.register(object())
    try:
        assert other != handle and handles.lookup(handle, object) is live
    finally:
        handles.release(handle)
        handles.release(other)
