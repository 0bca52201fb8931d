"""Device memory: one memfd mapped twice.

The first mapping has no access rights; its addresses are the device pointers handed to programs,
so a host dereference faults as it would on an NPU. The second mapping is read-write and backs the
emulator's zero-copy numpy views. Pages are committed on first touch and given back on free (hole
punching), so a large ACLNN_EMU_DEVICE_MEMORY costs nothing until used.

What an access may reach follows the driver, which maps device memory in 2 MiB pages
(ACL_MEM_MALLOC_HUGE_FIRST) and packs allocations into them: a page is mapped while a live
allocation touches it. An access that stays in mapped pages but leaves its own allocation reads
or writes the neighbouring memory, as on an NPU, and the sanitizer reports it; an access that
reaches an unmapped page (past the last allocation's page, below the arena, a fully freed page)
is an error before anything moves, so a wild count can never sweep the whole arena.
"""

import bisect
import ctypes
import dataclasses
import mmap
import os
import threading

import numpy as np

from .. import status
from . import sanitizer
from .errors import AclError

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_MAP_FIXED, _MAP_NORESERVE = 0x10, 0x4000
_MAP_FAILED = ctypes.c_void_p(-1).value

ALIGN = 32  # DATA_MEMORY_ALIGN_SIZE
PADDING = 32  # DATA_MEMORY_PADDING_SIZE
START_ALIGN = 64  # the docs promise 64-byte aligned start addresses
PUNCH_MIN = 2 << 20  # give pages back only for frees of at least this many bytes
MAP_PAGE = 2 << 20  # the driver's huge page: the unit in which device memory is mapped


def padded_size(size: int) -> int:
    """ALIGN_UP(size, 32) + 32: what aclrtMalloc really reserves."""
    return (size + ALIGN - 1) // ALIGN * ALIGN + PADDING


@dataclasses.dataclass
class Allocation:
    addr: int  # device address
    size: int  # bytes the caller asked for
    reserved: int  # bytes taken from the arena


