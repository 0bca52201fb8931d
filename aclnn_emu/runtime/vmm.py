"""Virtual memory management: reserved address ranges, physical memory handles, mappings
(aclrtReserveMemAddress, aclrtMallocPhysical, aclrtMapMem and their inverses).

Physical memory is taken from a device's arena, whole pages aligned to the granularity, so an
operator that reads a mapped address reads the same pages the arena holds. A reserved range is two
inaccessible address ranges: the one handed to the program (a host dereference faults, as device
memory does) and the emulator's view, where each mapping maps the physical pages read-write. A
range is found by `region_of`, which the copies and the operators ask through devices.memory_of.

Codes: the acl layer's checks (runtime src/acl/aclrt_impl/memory.cpp) return
ACL_ERROR_INVALID_PARAM; what the driver refuses (alignment, ranges, sizes against the granularity,
mapping state; its checks are not public) is ACL_ERROR_RT_PARAM_INVALID, the code its
DRV_ERROR_INVALID_VALUE becomes (src/runtime/core/src/common/errcode_manage.cc)."""

import bisect
import ctypes
import mmap
import threading

import numpy as np

from .. import status
from . import devices, handles
from .errors import AclError
from .memory import _MAP_FAILED, _MAP_FIXED, _MAP_NORESERVE, MAP_PAGE, _libc

HUGE_PAGE = MAP_PAGE  # ACL_HBM_MEM_HUGE, and ACL_HBM_MEM_NORMAL, which the runtime serves with huge pages
HUGE_1G = 1 << 30  # ACL_HBM_MEM_HUGE1G
EXPECT_ALIGN = 1 << 30  # an expectPtr must be 1 GiB aligned (aclrtReserveMemAddress docs)
# aclrtMemAttr values aclrtMallocPhysical accepts for device memory, with their granularity.
HBM_MEM_HUGE, HBM_MEM_NORMAL, HBM_MEM_HUGE1G = 4, 5, 10
MEM_NORMAL, MEM_HUGE, MEM_HUGE1G, MEM_P2P_NORMAL, MEM_P2P_HUGE, MEM_P2P_HUGE1G = 12, 13, 14, 15, 16, 17
DDR_ONLY = (2, 3, 6, 7)  # ACL_DDR_MEM_HUGE, _NORMAL, _P2P_HUGE, _P2P_NORMAL: host locations only
GRANULARITY = {
    HBM_MEM_HUGE: HUGE_PAGE,
    HBM_MEM_NORMAL: HUGE_PAGE,
    HBM_MEM_HUGE1G: HUGE_1G,
    MEM_NORMAL: HUGE_PAGE,
    MEM_HUGE: HUGE_PAGE,
    MEM_HUGE1G: HUGE_1G,
    MEM_P2P_NORMAL: HUGE_PAGE,
    MEM_P2P_HUGE: HUGE_PAGE,
    MEM_P2P_HUGE1G: HUGE_1G,
}
GRANULARITY_QUERY = (HBM_MEM_HUGE, HBM_MEM_NORMAL, HBM_MEM_HUGE1G)  # what aclrtMemGetAllocationGranularity takes
LOCATION_HOST, LOCATION_DEVICE, LOCATION_UNREGISTERED, LOCATION_HOST_NUMA = 0, 1, 2, 4


def invalid(message: str, rule: str) -> AclError:
    return AclError(status.ACL_ERROR_INVALID_PARAM, message, rule=f"vmm.{rule}")


def refused(message: str, rule: str) -> AclError:
    return AclError(status.ACL_ERROR_RT_PARAM_INVALID, message, rule=f"vmm.{rule}")


def reserve_pages(size: int, at: int = 0) -> int:
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
    addr = _libc.mmap(at or None, size, 0, flags, -1, 0)
    if addr in (None, _MAP_FAILED):
        raise AclError(status.ACL_ERROR_RT_MEMORY_ALLOCATION, f"cannot reserve {size} bytes of addresses")
    if at and addr != at:
        _libc.munmap(addr, size)
        raise refused(f"expectPtr {at:#x} is not free", "expect.taken")
    return addr


class Physical:
    """Pages of one device's arena behind an aclrtDrvMemHandle."""

    def __init__(self, device, size: int, granularity: int):
        self.device, self.size, self.granularity = device, size, granularity
        self.addr = device.memory.malloc(size, align=granularity, padded=False)
        self.mappings = 0
        self.handle = handles.register(self)


