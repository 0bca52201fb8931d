"""Host ranges a copy is about to touch: are they mapped, with the access the copy needs?

A program that hands aclrtMemcpy a bad host pointer or a wild count gets an error code; the
emulator must not fault on it. Linux answers the question without reading or writing a byte:
madvise(MADV_POPULATE_READ / MADV_POPULATE_WRITE) (Linux 5.14) fails with ENOMEM for an unmapped
page and EINVAL or EFAULT for a page without that access. It faults the pages in, which the copy
does next anyway, so it is used for ranges up to POPULATE_MAX only: a larger range is checked
against /proc/self/maps instead, so a wild count never populates whatever mappings happen to
follow the buffer. Kernels without those flags check every range against /proc/self/maps.
"""

import ctypes
import mmap

# ctypes rather than a cffi declaration, whose C parser would cost every process tens of ms at start;
# the address as an integer: same calling convention as a pointer, and no cast per call
_madvise = ctypes.CDLL(None).madvise
_madvise.argtypes, _madvise.restype = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
_MADV_POPULATE_READ, _MADV_POPULATE_WRITE = 22, 23
POPULATE_MAX = 1 << 20
ADDRESS_END = 1 << 64  # a range ending past this wraps around the address space
_PAGE = mmap.PAGESIZE


def _populate(addr: int, nbytes: int, write: bool) -> bool:
    first = addr - addr % _PAGE
    return _madvise(first, addr + nbytes - first, _MADV_POPULATE_WRITE if write else _MADV_POPULATE_READ) == 0


def _in_maps(addr: int, nbytes: int, write: bool) -> bool:
    """True if /proc/self/maps covers [addr, addr+nbytes) without a gap, readable (and writable)."""
    reach, end = addr, addr + nbytes
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split(None, 2)[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if hi <= reach:
                continue
            if lo > reach or perms[0] != "r" or (write and perms[1] != "w"):
                return False
            reach = hi
            if reach >= end:
                return True
    return False


def _populate_works() -> bool:
    probe = ctypes.create_string_buffer(64)
    return _populate(ctypes.addressof(probe), 64, True)


_SMALL_CHECK = _populate if _populate_works() else _in_maps


def accessible(addr: int, nbytes: int, write: bool) -> bool:
    """True if the host range [addr, addr+nbytes) can be read (and written, if `write`) safely."""
    if nbytes <= 0:
        return True
    if addr <= 0 or addr + nbytes > ADDRESS_END:
        return False
    return (_SMALL_CHECK if nbytes <= POPULATE_MAX else _in_maps)(addr, nbytes, write)
