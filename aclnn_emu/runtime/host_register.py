"""Host memory registered for device access (aclrtHostRegister, aclrtHostGetDevicePointer,
aclrtHostUnregister): the program's host pages get device addresses of their own, which copies and
operators use as device memory while the bytes stay where the program keeps them.

Codes: the acl layer's checks (runtime src/acl/aclrt_impl/memory.cpp: NULL pointers, size 0, a
flag other than 0 for aclrtHostGetDevicePointer: ACL_ERROR_INVALID_PARAM); what the driver refuses
(a type other than ACL_HOST_REGISTER_MAPPED, a range registered twice, a pointer never registered)
is ACL_ERROR_RT_PARAM_INVALID, as in vmm.py."""

from .. import status
from . import host_ranges, vmm
from .errors import AclError
from .memory import MAP_PAGE, _libc

HOST_REGISTER_MAPPED = 0


class Registration(vmm.Region):
    def __init__(self, host: int, size: int):
        self.size = size
        self.view = host
        self.start = vmm.reserve_pages(-(-size // MAP_PAGE) * MAP_PAGE)

    def mapped(self, addr: int, nbytes: int) -> int:
        return max(0, min(addr + nbytes, self.start + self.size) - addr) if self.contains(addr) else 0


_by_host: dict[int, Registration] = {}


def register(host: int, size: int, kind: int) -> int:
    if host == 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "ptr must not be NULL", rule="host_register.null")
    if size == 0:
        raise AclError(
            status.ACL_ERROR_INVALID_PARAM, "register size must be greater than zero", rule="host_register.size"
        )
    if kind != HOST_REGISTER_MAPPED:
        raise vmm.refused(f"type {kind} is not ACL_HOST_REGISTER_MAPPED (0)", "host_register.type")
    if not host_ranges.accessible(host, size, True):
        raise vmm.refused(f"[{host:#x}, +{size}) is not mapped writable host memory", "host_register.range")
    if any(r.view < host + size and host < r.view + r.size for r in _by_host.values()):
        raise vmm.refused(f"[{host:#x}, +{size}) overlaps memory already registered", "host_register.twice")
    found = Registration(host, size)
    _by_host[host] = found
    vmm.add_region(found)
    return found.start


def device_pointer(host: int, flag: int) -> int:
    if flag != 0:
        raise AclError(status.ACL_ERROR_INVALID_PARAM, "flag must be zero", rule="host_register.flag")
    for found in _by_host.values():
        if found.view <= host < found.view + found.size:
            return found.start + (host - found.view)
    raise vmm.refused(f"{host:#x} lies in no registered host memory", "host_register.unknown")


def unregister(host: int) -> None:
    found = _by_host.pop(host, None)
    if found is None:
        raise vmm.refused(f"{host:#x} is not the start of registered host memory", "host_register.unknown")
    vmm.remove_region(found)
    _libc.munmap(found.start, -(-found.size // MAP_PAGE) * MAP_PAGE)


def forget_after_fork() -> None:
    _by_host.clear()