class Region:
    """Device addresses whose bytes live elsewhere on the host (`host_address`): the interface of
    memory.DeviceMemory the copies and the tensors use. `mapped` says how far an access may go."""

    start = size = view = 0

    def mapped(self, addr: int, nbytes: int) -> int:
        raise NotImplementedError

    def contains(self, addr: int) -> bool:
        return self.start <= addr < self.start + self.size

    def require_mapped(self, addr: int, nbytes: int, what: str, code: int) -> None:
        if self.mapped(addr, nbytes) < nbytes:
            raise AclError(
                code, f"{what}: [{addr:#x}, +{nbytes}) reaches addresses that are not mapped", rule="vmm.unmapped"
            )

    def check(self, addr, nbytes, what, owner=None, code=status.ACL_ERROR_RT_AICORE_EXCEPTION) -> None:
        if nbytes > 0:
            self.require_mapped(addr, nbytes, what, code)

    def report(self, addr, nbytes, what, owner=None) -> None:
        """A region has no allocations inside it: nothing for the sanitizer to report."""

    def host_address(self, addr: int) -> int:
        return self.view + (addr - self.start)

    def array(self, addr: int, nbytes: int) -> np.ndarray:
        self.require_mapped(addr, nbytes, "access", status.ACL_ERROR_RT_AICORE_EXCEPTION)
        return np.frombuffer((ctypes.c_char * nbytes).from_address(self.host_address(addr)), dtype=np.uint8)  # type: ignore[call-overload]


class Reservation(Region):
    """A reserved range: the program's addresses and the emulator's view of the mapped pages."""

    def __init__(self, size: int, expect: int):
        self.size = size
        self.start = reserve_pages(size, expect)
        self.view = reserve_pages(size)
        self.maps: dict[int, tuple[int, Physical]] = {}  # start -> (size, physical)

    def mapped(self, addr: int, nbytes: int) -> int:
        """Bytes of [addr, addr+nbytes) that lie in consecutive mappings, counted from addr."""
        reach = addr
        for start in sorted(self.maps):
            size = self.maps[start][0]
            if start <= reach < start + size:
                reach = start + size
        return max(0, min(reach, addr + nbytes) - addr)

    def release(self) -> None:
        for base in (self.start, self.view):
            _libc.munmap(base, self.size)


_lock = threading.Lock()
_ranges: dict[int, Region] = {}  # start -> reserved range or host registration
_starts: list[int] = []


def add_region(found: Region) -> None:
    with _lock:
        _ranges[found.start] = found
        bisect.insort(_starts, found.start)


def remove_region(found: Region) -> None:
    with _lock:
        del _ranges[found.start]
        _starts.remove(found.start)


def region_of(addr: int) -> Region | None:
    with _lock:
        i = bisect.bisect_right(_starts, addr) - 1
        found = _ranges[_starts[i]] if i >= 0 else None
    return found if found is not None and found.contains(addr) else None


devices.region_finders.append(region_of)


