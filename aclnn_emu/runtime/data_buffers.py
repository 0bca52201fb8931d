"""aclDataBuffer: an (address, size) pair behind a handle (runtime src/acl/aclrt_impl/data_buffer.cpp).

CANN checks only NULL (ACL_ERROR_INVALID_PARAM for destroy and update, NULL/0 from the getters);
a stale or foreign handle is undefined behaviour there and gets the same answers here."""

from .. import status
from . import handles


class DataBuffer:
    def __init__(self, data: int, size: int):
        self.data, self.size = data, size
        self.handle = handles.register(self)


def create(data: int, size: int) -> int:
    return DataBuffer(data, size).handle


def _live(handle: int) -> DataBuffer:
    return handles.live(handle, DataBuffer, "aclDataBuffer", status.ACL_ERROR_INVALID_PARAM, "data_buffer.invalid")


def destroy(handle: int) -> None:
    handles.release(_live(handle).handle)


def update(handle: int, data: int, size: int) -> None:
    buffer = _live(handle)
    buffer.data, buffer.size = data, size


def address(handle: int) -> int:
    return _live(handle).data


def size(handle: int) -> int:
    return _live(handle).size