class DeviceMemory:
    """The arena of one device: allocation, bounds lookup and host access."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.size = -(-capacity // MAP_PAGE) * MAP_PAGE  # whole pages, so the last one can be mapped
        self._fd = os.memfd_create("aclnn-emu-device", os.MFD_CLOEXEC)
        os.ftruncate(self._fd, self.size)
        self.device_base = self._map(0)  # PROT_NONE
        self.host_base = self._map(mmap.PROT_READ | mmap.PROT_WRITE)
        self._lock = threading.Lock()
        self._free = [(0, capacity)]  # sorted (offset, size) holes
        self._live: dict[int, Allocation] = {}  # device address -> allocation
        self._starts: list[int] = []  # sorted live addresses, for bisect
        self._freed: dict[int, Allocation] = {}  # recently freed, for use-after-free reports
        self._freed_starts: list[int] = []
        self.used = 0

    def _map(self, prot: int) -> int:
        addr = _libc.mmap(None, self.size, prot, mmap.MAP_SHARED, self._fd, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap of device memory failed")
        return addr

    def address_range(self) -> tuple[int, int]:
        """[start, end) of this arena's device addresses (whole mapped pages)."""
        return self.device_base, self.device_base + self.size

    def detach_after_fork(self) -> None:
        """In a forked child: stop sharing the parent's device memory. Both mappings are replaced in
        place by private anonymous ones (device addresses stay reserved and inaccessible; numpy views
        kept across the fork read zeros and write only the child's own pages)."""
        private = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED | _MAP_NORESERVE
        for base, prot in ((self.device_base, 0), (self.host_base, mmap.PROT_READ | mmap.PROT_WRITE)):
            if _libc.mmap(base, self.size, prot, private, -1, 0) in (None, _MAP_FAILED):
                raise OSError(ctypes.get_errno(), "remapping the parent's device memory failed")
        os.close(self._fd)

    # -- allocation ---------------------------------------------------------------------------
    def malloc(self, size: int, align: int = START_ALIGN, padded: bool = True) -> int:
        """`align`: start alignment (physical memory for virtual mappings takes whole pages);
        `padded`: reserve what aclrtMalloc reserves (padded_size) rather than exactly `size`."""
        need = padded_size(size) if padded else size
        with self._lock:
            for i, (off, hole) in enumerate(self._free):
                start = (off + align - 1) // align * align
                if start + need <= off + hole:
                    self._take(i, off, hole, start, need)
                    break
            else:
                raise AclError(
                    status.ACL_ERROR_RT_MEMORY_ALLOCATION,
                    f"out of device memory: {size} bytes requested, {self.capacity - self.used} "
                    f"of {self.capacity} free (ACLNN_EMU_DEVICE_MEMORY)",
                    rule="malloc.oom",
                )
            addr = self.device_base + start
            alloc = Allocation(addr, size, need)
            self._live[addr] = alloc
            bisect.insort(self._starts, addr)
            self._forget_freed(addr, need)
            self.used += need
            return addr

    def _take(self, i, off, hole, start, need):
        pieces = [(off, start - off), (start + need, off + hole - start - need)]
        self._free[i : i + 1] = [p for p in pieces if p[1] > 0]

    def _forget_freed(self, addr, need):
        """Drop the freed-block records a new allocation reuses (their addresses are live again)."""
        first = max(bisect.bisect_left(self._freed_starts, addr) - 1, 0)  # one may start below addr
        reused = [
            start
            for start in self._freed_starts[first:]
            if start < addr + need and start + self._freed[start].reserved > addr
        ]
        for start in reused:
            del self._freed[start]
            self._freed_starts.remove(start)

    def free(self, addr: int) -> None:
        with self._lock:
            alloc = self._live.pop(addr, None)
            if alloc is None:
                return self._bad_free(addr)
            self._starts.remove(addr)
            self._freed[addr] = alloc
            bisect.insort(self._freed_starts, addr)
            self.used -= alloc.reserved
            self._release(addr - self.device_base, alloc.reserved)

    def _bad_free(self, addr: int) -> None:
        if addr in self._freed:
            sanitizer.report(
                "double-free",
                f"aclrtFree({addr:#x}): this block was already freed",
                code=status.ACL_ERROR_RT_PARAM_INVALID,
            )
        else:
            sanitizer.report(
                "invalid-free",
                f"aclrtFree({addr:#x}): not an address returned by aclrtMalloc",
                code=status.ACL_ERROR_RT_PARAM_INVALID,
            )
        raise AclError(
            status.ACL_ERROR_RT_PARAM_INVALID,
            f"aclrtFree: {addr:#x} is not a live device allocation",
            rule="free.unknown",
        )

    def _release(self, off: int, size: int) -> None:
        """Return a range to the free list (coalescing) and its whole pages to the kernel."""
        i = bisect.bisect_left(self._free, (off, 0))
        self._free.insert(i, (off, size))
        if i + 1 < len(self._free) and off + size == self._free[i + 1][0]:
            self._free[i : i + 2] = [(off, size + self._free[i + 1][1])]
        if i > 0 and self._free[i - 1][0] + self._free[i - 1][1] == off:
            self._free[i - 1 : i + 1] = [(self._free[i - 1][0], self._free[i - 1][1] + self._free[i][1])]
        if size >= PUNCH_MIN:
            page = mmap.PAGESIZE
            lo, hi = (off + page - 1) // page * page, (off + size) // page * page
            if hi > lo:
                _libc.fallocate(self._fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, lo, hi - lo)

    # -- lookup -------------------------------------------------------------------------------
    def contains(self, addr: int) -> bool:
        """True if `addr` lies in this device's address range (allocated or not)."""
        return self.device_base <= addr < self.device_base + self.size

    def find(self, addr: int) -> Allocation | None:
        """The live allocation whose reserved block holds `addr`."""
        with self._lock:
            return self._find(self._live, self._starts, addr)

    @staticmethod
    def _find(table, starts, addr):
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0:
            alloc = table[starts[i]]
            if addr < alloc.addr + alloc.reserved:
                return alloc
        return None

    def mapped(self, addr: int, nbytes: int) -> int:
        """How many of the bytes [addr, addr+nbytes) lie in mapped pages, counted from addr (0 if
        addr itself is not mapped): the run of pages touched by live allocations that holds addr."""
        if nbytes <= 0 or not self.contains(addr):
            return 0
        end = addr + nbytes
        with self._lock:
            i = bisect.bisect_right(self._starts, addr) - 1
            if i >= 0:
                alloc = self._live[self._starts[i]]
                if end <= alloc.addr + alloc.reserved:  # the usual case: inside one block
                    return nbytes
            reach = addr - (addr - self.device_base) % MAP_PAGE  # mapped up to here so far
            for j in range(max(i, 0), len(self._starts)):
                alloc = self._live[self._starts[j]]
                if alloc.addr >= reach + MAP_PAGE or reach >= end:  # a gap of unmapped pages, or enough
                    break
                reach = max(reach, self._page_end(alloc.addr + alloc.reserved))
        return max(0, min(reach, end) - addr)

    def _page_end(self, addr: int) -> int:
        return self.device_base + -(-(addr - self.device_base) // MAP_PAGE) * MAP_PAGE

    def require_mapped(self, addr: int, nbytes: int, what: str, code: int) -> None:
        """Raise `code` if [addr, addr+nbytes) reaches a page that is not mapped."""
        reach = self.mapped(addr, nbytes)
        if reach < nbytes:
            where = "is not in" if reach == 0 else f"runs {nbytes - reach} bytes past"
            raise AclError(
                code,
                f"{what}: [{addr:#x}, +{nbytes}) {where} mapped device memory (device memory is "
                f"mapped in {MAP_PAGE >> 20} MiB pages while an allocation uses them); nothing was "
                "touched",
                rule="memory.unmapped",
            )

    def check(
        self,
        addr: int,
        nbytes: int,
        what: str,
        owner: int | None = None,
        code: int = status.ACL_ERROR_RT_AICORE_EXCEPTION,
    ) -> None:
        """Vet an access before it is made: `code` if it reaches unmapped pages, else the sanitizer's report."""
        if nbytes <= 0:
            return
        with self._lock:
            alloc = self._find(self._live, self._starts, addr if owner is None else owner)
        if alloc is not None and alloc.addr <= addr and addr + nbytes <= alloc.addr + alloc.size:
            return  # inside its own allocation: the usual case, nothing to report
        self.require_mapped(addr, nbytes, what, code)
        self.report(addr, nbytes, what, owner)

    def report(self, addr: int, nbytes: int, what: str, owner: int | None = None) -> None:
        """Report (to the sanitizer) an access that leaves the allocation holding `owner` (default
        addr), or lands in freed or never allocated memory."""
        if nbytes <= 0:
            return
        base = addr if owner is None else owner
        alloc = self.find(base)
        if alloc is not None:
            before, after = alloc.addr - addr, addr + nbytes - alloc.addr - alloc.size
            if before > 0:
                sanitizer.report(
                    "out-of-bounds",
                    f"{what}: [{addr:#x}, +{nbytes}) starts {before} bytes before "
                    f"the {alloc.size}-byte allocation at {alloc.addr:#x}",
                )
            if after > 0:
                sanitizer.report(
                    "out-of-bounds",
                    f"{what}: [{addr:#x}, +{nbytes}) ends {after} bytes past the "
                    f"end of the {alloc.size}-byte allocation at {alloc.addr:#x}",
                )
            return
        with self._lock:
            dead = self._find(self._freed, self._freed_starts, base)
        if dead is not None:
            sanitizer.report("use-after-free", f"{what}: {base:#x} lies in the block freed at {dead.addr:#x}")
        else:
            sanitizer.report("unallocated", f"{what}: {base:#x} is device memory that was never allocated")

    def overlaps(self, addr: int, nbytes: int) -> bool:
        """True if [addr, addr+nbytes) touches either mapping of this arena (its device addresses
        or the emulator's own read-write view): never a host range a program may copy."""
        end = addr + nbytes
        return (
            addr < self.device_base + self.size
            and self.device_base < end
            or addr < self.host_base + self.size
            and self.host_base < end
        )

    def leaks(self) -> list[Allocation]:
        with self._lock:
            return list(self._live.values())

    # -- host access --------------------------------------------------------------------------
    def host_address(self, addr: int) -> int:
        return self.host_base + (addr - self.device_base)

    def map_into(self, target: int, addr: int, nbytes: int) -> None:
        """Map the pages of [addr, addr+nbytes) read-write at host address `target` as well (a
        virtual mapping's view of physical memory: both views share the same pages)."""
        prot, flags = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | _MAP_FIXED
        if _libc.mmap(target, nbytes, prot, flags, self._fd, addr - self.device_base) in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mapping physical memory into a reserved range failed")

    def array(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable uint8 view of [addr, addr+nbytes) of device memory (vet it with check first;
        a range outside the arena is refused here too, so no caller can make numpy fault)."""
        if not (self.device_base <= addr and addr + nbytes <= self.device_base + self.size and nbytes >= 0):
            raise AclError(
                status.ACL_ERROR_RT_AICORE_EXCEPTION,
                f"[{addr:#x}, +{nbytes}) lies outside device memory",
                rule="memory.outside",
            )
        buf = (ctypes.c_char * nbytes).from_address(self.host_address(addr))
        return np.frombuffer(buf, dtype=np.uint8)  # type: ignore[call-overload]  # a ctypes array is a buffer

    def reset(self) -> None:
        """Forget every allocation and give all pages back (aclFinalize)."""
        with self._lock:
            for table in (self._live, self._starts, self._freed, self._freed_starts):
                table.clear()
            self._free = [(0, self.capacity)]
            self.used = 0
            _libc.fallocate(self._fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, 0, self.size)