def reserve(size: int, alignment: int, expect: int, flags: int) -> int:
    """aclrtReserveMemAddressImpl: size 0 and flags other than 0/1 are the acl layer's
    ACL_ERROR_INVALID_PARAM; a non-zero alignment or an expectPtr off 1 GiB the driver's."""
    if size == 0:
        raise invalid("reserve size must be greater than zero", "reserve.size")
    if flags not in (0, 1):
        raise invalid(f"flags {flags} must be 0 (normal pages) or 1 (huge pages)", "reserve.flags")
    if alignment != 0:
        raise refused(f"alignment {alignment} is reserved and must be 0", "reserve.alignment")
    if expect % EXPECT_ALIGN:
        raise refused(f"expectPtr {expect:#x} is not 1 GiB aligned", "reserve.expect")
    size = -(-size // HUGE_PAGE) * HUGE_PAGE
    found = Reservation(size, expect)
    add_region(found)
    return found.start


def _reservation_at(addr: int, what: str) -> Reservation:
    found = region_of(addr)
    if not isinstance(found, Reservation) or found.start != addr:
        raise refused(f"{what}: {addr:#x} is not the start of a reserved range", "release.unknown")
    return found


def release(addr: int) -> None:
    found = _reservation_at(addr, "aclrtReleaseMemAddress")
    if found.maps:
        raise refused(
            f"{len(found.maps)} mapping(s) in the range at {addr:#x} must be unmapped first", "release.mapped"
        )
    remove_region(found)
    found.release()


def granularity(mem_attr: int, option: int) -> int:
    """aclrtMemGetAllocationGranularityImpl: only the HBM attributes are accepted."""
    if mem_attr not in GRANULARITY_QUERY:
        raise invalid(f"memAttr {mem_attr} is not ACL_HBM_MEM_HUGE, _NORMAL or _HUGE1G", "granularity.attr")
    if option not in (0, 1):
        raise refused(f"option {option} is not MINIMUM (0) or RECOMMENDED (1)", "granularity.option")
    return GRANULARITY[mem_attr]


def malloc_physical(
    size: int, handle_type: int, allocation_type: int, mem_attr: int, location_type: int, device_id: int, flags: int
) -> int:
    """aclrtMallocPhysicalImpl's checks in its order, then the device check of the runtime
    (api_error.cc, ApiErrorDecorator::MallocPhysical) and the allocation."""
    if size == 0:
        raise invalid("malloc size must be greater than zero", "physical.size")
    if flags != 0:
        raise invalid("flags must be 0", "physical.flags")
    if handle_type != 0:
        raise invalid("handleType must be ACL_MEM_HANDLE_TYPE_NONE", "physical.handle_type")
    if allocation_type != 0:
        raise invalid("allocationType must be ACL_MEM_ALLOCATION_TYPE_PINNED", "physical.allocation_type")
    if location_type == LOCATION_UNREGISTERED:
        raise invalid("locationType does not support ACL_MEM_LOCATION_TYPE_UNREGISTERED", "physical.location")
    if location_type == LOCATION_DEVICE and mem_attr in DDR_ONLY:
        raise invalid(f"memAttr {mem_attr} is for host locations only", "physical.ddr")
    if mem_attr not in GRANULARITY:
        raise invalid(f"memAttr {mem_attr} is not supported for physical memory", "physical.attr")
    if location_type != LOCATION_DEVICE:
        raise AclError(
            status.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "physical memory on the host is not emulated: only ACL_MEM_LOCATION_TYPE_DEVICE",
            rule="vmm.physical.host",
        )
    device = devices.device(device_id)
    grain = GRANULARITY[mem_attr]
    return Physical(device, -(-size // grain) * grain, grain).handle


def physical_of(handle: int) -> Physical:
    code = status.ACL_ERROR_RT_PARAM_INVALID
    return handles.live(handle, Physical, "physical memory handle", code, "vmm.physical.handle", "an already freed")


def free_physical(handle: int) -> None:
    physical = physical_of(handle)
    if physical.mappings:
        raise refused("the physical memory is still mapped: aclrtUnmapMem it first", "physical.mapped")
    handles.release(handle)
    physical.device.memory.free(physical.addr)


def map_memory(addr: int, size: int, offset: int, handle: int, flags: int) -> None:
    """aclrtMapMemImpl: size 0 and flags other than 0 are ACL_ERROR_INVALID_PARAM; the driver
    wants offset 0, the whole physical size, and a free, granularity-aligned part of a reservation."""
    if size == 0:
        raise invalid("map size must be greater than zero", "map.size")
    if flags != 0:
        raise invalid("flags must be 0", "map.flags")
    physical = physical_of(handle)
    if offset != 0:
        raise refused(f"offset {offset} must be 0", "map.offset")
    if size != physical.size:
        raise refused(f"size {size} must equal the physical memory's size {physical.size}", "map.size_mismatch")
    found = region_of(addr)
    if not isinstance(found, Reservation) or addr + size > found.start + found.size:
        raise refused(f"[{addr:#x}, +{size}) is not inside a reserved range", "map.outside")
    if (addr - found.start) % physical.granularity:
        raise refused(f"{addr:#x} is not aligned to the granularity {physical.granularity}", "map.alignment")
    if found.mapped(addr, 1) or any(s < addr + size and addr < s + n for s, (n, _) in found.maps.items()):
        raise refused(f"[{addr:#x}, +{size}) overlaps a mapping", "map.overlap")
    physical.device.memory.map_into(found.host_address(addr), physical.addr, size)
    found.maps[addr] = (size, physical)
    physical.mappings += 1


def unmap_memory(addr: int) -> None:
    found = region_of(addr)
    if not isinstance(found, Reservation) or addr not in found.maps:
        raise refused(f"{addr:#x} is not the start of a mapping", "unmap.unknown")
    size, physical = found.maps.pop(addr)
    _unmap_view(found.host_address(addr), size)
    physical.mappings -= 1


def _unmap_view(view: int, size: int) -> None:
    """Put inaccessible, uncommitted pages back where a mapping was."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE | _MAP_FIXED
    if _libc.mmap(view, size, 0, flags, -1, 0) in (None, _MAP_FAILED):
        raise OSError(ctypes.get_errno(), "unmapping a reserved range failed")


def forget_after_fork() -> None:
    """In a forked child: the reserved ranges stop sharing the parent's pages (their addresses stay
    reserved and inaccessible, and are recognised as the parent's, as the arenas are)."""
    global _lock
    _lock = threading.Lock()
    for found in _ranges.values():
        if isinstance(found, Reservation):  # a host registration's view is the program's own memory
            for base in (found.start, found.view):
                _unmap_view(base, found.size)
        devices.forget_range(found.start, found.start + found.size)
    _ranges.clear()
    _starts.clear()
