"""Virtual memory through the C ABI (tests/c/runtime_vmm.cpp): reserve, allocate physical memory,
map it, let ScatterPaKvCache write a cache that straddles two mappings, read it back, unmap.

Codes (hicann/runtime v8.5.0): memory.cpp = src/acl/aclrt_impl/memory.cpp decides the
ACL_ERROR_INVALID_PARAM cases (aclrtReserveMemAddressImpl: NULL virPtr, size 0, flags not 0/1;
aclrtMallocPhysicalImpl: NULL handle/prop, size 0, flags, handle and allocation types, an
UNREGISTERED location, DDR attributes on a device; aclrtMapMemImpl: size 0, flags; the NULL checks
of aclrtUnmapMem/ReleaseMemAddress/FreePhysical). The driver decides the rest, returning
DRV_ERROR_INVALID_VALUE, which src/runtime/core/src/common/errcode_manage.cc turns into
ACL_ERROR_RT_PARAM_INVALID (docs/divergences/runtime_api.md lists the rules, from the API docs:
alignment 0, expectPtr 1 GiB aligned, offset 0, size equal to the physical size). A device id that
does not exist is ACL_ERROR_RT_INVALID_DEVICEID (src/runtime/feature/src/api_impl/api_error.cc,
ApiErrorDecorator::MallocPhysical)."""

import pytest

import cabi

OK, INVALID_PARAM, RT_PARAM_INVALID, RT_INVALID_DEVICEID = 0, 100000, 107000, 107001

EXPECTED = {
    "granularity": OK,
    "reserve_size_zero": INVALID_PARAM,
    "reserve_flags_bad": INVALID_PARAM,
    "reserve_alignment": RT_PARAM_INVALID,
    "reserve_expect_unaligned": RT_PARAM_INVALID,
    "reserve_null": INVALID_PARAM,
    "reserve": OK,
    "physical_size_zero": INVALID_PARAM,
    "physical_flags": INVALID_PARAM,
    "physical_ddr_on_device": INVALID_PARAM,
    "physical_unregistered": INVALID_PARAM,
    "physical_bad_device": RT_INVALID_DEVICEID,
    "physical_null_prop": INVALID_PARAM,
    "physical": OK,
    "physical_second": OK,
    "map_offset": RT_PARAM_INVALID,
    "map_size_mismatch": RT_PARAM_INVALID,
    "map_misaligned": RT_PARAM_INVALID,
    "map_outside": RT_PARAM_INVALID,
    "map_flags": INVALID_PARAM,
    "map": OK,
    "map_overlap": RT_PARAM_INVALID,
    "map_second": OK,
    "free_physical_mapped": RT_PARAM_INVALID,
    "release_mapped": RT_PARAM_INVALID,
    "memcpy_into_mapping": OK,
    "scatter_into_mapping": OK,
    "memcpy_from_mapping": OK,
    "unmap": OK,
    "unmap_again": RT_PARAM_INVALID,
    "memcpy_unmapped": RT_PARAM_INVALID,  # the driver's range check, as for any unmapped device range
    "unmap_second": OK,
    "free_physical": OK,
    "free_physical_again": RT_PARAM_INVALID,
    "free_physical_second": OK,
    "release": OK,
    "release_again": RT_PARAM_INVALID,
    "release_null": INVALID_PARAM,
    # memory.cpp aclrtHostRegisterImpl / aclrtHostGetDevicePointerImpl / aclrtHostUnregisterImpl: NULL,
    # size 0 and a non-zero flag are ACL_ERROR_INVALID_PARAM; the rest is the driver's (see above).
    "host_register_size_zero": INVALID_PARAM,
    "host_register_null": INVALID_PARAM,
    "host_register_bad_type": RT_PARAM_INVALID,
    "host_register": OK,
    "host_register_twice": RT_PARAM_INVALID,
    "host_device_pointer": OK,
    "host_device_pointer_offset_value": 100,
    "host_device_pointer_flag": INVALID_PARAM,
    "copy_from_registered": OK,
    "registered_bytes_seen_value": 1,
    "memset_registered": OK,
    "registered_bytes_written_value": 1,
    # memory.cpp aclrtCmoAsyncImpl: NULL src and size 0 are ACL_ERROR_INVALID_PARAM; a host range
    # is refused by the runtime (ACL_ERROR_RT_PARAM_INVALID).
    "cmo_prefetch": OK,
    "cmo_null": INVALID_PARAM,
    "cmo_size_zero": INVALID_PARAM,
    "cmo_host": RT_PARAM_INVALID,
    "cmo_sync": OK,
    "host_unregister": OK,
    "host_unregister_again": RT_PARAM_INVALID,
    "copy_from_unregistered": RT_PARAM_INVALID,
    "done": 0,
    "granularity_value": 2 << 20,  # ACL_HBM_MEM_HUGE: 2 MiB pages (aclrtMallocPhysical docs)
    "scatter_bytes_exact_value": 1,
}


@pytest.fixture(scope="module")
def vmm_run(family):
    return cabi.compile_and_run("runtime_vmm.cpp", env={"ACLNN_EMU_SOC": family})


def test_program_completes_cleanly(vmm_run):
    assert vmm_run.returncode == 0, vmm_run.stdout + vmm_run.stderr
    assert "sanitizer" not in vmm_run.stderr, vmm_run.stderr


@pytest.mark.parametrize("rule", EXPECTED)
def test_code(vmm_run, rule):
    assert cabi.rule_codes(vmm_run.stdout).get(rule) == EXPECTED[rule], vmm_run.stdout


def test_every_printed_line_is_asserted(vmm_run):
    assert set(cabi.rule_codes(vmm_run.stdout)) == set(EXPECTED)
